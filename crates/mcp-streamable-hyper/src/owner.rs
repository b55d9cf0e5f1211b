//! A session's owner: its core and application (a [`ServerDriver`]), the
//! exchanges it writes to, and the turns that move them.
//!
//! ```text
//!   a request naming no live session,            ┌──────── idle ──────────┐
//!   or its parked session                        ▼                        │
//!   ───────────────────────▶ inline turn ──idle──▶ parked in its slot     │
//!                            (on the connection's  (the owner boxed whole,│
//!                             own task)             no task)              │
//!                                 │ something        │ woken by a request │
//!                                 │ outlives it      ▼ (inline again)     │
//!                                 └─────────────▶ owner task ─────────────┘
//!   session ended and nothing left to write: gone (from either)
//! ```
//!
//! Every request whose session has no running owner is served on the
//! connection task that read it: by a fresh one-session endpoint when it
//! names no live session (an `initialize`, a 2026-07-28 request, an unknown id),
//! else by its parked owner, taken out of its slot. No task is spawned and
//! no channel crossed; the answer is ready when the turn ends, and the owner
//! parks again at once. Waking and parking move one box and flip the slot
//! under its lock: the owner keeps its inbox (closed while parked, reopened
//! by whoever wakes it) and its channels. (When a wake built a fresh inbox,
//! channel and owner each time, serving parked sessions inline cost 28% of
//! the throughput at 32 connections, and sessions were woken as tasks:
//! `docs/performance.md`.) Requests that queue while an inline owner works
//! (other workers' connections) are taken by it, a few, then by a task.
//! Only what outlives the request (a stream left open, an application
//! timer) gets a task of its own, which parks the session once it is idle.
//! Either way the session has one owner at a time: the slot holds `Running`
//! with its inbox while anyone owns it, and an owner parks only if that
//! inbox is empty, closed in the same step (`tests/loom_handoff.rs`
//! explores the task, the inline owner, and the reopened inbox).

use super::exchanges::{ConnCut, Exchanges, Reply};
use super::server::{Inbox, Live, RequestForOwner, ToOwner};
use super::shared::{Broadcast, NewDriver, Shared, SlotState};
use bytes::Bytes;
use mcp_streamable::app::App;
use mcp_streamable::head::RequestHead;
use mcp_streamable::ids::{HttpId, SessionId};
use mcp_streamable::principal::{Caller, Principal};
use mcp_streamable::server::wire::Write;
use mcp_streamable::server::{ServerDriver, SessionState, UnreadBody};
use mcp_streamable::time::Instant;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use tokio::sync::{broadcast, oneshot};

/// The owner of one session's core and application (see the module docs).
pub(super) struct Owner<A: App> {
    driver: ServerDriver<A>,
    /// Other owners' broadcasts, for this owner's endpoint.
    broadcasts: broadcast::Receiver<Arc<Broadcast>>,
    /// This driver's origin in [`Broadcast::from`].
    origin: u64,
    exchanges: Exchanges,
    /// The session this owner registered in the routing table.
    registered: Option<SessionId>,
    /// The connection the last request came on (the peer's address and
    /// port): a woken session whose next request comes on the same one is
    /// used one request at a time ([`Owner::serves_inline`]).
    last_peer: Option<SocketAddr>,
    /// What the shared admission table last heard of the session.
    reported: Option<SessionState>,
    inbox: Arc<Inbox>,
    /// Weak: a parked owner sits in the table, which the shared state holds.
    shared: Weak<Shared<A>>,
    /// How many owners are live, and the clock's epoch (see [`Live`]).
    live: Arc<Live>,
}

/// Requests a woken inline owner takes from its inbox (queued by other
/// workers' connections while it served) before a task takes the rest: its
/// own connection waits for its answer meanwhile.
const INLINE_REQUESTS_MAX: usize = 8;

/// What a turn leaves.
enum AfterTurn<A: App> {
    /// Something outlives the turn, or requests queued: the owner goes on.
    Goes(Box<Owner<A>>),
    /// Idle: parked in its slot.
    Parked,
    /// No session and nothing left to write.
    Finished(Box<Owner<A>>),
}

impl<A: App> Owner<A> {
    /// The owner of a fresh one-session endpoint, for a request that names
    /// no live session (the core decides whether it starts one). Counted
    /// live until it parks or ends.
    pub(super) fn fresh(shared: &Arc<Shared<A>>) -> Box<Self> {
        let inbox = Inbox::new(shared.options().requests_queued_max);
        let NewDriver {
            driver,
            broadcasts,
            origin,
        } = shared.new_driver();
        shared.live().count.fetch_add(1, Ordering::AcqRel);
        Box::new(Owner {
            driver,
            broadcasts,
            origin,
            exchanges: Exchanges::new(shared.options().queue_bounds()),
            reported: None,
            registered: None,
            last_peer: None,
            inbox,
            shared: Arc::downgrade(shared),
            live: shared.live().clone(),
        })
    }

    /// Where requests for this owner's session go.
    pub(super) fn inbox(&self) -> &Arc<Inbox> {
        &self.inbox
    }

    /// A parked owner taken out of its slot by a request (or the sweeper),
    /// under the slot's lock: its inbox open again, counted live.
    pub(super) fn woken(self: Box<Self>) -> Box<Self> {
        self.inbox.mail.reopen();
        self.live.count.fetch_add(1, Ordering::AcqRel);
        self
    }

    /// A parked owner whose session admission evicted: its core ends the
    /// session (nothing is open, nothing to write), and it is dropped.
    pub(super) fn evicted(&mut self, victim: &SessionId) {
        let now = self.now();
        self.driver.evict(victim, now);
    }

    /// Whether a woken session serves a request that came on `peer` inline
    /// or as a task: inline when it came on the connection the last one came
    /// on, a client using the session one request at a time, where a task
    /// would add a hop and two wake-ups per request. Requests arriving on
    /// other connections mean several are in use at once, and a task then
    /// takes the burst of them in one go: running the core for each
    /// request between hyper's turns for the others cost 33% more CPU per
    /// request at 32 connections (the instruction cache, `docs/performance.md`).
    pub(super) fn serves_inline(&self, peer: Option<SocketAddr>) -> bool {
        peer.is_some() && peer == self.last_peer
    }

    /// The state every owner shares, unless the server has gone.
    fn shared(&self) -> Option<Arc<Shared<A>>> {
        self.shared.upgrade()
    }

    /// Goes on as a task of its own; returns its inbox.
    pub(super) fn spawn(self: Box<Self>) -> Arc<Inbox> {
        let inbox = self.inbox.clone();
        tokio::spawn(self.run());
        inbox
    }

    fn now(&self) -> Instant {
        super::clock::now(self.live.epoch)
    }

    /// One request served on the caller's task (see the module docs), by a
    /// fresh endpoint or a woken one; then what queued meanwhile, a few. The
    /// answer goes out on the request's `reply` as soon as the core writes
    /// its head, in this turn or, if the owner goes on as a task, later.
    pub(super) fn serve_inline(mut self: Box<Self>, request: RequestForOwner) {
        // A woken session first catches up on what reached it while parked
        // (its expiry before the request it was woken for).
        let had_session = self.registered.is_some();
        self.catch_up();
        if had_session && self.finished() {
            let shared = self.shared();
            self.end(false);
            if let Some(shared) = shared {
                Owner::fresh(&shared).serve_inline(request);
            }
            return;
        }
        self.on_message(ToOwner::Request(Box::new(request)));
        let mut served = 1;
        loop {
            match self.after_turn() {
                AfterTurn::Parked => return,
                AfterTurn::Finished(mut me) => return me.end(false),
                AfterTurn::Goes(mut me) => {
                    if served < INLINE_REQUESTS_MAX {
                        if let Some(m) = me.inbox.mail.try_recv() {
                            me.on_message(m);
                            served += 1;
                            self = me;
                            continue;
                        }
                    }
                    me.spawn();
                    return;
                }
            }
        }
    }

    /// A request, or the order to end a session evicted to make room.
    fn on_message(&mut self, m: ToOwner) {
        match m {
            ToOwner::Request(r) => {
                let RequestForOwner {
                    head,
                    body,
                    peer,
                    principal,
                    cut,
                    reply,
                } = *r;
                self.on_request(head, body, (peer, principal), cut, reply);
            }
            ToOwner::Evict(sid) => {
                let now = self.now();
                self.driver.evict(&sid, now);
            }
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

    async fn run(mut self: Box<Self>) {
        let Some(mut shutdown) = self.shared().map(|s| s.shutdown()) else {
            return self.end(true);
        };
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
            let sleep = super::clock::sleep_until(self.live.epoch, next);
            tokio::select! {
                cmd = inbox.recv() => match cmd {
                    Some(m) => self.on_message(m),
                    None => return self.end(false),
                },
                http = self.exchanges.next_closed() => self.on_closed(http),
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
                AfterTurn::Finished(mut me) => return me.end(false),
            }
        }
    }

    /// After anything the owner handled: register a new session, write what
    /// is ready, report to admission; then end, park, or go on.
    fn after_turn(mut self: Box<Self>) -> AfterTurn<A> {
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
    fn end(&mut self, stopping: bool) {
        self.unregister();
        self.inbox.mail.close();
        if let Some(shared) = self.shared() {
            while let Some(m) = self.inbox.mail.try_recv() {
                if !stopping {
                    let _ = Owner::fresh(&shared).spawn().send(m);
                }
            }
        }
        not_live(&self.live);
    }

    /// Once the core has minted this owner's session, requests naming it come here.
    fn register(&mut self) {
        if self.registered.is_some() {
            return;
        }
        // A 2026-07-28 request's own session is nobody's to name: not routed to,
        // not counted by admission; but the one a shared transport keeps
        // (a preset's) is where every stateless request goes.
        let endpoint = self.driver.endpoint();
        let stateless = endpoint.shared_stateless_session().cloned();
        let Some(sid) = endpoint
            .named_session_ids()
            .next()
            .cloned()
            .or(stateless.clone())
        else {
            return;
        };
        if let Some(shared) = self.shared() {
            shared.register(&sid, self.inbox.clone(), stateless.as_ref() == Some(&sid));
        }
        self.registered = Some(sid);
    }

    fn unregister(&mut self) {
        let Some(shared) = self.shared() else {
            return;
        };
        if let Some(sid) = self.registered.take() {
            shared.unregister(&sid);
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
        if let Some(shared) = self.shared() {
            shared.report(sid, state);
        }
        self.reported = Some(state);
    }

    /// Nothing to do until a request arrives or the session's idle expiry:
    /// no open exchange, no application timer, no core deadline but that one.
    fn idle(&self) -> bool {
        self.registered.is_some()
            && self.exchanges.is_empty()
            && !self.driver.has_app_timers()
            && !self.driver.has_held_steps()
            && self.driver.endpoint().poll_timeout().is_none_or(|(_, t)| {
                matches!(
                    t,
                    mcp_streamable::server::SessionTimer::Idle
                        | mcp_streamable::server::SessionTimer::Init
                )
            })
    }

    /// Parks the session in its slot (`None`); gives itself back if a
    /// request queued meanwhile (or the session is not in the table).
    fn park(mut self: Box<Self>) -> Option<Box<Self>> {
        let Some(shared) = self.shared() else {
            return Some(self);
        };
        let Some(session) = self.registered.clone() else {
            return Some(self);
        };
        let Some(slot) = shared.slot(&session) else {
            return Some(self);
        };
        let deadline = self
            .driver
            .endpoint()
            .poll_timeout()
            .map(|(t, _)| self.live.epoch + std::time::Duration::from_millis(t.as_millis()));
        // Closed only if nothing is queued, under the mailbox's own lock and
        // the slot's: a request is either queued (the owner goes on and takes
        // it) or refused as closed, and its sender routes again and finds the
        // parked slot. (Checking, then closing, lost requests sent in
        // between: tests/loom_handoff.rs.)
        let parked = slot.with(|state| {
            if !self.inbox.mail.close_if_empty() {
                return Some(self);
            }
            self.exchanges.release();
            self.driver.release_if_idle();
            *state = SlotState::Parked(self, deadline);
            None
        });
        if parked.is_none() {
            not_live(shared.live());
        }
        parked
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
        (peer, principal): (Option<SocketAddr>, Option<Principal>),
        cut: Option<ConnCut>,
        reply: oneshot::Sender<Reply>,
    ) {
        let now = self.now();
        self.last_peer = peer;
        let caller = Caller::from_peer(peer.map(|p| p.ip())).with_principal(principal);
        let _span = tracing::debug_span!("request", method = ?head.method).entered();
        let http = match &body {
            // An owner without a session may open one: the shared table admits it.
            Ok(b) if self.driver.endpoint().session_ids().next().is_none() => {
                let mut evicted = Vec::new();
                let shared = self.shared();
                let driver = &mut self.driver;
                let admitted = shared.as_ref().and_then(|s| {
                    s.admitting(|a| {
                        let http = driver.handle_request_admitting(&head, b, &caller, a, now);
                        evicted.extend(std::iter::from_fn(|| a.poll_evicted()));
                        http
                    })
                });
                let http = match admitted {
                    Some(http) => http,
                    None => self.driver.handle_request(&head, Ok(b), &caller, now),
                };
                // The admission guard is gone by now (lock order: table first).
                if let Some(shared) = &shared {
                    for victim in evicted {
                        shared.evict(victim);
                    }
                }
                http
            }
            Ok(b) => self.driver.handle_request(&head, Ok(b), &caller, now),
            Err(why) => self.driver.handle_request(&head, Err(*why), &caller, now),
        };
        tracing::debug!(%http, "request handled");
        // One session's owner: all its exchanges are one session's.
        self.exchanges.awaiting(http, None, reply, cut);
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
        let mut cut_off = Vec::new();
        self.exchanges.write(http, write, &mut cut_off);
        // Too slow, gone, or the furthest behind past the session's budget:
        // closed; each stream stays resumable.
        let now = self.now();
        for http in cut_off {
            self.driver.handle_http_closed(http, now);
        }
    }
}

/// An owner stopped being live (parked or ended): wakes a shutdown waiting
/// for the last one.
fn not_live(live: &Live) {
    let (count, notify) = (&live.count, &live.notify);
    if count.fetch_sub(1, Ordering::AcqRel) == 1 {
        notify.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EverythingApp;
    use crate::{Server, ServerOptions};

    /// A shutdown race once seen in a real run, made deterministic: an owner whose
    /// shared state is gone (the server dropped its last strong reference
    /// while the owner still ran a stream) must still count itself out, or
    /// `ServerHandle::shutdown` waits forever. With the count reached only
    /// through the weak shared state, this hangs.
    #[tokio::test]
    async fn an_owner_that_outlives_the_shared_state_still_counts_itself_out() {
        let (service, handle) =
            Server::start(ServerOptions::default(), EverythingApp::default, None);
        let mut owner = Owner::fresh(&service.shared);
        assert_eq!(handle.live.count.load(Ordering::Acquire), 1);
        // The sweeper holds the shared state until it sees the shutdown.
        let _ = handle.shutdown.send(true);
        tokio::task::yield_now().await;
        let weak = Arc::downgrade(&service.shared);
        drop(service);
        for _ in 0..100 {
            if weak.strong_count() == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(weak.strong_count(), 0, "only the owner is left");
        assert!(owner.shared().is_none());
        owner.end(true);
        assert_eq!(handle.live.count.load(Ordering::Acquire), 0);
        tokio::time::timeout(std::time::Duration::from_secs(5), handle.shutdown())
            .await
            .expect("the shutdown sees no live owner");
    }
}
