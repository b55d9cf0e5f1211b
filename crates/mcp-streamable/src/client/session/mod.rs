//! [`ClientSession`]: initialize, requests, the pending map, every stream.
//!
//! ```text
//!  Fresh ──initialize──▶ Initializing ──InitializeResult parsed: commit id+version──▶ Ready
//!    ▲                                                                                 │
//!    └──────────── initialize again ◀── Lost (404 on a request with a session id) ◀────┤
//!                                                              close (DELETE) ─▶ Closed
//! ```

mod asked;
mod drain;
mod listen;
mod modern;
mod mrtr;
mod streams;

pub use drain::ClientOutput;
pub use listen::ACKNOWLEDGED;
pub use modern::{encode_value, ClientEra};

use crate::client::{
    ClientConfig, ClientError, ClientEvent, ClientTimer, ClientTransmit, ClientTransmitKind,
    ClientUsageError, Purpose, ServerRequests,
};
use crate::head::{Content, RequestHead, ResponseHead};
use crate::ids::{HttpId, RequestId, SessionId};
use crate::jsonrpc::{self, ErrorObject, Message, RawJson};
use crate::policy::{
    BackgroundGet, ClientPolicy, CompletionGate, ForegroundAfterCompletion, ReconnectStreams,
    SessionCommit, SessionLoss,
};
use crate::preset::{Scheduled, SchedulingPoint};
use crate::sse::SseItem;
use crate::time::{Instant, Timers};
use crate::version::ProtocolVersion;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// Where the client is in its lifecycle (the diagram above); a phase keeps
/// what only it needs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Phase {
    /// No session: `initialize` may be called.
    Fresh,
    /// `initialize` (or the `server/discover` probe) is in flight.
    Initializing,
    /// The answer is parsed, its commit left to a scheduling point
    /// ([`SessionCommit::AfterForegroundStep`]): requests may be sent, and
    /// carry no session yet. FIXED commits as it parses, and never has it.
    Committing(Staged),
    /// Requests may be sent, under what the handshake committed.
    Ready(Committed),
    /// The server answered a request that carried the session id with
    /// `404`: `initialize` may be called again.
    Lost,
    /// Closed by the application; what was committed, if anything, still
    /// answers [`ClientSession::session_id`] and [`ClientSession::version`].
    Closed(Option<Committed>),
}

impl Phase {
    /// Whether requests may be sent.
    fn ready(&self) -> bool {
        matches!(self, Phase::Ready(_) | Phase::Committing(_))
    }

    /// What the handshake committed, while it holds.
    fn committed(&self) -> Option<&Committed> {
        match self {
            Phase::Ready(c) | Phase::Closed(Some(c)) => Some(c),
            _ => None,
        }
    }
}

/// What a handshake commits: the session id (none from a server without
/// sessions, or in the 2026-07-28 era) and the protocol version.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Committed {
    session_id: Option<SessionId>,
    version: ProtocolVersion,
}

/// What an exchange is doing, internally (ids as numbers the client minted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Role {
    Initialize(i64),
    Request(i64),
    /// A later round of a multi round-trip request: handle `.0`, request `.1`.
    Round(i64, i64),
    Notify,
    Background,
    Reader(u32),
    Delete,
    /// Listen `.0`'s stream, request `.1`.
    Listen(u32, i64),
}

/// The flaw of a response to an id the client has no request for.
const NEVER_USED: &str = "it answered an id the client never used";

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Exchange {
    role: Role,
    carried_session: bool,
    status: Option<u16>,
    content: Content,
    head_session: Option<SessionId>,
    last_id: Option<String>,
    retry_ms: Option<u64>,
    /// Message events (not priming) received on this exchange.
    messages: u32,
    error: Option<ErrorObject>,
    /// The shell could not take part of the answer whole: a body or an SSE
    /// event over this many bytes ([`ClientSession::handle_too_large`]).
    too_large: Option<usize>,
    /// The first thing in the answer the client could not use (a body
    /// that is not JSON-RPC, a response to an id it never asked): if the
    /// exchange then ends without its response, the failure says so
    /// rather than only that the response never came.
    flaw: Option<&'static str>,
}

impl Exchange {
    /// Why an exchange that ended is not a stream that broke: the server
    /// refused it (its status and error), or answered it whole without
    /// what it was for (`not_a_stream`). `None`: it was a stream, or never
    /// answered (a broken connection).
    fn refusal(&self, not_a_stream: &'static str) -> Option<ClientError> {
        match self.status {
            Some(status) if !(200..300).contains(&status) => Some(ClientError::Status {
                status,
                error: self.error.clone(),
            }),
            Some(_) if self.content != Content::Sse => Some(ClientError::Malformed(not_a_stream)),
            _ => None,
        }
    }
}

/// One request in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Pending {
    method: String,
    /// The id the application knows the request by: its own, or for a
    /// later round of a multi round-trip request, the first round's.
    handle: i64,
    /// The exchange currently carrying the request's stream.
    http: Option<HttpId>,
    /// Last event id seen on the request's stream (across its resumptions).
    last_id: Option<String>,
    retry_ms: Option<u64>,
    attempts: u32,
    resuming_since: Option<Instant>,
    /// The response arrived elsewhere while the caller waits on the foreground
    /// (`CompletionGate::AfterForegroundReturns`).
    arrived: Option<Result<RawJson, ErrorObject>>,
    /// The caller already has the result; only the foreground is left (`KeepRunning`).
    returned: bool,
}

/// A staged `initialize` commit (`SessionCommit::AfterForegroundStep`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Staged {
    http: HttpId,
    session_id: Option<SessionId>,
    version: ProtocolVersion,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Background {
    http: Option<HttpId>,
    last_id: Option<String>,
    retry_ms: Option<u64>,
    failures: u32,
    disabled: bool,
    /// Not opened for want of a spare connection in the pool
    /// (`ClientConfig::connections_max`): opened when one is freed.
    deferred: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Reader {
    http: Option<HttpId>,
    last_id: Option<String>,
    retry_ms: Option<u64>,
    reconnects: u32,
}

/// One client. See the module doc for the state diagram.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientSession {
    config: ClientConfig,
    policy: ClientPolicy,
    phase: Phase,
    next_http: u64,
    next_id: i64,
    next_reader: u32,
    exchanges: BTreeMap<HttpId, Exchange>,
    pending: BTreeMap<i64, Pending>,
    finished: VecDeque<i64>,
    background: Background,
    readers: BTreeMap<u32, Reader>,
    transmits: VecDeque<ClientTransmit>,
    events: VecDeque<ClientEvent>,
    timers: Timers<ClientTimer>,
    duplicates: u64,
    strangers: u64,
    /// What `initialize` was given (capabilities, clientInfo): the modern
    /// era sends them in every request's `_meta`, and `Auto` falls back
    /// with them.
    init_params: Option<RawJson>,
    /// The probe was sent again after a -32022 naming 2026-07-28 (once).
    probe_repeated: bool,
    /// The application's listens (modern era), at most `listens_max`.
    listens: BTreeMap<crate::client::ListenId, listen::Listen>,
    next_listen: u32,
    /// Modern requests that may take several rounds (MRTR), by handle.
    rounds: BTreeMap<i64, mrtr::Rounds>,
    /// The custom headers (SEP-2243) of the tools listed in the modern era.
    tool_headers: crate::tool_headers::ToolHeaderTable,
    /// The server's requests the application holds, unanswered.
    asked: asked::Asked,
}

impl ClientSession {
    /// A client with no session yet.
    pub fn new(config: ClientConfig, policy: ClientPolicy) -> Self {
        ClientSession {
            config,
            policy,
            phase: Phase::Fresh,
            next_http: 1,
            next_id: 1,
            next_reader: 1,
            exchanges: BTreeMap::new(),
            pending: BTreeMap::new(),
            finished: VecDeque::new(),
            background: Background::default(),
            readers: BTreeMap::new(),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            timers: Timers::default(),
            duplicates: 0,
            strangers: 0,
            init_params: None,
            probe_repeated: false,
            asked: asked::Asked::default(),
            listens: BTreeMap::new(),
            next_listen: 1,
            rounds: BTreeMap::new(),
            tool_headers: Default::default(),
        }
    }

    // ---- getters -------------------------------------------------------

    /// The committed session id.
    pub fn session_id(&self) -> Option<&SessionId> {
        self.phase.committed().and_then(|c| c.session_id.as_ref())
    }

    /// The committed protocol version.
    pub fn version(&self) -> Option<ProtocolVersion> {
        self.phase.committed().map(|c| c.version)
    }

    /// Whether `initialize` may be called now (no session, not closed).
    pub fn can_initialize(&self) -> bool {
        matches!(self.phase, Phase::Fresh | Phase::Lost)
    }

    /// Whether requests can be sent.
    pub fn is_ready(&self) -> bool {
        self.phase.ready()
    }

    /// The policy in force.
    pub fn policy(&self) -> &ClientPolicy {
        &self.policy
    }

    /// Requests in flight (including orphaned foregrounds under
    /// `KeepRunning`), by the id the application knows them by.
    pub fn pending(&self) -> impl Iterator<Item = RequestId> + '_ {
        self.pending.values().map(|p| RequestId::Num(p.handle))
    }

    /// The server's requests the application holds: asked, not yet
    /// answered, not withdrawn by the server; oldest id first.
    pub fn asked(&self) -> impl Iterator<Item = &RequestId> {
        self.asked.iter()
    }

    /// Exchanges the client is running.
    pub fn exchanges(&self) -> impl Iterator<Item = HttpId> + '_ {
        self.exchanges.keys().copied()
    }

    /// What exchange `http` is for.
    pub fn purpose(&self, http: HttpId) -> Option<Purpose> {
        self.exchanges.get(&http).map(|e| purpose_of(e.role))
    }

    /// Responses dropped because their request had already finished (C4).
    pub fn duplicates_dropped(&self) -> u64 {
        self.duplicates
    }

    /// Responses dropped because no request of ours had that id.
    pub fn strangers_dropped(&self) -> u64 {
        self.strangers
    }

    // ---- commands ------------------------------------------------------

    /// Starts a session: POSTs `initialize` offering `config.protocol_version`.
    /// `params` are the rest of `InitializeRequestParams` (capabilities, clientInfo).
    /// Under [`ClientEra::Modern`](super::ClientEra) and `Auto` it probes
    /// with `server/discover` first (see `modern`).
    pub fn initialize(
        &mut self,
        params: RawJson,
        now: Instant,
    ) -> Result<RequestId, ClientUsageError> {
        match self.phase {
            Phase::Closed(_) => return Err(ClientUsageError::Closed),
            Phase::Initializing | Phase::Committing(_) | Phase::Ready(_) => {
                return Err(ClientUsageError::AlreadyInitialized)
            }
            Phase::Fresh | Phase::Lost => {}
        }
        if self.config.era != super::ClientEra::Legacy {
            self.probe_repeated = false;
            return Ok(self.discover(params, now));
        }
        self.initialize_legacy(params, now)
    }

    /// `initialize` of the session era (also `Auto`'s fallback).
    fn initialize_legacy(
        &mut self,
        params: RawJson,
        now: Instant,
    ) -> Result<RequestId, ClientUsageError> {
        self.background = Background::default();
        let n = self.mint_id();
        let mut v = params.to_value();
        if !v.is_object() {
            v = serde_json::json!({});
        }
        v["protocolVersion"] =
            serde_json::Value::String(self.config.protocol_version.as_str().into());
        let msg = Message::request(n, "initialize", Some(RawJson::from(v)));
        self.phase = Phase::Initializing;
        let http = self.send_post(Role::Initialize(n), &msg);
        self.track(n, "initialize", Some(http), now);
        Ok(RequestId::Num(n))
    }

    /// Sends a request; its answer arrives as [`ClientEvent::Response`] or
    /// [`ClientEvent::Failed`]. The deadline is `config.request_timeout_ms` from `now`.
    pub fn send_request(
        &mut self,
        method: &str,
        params: Option<RawJson>,
        now: Instant,
    ) -> Result<RequestId, ClientUsageError> {
        self.check_ready()?;
        if self.outstanding() >= self.config.pending_max {
            return Err(ClientUsageError::TooManyRequests);
        }
        let n = self.mint_id();
        self.start_rounds(n, method, params.as_ref());
        let msg = Message::request(n, method, params);
        let http = self.send_post(Role::Request(n), &msg);
        self.track(n, method, Some(http), now);
        Ok(RequestId::Num(n))
    }

    /// Sends a notification.
    pub fn notify(
        &mut self,
        method: &str,
        params: Option<RawJson>,
        _now: Instant,
    ) -> Result<(), ClientUsageError> {
        self.check_ready()?;
        if self.is_modern() {
            return Err(ClientUsageError::ModernEra);
        }
        self.send_post(Role::Notify, &Message::notification(method, params));
        Ok(())
    }

    /// Answers a server-to-client request.
    pub fn respond(
        &mut self,
        id: RequestId,
        result: Result<RawJson, ErrorObject>,
        _now: Instant,
    ) -> Result<(), ClientUsageError> {
        self.check_ready()?;
        if self.is_modern() {
            return Err(ClientUsageError::ModernEra);
        }
        if !self.asked.answer(&id) {
            // Never asked, answered already, or withdrawn by the server.
            return Err(ClientUsageError::UnknownRequest(id));
        }
        let msg = match result {
            Ok(result) => Message::Response { id, result },
            Err(error) => Message::Error {
                id: Some(id),
                error,
            },
        };
        self.send_post(Role::Notify, &msg);
        Ok(())
    }

    /// Cancels a request: `notifications/cancelled` (the modern era closes
    /// the stream instead), its exchanges aborted, and
    /// [`ClientEvent::Failed`] with `Cancelled`. A late response is dropped.
    pub fn cancel(&mut self, id: &RequestId, now: Instant) -> Result<(), ClientUsageError> {
        let RequestId::Num(h) = id else {
            return Err(ClientUsageError::UnknownRequest(id.clone()));
        };
        if self.cancel_awaiting(*h) {
            return Ok(());
        }
        match self.wire_of(*h) {
            Some(n) if self.pending.get(&n).is_some_and(|p| !p.returned) => {
                self.give_up(n, ClientError::Cancelled, true, now);
                Ok(())
            }
            _ => Err(ClientUsageError::UnknownRequest(id.clone())),
        }
    }

    /// Ends the session: DELETE (R26), every exchange aborted, every request failed.
    pub fn close(&mut self, now: Instant) {
        if matches!(self.phase, Phase::Closed(_)) {
            return;
        }
        // Held back for a call that now fails: never handed out.
        self.asked.drop_waiting();
        self.abort_everything(ClientError::Closed, now);
        let committed = self.phase.committed().cloned();
        if let Some(c) = &committed {
            if let Some(sid) = &c.session_id {
                let head = RequestHead::delete(sid)
                    .with(crate::headers::MCP_PROTOCOL_VERSION, c.version.as_str());
                self.open(Role::Delete, head, Vec::new());
            }
        }
        self.phase = Phase::Closed(committed);
    }

    // ---- inputs --------------------------------------------------------

    /// The response head of exchange `http` arrived.
    pub fn handle_response_head(&mut self, http: HttpId, head: ResponseHead, now: Instant) {
        let Some(ex) = self.exchanges.get_mut(&http) else {
            return;
        };
        ex.status = Some(head.status);
        ex.content = head.content;
        ex.head_session = head.session_id;
        let role = ex.role;
        let carried = ex.carried_session;
        if head.status == 404 && carried {
            self.lose_session(now);
            return;
        }
        if let (Role::Background, 405) = (role, head.status) {
            self.background.disabled = true;
            self.events.push_back(ClientEvent::BackgroundDisabled);
        }
    }

    /// A whole `application/json` body of exchange `http`.
    pub fn handle_body(&mut self, http: HttpId, body: &[u8], now: Instant) {
        let Some(ex) = self.exchanges.get(&http) else {
            return;
        };
        let ok = ex.status.is_some_and(|s| (200..300).contains(&s));
        let version = self.version().unwrap_or(ProtocolVersion::V2025_03_26);
        let parsed = jsonrpc::parse_body(body, ProtocolVersion::V2025_03_26.min(version));
        match parsed {
            Ok(b) if ok => {
                for m in b.into_messages() {
                    self.recv_message(http, m, now);
                }
            }
            Ok(b) => {
                if let Some(Message::Error { error, .. }) = b.into_messages().into_iter().next() {
                    if let Some(ex) = self.exchanges.get_mut(&http) {
                        ex.error = Some(error);
                    }
                }
            }
            Err(_) => self.note_flaw(http, "its body was not JSON-RPC"),
        }
    }

    /// A message on exchange `http` that belongs to no request: counted,
    /// and kept as the answer's flaw.
    fn stranger(&mut self, http: HttpId, flaw: &'static str) {
        self.strangers += 1;
        self.note_flaw(http, flaw);
    }

    /// Keeps the first flaw of exchange `http`'s answer ([`Exchange::flaw`]).
    fn note_flaw(&mut self, http: HttpId, flaw: &'static str) {
        if let Some(ex) = self.exchanges.get_mut(&http) {
            ex.flaw.get_or_insert(flaw);
        }
    }

    /// Part of exchange `http`'s answer was over the shell's bound of `max`
    /// bytes (a whole body past `body_max`, or an SSE event past the
    /// decoder's bound) and was not read. Nothing of it reaches the
    /// application; if the exchange then ends without the response it
    /// carries, that request fails with [`ClientError::TooLarge`] at once
    /// instead of being resumed (a resumption would replay the same event,
    /// which cannot be read either) or reported as a lost stream.
    pub fn handle_too_large(&mut self, http: HttpId, max: usize) {
        if let Some(ex) = self.exchanges.get_mut(&http) {
            ex.too_large = Some(max);
        }
    }

    /// One decoded SSE item of exchange `http` (the shell runs the decoder).
    pub fn handle_sse_event(&mut self, http: HttpId, item: SseItem, now: Instant) {
        let Some(ex) = self.exchanges.get_mut(&http) else {
            return;
        };
        match item {
            SseItem::Retry(ms) => {
                ex.retry_ms = Some(ms);
                self.note_retry(http, ms);
            }
            SseItem::NoMessage { id } => {
                if let Some(id) = id {
                    ex.last_id = Some(id.clone());
                    self.note_id(http, id);
                }
            }
            SseItem::Message { id, data, .. } => {
                ex.messages += 1;
                if let Some(id) = id {
                    ex.last_id = Some(id.clone());
                    self.note_id(http, id);
                }
                match jsonrpc::parse_message(&data) {
                    Ok(m) => self.recv_message(http, m, now),
                    Err(_) => self.strangers += 1,
                }
            }
        }
    }

    // ---- outputs -------------------------------------------------------

    /// The next exchange to start or abort.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<ClientTransmit> {
        self.transmits.pop_front()
    }

    /// The settings.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Whether [`poll_transmit`](Self::poll_transmit) or
    /// [`poll_event`](Self::poll_event) has something: a driver can skip a
    /// client with nothing to say without touching it mutably.
    pub fn has_output(&self) -> bool {
        !self.transmits.is_empty() || !self.events.is_empty()
    }

    /// The next thing the application must handle.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// The next deadline and its reason.
    pub fn poll_timeout(&self) -> Option<(Instant, ClientTimer)> {
        self.timers.next()
    }

    // ---- internals -----------------------------------------------------

    fn check_ready(&self) -> Result<(), ClientUsageError> {
        match self.phase {
            Phase::Ready(_) | Phase::Committing(_) => Ok(()),
            Phase::Closed(_) => Err(ClientUsageError::Closed),
            _ => Err(ClientUsageError::NotReady),
        }
    }

    fn mint_id(&mut self) -> i64 {
        let n = self.next_id;
        self.next_id += 1;
        n
    }

    fn track(&mut self, n: i64, method: &str, http: Option<HttpId>, now: Instant) {
        self.pending.insert(
            n,
            Pending {
                method: method.to_owned(),
                handle: n,
                http,
                last_id: None,
                retry_ms: None,
                attempts: 0,
                resuming_since: None,
                arrived: None,
                returned: false,
            },
        );
        self.timers.set(
            ClientTimer::Deadline(n),
            now + Duration::from_millis(self.config.request_timeout_ms),
        );
    }

    /// Headers every request after initialize carries (R22, R29).
    fn session_headers(&self, mut head: RequestHead) -> RequestHead {
        if let Some(c) = self.phase.committed() {
            if let Some(sid) = &c.session_id {
                head = head.with(crate::headers::MCP_SESSION_ID, sid.as_str());
            }
            head = head.with(crate::headers::MCP_PROTOCOL_VERSION, c.version.as_str());
        }
        head
    }

    fn send_post(&mut self, role: Role, msg: &Message) -> HttpId {
        if self.is_modern() {
            return self.send_modern(role, msg);
        }
        let head = match role {
            Role::Initialize(_) => RequestHead::post(None, None),
            _ => self.session_headers(RequestHead::post(None, None)),
        };
        self.open(role, head, msg.to_json().into_bytes())
    }

    fn open(&mut self, role: Role, head: RequestHead, body: Vec<u8>) -> HttpId {
        let http = HttpId(self.next_http);
        self.next_http += 1;
        let carried_session = head.header(crate::headers::MCP_SESSION_ID).is_some();
        self.exchanges.insert(
            http,
            Exchange {
                role,
                carried_session,
                status: None,
                content: Content::None,
                head_session: None,
                last_id: None,
                retry_ms: None,
                messages: 0,
                error: None,
                too_large: None,
                flaw: None,
            },
        );
        self.transmits.push_back(ClientTransmit {
            http,
            purpose: purpose_of(role),
            kind: ClientTransmitKind::Send { head, body },
        });
        http
    }

    fn abort(&mut self, http: HttpId) {
        if let Some(ex) = self.exchanges.remove(&http) {
            self.transmits.push_back(ClientTransmit {
                http,
                purpose: purpose_of(ex.role),
                kind: ClientTransmitKind::Abort,
            });
            self.connection_freed();
        }
    }

    fn recv_message(&mut self, http: HttpId, m: Message, now: Instant) {
        if let Some(l) = self.listen_of(http) {
            self.listen_message(l, http, m);
            return;
        }
        match m {
            Message::Response { id, result } => self.complete(http, id, Ok(result), now),
            Message::Error {
                id: Some(id),
                error,
            } => self.complete(http, id, Err(error), now),
            Message::Error { id: None, .. } => {
                self.stranger(http, "it answered with an error that names no request")
            }
            Message::Request { id, method, .. }
                if self.config.server_requests == ServerRequests::Decline =>
            {
                let error = ErrorObject::new(
                    jsonrpc::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                );
                if self.check_ready().is_ok() {
                    let answer = Message::Error {
                        id: Some(id),
                        error,
                    };
                    self.send_post(Role::Notify, &answer);
                }
            }
            Message::Request { id, method, params } => {
                if self.asked.hand_out(&id, self.config.asked_max) {
                    let on_the_get = self.background.http == Some(http);
                    let in_flight = self.pending.len();
                    if on_the_get && self.policy.standalone_requests.holds_back(in_flight) {
                        self.asked.wait((id, method, params));
                    } else {
                        self.events
                            .push_back(ClientEvent::ServerRequest { id, method, params });
                    }
                } else if self.check_ready().is_ok() {
                    let error = ErrorObject::new(
                        jsonrpc::INTERNAL_ERROR,
                        "too many requests of the server unanswered, or this id already is",
                    );
                    let answer = Message::Error {
                        id: Some(id),
                        error,
                    };
                    self.send_post(Role::Notify, &answer);
                }
            }
            Message::Notification { method, params } => {
                if method == jsonrpc::CANCELLED {
                    let withdrawn = jsonrpc::cancelled_request(params.as_ref())
                        .filter(|(id, _)| self.asked.cancel(id, self.policy.server_cancels));
                    if let Some((id, reason)) = withdrawn {
                        self.events
                            .push_back(ClientEvent::ServerRequestCancelled { id, reason });
                        return;
                    }
                }
                self.events
                    .push_back(ClientEvent::Notification { method, params })
            }
        }
    }

    /// A response for `id` arrived on `via`: complete the request exactly once.
    fn complete(
        &mut self,
        via: HttpId,
        id: RequestId,
        result: Result<RawJson, ErrorObject>,
        now: Instant,
    ) {
        let RequestId::Num(n) = id else {
            self.stranger(via, NEVER_USED);
            return;
        };
        let Some(p) = self.pending.get_mut(&n) else {
            if self.finished.contains(&n) {
                self.duplicates += 1;
            } else {
                self.stranger(via, NEVER_USED);
            }
            return;
        };
        let own = self
            .exchanges
            .get(&via)
            .is_some_and(|e| matches!(e.role, Role::Request(r) | Role::Round(_, r) | Role::Initialize(r) if r == n));
        if p.returned {
            // KeepRunning: the orphaned foreground reads its own copy and returns.
            self.duplicates += 1;
            if own {
                self.retire(n);
            }
            return;
        }
        let result = match self.policy.completion_gate {
            CompletionGate::FirstArrival => result,
            CompletionGate::AfterForegroundReturns if own => p.arrived.take().unwrap_or(result),
            CompletionGate::AfterForegroundReturns => {
                // The caller is still inside the foreground send; it learns of
                // this only when the foreground returns (race C).
                if p.arrived.is_none() {
                    p.arrived = Some(result);
                } else {
                    self.duplicates += 1;
                }
                return;
            }
        };
        let lists_tools = p.method == "tools/list";
        if p.method == "server/discover" {
            self.finish_discover(n, result, now);
            return;
        }
        let is_initialize = self
            .exchanges
            .get(&via)
            .is_some_and(|e| e.role == Role::Initialize(n))
            || p.method == "initialize";
        if is_initialize {
            self.finish_initialize(via, n, result, now);
            return;
        }
        if matches!(&result, Ok(r) if self.input_required(n, r, now)) {
            return;
        }
        let result = match result {
            Ok(listing) if lists_tools => Ok(self.learn_tools(listing)),
            other => other,
        };
        let handle = self.handle_of(n);
        self.end_rounds(handle);
        self.events.push_back(ClientEvent::Response {
            id: RequestId::Num(handle),
            result,
        });
        self.after_return(n, via, own);
    }

    /// The caller has the result: stop what still works for `n` (or not, by policy).
    fn after_return(&mut self, n: i64, via: HttpId, own: bool) {
        match self.policy.foreground_after_completion {
            ForegroundAfterCompletion::KeepRunning if !own => {
                if let Some(p) = self.pending.get_mut(&n) {
                    p.returned = true;
                }
                self.timers.stop(ClientTimer::Deadline(n));
                self.remember(n);
            }
            _ => {
                if self.policy.reconnect_streams == ReconnectStreams::EveryEnd && own {
                    self.become_reader(via);
                }
                self.retire(n);
            }
        }
    }

    /// Forgets request `n`: aborts its exchanges and stops its timers (C2,
    /// C3). The last one in flight releases the server's requests held back
    /// for it ([`StandaloneRequests::AfterCalls`](crate::policy::StandaloneRequests::AfterCalls)).
    fn retire(&mut self, n: i64) {
        self.pending.remove(&n);
        if self.pending.is_empty() {
            for (id, method, params) in self.asked.release() {
                self.events
                    .push_back(ClientEvent::ServerRequest { id, method, params });
            }
        }
        self.timers.stop(ClientTimer::Deadline(n));
        self.timers.stop(ClientTimer::Resume(n));
        let mine: Vec<HttpId> = self
            .exchanges
            .iter()
            .filter(|(_, e)| {
                matches!(e.role, Role::Request(r) | Role::Round(_, r) | Role::Initialize(r) if r == n)
            })
            .map(|(h, _)| *h)
            .collect();
        for http in mine {
            self.abort(http);
        }
        self.remember(n);
    }

    fn remember(&mut self, n: i64) {
        if !self.finished.contains(&n) {
            self.finished.push_back(n);
            while self.finished.len() > self.config.finished_max {
                self.finished.pop_front();
            }
        }
    }

    fn finish_initialize(
        &mut self,
        via: HttpId,
        n: i64,
        result: Result<RawJson, ErrorObject>,
        now: Instant,
    ) {
        let session_id = self
            .exchanges
            .get(&via)
            .and_then(|e| e.head_session.clone());
        let result = match result {
            Ok(r) => r,
            Err(error) => {
                self.retire(n);
                self.phase = Phase::Fresh;
                self.events.push_back(ClientEvent::Failed {
                    id: RequestId::Num(n),
                    error: ClientError::Status {
                        status: 200,
                        error: Some(error),
                    },
                });
                return;
            }
        };
        let offered = result
            .to_value()
            .get("protocolVersion")
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let Ok(version) = offered.parse::<ProtocolVersion>() else {
            self.retire(n);
            self.phase = Phase::Fresh;
            self.events.push_back(ClientEvent::Failed {
                id: RequestId::Num(n),
                error: ClientError::UnsupportedVersion(offered),
            });
            return;
        };
        if self.policy.reconnect_streams == ReconnectStreams::EveryEnd {
            self.become_reader(via);
        }
        self.retire(n);
        match self.policy.session_commit {
            SessionCommit::OnParse => {
                self.commit_session(session_id.clone(), version, now);
            }
            SessionCommit::AfterForegroundStep => {
                self.phase = Phase::Committing(Staged {
                    http: via,
                    session_id: session_id.clone(),
                    version,
                });
            }
        }
        self.events.push_back(ClientEvent::Initialized {
            id: RequestId::Num(n),
            session_id,
            version,
            result,
        });
    }

    /// Commits initialize's side effects, then announces `initialized` and
    /// opens the background GET (C5: nothing else is sent before this).
    fn commit_session(
        &mut self,
        session_id: Option<SessionId>,
        version: ProtocolVersion,
        _now: Instant,
    ) {
        self.phase = Phase::Ready(Committed {
            session_id,
            version,
        });
        self.send_post(
            Role::Notify,
            &Message::notification("notifications/initialized", None),
        );
        if self.policy.background_get != BackgroundGet::Off {
            self.open_background();
        }
    }

    /// Fails request `n` without a response; optionally tells the server.
    fn give_up(&mut self, n: i64, error: ClientError, tell_server: bool, now: Instant) {
        if !self.pending.contains_key(&n) {
            return;
        }
        if self
            .pending
            .get(&n)
            .is_some_and(|p| p.method == "server/discover")
        {
            self.retire(n);
            self.discover_failed(n, error, now);
            return;
        }
        // The modern era cancels by closing the stream (retiring aborts it).
        let tell_server = tell_server && !self.is_modern();
        let was_initialize = self
            .pending
            .get(&n)
            .is_some_and(|p| p.method == "initialize");
        let handle = self.handle_of(n);
        self.end_rounds(handle);
        self.retire(n);
        if tell_server && self.phase.ready() && !was_initialize {
            let params = serde_json::json!({"requestId": n, "reason": error.to_string()});
            self.send_post(
                Role::Notify,
                &Message::notification("notifications/cancelled", Some(RawJson::from(params))),
            );
        }
        if was_initialize && self.phase == Phase::Initializing {
            self.phase = Phase::Fresh;
        }
        self.events.push_back(ClientEvent::Failed {
            id: RequestId::Num(handle),
            error,
        });
    }

    /// 404 on a request that carried the session id: the session is gone (R25).
    fn lose_session(&mut self, now: Instant) {
        if !matches!(
            self.phase,
            Phase::Ready(_) | Phase::Committing(_) | Phase::Initializing
        ) {
            return;
        }
        // First: nothing the session asked is handed out as its requests fail.
        self.asked.clear();
        match self.policy.session_loss {
            SessionLoss::FailPending => self.abort_everything(ClientError::SessionLost, now),
            SessionLoss::OrphanInFlight => self.drop_streams(),
        }
        self.phase = Phase::Lost;
        self.events.push_back(ClientEvent::SessionLost);
    }

    /// Every exchange aborted and every timer stopped: under
    /// [`SessionLoss::OrphanInFlight`] the whole of losing the session, the
    /// requests in flight left pending with nothing that could ever
    /// complete them.
    fn drop_streams(&mut self) {
        let all: Vec<HttpId> = self.exchanges.keys().copied().collect();
        for http in all {
            self.abort(http);
        }
        self.readers.clear();
        self.listens.clear();
        self.background = Background::default();
        self.timers = Timers::default();
    }

    fn abort_everything(&mut self, error: ClientError, now: Instant) {
        let ids: Vec<i64> = self.pending.keys().copied().collect();
        for n in ids {
            let returned = self.pending.get(&n).is_some_and(|p| p.returned);
            if returned {
                self.retire(n);
            } else {
                self.give_up(n, error.clone(), false, now);
            }
        }
        self.fail_awaiting(&error);
        self.drop_streams();
    }
}

pub(super) fn purpose_of(role: Role) -> Purpose {
    match role {
        Role::Initialize(n) => Purpose::Initialize(RequestId::Num(n)),
        Role::Request(n) => Purpose::Request(RequestId::Num(n)),
        Role::Round(h, n) => Purpose::Round {
            handle: RequestId::Num(h),
            request: RequestId::Num(n),
        },
        Role::Notify => Purpose::Notify,
        Role::Background => Purpose::Background,
        Role::Reader(_) => Purpose::Reader,
        Role::Delete => Purpose::Delete,
        Role::Listen(l, n) => Purpose::Listen {
            listen: super::ListenId(l),
            request: RequestId::Num(n),
        },
    }
}

/// The client's one scheduling point
/// ([`SessionCommit::AfterForegroundStep`](crate::policy::SessionCommit::AfterForegroundStep)):
/// the `initialize` foreground finishes its post-processing and commits.
/// None under FIXED, which commits the session as it parses the answer.
impl Scheduled for ClientSession {
    fn scheduling_points(&self) -> Vec<(HttpId, SchedulingPoint)> {
        match &self.phase {
            Phase::Committing(s) => vec![(s.http, SchedulingPoint::ForegroundStep)],
            _ => Vec::new(),
        }
    }

    fn handle_scheduling_point(
        &mut self,
        http: HttpId,
        point: SchedulingPoint,
        now: Instant,
    ) -> bool {
        if point != SchedulingPoint::ForegroundStep {
            return false;
        }
        match &self.phase {
            Phase::Committing(s) if s.http == http => {
                let Staged {
                    session_id,
                    version,
                    ..
                } = s.clone();
                self.commit_session(session_id, version, now);
                true
            }
            _ => false,
        }
    }
}
