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

use mcp_streamable::app::Tap;
use mcp_streamable::error::{RequestError, UsageError};
use mcp_streamable::head::Method;
use mcp_streamable::ids::{HttpId, RequestId};
use mcp_streamable::jsonrpc::{Body, ErrorObject, Message, ParseError, RawJson};
use mcp_streamable::observe::Observation;
use mcp_streamable::principal::Principal;
use mcp_streamable::server::{
    observe_own, Cause, EndReason, ServerEvent, ServerSession, TransmitKind,
};
use mcp_streamable::time::Instant;
use mcp_streamable::version::ProtocolVersion;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
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
    /// Exchanges the embedder holds a stream for, until their end.
    streams: BTreeSet<HttpId>,
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
            streams: BTreeSet::new(),
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

    /// Whether the session serves a request from `caller`: the core's
    /// [`SessionBinding`](mcp_streamable::policy::SessionBinding) applied to
    /// the principal that opened it. A request it does not serve is
    /// answered as one naming an unknown session.
    pub fn serves(&self, caller: Option<&Principal>) -> bool {
        self.core
            .policy()
            .session_binding
            .serves(self.core.principal(), caller)
    }

    /// Events waiting in [`poll_output`](Self::poll_output) for the
    /// exchange `http` (right after a GET opened it: its replay).
    pub fn queued_events(&self, http: HttpId) -> usize {
        self.outputs
            .iter()
            .filter(|o| matches!(o, Output::Event { http: h, .. } if *h == http))
            .count()
    }

    // ----- handle_* -----

    /// Who opens the session: the principal the transport authenticated for
    /// its `initialize`, told before it ([`ServerSession::handle_opener`]).
    pub fn handle_opener(&mut self, principal: Option<Principal>) -> Result<(), UsageError> {
        self.core.handle_opener(principal)
    }

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
            .agree_version(mcp_streamable::server::session_version(&message));
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
        self.streams.insert(http);
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
        self.streams.insert(http);
        self.observe(&Observation::Request {
            http,
            method: Method::Get,
            session: Some(self.core.id().to_string()),
            last_event_id: last_event_id.map(str::to_owned),
            messages: Vec::new(),
            v2026: false,
            mcp_headers: Vec::new(),
            principal: None,
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
            v2026: false,
            mcp_headers: Vec::new(),
            principal: None,
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
        let progress_of = self.progress_request(&message);
        let sent = match message {
            Message::Response { id, result } => self.answer(id, Ok(result), now),
            Message::Error {
                id: Some(id),
                error,
            } => self.answer(id, Err(error), now),
            Message::Error { id: None, .. } => Err(SendError::Unroutable),
            Message::Notification { method, params } => {
                let cause = progress_of.map_or(Cause::Unrelated, Cause::Request);
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

    /// The request in flight whose stream a progress notification rides:
    /// the one whose token it names. Every other notification is unrelated
    /// (rmcp says no more of it).
    fn progress_request(&self, message: &Message) -> Option<RequestId> {
        if !matches!(message, Message::Notification { .. }) {
            return None;
        }
        let token = message.progress_token()?.to_string();
        self.progress
            .get(&token)
            .filter(|r| self.core.in_flight().any(|f| f == *r))
            .cloned()
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
                v2026: false,
                mcp_headers: Vec::new(),
                principal: None,
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
                if !self.streams.contains(&http) {
                    // A 202, a DELETE's answer: no stream to write on.
                    if matches!(t.kind, TransmitKind::End(_)) {
                        ended.push(http);
                    }
                    continue;
                }
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
                        self.streams.remove(&http);
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
        // What the core did on its own (a drop by policy, a withdrawal's
        // notice, the session's end) is shown to the tap as every drain
        // shows it.
        observe_own(self.core.id(), &event, &mut |o| self.observe(o));
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
            ServerEvent::Dropped { .. } | ServerEvent::Withdrawn { .. } => return,
            ServerEvent::SessionEnded { .. } => {
                self.outputs.push_back(Output::SessionEnded);
                return;
            }
        };
        self.outputs.push_back(Output::Deliver {
            message: deliver.0,
            extra: deliver.1,
        });
    }

    fn sent(&self, key: mcp_streamable::ids::MsgKey, cause: Cause) {
        self.observe(&Observation::Sent {
            session: self.core.id().to_string(),
            key,
            cause,
            origin: None,
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
        .filter(|v| !v.is_v2026())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_streamable::ids::SessionId;
    use mcp_streamable::policy::ServerPolicy;
    use mcp_streamable::server::{ResponseMode, SessionConfig};
    use serde_json::json;

    const T0: Instant = Instant::ZERO;

    fn bridge() -> Bridge<&'static str> {
        let config = SessionConfig {
            response_mode: ResponseMode::Sse,
            keepalive_ms: None,
            ..SessionConfig::default()
        };
        let core = ServerSession::new(
            SessionId::from_bits(1),
            7,
            ProtocolVersion::LATEST,
            config,
            ServerPolicy::FIXED,
        );
        Bridge::new(core)
    }

    fn request(id: i64, method: &str, params: serde_json::Value) -> Message {
        Message::request(RequestId::Num(id), method, Some(RawJson::from(params)))
    }

    fn outputs(b: &mut Bridge<&'static str>) -> Vec<Output<&'static str>> {
        std::iter::from_fn(|| b.poll_output()).collect()
    }

    /// The messages written on `http`, in order (priming events left out).
    fn written(outs: &[Output<&'static str>], http: HttpId) -> Vec<Message> {
        outs.iter()
            .filter_map(|o| match o {
                Output::Event {
                    http: h,
                    message: Some(m),
                    ..
                } if *h == http => Some(m.clone()),
                _ => None,
            })
            .collect()
    }

    fn ended(outs: &[Output<&'static str>], http: HttpId) -> bool {
        outs.iter()
            .any(|o| matches!(o, Output::End { http: h, .. } if *h == http))
    }

    /// Initialized, with the handler having answered at `version`.
    fn ready(version: &str) -> Bridge<&'static str> {
        let mut b = bridge();
        let init = request(0, "initialize", json!({"protocolVersion": "2025-11-25"}));
        let http = b.handle_initialize(init, "init", T0).unwrap();
        let outs = outputs(&mut b);
        assert!(
            matches!(&outs[0], Output::Deliver { extra: Some("init"), message } if message.is_initialize())
        );
        let answer = Message::Response {
            id: RequestId::Num(0),
            result: RawJson::from(json!({"protocolVersion": version})),
        };
        b.send(answer, None, T0).unwrap();
        let outs = outputs(&mut b);
        assert_eq!(written(&outs, http).len(), 1);
        assert!(ended(&outs, http));
        let initialized = Message::notification("notifications/initialized", None);
        b.handle_message(initialized, "initialized", T0).unwrap();
        outputs(&mut b);
        assert!(!b.is_ended());
        b
    }

    #[test]
    fn the_session_speaks_the_version_the_handler_answered() {
        assert_eq!(
            ready("2025-06-18").core().version(),
            ProtocolVersion::V2025_06_18
        );
        assert_eq!(
            ready("2025-11-25").core().version(),
            ProtocolVersion::V2025_11_25
        );
        // A version this crate does not know leaves the offered one.
        assert_eq!(
            ready("2099-01-01").core().version(),
            ProtocolVersion::V2025_11_25
        );
    }

    #[test]
    fn a_request_is_delivered_with_its_extra_and_answered_on_its_stream() {
        let mut b = ready("2025-11-25");
        let http = b
            .handle_request(request(5, "tools/call", json!({})), "call", T0)
            .unwrap();
        let outs = outputs(&mut b);
        assert!(outs.iter().any(|o| matches!(
            o,
            Output::Deliver {
                extra: Some("call"),
                ..
            }
        )));
        // 2025-11-25: primed at once, with an id to resume from.
        assert!(outs.iter().any(
            |o| matches!(o, Output::Event { http: h, id: Some(_), message: None, .. } if *h == http)
        ));
        let answer = Message::Response {
            id: RequestId::Num(5),
            result: RawJson::empty_object(),
        };
        b.send(answer, None, T0).unwrap();
        let outs = outputs(&mut b);
        assert_eq!(written(&outs, http)[0].id(), Some(&RequestId::Num(5)));
        assert!(ended(&outs, http));
        // Ended, the exchange is closed in the core too (nothing held for it).
        assert!(!b.core().exchanges().any(|h| h == http));
        // Answered once: a second answer is refused, nothing is written.
        let again = Message::Response {
            id: RequestId::Num(5),
            result: RawJson::empty_object(),
        };
        assert!(b.send(again, None, T0).is_err());
        assert!(written(&outputs(&mut b), http).is_empty());
    }

    #[test]
    fn progress_rides_its_request_stream_and_other_notifications_the_get() {
        let mut b = ready("2025-11-25");
        let call = request(9, "tools/call", json!({"_meta": {"progressToken": "tok"}}));
        let post = b.handle_request(call, "call", T0).unwrap();
        let get = b.handle_get(None, T0).unwrap();
        outputs(&mut b);
        let progress = Message::notification(
            "notifications/progress",
            Some(RawJson::from(
                json!({"progressToken": "tok", "progress": 1}),
            )),
        );
        b.send(progress, None, T0).unwrap();
        let changed = Message::notification("notifications/tools/list_changed", None);
        b.send(changed, None, T0).unwrap();
        let outs = outputs(&mut b);
        let on_post = written(&outs, post);
        let on_get = written(&outs, get);
        assert_eq!(on_post.len(), 1);
        assert_eq!(on_post[0].method(), Some("notifications/progress"));
        assert_eq!(on_get.len(), 1);
        assert_eq!(on_get[0].method(), Some("notifications/tools/list_changed"));
        // A token of a request no longer in flight is unrelated.
        let answer = Message::Response {
            id: RequestId::Num(9),
            result: RawJson::empty_object(),
        };
        b.send(answer, None, T0).unwrap();
        let late = Message::notification(
            "notifications/progress",
            Some(RawJson::from(
                json!({"progressToken": "tok", "progress": 2}),
            )),
        );
        b.send(late, None, T0).unwrap();
        let outs = outputs(&mut b);
        assert_eq!(written(&outs, get).len(), 1);
    }

    #[test]
    fn server_requests_follow_their_origin_and_answers_get_the_handlers_ids() {
        let mut b = ready("2025-11-25");
        let post = b
            .handle_request(request(3, "tools/call", json!({})), "call", T0)
            .unwrap();
        outputs(&mut b);
        let ask = Message::request(
            RequestId::Str("rmcp-77".into()),
            "sampling/createMessage",
            None,
        );
        b.send(ask, Some(RequestId::Num(3)), T0).unwrap();
        let outs = outputs(&mut b);
        let on_post = written(&outs, post);
        assert_eq!(on_post.len(), 1);
        let wire_id = on_post[0].id().cloned().unwrap();
        // The client answers the id it saw; the handler gets its own.
        let answer = Message::Response {
            id: wire_id,
            result: RawJson::empty_object(),
        };
        b.handle_message(answer, "answer", T0).unwrap();
        let outs = outputs(&mut b);
        assert!(outs.iter().any(|o| matches!(o,
            Output::Deliver { message: Message::Response { id, .. }, extra: None }
                if *id == RequestId::Str("rmcp-77".into()))));
        // Without an origin in flight the request is unrelated: held for a GET.
        let ask = Message::request(RequestId::Num(1), "roots/list", None);
        b.send(ask, Some(RequestId::Num(42)), T0).unwrap();
        assert!(written(&outputs(&mut b), post).is_empty());
        let get = b.handle_get(None, T0).unwrap();
        assert_eq!(written(&outputs(&mut b), get).len(), 1);
    }

    #[test]
    fn a_refused_server_request_fails_at_once_for_the_handler() {
        let mut b = ready("2025-11-25");
        for i in 0..SessionConfig::default().outbound_requests_max as i64 {
            let ask = Message::request(RequestId::Num(i + 100), "roots/list", None);
            b.send(ask, None, T0).unwrap();
        }
        outputs(&mut b);
        let ask = Message::request(RequestId::Num(1), "roots/list", None);
        assert!(matches!(
            b.send(ask, None, T0),
            Err(SendError::Usage(UsageError::TooManyRequests))
        ));
        let outs = outputs(&mut b);
        assert!(outs.iter().any(|o| matches!(
            o,
            Output::Deliver {
                message: Message::Error {
                    id: Some(RequestId::Num(1)),
                    error,
                },
                ..
            } if error.code == -32603
        )));
    }

    #[test]
    fn rmcp_priming_id_resumes_as_a_fresh_get_and_unknown_ids_are_refused() {
        let mut b = ready("2025-11-25");
        assert!(b.handle_get(Some(RMCP_PRIMING_ID), T0).is_ok());
        assert!(matches!(
            b.handle_get(Some("nonsense"), T0),
            Err(RequestError::UnknownEventId(_))
        ));
    }

    #[test]
    fn a_dropped_stream_resumes_strictly_after_its_last_event() {
        let mut b = ready("2025-11-25");
        let get = b.handle_get(None, T0).unwrap();
        for n in 0..3 {
            let m = Message::notification(
                "notifications/message",
                Some(RawJson::from(json!({"n": n}))),
            );
            b.send(m, None, T0).unwrap();
        }
        let outs = outputs(&mut b);
        let ids: Vec<String> = outs
            .iter()
            .filter_map(|o| match o {
                Output::Event {
                    http,
                    id: Some(id),
                    message: Some(_),
                    ..
                } if *http == get => Some(id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ids.len(), 3);
        b.handle_stream_dropped(get, T0);
        let resumed = b.handle_get(Some(&ids[0]), T0).unwrap();
        let replay = written(&outputs(&mut b), resumed);
        let ns: Vec<_> = replay.iter().map(|m| m.to_json()).collect();
        assert_eq!(replay.len(), 2, "{ns:?}");
        assert!(ns[0].contains("\"n\":1") && ns[1].contains("\"n\":2"));
    }

    #[test]
    fn notifications_keep_their_extras_in_order_and_delete_ends_the_session() {
        let mut b = ready("2025-11-25");
        for extra in ["a", "b"] {
            let m = Message::notification("notifications/roots/list_changed", None);
            b.handle_message(m, extra, T0).unwrap();
        }
        let extras: Vec<_> = outputs(&mut b)
            .into_iter()
            .filter_map(|o| match o {
                Output::Deliver { extra, .. } => extra,
                _ => None,
            })
            .collect();
        assert_eq!(extras, ["a", "b"]);
        // Their 202 exchanges are closed in the core.
        assert_eq!(b.core().exchanges().count(), 0);
        let get = b.handle_get(None, T0).unwrap();
        outputs(&mut b);
        b.handle_delete(T0);
        let outs = outputs(&mut b);
        assert!(ended(&outs, get));
        assert!(outs.contains(&Output::SessionEnded));
        assert!(b.is_ended());
        assert!(b.handle_get(None, T0).is_err());
    }

    #[test]
    fn polling_closes_the_connection_and_the_answer_waits_for_the_resume() {
        let mut b = ready("2025-11-25");
        let post = b
            .handle_request(request(4, "tools/call", json!({})), "call", T0)
            .unwrap();
        let primed = outputs(&mut b)
            .into_iter()
            .find_map(|o| match o {
                Output::Event {
                    http, id: Some(id), ..
                } if http == post => Some(id),
                _ => None,
            })
            .unwrap();
        b.close_connection(&RequestId::Num(4), T0).unwrap();
        assert!(matches!(
            outputs(&mut b).as_slice(),
            [Output::End {
                reason: EndReason::Polling,
                ..
            }]
        ));
        let answer = Message::Response {
            id: RequestId::Num(4),
            result: RawJson::empty_object(),
        };
        b.send(answer, None, T0).unwrap();
        outputs(&mut b);
        let resumed = b.handle_get(Some(&primed), T0).unwrap();
        let replay = written(&outputs(&mut b), resumed);
        assert_eq!(replay.len(), 1);
        assert_eq!(replay[0].id(), Some(&RequestId::Num(4)));
    }

    #[test]
    fn answering_one_request_keeps_the_progress_route_of_another() {
        let mut b = ready("2025-11-25");
        let a = request(1, "tools/call", json!({"_meta": {"progressToken": "a"}}));
        let c = request(2, "tools/call", json!({"_meta": {"progressToken": "c"}}));
        b.handle_request(a, "a", T0).unwrap();
        let second = b.handle_request(c, "c", T0).unwrap();
        let get = b.handle_get(None, T0).unwrap();
        outputs(&mut b);
        let answer = Message::Response {
            id: RequestId::Num(1),
            result: RawJson::empty_object(),
        };
        b.send(answer, None, T0).unwrap();
        let progress = Message::notification(
            "notifications/progress",
            Some(RawJson::from(json!({"progressToken": "c", "progress": 1}))),
        );
        b.send(progress, None, T0).unwrap();
        let outs = outputs(&mut b);
        assert_eq!(written(&outs, second).len(), 1);
        assert!(written(&outs, get).is_empty());
    }

    #[test]
    fn a_stream_dropped_while_open_is_observed_closed_once() {
        let seen: Arc<Mutex<Vec<HttpId>>> = Arc::default();
        let log = seen.clone();
        let tap: Tap = Box::new(move |o: &Observation| {
            if let Observation::Closed { http } = o {
                log.lock().unwrap().push(*http);
            }
        });
        let mut b = ready("2025-11-25").with_tap(Some(Arc::new(Mutex::new(tap))));
        let get = b.handle_get(None, T0).unwrap();
        outputs(&mut b);
        b.handle_stream_dropped(get, T0);
        b.handle_stream_dropped(get, T0);
        b.handle_stream_dropped(HttpId(999), T0);
        assert_eq!(*seen.lock().unwrap(), vec![get]);
    }

    #[test]
    fn ending_from_the_server_side_ends_the_session_and_its_streams() {
        let mut b = ready("2025-11-25");
        let get = b.handle_get(None, T0).unwrap();
        outputs(&mut b);
        b.end(T0);
        let outs = outputs(&mut b);
        assert!(b.is_ended());
        assert!(ended(&outs, get));
        assert!(outs.iter().any(|o| matches!(o, Output::SessionEnded)));
    }

    #[test]
    fn the_idle_deadline_is_polled_and_ends_the_session_when_it_comes() {
        let mut b = ready("2025-11-25");
        let idle = SessionConfig::default().idle_timeout_ms.unwrap();
        let deadline = b.poll_timeout().expect("an idle session has a deadline");
        assert_eq!(deadline, Instant::from_millis(idle));
        assert_eq!(Some(deadline), b.core().poll_timeout().map(|(t, _)| t));
        b.handle_timeout(Instant::from_millis(idle - 1));
        assert!(!b.is_ended());
        b.handle_timeout(deadline);
        let outs = outputs(&mut b);
        assert!(b.is_ended());
        assert!(outs.iter().any(|o| matches!(o, Output::SessionEnded)));
    }

    #[test]
    fn what_the_handler_sends_is_observed_with_its_cause() {
        let seen: Arc<Mutex<Vec<Cause>>> = Arc::default();
        let log = seen.clone();
        let tap: Tap = Box::new(move |o: &Observation| {
            if let Observation::Sent { cause, .. } = o {
                log.lock().unwrap().push(cause.clone());
            }
        });
        let mut b = ready("2025-11-25").with_tap(Some(Arc::new(Mutex::new(tap))));
        b.handle_get(None, T0).unwrap();
        b.handle_request(request(4, "tools/call", json!({})), "call", T0)
            .unwrap();
        outputs(&mut b);
        let changed = Message::notification("notifications/tools/list_changed", None);
        b.send(changed, None, T0).unwrap();
        let answer = Message::Response {
            id: RequestId::Num(4),
            result: RawJson::empty_object(),
        };
        b.send(answer, None, T0).unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            vec![Cause::Unrelated, Cause::Request(RequestId::Num(4))]
        );
    }
}
