//! [`ServerEndpoint`]: every session of one MCP endpoint, and the status codes
//! that need no session (R1–R31, R41–R43).
//!
//! It validates a request head and body, mints session ids from its
//! [`IdSource`] (a CSPRNG unless a checker hands it a reproducible one), and dispatches to the [`ServerSession`] named by
//! `Mcp-Session-Id`. Its outputs are the sessions' outputs, merged.

use super::admission::{Admission, AdmissionLimits};
use super::drain::{observe_own, BroadcastOrigin, ServerOutput};
use super::request::{self, AllowList, UnreadBody};
use super::session::{ServerSession, SessionConfig, SessionTimer};
use super::v2026;
use super::{Cause, Content, EndReason, ResponseHead, ServerEvent, Transmit, TransmitKind};
use crate::error::RequestError;
use crate::head::{Method, RequestHead};
use crate::headers;
use crate::id_source::IdSource;
use crate::ids::{HttpId, MsgKey, SessionId};
use crate::jsonrpc::{self, Body, ErrorObject, Message, RawJson, METHOD_NOT_FOUND};
use crate::observe::Observation;
use crate::policy::{ResumeLookup, ServerPolicy, SessionErrorStatus, StatelessRequests};
use crate::preset::{Scheduled, SchedulingPoint};
use crate::principal::{Caller, Principal};
use crate::release::Release;
use crate::shared::Shared;
use crate::time::Instant;
use crate::unhashed::{Compared, Unhashed};
use crate::version::ProtocolVersion;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::{Arc, LazyLock};

/// Endpoint-wide settings.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct EndpointConfig {
    /// Per-session bounds and timings.
    ///
    /// Shared: every session of the endpoint (and of every endpoint made
    /// from a clone of this configuration) reads one copy, not its own 150
    /// bytes. Set fields through it (`config.session.events_max = 2`: copy
    /// on write), or build one with `SessionConfig { .. }.into()`.
    pub session: Shared<SessionConfig>,
    /// Hosts and origins allowed (R41–R43); loopback by default.
    pub allow: AllowList,
    /// Largest POST body accepted, in bytes (413 past it).
    pub body_max: usize,
    /// Live sessions at once. A newcomer first evicts a session that never
    /// completed its handshake, then the longest idle one; 503 only when every
    /// session is initialized and busy (see [`Admission`]).
    pub sessions_max: usize,
    /// Live sessions one peer address may hold (429 past it, after evicting
    /// that peer's own half-open sessions). `None`: no quota, the default,
    /// since behind a proxy every client has the proxy's address.
    pub sessions_per_peer_max: Option<usize>,
    /// Bytes all sessions together may keep (each is also bounded by its
    /// `session_bytes_max`): past it a new session first evicts half-open
    /// and idle ones, else is refused (503).
    pub retained_bytes_max: usize,
    /// Whether 2026-07-28 requests are served; off, this is a
    /// session-era server (a probe gets 400 -32601, and 2026-07-28 clients in
    /// `auto` mode fall back to `initialize`).
    pub v2026_era: bool,
    /// What a 2026-07-28 `subscriptions/listen` may receive here (each listen
    /// is acknowledged with what it asked for and this allows): all by default.
    pub listen: v2026::ListenFilter,
    /// The application's tools that mirror arguments as `Mcp-Param-*`
    /// headers (SEP-2243), as its `tools/list` declares them
    /// ([`ToolHeaderTable::from_list`](crate::tool_headers::ToolHeaderTable::from_list)):
    /// a 2026-07-28 `tools/call` of one is refused (400, -32020) unless its
    /// headers agree with its arguments. Empty by default: no tool declares any.
    pub tool_headers: crate::tool_headers::ToolHeaderTable,
    /// 2026-07-28 requests being answered at once (503 past it):
    /// each holds a session of its own until its exchange is over.
    pub stateless_requests_max: usize,
    /// The first exchange id this endpoint mints is `http_id_base + 1`; shells
    /// that run one endpoint per session give each a disjoint range.
    pub http_id_base: u64,
}

impl EndpointConfig {
    /// The bounds [`Admission`] enforces.
    pub fn admission_limits(&self) -> AdmissionLimits {
        AdmissionLimits {
            sessions_max: self.sessions_max,
            sessions_per_peer_max: self.sessions_per_peer_max,
            retained_bytes_max: self.retained_bytes_max,
        }
    }
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            session: Shared::default(),
            allow: AllowList::default(),
            body_max: 4 << 20,
            sessions_max: 100_000,
            sessions_per_peer_max: None,
            retained_bytes_max: 256 << 20,
            v2026_era: true,
            listen: v2026::ListenFilter::all(),
            tool_headers: Default::default(),
            stateless_requests_max: 4096,
            http_id_base: 0,
        }
    }
}

/// The outcome of [`ServerEndpoint::handle_request`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatched {
    /// The id minted for this exchange; every transmit for it names it.
    pub http: HttpId,
    /// The session it went to (a new one for `initialize`).
    pub session: Option<SessionId>,
    /// Refused, with the status already queued as transmits.
    pub outcome: Result<(), RequestError>,
}

/// All sessions of one endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServerEndpoint {
    /// Fixed for the endpoint's life; shared, so copies of the endpoint
    /// (a checker's states) neither copy nor rehash it.
    config: Shared<EndpointConfig>,
    /// Fixed for the endpoint's life: compared, never hashed.
    policy: Compared<ServerPolicy>,
    ids: IdSource,
    /// Each session shared between clones until changed: a model checker's
    /// step touches one session of a world.
    sessions: BTreeMap<SessionId, Shared<ServerSession>>,
    /// How many of `sessions` are 2026-07-28 requests' own.
    stateless: usize,
    /// The one session every 2026-07-28 request shares
    /// ([`StatelessRequests::SharedTransport`]; `None` under FIXED).
    shared_stateless: Option<SessionId>,
    /// Who may open a session and who is evicted for room. It follows from
    /// the sessions' own state (kept in step by `settle`; the one exception,
    /// the order in which half-open sessions opened, decides only who is
    /// evicted from a full table), so it takes no part in equality or
    /// hashing: a model checker fingerprints the sessions themselves. Clones
    /// share it until one changes it, so the worlds a checker copies by the
    /// million do not copy it.
    admission: Unhashed<Arc<Admission>>,
    routes: BTreeMap<HttpId, SessionId>,
    next_http: u64,
    transmits: VecDeque<Transmit>,
    dirty: BTreeSet<SessionId>,
    /// The application's secret, the same for every session and request of
    /// this endpoint (drawn on first use, or set for a fleet).
    app_secret: Option<[u8; 32]>,
}

impl ServerEndpoint {
    /// Gives every part this endpoint shares with its clones by a reference
    /// count a copy of its own (a checker's worker takes a state another
    /// made: `World::localize` in `mcp-streamable-check`). Nothing it means changes.
    pub fn localize(&mut self) {
        self.config.localize();
        self.sessions.values_mut().for_each(Shared::localize);
        if Arc::strong_count(&self.admission.0) > 1 {
            self.admission.0 = Arc::new(Admission::clone(&self.admission.0));
        }
    }

    /// An endpoint whose session ids come from a CSPRNG keyed by the OS
    /// ([`IdSource::from_os`]): what anything facing a network wants.
    #[cfg(feature = "os-rng")]
    pub fn new(config: EndpointConfig, policy: ServerPolicy) -> Self {
        Self::with_ids(config, policy, IdSource::from_os())
    }

    /// An endpoint drawing its ids from `ids`: checkers and simulations pass
    /// [`IdSource::reproducible`] so that the same seed gives the same trace.
    pub fn with_ids(config: EndpointConfig, policy: ServerPolicy, ids: IdSource) -> Self {
        let base = config.http_id_base;
        Self::with_shared_config(Shared::new(config), base, policy, ids)
    }

    /// [`Self::with_ids`] with a configuration many endpoints share (a shell
    /// with one endpoint per session keeps one copy, not one per session:
    /// about 400 bytes each), minting exchange ids from `http_id_base + 1`
    /// (each endpoint its own range; the configuration's own
    /// `http_id_base` is not read).
    pub fn with_shared_config(
        config: Shared<EndpointConfig>,
        http_id_base: u64,
        policy: ServerPolicy,
        ids: IdSource,
    ) -> Self {
        ServerEndpoint {
            next_http: http_id_base + 1,
            config,
            policy: Compared(policy),
            ids,
            sessions: BTreeMap::new(),
            stateless: 0,
            shared_stateless: None,
            // Shared with every endpoint until one admits a session itself
            // (copy on write): a shell's one-session endpoints admit into
            // its shared table and never allocate their own.
            admission: Unhashed(EMPTY_ADMISSION.clone()),
            routes: BTreeMap::new(),
            transmits: VecDeque::new(),
            dirty: BTreeSet::new(),
            app_secret: None,
        }
    }

    /// A secret for what the application hands to clients and must know
    /// again on any later request (the key of MRTR `requestState`): one per
    /// endpoint, drawn from its source on first use. Applications are made
    /// per session, and a 2026-07-28 request is a session of its own, so an
    /// application cannot keep such a key itself.
    pub fn app_secret(&mut self) -> [u8; 32] {
        if let Some(k) = self.app_secret {
            return k;
        }
        let key = self.ids.secret();
        self.app_secret = Some(key);
        key
    }

    /// Sets the application's secret: the instances of a fleet share one,
    /// so a state sealed by one opens on any other.
    pub fn set_app_secret(&mut self, key: [u8; 32]) {
        self.app_secret = Some(key);
    }

    /// A source of its own for the application (MRTR state nonces and
    /// keys, say), forked from the endpoint's: a CSPRNG in a shell, the
    /// reproducible stream in a checker, so same seed, same trace.
    pub fn fork_entropy(&mut self) -> IdSource {
        self.ids.fork()
    }

    // ---- getters -------------------------------------------------------

    /// The policy in force.
    pub fn policy(&self) -> &ServerPolicy {
        &self.policy
    }

    /// The configuration.
    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }

    /// A session, read-only.
    pub fn session(&self, id: &SessionId) -> Option<&ServerSession> {
        self.sessions.get(id).map(|s| &**s)
    }

    /// A session, for application commands (`respond`, `notify`, …); its
    /// outputs then surface through the endpoint's `poll_*`.
    pub fn session_mut(&mut self, id: &SessionId) -> Option<&mut ServerSession> {
        let s = self.sessions.get_mut(id)?;
        self.dirty.insert(id.clone());
        Some(&mut **s)
    }

    /// Live session ids, in order (2026-07-28 requests' own sessions included).
    pub fn session_ids(&self) -> impl Iterator<Item = &SessionId> {
        self.sessions.keys()
    }

    /// The session-era sessions: those a client names in `Mcp-Session-Id`,
    /// which admission counts and unrelated notifications reach (a 2026-07-28
    /// request's own session is none of these), in order.
    pub fn named_session_ids(&self) -> impl Iterator<Item = &SessionId> {
        self.sessions
            .iter()
            .filter(|(_, s)| !s.version().is_v2026())
            .map(|(id, _)| id)
    }

    /// The one session every stateless request joins under
    /// [`StatelessRequests::SharedTransport`] (the TS SDK's transport reused
    /// across requests, CVE-2026-25536), once the first one made it; `None`
    /// under FIXED. A shell that gives each session an endpoint of its own
    /// sends the requests [`joins_shared_stateless`](Self::joins_shared_stateless)
    /// picks to the endpoint holding it.
    pub fn shared_stateless_session(&self) -> Option<&SessionId> {
        self.shared_stateless.as_ref()
    }

    /// Whether a request naming no session goes into the shared stateless
    /// session: under [`StatelessRequests::SharedTransport`], every
    /// 2026-07-28 POST but a listen, as [`handle_request`](Self::handle_request)
    /// decides it. Always `false` under FIXED.
    pub fn joins_shared_stateless(
        config: &EndpointConfig,
        policy: ServerPolicy,
        head: &RequestHead,
        body: &[u8],
    ) -> bool {
        policy.stateless_requests == StatelessRequests::SharedTransport
            && config.v2026_era
            && head.method == Method::Post
            && head.header(headers::MCP_METHOD) != Some("subscriptions/listen")
            && request::protocol_version_of(head, body)
                .is_ok_and(|version| v2026::is_v2026(version, body))
    }

    /// The session an exchange belongs to.
    pub fn route(&self, http: HttpId) -> Option<&SessionId> {
        self.routes.get(&http)
    }

    // ---- inputs --------------------------------------------------------

    /// One HTTP request, head and whole body (empty for GET and DELETE).
    pub fn handle_request(&mut self, head: &RequestHead, body: &[u8], now: Instant) -> Dispatched {
        self.handle_request_from(head, body, &Caller::default(), now)
    }

    /// One HTTP request from `caller`: its address (the per-peer quota) and
    /// the principal the transport authenticated (the only one a session it
    /// opens serves, [`SessionBinding`](crate::policy::SessionBinding)).
    pub fn handle_request_from(
        &mut self,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> Dispatched {
        let http = self.reserve_http();
        self.handle_reserved(http, head, body, caller, now)
    }

    /// Swaps the source this endpoint draws session ids, namespaces and
    /// secrets from; the one it had. A caller that wants what a request
    /// mints to follow from the request rather than from the order of
    /// arrival (a model checker: `sim::Naming::ByExchange`) hands each
    /// request its own source and puts the endpoint's back.
    pub fn replace_ids(&mut self, ids: IdSource) -> IdSource {
        std::mem::replace(&mut self.ids, ids)
    }

    /// A fresh exchange id, for a request the caller will hand over later
    /// ([`Self::handle_reserved`]), or answer itself ([`Self::refuse`]): a
    /// fleet instance holds a request until the shared store has answered
    /// for its session, and serves some exchanges itself.
    pub fn reserve_http(&mut self) -> HttpId {
        let http = HttpId(self.next_http);
        self.next_http += 1;
        http
    }

    /// [`Self::handle_request_from`] for an exchange id taken with
    /// [`Self::reserve_http`].
    pub fn handle_reserved(
        &mut self,
        http: HttpId,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> Dispatched {
        let mut own = std::mem::replace(&mut self.admission.0, EMPTY_ADMISSION.clone());
        let d = self.handle_request_in(http, head, body, caller, AdmitTo::Own(&mut own), now);
        self.admission.0 = own;
        self.end_evicted(now);
        d
    }

    /// Answers a reserved exchange with `error`'s status and JSON-RPC error.
    pub fn refuse(&mut self, http: HttpId, error: &RequestError) {
        self.reject(http, error);
    }

    /// Takes up a session opened on another instance of a fleet, from what
    /// the store keeps of it: ready, speaking `version`, its event ids in
    /// `namespace`. Admission counts it as any other (and may refuse it, or
    /// evict another for it). A session held already is left as it is,
    /// unless this copy ended (its idle timer, say, while the client worked
    /// with other instances): a new copy takes its place. `principal` is
    /// who opened it (the record keeps it): the only caller it serves here
    /// too.
    pub fn adopt_session(
        &mut self,
        id: SessionId,
        version: ProtocolVersion,
        namespace: u32,
        adoption: u32,
        principal: Option<Principal>,
        now: Instant,
    ) -> Result<(), RequestError> {
        if self.sessions.get(&id).is_some_and(|s| !s.is_ended()) {
            return Ok(());
        }
        let limits = self.config.admission_limits();
        let admission = Arc::make_mut(&mut self.admission.0);
        admission.admit(&id, None, limits, now)?;
        let s = ServerSession::adopted(
            id.clone(),
            namespace,
            version,
            adoption,
            self.config.session.clone(),
            *self.policy,
        )
        .with_principal(principal);
        self.sessions.insert(id.clone(), Shared::new(s));
        self.dirty.insert(id);
        self.end_evicted(now);
        Ok(())
    }

    /// One HTTP request, a new session admitted by `admission`, a table the
    /// caller shares between endpoints (a shell with one endpoint per
    /// session): the caller drains its [`Admission::poll_evicted`] and ends
    /// those sessions wherever they live.
    pub fn handle_request_admitting(
        &mut self,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        admission: &mut Admission,
        now: Instant,
    ) -> Dispatched {
        let http = self.reserve_http();
        self.handle_request_in(http, head, body, caller, AdmitTo::Shared(admission), now)
    }

    fn handle_request_in(
        &mut self,
        http: HttpId,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        to: AdmitTo<'_>,
        now: Instant,
    ) -> Dispatched {
        let mut session = None;
        let admit = Admit { caller, to };
        let outcome = self.dispatch(http, head, body, now, admit, &mut session);
        if let Err(e) = &outcome {
            self.reject(http, e);
        }
        if let Some(sid) = &session {
            self.routes.insert(http, sid.clone());
            self.dirty.insert(sid.clone());
        }
        Dispatched {
            http,
            session,
            outcome,
        }
    }

    /// A request whose body the shell could not read whole (see
    /// [`request::body_limit`]): 413, 400 or 408, with a JSON-RPC error.
    pub fn handle_unread_body(
        &mut self,
        _head: &RequestHead,
        why: UnreadBody,
        _now: Instant,
    ) -> Dispatched {
        let http = self.reserve_http();
        let error = match why {
            UnreadBody::TooLarge => RequestError::PayloadTooLarge {
                max: self.config.body_max,
            },
            UnreadBody::Unreadable => RequestError::UnreadableBody,
            UnreadBody::TimedOut => RequestError::BodyTimeout,
        };
        self.reject(http, &error);
        Dispatched {
            http,
            session: None,
            outcome: Err(error),
        }
    }

    /// The exchange `http` is gone; call once per exchange when it is done,
    /// whoever ended it.
    pub fn handle_http_closed(&mut self, http: HttpId, now: Instant) {
        let Some(sid) = self.routes.remove(&http) else {
            return;
        };
        if let Some(s) = self.sessions.get_mut(&sid) {
            s.handle_http_closed(http, now);
            if s.version().is_v2026() && self.shared_stateless.as_ref() != Some(&sid) {
                // Its one exchange is over: answered, or closed by the
                // client, which in this era cancels the request.
                s.close(now);
            }
            self.dirty.insert(sid);
        }
    }

    /// A notification for every client it concerns, whichever era: each
    /// session-era session that is initialized gets it as an unrelated
    /// notification (its standalone stream, or held for one); each 2026-07-28
    /// listen that subscribed to it gets it on its stream, tagged with its
    /// subscription id. Returns who got what (session, key, cause), for the
    /// observer.
    pub fn broadcast(
        &mut self,
        method: &str,
        params: Option<RawJson>,
        now: Instant,
    ) -> Vec<(SessionId, MsgKey, Cause)> {
        let value = params.as_ref().map(RawJson::to_value);
        let mut sent = Vec::new();
        for id in self.broadcast_targets(method, value.as_ref()) {
            if let Some((key, cause)) =
                self.notify_of_broadcast(&id, method, params.clone(), value.as_ref(), now)
            {
                sent.push((id, key, cause));
            }
        }
        sent
    }

    /// Who a broadcast of `method` (its params as `value`) is for, in id
    /// order: 2026-07-28 listens subscribed to it, and session-era sessions
    /// initialized and not ended. A fleet claims each session-era target in
    /// the store before [`Self::notify_of_broadcast`], since other
    /// instances hold copies of the same sessions (`fleet::broadcast`).
    pub fn broadcast_targets(
        &self,
        method: &str,
        value: Option<&serde_json::Value>,
    ) -> Vec<SessionId> {
        self.sessions
            .iter()
            .filter(|(_, s)| {
                if s.version().is_v2026() {
                    s.listens_to(method, value)
                } else {
                    s.is_initialized() && !s.is_ended()
                }
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// A broadcast for one of its targets ([`Self::broadcast_targets`]):
    /// a 2026-07-28 listen gets it tagged with its subscription, a session-era
    /// session as an unrelated notification. What was sent, if anything.
    pub fn notify_of_broadcast(
        &mut self,
        id: &SessionId,
        method: &str,
        params: Option<RawJson>,
        value: Option<&serde_json::Value>,
        now: Instant,
    ) -> Option<(MsgKey, Cause)> {
        let s = self.sessions.get_mut(id)?;
        let got = if s.version().is_v2026() {
            s.notify_listener(method, value, now)
        } else {
            s.notify(method, params, Cause::Unrelated, now)
                .ok()
                .map(|key| (key, Cause::Unrelated))
        };
        self.dirty.insert(id.clone());
        got
    }

    /// Whether session `id` here speaks the 2026-07-28 era (a listen's own
    /// session, held by this endpoint alone).
    pub fn is_v2026(&self, id: &SessionId) -> bool {
        self.sessions
            .get(id)
            .is_some_and(|s| s.version().is_v2026())
    }

    /// Ends every 2026-07-28 listen gracefully (a `complete` result, then the
    /// end of its stream): before a shutdown.
    pub fn end_listens(&mut self, now: Instant) {
        let listens: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.is_listen() && !s.is_ended())
            .map(|(id, _)| id.clone())
            .collect();
        for id in listens {
            if let Some(s) = self.sessions.get_mut(&id) {
                let _ = s.end_listen(now);
            }
            self.dirty.insert(id);
        }
    }

    /// Takes session `id` out whole, as if it had never been opened: no
    /// answer, no event, no admission record. For a model checker whose
    /// run can never reach the session again (its client is done, and no
    /// server timer fires within the run): what the session holds can no
    /// longer decide anything, and states that differ only in it meet.
    /// Whether it lived here.
    pub fn forget_session(&mut self, id: &SessionId) -> bool {
        if !self.remove_session(id) {
            return false;
        }
        if self.admission.0.contains(id) {
            Arc::make_mut(&mut self.admission.0).remove(id);
        }
        self.dirty.remove(id);
        true
    }

    /// Ends the session `id` to make room for others (evicted by a shared
    /// [`Admission`]); whether it lived here.
    pub fn evict(&mut self, id: &SessionId, now: Instant) -> bool {
        match self.session_mut(id) {
            Some(s) => {
                s.close(now);
                true
            }
            None => false,
        }
    }

    fn end_evicted(&mut self, now: Instant) {
        if !self.admission.0.has_evicted() {
            return;
        }
        let evicted: Vec<SessionId> =
            std::iter::from_fn(|| Arc::make_mut(&mut self.admission.0).poll_evicted()).collect();
        for id in evicted {
            self.evict(&id, now);
        }
    }

    /// Fires every session timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.poll_timeout().is_some_and(|(at, _)| at <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            if let Some(s) = self.sessions.get_mut(&id) {
                s.handle_timeout(now);
                self.dirty.insert(id);
            }
        }
    }

    /// Gives back the memory of the endpoint's emptied maps and queues
    /// (an emptied map keeps its root node, a drained queue its capacity:
    /// `crate::release`). A shell that keeps one endpoint per session calls
    /// it when the session goes idle, so an idle session costs its state,
    /// not its busiest moment; nothing it drops is state (equality and the
    /// fingerprint are unchanged).
    pub fn release_if_idle(&mut self) {
        self.routes.release_if_empty();
        self.dirty.release_if_empty();
        self.transmits.release_if_empty();
    }

    // ---- outputs -------------------------------------------------------

    /// Whether [`Self::poll_transmit`] or [`Self::poll_event`] may return
    /// something. When not, a drain would change nothing: a caller holding
    /// the endpoint copy-on-write (a checker's state) need not take it
    /// mutably at all.
    pub fn has_output(&self) -> bool {
        !self.transmits.is_empty() || !self.dirty.is_empty()
    }

    /// The next thing to write.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        if let Some(t) = self.transmits.pop_front() {
            return Some(t);
        }
        let mut cursor: Option<SessionId> = None;
        loop {
            let id = match &cursor {
                None => self.dirty.iter().next(),
                Some(c) => self.dirty.range((Excluded(c), Unbounded)).next(),
            }
            .cloned()?;
            if let Some(t) = self.sessions.get_mut(&id).and_then(|s| s.poll_transmit()) {
                return Some(t);
            }
            self.settle(&id);
            cursor = Some(id);
        }
    }

    /// The next thing the application must handle, with its session.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<(SessionId, ServerEvent)> {
        let mut cursor: Option<SessionId> = None;
        loop {
            let id = match &cursor {
                None => self.dirty.iter().next(),
                Some(c) => self.dirty.range((Excluded(c), Unbounded)).next(),
            }
            .cloned()?;
            if let Some(e) = self.sessions.get_mut(&id).and_then(|s| s.poll_event()) {
                return Some((id, e));
            }
            self.settle(&id);
            cursor = Some(id);
        }
    }

    /// Forgets a drained session's dirty mark, and the session itself once it
    /// has ended and said all it had to say.
    fn settle(&mut self, id: &SessionId) {
        match self.sessions.get(id) {
            Some(s) if s.version().is_v2026() => {}
            Some(s) if !s.is_ended() => {
                let state = s.admission_state();
                if self.admission.0.differs(id, state) {
                    Arc::make_mut(&mut self.admission.0).handle_session(id, state);
                }
            }
            _ => {
                if self.admission.0.contains(id) {
                    Arc::make_mut(&mut self.admission.0).remove(id);
                }
            }
        }
        if self.sessions.get(id).is_some_and(|s| s.has_output()) {
            return;
        }
        self.dirty.remove(id);
        if self.sessions.get(id).is_some_and(|s| s.is_ended()) {
            self.remove_session(id);
        }
    }

    /// Takes session `id` out of the table, its count and its routes;
    /// whether it was there.
    fn remove_session(&mut self, id: &SessionId) -> bool {
        let Some(s) = self.sessions.remove(id) else {
            return false;
        };
        if s.version().is_v2026() {
            self.stateless -= 1;
        }
        if self.shared_stateless.as_ref() == Some(id) {
            self.shared_stateless = None;
        }
        self.routes.retain(|_, s| s != id);
        true
    }

    /// The earliest deadline of any session.
    pub fn poll_timeout(&self) -> Option<(Instant, SessionTimer)> {
        self.sessions
            .values()
            .filter_map(|s| s.poll_timeout())
            .min()
    }

    /// Drains the core until it is quiet: events first (so an application
    /// answering at once has its answer out in the same drain as the head
    /// it belongs to), then transmits, each shown to `observe` before
    /// `handle` gets it (with the observer, for what it observes itself). Returns whether anything came out.
    pub fn drain_observed(
        &mut self,
        observe: &mut dyn FnMut(&Observation),
        mut handle: impl FnMut(&mut ServerEndpoint, ServerOutput, &mut dyn FnMut(&Observation)),
    ) -> bool {
        let mut any = false;
        loop {
            let mut progressed = false;
            while let Some((session, event)) = self.poll_event() {
                progressed = true;
                observe_own(&session, &event, observe);
                handle(self, ServerOutput::Event(session, event), observe);
            }
            while let Some(t) = self.poll_transmit() {
                progressed = true;
                // Observed by reference, then moved on: no copy of the body.
                let o = Observation::Transmit(t);
                observe(&o);
                if let Observation::Transmit(t) = o {
                    handle(self, ServerOutput::Transmit(t), observe);
                }
            }
            if !progressed {
                return any;
            }
            any = true;
        }
    }

    /// [`ServerEndpoint::broadcast`], observed, written once for every loop
    /// that broadcasts (the driver, the application's `Cx`, the checker's
    /// world): the broadcast itself when it originates here, then each
    /// message it sent. Returns how many got it.
    pub fn broadcast_observed(
        &mut self,
        method: &str,
        params: Option<RawJson>,
        now: Instant,
        origin: BroadcastOrigin,
        observe: &mut dyn FnMut(&Observation),
    ) -> usize {
        if origin == BroadcastOrigin::Here {
            observe(&Observation::Broadcast {
                method: method.to_owned(),
                params: params.clone(),
            });
        }
        let sent = self.broadcast(method, params, now);
        for (session, key, cause) in &sent {
            observe(&Observation::Sent {
                session: session.to_string(),
                key: *key,
                cause: cause.clone(),
                origin: None,
            });
        }
        sent.len()
    }

    // ---- internals -----------------------------------------------------

    fn dispatch(
        &mut self,
        http: HttpId,
        head: &RequestHead,
        body: &[u8],
        now: Instant,
        admit: Admit<'_>,
        session: &mut Option<SessionId>,
    ) -> Result<(), RequestError> {
        request::check_singletons(head)?;
        self.config.allow.check(head)?;
        if matches!(head.method, Method::Other(_)) {
            return Err(RequestError::MethodNotAllowed);
        }
        request::check_accept(head)?;
        let header_version = request::protocol_version_of(head, body)?;
        // The 2026-07-28 era has no GET stream and no DELETE; its POSTs stand
        // alone, whatever `Mcp-Session-Id` they carry.
        let v2026_era = self.config.v2026_era;
        let v2026_header = header_version.is_some_and(ProtocolVersion::is_v2026);
        match head.method {
            Method::Get | Method::Delete if v2026_era && v2026_header => {
                return Err(RequestError::MethodNotAllowed)
            }
            Method::Post if v2026_era && v2026::is_v2026(header_version, body) => {
                let caller = admit.caller;
                return self.dispatch_v2026(http, head, body, header_version, caller, now, session);
            }
            _ => {}
        }
        let unauthorized = self.policy.session_errors == SessionErrorStatus::Unauthorized;
        let sid = match head.header(headers::MCP_SESSION_ID) {
            None => None,
            Some(text) => Some(
                text.parse::<SessionId>()
                    .ok()
                    .filter(|id| self.serves(id, admit.caller))
                    .ok_or(RequestError::UnknownSession { unauthorized })?,
            ),
        };
        match head.method {
            Method::Post => {
                self.dispatch_post(http, head, body, header_version, sid, now, admit, session)
            }
            Method::Get => {
                let sid = sid.ok_or(RequestError::MissingSessionId { unauthorized })?;
                let last = head.header(headers::LAST_EVENT_ID);
                let sid = self.resuming_session(sid, last);
                *session = Some(sid.clone());
                self.sessions
                    .get_mut(&sid)
                    .ok_or(RequestError::UnknownSession { unauthorized })?
                    .handle_get(http, last, now)
            }
            Method::Delete => {
                let sid = sid.ok_or(RequestError::MissingSessionId { unauthorized })?;
                *session = Some(sid.clone());
                if let Some(s) = self.sessions.get_mut(&sid) {
                    s.handle_delete(http, now);
                }
                Ok(())
            }
            Method::Other(_) => Err(RequestError::MethodNotAllowed),
        }
    }

    /// The session a GET naming `named` and resuming from `last` is served
    /// by: the one it names, or under [`ResumeLookup::AnySession`], when
    /// that one has no such event, the first session (in id order) that has.
    fn resuming_session(&self, named: SessionId, last: Option<&str>) -> SessionId {
        let Some(last) = last.filter(|_| self.policy.resume_lookup == ResumeLookup::AnySession)
        else {
            return named;
        };
        let knows = |s: &ServerSession| s.can_resume_from(last);
        if self.sessions.get(&named).is_some_and(|s| knows(s)) {
            return named;
        }
        self.sessions
            .iter()
            .find(|(_, s)| knows(s))
            .map_or(named, |(id, _)| id.clone())
    }

    #[allow(clippy::too_many_arguments)]
    fn dispatch_post(
        &mut self,
        http: HttpId,
        head: &RequestHead,
        body: &[u8],
        header_version: Option<ProtocolVersion>,
        sid: Option<SessionId>,
        now: Instant,
        admit: Admit<'_>,
        session: &mut Option<SessionId>,
    ) -> Result<(), RequestError> {
        self.check_post_body(head, body)?;
        let unauthorized = self.policy.session_errors == SessionErrorStatus::Unauthorized;
        let version = match &sid {
            Some(id) => self.sessions.get(id).map(|s| s.version()),
            None => header_version,
        }
        .unwrap_or(ProtocolVersion::ASSUMED_WITHOUT_HEADER);
        let parsed = jsonrpc::parse_body(body, version)?;
        let has_initialize = parsed.messages().iter().any(Message::is_initialize);
        match (sid, &parsed) {
            (Some(_), _) if has_initialize => Err(RequestError::BadInitialize),
            (Some(id), _) => {
                *session = Some(id.clone());
                let s = self
                    .sessions
                    .get_mut(&id)
                    .ok_or(RequestError::UnknownSession { unauthorized })?;
                s.handle_post(http, parsed, now)
            }
            (None, Body::Single(m)) if m.is_initialize() => {
                let id = self.open_session(m, admit, now)?;
                *session = Some(id.clone());
                let s = self
                    .sessions
                    .get_mut(&id)
                    .ok_or(RequestError::SessionLimit)?;
                s.handle_post(http, parsed, now)
            }
            (None, _) if has_initialize => Err(RequestError::BadInitialize),
            (None, Body::Single(Message::Request { id, method, .. }))
                if method == "server/discover" =>
            {
                // 2026-07-28 clients probe first and fall back to `initialize` on an error.
                self.answer_error(
                    http,
                    400,
                    Some(id.clone()),
                    ErrorObject::new(
                        METHOD_NOT_FOUND,
                        "server/discover is not supported; use initialize",
                    ),
                );
                Ok(())
            }
            (None, _) => Err(RequestError::MissingSessionId { unauthorized }),
        }
    }

    /// Whether session `id` is live and serves `caller`: an ended session,
    /// and one opened by another principal, are alike unknown to it (the
    /// same 404, so an id learned by someone else tells them nothing).
    fn serves(&self, id: &SessionId, caller: &Caller) -> bool {
        self.sessions.get(id).is_some_and(|s| {
            !s.is_ended()
                && self
                    .policy
                    .session_binding
                    .serves(s.principal(), caller.principal.as_ref())
        })
    }

    /// A POST's body type and size, in either era.
    fn check_post_body(&self, head: &RequestHead, body: &[u8]) -> Result<(), RequestError> {
        request::check_content_type(head)?;
        if body.len() > self.config.body_max {
            return Err(RequestError::PayloadTooLarge {
                max: self.config.body_max,
            });
        }
        Ok(())
    }

    /// A session id from the CSPRNG that no live session holds.
    fn fresh_session_id(&mut self) -> SessionId {
        let sessions = &self.sessions;
        self.ids.session_id(|id| sessions.contains_key(id))
    }

    /// A 2026-07-28 POST: checked, then run in a session of its
    /// own that no one can name and that ends with its exchange.
    #[allow(clippy::too_many_arguments)]
    fn dispatch_v2026(
        &mut self,
        http: HttpId,
        head: &RequestHead,
        body: &[u8],
        header_version: Option<ProtocolVersion>,
        caller: &Caller,
        now: Instant,
        session: &mut Option<SessionId>,
    ) -> Result<(), RequestError> {
        self.check_post_body(head, body)?;
        let message = v2026::check(head, header_version, body, &self.config.tool_headers)?;
        if !message.is_request() {
            // This era defines no client notifications over HTTP: accepted.
            self.push(
                http,
                TransmitKind::Head(ResponseHead::new(202, Content::None)),
            );
            self.push(http, TransmitKind::End(EndReason::Complete));
            return Ok(());
        }
        let is_listen =
            matches!(&message, Message::Request { method, .. } if method == "subscriptions/listen");
        let shared = self.shared_stateless.as_ref().filter(|_| !is_listen);
        if let Some((id, s)) = shared.and_then(|id| Some((id.clone(), self.sessions.get_mut(id)?)))
        {
            let outcome = s.handle_post(http, Body::Single(message), now);
            *session = Some(id);
            return outcome;
        }
        if self.stateless >= self.config.stateless_requests_max {
            return Err(RequestError::Overloaded);
        }
        let id = self.fresh_session_id();
        let mut s = ServerSession::stateless(id.clone(), &self.config.session, *self.policy)
            .with_principal(caller.principal.clone());
        if self.policy.stateless_requests == StatelessRequests::SharedTransport && !is_listen {
            // Every later 2026-07-28 request goes into this one, whoever sends it.
            self.shared_stateless = Some(id.clone());
        }
        let outcome = match message {
            Message::Request {
                id: rid,
                method,
                params,
            } if method == "subscriptions/listen" => {
                let asked = v2026::ListenFilter::from_params(params.as_ref()).ok_or_else(|| {
                    RequestError::InvalidParams {
                        what: "subscriptions/listen needs params.notifications".into(),
                        id: Some(rid.clone()),
                    }
                })?;
                s.handle_listen(http, rid, asked.agreed(&self.config.listen), now);
                Ok(())
            }
            message => s.handle_post(http, Body::Single(message), now),
        };
        self.sessions.insert(id.clone(), Shared::new(s));
        self.stateless += 1;
        *session = Some(id);
        outcome
    }

    fn open_session(
        &mut self,
        initialize: &Message,
        admit: Admit<'_>,
        now: Instant,
    ) -> Result<SessionId, RequestError> {
        let version = session_version(initialize);
        let id = self.fresh_session_id();
        let limits = self.config.admission_limits();
        let admission = match admit.to {
            AdmitTo::Shared(a) => a,
            AdmitTo::Own(a) => Arc::make_mut(a),
        };
        admission.admit(&id, admit.caller.peer, limits, now)?;
        let namespace = self.ids.namespace();
        let session = ServerSession::new(
            id.clone(),
            namespace,
            version,
            self.config.session.clone(),
            *self.policy,
        )
        .with_principal(admit.caller.principal.clone());
        self.sessions.insert(id.clone(), Shared::new(session));
        Ok(id)
    }

    fn reject(&mut self, http: HttpId, error: &RequestError) {
        self.push(http, TransmitKind::Head(error.response_head()));
        self.push(http, TransmitKind::Json(error.message()));
        self.push(http, TransmitKind::End(EndReason::Complete));
    }

    fn answer_error(
        &mut self,
        http: HttpId,
        status: u16,
        id: Option<crate::ids::RequestId>,
        error: ErrorObject,
    ) {
        self.push(
            http,
            TransmitKind::Head(ResponseHead::new(status, Content::Json)),
        );
        self.push(http, TransmitKind::Json(Message::Error { id, error }));
        self.push(http, TransmitKind::End(EndReason::Complete));
    }

    fn push(&mut self, http: HttpId, kind: TransmitKind) {
        self.transmits.push_back(Transmit { http, kind });
    }

    /// The session that offers scheduling point `point` of exchange `http`.
    pub(crate) fn session_of_point(
        &self,
        http: HttpId,
        point: SchedulingPoint,
    ) -> Option<SessionId> {
        // Not by `routes`: a listener can outlive its HTTP exchange.
        self.sessions
            .iter()
            .find(|(_, s)| s.scheduling_points().contains(&(http, point)))
            .map(|(sid, _)| sid.clone())
    }
}

/// The version a session opened by `initialize` speaks: the one offered
/// when this crate knows it, else the newest. `initialize` selects the
/// session era, so a 2026-07-28 version offered there is answered with the
/// newest session-era one.
pub fn session_version(initialize: &Message) -> ProtocolVersion {
    let offered = match initialize {
        Message::Request {
            params: Some(p), ..
        } => p
            .to_value()
            .get("protocolVersion")
            .and_then(|v| v.as_str())
            .and_then(|v| v.parse::<ProtocolVersion>().ok()),
        _ => None,
    };
    offered
        .filter(|v| !v.is_v2026())
        .unwrap_or(ProtocolVersion::LATEST)
}

/// Where a new session asks to be let in.
struct Admit<'a> {
    caller: &'a Caller,
    to: AdmitTo<'a>,
}

/// The endpoint's own table (copied only if it must change), or one the
/// driver shares between endpoints.
enum AdmitTo<'a> {
    Own(&'a mut Arc<Admission>),
    Shared(&'a mut Admission),
}

/// An empty table to stand in while the endpoint's own is lent out.
static EMPTY_ADMISSION: LazyLock<Arc<Admission>> = LazyLock::new(Arc::default);

/// The sessions' scheduling points (mcp-go's competing goroutines, a
/// listen's split start; none under FIXED): the driver picks which fires.
impl Scheduled for ServerEndpoint {
    fn scheduling_points(&self) -> Vec<(HttpId, SchedulingPoint)> {
        self.sessions
            .values()
            .flat_map(|s| s.scheduling_points())
            .collect()
    }

    fn handle_scheduling_point(
        &mut self,
        http: HttpId,
        point: SchedulingPoint,
        now: Instant,
    ) -> bool {
        let Some(sid) = self.session_of_point(http, point) else {
            return false;
        };
        let Some(s) = self.session_mut(&sid) else {
            return false;
        };
        s.handle_scheduling_point(http, point, now)
    }
}
