//! [`Fleet`]: instances of one fleet ([`Instance`]) sharing a
//! [`MemoryStore`], as a world's server side ([`Servers`]).
//!
//! The instances reach the store through [`StoreLinks`], as in the relay
//! model of the fleet checker: the caller chooses which connection's head op
//! the store executes next ([`Fleet::execute`]) and which instance takes the
//! head of which incoming queue ([`Fleet::receive`]), unless [`StoreTiming`]
//! serves a connection at once. An instance that dies ([`Fleet::kill`]) loses its state,
//! what it had not sent the store yet and what the store had not delivered
//! to it; the store keeps what it has (its heartbeat then runs out).

use super::servers::{
    awaited_in, awaits_in, queued_in, OutputHandler, Servers, SERVER_HTTP_STRIDE,
};
use super::store_links::{ConnKey, StoreLinks};
use super::world::World;
use crate::monitor::Observation;
use mcp_streamable::fleet::instance::Instance;
use mcp_streamable::fleet::record::decode_message;
use mcp_streamable::fleet::store::{MemoryStore, Output};
use mcp_streamable::fleet::{Conn, Record};
use mcp_streamable::ids::{HttpId, MsgKey, RequestId, SessionId};
use mcp_streamable::principal::Caller;
use mcp_streamable::server::{observe_own, RequestHead, ServerOutput, ServerSession, Transmit};
use mcp_streamable::shared::Shared;
use mcp_streamable::time::Instant;

/// Instances sharing a store, and the connections between them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fleet {
    /// The instances, by id; `None` once dead.
    instances: Vec<Option<Shared<Instance>>>,
    /// The store.
    store: Shared<MemoryStore>,
    /// The connections between the instances and the store.
    links: StoreLinks,
    /// Which connections the store serves at once.
    timing: StoreTiming,
}

/// Which of the store's connections are served at once (the op executed
/// as the instance sends it, the reply or push taken as the store sends
/// it) rather than queued for the caller to order. Fewer orders, for
/// models whose store interleavings the relay and sessions models explore
/// in full.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum StoreTiming {
    /// Every op, reply and push waits in its connection's queue.
    #[default]
    Queued,
    /// The command connection is served at once; the subscriber
    /// connection's ops and pushes wait.
    CommandsAtOnce,
    /// Both connections are served at once: the store is a shared memory.
    AtOnce,
}

impl StoreTiming {
    fn at_once(self, conn: Conn) -> bool {
        match self {
            StoreTiming::Queued => false,
            StoreTiming::CommandsAtOnce => conn == Conn::Command,
            StoreTiming::AtOnce => true,
        }
    }
}

impl Fleet {
    /// A fleet of these instances (instance `i` at index `i`) on `store`.
    pub fn new(instances: Vec<Instance>, store: MemoryStore) -> Self {
        Fleet {
            instances: instances
                .into_iter()
                .map(|i| Some(Shared::new(i)))
                .collect(),
            store: Shared::new(store),
            links: StoreLinks::default(),
            timing: StoreTiming::Queued,
        }
    }

    /// The same fleet, its store served with `timing`.
    pub fn with_timing(mut self, timing: StoreTiming) -> Self {
        self.timing = timing;
        self
    }

    /// The same fleet once the store has served every op its instances
    /// sent so far, at `now`, and they took every answer: the channels
    /// they joined on creation (broadcasts, cancellations) are in effect,
    /// as a balancer sends requests only to an instance whose readiness
    /// says so ([`Instance::is_ready`]). A run then starts from instances
    /// that serve, not from every order of their subscriptions.
    pub fn ready(mut self, now: Instant) -> Self {
        loop {
            let sent = (0..self.instances.len()).fold(false, |any, i| self.send_ops(i) | any);
            if !self.serve_where(now, |_| true) && !sent {
                return self;
            }
        }
    }

    /// The same fleet, `f` run on each live instance (joining a channel
    /// after [`Self::ready`], so that the run explores when it takes effect).
    pub fn with_each(mut self, mut f: impl FnMut(&mut Instance)) -> Self {
        for inst in self.instances.iter_mut().flatten() {
            f(inst);
        }
        self
    }

    // ---- getters -------------------------------------------------------

    /// Instance `i`, unless it is dead.
    pub fn instance(&self, i: usize) -> Option<&Instance> {
        self.instances.get(i)?.as_deref()
    }

    /// The indices of the live instances.
    pub fn alive(&self) -> impl Iterator<Item = usize> + '_ {
        self.instances
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.as_ref().map(|_| i))
    }

    /// Whether a live instance watches another's liveness or completes a
    /// dead writer's streams ([`Instance::is_watching`]).
    pub fn is_watching(&self) -> bool {
        self.instances.iter().flatten().any(|i| i.is_watching())
    }

    /// The store.
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// The connections between the instances and the store.
    pub fn links(&self) -> &StoreLinks {
        &self.links
    }

    /// Whether request `id` of `sid` is in flight on instance `i`.
    pub fn runs(&self, i: usize, sid: &SessionId, id: &RequestId) -> bool {
        self.instance(i)
            .and_then(|x| x.endpoint().session(sid))
            .is_some_and(|s| s.in_flight().any(|r| r == id))
    }

    /// The instance an exchange id (the world's) belongs to, and its own id.
    pub fn split(http: HttpId) -> (usize, HttpId) {
        (
            (http.0 / SERVER_HTTP_STRIDE) as usize,
            HttpId(http.0 % SERVER_HTTP_STRIDE),
        )
    }

    fn world_http(i: usize, http: HttpId) -> HttpId {
        HttpId(i as u64 * SERVER_HTTP_STRIDE + http.0)
    }

    // ---- inputs --------------------------------------------------------

    /// The store executes the next op of `conn`. Whether there was one.
    pub fn execute(&mut self, conn: ConnKey, now: Instant) -> bool {
        let instances = &self.instances;
        self.links.execute(&mut self.store, conn, now, |i| {
            instances.get(usize::from(i)).is_some_and(Option::is_some)
        })
    }

    /// Serves what [`StoreTiming`] says is served at once, until none is
    /// left. Whether anything was.
    fn serve_at_once(&mut self, now: Instant) -> bool {
        let timing = self.timing;
        self.serve_where(now, |conn| timing.at_once(conn))
    }

    /// Serves the ops and answers on the connections `pick` names, ops
    /// first, until none is left. Whether anything was.
    fn serve_where(&mut self, now: Instant, pick: impl Fn(Conn) -> bool) -> bool {
        let mut any = false;
        loop {
            let next = self
                .links
                .executable()
                .find(|k| pick(k.1))
                .map(|k| (k, true))
                .or_else(|| {
                    self.links
                        .receivable()
                        .find(|k| pick(k.1))
                        .map(|k| (k, false))
                });
            let Some((conn, op)) = next else {
                return any;
            };
            any = true;
            if op {
                self.execute(conn, now);
            } else {
                self.receive(conn, now);
            }
        }
    }

    /// Instance `i`'s ops onto its connections to the store. Whether it
    /// had any.
    fn send_ops(&mut self, i: usize) -> bool {
        let mut sent = false;
        if let Some(Some(inst)) = self.instances.get_mut(i) {
            while let Some(op) = inst.poll_op() {
                sent = true;
                self.links.send(i as u16, op);
            }
        }
        sent
    }

    /// Instance `conn.0` takes the next thing the store sent on `conn`.
    pub fn receive(&mut self, conn: ConnKey, now: Instant) -> bool {
        let Some(out) = self.links.take(conn) else {
            return false;
        };
        if let Some(Some(inst)) = self.instances.get_mut(usize::from(conn.0)) {
            match out {
                Output::Reply(r) => inst.handle_reply(r, now),
                Output::Push(p) => inst.handle_push(p, now),
            }
        }
        true
    }

    /// Instance `i` dies: its state, its unsent ops and its undelivered
    /// replies are gone. Whether it was alive.
    pub fn kill(&mut self, i: usize) -> bool {
        let Some(slot) = self.instances.get_mut(i) else {
            return false;
        };
        if slot.take().is_none() {
            return false;
        }
        self.links.forget(i as u16);
        true
    }
}

impl Servers for Fleet {
    fn handle_request(
        &mut self,
        at: usize,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> HttpId {
        let inst = self.instances[at]
            .as_mut()
            .expect("a request for a live instance");
        Self::world_http(at, inst.handle_request(head, body, caller, now))
    }

    fn handle_http_closed(&mut self, http: HttpId, now: Instant) {
        let (i, h) = Self::split(http);
        if let Some(Some(inst)) = self.instances.get_mut(i) {
            inst.handle_http_closed(h, now);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        for inst in self.instances.iter_mut().flatten() {
            if inst.poll_timeout().is_some_and(|t| t <= now) {
                inst.handle_timeout(now);
            }
        }
        self.store.handle_timeout(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.instances
            .iter()
            .flatten()
            .filter_map(|i| i.poll_timeout())
            .min()
    }

    fn is_idle(&self) -> bool {
        // Watching a live writer finds nothing; once one has died, a watch
        // is what completes its streams.
        let deaths = self.instances.iter().any(Option::is_none);
        self.instances
            .iter()
            .flatten()
            .all(|i| i.endpoint().poll_timeout().is_none() && !(deaths && i.is_watching()))
    }

    fn session_mut(&mut self, at: usize, sid: &SessionId) -> Option<&mut ServerSession> {
        self.instances.get_mut(at)?.as_mut()?.session_mut(sid)
    }

    fn holder(&self, sid: &SessionId, id: &RequestId) -> usize {
        self.alive().find(|&i| self.runs(i, sid, id)).unwrap_or(0)
    }

    fn first_session(&self) -> Option<SessionId> {
        self.instances
            .iter()
            .flatten()
            .filter_map(|i| i.endpoint().session_ids().next().cloned())
            .min()
    }

    fn named_sessions(&self, at: usize) -> Vec<SessionId> {
        self.instance(at)
            .map(|i| i.endpoint().named_session_ids().cloned().collect())
            .unwrap_or_default()
    }

    /// In instance and session order; a copy that ended, or died with its
    /// instance, has no one left to tell.
    fn awaited_answers(&self) -> Vec<RequestId> {
        self.instances
            .iter()
            .flatten()
            .flat_map(|i| awaited_in(i.endpoint()))
            .collect()
    }

    fn awaits_answers_for(&self, sid: &SessionId, call: &RequestId) -> bool {
        self.instances
            .iter()
            .flatten()
            .any(|i| awaits_in(i.endpoint(), sid, call))
    }

    fn queued(&self) -> Vec<(String, MsgKey)> {
        // Held in a copy of the session, or in its mailbox in the store.
        let mailboxes = self
            .store
            .unclaimed()
            .filter_map(|(log, e)| match e.record {
                Record::Message(text) => {
                    let (key, _) = decode_message(&text)?;
                    Some((log.session.to_string(), key))
                }
                _ => None,
            });
        self.instances
            .iter()
            .flatten()
            .flat_map(|i| queued_in(i.endpoint()))
            .chain(mailboxes)
            .collect()
    }

    fn drain(
        &mut self,
        now: Instant,
        observe: &mut dyn FnMut(&Observation),
        handle: &mut OutputHandler<'_, Self>,
    ) -> bool {
        let mut any = false;
        loop {
            let mut progressed = false;
            for i in 0..self.instances.len() {
                progressed |= self.drain_one(i, now, observe, handle);
            }
            progressed |= self.serve_at_once(now);
            if !progressed {
                return any;
            }
            any = true;
        }
    }
}

impl Fleet {
    /// One pass over instance `i`'s outputs: events, transmits (under the
    /// world's exchange ids), ops onto its connections.
    fn drain_one(
        &mut self,
        i: usize,
        now: Instant,
        observe: &mut dyn FnMut(&Observation),
        handle: &mut OutputHandler<'_, Self>,
    ) -> bool {
        let mut progressed = false;
        if let Some(Some(inst)) = self.instances.get_mut(i) {
            // What the application's commands produced since the last pass.
            inst.flush(now);
        }
        loop {
            let Some(Some(inst)) = self.instances.get_mut(i) else {
                return progressed;
            };
            let Some((session, event)) = inst.poll_event() else {
                break;
            };
            progressed = true;
            observe_own(&session, &event, observe);
            handle(self, ServerOutput::Event(session, event), observe);
        }
        loop {
            let Some(Some(inst)) = self.instances.get_mut(i) else {
                return progressed;
            };
            let Some(t) = inst.poll_transmit() else {
                break;
            };
            progressed = true;
            let o = Observation::Transmit(Transmit {
                http: Self::world_http(i, t.http),
                kind: t.kind,
            });
            observe(&o);
            if let Observation::Transmit(t) = o {
                handle(self, ServerOutput::Transmit(t), observe);
            }
        }
        self.send_ops(i) | progressed
    }
}

impl World<Fleet> {
    /// The store executes the next op of `conn`, then the cores run.
    /// Whether there was one.
    pub fn execute(&mut self, conn: ConnKey) -> bool {
        let now = self.now;
        let done = self.server.execute(conn, now);
        self.pump();
        done
    }

    /// Instance `conn.0` takes the next thing the store sent on `conn`,
    /// then the cores run. Whether there was one.
    pub fn receive(&mut self, conn: ConnKey) -> bool {
        let now = self.now;
        let done = self.server.receive(conn, now);
        self.pump();
        done
    }

    /// The application on instance `at` broadcasts `method` (a list
    /// changed): observed once, where it originates, then handed to the
    /// instance, which reaches the fleet's sessions as its
    /// [`mcp_streamable::fleet::BroadcastDelivery`] says. Whether `at` was alive.
    pub fn broadcast_at(&mut self, at: usize, method: &str) -> bool {
        if self.server.instance(at).is_none() {
            return false;
        }
        self.observe(&Observation::Broadcast {
            method: method.to_owned(),
            params: None,
        });
        let now = self.now;
        if let Some(Some(inst)) = self.server.instances.get_mut(at) {
            inst.broadcast(method, None, now);
        }
        self.pump();
        true
    }

    /// Instance `at` dies: every connection the client had with it is
    /// reset (the client sees it end; no one is left to tell). Whether it
    /// was alive.
    pub fn kill(&mut self, at: usize) -> bool {
        if self.server.instance(at).is_none() {
            return false;
        }
        // Its application dies with it.
        let server = &self.server;
        self.server_pending
            .retain(|(sid, id, _, _)| !server.runs(at, sid, id));
        self.server.kill(at);
        let cut: Vec<HttpId> = self
            .links
            .iter()
            .filter(|(_, l)| {
                !l.client_gone && l.server_http.is_some_and(|h| Fleet::split(h).0 == at)
            })
            .map(|(ch, _)| *ch)
            .collect();
        for ch in cut {
            self.drop_link(ch, false);
            if let Some(link) = self.links.get_mut(&ch) {
                link.server_told = true;
            }
        }
        self.pump();
        true
    }
}
