//! [`FleetDriver`]: the loop every fleet embedding runs, written once.
//!
//! The fleet's counterpart of [`ServerDriver`](crate::server::ServerDriver):
//! an [`Instance`], its application and what is ready to write. A transport
//! gives it what happens (a request, an exchange the peer closed, what the
//! store sent back on either connection, the time) and moves what it has
//! ready: [`Write`]s to the wire, [`StoreOp`]s to the store. Every decision
//! stays in the instance and the endpoint within it:
//!
//! ```text
//!   handle_request / handle_http_closed / handle_reply / handle_push / handle_timeout
//!        │
//!        ▼   events → App (Cx: respond, notify, request, after)
//!   Instance ──transmits──► Wire ──► poll_write()
//!      │  ▲                   │
//!      │  └── an exchange the driver ended
//!      └──ops──► poll_op()   (to the store; replies and pushes come back as inputs)
//! ```
//!
//! The application's broadcasts reach every session of the fleet, each once
//! ([`crate::fleet::broadcast`]): the driver joins the fleet's broadcasts
//! and hands each broadcast to the instance, which claims each delivery in
//! the store.

use super::instance::Instance;
use super::{Push, StoreOp, StoreReply};
use crate::app::{App, Cx, Fanout};
use crate::ids::{HttpId, SessionId};
use crate::jsonrpc::RawJson;
use crate::principal::Caller;
use crate::server::driver::{dispatch, earliest, run_app, take_due, AppTimer, Parts};
use crate::server::scheduler::{earlier, Scheduler};
use crate::server::wire::{Wire, Write};
use crate::server::{RequestHead, UnreadBody};
use crate::time::Instant;
use std::collections::VecDeque as Fifo;
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Broadcasts an application turn made, for the instance.
#[derive(Default)]
struct Queued {
    made: Fifo<(String, Option<RawJson>)>,
    dropped: u64,
}

/// Broadcasts one application turn may queue; past it the oldest is
/// dropped (and counted in [`FleetDriver::broadcasts_dropped`]).
pub const BROADCASTS_QUEUED_MAX: usize = 1024;

impl Queued {
    fn push(&mut self, method: &str, params: Option<&RawJson>) {
        if self.made.len() >= BROADCASTS_QUEUED_MAX {
            self.made.pop_front();
            self.dropped += 1;
        }
        self.made.push_back((method.to_owned(), params.cloned()));
    }
}

/// An instance, its application, and what is ready to write and to send to
/// the store (see the module docs).
pub struct FleetDriver<A: App> {
    instance: Instance,
    app: A,
    timers: Vec<AppTimer>,
    /// Exchanges a request opened and no write has ended yet.
    open: BTreeSet<HttpId>,
    wire: Wire,
    writes: VecDeque<(HttpId, Write)>,
    /// The application's broadcasts, for the instance after its turn
    /// (at most `broadcasts_queued_max`; past it the oldest is dropped and
    /// counted).
    broadcasted: Arc<Mutex<Queued>>,
    fanout: Option<Fanout>,
    /// Takes the endpoint's scheduling points, for presets that have them,
    /// as [`ServerDriver`](crate::server::ServerDriver) does.
    scheduler: Scheduler,
}

impl<A: App> FleetDriver<A> {
    /// Drives `instance` for `app`.
    pub fn new(mut instance: Instance, app: A) -> Self {
        let _joined = instance.join_broadcasts();
        let _joined = instance.join_cancellations();
        let broadcasted = Arc::new(Mutex::new(Queued::default()));
        let queue = broadcasted.clone();
        let fanout: Fanout = Arc::new(move |method, params| {
            if let Ok(mut q) = queue.lock() {
                q.push(method, params);
            }
        });
        FleetDriver {
            instance,
            app,
            timers: Vec::new(),
            open: BTreeSet::new(),
            wire: Wire::new(),
            writes: VecDeque::new(),
            broadcasted,
            fanout: Some(fanout),
            scheduler: Scheduler::new(0),
        }
    }

    /// Seeds the choice among scheduling points (presets only; FIXED has
    /// none).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.scheduler = Scheduler::new(seed);
        self
    }

    /// Holds each scheduling point that leaves a window for `delay`
    /// ([`ServerDriver::with_step_delay`](crate::server::ServerDriver::with_step_delay)).
    pub fn with_step_delay(mut self, delay: Duration) -> Self {
        self.scheduler.set_step_delay(delay);
        self
    }

    // ----- getters -----

    /// The instance.
    pub fn instance(&self) -> &Instance {
        &self.instance
    }

    /// The application.
    pub fn app(&self) -> &A {
        &self.app
    }

    /// Broadcasts given up: queued past [`BROADCASTS_QUEUED_MAX`] in one
    /// turn, or deliveries past the instance's
    /// [`broadcasts_pending_max`](crate::fleet::instance::InstanceConfig::broadcasts_pending_max).
    pub fn broadcasts_dropped(&self) -> u64 {
        let queued = self.broadcasted.lock().map_or(0, |q| q.dropped);
        queued + self.instance.broadcasts_dropped()
    }

    /// Whether exchange `http` is still being answered.
    pub fn is_open(&self, http: HttpId) -> bool {
        self.open.contains(&http)
    }

    // ----- handle_* -----

    /// A request arrived: its head, and its body or why it could not be
    /// read. Returns the exchange its answer will be written on.
    pub fn handle_request(
        &mut self,
        head: &RequestHead,
        body: Result<&[u8], UnreadBody>,
        caller: &Caller,
        now: Instant,
    ) -> HttpId {
        let http = match body {
            Ok(b) => self.instance.handle_request(head, b, caller, now),
            Err(why) => self.instance.handle_unread_body(head, why, now),
        };
        // What it transmits waits in the instance until the pump.
        self.open.insert(http);
        self.pump(now);
        http
    }

    /// The peer closed exchange `http` (or the transport gave up on it).
    pub fn handle_http_closed(&mut self, http: HttpId, now: Instant) {
        self.open.remove(&http);
        self.instance.handle_http_closed(http, now);
        self.pump(now);
    }

    /// A reply on the store's command connection.
    pub fn handle_reply(&mut self, reply: StoreReply, now: Instant) {
        self.instance.handle_reply(reply, now);
        self.pump(now);
    }

    /// Something on the store's subscriber connection.
    pub fn handle_push(&mut self, push: Push, now: Instant) {
        self.instance.handle_push(push, now);
        self.pump(now);
    }

    /// Time passed: the instance's timers and the application's.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.instance.handle_timeout(now);
        for (_, session, token) in take_due(&mut self.timers, now) {
            self.run_app(session, now, |app, cx| app.on_timer(cx, token));
        }
        self.pump(now);
    }

    // ----- commands -----

    /// The applications' secret (the key of MRTR `requestState`): the same
    /// on every instance of a fleet, or a state sealed on one is refused on
    /// another.
    pub fn set_app_secret(&mut self, key: [u8; 32]) {
        self.instance.set_app_secret(key);
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
        let parts = self.parts(&session);
        run_app(parts, session, now, f);
    }

    /// What the application's turn on `session` borrows.
    fn parts(&mut self, session: &SessionId) -> Parts<'_, A> {
        Parts {
            ep: self.instance.endpoint_for_app(session),
            app: &mut self.app,
            timers: &mut self.timers,
            tap: &None,
            fanout: &self.fanout,
            fanout_only: true,
        }
    }

    // ----- poll_* -----

    /// The next write, in order.
    pub fn poll_write(&mut self) -> Option<(HttpId, Write)> {
        self.writes.pop_front()
    }

    /// The next op for the store; [`StoreOp::conn`] says which connection.
    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.instance.poll_op()
    }

    /// When the driver next needs [`handle_timeout`](Self::handle_timeout).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let core = earliest(self.instance.poll_timeout(), &self.timers);
        earlier(core, self.scheduler.poll_timeout())
    }

    // ----- the loop -----

    /// Events to the application, the instance settled, transmits to the
    /// wire, the exchanges the writes ended told to the instance; until
    /// nothing moves.
    fn pump(&mut self, now: Instant) {
        loop {
            let mut moved = false;
            while let Some((session, event)) = self.instance.poll_event() {
                moved = true;
                let parts = self.parts(&session);
                dispatch(parts, session, event, now);
            }
            let made = self
                .broadcasted
                .lock()
                .map(|mut q| std::mem::take(&mut q.made))
                .unwrap_or_default();
            for (method, params) in made {
                moved = true;
                self.instance.broadcast(&method, params, now);
            }
            self.instance.flush(now);
            while let Some(t) = self.instance.poll_transmit() {
                self.wire.push(&t);
            }
            while let Some((http, write)) = self.wire.poll_write() {
                if !self.open.contains(&http) {
                    continue;
                }
                if write.ends() {
                    // Over for the instance too, now: it may free the stream.
                    self.open.remove(&http);
                    self.instance.handle_http_closed(http, now);
                    moved = true;
                }
                self.writes.push_back((http, write));
            }
            if !moved && !self.schedule_one(now) {
                return;
            }
        }
    }

    /// Under a preset with scheduling points, one that changes something;
    /// under FIXED there are none.
    fn schedule_one(&mut self, now: Instant) -> bool {
        self.instance.endpoint().policy().has_scheduling_points()
            && self.scheduler.fire_one(&mut self.instance, now)
    }
}
