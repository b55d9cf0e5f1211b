//! [`World`]: client cores and the server endpoint, connected by an in-memory
//! network whose every delivery, drop and tick the caller controls (in the
//! style of quinn-proto's test `Pair`). Every observation goes to a
//! [`Monitor`]. [`Pair`] is a world with one client; the model checker
//! explores worlds with several.

use super::clocks::Clocks;
use super::memo::{ClientInput, ClientMemo, Stepped};
use super::naming::Naming;
use super::net::{deliveries, Delivery, Link};
use super::parsed;
use super::servers::Servers;
use crate::monitor::{Monitor, Observation};
use mcp_streamable::client::{
    ClientConfig, ClientEra, ClientEvent, ClientOutput, ClientSession, ClientTransmitKind,
};
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::{HttpId, RequestId, SessionId};
use mcp_streamable::jsonrpc::RawJson;
use mcp_streamable::policy::{ClientPolicy, ServerPolicy};
use mcp_streamable::preset::{Scheduled, SchedulingPoint};
use mcp_streamable::principal::{Caller, Principal};
use mcp_streamable::server::RequestHead;
use mcp_streamable::server::{
    Cause, EndpointConfig, ServerEndpoint, ServerEvent, ServerOutput, ServerSession,
};
use mcp_streamable::shared::Shared;
use mcp_streamable::time::Instant;
use mcp_streamable::unhashed::Unhashed;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// How a [`World`] is set up.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PairConfig {
    /// The server's settings.
    pub server: EndpointConfig,
    /// The server's policy.
    pub server_policy: ServerPolicy,
    /// The client's settings.
    pub client: ClientConfig,
    /// The client's policy.
    pub client_policy: ClientPolicy,
    /// Seed of the server's session ids ([`IdSource::reproducible`]: a
    /// checker wants the same seed to give the same trace).
    pub seed: u64,
    /// The server application answers every request at once.
    pub server_auto_respond: bool,
    /// The client application answers every server request at once.
    pub client_auto_respond: bool,
    /// How many clients.
    pub clients: usize,
    /// The era each client speaks, by index (`client.era` for the rest): a
    /// session-era client and a 2026-07-28 one on one server.
    pub client_eras: Vec<ClientEra>,
    /// Keep every client event in `client_events` (tests); the model checker
    /// keeps only outcomes, so equal situations hash equal.
    pub record_events: bool,
    /// Count, per client, the `notifications/tools/list_changed` its
    /// application is told of (`World::list_changes_heard`): a fleet model
    /// judges that each broadcast reaches each session once.
    pub count_list_changes: bool,
    /// How the server names the exchanges and sessions requests open (the
    /// checker: [`Naming::ByExchange`]).
    pub naming: Naming,
    /// One clock, or one per component ([`Clocks`]: the checker's
    /// partial-order reduction needs the latter).
    pub clocks: Clocks,
    /// Each client authenticates as a principal of its own
    /// ([`principal_of`]); off, every request is anonymous. A world whose
    /// clients never name each other's sessions cannot tell the two apart
    /// (every session serves the one client that knows its id), so only a
    /// model with an attacker ([`World::hijack_on`]) turns it on: equal
    /// clients then stay interchangeable for the symmetry reduction.
    pub principals: bool,
}

/// Client `c`'s principal, when the world's clients authenticate
/// ([`PairConfig::principals`]).
pub fn principal_of(c: usize) -> Principal {
    static NAMES: LazyLock<Vec<Principal>> = LazyLock::new(|| {
        (0..16)
            .map(|c| Principal::new(format!("client-{c}")))
            .collect()
    });
    NAMES
        .get(c)
        .cloned()
        .unwrap_or_else(|| Principal::new(format!("client-{c}")))
}

/// A client's core numbers its exchanges from 1; the requests it forges
/// ([`World::hijack_on`]) are numbered from here, where no core reaches.
pub const FORGED_BASE: u64 = HTTP_ID_STRIDE / 2;

/// What the applications' list-change notifications and broadcasts say
/// changed (`World::list_changes_heard` counts it).
pub const LIST_CHANGED: &str = "notifications/tools/list_changed";

/// What the simulated server application answers, serialized once per
/// thread: answers are shared by the states that carry them, and a
/// checker's worker threads each count references on their own copy.
struct SimResults {
    initialize: RawJson,
    call: RawJson,
}

std::thread_local! {
    static SIM_RESULTS: SimResults = SimResults {
        initialize: RawJson::from(serde_json::json!({
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "pair", "version": "0"}
        })),
        call: RawJson::from(serde_json::json!({"content": [{"type": "text", "text": "ok"}]})),
    };
}

/// The one request whose order in the application's queue matters.
const CALL: &str = "tools/call";

/// The world names client `c`'s exchange `h` (as that client's core minted
/// it) `c * HTTP_ID_STRIDE + h`. Every client core mints from 1, so a core's
/// state never says which client it is: clients with the same script are
/// interchangeable, which the checker's symmetry reduction relies on.
pub const HTTP_ID_STRIDE: u64 = 1_000_000;

impl Default for PairConfig {
    fn default() -> Self {
        let mut server = EndpointConfig::default();
        server.session.keepalive_ms = None;
        PairConfig {
            server,
            server_policy: ServerPolicy::FIXED,
            client: ClientConfig::default(),
            client_policy: ClientPolicy::FIXED,
            seed: 0x5eed,
            server_auto_respond: true,
            client_auto_respond: true,
            clients: 1,
            client_eras: Vec::new(),
            record_events: true,
            count_list_changes: false,
            naming: Naming::Arrival,
            clocks: Clocks::Global,
            principals: false,
        }
    }
}

/// A request the server application has not answered yet: its session,
/// id and method, and, in the 2026-07-28 era, the server exchange it
/// arrived on (what its answer is for: `Observation::Sent`'s `origin`).
/// Session-era requests name none: their session keeps clients apart, and
/// an exchange remembered past its end would split states that are one.
pub type PendingRequest = (SessionId, RequestId, Arc<str>, Option<HttpId>);

/// Client cores and the server side (an endpoint, or a fleet:
/// [`Servers`]) over an in-memory network.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World<S = ServerEndpoint> {
    /// The client cores.
    pub clients: Vec<Shared<ClientSession>>,
    /// The server side, shared between worlds until one changes it: a
    /// checker's state copies it by a reference count, and a step that
    /// touches a client only (its timers, a response item it reads) leaves
    /// a successor that neither copies the server nor hashes it again.
    pub server: Shared<S>,
    /// The current time: everybody's under [`Clocks::Global`]; under
    /// [`Clocks::PerComponent`], that of the server side's sessions no
    /// client opened.
    pub now: Instant,
    /// Each client's clock under [`Clocks::PerComponent`]; empty under one
    /// clock ([`World::client_now`]).
    pub client_clocks: Vec<Instant>,
    /// Under [`Clocks::PerComponent`], the server side's clock for each
    /// client's part of it: the sessions the client opened and the
    /// exchanges it sent (their timers fire on it, what they are handed
    /// reads it); empty under one clock ([`World::server_now_of`]).
    pub server_clocks: Vec<Instant>,
    /// Exchanges by the client's id (unique across clients).
    pub links: BTreeMap<HttpId, Shared<Link>>,
    /// Server exchange id → client exchange id.
    pub by_server: Shared<BTreeMap<HttpId, HttpId>>,
    /// The client whose request each session was routed from first (the
    /// `initialize` that minted it): the checker's reduction asks whose a
    /// session is. Follows from the history, so it is not hashed.
    pub session_owner: Shared<BTreeMap<SessionId, usize>>,
    /// Everything the client applications were told, in order (when recorded).
    pub client_events: Vec<ClientEvent>,
    /// Requests each client sent, and whether the application got an outcome.
    pub outcomes: Shared<BTreeMap<(usize, RequestId), bool>>,
    /// Requests the server application has not answered yet.
    pub server_pending: Shared<Vec<PendingRequest>>,
    /// How many `notifications/tools/list_changed` each client's
    /// application was told of, by client (when
    /// [`PairConfig::count_list_changes`]; empty otherwise).
    pub list_changes_heard: BTreeMap<usize, u32>,
    /// The monitor judging the run.
    pub monitor: Monitor,
    /// Every observation, when recording (replays and pictures; off while checking).
    pub log: Option<Vec<Observation>>,
    /// The run's memo of client steps ([`ClientMemo`]; the checker's), or
    /// none: each core is stepped in place.
    pub memo: Unhashed<Option<Arc<ClientMemo>>>,
    pub(super) config: Shared<PairConfig>,
}

impl PairConfig {
    /// Client `c`'s core as it starts: its era (the model's, or its own
    /// when the model gives clients different eras) and the client policy.
    pub(super) fn fresh_client(&self, c: usize) -> ClientSession {
        let era = self.client_eras.get(c).copied().unwrap_or(self.client.era);
        let client = ClientConfig { era, ..self.client };
        ClientSession::new(client, self.client_policy)
    }
}

/// One client and the server.
pub type Pair = World;

impl World {
    /// A one-client world with default settings and these policies.
    pub fn new(server_policy: ServerPolicy, client_policy: ClientPolicy) -> Self {
        Self::with(PairConfig {
            server_policy,
            client_policy,
            ..PairConfig::default()
        })
    }

    /// The client that owns exchange `ch` (a world id). Exchange naming is
    /// the clients' and the same whatever the server side; `<World>::owner`
    /// from generic code.
    pub fn owner(ch: HttpId) -> usize {
        (ch.0 / HTTP_ID_STRIDE) as usize
    }

    /// Exchange `ch` (a world id) as its client's core names it.
    pub fn local(ch: HttpId) -> HttpId {
        HttpId(ch.0 % HTTP_ID_STRIDE)
    }

    /// Whether exchange `ch` (a world id) is one a client forged
    /// ([`World::hijack_on`]) rather than one its core opened.
    pub fn is_forged(ch: HttpId) -> bool {
        Self::local(ch).0 >= FORGED_BASE
    }

    /// The world id of client `client`'s exchange `local`.
    pub fn world_http(client: usize, local: HttpId) -> HttpId {
        HttpId(client as u64 * HTTP_ID_STRIDE + local.0)
    }

    /// A world from a full configuration.
    pub fn with(config: PairConfig) -> Self {
        let server = ServerEndpoint::with_ids(
            config.server.clone(),
            config.server_policy,
            IdSource::reproducible(config.seed),
        );
        Self::with_servers(config, server)
    }

    /// The server application broadcasts `method` to every client it
    /// concerns (`ServerEndpoint::broadcast`: session-era sessions and
    /// matching listens); how many got it.
    pub fn server_broadcast(&mut self, method: &str) -> usize {
        let World {
            server,
            now,
            monitor,
            log,
            ..
        } = self;
        let sent = server.broadcast_observed(
            method,
            None,
            *now,
            mcp_streamable::server::BroadcastOrigin::Here,
            &mut |o| record(log, monitor, o),
        );
        self.pump();
        sent
    }

    /// Scheduling points the server's presets expose now (server ids).
    pub fn server_scheduling_points(&self) -> Vec<(HttpId, SchedulingPoint)> {
        self.server.scheduling_points()
    }

    /// The earliest deadline of client `c`'s part of the server side (the
    /// sessions it opened), or with `None` of the sessions no client opened,
    /// on that part's clock ([`World::server_now_of`]).
    pub fn server_deadline_of(&self, c: Option<usize>) -> Option<Instant> {
        self.server
            .session_ids()
            .filter(|sid| self.session_owner.get(*sid).copied() == c)
            .filter_map(|sid| self.server.session(sid)?.poll_timeout())
            .map(|(t, _)| t)
            .min()
    }

    /// Under [`Clocks::PerComponent`]: the clock of client `c`'s part of
    /// the server side (with `None`, of the sessions no client opened)
    /// jumps to that part's next deadline, and the timers of its sessions
    /// due then fire; nobody else's. Whether it had one.
    pub fn tick_server_part(&mut self, c: Option<usize>) -> bool {
        let Some(at) = self.server_deadline_of(c) else {
            return false;
        };
        let now = match c.and_then(|c| self.server_clocks.get_mut(c)) {
            Some(clock) => {
                *clock = (*clock).max(at);
                *clock
            }
            None => {
                self.now = self.now.max(at);
                self.now
            }
        };
        let due: Vec<SessionId> = self
            .server
            .session_ids()
            .filter(|sid| self.session_owner.get(*sid).copied() == c)
            .filter(|sid| {
                self.server
                    .session(sid)
                    .and_then(ServerSession::poll_timeout)
                    .is_some_and(|(t, _)| t <= now)
            })
            .cloned()
            .collect();
        for sid in &due {
            if let Some(s) = self.server.session_mut(sid) {
                s.handle_timeout(now);
            }
        }
        self.pump();
        true
    }

    /// Fires one server scheduling point.
    pub fn fire_server(&mut self, server_http: HttpId, point: SchedulingPoint) -> bool {
        let owner = self.by_server.get(&server_http).map(|ch| Self::owner(*ch));
        let now = self.server_now_of(owner);
        let fired = self.server.handle_scheduling_point(server_http, point, now);
        self.pump();
        fired
    }
}

impl<S: Servers> World<S> {
    /// A world from a full configuration and its server side (the
    /// configuration's server settings are the endpoint's, when it is one).
    pub fn with_servers(config: PairConfig, server: S) -> Self {
        let clients = (0..config.clients.max(1))
            .map(|c| Shared::new(config.fresh_client(c)))
            .collect();
        World {
            clients,
            server: Shared::new(server),
            now: Instant::ZERO,
            client_clocks: match config.clocks {
                Clocks::Global | Clocks::Auto => Vec::new(),
                Clocks::PerComponent => vec![Instant::ZERO; config.clients.max(1)],
            },
            server_clocks: match config.clocks {
                Clocks::Global | Clocks::Auto => Vec::new(),
                Clocks::PerComponent => vec![Instant::ZERO; config.clients.max(1)],
            },
            links: BTreeMap::new(),
            by_server: Shared::default(),
            session_owner: Shared::default(),
            client_events: Vec::new(),
            outcomes: Shared::default(),
            server_pending: Shared::default(),
            list_changes_heard: BTreeMap::new(),
            monitor: Monitor::new(),
            log: None,
            memo: Unhashed(None),
            config: Shared::new(config),
        }
    }

    /// Feeds the monitor (and the log, when recording).
    pub fn observe(&mut self, o: &Observation) {
        record(&mut self.log, &mut self.monitor, o);
    }

    /// Client 0.
    pub fn client(&self) -> &ClientSession {
        &self.clients[0]
    }

    /// Client 0, mutably (call `pump` after commands).
    pub fn client_mut(&mut self) -> &mut ClientSession {
        &mut self.clients[0]
    }

    /// The session id the server minted, if any (with several sessions, the
    /// smallest: see [`Servers::first_session`]).
    pub fn server_session(&self) -> Option<SessionId> {
        self.server.first_session()
    }

    // ---- the client application -------------------------------------

    /// Client 0 sends `initialize` with minimal params.
    pub fn initialize(&mut self) -> RequestId {
        self.initialize_on(0).expect("initialize")
    }

    /// Client `c` sends `initialize`; `None` if it cannot now.
    pub fn initialize_on(&mut self, c: usize) -> Option<RequestId> {
        let params = RawJson::from(serde_json::json!({
            "capabilities": {},
            "clientInfo": {"name": "sim", "version": "0"}
        }));
        let now = self.client_now(c);
        let id = self.clients.get_mut(c)?.initialize(params, now).ok()?;
        self.outcomes.insert((c, id.clone()), false);
        self.pump();
        Some(id)
    }

    /// The requests sent by the clients that have no outcome yet, by
    /// client, in order: what L2 and the fleet's F5 judge once nothing
    /// more can happen.
    pub fn waiting_requests(&self) -> impl Iterator<Item = &(usize, RequestId)> {
        self.outcomes
            .iter()
            .filter(|(_, done)| !**done)
            .map(|(key, _)| key)
    }

    /// Client 0 sends a `tools/call` with a progress token.
    pub fn call(&mut self, tool: &str) -> RequestId {
        self.call_on(0, tool).expect("ready")
    }

    /// Client `c` sends a `tools/call`; `None` if it is not ready.
    pub fn call_on(&mut self, c: usize, tool: &str) -> Option<RequestId> {
        // Numbered among this client's own requests: a count of every
        // client's would make one client's call depend on the others' steps.
        let n = self.outcomes.keys().filter(|(d, _)| *d == c).count();
        let params = RawJson::from(serde_json::json!({
            "name": tool, "arguments": {}, "_meta": {"progressToken": n}
        }));
        let now = self.client_now(c);
        let id = self
            .clients
            .get_mut(c)?
            .send_request("tools/call", Some(params), now)
            .ok()?;
        self.outcomes.insert((c, id.clone()), false);
        self.pump();
        Some(id)
    }

    /// The client's result for `id`, if it has one.
    pub fn result_of(&self, id: &RequestId) -> Option<&ClientEvent> {
        self.client_events.iter().find(|e| match e {
            ClientEvent::Response { id: r, .. } | ClientEvent::Failed { id: r, .. } => r == id,
            _ => false,
        })
    }

    // ---- the server application -------------------------------------

    /// The server application answers every request it has pending.
    pub fn server_respond_all(&mut self) {
        let pending: Vec<(SessionId, RequestId)> = self
            .server_pending
            .iter()
            .map(|(s, id, _, _)| (s.clone(), id.clone()))
            .collect();
        for (session, id) in pending {
            self.server_respond_to(&session, &id);
        }
    }

    /// The server application answers request `id` (of the first session
    /// that has it pending).
    pub fn server_respond(&mut self, id: &RequestId) {
        let Some(pos) = self.server_pending.iter().position(|(_, r, _, _)| r == id) else {
            return;
        };
        self.server_respond_at(pos);
    }

    /// The server application answers request `id` of `session`.
    pub fn server_respond_to(&mut self, session: &SessionId, id: &RequestId) -> bool {
        let Some(pos) = self
            .server_pending
            .iter()
            .position(|(s, r, _, _)| s == session && r == id)
        else {
            return false;
        };
        self.server_respond_at(pos);
        true
    }

    /// The server application answers 2026-07-28 request `id` with an
    /// `InputRequiredResult` carrying only a state (the sim's clients
    /// declare no capability to ask of): the client retries at once under
    /// a new id, which the application then has pending. Whether it could.
    pub fn server_ask(&mut self, id: &RequestId) -> bool {
        let Some(pos) = self
            .server_pending
            .iter()
            .position(|(_, r, m, _)| r == id && &**m == "tools/call")
        else {
            return false;
        };
        let (sid, id, _, origin) = self.server_pending.remove(pos);
        let result = serde_json::json!({"resultType": "input_required", "requestState": "sim"});
        self.answer(sid, id, origin, RawJson::from(result));
        true
    }

    fn server_respond_at(&mut self, pos: usize) {
        let (sid, id, method, origin) = self.server_pending.remove(pos);
        let result = SIM_RESULTS.with(|r| {
            if &*method == "initialize" {
                r.initialize.clone()
            } else {
                r.call.clone()
            }
        });
        self.answer(sid, id, origin, result);
    }

    /// The application answers request `id` of `sid`, which arrived on
    /// server exchange `origin` (when known: I1 judges where it is written).
    fn answer(&mut self, sid: SessionId, id: RequestId, origin: Option<HttpId>, result: RawJson) {
        let now = self.session_now(&sid);
        let at = self.server.holder(&sid, &id);
        if let Some(s) = self.server.session_mut(at, &sid) {
            // Named only when the answer is written now, somewhere: the
            // monitor keeps the origin until that write.
            let origin = origin.filter(|_| s.request_exchange(&id).is_some());
            if let Ok(key) = s.respond(&id, Ok(result), now) {
                self.observe(&Observation::Sent {
                    session: sid.to_string(),
                    key,
                    cause: Cause::Request(id),
                    origin,
                });
            }
        }
        self.pump();
    }

    /// The server application sends a notification in the first session.
    pub fn server_notify(&mut self, method: &str, cause: Cause) -> bool {
        let Some(sid) = self.server_session() else {
            return false;
        };
        self.server_notify_in(&sid, method, cause)
    }

    /// The application notifies every session of the session era that
    /// client `c`'s requests opened (a broadcast reaching `c`'s sessions on
    /// its own, the checker's `notify` per session); how many.
    pub fn server_notify_sessions_of(&mut self, c: usize, method: &str) -> usize {
        let sessions: Vec<SessionId> = self
            .server
            .named_sessions(0)
            .into_iter()
            .filter(|sid| self.session_owner.get(sid) == Some(&c))
            .collect();
        for sid in &sessions {
            self.server_notify_in(sid, method, Cause::Unrelated);
        }
        sessions.len()
    }

    /// The server application sends a notification in session `sid` (on
    /// the server running the request it is caused by, if any).
    pub fn server_notify_in(&mut self, sid: &SessionId, method: &str, cause: Cause) -> bool {
        let at = self.holder_of(sid, &cause);
        self.server_notify_at(at, sid, method, cause)
    }

    /// The server that runs what `cause` names (server 0 for unrelated messages).
    fn holder_of(&self, sid: &SessionId, cause: &Cause) -> usize {
        match cause {
            Cause::Request(id) => self.server.holder(sid, id),
            _ => 0,
        }
    }

    /// The application on server `at` sends a notification in session `sid`.
    pub fn server_notify_at(
        &mut self,
        at: usize,
        sid: &SessionId,
        method: &str,
        cause: Cause,
    ) -> bool {
        let now = self.session_now(sid);
        let Some(s) = self.server.session_mut(at, sid) else {
            return false;
        };
        let r = s.notify(method, None, cause.clone(), now);
        if let Ok(key) = r {
            self.observe(&Observation::Sent {
                session: sid.to_string(),
                key,
                cause,
                origin: None,
            });
        }
        self.pump();
        r.is_ok()
    }

    /// Client `c` listens for tool list changes (2026-07-28 era); `None` if it
    /// cannot now.
    pub fn listen_on(&mut self, c: usize) -> Option<mcp_streamable::client::ListenId> {
        let now = self.client_now(c);
        let filter = mcp_streamable::v2026::ListenFilter {
            tools: true,
            ..Default::default()
        };
        let l = self.clients.get_mut(c)?.listen(filter, now).ok()?;
        self.pump();
        Some(l)
    }

    /// Client `c`'s listens.
    pub fn client_listens(&self, c: usize) -> Vec<mcp_streamable::client::ListenId> {
        self.clients
            .get(c)
            .map(|x| x.listens().collect())
            .unwrap_or_default()
    }

    /// Client `c` stops listen `l`.
    pub fn unlisten_on(&mut self, c: usize, l: mcp_streamable::client::ListenId) {
        if let Some(x) = self.clients.get_mut(c) {
            let _ = x.unlisten(l);
        }
        self.pump();
    }

    /// Who client `c`'s requests come from, as the server side is told:
    /// its own principal when the world's clients authenticate, else
    /// nobody.
    pub fn caller_of(&self, c: usize) -> Caller {
        let principal = self.config.principals.then(|| principal_of(c));
        Caller::default().with_principal(principal)
    }

    /// Client `c` turns attacker: it has learned another client's session
    /// id (the first other client with a session, by index) and the last
    /// event id written on that session, if any, and under its own
    /// principal tries every verb on it, each a request of its own on the
    /// network: a `tools/call` POST, a GET (resuming from that event when
    /// there is one), a DELETE; and, when `c` has a session of its own and
    /// there is such an event, a GET naming its own session that resumes
    /// from the other's event. No core of `c` knows these exchanges
    /// ([`FORGED_BASE`]); `tag` numbers this attempt among `c`'s. Whether
    /// there was a session to use.
    pub fn hijack_on(&mut self, c: usize, tag: u64) -> bool {
        let Some((sid, version)) = self.victim_of(c) else {
            return false;
        };
        let event = self.monitor.last_event_id(sid.as_str());
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":"forged-{tag}","method":"tools/call","params":{{"name":"echo","arguments":{{}}}}}}"#
        );
        let own = self.clients.get(c).and_then(|x| x.session_id().cloned());
        let mut requests: Vec<(RequestHead, Vec<u8>)> = vec![
            (
                RequestHead::post(Some(&sid), Some(version)),
                body.into_bytes(),
            ),
            (
                RequestHead::get(&sid, version, event.as_deref()),
                Vec::new(),
            ),
            (
                RequestHead::delete(&sid).with(
                    mcp_streamable::headers::MCP_PROTOCOL_VERSION,
                    version.as_str(),
                ),
                Vec::new(),
            ),
        ];
        if let (Some(own), Some(event)) = (own, event.as_deref()) {
            requests.push((RequestHead::get(&own, version, Some(event)), Vec::new()));
        }
        for (i, (head, body)) in requests.into_iter().enumerate() {
            let local = HttpId(FORGED_BASE + tag * 4 + i as u64);
            let ch = <World>::world_http(c, local);
            self.links.insert(ch, Shared::new(Link::new(head, body)));
        }
        true
    }

    /// The session client `c` would hijack ([`Self::hijack_on`]), with the
    /// version it speaks.
    pub fn victim_of(
        &self,
        c: usize,
    ) -> Option<(SessionId, mcp_streamable::version::ProtocolVersion)> {
        self.clients
            .iter()
            .enumerate()
            .filter(|(v, _)| *v != c)
            .find_map(|(_, client)| {
                let sid = client.session_id()?.clone();
                Some((sid, client.version()?))
            })
    }

    /// Client `c`'s application cancels its request `id`.
    pub fn cancel_on(&mut self, c: usize, id: &RequestId) {
        let now = self.client_now(c);
        if let Some(x) = self.clients.get_mut(c) {
            let _ = x.cancel(id, now);
        }
        self.pump();
    }

    /// The server application sends a request to the client of the first session.
    pub fn server_request(&mut self, method: &str, cause: Cause) -> Option<RequestId> {
        let sid = self.server_session()?;
        self.server_request_in(&sid, method, cause)
    }

    /// The server application sends a request to the client of session `sid`.
    pub fn server_request_in(
        &mut self,
        sid: &SessionId,
        method: &str,
        cause: Cause,
    ) -> Option<RequestId> {
        let now = self.session_now(sid);
        let at = self.holder_of(sid, &cause);
        let r = self
            .server
            .session_mut(at, sid)?
            .request(method, None, cause.clone(), now);
        let sent = r.ok().map(|(id, key)| {
            self.observe(&Observation::Sent {
                session: sid.to_string(),
                key,
                cause,
                origin: None,
            });
            id
        });
        // Drained whether or not the session took it: a refusal leaves it
        // marked for the endpoint's drain, which would then happen at the
        // next step of anybody and part two orders of independent steps.
        self.pump();
        sent
    }

    /// The server closes request `id`'s connection for polling (first session).
    pub fn server_close_connection(&mut self, id: &RequestId) {
        let Some(sid) = self.server_session() else {
            return;
        };
        self.server_close_connection_in(&sid, id);
    }

    /// The server closes request `id`'s connection in session `sid` for polling.
    pub fn server_close_connection_in(&mut self, sid: &SessionId, id: &RequestId) {
        let now = self.session_now(sid);
        let at = self.server.holder(sid, id);
        if let Some(s) = self.server.session_mut(at, sid) {
            let _ = s.close_connection(id, now);
        }
        self.pump();
    }

    /// The server ends session `sid` (where request `id` of it is held) on
    /// its own (expired, restarted, deleted by another instance): its
    /// streams end, and a request naming it is answered `404` from then on.
    /// What its application still had to answer is moot.
    pub fn server_end_session_in(&mut self, sid: &SessionId, id: &RequestId) {
        let now = self.session_now(sid);
        let at = self.server.holder(sid, id);
        if let Some(s) = self.server.session_mut(at, sid) {
            s.close(now);
        }
        self.server_pending.retain(|(s, _, _, _)| s != sid);
        self.pump();
    }

    /// Fires a client's scheduling point on exchange `ch`
    /// ([`SchedulingPoint::ForegroundStep`], its only kind).
    pub fn fire_client(&mut self, ch: HttpId) -> bool {
        let now = self.client_now(<World>::owner(ch));
        let fired = self.clients.get_mut(<World>::owner(ch)).is_some_and(|c| {
            c.handle_scheduling_point(<World>::local(ch), SchedulingPoint::ForegroundStep, now)
        });
        self.pump();
        fired
    }

    /// Scheduling points the clients' presets expose now.
    pub fn client_scheduling_points(&self) -> Vec<HttpId> {
        self.clients
            .iter()
            .enumerate()
            .flat_map(|(c, client)| {
                client
                    .scheduling_points()
                    .into_iter()
                    .map(move |(h, _)| <World>::world_http(c, h))
            })
            .collect()
    }

    /// Client `c`'s exchanges, by world id.
    pub fn links_of(
        &self,
        c: usize,
    ) -> std::collections::btree_map::Range<'_, HttpId, Shared<Link>> {
        let lo = <World>::world_http(c, HttpId(0));
        let hi = <World>::world_http(c + 1, HttpId(0));
        self.links.range(lo..hi)
    }

    /// The client exchange carrying the given server exchange.
    pub fn client_http(&self, server_http: HttpId) -> Option<HttpId> {
        self.by_server.get(&server_http).copied()
    }

    // ---- the network ----------------------------------------------------

    /// Moves every output of both cores onto the network and to the applications.
    pub fn pump(&mut self) {
        loop {
            let mut progressed = self.drain_all();
            if self.config.server_auto_respond && !self.server_pending.is_empty() {
                self.server_respond_all();
                progressed = true;
            }
            if !progressed {
                return;
            }
        }
    }

    /// Every core's observed drain, once each: client transmits onto the
    /// network, client events to the client applications, server events to
    /// the pending list, server transmits to the links.
    fn drain_all(&mut self) -> bool {
        let now = self.now;
        let mut progressed = self.with_client_sinks(|sinks, observe, clients, clocks| {
            let mut any = false;
            for (c, client) in clients.iter_mut().enumerate() {
                if !client.has_output() {
                    continue; // untouched: it stays shared with the states it came from
                }
                let client_now = clocks.get(c).copied().unwrap_or(now);
                let config = sinks.config;
                any |= client.drain_observed(c, observe, |client, out, observe| {
                    auto_respond(client, &out, config, client_now);
                    let fell_back =
                        matches!(&out, ClientOutput::Event(ClientEvent::FellBack { .. }));
                    sinks.take(c, out, observe);
                    if fell_back {
                        // The request that follows the probe, sent by the
                        // core itself: its outcome is owed too (L2).
                        for id in client.pending() {
                            sinks.outcomes.entry((c, id)).or_insert(false);
                        }
                    }
                });
            }
            any
        });
        let World {
            server,
            links,
            by_server,
            server_pending,
            monitor,
            log,
            config,
            server_clocks,
            ..
        } = self;
        let server_now = |ch: HttpId| {
            server_clocks
                .get(<World>::owner(ch))
                .copied()
                .unwrap_or(now)
        };
        if !server.has_output() {
            return progressed; // untouched: shared, its hash kept
        }
        let mut observe = |o: &Observation| record(log, monitor, o);
        progressed |= server.drain(now, &mut observe, &mut |server, out, _| match out {
            ServerOutput::Event(sid, ServerEvent::Request { id, method, .. }) => {
                let origin = server.request_exchange(&sid, &id);
                queue_request(
                    server_pending,
                    config.naming,
                    (sid, id, method.into(), origin),
                );
            }
            ServerOutput::Event(..) => {}
            ServerOutput::Transmit(t) => {
                let Some(ch) = by_server.get(&t.http).copied() else {
                    return;
                };
                let ended = matches!(t.kind, mcp_streamable::server::TransmitKind::End(_));
                if let Some(link) = links.get_mut(&ch).filter(|_| <World>::is_forged(ch)) {
                    // Nobody reads a forged exchange (the monitor judged
                    // the write): the attacker goes once it ends.
                    if ended && !link.client_gone {
                        link.client_gone = true;
                        link.server_told = true;
                        server.handle_http_closed(t.http, server_now(ch));
                    }
                    return;
                }
                if let Some(link) = links.get_mut(&ch) {
                    if !link.client_gone {
                        link.to_client
                            .extend(deliveries(&t).into_iter().map(Shared::new));
                    }
                    if ended && link.client_gone && !link.server_told {
                        link.server_told = true;
                        server.handle_http_closed(t.http, server_now(ch));
                    }
                }
            }
        });
        progressed
    }

    /// Delivers exchange `ch`'s request to the server.
    pub fn deliver_request(&mut self, ch: HttpId) -> bool {
        self.deliver_request_to(ch, 0)
    }

    /// Delivers exchange `ch`'s request to server `at` (the balancer's choice).
    pub fn deliver_request_to(&mut self, ch: HttpId, at: usize) -> bool {
        let Some(link) = self.links.get(&ch).cloned() else {
            return false;
        };
        if link.client_gone || self.waits_for_a_connection(ch) {
            return false;
        }
        let Some((head, body)) = &link.request else {
            return false;
        };
        let caller = self.caller_of(<World>::owner(ch));
        let now = self.server_now_of(Some(<World>::owner(ch)));
        let http = match self.config.naming {
            Naming::Arrival => self.server.handle_request(at, head, body, &caller, now),
            Naming::ByExchange => {
                let ids = Naming::source_for(self.config.seed, ch);
                self.server
                    .handle_request_named(at, ch, ids, head, body, &caller, now)
            }
        };
        self.links.insert(ch, Shared::new(link.delivered(http)));
        self.by_server.insert(http, ch);
        if let Some(sid) = self.server.route(http) {
            // Looked up first: a shared map is copied only to change it
            // (`entry` would copy it to find the session already there).
            #[allow(clippy::map_entry)]
            if !self.session_owner.contains_key(&sid) {
                self.session_owner.insert(sid, <World>::owner(ch));
            }
        }
        self.observe(
            &Observation::request_with(http, head, body, parsed::body_messages)
                .by(caller.principal),
        );
        self.pump();
        true
    }

    /// Delivers the next response item of exchange `ch` to the client.
    pub fn deliver_next(&mut self, ch: HttpId) -> bool {
        let Some(link) = self.links.get_mut(&ch) else {
            return false;
        };
        if link.client_gone {
            return false;
        }
        let Some(item) = link.to_client.pop_front() else {
            return false;
        };
        if <World>::is_forged(ch) {
            // No core reads a forged exchange: the monitor judged what the
            // server wrote on it as it was written.
            if *item == Delivery::End {
                self.client_abandons(ch, true);
            }
            self.pump();
            return true;
        }
        let (c, h) = (<World>::owner(ch), <World>::local(ch));
        let now = self.client_now(c);
        match &*item {
            Delivery::Head(_) => {}
            Delivery::Body(b) => {
                for message in parsed::body_messages(b).unwrap_or_default() {
                    self.observe(&Observation::ClientReceived {
                        client: c,
                        http: h,
                        message,
                    });
                }
            }
            Delivery::Sse(item) => {
                if let mcp_streamable::sse::SseItem::Message { data, .. } = item {
                    if let Some(m) = parsed::event_message(data) {
                        self.observe(&Observation::ClientReceived {
                            client: c,
                            http: h,
                            message: m,
                        });
                    }
                }
            }
            Delivery::End => self.observe(&Observation::ClientClosed { client: c, http: h }),
        }
        let stepped = self.client_takes(c, ClientInput::Item(h, &item), now);
        if *item == Delivery::End {
            self.client_abandons(ch, true);
        }
        if let Some(stepped) = stepped {
            self.hand_over(c, &stepped);
        }
        self.pump();
        true
    }

    /// Client `c` takes `input` at `now`. Without a memo the core steps in
    /// place and the next `pump` drains it. With one ([`ClientMemo`]) the
    /// core is replaced by its drained successor, whose outputs the caller
    /// hands over ([`World::hand_over`]) where the next `pump` would have
    /// drained them.
    fn client_takes(
        &mut self,
        c: usize,
        input: ClientInput<'_>,
        now: Instant,
    ) -> Option<Arc<Stepped>> {
        let Some(memo) = self.memo.0.as_deref() else {
            step_core(&mut self.clients[c], input, now);
            return None;
        };
        let config = &self.config;
        let core = &self.clients[c];
        let stepped = memo.step(core, config, input, now, || {
            let mut core = (**core).clone();
            step_core(&mut core, input, now);
            let mut outputs = Vec::new();
            core.drain_observed(c, &mut |_| {}, |core, out, _| {
                auto_respond(core, &out, config, now);
                outputs.push(out);
            });
            Stepped {
                core: Shared::new(core),
                outputs,
            }
        });
        self.clients[c] = stepped.core.clone();
        Some(stepped)
    }

    /// Hands over what client `c`'s memoized drain put out, observed and
    /// taken as the drain in `pump` observes and takes each output.
    fn hand_over(&mut self, c: usize, stepped: &Stepped) {
        self.with_client_sinks(|sinks, observe, _, _| {
            for out in stepped.outputs.iter().cloned() {
                let out = out.observed(c, observe);
                sinks.take(c, out, observe);
            }
        });
    }

    /// Runs `f` on the world split for taking client outputs: where they
    /// go, the monitor's feed, the client cores and their clocks.
    fn with_client_sinks<R>(
        &mut self,
        f: impl FnOnce(
            &mut ClientSinks<'_, S>,
            &mut dyn FnMut(&Observation),
            &mut [Shared<ClientSession>],
            &[Instant],
        ) -> R,
    ) -> R {
        let World {
            clients,
            server,
            now,
            client_clocks,
            server_clocks,
            links,
            client_events,
            outcomes,
            list_changes_heard,
            monitor,
            log,
            config,
            ..
        } = self;
        let mut sinks = ClientSinks {
            links,
            server,
            outcomes,
            list_changes_heard,
            client_events,
            config,
            now: *now,
            server_clocks,
        };
        f(
            &mut sinks,
            &mut |o: &Observation| record(log, monitor, o),
            clients,
            client_clocks,
        )
    }

    /// The connection of exchange `ch` drops: the client sees it end at once;
    /// the server learns it now (`notice`) or later ([`Pair::server_notices`]).
    pub fn drop_link(&mut self, ch: HttpId, notice: bool) {
        let Some(link) = self.links.get(&ch) else {
            return;
        };
        if link.client_gone {
            return;
        }
        self.observe(&Observation::Fault);
        self.observe(&Observation::ClientClosed {
            client: <World>::owner(ch),
            http: <World>::local(ch),
        });
        let now = self.client_now(<World>::owner(ch));
        if let Some(c) = self
            .clients
            .get_mut(<World>::owner(ch))
            .filter(|_| !<World>::is_forged(ch))
        {
            c.handle_http_closed(<World>::local(ch), now);
        }
        self.client_abandons(ch, notice);
        self.pump();
    }

    /// The server learns that exchange `ch`'s connection is gone.
    pub fn server_notices(&mut self, ch: HttpId) {
        let Some(link) = self.links.get_mut(&ch) else {
            return;
        };
        if link.server_told || !link.client_gone {
            return;
        }
        link.server_told = true;
        if let Some(sh) = link
            .server_http
            .filter(|sh| self.server.minds_http_closed(*sh))
        {
            let now = self.server_now_of(Some(<World>::owner(ch)));
            self.server.handle_http_closed(sh, now);
        }
        self.pump();
    }

    fn client_abandons(&mut self, ch: HttpId, notice: bool) {
        let now = self.server_now_of(Some(<World>::owner(ch)));
        let World {
            server,
            links,
            monitor,
            log,
            ..
        } = self;
        abandon(
            links,
            server,
            &mut |o| record(log, monitor, o),
            now,
            ch,
            notice,
        );
    }

    /// Exchanges with something to deliver, in id order: requests first, then responses.
    pub fn deliverable(&self) -> Vec<(HttpId, bool)> {
        let mut out = Vec::new();
        for (ch, link) in &self.links {
            if link.client_gone {
                continue;
            }
            if link.request.is_some() {
                if !self.waits_for_a_connection(*ch) {
                    out.push((*ch, true));
                }
            } else if !link.to_client.is_empty() {
                out.push((*ch, false));
            }
        }
        out
    }

    /// Whether exchange `ch`'s request waits in its client's connection
    /// pool (`ClientConfig::connections_max`): a pool grants connections in
    /// the order they are asked for and each is held until the client's
    /// core is done with its exchange, so the exchanges on the wire are the
    /// `connections_max` oldest the core still has open, and the rest wait.
    /// A function of the core's own state: nothing is kept for it.
    pub fn waits_for_a_connection(&self, ch: HttpId) -> bool {
        let Some(n) = self.config.client.connections_max else {
            return false;
        };
        let local = <World>::local(ch);
        self.clients
            .get(<World>::owner(ch))
            .is_some_and(|core| core.exchanges().take_while(|h| *h < local).count() >= n)
    }

    /// Delivers everything in flight, oldest exchange first, until nothing moves
    /// (bounded). Time does not advance.
    pub fn drive(&mut self) {
        self.pump();
        for _ in 0..100_000 {
            let Some((ch, is_request)) = self.deliverable().into_iter().next() else {
                return;
            };
            if is_request {
                self.deliver_request(ch);
            } else {
                self.deliver_next(ch);
            }
        }
    }

    /// The earliest deadline of any core.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.clients
            .iter()
            .filter_map(|c| c.poll_timeout().map(|(t, _)| t))
            .chain(self.server.poll_timeout())
            .min()
    }

    /// Advances time by `ms` on every clock, firing due timers everywhere.
    pub fn advance(&mut self, ms: u64) {
        let by = Duration::from_millis(ms);
        self.now = self.now + by;
        for clock in self.client_clocks.iter_mut().chain(&mut self.server_clocks) {
            *clock = *clock + by;
        }
        for (c, client) in self.clients.iter_mut().enumerate() {
            let now = self.client_clocks.get(c).copied().unwrap_or(self.now);
            if client.poll_timeout().is_some_and(|(at, _)| at <= now) {
                client.handle_timeout(now);
            }
        }
        self.server.handle_timeout(self.now);
        self.pump();
    }

    /// The server side's time for client `c`'s part of it (`None`: the
    /// sessions no client opened): that part's own clock under
    /// [`Clocks::PerComponent`], everybody's under [`Clocks::Global`].
    pub fn server_now_of(&self, c: Option<usize>) -> Instant {
        c.and_then(|c| self.server_clocks.get(c))
            .copied()
            .unwrap_or(self.now)
    }

    /// The server side's time for session `sid`: that of the part of the
    /// client that opened it ([`World::server_now_of`]).
    fn session_now(&self, sid: &SessionId) -> Instant {
        self.server_now_of(self.session_owner.get(sid).copied())
    }

    /// Client `c`'s time: its own clock under [`Clocks::PerComponent`],
    /// everybody's under [`Clocks::Global`].
    pub fn client_now(&self, c: usize) -> Instant {
        self.client_clocks.get(c).copied().unwrap_or(self.now)
    }

    /// The latest time any clock shows (a counterexample's time column).
    pub fn latest_now(&self) -> Instant {
        self.client_clocks
            .iter()
            .chain(&self.server_clocks)
            .copied()
            .chain([self.now])
            .max()
            .unwrap_or(self.now)
    }

    /// Whether every timer client `c` has armed is a request deadline
    /// (none armed included): nothing is planned that would end a request
    /// but its deadline. Every timer, not only the next: a resumption
    /// planned behind a deadline (a stream cut just before it, the server's
    /// `retry` longer than what is left) is the transport at work, not a
    /// request left to its deadline. L2 and its fleet form F5 ask this.
    pub fn only_deadlines_armed(&self, c: usize) -> bool {
        self.clients.get(c).is_none_or(|client| {
            client
                .timers()
                .all(|(_, t)| matches!(t, mcp_streamable::client::ClientTimer::Deadline(_)))
        })
    }

    /// Client `c`'s next deadline, on its own clock.
    pub fn client_deadline(&self, c: usize) -> Option<Instant> {
        self.clients.get(c)?.poll_timeout().map(|(t, _)| t)
    }

    /// Under [`Clocks::PerComponent`]: client `c`'s clock jumps to its next
    /// deadline and its due timers fire; nobody else's. Whether it had one.
    pub fn tick_client(&mut self, c: usize) -> bool {
        let Some(at) = self.client_deadline(c) else {
            return false;
        };
        let Some(clock) = self.client_clocks.get_mut(c) else {
            return false;
        };
        *clock = (*clock).max(at);
        let now = *clock;
        if let Some(stepped) = self.client_takes(c, ClientInput::Timeout, now) {
            self.hand_over(c, &stepped);
        }
        self.pump();
        true
    }

    /// Under [`Clocks::PerComponent`]: time passes for client `c` up to
    /// just before its next deadline, firing nothing (what one clock would
    /// do when another component's timer fires first). Whether it moved.
    pub fn idle_client(&mut self, c: usize) -> bool {
        let Some(at) = self.client_deadline(c) else {
            return false;
        };
        let Some(clock) = self.client_clocks.get_mut(c) else {
            return false;
        };
        let before = at.saturating_sub(Duration::from_millis(1));
        if before <= *clock {
            return false;
        }
        *clock = before;
        true
    }

    /// Drives to quiescence, jumping time to each next deadline, for at most
    /// `horizon_ms` of simulated time.
    pub fn run(&mut self, horizon_ms: u64) {
        let end = self.now + Duration::from_millis(horizon_ms);
        for _ in 0..10_000 {
            self.drive();
            let Some(next) = self.next_timeout() else {
                return;
            };
            if next > end {
                return;
            }
            let ms = next.saturating_duration_since(self.now).as_millis() as u64;
            self.advance(ms);
        }
    }

    /// End-of-run checks of the monitor.
    pub fn finish(&mut self) {
        let queued = self.server.queued();
        self.monitor.finish(&queued);
    }
}

/// Where a client's outputs go: the network (and, for an abort, the
/// server), the application's outcomes and counts, the event log.
struct ClientSinks<'a, S> {
    links: &'a mut BTreeMap<HttpId, Shared<Link>>,
    server: &'a mut Shared<S>,
    outcomes: &'a mut Shared<BTreeMap<(usize, RequestId), bool>>,
    list_changes_heard: &'a mut BTreeMap<usize, u32>,
    client_events: &'a mut Vec<ClientEvent>,
    config: &'a PairConfig,
    /// The server side's time (an abort reaches the server), and its clock
    /// for each client's part under [`Clocks::PerComponent`].
    now: Instant,
    server_clocks: &'a [Instant],
}

impl<S: Servers> ClientSinks<'_, S> {
    /// Takes one output of client `c`'s drain.
    fn take(&mut self, c: usize, out: ClientOutput, observe: &mut dyn FnMut(&Observation)) {
        match out {
            ClientOutput::Transmit(t) => {
                let ch = <World>::world_http(c, t.http);
                match t.kind {
                    ClientTransmitKind::Send { head, body } => {
                        self.links.insert(ch, Shared::new(Link::new(head, body)));
                    }
                    ClientTransmitKind::Abort => {
                        let now = self.server_clocks.get(c).copied().unwrap_or(self.now);
                        abandon(self.links, self.server, observe, now, ch, true)
                    }
                }
            }
            ClientOutput::Event(e) => {
                match &e {
                    // A probe that fell back has its outcome: the core
                    // decided the era on its answer and sent the request
                    // that follows, whose own outcome is owed in its turn.
                    ClientEvent::Response { id, .. }
                    | ClientEvent::Failed { id, .. }
                    | ClientEvent::FellBack { id, .. }
                    | ClientEvent::Initialized { id, .. } => {
                        self.outcomes.insert((c, id.clone()), true);
                    }
                    ClientEvent::Notification { method, .. }
                        if self.config.count_list_changes && method == LIST_CHANGED =>
                    {
                        *self.list_changes_heard.entry(c).or_default() += 1;
                    }
                    _ => {}
                }
                if self.config.record_events {
                    self.client_events.push(e);
                }
            }
        }
    }
}

/// The client application answers a server request at once, when it does
/// (`client_auto_respond`): part of the core's own drain, so a memoized
/// step ([`ClientMemo`]) holds it too.
fn auto_respond(client: &mut ClientSession, out: &ClientOutput, config: &PairConfig, now: Instant) {
    if let ClientOutput::Event(ClientEvent::ServerRequest { id, .. }) = out {
        if config.client_auto_respond {
            let _ = client.respond(id.clone(), Ok(RawJson::empty_object()), now);
        }
    }
}

/// Client core `core` takes `input` at `now`.
fn step_core(core: &mut ClientSession, input: ClientInput<'_>, now: Instant) {
    match input {
        ClientInput::Item(h, Delivery::Head(head)) => {
            core.handle_response_head(h, head.clone(), now)
        }
        ClientInput::Item(h, Delivery::Body(b)) => core.handle_body(h, b, now),
        ClientInput::Item(h, Delivery::Sse(item)) => core.handle_sse_event(h, item.clone(), now),
        ClientInput::Item(h, Delivery::End) => core.handle_http_closed(h, now),
        ClientInput::Timeout => core.handle_timeout(now),
    }
}

/// An observation to the log (when recording) and the monitor.
fn record(log: &mut Option<Vec<Observation>>, monitor: &mut Monitor, o: &Observation) {
    if let Some(log) = log {
        log.push(o.clone());
    }
    monitor.observe(o);
}

/// The client (or its network) abandons exchange `ch`; the server hears of
/// it at once when `notice`.
fn abandon<S: Servers>(
    links: &mut BTreeMap<HttpId, Shared<Link>>,
    server: &mut Shared<S>,
    observe: &mut dyn FnMut(&Observation),
    now: Instant,
    ch: HttpId,
    notice: bool,
) {
    let Some(link) = links.get_mut(&ch) else {
        return;
    };
    if link.client_gone {
        return;
    }
    link.client_gone = true;
    link.request = None;
    link.to_client.clear();
    let Some(sh) = link.server_http else {
        return;
    };
    if notice {
        link.server_told = true;
    }
    observe(&Observation::Closed { http: sh });
    if notice && server.minds_http_closed(sh) {
        server.handle_http_closed(sh, now);
    }
}

/// Queues a request for the server application. By arrival, in arrival
/// order. By exchange, only the order of the `tools/call`s is kept (a server
/// step acts on the oldest call); the rest, which are answered in any order,
/// go sorted after them, so the order in which they arrived names nothing.
fn queue_request(pending: &mut Vec<PendingRequest>, naming: Naming, request: PendingRequest) {
    if naming == Naming::Arrival {
        pending.push(request);
        return;
    }
    let calls = pending.iter().take_while(|r| &*r.2 == CALL).count();
    let at = if &*request.2 == CALL {
        calls
    } else {
        calls + pending[calls..].partition_point(|r| *r < request)
    };
    pending.insert(at, request);
}
