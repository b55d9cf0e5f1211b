//! [`ClientSession`]: initialize, requests, the pending map, every stream,
//! in one hub whose fields only this file touches; its listens, its
//! requests of several rounds and the server's questions are types of their
//! own (`listen`, `mrtr`, `asked`), and what the 2026-07-28 era decides is
//! `v2026`'s, applied here.
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
mod mrtr;
mod v2026;

pub use drain::ClientOutput;
pub use listen::ACKNOWLEDGED;
pub use v2026::{encode_value, ClientEra};

use crate::client::ListenId;
use crate::client::{
    ClientConfig, ClientError, ClientEvent, ClientTimer, ClientTransmit, ClientTransmitKind,
    ClientUsageError, Purpose, ServerRequests,
};
use crate::head::Method;
use crate::head::{Content, RequestHead, ResponseHead};
use crate::headers;
use crate::ids::{HttpId, RequestId, SessionId};
use crate::jsonrpc::{self, ErrorObject, Message, RawJson};
use crate::mrtr::input::METHODS;
use crate::mrtr::{check_asked, Asked, ClientCapabilities, InputError};
use crate::observe::Observation;
use crate::policy::{AnswerRoom, CancelledStream, ListenPool, Relisten};
use crate::policy::{
    BackgroundGet, ClientPolicy, CompletionGate, ForegroundAfterCompletion, ReconnectStreams,
    SessionCommit, SessionLoss,
};
use crate::preset::{Scheduled, SchedulingPoint};
use crate::sse::SseItem;
use crate::time::{Instant, Timers};
use crate::v2026::ListenFilter;
use crate::version::ProtocolVersion;
use listen::{Heard, Listen};
use mrtr::Rounds;
use serde_json::{Map, Value};
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
    /// What `initialize` was given (capabilities, clientInfo): the 2026-07-28
    /// era sends them in every request's `_meta`, and `Auto` falls back
    /// with them.
    init_params: Option<RawJson>,
    /// The probe was sent again after a -32022 naming 2026-07-28 (once).
    probe_repeated: bool,
    /// The application's listens (2026-07-28 era), at most `listens_max`.
    listens: BTreeMap<crate::client::ListenId, listen::Listen>,
    next_listen: u32,
    /// 2026-07-28 requests that may take several rounds (MRTR), by handle.
    rounds: BTreeMap<i64, mrtr::Rounds>,
    /// The custom headers (SEP-2243) of the tools listed in the 2026-07-28 era.
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
    /// Under [`ClientEra::V2026`](super::ClientEra) and `Auto` it probes
    /// with `server/discover` first (see `v2026`).
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
        if self.config.era != super::ClientEra::V2025 {
            self.probe_repeated = false;
            return Ok(self.discover(params, now));
        }
        self.initialize_v2025(params, now)
    }

    /// `initialize` of the session era (also `Auto`'s fallback).
    fn initialize_v2025(
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
        if self.is_v2026() {
            return Err(ClientUsageError::WrongEra);
        }
        self.send_post(Role::Notify, &Message::notification(method, params));
        Ok(())
    }

    /// Answers a server-to-client request.
    pub fn respond(
        &mut self,
        id: RequestId,
        result: Result<RawJson, ErrorObject>,
        now: Instant,
    ) -> Result<(), ClientUsageError> {
        self.check_ready()?;
        if self.is_v2026() {
            return Err(ClientUsageError::WrongEra);
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
        self.send_answer(&msg, now);
        Ok(())
    }

    /// Cancels a request: `notifications/cancelled` (the 2026-07-28 era closes
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
                let abort = self.aborts_given_up_streams();
                self.give_up_with(n, ClientError::Cancelled, true, abort, now);
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

    /// Every timer armed, `(deadline, kind)`, not only the next: whether a
    /// resumption is still planned behind a request's deadline, say.
    pub fn timers(&self) -> impl Iterator<Item = (Instant, ClientTimer)> + '_ {
        self.timers.iter()
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
        if self.is_v2026() {
            return self.send_v2026(role, msg);
        }
        let head = match role {
            Role::Initialize(_) => RequestHead::post(None, None),
            _ => self.session_headers(RequestHead::post(None, None)),
        };
        self.open(role, head, msg.to_json().into_bytes())
    }

    /// POSTs an answer to a server's request, and makes room for it in the
    /// transport's pool ([`AnswerRoom`]).
    fn send_answer(&mut self, msg: &Message, now: Instant) {
        let http = self.send_post(Role::Notify, msg);
        self.make_room_for(http, now);
    }

    /// While `answer` waits for a connection (the pool grants them in the
    /// order exchanges were opened, `ClientConfig::connections_max` at
    /// once) and a stream the server holds open has one, that stream
    /// gives it up ([`AnswerRoom::YieldStream`]), in this order:
    /// - a request's stream that read a message on this connection (the
    ///   question itself came on one: its server is waiting for the
    ///   answer, and the stream made progress, so its resumption starts
    ///   the bound of resumptions without a message afresh);
    /// - the standalone GET, opened again once a connection is spare;
    /// - any other request's stream with an event id.
    ///
    /// A request's stream given up so is resumed from its last event id
    /// as if it had ended on its own: after the server's `retry`, counted
    /// against `resume_attempts_max` (`request_stream_ended`), and queued
    /// behind the answer.
    fn make_room_for(&mut self, answer: HttpId, now: Instant) {
        let Some(pool) = self.config.connections_max else {
            return;
        };
        if self.policy.answer_room == AnswerRoom::Wait {
            return;
        }
        while !self.exchanges.keys().take(pool).any(|h| *h == answer) {
            let granted = || self.exchanges.iter().take(pool);
            let resumable = |read: bool| {
                granted().find_map(|(h, ex)| match ex.role {
                    Role::Request(n)
                        if ex.content == Content::Sse
                            && ex.last_id.is_some()
                            && (!read || ex.messages > 0) =>
                    {
                        Some((*h, n, ex.clone()))
                    }
                    _ => None,
                })
            };
            let get = self
                .background
                .http
                .filter(|h| granted().any(|(g, _)| g == h));
            let (http, n, ex) = match (resumable(true), get) {
                (Some(stream), _) => stream,
                (None, Some(get)) => {
                    self.background.http = None;
                    self.background.deferred = true;
                    self.abort(get);
                    continue;
                }
                (None, None) => match resumable(false) {
                    Some(stream) => stream,
                    None => return,
                },
            };
            // As any end of the stream the client did not choose: resumed
            // after the server's `retry`, within the same bound.
            self.abort(http);
            self.request_stream_ended(n, http, &ex, now);
        }
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
                    self.send_answer(&answer, now);
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
                    self.send_answer(&answer, now);
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
        self.retire_with(n, true);
    }

    /// Retires request `n`; its own streams are aborted only when
    /// `abort_streams` (else read on to their end, their connections held:
    /// [`CancelledStream::ReadToEnd`]).
    fn retire_with(&mut self, n: i64, abort_streams: bool) {
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
            .filter(|(_, e)| match e.role {
                Role::Request(r) => r == n && abort_streams,
                Role::Round(_, r) | Role::Initialize(r) => r == n,
                _ => false,
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
        self.give_up_with(n, error, tell_server, true, now);
    }

    /// Whether a request the client gives up and tells the server of (its
    /// caller cancelled it, or its deadline passed) has its streams aborted
    /// ([`CancelledStream`]); the 2026-07-28 era's cancellation is the
    /// stream's close.
    fn aborts_given_up_streams(&self) -> bool {
        self.policy.cancelled_stream == CancelledStream::Abort || self.is_v2026()
    }

    /// [`Self::give_up`], the request's own streams aborted only when
    /// `abort_streams` ([`Self::retire_with`]).
    fn give_up_with(
        &mut self,
        n: i64,
        error: ClientError,
        tell_server: bool,
        abort_streams: bool,
        now: Instant,
    ) {
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
        // The 2026-07-28 era cancels by closing the stream (retiring aborts it).
        let tell_server = tell_server && !self.is_v2026();
        let was_initialize = self
            .pending
            .get(&n)
            .is_some_and(|p| p.method == "initialize");
        let handle = self.handle_of(n);
        self.end_rounds(handle);
        self.retire_with(n, abort_streams);
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
        // A listen between two streams (its re-listen timer armed) has no
        // request in flight to give up: it ends here, told, or its
        // application would keep a list it believes is still kept fresh.
        let listens: Vec<ListenId> = self.listens.keys().copied().collect();
        for l in listens {
            self.end_listen(l, Some(error.clone()));
        }
        self.drop_streams();
    }

    // The drain.

    /// Drains the session until it is quiet: transmits first (a request
    /// goes out before the events it caused are acted on), then events,
    /// again until neither has anything; each shown to `observe`, as client
    /// `client`, before `handle` gets it (with the observer, for what it
    /// observes itself), and `handle` may feed the session again. Every
    /// loop around a client core drains this way (the hyper client shell,
    /// the checker's world, the fuzz target). Returns whether anything came
    /// out.
    pub fn drain_observed(
        &mut self,
        client: usize,
        observe: &mut dyn FnMut(&Observation),
        mut handle: impl FnMut(&mut ClientSession, ClientOutput, &mut dyn FnMut(&Observation)),
    ) -> bool {
        let mut any = false;
        loop {
            let mut progressed = false;
            while let Some(transmit) = self.poll_transmit() {
                progressed = true;
                let out = ClientOutput::Transmit(transmit).observed(client, observe);
                handle(self, out, observe);
            }
            while let Some(event) = self.poll_event() {
                progressed = true;
                let out = ClientOutput::Event(event).observed(client, observe);
                handle(self, out, observe);
            }
            if !progressed {
                return any;
            }
            any = true;
        }
    }

    // Stream ends: bounded resumption, the background GET, EventSource-style
    // readers, timers.

    /// Exchange `http` is over: the response ended (cleanly or not), or the
    /// connection failed.
    pub fn handle_http_closed(&mut self, http: HttpId, now: Instant) {
        let Some(ex) = self.exchanges.remove(&http) else {
            return;
        };
        match ex.role {
            Role::Initialize(n) | Role::Request(n) | Role::Round(_, n) => {
                self.request_stream_ended(n, http, &ex, now)
            }
            Role::Background => self.background_ended(http, &ex, now),
            Role::Reader(r) => self.reader_ended(r, http, &ex, now),
            Role::Listen(l, _) => {
                self.listen_stream_ended(crate::client::ListenId(l), http, &ex, now)
            }
            Role::Notify | Role::Delete => {}
        }
        self.connection_freed();
    }

    /// Fires the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        for timer in self.timers.expire(now) {
            match timer {
                ClientTimer::Deadline(n) => {
                    let abort = self.aborts_given_up_streams();
                    self.give_up_with(n, ClientError::Timeout, true, abort, now)
                }
                ClientTimer::Resume(n) => self.resume(n, now),
                ClientTimer::Background => self.open_background(),
                ClientTimer::Reader(r) => self.reopen_reader(r),
                ClientTimer::Relisten(l) => self.relisten(crate::client::ListenId(l), now),
            }
        }
    }

    fn request_stream_ended(&mut self, n: i64, http: HttpId, ex: &Exchange, now: Instant) {
        let Some(p) = self.pending.get_mut(&n) else {
            return;
        };
        if p.http != Some(http) {
            return;
        }
        p.http = None;
        self.policy
            .resume_cursor
            .after_end(&mut p.last_id, ex.last_id.as_deref());
        if let Some(max) = ex.too_large {
            self.give_up(n, ClientError::TooLarge { max }, true, now);
            return;
        }
        // JSON (or 202/204) that ended without our response is worth a
        // cancellation; a refusal is not. What it held instead, if anything
        // the client could not use, is the better reason.
        let why = ex.flaw.unwrap_or("answer ended without the response");
        if let Some(error) = ex.refusal(why) {
            if matches!(error, ClientError::Malformed(_))
                && ex.content == Content::Json
                && self.policy.json_without_response.waits(ex.flaw.is_none())
                && !matches!(ex.role, Role::Initialize(_))
            {
                // Taken as accepted: the response is awaited on a stream
                // that will not carry it.
                return;
            }
            let tell_server = matches!(error, ClientError::Malformed(_));
            self.give_up(n, error, tell_server, now);
            return;
        }
        // Nothing to resume from, or (an `initialize`) nothing to resume
        // in: the session is not the client's until the answer arrives.
        if p.last_id.is_none() || matches!(ex.role, Role::Initialize(_)) {
            self.lose_stream(n, ClientError::StreamLost, now);
            return;
        }
        let bound = self.policy.resume_bound;
        let clean = ex.status == Some(200) && ex.content == Content::Sse;
        if bound.made_progress(ex.messages, ex.last_id.is_some(), clean) {
            p.attempts = 0;
            if bound.windowed() {
                p.resuming_since = None;
            }
        }
        p.attempts += 1;
        let since = *p.resuming_since.get_or_insert(now);
        let too_many = p.attempts > self.config.resume_attempts_max;
        let too_long = now.saturating_duration_since(since)
            > Duration::from_millis(self.config.resume_window_ms)
            && bound.windowed();
        if too_many || too_long {
            self.lose_stream(n, ClientError::ResumeExhausted, now);
            return;
        }
        let delay = p.retry_ms.unwrap_or(self.config.retry_default_ms);
        self.timers
            .set(ClientTimer::Resume(n), now + Duration::from_millis(delay));
    }

    /// Request `n` has no stream left: it fails to its caller, unless the
    /// policy leaves it waiting ([`crate::policy::LostStream`]).
    fn lose_stream(&mut self, n: i64, error: ClientError, now: Instant) {
        if self.policy.lost_stream.fails() {
            self.give_up(n, error, true, now);
        }
    }

    /// Resumes request `n`'s stream: GET with the last id seen on it (R34).
    fn resume(&mut self, n: i64, now: Instant) {
        let Some(p) = self.pending.get(&n) else {
            return;
        };
        if p.http.is_some() {
            return;
        }
        let Some(last) = p.last_id.clone().filter(|_| self.phase.ready()) else {
            // The session is gone: a timer that did nothing would leave the
            // caller waiting for its deadline.
            self.give_up(n, ClientError::StreamLost, false, now);
            return;
        };
        let head = self.get_head(Some(&last));
        let http = self.open(Role::Request(n), head, Vec::new());
        if let Some(p) = self.pending.get_mut(&n) {
            p.http = Some(http);
        }
    }

    fn get_head(&self, last_event_id: Option<&str>) -> RequestHead {
        let mut head = self.session_headers(
            RequestHead::new(Method::Get).with(headers::ACCEPT, headers::MIME_SSE),
        );
        if let Some(l) = last_event_id {
            head = head.with(headers::LAST_EVENT_ID, l);
        }
        head
    }

    /// Opens (or reopens) the standalone background GET, unless it would
    /// take the pool's last free connection (`BackgroundGet::On`): then
    /// once one is freed.
    fn open_background(&mut self) {
        if self.background.disabled || self.background.http.is_some() || !self.phase.ready() {
            return;
        }
        let spare = self
            .config
            .connections_max
            .is_none_or(|n| self.exchanges.len() + 1 < n);
        self.background.deferred = !spare && self.policy.background_get == BackgroundGet::On;
        if self.background.deferred {
            return;
        }
        let last = self.background.last_id.clone();
        let head = self.get_head(last.as_deref());
        let http = self.open(Role::Background, head, Vec::new());
        self.background.http = Some(http);
    }

    /// An exchange is over: a background GET deferred for want of a
    /// connection may take the one freed.
    fn connection_freed(&mut self) {
        if self.background.deferred {
            self.open_background();
        }
    }

    fn background_ended(&mut self, http: HttpId, ex: &Exchange, now: Instant) {
        if self.background.http != Some(http) {
            return;
        }
        self.background.http = None;
        if self.background.disabled || !self.phase.ready() {
            return;
        }
        match ex.status {
            Some(200) if ex.content == Content::Sse => self.background.failures = 0,
            Some(400) if self.background.last_id.is_some() => {
                // The server no longer knows our cursor: start a fresh stream.
                self.background.last_id = None;
                self.background.failures += 1;
            }
            _ => self.background.failures += 1,
        }
        if self.background.failures > self.config.background_failures_max {
            return;
        }
        let delay = self
            .background
            .retry_ms
            .unwrap_or(self.config.retry_default_ms);
        self.timers
            .set(ClientTimer::Background, now + Duration::from_millis(delay));
    }

    /// EventSource-style: the POST stream that brought a response keeps being
    /// read to its end, then reconnects with its last id (`ReconnectStreams::EveryEnd`).
    fn become_reader(&mut self, http: HttpId) {
        let r = self.next_reader;
        self.next_reader += 1;
        let Some(ex) = self.exchanges.get_mut(&http) else {
            return;
        };
        ex.role = Role::Reader(r);
        self.readers.insert(
            r,
            Reader {
                http: Some(http),
                last_id: ex.last_id.clone(),
                retry_ms: ex.retry_ms,
                reconnects: 0,
            },
        );
    }

    fn reader_ended(&mut self, r: u32, http: HttpId, ex: &Exchange, now: Instant) {
        let Some(reader) = self.readers.get_mut(&r) else {
            return;
        };
        if reader.http != Some(http) {
            return;
        }
        reader.http = None;
        // WHATWG: a non-200 or non-event-stream answer fails the EventSource.
        let clean = ex.status == Some(200) && ex.content == Content::Sse;
        if !clean || reader.reconnects >= self.config.reader_reconnects_max || !self.phase.ready() {
            self.readers.remove(&r);
            return;
        }
        let delay = reader.retry_ms.unwrap_or(self.config.retry_default_ms);
        self.timers
            .set(ClientTimer::Reader(r), now + Duration::from_millis(delay));
    }

    fn reopen_reader(&mut self, r: u32) {
        let Some(reader) = self.readers.get(&r) else {
            return;
        };
        if reader.http.is_some() || !self.phase.ready() {
            return;
        }
        let last = reader.last_id.clone();
        let head = self.get_head(last.as_deref());
        let http = self.open(Role::Reader(r), head, Vec::new());
        if let Some(reader) = self.readers.get_mut(&r) {
            reader.http = Some(http);
            reader.reconnects += 1;
        }
    }

    /// Records an event id seen on `http` as the cursor of whatever it carries.
    fn note_id(&mut self, http: HttpId, id: String) {
        let Some(role) = self.exchanges.get(&http).map(|e| e.role) else {
            return;
        };
        match role {
            Role::Initialize(n) | Role::Request(n) | Role::Round(_, n) => {
                if let Some(p) = self.pending.get_mut(&n) {
                    p.last_id = Some(id);
                }
            }
            Role::Background => self.background.last_id = Some(id),
            Role::Reader(r) => {
                if let Some(reader) = self.readers.get_mut(&r) {
                    reader.last_id = Some(id);
                }
            }
            Role::Notify | Role::Delete | Role::Listen(..) => {}
        }
    }

    /// Records a `retry` seen on `http`.
    fn note_retry(&mut self, http: HttpId, ms: u64) {
        let Some(role) = self.exchanges.get(&http).map(|e| e.role) else {
            return;
        };
        match role {
            Role::Initialize(n) | Role::Request(n) | Role::Round(_, n) => {
                if let Some(p) = self.pending.get_mut(&n) {
                    p.retry_ms = Some(ms);
                }
            }
            Role::Background => self.background.retry_ms = Some(ms),
            Role::Reader(r) => {
                if let Some(reader) = self.readers.get_mut(&r) {
                    reader.retry_ms = Some(ms);
                }
            }
            Role::Notify | Role::Delete | Role::Listen(..) => {}
        }
    }

    // Listens (2026-07-28; `listen`: one [`listen::Listen`] each).

    /// Listens for the change notifications `filter` names (2026-07-28 era
    /// only). The stream's acknowledgement arrives as
    /// [`ClientEvent::Listening`], notifications as
    /// [`ClientEvent::Notification`]; a broken stream is listened again
    /// (by [`Relisten`]), an ended one is [`ClientEvent::ListenEnded`].
    pub fn listen(
        &mut self,
        filter: ListenFilter,
        now: Instant,
    ) -> Result<ListenId, ClientUsageError> {
        if !self.is_ready() {
            return Err(ClientUsageError::NotReady);
        }
        if !self.is_v2026() {
            return Err(ClientUsageError::SessionEra);
        }
        if self.listens.len() >= self.config.listens_max {
            return Err(ClientUsageError::TooManyRequests);
        }
        if !self.listen_leaves_a_connection() {
            return Err(ClientUsageError::NoSpareConnection);
        }
        let l = ListenId(self.next_listen);
        self.next_listen += 1;
        self.listens.insert(l, Listen::new(filter));
        self.open_listen(l, now);
        Ok(l)
    }

    /// Whether one more listen leaves the transport's pool a connection
    /// for requests ([`ListenPool`]): the listens there are, each holding
    /// its own for as long as it lasts, and the standalone GET if one is
    /// open, leave at least two.
    fn listen_leaves_a_connection(&self) -> bool {
        let held = self.listens.len() + usize::from(self.background.http.is_some());
        self.policy.listen_pool == ListenPool::IgnoringPool
            || self.config.connections_max.is_none_or(|n| held + 1 < n)
    }

    /// Stops listening: the stream is closed (the era's cancellation),
    /// [`ClientEvent::ListenEnded`] says `Cancelled` (as `cancel` ends a
    /// request with `Failed`), and nothing more is heard of `l`. The event
    /// is what tells an observer the listen is over even when no stream
    /// was open to close (a re-listen was waiting).
    pub fn unlisten(&mut self, l: ListenId) -> Result<(), ClientUsageError> {
        if !self.listens.contains_key(&l) {
            return Err(ClientUsageError::UnknownListen(l));
        }
        self.end_listen(l, Some(ClientError::Cancelled));
        Ok(())
    }

    /// The listens the application asked for and has not stopped.
    pub fn listens(&self) -> impl Iterator<Item = ListenId> + '_ {
        self.listens.keys().copied()
    }

    /// Whether listen `l`'s current stream is acknowledged.
    pub fn is_listening(&self, l: ListenId) -> bool {
        self.listens.get(&l).is_some_and(Listen::is_acked)
    }

    /// The request id of listen `l`'s current stream (its subscription id).
    pub fn listen_request(&self, l: ListenId) -> Option<RequestId> {
        self.listens
            .get(&l)
            .and_then(Listen::request)
            .map(RequestId::Num)
    }

    /// POSTs `subscriptions/listen` for `l` under a new request id.
    fn open_listen(&mut self, l: ListenId, _now: Instant) {
        let Some(filter) = self.listens.get(&l).map(Listen::filter_json) else {
            return;
        };
        let n = self.mint_id();
        let params = serde_json::json!({ "notifications": filter });
        let msg = Message::request(n, "subscriptions/listen", Some(RawJson::from(params)));
        let http = self.send_v2026(Role::Listen(l.0, n), &msg);
        if let Some(x) = self.listens.get_mut(&l) {
            x.opened(n, http);
        }
    }

    /// A message on listen `l`'s stream: the acknowledgement, a
    /// notification, or the end (`complete`, or an error).
    fn listen_message(&mut self, l: ListenId, http: HttpId, m: Message) {
        let Some(x) = self.listens.get_mut(&l).filter(|x| x.http() == Some(http)) else {
            return;
        };
        match x.read(m) {
            Heard::Acknowledged { agreed, resumed } => {
                self.events.push_back(ClientEvent::Listening {
                    listen: l,
                    agreed,
                    resumed,
                });
            }
            Heard::Duplicate => self.duplicates += 1,
            Heard::Notification { method, params } => self
                .events
                .push_back(ClientEvent::Notification { method, params }),
            Heard::Ended(error) => self.end_listen(l, error),
            Heard::Stranger => self.strangers += 1,
        }
    }

    /// Listen `l`'s exchange is over. A refusal ends it; a stream that
    /// broke is listened again after `retry_default_ms`, unless
    /// `relisten_failures_max` listens in a row were never acknowledged.
    fn listen_stream_ended(&mut self, l: ListenId, http: HttpId, ex: &Exchange, now: Instant) {
        let Some(x) = self.listens.get_mut(&l).filter(|x| x.http() == Some(http)) else {
            return;
        };
        let failures = x.stream_ended();
        if let Some(error) = ex.refusal("a listen answered without a stream") {
            self.end_listen(l, Some(error));
            return;
        }
        match self.policy.relisten {
            Relisten::Unnoticed => return,
            Relisten::Never => {
                self.end_listen(l, Some(ClientError::StreamLost));
                return;
            }
            Relisten::AndRelist if failures > self.config.relisten_failures_max => {
                self.end_listen(l, Some(ClientError::StreamLost));
                return;
            }
            Relisten::AndRelist => {}
        }
        let at = now + Duration::from_millis(self.config.retry_default_ms);
        self.timers.set(ClientTimer::Relisten(l.0), at);
    }

    /// The re-listen timer of `l` fired.
    fn relisten(&mut self, l: ListenId, now: Instant) {
        if self.listens.get(&l).is_some_and(|x| x.http().is_none()) && self.is_v2026() {
            self.open_listen(l, now);
        }
    }

    /// Listen `l` is over; the application hears why (`None`: the server
    /// ended it gracefully).
    fn end_listen(&mut self, l: ListenId, error: Option<ClientError>) {
        let Some(x) = self.listens.remove(&l) else {
            return;
        };
        self.timers.stop(ClientTimer::Relisten(l.0));
        if let Some(http) = x.http() {
            self.abort(http);
        }
        self.events
            .push_back(ClientEvent::ListenEnded { listen: l, error });
    }

    /// The exchange's listen, if it is one.
    fn listen_of(&self, http: HttpId) -> Option<ListenId> {
        match self.exchanges.get(&http)?.role {
            Role::Listen(l, _) => Some(ListenId(l)),
            _ => None,
        }
    }

    // Requests that take several rounds (MRTR, 2026-07-28; `mrtr`).

    /// Sends `msg` (request `n`); a 2026-07-28 request that may be answered
    /// with an `InputRequiredResult` is remembered for its retries.
    fn start_rounds(&mut self, n: i64, method: &str, params: Option<&RawJson>) {
        if self.is_v2026() && METHODS.contains(&method) {
            self.rounds.insert(n, Rounds::new(method, params, n));
        }
    }

    /// Retries request `id` (the handle `send_request` returned) with the
    /// application's answers to the server's `inputRequests`, keyed as the
    /// server keyed them (an `ElicitResult`, a `CreateMessageResult`, a
    /// `ListRootsResult` each). The retry has a new JSON-RPC id; its
    /// answer, or the next round's question, comes under `id`.
    pub fn provide_input(
        &mut self,
        id: &RequestId,
        responses: RawJson,
        now: Instant,
    ) -> Result<(), ClientUsageError> {
        let RequestId::Num(handle) = id else {
            return Err(ClientUsageError::UnknownRequest(id.clone()));
        };
        if !self.is_awaiting(*handle) {
            return Err(ClientUsageError::UnknownRequest(id.clone()));
        }
        let Value::Object(responses) = responses.to_value() else {
            return Err(ClientUsageError::InputNotAMap);
        };
        self.reissue(*handle, Some(responses), now);
        Ok(())
    }

    /// The requests waiting for the application's input.
    pub fn awaiting_input(&self) -> impl Iterator<Item = RequestId> + '_ {
        self.rounds
            .iter()
            .filter(|(_, r)| r.is_awaiting())
            .map(|(h, _)| RequestId::Num(*h))
    }

    /// Whether handle `h` waits for the application's input.
    fn is_awaiting(&self, h: i64) -> bool {
        self.rounds.get(&h).is_some_and(Rounds::is_awaiting)
    }

    /// The application's handle of request `n` (its first id).
    fn handle_of(&self, n: i64) -> i64 {
        self.pending.get(&n).map_or(n, |p| p.handle)
    }

    /// The request now carrying handle `h`, if one is in flight.
    fn wire_of(&self, h: i64) -> Option<i64> {
        match self.rounds.get(&h) {
            Some(r) => r.wire(),
            None => self.pending.contains_key(&h).then_some(h),
        }
    }

    /// Requests the application waits for: in flight, or waiting for its input.
    fn outstanding(&self) -> usize {
        self.pending.len() + self.awaiting_input().count()
    }

    /// Handle `h` has its outcome: it takes no more rounds.
    fn end_rounds(&mut self, h: i64) {
        self.rounds.remove(&h);
    }

    /// Cancels handle `h` while the application gathers its input: nothing
    /// is in flight, so nothing is sent. Whether `h` was waiting.
    fn cancel_awaiting(&mut self, h: i64) -> bool {
        if !self.is_awaiting(h) {
            return false;
        }
        self.fail_rounds(h, ClientError::Cancelled);
        true
    }

    /// Fails every request waiting for input (the client closes).
    fn fail_awaiting(&mut self, error: &ClientError) {
        let waiting: Vec<i64> = self
            .rounds
            .iter()
            .filter(|(_, r)| r.is_awaiting())
            .map(|(h, _)| *h)
            .collect();
        for h in waiting {
            self.fail_rounds(h, error.clone());
        }
    }

    /// Request `n`'s answer `result` in the 2026-07-28 era: when it is an
    /// `InputRequiredResult`, the round is over and the next one starts
    /// (or the request fails); whether it was one.
    fn input_required(&mut self, n: i64, result: &RawJson, now: Instant) -> bool {
        if !self.is_v2026() || !crate::mrtr::is_input_required(result) {
            return false;
        }
        let v = result.to_value();
        let h = self.handle_of(n);
        self.retire(n);
        // Only the methods that may take one have rounds.
        let method = self.rounds.get(&h).map_or("", Rounds::method);
        let asked = match self.check_asked(method, &v) {
            Ok(asked) => asked,
            Err(why) => {
                self.fail_rounds(h, ClientError::Malformed(why.as_static()));
                return true;
            }
        };
        let max = self.config.input_rounds_max;
        let Some(r) = self.rounds.get_mut(&h) else {
            return true;
        };
        let round = r.asked(asked.state);
        if round > max {
            self.fail_rounds(h, ClientError::TooManyInputRounds(max));
            return true;
        }
        match asked.requests {
            // Nothing to gather: the spec lets the client retry at once.
            None => self.reissue(h, None, now),
            Some(_) if self.config.server_requests == ServerRequests::Decline => {
                self.fail_rounds(h, ClientError::InputDeclined);
            }
            Some(requests) => self.events.push_back(ClientEvent::InputRequired {
                id: RequestId::Num(h),
                requests: RawJson::from(Value::Object(requests)),
                round,
            }),
        }
        true
    }

    /// The server's side of the rules, checked before the application is
    /// asked (the same check the server makes before it sends one).
    fn check_asked(&self, method: &str, v: &Value) -> Result<Asked, InputError> {
        let params = self.init_params.as_ref().map(RawJson::to_value);
        let declared = params.as_ref().and_then(|p| p.get("capabilities"));
        check_asked(method, &ClientCapabilities::declared(declared), v)
    }

    /// Sends handle `h`'s next round: its parameters as first given, the
    /// application's input, and the server's state echoed verbatim.
    fn reissue(&mut self, h: i64, responses: Option<Map<String, Value>>, now: Instant) {
        let Some(r) = self.rounds.get(&h) else {
            return;
        };
        let (method, params) = (r.method().to_owned(), r.next_params(responses));
        let n = self.mint_id();
        let msg = Message::request(n, &method, Some(params));
        let http = self.send_post(Role::Round(h, n), &msg);
        self.track(n, &method, Some(http), now);
        if let Some(p) = self.pending.get_mut(&n) {
            p.handle = h;
        }
        if let Some(r) = self.rounds.get_mut(&h) {
            r.sent(n);
        }
    }

    /// Handle `h` fails without a round in flight.
    fn fail_rounds(&mut self, h: i64, error: ClientError) {
        self.end_rounds(h);
        self.events.push_back(ClientEvent::Failed {
            id: RequestId::Num(h),
            error,
        });
    }

    // The 2026-07-28 era: the probe, its fallback, requests dressed for the
    // era (`v2026`).

    /// Whether the client speaks the 2026-07-28 era with its server.
    pub fn is_v2026(&self) -> bool {
        self.version().is_some_and(ProtocolVersion::is_v2026)
    }

    /// Probes with `server/discover`; `params` are what `initialize` would
    /// have carried (capabilities, clientInfo), kept for a fallback.
    fn discover(&mut self, params: RawJson, now: Instant) -> RequestId {
        self.init_params = Some(params);
        let n = self.mint_id();
        let msg = Message::request(n, "server/discover", None);
        self.phase = Phase::Initializing;
        let http = self.send_v2026(Role::Initialize(n), &msg);
        self.track(n, "server/discover", Some(http), now);
        RequestId::Num(n)
    }

    /// Sends `msg` as a 2026-07-28 POST: the standard headers, and `_meta`
    /// with the version, the capabilities and the client's description.
    fn send_v2026(&mut self, role: Role, msg: &Message) -> HttpId {
        let (head, body) = v2026::dress(msg, self.init_params.as_ref(), &self.tool_headers);
        self.open(role, head, body.to_json().into_bytes())
    }

    /// A `tools/list` result: in the 2026-07-28 era each tool's custom headers
    /// (SEP-2243) remembered for its calls, and each tool with an invalid
    /// annotation left out of what the application gets, which is told why
    /// ([`ClientEvent::ToolRejected`]). The result as it came when nothing
    /// is left out.
    fn learn_tools(&mut self, listing: RawJson) -> RawJson {
        if self.version() != Some(ProtocolVersion::LATEST_V2026) {
            return listing;
        }
        let max = self.config.tool_headers_bytes_max;
        let (listing, rejected) = v2026::learn_tools(listing, &mut self.tool_headers, max);
        for (name, reason) in rejected {
            self.events
                .push_back(ClientEvent::ToolRejected { name, reason });
        }
        listing
    }

    /// The probe's answer: a 2026-07-28 server (ready, no session), or for
    /// `Auto` a reason to fall back. Whether it was handled here.
    fn finish_discover(&mut self, n: i64, result: Result<RawJson, ErrorObject>, now: Instant) {
        self.retire(n);
        let speaks_v2026 = result.as_ref().is_ok_and(v2026::speaks_v2026);
        match result {
            Ok(result) if speaks_v2026 => {
                self.phase = Phase::Ready(Committed {
                    session_id: None,
                    version: ProtocolVersion::LATEST_V2026,
                });
                self.events.push_back(ClientEvent::Initialized {
                    id: RequestId::Num(n),
                    session_id: None,
                    version: ProtocolVersion::LATEST_V2026,
                    result,
                });
            }
            Ok(_) => self.discover_failed(
                n,
                ClientError::UnsupportedVersion("none 2026-07-28".into()),
                now,
            ),
            Err(error) => self.discover_failed(
                n,
                ClientError::Status {
                    status: 200,
                    error: Some(error),
                },
                now,
            ),
        }
    }

    /// The probe failed with `error`: `Auto` falls back to `initialize`
    /// unless the server spoke as a 2026-07-28 one.
    fn discover_failed(&mut self, n: i64, error: ClientError, now: Instant) {
        self.phase = Phase::Fresh;
        let next = v2026::after_probe(&error, self.config.era, self.probe_repeated);
        let id = RequestId::Num(n);
        match (next, self.init_params.clone()) {
            (v2026::AfterProbe::Again, Some(params)) => {
                self.probe_repeated = true;
                self.events.push_back(ClientEvent::FellBack { id, error });
                self.discover(params, now);
            }
            (v2026::AfterProbe::FallBack, Some(params)) => {
                // The same caller waits: its `initialize` goes on as the
                // session era's, under a new id.
                self.events.push_back(ClientEvent::FellBack { id, error });
                let _ = self.initialize_v2025(params, now);
            }
            _ => self.events.push_back(ClientEvent::Failed { id, error }),
        }
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
