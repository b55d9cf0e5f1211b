//! A session's owner: its core and application (a [`ServerDriver`]), the
//! exchanges it writes to, and the turns that move them.
//!
//! ```text
//!   a request naming no live session                ┌──────── idle ────────┐
//!   ────────────────────────▶ inline turn ──idle──▶ parked in the table    │
//!                             (on the connection's   (no task, no channels) │
//!                              own task)              │ woken by a request  │
//!                                  │ something         ▼                    │
//!                                  │ outlives it ──▶ owner task ────────────┘
//!   session ended and nothing left to write: gone (from either)
//! ```
//!
//! A request that names no live session (an `initialize`, a modern
//! request, an unknown id) is served by a fresh one-session endpoint on the
//! connection task that read it: no task spawned, no channel crossed, the
//! answer ready when the turn ends; a session it opened is parked at once.
//! Only what outlives the request (a stream left open, an application
//! timer) gets a task of its own, which parks the session once it is idle. A parked session is
//! woken as a task (`Owner::spawn`), not inline: requests to a busy session
//! come in bursts that its task takes in one go, where an inline wake and
//! park per request cost 28% of the throughput at 32 connections
//! (`docs/performance.md`). Either way the session has one owner at a time:
//! the table holds `Running` with its inbox while anyone owns it, and an
//! owner parks only if that inbox is empty, closed in the same step
//! (`tests/loom_handoff.rs` explores both the task and the inline owner).

use super::body::ClosedTx;
use super::exchanges::{Exchanges, Reply, Written};
use super::server::{
    evict, Broadcast, Inbox, Parked, RequestForOwner, Shared, Slot, ToOwner, HTTP_IDS_PER_TASK,
};
use crate::app::{App, Fanout};
use crate::head::RequestHead;
use crate::ids::{HttpId, SessionId};
use crate::jsonrpc::RawJson;
use crate::server::wire::Write;
use crate::server::{ServerDriver, ServerEndpoint, SessionState, UnreadBody};
use crate::time::Instant;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, mpsc, oneshot};

/// The owner of one session's core and application (see the module docs).
pub(super) struct Owner<A: App> {
    driver: ServerDriver<A>,
    start: tokio::time::Instant,
    /// Other owners' broadcasts, for this owner's endpoint.
    broadcasts: broadcast::Receiver<Arc<Broadcast>>,
    /// This driver's origin in [`Broadcast::from`].
    origin: u64,
    exchanges: Exchanges,
    /// Bodies of this owner's exchanges report their end here.
    closed_rx: mpsc::UnboundedReceiver<HttpId>,
    /// The session this owner registered in the routing table.
    registered: Option<SessionId>,
    /// What the shared admission table last heard of the session.
    reported: Option<SessionState>,
    pub(super) inbox: Arc<Inbox>,
    shared: Arc<Shared<A>>,
}

/// What a turn leaves.
enum AfterTurn<A: App> {
    /// Something outlives the turn: the owner goes on (as a task).
    Goes(Owner<A>),
    /// Idle: parked in the routing table.
    Parked,
    /// No session and nothing left to write.
    Finished(Owner<A>),
}

impl<A: App> Owner<A> {
    /// The owner of a parked session woken up, or of a fresh one-session
    /// endpoint for a request that names no live session (the core decides
    /// whether it starts one). Counted live until it parks or ends.
    pub(super) fn new(shared: &Arc<Shared<A>>, parked: Option<Parked<A>>) -> Self {
        let inbox = Inbox::new(shared.options.requests_queued_max);
        let (closed_tx, closed_rx): (ClosedTx, _) = mpsc::unbounded_channel();
        let (driver, start, registered, broadcasts, origin) = match parked {
            Some(p) => (p.driver, p.start, Some(p.session), p.broadcasts, p.origin),
            None => {
                // A fresh endpoint draws its ids from its own fork of the source.
                let mut ids = match shared.ids.lock() {
                    Ok(mut parent) => parent.fork(),
                    Err(poisoned) => poisoned.into_inner().fork(),
                };
                let seed = ids.next_u64();
                let n = shared.tasks.fetch_add(1, Ordering::Relaxed) as u64 + 1;
                let mut config = shared.options.endpoint.clone();
                config.http_id_base = n * HTTP_IDS_PER_TASK;
                let mut ep = ServerEndpoint::with_ids(config, shared.options.policy, ids);
                if let Some(secret) = shared.options.app_secret {
                    ep.set_app_secret(secret);
                }
                // The application's broadcasts reach the other owners' endpoints.
                let to_others = shared.broadcasts.clone();
                let fanout: Fanout = Arc::new(move |method: &str, params: Option<&RawJson>| {
                    let _ = to_others.send(Arc::new(Broadcast {
                        from: n,
                        method: method.to_owned(),
                        params: params.cloned(),
                    }));
                });
                let driver = ServerDriver::new(ep, (shared.make_app)(), seed)
                    .with_tap(shared.tap.clone())
                    .with_fanout(Some(fanout));
                let broadcasts = shared.broadcasts.subscribe();
                (driver, shared.epoch, None, broadcasts, n)
            }
        };
        shared.live.0.fetch_add(1, Ordering::AcqRel);
        Owner {
            driver,
            start,
            broadcasts,
            origin,
            exchanges: Exchanges::new(
                closed_tx,
                shared.options.frames_queued_max,
                shared.options.frame_bytes_queued_max,
            ),
            closed_rx,
            reported: None,
            registered,
            inbox,
            shared: shared.clone(),
        }
    }

    /// Goes on as a task of its own; returns its inbox.
    pub(super) fn spawn(self) -> Arc<Inbox> {
        let inbox = self.inbox.clone();
        tokio::spawn(self.run());
        inbox
    }

    fn now(&self) -> Instant {
        super::clock::now(self.start)
    }

    /// One request served on the caller's task (see the module docs): a
    /// fresh endpoint's, for a request that names no live session. The
    /// answer goes out on the request's `reply` as soon as the core writes
    /// its head, in this turn or, if the owner goes on as a task, later.
    pub(super) fn serve_inline(mut self, request: RequestForOwner) {
        let RequestForOwner {
            head,
            body,
            peer,
            reply,
        } = request;
        self.on_request(head, body, peer, reply);
        match self.after_turn() {
            AfterTurn::Goes(me) => {
                me.spawn();
            }
            AfterTurn::Parked => {}
            AfterTurn::Finished(me) => me.end(false),
        }
    }

    /// Broadcasts that queued while the session was parked, and its expiry if due.
    fn catch_up(&mut self) {
        loop {
            match self.broadcasts.try_recv() {
                Ok(b) => self.on_broadcast(Ok(b)),
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    self.on_broadcast(Err(broadcast::error::RecvError::Lagged(n)))
                }
                Err(_) => break,
            }
        }
        if self.driver.poll_timeout().is_some_and(|t| t <= self.now()) {
            self.on_timeout();
        }
    }

    async fn run(mut self) {
        let mut shutdown = self.shared.shutdown.clone();
        let inbox = self.inbox.clone();
        // A woken session first catches up on what reached it while parked
        // (its expiry before any request it was woken for).
        let had_session = self.registered.is_some();
        self.catch_up();
        if had_session && self.finished() {
            return self.end(false);
        }
        loop {
            let next = self.driver.poll_timeout();
            let sleep = super::clock::sleep_until(self.start, next);
            tokio::select! {
                cmd = inbox.recv() => match cmd {
                    Some(ToOwner::Request(r)) => self.on_request(r.head, r.body, r.peer, r.reply),
                    Some(ToOwner::Evict(sid)) => {
                        let now = self.now();
                        self.driver.evict(&sid, now);
                    }
                    None => return self.end(false),
                },
                Some(http) = self.closed_rx.recv() => self.on_closed(http),
                b = self.broadcasts.recv() => self.on_broadcast(b),
                _ = sleep => self.on_timeout(),
                _ = shutdown.changed() => {
                    // Listens end with their `complete` result, not cut off.
                    let now = self.now();
                    self.driver.end_listens(now);
                    self.flush();
                    return self.end(true);
                }
            }
            match self.after_turn() {
                AfterTurn::Goes(me) => self = me,
                AfterTurn::Parked => return,
                AfterTurn::Finished(me) => return me.end(false),
            }
        }
    }

    /// After anything the owner handled: register a new session, write what
    /// is ready, report to admission; then end, park, or go on.
    fn after_turn(mut self) -> AfterTurn<A> {
        // Register a new session before its initialize answer goes out:
        // the client may send its next request the moment it has the id.
        self.register();
        self.flush();
        self.report_admission();
        if self.finished() {
            return AfterTurn::Finished(self);
        }
        if self.idle() {
            return match self.park() {
                None => AfterTurn::Parked,
                Some(me) => AfterTurn::Goes(me),
            };
        }
        AfterTurn::Goes(self)
    }

    /// The owner is done: requests that reached it after its session ended
    /// go to a fresh owner (404), none is dropped (unless the server is
    /// stopping).
    fn end(mut self, stopping: bool) {
        self.unregister();
        self.inbox.mail.close();
        while let Some(m) = self.inbox.mail.try_recv() {
            if !stopping {
                let _ = Owner::new(&self.shared, None).spawn().send(m);
            }
        }
        let (count, notify) = &*self.shared.live;
        count.fetch_sub(1, Ordering::AcqRel);
        notify.notify_waiters();
    }

    /// Once the core has minted this owner's session, requests naming it come here.
    fn register(&mut self) {
        if self.registered.is_some() {
            return;
        }
        // A modern request's own session is nobody's to name: not routed to,
        // not counted by admission.
        let Some(sid) = self.driver.endpoint().named_session_ids().next().cloned() else {
            return;
        };
        if let Ok(mut t) = self.shared.table.write() {
            t.insert(sid.clone(), Slot::Running(self.inbox.clone()));
        }
        self.registered = Some(sid);
    }

    fn unregister(&mut self) {
        if let Some(sid) = self.registered.take() {
            if let Ok(mut t) = self.shared.table.write() {
                t.remove(&sid);
                if let Ok(mut a) = self.shared.admission.lock() {
                    a.remove(&sid);
                }
            }
        }
    }

    /// Tells the shared admission table what changed of the session, as its
    /// core sees it (handshake, idleness, bytes kept): the same report the
    /// endpoint makes to its own table. Locks only when something changed.
    fn report_admission(&mut self) {
        let Some(sid) = &self.registered else {
            return;
        };
        let Some(state) = self
            .driver
            .endpoint()
            .session(sid)
            .map(|s| s.admission_state())
        else {
            return;
        };
        if self.reported == Some(state) {
            return;
        }
        if let Ok(mut a) = self.shared.admission.lock() {
            a.handle_session(sid, state);
        }
        self.reported = Some(state);
    }

    /// Nothing to do until a request arrives or the session's idle expiry:
    /// no open exchange, no application timer, no core deadline but that one.
    fn idle(&self) -> bool {
        self.registered.is_some()
            && self.exchanges.is_empty()
            && !self.driver.has_app_timers()
            && self.driver.endpoint().poll_timeout().is_none_or(|(_, t)| {
                matches!(
                    t,
                    crate::server::SessionTimer::Idle | crate::server::SessionTimer::Init
                )
            })
    }

    /// Parks the session in the routing table (`None`); gives itself back if
    /// a request arrived meanwhile.
    fn park(mut self) -> Option<Self> {
        let shared = self.shared.clone();
        let Ok(mut table) = shared.table.write() else {
            return Some(self);
        };
        if self.registered.is_none() {
            return Some(self);
        }
        // Closed only if nothing is queued, under the mailbox's own lock: a
        // request is either queued (the owner goes on and takes it) or refused
        // as closed, and its sender routes again and finds the parked slot
        // once the table is released. (Checking, then closing, lost requests
        // sent in between: tests/loom_handoff.rs.)
        if !self.inbox.mail.close_if_empty() {
            return Some(self);
        }
        let Some(session) = self.registered.take() else {
            return Some(self);
        };
        let deadline = self.driver.endpoint().poll_timeout().map(|(t, _)| t);
        table.insert(
            session.clone(),
            Slot::Parked(Mutex::new(Box::new(Parked {
                driver: self.driver,
                start: self.start,
                session,
                broadcasts: self.broadcasts,
                origin: self.origin,
                deadline: deadline
                    .map(|d| self.start + std::time::Duration::from_millis(d.as_millis())),
            }))),
        );
        drop(table);
        let (count, notify) = &*shared.live;
        count.fetch_sub(1, Ordering::AcqRel);
        notify.notify_waiters();
        None
    }

    /// No session (never started, or ended) and nothing left to write.
    fn finished(&mut self) -> bool {
        let no_session = self.driver.endpoint().session_ids().next().is_none();
        if no_session {
            self.unregister();
        }
        no_session && self.exchanges.is_empty()
    }

    fn on_request(
        &mut self,
        head: RequestHead,
        body: Result<Bytes, UnreadBody>,
        peer: Option<SocketAddr>,
        reply: oneshot::Sender<Reply>,
    ) {
        let now = self.now();
        let peer = peer.map(|p| p.ip());
        let _span = tracing::debug_span!("request", method = ?head.method).entered();
        let http = match &body {
            // An owner without a session may open one: the shared table admits it.
            Ok(b) if self.driver.endpoint().session_ids().next().is_none() => {
                let mut evicted = Vec::new();
                let http = match self.shared.admission.lock() {
                    Ok(mut a) => {
                        let http = self
                            .driver
                            .handle_request_admitting(&head, b, peer, &mut a, now);
                        evicted.extend(std::iter::from_fn(|| a.poll_evicted()));
                        http
                    }
                    Err(_) => self.driver.handle_request(&head, Ok(b), peer, now),
                };
                for victim in evicted {
                    evict(&self.shared, victim);
                }
                http
            }
            Ok(b) => self.driver.handle_request(&head, Ok(b), peer, now),
            Err(why) => self.driver.handle_request(&head, Err(*why), peer, now),
        };
        tracing::debug!(%http, "request handled");
        self.exchanges.awaiting(http, reply);
    }

    fn on_closed(&mut self, http: HttpId) {
        self.exchanges.remove(http);
        let now = self.now();
        self.driver.handle_http_closed(http, now);
    }

    fn on_broadcast(&mut self, b: Result<Arc<Broadcast>, broadcast::error::RecvError>) {
        match b {
            Ok(b) if b.from != self.origin => {
                let now = self.now();
                self.driver
                    .handle_broadcast(&b.method, b.params.clone(), now);
            }
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "a session owner fell behind on broadcasts");
            }
            // Never while `Shared` holds the sender.
            Err(broadcast::error::RecvError::Closed) => {}
        }
    }

    fn on_timeout(&mut self) {
        let now = self.now();
        self.driver.handle_timeout(now);
    }

    /// Moves every write the driver has ready to its exchange.
    fn flush(&mut self) {
        while let Some((http, write)) = self.driver.poll_write() {
            self.write(http, write);
        }
    }

    fn write(&mut self, http: HttpId, write: Write) {
        if self.exchanges.write(http, write) == Written::TooSlow {
            // Too slow (or gone): closed; the stream stays resumable.
            let now = self.now();
            self.driver.handle_http_closed(http, now);
        }
    }
}
