//! [`Bridge`]: one rmcp session on our [`ServerSession`], sans-IO.
//!
//! rmcp's `StreamableHttpService` has already checked the HTTP request
//! (headers, body, session id) when it calls its `SessionManager`; what it
//! asks for then maps onto the core's inputs, and what rmcp's handler sends
//! maps onto the core's commands:
//!
//! ```text
//!   rmcp asks                          the core does
//!   ─────────────────────────────      ──────────────────────────────────
//!   initialize_session(initialize)     handle_post on a new exchange
//!   create_stream(request)             handle_post on a new exchange
//!   accept_message(notif./response)    handle_post (202, no stream)
//!   create_standalone_stream           handle_get(None)
//!   resume(Last-Event-ID)              handle_get(Some(id)): replay, takeover
//!   stream dropped (client gone)       handle_http_closed
//!   close_session                      handle_delete
//!
//!   the handler sends                  the core does
//!   ─────────────────────────────      ──────────────────────────────────
//!   response / error                   respond
//!   notifications/progress (token)     notify, Cause::Request(its request)
//!   any other notification             notify, Cause::Unrelated
//!   request (OriginatingRequestId)     request, Cause::Request(origin) or Unrelated
//! ```
//!
//! Every routing decision, event id, replay, takeover and bound is the
//! core's. The bridge only translates: the ids of requests the handler sends
//! (rmcp numbers its own; the core numbers what goes on the wire), progress
//! tokens to the request that carries them, and the embedder's extra per
//! client message (rmcp's `Extensions`, with the HTTP request parts a
//! handler may read), handed back with the message when it is delivered.
//! Like every core here it reads no clock: time is an input.

use crate::app::Tap;
use crate::error::{RequestError, UsageError};
use crate::head::Method;
use crate::ids::{HttpId, RequestId};
use crate::jsonrpc::{Body, ErrorObject, Message, ParseError, RawJson};
use crate::monitor::Observation;
use crate::server::{Cause, EndReason, ServerEvent, ServerSession, TransmitKind};
use crate::time::Instant;
use crate::version::ProtocolVersion;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

/// The event id rmcp gives the priming event it puts before a standalone
/// GET's stream and before the `initialize` answer. A `Last-Event-ID` of
/// `"0"` that the core does not know means "nothing delivered yet".
pub const RMCP_PRIMING_ID: &str = "0";

/// What the embedder must do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output<X> {
    /// Hand `message` to the application (rmcp's service), with the extra
    /// the embedder attached to it when it arrived (`None` for responses to
    /// the application's own requests).
    Deliver {
        /// The message; a response carries the application's request id.
        message: Message,
        /// What the embedder attached.
        extra: Option<X>,
    },
    /// Write an SSE event on the stream of exchange `http`.
    Event {
        /// The exchange.
        http: HttpId,
        /// The SSE `id`: what a client resumes from.
        id: Option<String>,
        /// The SSE `retry`, in ms.
        retry_ms: Option<u64>,
        /// The message; `None` for a priming event.
        message: Option<Message>,
    },
    /// The stream of exchange `http` is over: end it.
    End {
        /// The exchange.
        http: HttpId,
        /// Why.
        reason: EndReason,
    },
    /// The session ended (DELETE, expiry, an idle timeout): its id is
    /// unknown from now on, and the application's transport closes.
    SessionEnded,
}

/// Why the application's message could not be sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The core refused it (the request is no longer active, the session ended…).
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// An error without an id answers nothing that can be routed.
    #[error("an error response without an id cannot be routed")]
    Unroutable,
}

/// One rmcp session on the core: see the module docs.
pub struct Bridge<X> {
    core: ServerSession,
    next_http: u64,
    /// The `initialize` request, until it is answered.
    initialize: Option<RequestId>,
    /// The application's requests by the id the core gave them on the wire:
    /// the application's own id.
    outbound: BTreeMap<RequestId, RequestId>,
    /// Progress tokens (as JSON text) of client requests in flight.
    progress: BTreeMap<String, RequestId>,
    /// The embedder's extra of each client request not yet delivered.
    request_extras: BTreeMap<RequestId, X>,
    /// The embedder's extras of notifications not yet delivered, in order
    /// (the core turns each into exactly one event, in order).
    notification_extras: VecDeque<X>,
    outputs: VecDeque<Output<X>>,
    tap: Option<Arc<Mutex<Tap>>>,
}

impl<X> Bridge<X> {
    /// A bridge for `core`, a session not yet initialized. Its
    /// `response_mode` should be SSE: rmcp frames every answer as SSE.
    pub fn new(core: ServerSession) -> Self {
        Bridge {
            core,
            next_http: 1,
            initialize: None,
            outbound: BTreeMap::new(),
            progress: BTreeMap::new(),
            request_extras: BTreeMap::new(),
            notification_extras: VecDeque::new(),
            outputs: VecDeque::new(),
            tap: None,
        }
    }

    /// Shows every request, transmit, close and send to `tap` (the monitor).
    pub fn with_tap(mut self, tap: Option<Arc<Mutex<Tap>>>) -> Self {
        self.tap = tap;
        self
    }

    // ----- getters -----

    /// The core.
    pub fn core(&self) -> &ServerSession {
        &self.core
    }

    /// Whether the session has ended.
    pub fn is_ended(&self) -> bool {
        self.core.is_ended()
    }

    /// Messages waiting to be delivered to the application.
    pub fn undelivered(&self) -> usize {
        self.outputs
            .iter()
            .filter(|o| matches!(o, Output::Deliver { .. }))
            .count()
    }

    // ----- handle_* -----

    /// rmcp's `initialize_session`: the `initialize` request. Its answer
    /// comes as an [`Output::Event`] on the returned exchange.
    pub fn handle_initialize(
        &mut self,
        message: Message,
        extra: X,
        now: Instant,
    ) -> Result<HttpId, RequestError> {
        if !message.is_initialize() {
            return Err(RequestError::BadInitialize);
        }
        // Until the application answers, the version the client offered.
        let _ = self
            .core
            .agree_version(crate::server::session_version(&message));
        self.initialize = message.id().cloned();
        self.handle_request(message, extra, now)
    }

    /// rmcp's `create_stream`: a client request, answered on the returned
    /// exchange's stream.
    pub fn handle_request(
        &mut self,
        message: Message,
        extra: X,
        now: Instant,
    ) -> Result<HttpId, RequestError> {
        let Message::Request { id, .. } = &message else {
            return Err(RequestError::Parse(ParseError::Invalid(
                "a stream is opened by a request".into(),
            )));
        };
        let id = id.clone();
        let token = message.progress_token().map(|t| t.to_string());
        let http = self.post(message, now)?;
        if let Some(token) = token {
            self.progress.insert(token, id.clone());
        }
        self.request_extras.insert(id, extra);
        self.drain(now);
        Ok(http)
    }

    /// rmcp's `accept_message`: a notification or a response to one of the
    /// application's requests (202, no stream).
    pub fn handle_message(
        &mut self,
        message: Message,
        extra: X,
        now: Instant,
    ) -> Result<(), RequestError> {
        let notification = matches!(message, Message::Notification { .. });
        if message.is_request() {
            return Err(RequestError::Parse(ParseError::Invalid(
                "a request needs a stream".into(),
            )));
        }
        self.post(message, now)?;
        if notification {
            self.notification_extras.push_back(extra);
        }
        self.drain(now);
        Ok(())
    }

    /// rmcp's `create_standalone_stream` (`None`) or `resume`
    /// (`Some(Last-Event-ID)`): the core attaches, replays strictly after the
    /// named event and takes the stream over from any older connection.
    pub fn handle_get(
        &mut self,
        last_event_id: Option<&str>,
        now: Instant,
    ) -> Result<HttpId, RequestError> {
        let http = self.mint();
        let opened = match self.core.handle_get(http, last_event_id, now) {
            Err(RequestError::UnknownEventId(id)) if id == RMCP_PRIMING_ID => {
                self.core.handle_get(http, None, now)
            }
            other => other,
        };
        opened?;
        self.observe(&Observation::Request {
            http,
            method: Method::Get,
            session: Some(self.core.id().to_string()),
            last_event_id: last_event_id.map(str::to_owned),
            messages: Vec::new(),
            modern: false,
        });
        self.drain(now);
        Ok(http)
    }

    /// The stream of `http` was dropped (the client went away, or the
    /// embedder gave up on a slow reader): it stays resumable.
    pub fn handle_stream_dropped(&mut self, http: HttpId, now: Instant) {
        if self.core.exchanges().any(|h| h == http) {
            self.observe(&Observation::Closed { http });
        }
        self.core.handle_http_closed(http, now);
        self.drain(now);
    }

    /// rmcp's `close_session`: a DELETE, or its service ended.
    pub fn handle_delete(&mut self, now: Instant) {
        if self.core.is_ended() {
            return;
        }
        let http = self.mint();
        self.observe(&Observation::Request {
            http,
            method: Method::Delete,
            session: Some(self.core.id().to_string()),
            last_event_id: None,
            messages: Vec::new(),
            modern: false,
        });
        self.core.handle_delete(http, now);
        self.drain(now);
    }

    /// Ends the session from the server side (evicted to make room).
    pub fn end(&mut self, now: Instant) {
        self.core.close(now);
        self.drain(now);
    }

    /// Time passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.core.handle_timeout(now);
        self.drain(now);
    }

    // ----- commands -----

    /// The application sends `message`; `origin` is the client request it
    /// was sent while serving, when rmcp knows it (`OriginatingRequestId`).
    pub fn send(
        &mut self,
        message: Message,
        origin: Option<RequestId>,
        now: Instant,
    ) -> Result<(), SendError> {
        let sent = match message {
            Message::Response { id, result } => self.answer(id, Ok(result), now),
            Message::Error {
                id: Some(id),
                error,
            } => self.answer(id, Err(error), now),
            Message::Error { id: None, .. } => Err(SendError::Unroutable),
            Message::Notification { method, params } => {
                let cause = self.cause_of_notification(&method, params.as_ref());
                let key = self.core.notify(&method, params, cause.clone(), now);
                key.map(|k| self.sent(k, cause)).map_err(SendError::from)
            }
            Message::Request { id, method, params } => {
                let cause = match origin {
                    Some(r) if self.core.in_flight().any(|f| *f == r) => Cause::Request(r),
                    _ => Cause::Unrelated,
                };
                match self.core.request(&method, params, cause.clone(), now) {
                    Ok((wire_id, key)) => {
                        self.outbound.insert(wire_id, id);
                        self.sent(key, cause);
                        Ok(())
                    }
                    // The application's request fails at once, not by its timeout.
                    Err(e) => {
                        self.outputs.push_back(Output::Deliver {
                            message: Message::Error {
                                id: Some(id),
                                error: ErrorObject::new(-32603, e.to_string()),
                            },
                            extra: None,
                        });
                        Err(e.into())
                    }
                }
            }
        };
        self.drain(now);
        sent
    }

    /// Closes the connection carrying client request `id`'s stream without
    /// ending the stream (polling, SEP-1699): the client resumes with
    /// `Last-Event-ID` and the answer comes on the resumed stream. rmcp's
    /// own manager has no way to do this.
    pub fn close_connection(&mut self, id: &RequestId, now: Instant) -> Result<(), UsageError> {
        let closed = self.core.close_connection(id, now);
        self.drain(now);
        closed
    }

    fn answer(
        &mut self,
        id: RequestId,
        result: Result<RawJson, ErrorObject>,
        now: Instant,
    ) -> Result<(), SendError> {
        if self.initialize.as_ref() == Some(&id) {
            self.initialize = None;
            // The handler negotiated by itself: the session speaks its answer.
            if let Some(v) = result.as_ref().ok().and_then(answered_version) {
                let _ = self.core.agree_version(v);
            }
        }
        self.progress.retain(|_, r| *r != id);
        self.request_extras.remove(&id);
        let key = self.core.respond(&id, result, now)?;
        self.sent(key, Cause::Request(id));
        Ok(())
    }

    /// Progress rides the stream of the request whose token it names; every
    /// other notification is unrelated (rmcp says no more of it).
    fn cause_of_notification(&self, method: &str, params: Option<&RawJson>) -> Cause {
        if method != "notifications/progress" {
            return Cause::Unrelated;
        }
        let token = params.and_then(|p| p.to_value().get("progressToken").map(|t| t.to_string()));
        token
            .and_then(|t| self.progress.get(&t))
            .filter(|r| self.core.in_flight().any(|f| f == *r))
            .map_or(Cause::Unrelated, |r| Cause::Request(r.clone()))
    }

    // ----- poll_* -----

    /// The next thing to do, in order.
    pub fn poll_output(&mut self) -> Option<Output<X>> {
        self.outputs.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.core.poll_timeout().map(|(t, _)| t)
    }

    // ----- the loop -----

    fn mint(&mut self) -> HttpId {
        let http = HttpId(self.next_http);
        self.next_http += 1;
        http
    }

    fn post(&mut self, message: Message, now: Instant) -> Result<HttpId, RequestError> {
        let http = self.mint();
        let observed = self.tap.as_ref().map(|_| message.clone());
        self.core.handle_post(http, Body::Single(message), now)?;
        if let Some(m) = observed {
            self.observe(&Observation::Request {
                http,
                method: Method::Post,
                session: Some(self.core.id().to_string()),
                last_event_id: None,
                messages: vec![m],
                modern: false,
            });
        }
        Ok(http)
    }

    /// Mutate, then drain: the core's events and transmits become outputs;
    /// an exchange the core ended is closed for it at once (it may free a
    /// stream and say more), until the core is quiet.
    fn drain(&mut self, now: Instant) {
        loop {
            let mut ended = Vec::new();
            while let Some(event) = self.core.poll_event() {
                self.event(event);
            }
            while let Some(t) = self.core.poll_transmit() {
                let o = Observation::Transmit(t);
                self.observe(&o);
                let Observation::Transmit(t) = o else {
                    unreachable!()
                };
                let http = t.http;
                match t.kind {
                    TransmitKind::Head(_) | TransmitKind::Comment => {}
                    TransmitKind::Json(message) => self.outputs.push_back(Output::Event {
                        http,
                        id: None,
                        retry_ms: None,
                        message: Some(message),
                    }),
                    TransmitKind::Event {
                        id,
                        retry_ms,
                        message,
                    } => self.outputs.push_back(Output::Event {
                        http,
                        id,
                        retry_ms,
                        message: message.map(|o| o.message.clone()),
                    }),
                    TransmitKind::End(reason) => {
                        self.outputs.push_back(Output::End { http, reason });
                        ended.push(http);
                    }
                }
            }
            if ended.is_empty() && !self.core.has_output() {
                return;
            }
            for http in ended {
                self.core.handle_http_closed(http, now);
            }
        }
    }

    fn event(&mut self, event: ServerEvent) {
        let deliver = match event {
            ServerEvent::Request { id, method, params } => {
                let extra = self.request_extras.remove(&id);
                (Message::Request { id, method, params }, extra)
            }
            ServerEvent::Notification { method, params } => {
                let extra = self.notification_extras.pop_front();
                (Message::Notification { method, params }, extra)
            }
            ServerEvent::Response { id, result } => {
                let Some(id) = self.outbound.remove(&id) else {
                    return;
                };
                let message = match result {
                    Ok(result) => Message::Response { id, result },
                    Err(error) => Message::Error {
                        id: Some(id),
                        error,
                    },
                };
                (message, None)
            }
            ServerEvent::Dropped { key, .. } => {
                self.observe(&Observation::Dropped {
                    session: self.core.id().to_string(),
                    key,
                });
                return;
            }
            ServerEvent::SessionEnded => {
                self.outputs.push_back(Output::SessionEnded);
                return;
            }
        };
        self.outputs.push_back(Output::Deliver {
            message: deliver.0,
            extra: deliver.1,
        });
    }

    fn sent(&self, key: crate::ids::MsgKey, cause: Cause) {
        self.observe(&Observation::Sent {
            session: self.core.id().to_string(),
            key,
            cause,
        });
    }

    fn observe(&self, o: &Observation) {
        if let Some(mut tap) = self.tap.as_ref().and_then(|t| t.lock().ok()) {
            tap(o);
        }
    }
}

/// The `protocolVersion` of an `initialize` result, when it is a
/// session-era version this crate knows.
fn answered_version(result: &RawJson) -> Option<ProtocolVersion> {
    result
        .to_value()
        .get("protocolVersion")?
        .as_str()?
        .parse::<ProtocolVersion>()
        .ok()
        .filter(|v| !v.is_modern())
}
