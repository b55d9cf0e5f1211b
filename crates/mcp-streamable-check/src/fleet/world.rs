//! The fleet world: a client core talking to a fleet of [`Instance`]s that
//! share a store ([`Fleet`]), every request landing on whichever live
//! instance the balancer picks, instances that may die. The same world the
//! endpoint models run ([`World`]), with the fleet as its server side, so
//! the same monitor judges it (the fleet is the one server its client
//! believes it talks to), and one property of its own:
//!
//! - **F5, every call completes**: once nothing more can happen, every
//!   request the client sent has an outcome for its application (a result
//!   or an error), without the client's own deadline: a call in flight on an
//!   instance that died is completed by the instance that follows its
//!   stream (`-32603`), not left to hang.
//! - **F7, a broadcast reaches each session once**: a session-era client
//!   never hears a broadcast more often than the application made it while
//!   the client's session was there to get it; and, once nothing more can
//!   happen on a run with no fault (no cut, no death), with its standalone
//!   GET kept, it has heard every one. (A message written on a connection
//!   that broke before its client read any event id is lost however it is
//!   sent: A5's exception. A 2026-07-28 listen's share is M3 and M4's.)
//!
//! Nondeterminism: the client's and the application's next scripted step,
//! any pending request answered, the balancer's choice of instance for each
//! request, each exchange's next response items, a connection cut, the
//! store executing the head op of any connection, an instance taking the
//! head of any of its incoming queues, an instance dying, time jumping to
//! the next deadline.

use crate::engine::Explorable;
use crate::monitor::Violation;
use crate::scenario::ClientStep;
use crate::script;
use crate::sim::{Fleet, PairConfig, Servers, StoreTiming, World, LIST_CHANGED};
use mcp_streamable::client::ClientEra;
use mcp_streamable::fleet::instance::{Instance, InstanceConfig};
use mcp_streamable::fleet::store::MemoryStore;
use mcp_streamable::fleet::{
    Answers, BroadcastDelivery, Cancellations, Conn, Handover, InstanceId, Relay, ResumedGet,
    Unrelated,
};
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::{HttpId, RequestId, SessionId};
use mcp_streamable::policy::{ClientPolicy, ServerPolicy};
use mcp_streamable::server::{Cause, EndpointConfig};
use mcp_streamable::shared::fixed_keys;
use serde::{Deserialize, Serialize};

/// A step of the application's script (it runs on the instances).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppStep {
    /// Progress for the oldest pending `tools/call`, on the instance
    /// running it.
    Progress,
    /// An unrelated notification (`notifications/tools/list_changed`)
    /// emitted in the session on instance `n`, wherever the session's GET
    /// is held.
    Notify(u16),
    /// A request to the client (`roots/list`) for the oldest pending
    /// `tools/call`, sent by the instance running it: the client's answer
    /// is posted wherever the balancer sends it.
    Ask,
    /// The tool list changed, for every session of the fleet: the
    /// application on instance `n` broadcasts
    /// `notifications/tools/list_changed` (enabled once the client's
    /// session, or its listen, is there on some instance to get it).
    Broadcast(u16),
}

/// One fleet world scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorldScenario {
    /// The instances' endpoint policy (FIXED but in a preset's design).
    pub server: ServerPolicy,
    /// How instances follow a stream written elsewhere.
    pub relay: Relay,
    /// Whether a dead instance's streams are completed elsewhere.
    pub handover: Handover,
    /// What a standalone GET resumed from a stream whose connection is
    /// gone becomes.
    pub resumed: ResumedGet,
    /// Where an unrelated message of a session whose GET is elsewhere goes.
    pub unrelated: Unrelated,
    /// What becomes of an answer posted to an instance that did not ask.
    pub answers: Answers,
    /// What becomes of a cancellation posted to an instance not serving
    /// the request it names.
    pub cancellations: Cancellations,
    /// How a broadcast reaches the fleet's sessions.
    pub broadcast: BroadcastDelivery,
    /// How many instances.
    pub instances: u16,
    /// The client's script.
    pub client: Vec<ClientStep>,
    /// The application's script.
    pub app: Vec<AppStep>,
    /// Whether the client keeps a standalone GET open.
    pub background_get: bool,
    /// Whether the client speaks 2026-07-28 (no session; `listen`).
    pub v2026: bool,
    /// A second client, another principal, that tries every verb on the
    /// client's session once it has one ([`World::hijack_on`]).
    pub attacker: bool,
    /// Connection cuts the network may inject.
    pub drops: u8,
    /// Instances that may die.
    pub kills: u8,
    /// Simulated time explored, in ms.
    pub time_ms: u64,
    /// Which of the store's connections are served at once.
    pub store: StoreTiming,
    /// The deepest path explored.
    pub depth: usize,
}

/// One nondeterministic choice.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorldAction {
    /// The client runs its next step.
    Client,
    /// The application runs its next step.
    App,
    /// The application answers a pending request.
    Respond {
        /// The session.
        session: SessionId,
        /// The request.
        id: RequestId,
    },
    /// Exchange `http`'s request lands on instance `at`.
    Deliver {
        /// The client's exchange.
        http: HttpId,
        /// The instance the balancer picked.
        at: usize,
    },
    /// Exchange `http`'s response items in flight reach the client.
    Next {
        /// The client's exchange.
        http: HttpId,
    },
    /// Exchange `http`'s connection drops (both ends notice).
    Drop {
        /// The client's exchange.
        http: HttpId,
    },
    /// The store executes the next op of an instance's connection.
    Execute {
        /// The instance.
        instance: u16,
        /// The connection.
        conn: Conn,
    },
    /// An instance takes the next thing the store sent it on a connection.
    Receive {
        /// The instance.
        instance: u16,
        /// The connection.
        conn: Conn,
    },
    /// The attacker tries the client's session ([`WorldScenario::attacker`]).
    Attack,
    /// Instance `at` dies.
    Kill {
        /// The instance.
        at: usize,
    },
    /// Time jumps to the next deadline.
    Tick,
}

/// A whole state of the fleet world.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorldState {
    /// The client, the network, the fleet, the monitor.
    pub world: World<Fleet>,
    client_pc: u8,
    app_pc: u8,
    drops: u8,
    kills: u8,
    /// Broadcasts made (each while the client had something to get it).
    broadcasts: u8,
    /// The attacker has tried the client's session.
    attacked: bool,
}

/// What a fleet world breaks: a monitor invariant, or F5.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorldViolation {
    /// The monitor flagged this.
    Monitor(Violation),
    /// F5: these requests never completed.
    Stuck {
        /// The requests without an outcome.
        requests: Vec<RequestId>,
    },
    /// F5: these exchanges never had a response head (a GET that hangs).
    Unanswered {
        /// The exchanges, by the world's ids.
        https: Vec<HttpId>,
    },
    /// F6: the client's answers to these requests of the application never
    /// reached the instance that asked.
    AnswerLost {
        /// The application's requests.
        requests: Vec<RequestId>,
    },
    /// L4: these exchanges stay open at both ends with every request they
    /// carried over ([`Monitor::held_open`](crate::monitor::Monitor::held_open)).
    HeldOpen {
        /// The exchanges, by the world's ids.
        https: Vec<HttpId>,
    },
    /// F7: the client heard a broadcast's notification this many times,
    /// for this many broadcasts.
    Broadcasts {
        /// Notifications the client's application was told of.
        heard: u32,
        /// Broadcasts the application made.
        made: u8,
    },
}

impl WorldViolation {
    /// The property's id.
    pub fn id(&self) -> &'static str {
        match self {
            WorldViolation::Monitor(v) => v.id,
            WorldViolation::Stuck { .. } | WorldViolation::Unanswered { .. } => "F5",
            WorldViolation::AnswerLost { .. } => "F6",
            WorldViolation::HeldOpen { .. } => "L4",
            WorldViolation::Broadcasts { .. } => "F7",
        }
    }
}

/// The fleet world model of one scenario.
#[derive(Clone, Debug)]
pub struct WorldModel {
    /// The scenario.
    pub scenario: WorldScenario,
}

/// The attacker's index among the world's clients.
const ATTACKER: usize = 1;

/// The client's deadline: far past any horizon, so a call completes by
/// the fleet or not at all (F5).
const CLIENT_DEADLINE_MS: u64 = 3_600_000;

impl WorldModel {
    /// The model of `scenario`.
    pub fn new(scenario: WorldScenario) -> Self {
        WorldModel { scenario }
    }

    fn config(&self) -> PairConfig {
        let mut c = PairConfig {
            server_auto_respond: false,
            client_auto_respond: true,
            record_events: false,
            ..PairConfig::default()
        };
        c.client.request_timeout_ms = CLIENT_DEADLINE_MS;
        c.client.background_failures_max = 2;
        if self.scenario.v2026 {
            c.client.era = ClientEra::V2026;
        }
        c.count_list_changes = self.judges_broadcasts();
        if self.scenario.attacker {
            c.clients = 2;
            c.principals = true;
        }
        if !self.scenario.background_get {
            c.client_policy = ClientPolicy {
                background_get: mcp_streamable::policy::BackgroundGet::Off,
                ..c.client_policy
            };
        }
        c
    }

    fn endpoint_config() -> EndpointConfig {
        let mut e = EndpointConfig::default();
        script::quiet_session(&mut e.session);
        e
    }

    fn fleet(&self) -> Fleet {
        let instances = (0..self.scenario.instances)
            .map(|i| {
                let mut config = InstanceConfig {
                    id: InstanceId(i),
                    relay: self.scenario.relay,
                    handover: self.scenario.handover,
                    resumed: self.scenario.resumed,
                    unrelated: self.scenario.unrelated,
                    answers: self.scenario.answers,
                    cancellations: self.scenario.cancellations,
                    broadcast: self.scenario.broadcast,
                    session_ttl_ms: CLIENT_DEADLINE_MS,
                    ..InstanceConfig::default()
                };
                if self.scenario.kills == 0 {
                    // No one dies: heartbeats and the watch on writers are
                    // housekeeping, kept past the horizon so their ops do
                    // not multiply the orders explored.
                    config.beat_ms = self.scenario.time_ms + 1;
                    config.beat_ttl_ms = 3 * config.beat_ms;
                }
                let mut instance = Instance::new(
                    config,
                    Self::endpoint_config(),
                    self.scenario.server,
                    IdSource::reproducible(u64::from(i) + 1),
                )
                .expect("a fleet setting");
                if !self.cancels() {
                    instance.join_cancellations();
                }
                instance
            })
            .collect();
        Fleet::new(instances, MemoryStore::new(64))
            .with_timing(self.scenario.store)
            .ready(mcp_streamable::time::Instant::ZERO)
            .with_each(|instance| {
                if self.broadcasts() {
                    instance.join_broadcasts();
                }
                if self.cancels() {
                    instance.join_cancellations();
                }
            })
    }

    /// Whether the application's script broadcasts.
    fn broadcasts(&self) -> bool {
        self.scenario
            .app
            .iter()
            .any(|a| matches!(a, AppStep::Broadcast(_)))
    }

    /// Whether the client's script cancels. The instances always listen
    /// to the fleet's cancellations channel, as a shell's do
    /// (`fleet::driver`): the client cancels on its own too, a call whose
    /// stream it lost with nothing to resume from. They join it in every
    /// order the store may take when the script cancels, and before the
    /// run elsewhere ([`Fleet::ready`]: those orders would only multiply
    /// the states of a run whose cancellations are the client's own).
    fn cancels(&self) -> bool {
        self.scenario.client.contains(&ClientStep::Cancel)
    }

    /// Whether F7 is judged: broadcasts to a session-era client, which
    /// hears them on its standalone GET.
    fn judges_broadcasts(&self) -> bool {
        self.broadcasts() && !self.scenario.v2026
    }

    /// Whether a broadcast made now has the client to reach: its session
    /// (or its listen) is a broadcast target on some live instance.
    fn client_reachable(w: &World<Fleet>) -> bool {
        w.server.alive().any(|i| {
            w.server.instance(i).is_some_and(|inst| {
                !inst
                    .endpoint()
                    .broadcast_targets(LIST_CHANGED, None)
                    .is_empty()
            })
        })
    }

    fn client_step_enabled(&self, s: &WorldState) -> bool {
        let Some(&step) = self.scenario.client.get(usize::from(s.client_pc)) else {
            return false;
        };
        script::client_step_enabled(&s.world, 0, step)
    }

    fn app_step_enabled(&self, s: &WorldState) -> bool {
        let Some(step) = self.scenario.app.get(usize::from(s.app_pc)) else {
            return false;
        };
        match step {
            AppStep::Progress | AppStep::Ask => script::oldest_call(&s.world).is_some(),
            AppStep::Notify(n) => !s.world.server.named_sessions(usize::from(*n)).is_empty(),
            AppStep::Broadcast(n) => {
                s.world.server.instance(usize::from(*n)).is_some()
                    && Self::client_reachable(&s.world)
            }
        }
    }

    /// Whether the run is over: nothing but time can move, and no timer
    /// left would change what the client sees (heartbeats go on; the
    /// client's far deadline is F5's to judge, not a way out).
    fn over(&self, s: &WorldState, enabled: &[WorldAction]) -> bool {
        self.quiet(s, enabled) && s.world.server.is_idle()
    }

    /// Whether the run has settled within the horizon: nothing but time
    /// can move, no timer is due before the horizon, and no instance
    /// watches another (what is left is the endpoints' timers, a held
    /// message's TTL, say). What is held then is judged held: B4 if a GET
    /// is open meanwhile. F5 waits for [`Self::over`]: a call may still be
    /// completed by a timer past the horizon.
    fn settled(&self, s: &WorldState, enabled: &[WorldAction]) -> bool {
        enabled.is_empty() && self.quiet(s, enabled) && !s.world.server.is_watching()
    }

    /// Only time can move, and the client waits for nothing but its far
    /// deadline.
    fn quiet(&self, s: &WorldState, enabled: &[WorldAction]) -> bool {
        enabled.iter().all(|a| *a == WorldAction::Tick) && s.world.only_deadlines_armed(0)
    }
}

impl Explorable for WorldModel {
    type State = WorldState;
    type Action = WorldAction;
    type Violation = WorldViolation;

    fn initial(&self) -> WorldState {
        WorldState {
            world: World::with_servers(self.config(), self.fleet()),
            client_pc: 0,
            app_pc: 0,
            drops: 0,
            kills: 0,
            broadcasts: 0,
            attacked: false,
        }
    }

    fn enabled(&self, s: &WorldState, out: &mut Vec<WorldAction>) {
        let w = &s.world;
        if self.client_step_enabled(s) {
            out.push(WorldAction::Client);
        }
        if self.app_step_enabled(s) {
            out.push(WorldAction::App);
        }
        if self.scenario.attacker && !s.attacked && w.victim_of(ATTACKER).is_some() {
            out.push(WorldAction::Attack);
        }
        for (session, id, _, _) in &w.server_pending {
            out.push(WorldAction::Respond {
                session: session.clone(),
                id: id.clone(),
            });
        }
        for (http, is_request) in w.deliverable() {
            if is_request {
                for at in w.server.alive() {
                    out.push(WorldAction::Deliver { http, at });
                }
            } else {
                out.push(WorldAction::Next { http });
            }
        }
        if s.drops < self.scenario.drops {
            for (http, link) in &w.links {
                if !link.client_gone && link.server_http.is_some() {
                    out.push(WorldAction::Drop { http: *http });
                }
            }
        }
        for (instance, conn) in w.server.links().executable() {
            out.push(WorldAction::Execute { instance, conn });
        }
        for (instance, conn) in w.server.links().receivable() {
            out.push(WorldAction::Receive { instance, conn });
        }
        // One instance always lives: the balancer needs somewhere to send.
        if s.kills < self.scenario.kills && w.server.alive().count() > 1 {
            for at in w.server.alive() {
                out.push(WorldAction::Kill { at });
            }
        }
        if w.next_timeout()
            .is_some_and(|t| t.as_millis() <= self.scenario.time_ms)
        {
            out.push(WorldAction::Tick);
        }
    }

    fn step(&self, s: &WorldState, a: &WorldAction) -> Option<WorldState> {
        let mut n = s.clone();
        let w = &mut n.world;
        match a {
            WorldAction::Client => {
                if !self.client_step_enabled(s) {
                    return None;
                }
                let pc = usize::from(s.client_pc);
                let step = self.scenario.client[pc];
                script::run_client_step(w, 0, step, pc)?;
                n.client_pc += 1;
            }
            WorldAction::App => {
                if !self.app_step_enabled(s) {
                    return None;
                }
                match self.scenario.app[usize::from(s.app_pc)] {
                    AppStep::Progress => {
                        let (sid, id) = script::oldest_call(w)?;
                        w.server_notify_in(&sid, "notifications/progress", Cause::Request(id));
                    }
                    AppStep::Ask => {
                        let (sid, id) = script::oldest_call(w)?;
                        w.server_request_in(&sid, "roots/list", Cause::Request(id))?;
                    }
                    AppStep::Notify(at) => {
                        let at = usize::from(at);
                        let sid = w.server.named_sessions(at).into_iter().next()?;
                        w.server_notify_at(at, &sid, LIST_CHANGED, Cause::Unrelated);
                    }
                    AppStep::Broadcast(at) => {
                        if !w.broadcast_at(usize::from(at), LIST_CHANGED) {
                            return None;
                        }
                        n.broadcasts += 1;
                    }
                }
                n.app_pc += 1;
            }
            WorldAction::Respond { session, id } => {
                if !w.server_respond_to(session, id) {
                    return None;
                }
            }
            WorldAction::Deliver { http, at } => {
                if w.server.instance(*at).is_none() || !w.deliver_request_to(*http, *at) {
                    return None;
                }
            }
            WorldAction::Next { http } => {
                if !w.deliver_next(*http) {
                    return None;
                }
                while w.deliver_next(*http) {}
            }
            WorldAction::Drop { http } => {
                let live = w
                    .links
                    .get(http)
                    .is_some_and(|l| !l.client_gone && l.server_http.is_some());
                if !live || s.drops >= self.scenario.drops {
                    return None;
                }
                w.drop_link(*http, true);
                n.drops += 1;
            }
            WorldAction::Execute { instance, conn } => {
                if !w.execute((*instance, *conn)) {
                    return None;
                }
            }
            WorldAction::Receive { instance, conn } => {
                if !w.receive((*instance, *conn)) {
                    return None;
                }
            }
            WorldAction::Attack => {
                if !self.scenario.attacker || s.attacked || !w.hijack_on(ATTACKER, 0) {
                    return None;
                }
                w.pump();
                n.attacked = true;
            }
            WorldAction::Kill { at } => {
                if s.kills >= self.scenario.kills || !w.kill(*at) {
                    return None;
                }
                n.kills += 1;
            }
            WorldAction::Tick => {
                let next = w.next_timeout()?;
                if next.as_millis() > self.scenario.time_ms {
                    return None;
                }
                let ms = next.saturating_duration_since(w.now).as_millis() as u64;
                w.advance(ms);
            }
        }
        Some(n)
    }

    fn fingerprint(&self, s: &WorldState) -> u64 {
        fixed_keys().hash_one(s)
    }

    fn violation(&self, s: &WorldState) -> Option<WorldViolation> {
        if let Some(v) = s.world.monitor.violations().first() {
            return Some(WorldViolation::Monitor(v.clone()));
        }
        let heard = s.world.list_changes_heard.get(&0).copied().unwrap_or(0);
        let broadcasts = WorldViolation::Broadcasts {
            heard,
            made: s.broadcasts,
        };
        if heard > u32::from(s.broadcasts) {
            return Some(broadcasts);
        }
        let mut enabled = Vec::new();
        self.enabled(s, &mut enabled);
        let over = self.over(s, &enabled);
        if !over && !self.settled(s, &enabled) {
            return None;
        }
        let mut w = s.world.clone();
        w.finish();
        if let Some(v) = w.monitor.violations().first() {
            return Some(WorldViolation::Monitor(v.clone()));
        }
        if !over {
            return None;
        }
        let stuck: Vec<RequestId> = s
            .world
            .waiting_requests()
            .map(|(_, id)| id.clone())
            .collect();
        if !stuck.is_empty() {
            return Some(WorldViolation::Stuck { requests: stuck });
        }
        let https = w.monitor.unanswered();
        if !https.is_empty() {
            return Some(WorldViolation::Unanswered { https });
        }
        // An answer counts where it was asked; a copy that ended, or died
        // with its instance, has no one left to tell.
        let lost = s.world.server.awaited_answers();
        if !lost.is_empty() {
            return Some(WorldViolation::AnswerLost { requests: lost });
        }
        let held = w.monitor.held_open();
        if !held.is_empty() {
            return Some(WorldViolation::HeldOpen { https: held });
        }
        // A message written on a connection that broke before the client
        // read a single event id is lost to it however it is sent (A5's
        // exception): every broadcast is owed on fault-free runs only.
        let every_one_owed = self.judges_broadcasts()
            && self.scenario.background_get
            && s.kills == 0
            && s.drops == 0;
        (every_one_owed && heard < u32::from(s.broadcasts)).then_some(broadcasts)
    }

    fn depth_bound(&self) -> usize {
        self.scenario.depth
    }

    fn time_of(&self, s: &WorldState) -> u64 {
        s.world.now.as_millis()
    }
}
