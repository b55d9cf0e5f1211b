//! The fleet shell: one instance of a fleet, hyper/tokio around a
//! [`FleetDriver`], with its two store connections as a [`StoreLink`].
//!
//! ```text
//!  connection tasks                       the owner task                       the store
//!  ────────────────                       ──────────────                       ─────────
//!  head + bounded body ──requests_queued_max──▶ FleetDriver ──ops──▶ StoreLink.ops ──▶ memory hub
//!  write head, then body ◀── Exchanges ◀──┘      ▲                                    or Redis
//!  body dropped ──closed──▶ handle_http_closed   └── replies, pushes ◀── StoreLink.from ◀──┘
//! ```
//! One task owns the instance (its endpoint holds every session it serves)
//! and its application, so nothing is shared but channels. Every decision
//! is the instance's; the shell moves bytes, ops and time. If the store's
//! link ends (the connection to Redis is lost), the instance stops serving:
//! its streams end and the balancer sends the clients elsewhere, where they
//! resume from the store (a reconnect would have to replay subscriptions
//! and would lose publications meanwhile; failing over is what the fleet is
//! for).

use super::body::ResponseBody;
use super::exchanges::{ConnCut, Exchanges};
use super::io::Listen;
use super::server::{
    accept_loop, response, take_request, unavailable, McpFuture, Reading, ServeFrom, ServerHandle,
    ServerOptions, Taken,
};
use bytes::Bytes;
use hyper::body::Incoming;
use mcp_streamable::app::App;
use mcp_streamable::fleet::driver::FleetDriver;
use mcp_streamable::fleet::instance::{FleetConfigError, Instance, InstanceConfig};
use mcp_streamable::fleet::store::{MemoryStore, Output};
use mcp_streamable::fleet::{InstanceId, Push, StoreOp, StoreReply};
use mcp_streamable::headers;
use mcp_streamable::principal::Caller;
use mcp_streamable::server::wire::Write;
use mcp_streamable::server::{RequestHead, UnreadBody};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};

/// What the store sends back to one instance: a reply on its command
/// connection, or a push on its subscriber connection (each in order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FromStore {
    /// A reply, in the order of the ops that expect one.
    Reply(StoreReply),
    /// A confirmation or a publication.
    Push(Push),
}

/// One instance's two connections to the store, as channels: ops go out on
/// `ops` (each [`StoreOp::conn`] on its own connection, in order), what the
/// store sends comes back on `from`. The channel ends when the store is
/// lost.
pub struct StoreLink {
    /// Ops to the store.
    pub ops: mpsc::UnboundedSender<StoreOp>,
    /// Replies and pushes from it.
    pub from: mpsc::UnboundedReceiver<FromStore>,
}

/// Settings of one fleet instance.
#[derive(Clone, Debug, Default)]
pub struct FleetOptions {
    /// The shell's and the endpoint's settings, as for one process. Set the
    /// same `app_secret` on every instance.
    pub server: ServerOptions,
    /// How this instance takes part in the fleet (its id is unique in it).
    pub instance: InstanceConfig,
}

/// Starts fleet instances.
pub struct FleetServer;

impl FleetServer {
    /// Binds `addr` and serves instance `options.instance.id` with `app`
    /// (one application for every session of the instance), sharing state
    /// through `store`.
    pub async fn bind<A: App>(
        addr: SocketAddr,
        options: FleetOptions,
        app: A,
        store: StoreLink,
    ) -> std::io::Result<ServerHandle> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let mut handle = Self::serve(listener, options, app, store)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        handle.addr = Some(local);
        Ok(handle)
    }

    /// Serves on any listener.
    pub fn serve<L: Listen, A: App>(
        listener: L,
        options: FleetOptions,
        app: A,
        store: StoreLink,
    ) -> Result<ServerHandle, FleetConfigError> {
        let server = options.server;
        // Only a preset's scheduling points use the seed: this instance's
        // own number keeps its runs repeatable and apart from its peers'.
        let seed = u64::from(options.instance.id.0);
        let instance = Instance::new(
            options.instance,
            server.endpoint.clone(),
            server.policy,
            server.ids.clone(),
        )?;
        let mut driver = FleetDriver::new(instance, app).with_seed(seed);
        if let Some(delay) = server.step_delay {
            driver = driver.with_step_delay(delay);
        }
        if let Some(secret) = server.app_secret {
            driver.set_app_secret(secret);
        }
        let (shutdown, shutdown_rx) = watch::channel(false);
        let live = super::server::Live::new(1);
        let (requests_tx, requests_rx) = mpsc::channel(server.requests_queued_max.max(1));
        let owner = Owner {
            driver,
            start: tokio::time::Instant::now(),
            // Each session's streams within its own budget (the session
            // its request named).
            exchanges: Exchanges::new(server.queue_bounds()),
            store,
        };
        let done = live.clone();
        let stop = shutdown_rx.clone();
        let (halt, halted) = watch::channel(false);
        tokio::spawn(async move {
            if owner.run(requests_rx, stop).await == Ended::StoreLost {
                let _ = halt.send(true);
            }
            done.count.fetch_sub(1, Ordering::AcqRel);
            done.notify.notify_waiters();
        });
        let service = FleetService {
            requests: requests_tx,
            options: Arc::new(server.clone()),
            reading: Reading::default(),
        };
        let accept = tokio::spawn(accept_loop(listener, server, service, shutdown_rx));
        Ok(ServerHandle {
            addr: None,
            shutdown,
            accept,
            live,
            halted,
        })
    }
}

/// Why an instance's owner task ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// [`ServerHandle::shutdown`].
    Shutdown,
    /// The store link ended ([`ServerHandle::halted`]).
    StoreLost,
}

/// A request on its way to the owner.
struct ToOwner {
    head: RequestHead,
    body: Result<Bytes, UnreadBody>,
    caller: Caller,
    cut: ConnCut,
    reply: oneshot::Sender<super::exchanges::Reply>,
}

/// The instance as a hyper service: each request to the owner task, at most
/// `requests_queued_max` waiting (503 past it).
#[derive(Clone)]
struct FleetService {
    requests: mpsc::Sender<ToOwner>,
    options: Arc<ServerOptions>,
    /// Request bodies being read, counted by session.
    reading: Reading,
}

impl ServeFrom for FleetService {
    type Body = ResponseBody;
    fn refusal(r: hyper::Response<ResponseBody>) -> hyper::Response<ResponseBody> {
        r
    }
    fn serve_from(
        &self,
        req: hyper::Request<Incoming>,
        peer: Option<SocketAddr>,
        cut: ConnCut,
    ) -> McpFuture {
        let requests = self.requests.clone();
        let options = self.options.clone();
        let reading = self.reading.clone();
        Box::pin(async move {
            let Taken {
                head,
                body,
                principal,
                upload: _reading,
            } = match take_request(req, &options, &reading).await {
                Ok(taken) => taken,
                Err(refused) => return Ok(refused),
            };
            let (reply, rx) = oneshot::channel();
            let msg = ToOwner {
                head,
                body,
                caller: Caller::from_peer(peer.map(|p| p.ip())).with_principal(principal),
                cut,
                reply,
            };
            if requests.try_send(msg).is_err() {
                return Ok(unavailable());
            }
            match rx.await {
                Ok((head, body)) => Ok(response(head, body)),
                Err(_) => Ok(unavailable()),
            }
        })
    }
}

/// The task that owns the instance and its application.
struct Owner<A: App> {
    driver: FleetDriver<A>,
    start: tokio::time::Instant,
    exchanges: Exchanges,
    store: StoreLink,
}

impl<A: App> Owner<A> {
    fn now(&self) -> mcp_streamable::time::Instant {
        super::clock::now(self.start)
    }

    async fn run(
        mut self,
        mut requests: mpsc::Receiver<ToOwner>,
        mut shutdown: watch::Receiver<bool>,
    ) -> Ended {
        // What the instance asks of the store from the start (its
        // subscription to the fleet's broadcasts).
        self.flush();
        loop {
            let sleep = super::clock::sleep_until(self.start, self.driver.poll_timeout());
            tokio::select! {
                Some(r) = requests.recv() => self.on_request(r),
                http = self.exchanges.next_closed() => {
                    self.exchanges.remove(http);
                    let now = self.now();
                    self.driver.handle_http_closed(http, now);
                }
                m = self.store.from.recv() => {
                    let now = self.now();
                    match m {
                        Some(FromStore::Reply(r)) => self.driver.handle_reply(r, now),
                        Some(FromStore::Push(p)) => self.driver.handle_push(p, now),
                        None => {
                            tracing::error!("the store is lost: this instance stops serving");
                            return Ended::StoreLost;
                        }
                    }
                }
                _ = sleep => {
                    let now = self.now();
                    self.driver.handle_timeout(now);
                }
                _ = shutdown.changed() => return Ended::Shutdown,
            }
            self.flush();
        }
    }

    fn on_request(&mut self, r: ToOwner) {
        let now = self.now();
        let http = match &r.body {
            Ok(b) => self.driver.handle_request(&r.head, Ok(b), &r.caller, now),
            Err(why) => self
                .driver
                .handle_request(&r.head, Err(*why), &r.caller, now),
        };
        // The session the request named, until the core routes it (a
        // request parked for the store is routed later).
        let session = r
            .head
            .header(headers::MCP_SESSION_ID)
            .and_then(|s| s.parse().ok());
        self.exchanges.awaiting(http, session, r.reply, Some(r.cut));
    }

    /// Writes to their exchanges, ops to the store, until neither is left.
    fn flush(&mut self) {
        loop {
            let mut moved = false;
            while let Some((http, write)) = self.driver.poll_write() {
                if matches!(write, Write::Open { .. }) {
                    // The session the core routed it to, once it did (a
                    // 2026-07-28 request's own, an `initialize`'s new one).
                    if let Some(sid) = self.driver.instance().endpoint().route(http) {
                        self.exchanges.assign(http, sid.clone());
                    }
                }
                let mut cut_off = Vec::new();
                self.exchanges.write(http, write, &mut cut_off);
                let now = self.now();
                for http in cut_off {
                    self.driver.handle_http_closed(http, now);
                }
                moved = true;
            }
            while let Some(op) = self.driver.poll_op() {
                // A send fails only once the store is lost, which `run` sees.
                let _ = self.store.ops.send(op);
            }
            if !moved {
                return;
            }
        }
    }
}

/// The store in this process: a task owning a [`MemoryStore`], the
/// instances' links to it as channels. For one machine, and for tests of a
/// fleet over real HTTP without Redis. Sessions expire on the hub's clock.
pub struct MemoryHub {
    ops: mpsc::UnboundedSender<(InstanceId, StoreOp)>,
    links: mpsc::UnboundedSender<(InstanceId, mpsc::UnboundedSender<FromStore>)>,
}

impl MemoryHub {
    /// Starts the hub's task: logs keep at most `entries_per_log_max`.
    pub fn start(entries_per_log_max: usize) -> MemoryHub {
        let (ops, mut ops_rx) = mpsc::unbounded_channel::<(InstanceId, StoreOp)>();
        let (links, mut links_rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let start = tokio::time::Instant::now();
            let mut store = MemoryStore::new(entries_per_log_max);
            // Expired sessions are gone for every op at once; forgetting
            // them (their memory) is a sweep, at most once a second.
            let mut swept = mcp_streamable::time::Instant::ZERO;
            let mut to: std::collections::BTreeMap<InstanceId, mpsc::UnboundedSender<FromStore>> =
                std::collections::BTreeMap::new();
            loop {
                tokio::select! {
                    // Links first: an instance's first op never beats its link.
                    biased;
                    Some((id, tx)) = links_rx.recv() => {
                        to.insert(id, tx);
                    }
                    op = ops_rx.recv() => {
                        let Some((from, op)) = op else { return };
                        let now = super::clock::now(start);
                        if now.as_millis() >= swept.as_millis() + 1000 {
                            store.handle_timeout(now);
                            swept = now;
                        }
                        store.handle_op(from, op, now);
                        while let Some((id, out)) = store.poll_output() {
                            let m = match out {
                                Output::Reply(r) => FromStore::Reply(r),
                                Output::Push(p) => FromStore::Push(p),
                            };
                            if let Some(tx) = to.get(&id) {
                                let _ = tx.send(m);
                            }
                        }
                    }
                }
            }
        });
        MemoryHub { ops, links }
    }

    /// Instance `id`'s link to the hub.
    pub fn connect(&self, id: InstanceId) -> StoreLink {
        let (from_tx, from) = mpsc::unbounded_channel();
        let _ = self.links.send((id, from_tx));
        let (ops, mut ops_rx) = mpsc::unbounded_channel();
        let hub = self.ops.clone();
        tokio::spawn(async move {
            while let Some(op) = ops_rx.recv().await {
                if hub.send((id, op)).is_err() {
                    return;
                }
            }
        });
        StoreLink { ops, from }
    }
}
