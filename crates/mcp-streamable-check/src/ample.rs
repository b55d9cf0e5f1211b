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
//! - a clock per component ([`Clocks::PerComponent`]), the server side's
//!   included (each client's sessions keep their own: [`World::server_now_of`]):
//!   under one clock, a tick moves the time every step sets deadlines from;
//! - no held-message expiry within the time bound (the content's condition,
//!   [`CheckModel::apart_by_content`]), and no timer of a session no client
//!   opened;
//! - the server script's steps left are `notify`s reaching each client's
//!   sessions on their own ([`NotifyReach::PerSession`]) and steps on the
//!   oldest call ([`on_the_oldest_call`]), each the component's of the call
//!   it acts on; where two clients or more may still bring a call, which
//!   one arrives next is reserved ([`Action::ReserveCall`]), since the
//!   first to arrive is the one acted on ([`CallOrder`]); the other steps
//!   act on every session in one step;
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
use super::scenario::{ClientStep, NotifyReach, Scenario, ServerStep};
use crate::sim::{Clocks, World};
use mcp_streamable::client::ClientEra;
use mcp_streamable::policy::StatelessRequests;
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
    /// off: a clock per component, no `gets_max`, no attacker, server
    /// timers that cannot fire within the time bound, and no server that
    /// puts two clients' stateless requests in one session
    /// (as the TypeScript SDK before 1.26.0 does with one stateless
    /// transport reused). Where it does and
    /// the server's script has only per-session `notify`s left
    /// ([`Self::script_apart`]), what one client waits on is its own
    /// component's business: L2 is judged per client there, the same way
    /// in a reduced run and a full one.
    pub fn keeps_components_apart(&self) -> bool {
        self.scenario.settings.clocks == Clocks::PerComponent
            && Self::apart_by_content(&self.scenario)
            && !self.shares_stateless_requests()
    }

    /// Whether the server serves every stateless request on one shared
    /// transport ([`StatelessRequests::SharedTransport`]) and two clients
    /// or more may send such requests: each then lands in the session the
    /// first one opened, whose owner's component its answer would count
    /// in, and a request under an id in flight takes another client's
    /// place. One client's wait is then the others' business too: L2 is
    /// judged on the whole world, and the reduction stays off.
    pub(super) fn shares_stateless_requests(&self) -> bool {
        let stateless = (0..self.scenario.clients.len())
            .filter(|c| self.scenario.settings.era(*c) != ClientEra::V2025)
            .count();
        self.server.stateless_requests == StatelessRequests::SharedTransport && stateless > 1
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

    /// What is left of the server's script in `s`.
    fn script_rest(&self, s: &State) -> &[ServerStep] {
        let script = &self.scenario.server;
        &script[usize::from(s.server_pc).min(script.len())..]
    }

    /// Whether what is left of the server's script in `s` keeps the
    /// components apart: `notify`s, each reaching a client's sessions in a
    /// step of that client's own, and steps on the oldest call
    /// (`progress`, `ask_client`, `close_connection`, `end_session`), each
    /// acting in that call's session only.
    pub fn script_apart(&self, s: &State) -> bool {
        let per_session = self.scenario.settings.notify == NotifyReach::PerSession;
        self.script_rest(s)
            .iter()
            .all(|step| (*step == ServerStep::Notify && per_session) || on_the_oldest_call(*step))
    }

    /// Whether the server's next step in `s` is a `notify`.
    fn notify_next(&self, s: &State) -> bool {
        self.script_rest(s).first() == Some(&ServerStep::Notify)
    }

    /// What the search explores alone from `s`, where `all` is enabled:
    /// the server's next `notify` first, then the first component with an
    /// enabled action that may run alone (the order calls arrive in allows
    /// it: `CallOrder::alone`). `None`:
    /// every enabled action is.
    pub fn ample(&self, s: &State, all: &[Action]) -> Option<Ample> {
        if !self.components_apart(s, all) {
            return None;
        }
        if all.contains(&Action::ServerStep) && self.notify_next(s) {
            return (all.len() > 1).then_some(Ample::Notify);
        }
        let mut counts = vec![0usize; s.client_pc.len()];
        for a in all {
            if let Some(c) = self.component_of(s, a) {
                counts[c] += 1;
            }
        }
        let order = self.call_order(s, all, &counts);
        // A client that has begun and is done calling first (no call of
        // its pending, none it can bring: nothing on the oldest call can
        // reach it, so it runs to its end and retires, and its end states
        // meet before anyone else's run starts from each of them); then
        // the owner of the oldest call (a step on it is its own), then the
        // client whose call is reserved to arrive next if it has begun,
        // then the others that have begun (those with no call pending
        // first), then those that have not, the reserved caller among
        // them (a reservation only says whose call arrives next: a caller
        // not begun that went first would stop a running client wherever
        // it was): the same one until it is done or waits on
        // another's step, so each component runs in one stretch instead
        // of the choice going back and forth (which would let the
        // interleavings back in). Every switch to another component
        // leaves the one before stopped wherever it was, and each such
        // point meets the other's whole run: running first the client
        // with the least left to do keeps those points few (two clients,
        // `ask_client`, one drop: millions of states more without the
        // begun first; three clients, `ask_client`, one drop: 3.5 M
        // states without the done calling first, 1.0 M with it; one
        // client of each era, `ask_client`: 1,204,119 states with the
        // reserved caller first whether begun or not, 56,883 without).
        let first = order
            .as_ref()
            .map(|o| {
                [
                    o.oldest,
                    s.calls_for.map(usize::from).filter(|r| s.client_pc[*r] > 0),
                ]
            })
            .unwrap_or_default();
        let clients = 0..counts.len();
        let begun: Vec<usize> = clients.clone().filter(|c| s.client_pc[*c] > 0).collect();
        let (ending, holding): (Vec<usize>, Vec<usize>) = begun
            .into_iter()
            .partition(|c| !self.has_a_call_pending(s, *c));
        let (done_calling, calling): (Vec<usize>, Vec<usize>) = ending
            .into_iter()
            .partition(|c| !self.may_bring_a_call(s, *c));
        let not_begun = clients.filter(|c| s.client_pc[*c] == 0);
        let c = done_calling
            .into_iter()
            .chain(first.into_iter().flatten())
            .chain(calling)
            .chain(holding)
            .chain(not_begun)
            .find(|c| counts[*c] > 0 && order.as_ref().is_none_or(|o| o.alone(*c)))?;
        (all.len() > counts[c]).then_some(Ample::Component(c))
    }

    /// Whether, in `s` with `all` enabled, the components are apart: the
    /// reduction's conditions hold (module docs), and every enabled action
    /// but the server's next `notify` belongs to a component.
    pub fn components_apart(&self, s: &State, all: &[Action]) -> bool {
        if !self.reduces() || self.must_reserve_drops(s) {
            return false;
        }
        self.script_apart(s)
            && all.iter().all(|a| {
                (*a == Action::ServerStep && self.notify_next(s))
                    || self.component_of(s, a).is_some()
            })
    }

    /// Where a step on the oldest call is left in the server's script of
    /// `s` (with `all` enabled), what decides which call it acts on; `None`
    /// where none is left.
    fn call_order(&self, s: &State, all: &[Action], counts: &[usize]) -> Option<CallOrder> {
        if !self.calls_ordered(s) {
            return None;
        }
        let w = &s.world;
        let clients = s.client_pc.len();
        let mut order = CallOrder {
            oldest: crate::script::oldest_call(w)
                .and_then(|(sid, _)| w.session_owner.get(&sid).copied()),
            pending: (0..clients)
                .map(|c| self.has_a_call_pending(s, c))
                .collect(),
            // A client with no step of its own cannot bring a call: the
            // components being apart, no other step gives it one.
            callers: counts
                .iter()
                .enumerate()
                .map(|(c, n)| *n > 0 && self.may_bring_a_call(s, c))
                .collect(),
            arriving: vec![false; clients],
        };
        for a in all {
            if let (Action::DeliverRequest { http }, Some(c)) = (a, self.component_of(s, a)) {
                order.arriving[c] |= carries_a_call(w, *http);
            }
        }
        if let Some(r) = s.calls_for {
            // Its call arrives next by the reservation: nobody races it.
            order.arriving[usize::from(r)] = false;
        }
        Some(order)
    }

    /// Whether a step on the oldest call is left in the server's script of
    /// `s`: which call arrives first then decides what it acts on.
    fn calls_ordered(&self, s: &State) -> bool {
        self.script_rest(s)
            .iter()
            .any(|step| on_the_oldest_call(*step))
    }

    /// The clients a reduced run must choose among, in `s`, for the next
    /// `tools/call` to reach the server ([`Action::ReserveCall`]): where
    /// the reduction acts, the order of arrivals decides what a step on
    /// the oldest call acts on, nothing is reserved, and two clients or
    /// more may still bring a call and have a step of their own to take.
    /// `None`: no choice is due.
    pub(super) fn must_reserve_call(&self, s: &State) -> Option<Vec<usize>> {
        if !self.reduces()
            || s.calls_for.is_some()
            || self.must_reserve_drops(s)
            || !self.calls_ordered(s)
            || !self.script_apart(s)
        {
            return None;
        }
        let maybe: Vec<usize> = (0..s.client_pc.len())
            .filter(|c| !s.world.monitor.is_retired(*c) && self.may_bring_a_call(s, *c))
            .collect();
        if maybe.len() < 2 {
            return None;
        }
        let active: Vec<usize> = maybe
            .into_iter()
            .filter(|c| self.has_a_step(s, *c))
            .collect();
        (active.len() >= 2).then_some(active)
    }

    /// Whether client `c` has an enabled step of its own in `s`.
    fn has_a_step(&self, s: &State, c: usize) -> bool {
        self.each_step(s, &mut |a| {
            if self.component_of(s, &a) == Some(c) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .is_break()
    }

    /// Whether exchange `http`'s request in `s` is a `tools/call` that
    /// waits for another client's reserved call to arrive first.
    pub(super) fn call_waits_its_turn(&self, s: &State, http: mcp_streamable::ids::HttpId) -> bool {
        s.calls_for
            .is_some_and(|r| usize::from(r) != World::owner(http))
            && carries_a_call(&s.world, http)
    }

    /// Ends the reservation of the next call in `s` once its client can no
    /// longer bring one, or has no step of its own left (the components
    /// being apart, nothing else would give it one: the calls it held back
    /// may go), or once no step on the oldest call is left in the server's
    /// script (the order calls arrive in decides nothing more: a
    /// reservation kept would only split states that are otherwise equal).
    pub(super) fn release_call(&self, s: &mut State) {
        let Some(r) = s.calls_for.map(usize::from) else {
            return;
        };
        if !self.calls_ordered(s) || !self.may_bring_a_call(s, r) || !self.has_a_step(s, r) {
            s.calls_for = None;
        }
    }

    /// Whether the server application holds a `tools/call` of a session of
    /// client `c` in `s` (a step on the oldest call may act on it).
    fn has_a_call_pending(&self, s: &State, c: usize) -> bool {
        let w = &s.world;
        w.server_pending.iter().any(|(sid, _, method, _)| {
            &**method == "tools/call" && w.session_owner.get(sid) == Some(&c)
        })
    }

    /// Whether client `c` may still bring a `tools/call` to the server in
    /// `s`: one in its script ahead, one sent and not yet delivered, or a
    /// pending request of a client outside the session era (a 2026-07-28
    /// call answered with an `InputRequiredResult` is issued again, and an
    /// `auto` client sends what waited on its probe).
    fn may_bring_a_call(&self, s: &State, c: usize) -> bool {
        let w = &s.world;
        let pc = usize::from(s.client_pc[c]);
        let era = self.scenario.settings.era(c);
        self.scenario.clients[c]
            .get(pc..)
            .is_some_and(|rest| rest.contains(&ClientStep::Call))
            || (era != ClientEra::V2025 && w.clients[c].pending().next().is_some())
            || w.links_of(c).any(|(ch, _)| carries_a_call(w, *ch))
    }

    /// Under a clock per component, sets the clock of every finished client
    /// back to zero: it has nothing open, armed or in flight, and its
    /// script is done or can go no further ([`Self::stuck_for_good`]), so
    /// no step will read its clock again (nothing can reach a client with no
    /// exchange open, and it sends nothing more). Finished clients that
    /// differ only in when they finished then meet: on one client with a
    /// call, a notify and a drop, 515 states where the client is done
    /// become 305 (`docs/reduction.md`).
    pub(super) fn forget_finished_clocks(&self, s: &mut State) {
        for c in 0..s.world.client_clocks.len() {
            if is_quiet(&s.world, c) && self.stuck_for_good(s, c) {
                s.world.client_clocks[c] = mcp_streamable::time::Instant::ZERO;
            }
        }
    }

    /// Whether quiet client `c` of `s` runs no script step again: its
    /// script is done, or its next step is not enabled and only its own
    /// core could enable it (every step but `hijack`, which waits on
    /// another client's session). A quiet client's core changes no more
    /// (no exchange, no timer), so such a step stays disabled: an
    /// `initialize` whose answer was lost leaves the `call` after it so.
    fn stuck_for_good(&self, s: &State, c: usize) -> bool {
        let pc = usize::from(s.client_pc[c]);
        match self.scenario.clients[c].get(pc) {
            None => true,
            Some(ClientStep::Hijack) => false,
            Some(_) => !self.client_step_enabled(s, c),
        }
    }

    /// Retires every client of `s` that is done for good
    /// ([`World::retire_client`]): its script is over or can go no
    /// further (its next step waits on a session it lost, a call that
    /// timed out), it is still (an
    /// open standalone GET allowed, with nothing in flight on it), no
    /// notice is owed to a session of its, no server timer can fire within the time
    /// bound, no enabled step is its own, and what is left of the server's
    /// script cannot reach it: steps on the oldest call where it has no
    /// call pending and can bring none, and per-session `notify`s only
    /// where the server holds no session of its (a notify reaches a
    /// client's sessions and nothing else: a client whose `initialize`
    /// never reached the server is out of its reach, its notices owed are
    /// dropped, and a later `notify` records none for it, so retiring it
    /// before or after a `notify` ends in the same state).
    /// Components being apart, no other step can give it one again, so
    /// nothing can reach its part any more: a GET left open is as final as
    /// at the end of the run, where the end-of-run checks judge it open.
    /// A drop budget reserved for it is spent: nothing is left to drop.
    pub(super) fn retire_finished(&self, s: &mut State) {
        let rest = self.script_rest(s);
        let notify_left = rest.iter().any(|step| !on_the_oldest_call(*step));
        if !self.reduces() || (notify_left && !self.script_apart(s)) || self.must_reserve_drops(s) {
            return;
        }
        let calls_left = rest.iter().any(|step| on_the_oldest_call(*step));
        let unowned_timer_due = s
            .world
            .server_deadline_of(None)
            .is_some_and(|t| self.within_time(t));
        if unowned_timer_due {
            return;
        }
        for c in 0..s.client_pc.len() {
            let w = &s.world;
            // A notice reaches a client's sessions and nothing else: one
            // owed to a client the server holds no session of is spent
            // without a trace, and so is every later `notify` for it.
            let reachable = w.session_owner.values().any(|owner| *owner == c);
            let owed = s.notices.get(c).is_some_and(|n| *n > 0);
            if w.monitor.is_retired(c)
                || (reachable && (owed || notify_left))
                || !is_still(w, c)
                || (calls_left && (self.has_a_call_pending(s, c) || self.may_bring_a_call(s, c)))
            {
                continue;
            }
            // Asked of every new state while a finished client waits on a
            // step of its own: the first such step answers, and nothing
            // is listed.
            // (A notice owed where no session of its is left to reach
            // changes nothing but its count.)
            let owns_a_step = self.each_enabled(s, &mut |a| {
                let spent = !reachable && a == Action::NotifySession { client: c };
                if self.component_of(s, &a) == Some(c) && !spent {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            if owns_a_step.is_break() {
                continue;
            }
            s.world.retire_client(c);
            if let Some(n) = s.notices.get_mut(c) {
                *n = 0;
            }
            // A script cut short stays so: the fresh core the client is
            // given could otherwise run its next step.
            s.client_pc[c] = u8::try_from(self.scenario.clients[c].len()).unwrap_or(u8::MAX);
            if s.drops_for == u8::try_from(c).ok() {
                s.drops = self.bounds().drops;
            }
        }
    }

    /// The client whose component `a` belongs to in `s`; `None` for a step
    /// of the whole server side (a `notify` or another server script step
    /// that reaches every session, the server's tick of the sessions no
    /// client opened, the drops' reservation) or one nobody owns. A server
    /// script step on the oldest call is the component's whose session
    /// holds that call.
    pub fn component_of(&self, s: &State, a: &Action) -> Option<usize> {
        let w = &s.world;
        match a {
            Action::ClientStep { client }
            | Action::TickClient { client }
            | Action::Idle { client }
            | Action::TickSessions { client }
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
            Action::ServerStep => {
                let next = self.script_rest(s).first().copied()?;
                let (sid, _) = on_the_oldest_call(next)
                    .then(|| crate::script::oldest_call(w))
                    .flatten()?;
                w.session_owner.get(&sid).copied()
            }
            Action::Tick
            | Action::TickServer
            | Action::ReserveDrops { .. }
            | Action::ReserveCall { .. } => None,
        }
    }
}

/// Whether server script step `step` acts in the session of the oldest
/// pending call only (`progress`, `ask_client`, `close_connection`,
/// `end_session`).
pub fn on_the_oldest_call(step: ServerStep) -> bool {
    matches!(
        step,
        ServerStep::Progress
            | ServerStep::AskClient
            | ServerStep::CloseConnection
            | ServerStep::EndSession
    )
}

/// Whether exchange `ch` of `w` carries a `tools/call` not yet delivered
/// (read from its body: a method name only a call has, so a body that
/// merely quotes it errs on the side of a call).
pub(super) fn carries_a_call(w: &World, ch: mcp_streamable::ids::HttpId) -> bool {
    const CALL: &[u8] = b"\"tools/call\"";
    w.links.get(&ch).is_some_and(|l| {
        !l.client_gone
            && l.request
                .as_ref()
                .is_some_and(|(_, body)| body.windows(CALL.len()).any(|x| x == CALL))
    })
}

/// What decides which call the server script's next steps on the oldest
/// call act on, by client: whose call is the oldest pending, who has a
/// call pending, who may still bring one, whose enabled steps include a
/// call reaching the server.
///
/// Client `c`'s component may run alone ([`Self::alone`]) when no step
/// outside it can change what a step on the oldest call acts on in a way
/// that touches `c`: the call its enabled steps bring is not raced by
/// another client's (the first to arrive is the one acted on), and another
/// client's step cannot make that step act on `c`'s pending call (the
/// owner of the oldest call, answering it, would: so that owner runs
/// first, the step on its call with it).
struct CallOrder {
    oldest: Option<usize>,
    pending: Vec<bool>,
    callers: Vec<bool>,
    arriving: Vec<bool>,
}

impl CallOrder {
    /// Whether client `c`'s component may run alone (the type's docs).
    fn alone(&self, c: usize) -> bool {
        let raced = self.arriving[c]
            && self
                .callers
                .iter()
                .enumerate()
                .any(|(d, caller)| d != c && *caller);
        let retargeted = self.oldest.is_some_and(|o| o != c) && self.pending[c];
        !raced && !retargeted
    }
}
