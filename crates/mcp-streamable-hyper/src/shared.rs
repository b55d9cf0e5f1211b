//! What every connection task and session owner shares: the settings, the
//! routing table of session slots, the admission table, and what a fresh
//! owner is made from (its endpoint's ids, its application, the broadcast
//! channel). Each is reached through the method that says what it is for;
//! the locks and their order stay here.
//!
//! ```text
//!  connection task ──session_for──▶ target ──Running──▶ its inbox
//!                                     ├──Parked──▶ Woken (the caller owns it)
//!                                     └──none──▶ Nobody (a fresh owner: new_driver)
//!  owner ──register / unregister / report / slot──▶ table, admission
//!  sweeper ──due──▶ target ──▶ woken as a task, to expire
//! ```
//! Lock order: the table, then a slot, then admission; the stateless
//! session's lock is taken alone.

use super::owner::Owner;
use super::server::{Inbox, Live, Reading, ServerOptions, ToOwner};
use bytes::Bytes;
use mcp_streamable::app::{App, Fanout};
use mcp_streamable::head::RequestHead;
use mcp_streamable::headers;
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::SessionId;
use mcp_streamable::jsonrpc::RawJson;
use mcp_streamable::server::{
    Admission, EndpointConfig, ServerDriver, ServerEndpoint, SessionState, UnreadBody,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::{broadcast, watch};

/// Exchange ids of one owner start at `owner number * HTTP_IDS_PER_TASK`.
const HTTP_IDS_PER_TASK: u64 = 1 << 32;

/// An application's broadcast, on its way to every session owner but the
/// one it was made in (`from`, the origin of the driver that made it).
pub(super) struct Broadcast {
    pub(super) from: u64,
    pub(super) method: String,
    pub(super) params: Option<RawJson>,
}

/// A session in the routing table. Who owns it is decided under the slot's
/// own lock, taken only with the table's (read or write) lock held, except
/// by the owner parking itself: the routing table's map changes only when a
/// session starts or ends.
pub(super) struct Slot<A: App> {
    state: Mutex<SlotState<A>>,
}

/// Who owns a session.
pub(super) enum SlotState<A: App> {
    /// An owner serves it (a task, or a connection task inline): requests go
    /// to its inbox.
    Running(Arc<Inbox>),
    /// Idle: the owner itself, whole, with its closed inbox (no task, no
    /// channel touched to wake it: the next request takes the box), and
    /// when its core next needs time (its idle expiry).
    Parked(Box<Owner<A>>, Option<tokio::time::Instant>),
    /// Evicted while parked: no owner any more (the table no longer has it).
    Gone,
}

impl<A: App> Slot<A> {
    fn running(inbox: Arc<Inbox>) -> Arc<Self> {
        Arc::new(Slot {
            state: Mutex::new(SlotState::Running(inbox)),
        })
    }

    /// `f` on the slot's state, under its lock.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut SlotState<A>) -> R) -> R {
        match self.state.lock() {
            Ok(mut g) => f(&mut g),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }
}

/// Who serves a request for a session.
pub(super) enum Target<A: App> {
    /// Its owner, running: the request goes to its inbox.
    Running(Arc<Inbox>),
    /// It was parked: the caller owns it now (the slot says `Running` with
    /// its reopened inbox, so concurrent requests queue there).
    Woken(Box<Owner<A>>),
    /// No such session lives here (or none was named): a fresh endpoint
    /// answers (404, or a new session for an `initialize`).
    Nobody,
}

/// A fresh owner's core and application, and its place among the owners.
pub(super) struct NewDriver<A: App> {
    pub(super) driver: ServerDriver<A>,
    /// The other owners' broadcasts, from now on.
    pub(super) broadcasts: broadcast::Receiver<Arc<Broadcast>>,
    /// This driver's origin in [`Broadcast::from`].
    pub(super) origin: u64,
}

/// What every connection and session owner shares (see the module docs).
pub(super) struct Shared<A: App> {
    options: ServerOptions,
    /// `options.endpoint`, one copy for every session's endpoint.
    endpoint: mcp_streamable::shared::Shared<EndpointConfig>,
    make_app: Box<dyn Fn() -> A + Send + Sync>,
    table: RwLock<BTreeMap<SessionId, Arc<Slot<A>>>>,
    /// Who may open a session, for all owners at once (the core's table).
    admission: Mutex<Admission>,
    ids: Mutex<IdSource>,
    /// Owners made so far: each one's number spaces its exchange ids.
    owners: AtomicUsize,
    tap: Option<Arc<Mutex<super::Tap>>>,
    shutdown: watch::Receiver<bool>,
    live: Arc<Live>,
    broadcasts: broadcast::Sender<Arc<Broadcast>>,
    /// Request bodies being read, counted by session.
    reading: Reading,
    /// The session every stateless request joins under a preset that shares
    /// one transport ([`ServerEndpoint::shared_stateless_session`]), once an
    /// owner holds it; always `None` under FIXED.
    stateless_shared: Mutex<Option<SessionId>>,
}

impl<A: App> Shared<A> {
    /// The shared state of a server started with `options` (its
    /// application secret drawn from its ids unless set), `make_app`
    /// making each session's application.
    pub(super) fn new(
        mut options: ServerOptions,
        make_app: Box<dyn Fn() -> A + Send + Sync>,
        tap: Option<super::Tap>,
        shutdown: watch::Receiver<bool>,
        live: Arc<Live>,
    ) -> Self {
        let (broadcasts, _) = broadcast::channel(options.broadcasts_queued_max.max(1));
        let mut ids = options.ids.clone();
        let secret = options.app_secret.unwrap_or_else(|| ids.secret());
        options.app_secret = Some(secret);
        Shared {
            broadcasts,
            endpoint: mcp_streamable::shared::Shared::new(options.endpoint.clone()),
            ids: Mutex::new(ids),
            options,
            make_app,
            table: RwLock::new(BTreeMap::new()),
            admission: Mutex::new(Admission::default()),
            owners: AtomicUsize::new(0),
            tap: tap.map(|t| Arc::new(Mutex::new(t))),
            shutdown,
            live,
            reading: Reading::default(),
            stateless_shared: Mutex::new(None),
        }
    }

    // ---- getters -------------------------------------------------------

    /// The server's settings.
    pub(super) fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// Request bodies being read.
    pub(super) fn reading(&self) -> &Reading {
        &self.reading
    }

    /// How many owners are live, and the clock's epoch.
    pub(super) fn live(&self) -> &Arc<Live> {
        &self.live
    }

    /// Changes to `true` when the server stops.
    pub(super) fn shutdown(&self) -> watch::Receiver<bool> {
        self.shutdown.clone()
    }

    // ---- routing -------------------------------------------------------

    /// The session a request is for: the one it names, else, under a
    /// preset that shares one stateless transport, the one that transport
    /// keeps ([`ServerEndpoint::joins_shared_stateless`]).
    pub(super) fn session_for(
        &self,
        head: &RequestHead,
        body: &Result<Bytes, UnreadBody>,
    ) -> Option<SessionId> {
        let named = head
            .header(headers::MCP_SESSION_ID)
            .and_then(|s| s.parse::<SessionId>().ok());
        named.or_else(|| {
            let joins = body.as_ref().is_ok_and(|body| {
                ServerEndpoint::joins_shared_stateless(
                    &self.endpoint,
                    self.options.policy,
                    head,
                    body,
                )
            });
            joins
                .then(|| self.stateless_shared.lock().ok()?.clone())
                .flatten()
        })
    }

    /// Who serves a request naming `sid`: a parked owner is woken and
    /// handed to the caller.
    pub(super) fn target(&self, sid: Option<&SessionId>) -> Target<A> {
        let Some(sid) = sid else {
            return Target::Nobody;
        };
        let Ok(table) = self.table.read() else {
            return Target::Nobody;
        };
        let Some(slot) = table.get(sid) else {
            return Target::Nobody;
        };
        slot.with(|state| match std::mem::replace(state, SlotState::Gone) {
            SlotState::Running(inbox) => {
                *state = SlotState::Running(inbox.clone());
                Target::Running(inbox)
            }
            SlotState::Parked(owner, _) => {
                let owner = owner.woken();
                *state = SlotState::Running(owner.inbox().clone());
                Target::Woken(owner)
            }
            SlotState::Gone => Target::Nobody,
        })
    }

    /// Requests naming `sid` go to `inbox` from now on; when `stateless`,
    /// so do the stateless requests a shared transport takes.
    pub(super) fn register(&self, sid: &SessionId, inbox: Arc<Inbox>, stateless: bool) {
        if let Ok(mut t) = self.table.write() {
            t.insert(sid.clone(), Slot::running(inbox));
        }
        if stateless {
            if let Ok(mut s) = self.stateless_shared.lock() {
                *s = Some(sid.clone());
            }
        }
    }

    /// Session `sid` is over: out of the routing and admission tables.
    pub(super) fn unregister(&self, sid: &SessionId) {
        if let Ok(mut s) = self.stateless_shared.lock() {
            if s.as_ref() == Some(sid) {
                *s = None;
            }
        }
        if let Ok(mut t) = self.table.write() {
            t.remove(sid);
            if let Ok(mut a) = self.admission.lock() {
                a.remove(sid);
            }
        }
    }

    /// Session `sid`'s slot, for its owner to park in.
    pub(super) fn slot(&self, sid: &SessionId) -> Option<Arc<Slot<A>>> {
        self.table.read().ok()?.get(sid).cloned()
    }

    /// The parked sessions whose next deadline has passed by `now`.
    pub(super) fn due(&self, now: tokio::time::Instant) -> Vec<SessionId> {
        let Ok(t) = self.table.read() else {
            return Vec::new();
        };
        t.iter()
            .filter_map(|(sid, slot)| {
                slot.with(|state| match state {
                    SlotState::Parked(_, deadline) => {
                        deadline.filter(|d| *d <= now).map(|_| sid.clone())
                    }
                    _ => None,
                })
            })
            .collect()
    }

    /// Ends session `victim`, evicted by the admission table to make room:
    /// a parked one is dropped on the spot, a running one is told by its
    /// owner.
    pub(super) fn evict(&self, victim: SessionId) {
        let parked = {
            let Ok(mut t) = self.table.write() else {
                return;
            };
            let Some(slot) = t.get(&victim).cloned() else {
                return;
            };
            let parked = slot.with(|state| match std::mem::replace(state, SlotState::Gone) {
                SlotState::Parked(owner, _) => Some(owner),
                running => {
                    if let SlotState::Running(inbox) = &running {
                        // Closed: it is ending; either way it is leaving.
                        let _ = inbox.send(ToOwner::Evict(victim.clone()));
                    }
                    *state = running;
                    None
                }
            });
            if parked.is_some() {
                t.remove(&victim);
                if let Ok(mut a) = self.admission.lock() {
                    a.remove(&victim);
                }
            }
            parked
        };
        if let Some(mut owner) = parked {
            // A parked session has no open exchange: nothing to write.
            owner.evicted(&victim);
        }
    }

    // ---- admission -----------------------------------------------------

    /// `f` on the admission table, under its lock; `None` if poisoned.
    pub(super) fn admitting<R>(&self, f: impl FnOnce(&mut Admission) -> R) -> Option<R> {
        self.admission.lock().ok().map(|mut a| f(&mut a))
    }

    /// What the admission table hears of session `sid`.
    pub(super) fn report(&self, sid: &SessionId, state: SessionState) {
        if let Ok(mut a) = self.admission.lock() {
            a.handle_session(sid, state);
        }
    }

    // ---- owners --------------------------------------------------------

    /// A fresh one-session endpoint and its application: its ids from its
    /// own fork of the source, its broadcasts to every other owner.
    pub(super) fn new_driver(&self) -> NewDriver<A> {
        let mut ids = match self.ids.lock() {
            Ok(mut parent) => parent.fork(),
            Err(poisoned) => poisoned.into_inner().fork(),
        };
        let seed = ids.next_u64();
        let n = self.owners.fetch_add(1, Ordering::Relaxed) as u64 + 1;
        let mut ep = ServerEndpoint::with_shared_config(
            self.endpoint.clone(),
            n * HTTP_IDS_PER_TASK,
            self.options.policy,
            ids,
        );
        if let Some(secret) = self.options.app_secret {
            ep.set_app_secret(secret);
        }
        let to_others = self.broadcasts.clone();
        let fanout: Fanout = Arc::new(move |method: &str, params: Option<&RawJson>| {
            let _ = to_others.send(Arc::new(Broadcast {
                from: n,
                method: method.to_owned(),
                params: params.cloned(),
            }));
        });
        let mut driver = ServerDriver::new(ep, (self.make_app)(), seed)
            .with_tap(self.tap.clone())
            .with_fanout(Some(fanout));
        if let Some(delay) = self.options.step_delay {
            driver = driver.with_step_delay(delay);
        }
        NewDriver {
            driver,
            broadcasts: self.broadcasts.subscribe(),
            origin: n,
        }
    }
}
