//! [`ServerDriver`]: the loop every server embedding runs, written once.
//!
//! A transport holds one driver per endpoint and gives it what happens:
//! a request (head and body bytes), an exchange the peer closed, the time.
//! After each input the driver runs the loop the core's contract asks for
//! (events to the application, transmits out, scheduling points for the
//! presets that have them, until the core is quiet), shows everything to
//! the observer (the monitor, when one watches), and queues [`Write`]s: bytes
//! ready for the wire, each saying whether the exchange is over. The driver
//! itself tells the core that an exchange it ended is over. A transport
//! only moves those bytes and time:
//!
//! ```text
//!   handle_request / handle_http_closed / handle_timeout / evict   (input, now)
//!        │
//!        ▼   events → App (Cx: respond, notify, request, after)
//!   ServerEndpoint ──transmits──► observer ──► Wire ──► poll_write()
//!        ▲                                               │
//!        └────────── an exchange the driver ended ◄──────┘
//! ```

use super::scheduler::{earlier, Scheduler};
use super::wire::{Wire, Write};
use super::{BroadcastOrigin, RequestHead, ServerEndpoint, ServerEvent, ServerOutput, UnreadBody};
use crate::app::{App, Cx, Fanout, Tap};
use crate::ids::{HttpId, SessionId};
use crate::jsonrpc::RawJson;
use crate::observe::Observation;
use crate::principal::Caller;
use crate::release::Release;
use crate::server::Admission;
use crate::time::Instant;
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An application timer: when, for which session, and the token to hand back.
pub type AppTimer = (Instant, SessionId, u64);

/// An endpoint, its application, and what is ready to write (see the module docs).
pub struct ServerDriver<A: App> {
    ep: ServerEndpoint,
    app: A,
    timers: Vec<AppTimer>,
    /// Exchanges a request opened and no write has ended yet.
    open: BTreeSet<HttpId>,
    wire: Wire,
    writes: VecDeque<(HttpId, Write)>,
    /// Takes the core's scheduling points, for presets that have them
    /// (mcp-go's competing listeners; a step a preset split in two).
    scheduler: Scheduler,
    tap: Option<Arc<Mutex<Tap>>>,
    fanout: Option<Fanout>,
}

impl<A: App> ServerDriver<A> {
    /// Drives `ep` for `app`; `seed` seeds the choice among scheduling
    /// points (presets only; FIXED has none).
    pub fn new(ep: ServerEndpoint, app: A, seed: u64) -> Self {
        ServerDriver {
            ep,
            app,
            timers: Vec::new(),
            open: BTreeSet::new(),
            wire: Wire::new(),
            writes: VecDeque::new(),
            scheduler: Scheduler::new(seed),
            tap: None,
            fanout: None,
        }
    }

    /// Holds each scheduling point that leaves a window
    /// ([`SchedulingPoint::leaves_a_window`](crate::preset::SchedulingPoint::leaves_a_window)) for `delay` after it is
    /// enabled, as a slow scheduler would, instead of taking it in the same
    /// turn: requests, broadcasts and closes that arrive meanwhile land in
    /// the preset's window, so a prober over the wire sees what the
    /// checker explores (`serve --preset` uses it). Competing points are
    /// still taken at once. Nothing changes under FIXED, which has no
    /// scheduling points.
    pub fn with_step_delay(mut self, delay: Duration) -> Self {
        self.scheduler.set_step_delay(delay);
        self
    }

    /// Sends the application's broadcasts to `fanout` too (a transport
    /// with an endpoint per session delivers them to the others).
    pub fn with_fanout(mut self, fanout: Option<Fanout>) -> Self {
        self.fanout = fanout;
        self
    }

    /// Shows every request, transmit, drop, close and send to `tap`.
    pub fn with_tap(mut self, tap: Option<Arc<Mutex<Tap>>>) -> Self {
        self.tap = tap;
        self
    }

    // ----- getters -----

    /// The endpoint.
    pub fn endpoint(&self) -> &ServerEndpoint {
        &self.ep
    }

    /// The application.
    pub fn app(&self) -> &A {
        &self.app
    }

    /// Whether exchange `http` is still being answered.
    pub fn is_open(&self, http: HttpId) -> bool {
        self.open.contains(&http)
    }

    /// Whether any exchange is still being answered.
    pub fn has_open_exchanges(&self) -> bool {
        !self.open.is_empty()
    }

    /// Whether the application has a timer set.
    pub fn has_app_timers(&self) -> bool {
        !self.timers.is_empty()
    }

    /// Whether a scheduling point is held back for later
    /// ([`with_step_delay`](Self::with_step_delay)): the driver has work
    /// of its own due at [`poll_timeout`](Self::poll_timeout).
    pub fn has_held_steps(&self) -> bool {
        self.scheduler.has_held()
    }

    // ----- handle_* -----

    /// A request arrived: its head, and its body or why it could not be read.
    /// Returns the exchange its answer will be written on.
    pub fn handle_request(
        &mut self,
        head: &RequestHead,
        body: Result<&[u8], UnreadBody>,
        caller: &Caller,
        now: Instant,
    ) -> HttpId {
        let d = match body {
            Ok(b) => self.ep.handle_request_from(head, b, caller, now),
            Err(why) => self.ep.handle_unread_body(head, why, now),
        };
        self.opened(d.http, head, body.unwrap_or_default(), caller, now)
    }

    /// A request that may open a session, admitted by a table shared with
    /// other endpoints (a shell with one endpoint per session); the sessions
    /// it evicts to make room are in [`Admission::poll_evicted`].
    pub fn handle_request_admitting(
        &mut self,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        admission: &mut Admission,
        now: Instant,
    ) -> HttpId {
        let d = self
            .ep
            .handle_request_admitting(head, body, caller, admission, now);
        self.opened(d.http, head, body, caller, now)
    }

    fn opened(
        &mut self,
        http: HttpId,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> HttpId {
        // Built only for a tap: it copies the request's head and body.
        if self.tap.is_some() {
            let o = Observation::request(http, head, body).by(caller.principal.clone());
            self.observe(&o);
        }
        self.open.insert(http);
        self.pump(now);
        http
    }

    /// The peer closed exchange `http` (or the transport gave up on it: a
    /// slow reader); its stream stays resumable where the policy says so.
    pub fn handle_http_closed(&mut self, http: HttpId, now: Instant) {
        if self.open.remove(&http) {
            self.observe(&Observation::Closed { http });
        }
        self.ep.handle_http_closed(http, now);
        self.pump(now);
    }

    /// Time passed: the core's timers and the application's.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.ep.handle_timeout(now);
        for (_, session, token) in take_due(&mut self.timers, now) {
            self.run_app(session, now, |app, cx| app.on_timer(cx, token));
        }
        self.pump(now);
    }

    // ----- commands -----

    /// Ends `session`, evicted by an admission table to make room.
    pub fn evict(&mut self, session: &SessionId, now: Instant) {
        self.ep.evict(session, now);
        self.pump(now);
    }

    /// A notification for every client it concerns, in either era
    /// ([`ServerEndpoint::broadcast`]), from outside any request: the
    /// broadcast originates here, and the tap sees it. Returns how many got it.
    pub fn broadcast(&mut self, method: &str, params: Option<RawJson>, now: Instant) -> usize {
        self.broadcast_from(BroadcastOrigin::Here, method, params, now)
    }

    /// A broadcast that originated in another endpoint (a transport's
    /// [`Fanout`]), delivered here too; the tap saw it
    /// where it originated. Returns how many got it here.
    pub fn handle_broadcast(
        &mut self,
        method: &str,
        params: Option<RawJson>,
        now: Instant,
    ) -> usize {
        self.broadcast_from(BroadcastOrigin::Elsewhere, method, params, now)
    }

    fn broadcast_from(
        &mut self,
        origin: BroadcastOrigin,
        method: &str,
        params: Option<RawJson>,
        now: Instant,
    ) -> usize {
        let tap = &self.tap;
        let sent = self
            .ep
            .broadcast_observed(method, params, now, origin, &mut |o| observe(tap, o));
        self.pump(now);
        sent
    }

    /// Ends every 2026-07-28 listen gracefully (before a shutdown).
    pub fn end_listens(&mut self, now: Instant) {
        self.ep.end_listens(now);
        self.pump(now);
    }

    /// Runs `f` with the application and a [`Cx`] for `session` (to notify
    /// from outside a callback), then the loop.
    pub fn with_app(
        &mut self,
        session: SessionId,
        now: Instant,
        f: impl FnOnce(&mut A, &mut Cx<'_>),
    ) {
        self.run_app(session, now, f);
        self.pump(now);
    }

    fn run_app(&mut self, session: SessionId, now: Instant, f: impl FnOnce(&mut A, &mut Cx<'_>)) {
        let parts = Parts {
            ep: &mut self.ep,
            app: &mut self.app,
            timers: &mut self.timers,
            tap: &self.tap,
            fanout: &self.fanout,
            fanout_only: false,
        };
        run_app(parts, session, now, f);
    }

    /// Gives back the memory of emptied maps and queues, the endpoint's
    /// too ([`ServerEndpoint::release_if_idle`]): for a shell parking an
    /// idle session's driver. Not for a hot path (the next request
    /// allocates them again).
    pub fn release_if_idle(&mut self) {
        self.ep.release_if_idle();
        self.open.release_if_empty();
        self.writes.release_if_empty();
        self.timers.release_if_empty();
        self.wire.release_if_idle();
    }

    // ----- poll_* -----

    /// The next write, in order (exchanges never interleave within one write).
    pub fn poll_write(&mut self) -> Option<(HttpId, Write)> {
        self.writes.pop_front()
    }

    /// When the driver next needs [`handle_timeout`](Self::handle_timeout).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let core = earliest(self.ep.poll_timeout().map(|(t, _)| t), &self.timers);
        earlier(core, self.scheduler.poll_timeout())
    }

    // ----- the loop -----

    /// Drains until the core is quiet, then fires one scheduling point and
    /// starts over, until none fires.
    fn pump(&mut self, now: Instant) {
        loop {
            self.drain(now);
            if !self.schedule_one(now) {
                return;
            }
        }
    }

    /// Under a preset with scheduling points, one that changes something
    /// ([`Scheduler::fire_one`]); under FIXED there are none.
    fn schedule_one(&mut self, now: Instant) -> bool {
        self.ep.policy().has_scheduling_points() && self.scheduler.fire_one(&mut self.ep, now)
    }

    /// The observed drain ([`ServerEndpoint::drain_observed`]): events to
    /// the application, transmits to the wire; then the writes it made, and
    /// the exchanges they ended told to the core (which may free a stream
    /// and say more), until nothing is left.
    fn drain(&mut self, now: Instant) {
        let ServerDriver {
            ep,
            app,
            timers,
            open,
            wire,
            writes,
            tap,
            fanout,
            ..
        } = self;
        loop {
            ep.drain_observed(&mut |o| observe(tap, o), |ep, out, _| match out {
                ServerOutput::Event(session, event) => {
                    let parts = Parts {
                        ep,
                        app: &mut *app,
                        timers: &mut *timers,
                        tap,
                        fanout,
                        fanout_only: false,
                    };
                    dispatch(parts, session, event, now)
                }
                ServerOutput::Transmit(t) => wire.push(&t),
            });
            let mut ended = false;
            while let Some((http, write)) = wire.poll_write() {
                if !open.contains(&http) {
                    continue;
                }
                if write.ends() {
                    // Over for the core too, now: it may free the stream.
                    open.remove(&http);
                    ep.handle_http_closed(http, now);
                    ended = true;
                }
                writes.push_back((http, write));
            }
            if !ended {
                return;
            }
        }
    }

    fn observe(&self, o: &Observation) {
        observe(&self.tap, o);
    }
}

/// The application's timers due at `now`, taken out.
pub(crate) fn take_due(timers: &mut Vec<AppTimer>, now: Instant) -> Vec<AppTimer> {
    let (due, rest): (Vec<_>, Vec<_>) = timers.drain(..).partition(|(t, _, _)| *t <= now);
    *timers = rest;
    due
}

/// The earlier of the core's deadline and the application's timers.
pub(crate) fn earliest(core: Option<Instant>, timers: &[AppTimer]) -> Option<Instant> {
    earlier(core, timers.iter().map(|(t, _, _)| *t).min())
}

/// What the application's turn borrows of the driver (or of the fleet's).
pub(crate) struct Parts<'a, A> {
    pub(crate) ep: &'a mut ServerEndpoint,
    pub(crate) app: &'a mut A,
    pub(crate) timers: &'a mut Vec<AppTimer>,
    pub(crate) tap: &'a Option<Arc<Mutex<Tap>>>,
    pub(crate) fanout: &'a Option<Fanout>,
    /// The fan-out reaches this endpoint's sessions too (a fleet's
    /// instance, which claims each delivery in the store): the broadcast
    /// goes to it alone.
    pub(crate) fanout_only: bool,
}

/// The application's turn: `f` with a [`Cx`] for `session`.
pub(crate) fn run_app<A: App>(
    parts: Parts<'_, A>,
    session: SessionId,
    now: Instant,
    f: impl FnOnce(&mut A, &mut Cx<'_>),
) {
    let mut cx = Cx {
        ep: parts.ep,
        session,
        now,
        timers: parts.timers,
        tap: parts.tap.clone(),
        fanout: parts.fanout.clone(),
        fanout_only: parts.fanout_only,
    };
    f(parts.app, &mut cx);
}

/// An event for the application (what the core did with messages on its
/// own, dropped or sent, was already observed: `observe_own`).
pub(crate) fn dispatch<A: App>(
    parts: Parts<'_, A>,
    session: SessionId,
    event: ServerEvent,
    now: Instant,
) {
    match event {
        ServerEvent::Dropped { .. } | ServerEvent::Withdrawn { .. } => {}
        ServerEvent::SessionEnded { .. } => {
            parts.app.on_session_ended(&session);
            parts.timers.retain(|(_, s, _)| *s != session);
        }
        ServerEvent::Request { id, method, params } => run_app(parts, session, now, |app, cx| {
            app.on_request(cx, id, &method, params)
        }),
        ServerEvent::Notification { method, params } => run_app(parts, session, now, |app, cx| {
            app.on_notification(cx, &method, params)
        }),
        ServerEvent::Response { id, result } => run_app(parts, session, now, |app, cx| {
            app.on_response(cx, id, result)
        }),
    }
}

fn observe(tap: &Option<Arc<Mutex<Tap>>>, o: &Observation) {
    if let Some(mut tap) = tap.as_ref().and_then(|t| t.lock().ok()) {
        tap(o);
    }
}
