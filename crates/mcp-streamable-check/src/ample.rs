//! The checker's partial-order reduction: ample sets of one client's
//! component.
//!
//! A *component* is a client with everything that is its own: its script
//! steps, its clock's steps, the deliveries, drops and scheduling points of
//! its exchanges, the application's answers to its sessions' requests, and
//! the `notify`s reaching its sessions. Two components touch disjoint parts
//! of the state (different client cores, links, server sessions and monitor
//! sides), so their steps commute, and none can enable or disable a step of
//! another. From a state where that holds, exploring the server
//! application's next `notify` alone (it only records a notice per client,
//! so it commutes with everything), or else the enabled steps of one
//! component, loses no reachable violation and no reachable end state: a violation is sticky
//! and part of the state, and the state graph is acyclic (every step
//! consumes a script step, a message, a budget or a deadline), so a path
//! that runs the component's step later reaches a state with the same
//! violation when it runs first (`docs/reduction.md`).
//!
//! The independence holds only where the model keeps components apart, so
//! the reduction acts only when all of these do:
//! - a clock per component ([`Clocks::PerComponent`]): under one clock, a
//!   tick moves the time every step sets deadlines from;
//! - the server's timers cannot fire within the time bound (they would
//!   touch every session at once);
//! - the server script's steps left are `notify`s reaching each client's
//!   sessions on their own ([`NotifyReach::PerSession`]); the others act on
//!   "the oldest call" or every session in one step;
//! - the drops are reserved for one client ([`Action::ReserveDrops`]): one
//!   budget shared by all makes every drop disable the others;
//! - no `gets_max` bound (B5 excuses GETs after a fault anywhere);
//! - no client turns attacker (`hijack`): its requests reach another
//!   client's session.
//!
//! A client whose component is done for good is then retired
//! ([`CheckModel::retire_finished`], [`World::retire_client`]): its part's
//! end-of-run checks are judged and kept, the rest is forgotten, so its end
//! states meet before the next component runs from each of them.
//!
//! What it costs: counterexamples may be longer than the shortest. `check`
//! searches again without the reduction when it finds one, within a budget
//! ([`super::run`]).
//! The independence is tested, not only argued: `tests/checker/ample_sets.rs` steps
//! every component's enabled actions against every other enabled action in
//! every state of several models, both orders, and compares verdicts with
//! the reduction on and off on every bundled model.

use super::model::{Action, CheckModel, State};
use super::scenario::{NotifyReach, Scenario, ServerStep};
use crate::sim::{Clocks, World};
use mcp_streamable::preset::Scheduled;
use mcp_streamable::server::SessionConfig;
use std::ops::ControlFlow;

/// What the reduction explores alone from a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ample {
    /// The server script's next `notify`. Per session it only records a
    /// notice for every client (each delivered later by that client's own
    /// `NotifySession`): it commutes with every step and nothing disables
    /// it, so running it first loses no order. The notifies that have not
    /// happened yet stop multiplying every state of every component.
    Notify,
    /// Client `c`'s component: its enabled steps.
    Component(usize),
}

/// Whether client `c` of `w` has nothing open, armed or in flight: no
/// timer, no exchange, no scheduling point, no request unanswered, and every
/// link of it over for the client.
fn is_quiet(w: &World, c: usize) -> bool {
    let client = &w.clients[c];
    if client.poll_timeout().is_some()
        || client.exchanges().next().is_some()
        || client.pending().next().is_some()
        || !client.scheduling_points().is_empty()
    {
        return false;
    }
    w.links_of(c).all(|(_, link)| link.client_gone)
}

/// Whether client `c` of `w` is still: no timer, no request unanswered,
/// no scheduling point, and every link of it either over for the client or
/// open with nothing in flight either way (a standalone GET the server has
/// nothing more to write to). Unlike [`is_quiet`], an open exchange is
/// allowed: where nothing of the run can write to it again, an open
/// stream is as final as a closed one.
fn is_still(w: &World, c: usize) -> bool {
    let client = &w.clients[c];
    if client.poll_timeout().is_some()
        || client.pending().next().is_some()
        || !client.scheduling_points().is_empty()
    {
        return false;
    }
    w.links_of(c)
        .all(|(_, link)| link.client_gone || (link.request.is_none() && link.to_client.is_empty()))
}

impl CheckModel {
    /// Whether the reduction can act on this model at all: asked for, a
    /// clock per component, no `gets_max`, and server timers that cannot
    /// fire within the time bound (the checker turns the rest off).
    pub fn reduces(&self) -> bool {
        self.reduction && self.keeps_components_apart()
    }

    /// Whether the model keeps its components apart, the reduction on or
    /// off: a clock per component, no `gets_max`, no attacker, and server
    /// timers that cannot fire within the time bound. Where it does and
    /// the server's script has only per-session `notify`s left
    /// ([`Self::script_apart`]), what one client waits on is its own
    /// component's business: L2 is judged per client there, the same way
    /// in a reduced run and a full one.
    pub fn keeps_components_apart(&self) -> bool {
        self.scenario.settings.clocks == Clocks::PerComponent
            && Self::apart_by_content(&self.scenario)
    }

    /// What of keeping components apart a scenario's content decides,
    /// whatever its clocks: no attacker (whose requests reach another
    /// client's session), no `gets_max` (B5 counts GETs across
    /// components), and server timers that cannot fire within the time
    /// bound (they would touch every session at once; the checker turns
    /// the others off).
    pub fn apart_by_content(scenario: &Scenario) -> bool {
        let b = &scenario.bounds;
        !scenario.has_attacker()
            && b.gets_max.is_none()
            && b.time_ms < SessionConfig::default().held_ttl_ms
    }

    /// Whether what is left of the server's script in `s` keeps the
    /// components apart: only `notify`s, each reaching a client's
    /// sessions in a step of that client's own.
    pub fn script_apart(&self, s: &State) -> bool {
        let script = &self.scenario.server;
        let per_session = self.scenario.settings.notify == NotifyReach::PerSession;
        let rest = &script[usize::from(s.server_pc).min(script.len())..];
        rest.iter()
            .all(|step| *step == ServerStep::Notify && per_session)
    }

    /// What the search explores alone from `s`, where `all` is enabled:
    /// the server's next `notify` first, then the first component with an
    /// enabled action. `None`: every enabled action is.
    pub fn ample(&self, s: &State, all: &[Action]) -> Option<Ample> {
        if !self.components_apart(s, all) {
            return None;
        }
        if all.contains(&Action::ServerStep) {
            return (all.len() > 1).then_some(Ample::Notify);
        }
        let mut counts = vec![0usize; s.client_pc.len()];
        for a in all {
            if let Some(c) = self.component_of(s, a) {
                counts[c] += 1;
            }
        }
        // The first component with something to do: the same one until it
        // is done or waits on another's step, so each component runs in
        // one stretch instead of the choice going back and forth (which
        // would let the interleavings back in).
        let (c, n) = counts.iter().enumerate().find(|(_, n)| **n > 0)?;
        (all.len() > *n).then_some(Ample::Component(c))
    }

    /// Whether, in `s` with `all` enabled, the components are apart: the
    /// reduction's conditions hold (module docs), and every enabled action
    /// but the server's next `notify` belongs to a component.
    pub fn components_apart(&self, s: &State, all: &[Action]) -> bool {
        if !self.reduces() || self.must_reserve_drops(s) {
            return false;
        }
        self.script_apart(s)
            && all
                .iter()
                .all(|a| *a == Action::ServerStep || self.component_of(s, a).is_some())
    }

    /// Under a clock per component, sets the clock of every finished client
    /// back to zero: its script is done and it has nothing open, armed or in
    /// flight, so no step will read its clock again (nothing can reach a
    /// client with no exchange open, and it sends nothing more). Finished
    /// clients that differ only in when they finished then meet: on one
    /// client with a call, a notify and a drop, 515 states where the client
    /// is done become 305 (`docs/reduction.md`).
    pub(super) fn forget_finished_clocks(&self, s: &mut State) {
        for c in 0..s.world.client_clocks.len() {
            let done = usize::from(s.client_pc[c]) >= self.scenario.clients[c].len();
            if done && is_quiet(&s.world, c) {
                s.world.client_clocks[c] = mcp_streamable::time::Instant::ZERO;
            }
        }
    }

    /// Retires every client of `s` that is done for good
    /// ([`World::retire_client`]): its script is over or can go no
    /// further (its next step waits on a session it lost, a call that
    /// timed out), it is still (an
    /// open standalone GET allowed, with nothing in flight on it), no
    /// notice is owed to it, the server's script is over, no server timer
    /// can fire within the time bound, and no enabled step is its own.
    /// Components being apart, no other step can give it one again, so
    /// nothing can reach its part any more: a GET left open is as final as
    /// at the end of the run, where the end-of-run checks judge it open.
    /// A drop budget reserved for it is spent: nothing is left to drop.
    pub(super) fn retire_finished(&self, s: &mut State) {
        let script_over = usize::from(s.server_pc) >= self.scenario.server.len();
        if !self.reduces() || !script_over || self.must_reserve_drops(s) {
            return;
        }
        let server_timer_due = s
            .world
            .server
            .poll_timeout()
            .is_some_and(|(t, _)| self.within_time(t));
        if server_timer_due {
            return;
        }
        for c in 0..s.client_pc.len() {
            let w = &s.world;
            if w.monitor.is_retired(c)
                || s.notices.get(c).is_some_and(|n| *n > 0)
                || !is_still(w, c)
            {
                continue;
            }
            // Asked of every new state while a finished client waits on a
            // step of its own: the first such step answers, and nothing
            // is listed.
            let owns_a_step = self.each_enabled(s, &mut |a| {
                if self.component_of(s, &a) == Some(c) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            if owns_a_step.is_break() {
                continue;
            }
            s.world.retire_client(c);
            // A script cut short stays so: the fresh core the client is
            // given could otherwise run its next step.
            s.client_pc[c] = u8::try_from(self.scenario.clients[c].len()).unwrap_or(u8::MAX);
            if s.drops_for == u8::try_from(c).ok() {
                s.drops = self.bounds().drops;
            }
        }
    }

    /// The client whose component `a` belongs to in `s`; `None` for a step
    /// of the whole server side (a server script step, a server tick, the
    /// drops' reservation) or one nobody owns.
    pub fn component_of(&self, s: &State, a: &Action) -> Option<usize> {
        let w = &s.world;
        match a {
            Action::ClientStep { client }
            | Action::TickClient { client }
            | Action::Idle { client }
            | Action::NotifySession { client } => Some(*client),
            Action::DeliverRequest { http }
            | Action::DeliverNext { http }
            | Action::Drop { http, .. }
            | Action::ServerNotices { http }
            | Action::ClientSchedule { http } => Some(World::owner(*http)),
            Action::ServerSchedule { http, .. } => {
                w.by_server.get(http).map(|ch| World::owner(*ch))
            }
            Action::ServerRespond { session, .. } => w.session_owner.get(session).copied(),
            Action::ServerStep
            | Action::Tick
            | Action::TickServer
            | Action::ReserveDrops { .. } => None,
        }
    }
}
