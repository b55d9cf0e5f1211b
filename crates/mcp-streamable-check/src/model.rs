//! The world as a stateright [`Model`]: one server endpoint, N client cores,
//! the network between them as HTTP exchanges (each its own FIFO, exchanges
//! interleaving freely), scripts for the applications, bounded drops, timers
//! as choices. Invariants come from the shared monitor.

use super::ample::Ample;
use super::scenario::{Bounds, NotifyReach, Scenario, ServerStep};
use super::script;
use super::sleep::Covered;
use super::symmetry::Symmetry;
use crate::monitor::Violation;
use crate::sim::{ClientMemo, Clocks, Naming, PairConfig, World, LIST_CHANGED};
use mcp_streamable::ids::{HttpId, RequestId, SessionId};
use mcp_streamable::policy::{BackgroundGet, ClientPolicy, ServerPolicy};
use mcp_streamable::preset::SchedulingPoint;
use mcp_streamable::server::Cause;
use mcp_streamable::unhashed::Unhashed;
use serde::{Deserialize, Serialize};
use stateright::{Model, Property};
use std::ops::ControlFlow;
use std::sync::Arc;

/// One nondeterministic choice, stored by value in traces.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// Client `client` runs the next step of its script.
    ClientStep {
        /// Which client.
        client: usize,
    },
    /// The server application runs the next step of its script.
    ServerStep,
    /// The server application answers a pending request.
    ServerRespond {
        /// The session.
        session: SessionId,
        /// The request.
        id: RequestId,
    },
    /// The request of exchange `http` reaches the server.
    DeliverRequest {
        /// The exchange (client id).
        http: HttpId,
    },
    /// Every response item queued on exchange `http` reaches its client, in
    /// order. (Items of one exchange are FIFO and the server writes only in
    /// response to actions, so splitting a burst adds orders no race needs.)
    DeliverNext {
        /// The exchange (client id).
        http: HttpId,
    },
    /// The connection of exchange `http` drops.
    Drop {
        /// The exchange (client id).
        http: HttpId,
        /// Whether the server learns of it at once.
        notice: bool,
    },
    /// The server learns that a dropped exchange is gone.
    ServerNotices {
        /// The exchange (client id).
        http: HttpId,
    },
    /// Time jumps to the earliest deadline; every due timer fires (one
    /// clock, [`Clocks::Global`]).
    Tick,
    /// Client `client`'s clock jumps to its next deadline; its due timers
    /// fire ([`Clocks::PerComponent`]).
    TickClient {
        /// Which client.
        client: usize,
    },
    /// Client `client`'s clock moves to just before its next deadline,
    /// firing nothing ([`Clocks::PerComponent`]).
    Idle {
        /// Which client.
        client: usize,
    },
    /// The server side's clock for the sessions no client opened jumps to
    /// their next deadline; their due timers fire ([`Clocks::PerComponent`]).
    TickServer,
    /// The server side's clock for client `client`'s part (the sessions it
    /// opened) jumps to their next deadline; their due timers fire
    /// ([`Clocks::PerComponent`]: a step of the client's component).
    TickSessions {
        /// Whose sessions.
        client: usize,
    },
    /// A `notify` the application made reaches client `client`'s sessions
    /// ([`NotifyReach::PerSession`]).
    NotifySession {
        /// Which client.
        client: usize,
    },
    /// The connection drops of this run may only hit client `client`'s
    /// exchanges: the first step of a reduced run with several clients
    /// (drops of one budget shared by all would make every client's steps
    /// depend on the others'; one choice per client covers the same runs).
    ReserveDrops {
        /// Which client.
        client: usize,
    },
    /// The next `tools/call` to reach the server is client `client`'s: a
    /// reduced run's step wherever that order decides which call a step of
    /// the server's script on the oldest call acts on, and two clients or
    /// more may still bring one (the first to arrive is acted on, so their
    /// arrivals would depend on each other; one choice per client covers
    /// the same runs). Held until that call arrives or the client can no
    /// longer act on its own.
    ReserveCall {
        /// Which client.
        client: usize,
    },
    /// A server preset's scheduling point fires.
    ServerSchedule {
        /// The exchange (server id).
        http: HttpId,
        /// Which point.
        point: SchedulingPoint,
    },
    /// A client preset's scheduling point fires.
    ClientSchedule {
        /// The exchange (client id).
        http: HttpId,
    },
}

/// A state of the world plus the applications' script positions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// Cores, network, monitor.
    pub world: World,
    /// Next script step of each client.
    pub client_pc: Vec<u8>,
    /// Next script step of the server application.
    pub server_pc: u8,
    /// Drops injected so far.
    pub drops: u8,
    /// `notify`s not yet reached each client's sessions
    /// ([`NotifyReach::PerSession`]; empty otherwise).
    pub notices: Vec<u8>,
    /// The client whose exchanges the drops may hit, once reserved
    /// ([`Action::ReserveDrops`]); `None`: any client's.
    pub drops_for: Option<u8>,
    /// The client whose `tools/call` reaches the server next, once
    /// reserved ([`Action::ReserveCall`]); `None`: any client's.
    pub calls_for: Option<u8>,
    /// Steps left out of this state's expansion, as other paths from its
    /// parent make their successors (`check::sleep`).
    pub covered: Unhashed<Covered>,
}

/// A scenario under one server preset and one client preset.
#[derive(Clone, Debug)]
pub struct CheckModel {
    /// The scenario.
    pub scenario: Scenario,
    /// Server preset name.
    pub server_name: String,
    /// Client preset name.
    pub client_name: String,
    /// Server policy.
    pub server: ServerPolicy,
    /// Client policy.
    pub client: ClientPolicy,
    /// Invariant ids judged (empty: all).
    pub judge: Vec<String>,
    /// Interchangeable clients, and whether the fingerprint uses them.
    pub symmetry: Symmetry,
    /// How the server names what requests open: after their exchange unless
    /// asked otherwise (`check --arrival-naming`, traces recorded before).
    pub naming: Naming,
    /// The partial-order reduction (`check::ample`): on unless asked
    /// otherwise (`check --no-reduction`); it acts only under
    /// [`Clocks::PerComponent`].
    pub reduction: bool,
    /// Sleep sets of idle steps, part of the reduction (`check::sleep`):
    /// on with it unless asked otherwise ([`CheckModel::with_sleep_sets`]).
    pub sleep_sets: bool,
    /// The memo of client steps its worlds share (`sim::ClientMemo`): on
    /// unless asked otherwise ([`CheckModel::with_memo`]).
    pub memo: Option<Arc<ClientMemo>>,
    /// The clocks and notify the scenario (or `check --clocks`, `--notify`)
    /// asked for, `auto` included, before [`Self::auto_settings`] decided.
    asked: (Clocks, NotifyReach),
}

impl CheckModel {
    /// The model for a scenario and two preset names, judging the scenario's invariants.
    ///
    /// A scenario's `auto` clocks and notify are decided here, once: a
    /// clock per component and per-session notifies where the reduction
    /// can act ([`Self::auto_settings`]), one clock and atomic notifies
    /// elsewhere.
    pub fn new(mut scenario: Scenario, server: &str, client: &str) -> Option<Self> {
        let asked = (scenario.settings.clocks, scenario.settings.notify);
        scenario.settings = Self::auto_settings(&scenario);
        Some(CheckModel {
            server: ServerPolicy::preset(server)?,
            client: ClientPolicy::preset(client)?,
            server_name: server.to_owned(),
            client_name: client.to_owned(),
            judge: scenario.invariants.clone(),
            // Clients are interchangeable when their scripts and eras are.
            symmetry: Symmetry::of(
                &scenario
                    .clients
                    .iter()
                    .enumerate()
                    .map(|(c, script)| (script, scenario.settings.era(c)))
                    .collect::<Vec<_>>(),
            ),
            naming: Naming::ByExchange,
            reduction: true,
            sleep_sets: true,
            memo: Some(Arc::default()),
            asked,
            scenario,
        })
    }

    /// The scenario's settings with `auto` clocks and notify decided.
    ///
    /// A clock per component (with per-session notifies) is what lets the
    /// partial-order reduction run one client's component at a time; it is
    /// chosen where the reduction acts from the first state: two clients
    /// or more, what the content allows ([`Self::apart_by_content`]), and
    /// a server script of `notify`s and steps on the oldest call (a step
    /// on every session at once keeps the reduction waiting until it has
    /// run, and a clock per component only adds states until then).
    /// Elsewhere one clock, which one client or such a script lose nothing
    /// by (`docs/reduction.md`, "Reductions by default").
    pub fn auto_settings(scenario: &Scenario) -> super::scenario::Settings {
        let mut st = scenario.settings.clone();
        if st.clocks == Clocks::Auto {
            let apart = scenario.clients.len() > 1
                && Self::apart_by_content(scenario)
                && scenario.server.iter().all(|step| {
                    *step == ServerStep::Notify || super::ample::on_the_oldest_call(*step)
                });
            st.clocks = if apart {
                Clocks::PerComponent
            } else {
                Clocks::Global
            };
        }
        if st.notify == NotifyReach::Auto {
            st.notify = if st.clocks == Clocks::PerComponent {
                NotifyReach::PerSession
            } else {
                NotifyReach::Atomic
            };
        }
        st
    }

    /// The model for one expectation of a scenario (its `judge` overrides the scenario's).
    pub fn for_expectation(scenario: &Scenario, e: &super::scenario::Expectation) -> Option<Self> {
        let mut m = Self::new(scenario.clone(), &e.server, &e.client)?;
        if !e.judge.is_empty() {
            m.judge = e.judge.clone();
        }
        Some(m)
    }

    pub(super) fn bounds(&self) -> &Bounds {
        &self.scenario.bounds
    }

    /// Whether a client of the scenario turns attacker
    /// ([`super::scenario::ClientStep::Hijack`]): its clients then authenticate, and the
    /// partial-order reduction is off (an attacker's requests reach
    /// another client's session, which the components it relies on keep
    /// apart).
    pub fn has_attacker(&self) -> bool {
        self.scenario.has_attacker()
    }

    /// The world's configuration for this scenario.
    pub fn pair_config(&self) -> PairConfig {
        let mut c = PairConfig {
            server_policy: self.server,
            client_policy: self.client,
            server_auto_respond: false,
            client_auto_respond: self.scenario.settings.clients_answer,
            clients: self.scenario.clients.len(),
            record_events: false,
            naming: self.naming,
            ..PairConfig::default()
        };
        let st = &self.scenario.settings;
        script::quiet_session(&mut c.server.session);
        c.server.session.retry_ms = st.retry_ms;
        c.server.session.events_max = st.events_max;
        c.server.session.outbound_timeout_ms = st.outbound_timeout_ms;
        c.server.session.first_request_number = st.first_request_number;
        c.server.session.response_mode = st.response_mode;
        c.client.request_timeout_ms = st.request_timeout_ms;
        c.client.connections_max = st.connections_max;
        c.client.reader_reconnects_max = self.bounds().reader_reconnects;
        c.client.resume_attempts_max = self.bounds().resume_attempts;
        c.client.background_failures_max = 2;
        c.client_eras = st.eras.clone();
        c.clocks = st.clocks;
        c.principals = self.has_attacker();
        if !st.background_get {
            c.client_policy.background_get = BackgroundGet::Off;
        }
        c
    }

    /// The initial state.
    pub fn initial(&self) -> State {
        let mut world = World::with(self.pair_config());
        world.memo = Unhashed(self.memo.clone());
        if let Some(max) = self.bounds().gets_max {
            world.monitor = crate::monitor::Monitor::with_gets_max(max);
        }
        world.monitor =
            std::mem::take(&mut world.monitor).with_resumes_max(self.bounds().resume_attempts);
        State {
            world,
            client_pc: vec![0; self.scenario.clients.len()],
            server_pc: 0,
            drops: 0,
            notices: match self.scenario.settings.notify {
                NotifyReach::Atomic | NotifyReach::Auto => Vec::new(),
                NotifyReach::PerSession => vec![0; self.scenario.clients.len()],
            },
            drops_for: None,
            calls_for: None,
            covered: Unhashed(Covered::default()),
        }
    }

    pub(super) fn client_step_enabled(&self, s: &State, c: usize) -> bool {
        // `c` may come from a trace file: a client that is not there runs nothing.
        let (Some(script), Some(&pc)) = (self.scenario.clients.get(c), s.client_pc.get(c)) else {
            return false;
        };
        let Some(&step) = script.get(usize::from(pc)) else {
            return false;
        };
        script::client_step_enabled(&s.world, c, step)
    }

    fn server_step_enabled(&self, s: &State) -> bool {
        let Some(step) = self.scenario.server.get(usize::from(s.server_pc)) else {
            return false;
        };
        let w = &s.world;
        match step {
            ServerStep::Notify => {
                // Per session, the step only records the notify; it is
                // always enabled, so nothing else enables it.
                !s.notices.is_empty() || w.server_session().is_some()
            }
            ServerStep::HookNotify => !Self::registered_sessions(w).is_empty(),
            ServerStep::Progress
            | ServerStep::AskClient
            | ServerStep::CloseConnection
            | ServerStep::EndSession => script::oldest_call(w).is_some(),
            ServerStep::Broadcast => true,
        }
    }

    /// Sessions whose `initialize` the application has answered (where a
    /// registration hook has run), in id order.
    fn registered_sessions(w: &World) -> Vec<SessionId> {
        w.server
            .named_session_ids()
            .filter(|sid| {
                !w.server_pending
                    .iter()
                    .any(|(s, _, m, _)| s == *sid && &**m == "initialize")
            })
            .cloned()
            .collect()
    }

    /// The actions the search explores from `s`: an ample set when the
    /// reduction finds one (`check::ample`), every enabled action otherwise.
    pub fn enabled(&self, s: &State, out: &mut Vec<Action>) {
        self.all_enabled(s, out);
        match self.ample(s, out) {
            Some(Ample::Notify) => out.retain(|a| *a == Action::ServerStep),
            Some(Ample::Component(c)) => out.retain(|a| self.component_of(s, a) == Some(c)),
            None => {}
        }
        self.leave_out_covered(s, out);
    }

    /// Every action enabled in `s`, in a fixed order.
    pub fn all_enabled(&self, s: &State, out: &mut Vec<Action>) {
        let _ = self.each_enabled(s, &mut |a| {
            out.push(a);
            ControlFlow::Continue(())
        });
    }

    /// Whether any action is enabled in `s`: the first one answers, and
    /// nothing is listed (a judge asks this of every new state; the search
    /// lists the actions once, when it expands the state). An ample set is
    /// never empty where some action is enabled, so this is also whether
    /// [`CheckModel::enabled`] lists any.
    pub fn any_enabled(&self, s: &State) -> bool {
        self.each_enabled(s, &mut |_| ControlFlow::Break(()))
            .is_break()
    }

    /// Hands every action enabled in `s` to `f`, in a fixed order, until
    /// `f` breaks. Written once for the list and the questions.
    pub(super) fn each_enabled(
        &self,
        s: &State,
        f: &mut impl FnMut(Action) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.must_reserve_drops(s) {
            for client in 0..s.client_pc.len() {
                f(Action::ReserveDrops { client })?;
            }
            return ControlFlow::Continue(());
        }
        if let Some(callers) = self.must_reserve_call(s) {
            for client in callers {
                f(Action::ReserveCall { client })?;
            }
            return ControlFlow::Continue(());
        }
        self.each_step(s, f)
    }

    /// [`Self::each_enabled`] past the reservations: the steps of the
    /// scripts, the network, time and the presets.
    pub(super) fn each_step(
        &self,
        s: &State,
        f: &mut impl FnMut(Action) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let w = &s.world;
        for c in 0..self.scenario.clients.len() {
            if self.client_step_enabled(s, c) {
                f(Action::ClientStep { client: c })?;
            }
        }
        if self.server_step_enabled(s) {
            f(Action::ServerStep)?;
        }
        let awaits = self.scenario.settings.calls_await_questions;
        for (session, id, _, _) in &w.server_pending {
            if awaits && crate::sim::Servers::awaits_answers_for(&*w.server, session, id) {
                continue;
            }
            f(Action::ServerRespond {
                session: session.clone(),
                id: id.clone(),
            })?;
        }
        for (http, is_request) in w.deliverable() {
            if is_request && self.call_waits_its_turn(s, http) {
                continue;
            }
            f(if is_request {
                Action::DeliverRequest { http }
            } else {
                Action::DeliverNext { http }
            })?;
        }
        for (c, pending) in s.notices.iter().enumerate() {
            if *pending > 0 {
                f(Action::NotifySession { client: c })?;
            }
        }
        if s.drops < self.bounds().drops {
            for http in w.links.keys() {
                if self.may_drop(s, *http) {
                    f(Action::Drop {
                        http: *http,
                        notice: true,
                    })?;
                    if self.bounds().silent_drops {
                        f(Action::Drop {
                            http: *http,
                            notice: false,
                        })?;
                    }
                }
            }
        }
        for (http, link) in &w.links {
            if link.client_gone && !link.server_told && link.server_http.is_some() {
                f(Action::ServerNotices { http: *http })?;
            }
        }
        self.time_steps(w, f)?;
        for (http, point) in w.server_scheduling_points() {
            f(Action::ServerSchedule { http, point })?;
        }
        for http in w.client_scheduling_points() {
            f(Action::ClientSchedule { http })?;
        }
        ControlFlow::Continue(())
    }

    /// Whether a drop may hit exchange `http` in `s`: it is live, and the
    /// drops are not reserved for another client.
    fn may_drop(&self, s: &State, http: HttpId) -> bool {
        let live = s
            .world
            .links
            .get(&http)
            .is_some_and(|l| !l.client_gone && l.server_http.is_some());
        live && s
            .drops_for
            .is_none_or(|c| usize::from(c) == World::owner(http))
    }

    /// Whether `s` waits for the choice of whose exchanges the drops may
    /// hit: a reduced run of several clients with drops to spend.
    pub(super) fn must_reserve_drops(&self, s: &State) -> bool {
        self.reduces() && s.drops_for.is_none() && self.bounds().drops > 0 && s.client_pc.len() > 1
    }

    /// The steps of time enabled in `w`: one tick under one clock; under a
    /// clock per component, each client's tick and idle step and the
    /// server's tick, for deadlines within the time bound.
    fn time_steps(
        &self,
        w: &World,
        f: &mut impl FnMut(Action) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let within = |t: mcp_streamable::time::Instant| self.within_time(t);
        if w.client_clocks.is_empty() {
            if w.next_timeout().is_some_and(within) {
                f(Action::Tick)?;
            }
            return ControlFlow::Continue(());
        }
        for c in 0..w.clients.len() {
            if w.client_deadline(c).is_some_and(within) {
                f(Action::TickClient { client: c })?;
                if self.idle_enabled(w, c) {
                    f(Action::Idle { client: c })?;
                }
            }
            if w.server_deadline_of(Some(c)).is_some_and(within) {
                f(Action::TickSessions { client: c })?;
            }
        }
        if w.server_deadline_of(None).is_some_and(within) {
            f(Action::TickServer)?;
        }
        ControlFlow::Continue(())
    }

    /// Whether client `c`'s idle step is enabled in `w`: under a clock per
    /// component, it has a deadline within the time bound more than 1 ms
    /// ahead of its clock.
    pub(super) fn idle_enabled(&self, w: &World, c: usize) -> bool {
        !w.client_clocks.is_empty()
            && w.client_deadline(c).is_some_and(|at| {
                self.within_time(at) && at.as_millis() > w.client_now(c).as_millis() + 1
            })
    }

    /// Whether a deadline at `t` may fire within the model's time bound.
    pub(super) fn within_time(&self, t: mcp_streamable::time::Instant) -> bool {
        t.as_millis() <= self.bounds().time_ms
    }

    /// Applies `action` to a copy of `s`; `None` if it is not enabled.
    pub fn step(&self, s: &State, action: &Action) -> Option<State> {
        self.step_owned(s.clone(), action)
    }

    /// The successor of `s` by `action`, made from `s` itself: the last
    /// action a search tries on a state needs no copy of it, and the parts
    /// that state alone held are changed in place instead of copied.
    pub fn step_owned(&self, mut n: State, action: &Action) -> Option<State> {
        n.covered = Unhashed(self.covered_after(&n, action));
        match action {
            Action::ClientStep { client } => {
                if !self.client_step_enabled(&n, *client) {
                    return None;
                }
                let c = *client;
                let pc = usize::from(n.client_pc[c]);
                let step = self.scenario.clients[c][pc];
                script::run_client_step(&mut n.world, c, step, pc)?;
                n.client_pc[c] += 1;
            }
            Action::ServerStep => {
                if !self.server_step_enabled(&n) {
                    return None;
                }
                let w = &mut n.world;
                let call = script::oldest_call(w);
                // `notify` is a broadcast (a list changed for everyone);
                // `hook_notify` runs in every session whose `initialize` was
                // answered; the others act in the oldest call's own session.
                match self.scenario.server[usize::from(n.server_pc)] {
                    ServerStep::Notify if !n.notices.is_empty() => {
                        // A retired client has no session left to reach.
                        for (c, pending) in n.notices.iter_mut().enumerate() {
                            if !n.world.monitor.is_retired(c) {
                                *pending += 1;
                            }
                        }
                    }
                    ServerStep::Notify => {
                        // Sessions of the session era (a 2026-07-28 request's
                        // own session has no stream for unrelated messages).
                        let sessions: Vec<SessionId> =
                            w.server.named_session_ids().cloned().collect();
                        for sid in &sessions {
                            w.server_notify_in(sid, LIST_CHANGED, Cause::Unrelated);
                        }
                    }
                    ServerStep::HookNotify => {
                        for sid in &Self::registered_sessions(w) {
                            w.server_notify_in(
                                sid,
                                "notifications/resources/list_changed",
                                Cause::Unrelated,
                            );
                        }
                    }
                    ServerStep::Progress => {
                        let (sid, id) = call?;
                        w.server_notify_in(&sid, "notifications/progress", Cause::Request(id));
                    }
                    ServerStep::AskClient => {
                        let (sid, id) = call?;
                        w.server_request_in(&sid, "roots/list", Cause::Request(id));
                    }
                    ServerStep::CloseConnection => {
                        let (sid, id) = call?;
                        w.server_close_connection_in(&sid, &id);
                    }
                    ServerStep::EndSession => {
                        let (sid, id) = call?;
                        w.server_end_session_in(&sid, &id);
                    }
                    ServerStep::Broadcast => {
                        w.server_broadcast(LIST_CHANGED);
                    }
                }
                n.server_pc += 1;
            }
            Action::ServerRespond { session, id } => {
                if !n.world.server_respond_to(session, id) {
                    return None;
                }
            }
            Action::DeliverRequest { http } => {
                if self.call_waits_its_turn(&n, *http) {
                    return None;
                }
                let reserved_arrives = n
                    .calls_for
                    .is_some_and(|c| usize::from(c) == World::owner(*http))
                    && super::ample::carries_a_call(&n.world, *http);
                if !n.world.deliver_request(*http) {
                    return None;
                }
                if reserved_arrives {
                    n.calls_for = None;
                }
            }
            Action::DeliverNext { http } => {
                if !n.world.deliver_next(*http) {
                    return None;
                }
                while n.world.deliver_next(*http) {}
            }
            Action::Drop { http, notice } => {
                if !self.may_drop(&n, *http) || n.drops >= self.bounds().drops {
                    return None;
                }
                n.world.drop_link(*http, *notice);
                n.drops += 1;
            }
            Action::ServerNotices { http } => {
                let due = n
                    .world
                    .links
                    .get(http)
                    .is_some_and(|l| l.client_gone && !l.server_told);
                if !due {
                    return None;
                }
                n.world.server_notices(*http);
            }
            Action::Tick => {
                let next = n.world.next_timeout()?;
                if next.as_millis() > self.bounds().time_ms {
                    return None;
                }
                let ms = next.saturating_duration_since(n.world.now).as_millis() as u64;
                n.world.advance(ms);
            }
            Action::TickClient { client } => {
                let due = n.world.client_deadline(*client)?;
                if !self.within_time(due) || !n.world.tick_client(*client) {
                    return None;
                }
            }
            Action::Idle { client } => {
                let due = n.world.client_deadline(*client)?;
                if !self.within_time(due) || !n.world.idle_client(*client) {
                    return None;
                }
            }
            Action::NotifySession { client } => {
                let pending = n.notices.get_mut(*client).filter(|p| **p > 0)?;
                *pending -= 1;
                n.world.server_notify_sessions_of(*client, LIST_CHANGED);
            }
            Action::ReserveCall { client } => {
                // Taken whenever nothing is reserved yet, like the drops'.
                if n.calls_for.is_some() || *client >= n.client_pc.len() {
                    return None;
                }
                n.calls_for = Some(*client as u8);
            }
            Action::ReserveDrops { client } => {
                // Taken whenever nothing is reserved yet, so a replay without
                // the reduction can take a reduced run's steps too.
                if n.drops_for.is_some() || *client >= n.client_pc.len() {
                    return None;
                }
                n.drops_for = Some(*client as u8);
            }
            Action::TickServer | Action::TickSessions { .. } => {
                let part = match action {
                    Action::TickSessions { client } => Some(*client),
                    _ => None,
                };
                let due = n.world.server_deadline_of(part)?;
                if n.world.server_clocks.is_empty()
                    || !self.within_time(due)
                    || !n.world.tick_server_part(part)
                {
                    return None;
                }
            }
            Action::ServerSchedule { http, point } => {
                if !n.world.fire_server(*http, *point) {
                    return None;
                }
            }
            Action::ClientSchedule { http } => {
                if !n.world.fire_client(*http) {
                    return None;
                }
            }
        }
        self.forget_finished_clocks(&mut n);
        self.release_call(&mut n);
        self.retire_finished(&mut n);
        Some(n)
    }

    /// The same model with a fresh memo of client steps, or none (each
    /// world steps its cores in place: what the memo must agree with).
    pub fn with_memo(mut self, on: bool) -> Self {
        self.memo = on.then(Arc::default);
        self
    }

    /// The same model with the symmetry reduction on or off.
    pub fn with_symmetry(mut self, on: bool) -> Self {
        self.symmetry = self.symmetry.enabled(on);
        self
    }

    /// The same model with the partial-order reduction on or off.
    pub fn with_reduction(mut self, on: bool) -> Self {
        self.reduction = on;
        self
    }

    /// The same model with the reduction's sleep sets of idle steps on or
    /// off (`check::sleep`; they act only with the reduction on). Off, the
    /// search takes more steps to reach the same states.
    pub fn with_sleep_sets(mut self, on: bool) -> Self {
        self.sleep_sets = on;
        self
    }

    /// The same model under these clocks, whatever its scenario says
    /// (`check --clocks`).
    pub fn with_clocks(mut self, clocks: Clocks) -> Self {
        self.asked.0 = clocks;
        self.decide_settings()
    }

    /// The settings decided again from what was asked ([`Self::asked`]).
    fn decide_settings(mut self) -> Self {
        (self.scenario.settings.clocks, self.scenario.settings.notify) = self.asked;
        self.scenario.settings = Self::auto_settings(&self.scenario);
        self
    }

    /// The same model with its `notify` steps reaching sessions this way,
    /// whatever its scenario says (`check --notify`).
    pub fn with_notify(mut self, notify: NotifyReach) -> Self {
        self.asked.1 = notify;
        self.decide_settings()
    }

    /// The same model with the server naming what requests open this way
    /// ([`Naming`]: by exchange, a reduction; by arrival, as real servers).
    pub fn with_naming(mut self, naming: Naming) -> Self {
        self.naming = naming;
        self
    }

    /// The state's 64-bit fingerprint: equal states (and, with the symmetry
    /// reduction, states that differ by a swap of interchangeable clients)
    /// get equal fingerprints; fixed keys, so runs are reproducible.
    pub fn fingerprint(&self, s: &State) -> u64 {
        self.symmetry.fingerprint(s)
    }

    fn judged(&self, id: &str) -> bool {
        self.judge.is_empty() || self.judge.iter().any(|i| i == id)
    }

    /// The first judged violation in `s`: found along the way, or by the
    /// end-of-run checks once nothing is enabled (quiescence).
    pub fn violation(&self, s: &State) -> Option<Violation> {
        if let Some(v) = s
            .world
            .monitor
            .violations()
            .iter()
            .find(|v| self.judged(v.id))
        {
            return Some(v.clone());
        }
        if self.any_enabled(s) {
            return self.stuck_requests(s);
        }
        if let Some(v) = self.stuck_requests(s) {
            return Some(v);
        }
        if s.world.next_timeout().is_some() || s.world.monitor.retired_deadline() {
            // Cut by the time bound, not quiet: a timer would still fire
            // (a resumption, a re-listen), so the end-of-run checks, which
            // judge a run that is over, do not apply.
            return None;
        }
        let mut w = s.world.clone();
        w.finish();
        if let Some(v) = w.monitor.violations().iter().find(|v| self.judged(v.id)) {
            return Some(v.clone());
        }
        self.unanswered_questions(s)
            .or_else(|| self.streams_held_open(&w))
    }

    /// L4, every stream ends: once nothing more can happen, no exchange is
    /// open at both ends with every request it carries over (answered, or
    /// cancelled by the client): the server would keep its writer, and the
    /// client the connection, for as long as either lives
    /// ([`Monitor::held_open`](crate::monitor::Monitor::held_open)).
    fn streams_held_open(&self, w: &World) -> Option<Violation> {
        if !self.judged("L4") {
            return None;
        }
        w.monitor.held_open_violation()
    }

    /// L2, every request ends: once nothing can happen to a client but
    /// its own request deadlines (every timer it has armed is one: no
    /// resumption, reconnection or re-listen is planned, not even behind a
    /// deadline), none of its requests is without an outcome. A deadline
    /// ends a request nothing else would: a caller without one, or with a
    /// long one, waits for ever or for nothing. Judged on every run, faults
    /// included: a cut stream is resumed or its request failed, never left
    /// to the deadline.
    ///
    /// What "nothing can happen" covers depends on whether the model keeps
    /// its components apart ([`Self::keeps_components_apart`]): where it
    /// does, only the client's own component (its steps, its exchanges, its
    /// sessions' timers) can give it an outcome, whatever the other clients
    /// still do, so the judgment is per client, and it is the same in a run
    /// the reduction takes one component at a time. Elsewhere, every enabled
    /// action must be a step of time and the server may have no timer.
    fn stuck_requests(&self, s: &State) -> Option<Violation> {
        if !self.judged("L2") || s.world.waiting_requests().next().is_none() {
            return None;
        }
        let apart = self.keeps_components_apart() && self.script_apart(s);
        let everyone_waits = apart || self.waits_only_on_time(s, None);
        if !everyone_waits {
            return None;
        }
        let stuck: Vec<String> = s
            .world
            .waiting_requests()
            .filter(|(c, _)| !apart || self.waits_only_on_time(s, Some(*c)))
            .map(|(c, id)| format!("client {c}'s {id}"))
            .collect();
        if stuck.is_empty() {
            return None;
        }
        Some(Violation {
            id: "L2",
            step: usize::MAX,
            http: None,
            detail: format!(
                "nothing can happen but the clients' own deadlines, and {} still wait for an outcome",
                stuck.join(", ")
            ),
        })
    }

    /// Whether only time can still move `s`: for everyone (`None`: every
    /// enabled action is a step of time, the server has no timer, no
    /// retired client left one, every client's timers are request
    /// deadlines), or for client `c` of a model that keeps its components
    /// apart (its timers are request deadlines, every enabled step of its
    /// own component is a step of time, its sessions have no timer, and no
    /// step of nobody's but the server script's `notify`, which only
    /// records a notice, is enabled).
    fn waits_only_on_time(&self, s: &State, c: Option<usize>) -> bool {
        let w = &s.world;
        let time = |a: &Action| {
            matches!(
                a,
                Action::Tick | Action::TickClient { .. } | Action::Idle { .. }
            )
        };
        match c {
            None => {
                w.server.poll_timeout().is_none()
                    && !w.monitor.retired_deadline()
                    && (0..w.clients.len()).all(|d| w.only_deadlines_armed(d))
                    && self
                        .each_enabled(s, &mut |a| {
                            if time(&a) {
                                ControlFlow::Continue(())
                            } else {
                                ControlFlow::Break(())
                            }
                        })
                        .is_continue()
            }
            Some(c) => {
                let sessions_quiet = w
                    .session_owner
                    .iter()
                    .filter(|(_, owner)| **owner == c)
                    .all(|(sid, _)| {
                        w.server
                            .session(sid)
                            .is_none_or(|x| x.poll_timeout().is_none())
                    });
                // A call held back by another client's reservation waits on
                // that client's step, not on time.
                let held_back = w
                    .links_of(c)
                    .any(|(ch, _)| self.call_waits_its_turn(s, *ch));
                w.only_deadlines_armed(c)
                    && sessions_quiet
                    && !held_back
                    && self
                        .each_enabled(s, &mut |a| match self.component_of(s, &a) {
                            Some(d) if d != c => ControlFlow::Continue(()),
                            Some(_) if time(&a) => ControlFlow::Continue(()),
                            None if time(&a) || a == Action::ServerStep => {
                                ControlFlow::Continue(())
                            }
                            _ => ControlFlow::Break(()),
                        })
                        .is_continue()
            }
        }
    }

    /// L1, every question ends: once nothing more can happen, no live
    /// session awaits the client's answer to a request its application sent
    /// (the client answered it, the server gave it up with the call it was
    /// sent for, or its deadline passed). Judged on runs with faults too: a
    /// request or an answer the network lost is ended by the server's
    /// deadline (`outbound_timeout_ms`), and a server without one waits for
    /// ever.
    fn unanswered_questions(&self, s: &State) -> Option<Violation> {
        if !self.judged("L1") {
            return None;
        }
        let awaited = crate::sim::Servers::awaited_answers(&*s.world.server);
        (!awaited.is_empty()).then(|| Violation {
            id: "L1",
            step: usize::MAX,
            http: None,
            detail: format!(
                "nothing more can happen, and the server still awaits the client's answer to {awaited:?}"
            ),
        })
    }
}

impl Model for CheckModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        self.enabled(state, actions);
    }

    fn next_state(&self, last_state: &State, action: Action) -> Option<State> {
        self.step(last_state, &action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::<Self>::always(
            "invariants",
            |m: &CheckModel, s: &State| m.violation(s).is_none(),
        )]
    }
}
