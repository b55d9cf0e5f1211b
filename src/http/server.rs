//! The server shell: hyper/tokio around the server core, one owner task per
//! session.
//!
//! ```text
//!  connection tasks                     routing table (handles only)       session tasks
//!  ────────────────                     ───────────────────────────        ─────────────
//!  head + bounded body ──Mcp-Session-Id known?──yes──▶ that session's task ─▶ its endpoint
//!                                        └──no──▶ a fresh task with a fresh   + its app
//!                                                 one-session endpoint: it answers
//!                                                 (initialize → a session, which the
//!                                                 task registers; else 400/404/…)
//!  write head, then body ◀── whole body, or a bounded stream of SSE frames ──┘
//!  body dropped (ended or client gone) ──closed──▶ endpoint.handle_http_closed
//! ```
//! Each task owns its core and its application instance in a
//! [`ServerDriver`]: no shared mutable state beyond the table of channel
//! handles and the admission table. Every decision (statuses, routing, ids,
//! replay, headers, bytes, whole body or stream) is the core's; the shell
//! moves the driver's [`Write`]s to hyper and time to the driver. A task ends
//! when its session has ended and its exchanges are closed.

use super::body::ResponseBody;
use super::exchanges::{Exchanges, Reply, Written};
use super::io::Listen;
use crate::app::{App, Fanout};
use crate::error::RequestError;
use crate::head::{Method, RequestHead};
use crate::headers;
use crate::id_source::IdSource;
use crate::ids::{HttpId, SessionId};
use crate::jsonrpc::RawJson;
use crate::policy::ServerPolicy;
use crate::server::wire::{WireHead, Write};
use crate::server::{
    Admission, EndpointConfig, ServerDriver, ServerEndpoint, SessionState, UnreadBody,
};
use crate::sync::{Mailbox, SendError};
use crate::time::Instant;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::{broadcast, mpsc, oneshot, watch, Notify};
use tokio::task::JoinHandle;

/// Settings of the server shell.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The core's settings (bounds, allow-list, …).
    pub endpoint: EndpointConfig,
    /// The policy (FIXED unless demonstrating a preset).
    pub policy: ServerPolicy,
    /// Where session ids and event-id namespaces come from: a CSPRNG keyed
    /// by the OS unless a simulation passes [`IdSource::reproducible`]. Each
    /// session's endpoint draws from its own [`IdSource::fork`].
    pub ids: IdSource,
    /// The applications' secret ([`ServerEndpoint::app_secret`]: the key of
    /// MRTR `requestState`), the same for every session task; `None` draws
    /// one from `ids` at start. A fleet sets one secret on every instance.
    pub app_secret: Option<[u8; 32]>,
    /// Frames queued on one streaming response before its client counts as
    /// too slow and the connection is closed (the stream stays resumable).
    pub frames_queued_max: usize,
    /// Bytes queued on one streaming response before its client counts as
    /// too slow, likewise: a reader that does not read costs at most this.
    pub frame_bytes_queued_max: usize,
    /// Requests queued for one session's task.
    pub requests_queued_max: usize,
    /// Broadcasts (list changes, resource updates) queued for a session task
    /// that has not taken them yet, parked ones included: one that falls
    /// further behind loses the oldest, and says so in the log.
    pub broadcasts_queued_max: usize,
    /// Open connections at once; past it the accept loop waits for one to
    /// close (the kernel's backlog holds newcomers), so file descriptors are
    /// never exhausted by idle sockets.
    pub connections_max: usize,
    /// Time a connection may take to send a request head, counted from the
    /// moment the server waits for one: an idle keep-alive connection, or a
    /// half-sent head, is closed past it.
    pub header_read_timeout: std::time::Duration,
    /// Time a request body may take to arrive whole (408 past it).
    pub body_read_timeout: std::time::Duration,
    /// Longest pause after a failed `accept` (EMFILE, ENFILE, …): the loop
    /// backs off from 1 ms, doubling, instead of spinning.
    pub accept_backoff_max: std::time::Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        let mut endpoint = EndpointConfig::default();
        // HTTP/1.1: a head without Host is refused (RFC 9112 §3.2).
        endpoint.allow.host_required = true;
        ServerOptions {
            endpoint,
            policy: ServerPolicy::FIXED,
            ids: IdSource::from_os(),
            app_secret: None,
            frames_queued_max: 256,
            frame_bytes_queued_max: 1 << 20,
            requests_queued_max: 1024,
            broadcasts_queued_max: 1024,
            connections_max: 1024,
            header_read_timeout: std::time::Duration::from_secs(10),
            body_read_timeout: std::time::Duration::from_secs(30),
            accept_backoff_max: std::time::Duration::from_secs(1),
        }
    }
}

/// Exchange ids of one task start at `task number * HTTP_IDS_PER_TASK`.
const HTTP_IDS_PER_TASK: u64 = 1 << 32;

/// A running server.
pub struct ServerHandle {
    /// The address it listens on (TCP).
    pub addr: Option<SocketAddr>,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) accept: JoinHandle<()>,
    pub(crate) live: Arc<(AtomicUsize, Notify)>,
}

impl ServerHandle {
    /// Stops accepting, ends every stream, and waits for every task.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.accept.await;
        let (count, notify) = &*self.live;
        while count.load(Ordering::Acquire) > 0 {
            let wait = notify.notified();
            if count.load(Ordering::Acquire) == 0 {
                break;
            }
            let _ = tokio::time::timeout(std::time::Duration::from_millis(50), wait).await;
        }
    }
}

/// Starts servers.
pub struct Server;

/// What a session task is sent: a request (boxed so the mailbox's slots stay
/// small), or the order to end its session, evicted to make room.
enum ToOwner {
    Request(Box<RequestForOwner>),
    Evict(SessionId),
}

/// A session task's inbox: the mailbox (shared with the loom models, see
/// [`crate::sync`]) and the task's wake-up.
struct Inbox {
    mail: Mailbox<ToOwner>,
    wake: Notify,
}

impl Inbox {
    fn new(queued_max: usize) -> Arc<Inbox> {
        Arc::new(Inbox {
            mail: Mailbox::new(queued_max),
            wake: Notify::new(),
        })
    }

    fn send(&self, m: ToOwner) -> Result<(), SendError<ToOwner>> {
        self.mail.send(m)?;
        self.wake.notify_one();
        Ok(())
    }

    /// The next request; `None` once closed and drained. `notify_one` keeps a
    /// permit when nobody waits, so a send between the check and the wait
    /// still wakes us.
    async fn recv(&self) -> Option<ToOwner> {
        loop {
            if let Some(m) = self.mail.try_recv() {
                return Some(m);
            }
            if self.mail.is_closed() {
                return None;
            }
            self.wake.notified().await;
        }
    }
}

struct RequestForOwner {
    head: RequestHead,
    body: Result<Bytes, UnreadBody>,
    peer: Option<SocketAddr>,
    reply: oneshot::Sender<Reply>,
}

/// The whole body, within the core's bound (refused at once when
/// `Content-Length` already says more: nothing read, no `100 Continue`) and
/// the body read timeout.
pub(crate) async fn read_body<B: RequestBody>(
    head: &RequestHead,
    body: B,
    options: &ServerOptions,
) -> Result<Bytes, UnreadBody> {
    let max = crate::server::body_limit(head, options.endpoint.body_max)?;
    let collect = http_body_util::Limited::new(body, max).collect();
    match tokio::time::timeout(options.body_read_timeout, collect).await {
        Err(_) => Err(UnreadBody::TimedOut),
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(UnreadBody::TooLarge),
        Ok(Err(_)) => Err(UnreadBody::Unreadable),
    }
}

/// A session in the routing table: its running task's handle, or its state
/// parked while idle (no task, no channels: an idle session costs its core's
/// state only).
enum Slot<A: App> {
    Running(Arc<Inbox>),
    /// In a mutex only so the table is `Sync` while applications need only be `Send`.
    Parked(Mutex<Box<Parked<A>>>),
}

/// An application's broadcast, on its way to every session task but the
/// one it was made in (`from`, the origin of the driver that made it).
struct Broadcast {
    from: u64,
    method: String,
    params: Option<RawJson>,
}

/// What a session task leaves behind when it parks.
struct Parked<A: App> {
    /// The endpoint, the application and the scheduler's state (so a woken
    /// session goes on with its sequence).
    driver: ServerDriver<A>,
    start: tokio::time::Instant,
    session: SessionId,
    /// Broadcasts keep queueing for a parked session; it takes them on waking.
    broadcasts: broadcast::Receiver<Arc<Broadcast>>,
    origin: u64,
    /// When the core next needs time (its idle expiry).
    deadline: Option<tokio::time::Instant>,
}

/// What every connection and session task shares: handles and settings.
struct Shared<A: App> {
    options: ServerOptions,
    make_app: Box<dyn Fn() -> A + Send + Sync>,
    table: RwLock<BTreeMap<SessionId, Slot<A>>>,
    /// Who may open a session, for all session tasks at once (the core's
    /// table; lock order: `table`, then `admission`).
    admission: Mutex<Admission>,
    /// Every core's epoch, so that times in `admission` compare across tasks.
    epoch: tokio::time::Instant,
    ids: Mutex<IdSource>,
    tasks: AtomicUsize,
    tap: Option<Arc<Mutex<super::Tap>>>,
    shutdown: watch::Receiver<bool>,
    live: Arc<(AtomicUsize, Notify)>,
    broadcasts: broadcast::Sender<Arc<Broadcast>>,
}

/// A request body the shell can read: hyper's `Incoming`, axum's `Body`,
/// any [`http_body::Body`](hyper::body::Body) of bytes.
pub trait RequestBody:
    hyper::body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
    + Send
    + 'static
{
}

impl<B> RequestBody for B where
    B: hyper::body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + 'static
{
}

/// The MCP endpoint as a service, for mounting under a path of your own
/// router: a [`tower_service::Service`] (axum's `Router::route_service`,
/// any tower stack) and a hyper [`Service`](hyper::service::Service), over
/// any [`RequestBody`]. Put a [`PeerAddr`] in the request's extensions for
/// the per-client session quota.
pub struct McpService<A: App> {
    shared: Arc<Shared<A>>,
}

impl<A: App> Clone for McpService<A> {
    fn clone(&self) -> Self {
        McpService {
            shared: self.shared.clone(),
        }
    }
}

/// What the service's `call` returns.
pub type McpFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<hyper::Response<ResponseBody>, Infallible>> + Send>,
>;

impl<A: App, B: RequestBody> hyper::service::Service<hyper::Request<B>> for McpService<A> {
    type Response = hyper::Response<ResponseBody>;
    type Error = Infallible;
    type Future = McpFuture;

    fn call(&self, req: hyper::Request<B>) -> McpFuture {
        Box::pin(serve_one(req, self.shared.clone()))
    }
}

/// Always ready: back-pressure is per session (its bounded mailbox answers
/// 503 when full), never the whole service's.
impl<A: App, B: RequestBody> tower_service::Service<hyper::Request<B>> for McpService<A> {
    type Response = hyper::Response<ResponseBody>;
    type Error = Infallible;
    type Future = McpFuture;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: hyper::Request<B>) -> McpFuture {
        Box::pin(serve_one(req, self.shared.clone()))
    }
}

impl Server {
    /// Starts the server's shared state and returns the service to mount in
    /// your own server (any path), with the handle that stops it. `make_app`
    /// makes one application per session.
    pub fn start<A: App>(
        options: ServerOptions,
        make_app: impl Fn() -> A + Send + Sync + 'static,
        tap: Option<super::Tap>,
    ) -> (McpService<A>, ServerHandle) {
        let (shutdown, shutdown_rx) = watch::channel(false);
        let live = Arc::new((AtomicUsize::new(0), Notify::new()));
        let (broadcasts, _) = broadcast::channel(options.broadcasts_queued_max.max(1));
        let mut options = options;
        let mut ids = options.ids.clone();
        let secret = options.app_secret.unwrap_or_else(|| ids.secret());
        options.app_secret = Some(secret);
        let shared = Arc::new(Shared {
            broadcasts,
            ids: Mutex::new(ids),
            options,
            make_app: Box::new(make_app),
            table: RwLock::new(BTreeMap::new()),
            admission: Mutex::new(Admission::default()),
            epoch: tokio::time::Instant::now(),
            tasks: AtomicUsize::new(0),
            tap: tap.map(|t| Arc::new(Mutex::new(t))),
            shutdown: shutdown_rx,
            live: live.clone(),
        });
        let handle = ServerHandle {
            addr: None,
            shutdown,
            accept: tokio::spawn(async {}),
            live,
        };
        tokio::spawn(sweep(shared.clone(), std::time::Duration::from_secs(1)));
        (McpService { shared }, handle)
    }

    /// Binds `addr` (use 127.0.0.1 for a local server, R43) and serves one
    /// application per session, made by `make_app`.
    pub async fn bind<A: App>(
        addr: SocketAddr,
        options: ServerOptions,
        make_app: impl Fn() -> A + Send + Sync + 'static,
        tap: Option<super::Tap>,
    ) -> std::io::Result<ServerHandle> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let mut handle = Self::serve(listener, options, make_app, tap);
        handle.addr = Some(local);
        Ok(handle)
    }

    /// Serves on any listener (tokio TCP, turmoil, …).
    pub fn serve<L: Listen, A: App>(
        listener: L,
        options: ServerOptions,
        make_app: impl Fn() -> A + Send + Sync + 'static,
        tap: Option<super::Tap>,
    ) -> ServerHandle {
        let (service, mut handle) = Self::start(options, make_app, tap);
        let stop = handle.shutdown.subscribe();
        let options = service.shared.options.clone();
        handle.accept = tokio::spawn(accept_loop(listener, options, service, stop));
        handle
    }
}

/// The peer's address, put in each request's extensions by the accept loop
/// (insert it yourself when you mount [`McpService`] in your own server):
/// the core's per-client session quota counts by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

/// Accepts connections within `options`' bounds and serves each with
/// `service`, until `shutdown`. Written once for every shell that serves.
pub(crate) async fn accept_loop<L, S>(
    mut listener: L,
    options: ServerOptions,
    service: S,
    mut shutdown: watch::Receiver<bool>,
) where
    L: Listen,
    S: hyper::service::Service<
            hyper::Request<Incoming>,
            Response = hyper::Response<ResponseBody>,
            Error = Infallible,
            Future = McpFuture,
        > + Clone
        + Send
        + Sync
        + 'static,
{
    let options = &options;
    let slots = Arc::new(tokio::sync::Semaphore::new(options.connections_max.max(1)));
    let (header_timeout, backoff_max) = (options.header_read_timeout, options.accept_backoff_max);
    let mut backoff = std::time::Duration::ZERO;
    loop {
        // A slot first: at `connections_max` newcomers wait in the backlog.
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => return,
            },
            _ = shutdown.changed() => return,
        };
        let io = tokio::select! {
            r = listener.accept() => match r {
                Ok(io) => {
                    backoff = std::time::Duration::ZERO;
                    io
                }
                Err(e) => {
                    // EMFILE and friends repeat at once: back off, don't spin.
                    backoff = (backoff * 2)
                        .max(std::time::Duration::from_millis(1))
                        .min(backoff_max);
                    tracing::debug!(error = %e, ?backoff, "accept failed");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => continue,
                        _ = shutdown.changed() => return,
                    }
                }
            },
            _ = shutdown.changed() => return,
        };
        let peer = L::peer(&io);
        let service = service.clone();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                if let Some(peer) = peer {
                    req.extensions_mut().insert(PeerAddr(peer));
                }
                service.call(req)
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .keep_alive(true)
                .serve_connection(TokioIo::new(io), svc);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "connection ended");
                    }
                }
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
}

async fn serve_one<A: App, B: RequestBody>(
    req: hyper::Request<B>,
    shared: Arc<Shared<A>>,
) -> Result<hyper::Response<ResponseBody>, Infallible> {
    let head = request_head(&req);
    let peer = req.extensions().get::<PeerAddr>().map(|p| p.0);
    let body = read_body(&head, req.into_body(), &shared.options).await;
    let (reply, rx) = oneshot::channel();
    let sid = head
        .header(headers::MCP_SESSION_ID)
        .and_then(|s| s.parse::<SessionId>().ok());
    let mut msg = ToOwner::Request(Box::new(RequestForOwner {
        head,
        body,
        peer,
        reply,
    }));
    let mut delivered = false;
    // A task that has just parked closes its mailbox: look the session up again.
    for _ in 0..4 {
        let inbox = sid
            .as_ref()
            .and_then(|sid| route(&shared, sid))
            .unwrap_or_else(|| spawn_session_task(&shared, None));
        match inbox.send(msg) {
            Ok(()) => {
                delivered = true;
                break;
            }
            Err(SendError::Closed(m)) => msg = m,
            // Overloaded: `requests_queued_max` requests already wait.
            Err(SendError::Full(_)) => break,
        }
    }
    if !delivered {
        return Ok(unavailable());
    }
    let Ok((head, body)) = rx.await else {
        return Ok(unavailable());
    };
    Ok(response(head, body))
}

/// The core's view of a request's head.
pub(crate) fn request_head<B>(req: &hyper::Request<B>) -> RequestHead {
    RequestHead {
        method: Method::parse(req.method().as_str()),
        headers: req
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
    }
}

/// The channel of the task running `sid`, waking it if it is parked; `None`
/// if no such session lives here (a fresh endpoint will answer 404).
fn route<A: App>(shared: &Arc<Shared<A>>, sid: &SessionId) -> Option<Arc<Inbox>> {
    if let Some(Slot::Running(tx)) = shared.table.read().ok()?.get(sid) {
        return Some(tx.clone());
    }
    let mut table = shared.table.write().ok()?;
    match table.remove(sid)? {
        Slot::Running(tx) => {
            table.insert(sid.clone(), Slot::Running(tx.clone()));
            Some(tx)
        }
        Slot::Parked(parked) => {
            let parked = parked.into_inner().ok()?;
            let tx = spawn_session_task(shared, Some(*parked));
            table.insert(sid.clone(), Slot::Running(tx.clone()));
            Some(tx)
        }
    }
}

/// A task for a session: a parked one woken up, or a fresh one-session
/// endpoint for a request that names no live session (the core decides
/// whether it starts one).
fn spawn_session_task<A: App>(shared: &Arc<Shared<A>>, parked: Option<Parked<A>>) -> Arc<Inbox> {
    let inbox = Inbox::new(shared.options.requests_queued_max);
    let (closed_tx, closed_rx) = mpsc::unbounded_channel();
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
            // The application's broadcasts reach the other tasks' endpoints.
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
    let owner = Owner {
        driver,
        start,
        broadcasts,
        origin,
        exchanges: Exchanges::new(
            closed_tx,
            shared.options.frames_queued_max,
            shared.options.frame_bytes_queued_max,
        ),
        reported: None,
        registered,
        inbox: inbox.clone(),
        shared: shared.clone(),
    };
    shared.live.0.fetch_add(1, Ordering::AcqRel);
    tokio::spawn(owner.run(closed_rx));
    inbox
}

/// Ends session `victim`, evicted by the admission table to make room: a
/// parked one is dropped on the spot, a running one is told by its task.
fn evict<A: App>(shared: &Arc<Shared<A>>, victim: SessionId) {
    let parked = {
        let Ok(mut t) = shared.table.write() else {
            return;
        };
        match t.get(&victim) {
            Some(Slot::Running(inbox)) => {
                // Closed: it is parking or ending; either way it is leaving
                // (a parking task re-checks its session on the next request).
                let _ = inbox.send(ToOwner::Evict(victim));
                return;
            }
            Some(Slot::Parked(_)) => t.remove(&victim),
            None => return,
        }
    };
    if let Some(Slot::Parked(p)) = parked {
        if let Ok(mut p) = p.into_inner() {
            let now = super::clock::now(p.start);
            // A parked session has no open exchange: nothing to write.
            p.driver.evict(&victim, now);
        }
    }
}

/// Wakes parked sessions whose idle deadline has passed, so their cores can
/// expire them (every `period`).
async fn sweep<A: App>(shared: Arc<Shared<A>>, period: std::time::Duration) {
    let mut shutdown = shared.shutdown.clone();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.changed() => return,
        }
        let due: Vec<SessionId> = match shared.table.read() {
            Ok(t) => t
                .iter()
                .filter_map(|(sid, slot)| match slot {
                    Slot::Parked(p) => p
                        .lock()
                        .ok()?
                        .deadline
                        .filter(|d| *d <= tokio::time::Instant::now())
                        .map(|_| sid.clone()),
                    Slot::Running(_) => None,
                })
                .collect(),
            Err(_) => continue,
        };
        for sid in due {
            let _ = route(&shared, &sid);
        }
    }
}

/// The shell's own refusal when a session's queue of requests is full: the
/// core's answer for [`RequestError::Overloaded`].
pub(crate) fn unavailable() -> hyper::Response<ResponseBody> {
    let (tx, _) = mpsc::unbounded_channel();
    let Write::Whole { head, body } = Write::refusal(&RequestError::Overloaded) else {
        unreachable!("a refusal is a whole response")
    };
    response(head, ResponseBody::full(HttpId(0), Bytes::from(body), tx))
}

/// The hyper response for a head the core wrote.
pub(crate) fn response(head: WireHead, body: ResponseBody) -> hyper::Response<ResponseBody> {
    let mut r = hyper::Response::new(body);
    *r.status_mut() = hyper::StatusCode::from_u16(head.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    for (name, value) in head.headers {
        let name = hyper::header::HeaderName::from_bytes(name.as_bytes());
        if let (Ok(n), Ok(v)) = (name, hyper::header::HeaderValue::from_str(&value)) {
            h.insert(n, v);
        }
    }
    r
}

/// The task that owns one session's core and application.
struct Owner<A: App> {
    driver: ServerDriver<A>,
    start: tokio::time::Instant,
    /// Other tasks' broadcasts, for this task's endpoint.
    broadcasts: broadcast::Receiver<Arc<Broadcast>>,
    /// This driver's origin in [`Broadcast::from`].
    origin: u64,
    exchanges: Exchanges,
    /// The session this task registered in the routing table.
    registered: Option<SessionId>,
    /// What the shared admission table last heard of the session.
    reported: Option<SessionState>,
    inbox: Arc<Inbox>,
    shared: Arc<Shared<A>>,
}

impl<A: App> Owner<A> {
    fn now(&self) -> Instant {
        super::clock::now(self.start)
    }

    async fn run(mut self, mut closed_rx: mpsc::UnboundedReceiver<HttpId>) {
        let mut shutdown = self.shared.shutdown.clone();
        let inbox = self.inbox.clone();
        let mut stopping = false;
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
                    None => break,
                },
                Some(http) = closed_rx.recv() => self.on_closed(http),
                b = self.broadcasts.recv() => self.on_broadcast(b),
                _ = sleep => self.on_timeout(),
                _ = shutdown.changed() => {
                    // Listens end with their `complete` result, not cut off.
                    let now = self.now();
                    self.driver.end_listens(now);
                    self.flush();
                    stopping = true;
                    break;
                }
            }
            // Register a new session before its initialize answer goes out:
            // the client may send its next request the moment it has the id.
            self.register();
            self.flush();
            self.report_admission();
            if self.finished() {
                break;
            }
            if self.idle() {
                match self.park() {
                    None => return,
                    Some(me) => self = me,
                }
            }
        }
        self.unregister();
        // Requests that reached this task after its session ended: a fresh
        // task answers them (404), none is dropped.
        inbox.mail.close();
        while let Some(m) = inbox.mail.try_recv() {
            if !stopping {
                let _ = spawn_session_task(&self.shared, None).send(m);
            }
        }
        let (count, notify) = &*self.shared.live;
        count.fetch_sub(1, Ordering::AcqRel);
        notify.notify_waiters();
    }

    /// Once the core has minted this task's session, requests naming it come here.
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

    /// Parks the session in the routing table and ends the task (`None`);
    /// gives itself back if a request arrived meanwhile.
    fn park(mut self) -> Option<Self> {
        let shared = self.shared.clone();
        let Ok(mut table) = shared.table.write() else {
            return Some(self);
        };
        if self.registered.is_none() {
            return Some(self);
        }
        // Closed only if nothing is queued, under the mailbox's own lock: a
        // request is either queued (the task goes on and takes it) or refused
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
            // A task without a session may open one: the shared table admits it.
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
                tracing::warn!(missed = n, "a session task fell behind on broadcasts");
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
