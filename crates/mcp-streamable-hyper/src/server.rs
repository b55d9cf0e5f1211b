//! The server shell: hyper/tokio around the server core, one owner per
//! session.
//!
//! ```text
//!  connection tasks                     routing table (handles only)       session owners
//!  ────────────────                     ───────────────────────────        ──────────────
//!  head + bounded body ──Mcp-Session-Id known?──running──▶ its owner's inbox ─▶ its endpoint
//!                                        ├──parked──▶ its owner, woken inline   + its app
//!                                        └──no──▶ a fresh one-session endpoint, inline:
//!                                                 it answers (initialize → a session,
//!                                                 which the owner registers; else 400/404/…)
//!  write head, then body ◀── whole body, or a bounded stream of SSE frames ──┘
//!  body dropped (ended or client gone) ──closed──▶ endpoint.handle_http_closed
//! ```
//! Each owner (`crates/mcp-streamable-hyper/src/owner.rs`) holds its core and its application
//! instance in a [`ServerDriver`](mcp_streamable::server::ServerDriver): no shared mutable state beyond the table
//! of session slots and the admission table. A request whose session has no
//! running owner is served on the connection task itself; an owner is a
//! task only while something outlives a request (an open stream, queued
//! requests, an application timer), and parks again when idle. Every decision (statuses, routing, ids, replay, headers, bytes,
//! whole body or stream) is the core's; the shell moves the driver's
//! [`Write`]s to hyper and time to the driver. An owner ends when its
//! session has ended and its exchanges are closed.

use super::body::ResponseBody;
use super::exchanges::{ConnCut, QueueBounds, Reply};
use super::head_watch::{HeadWatch, Watched};
use super::io::Listen;
use super::owner::Owner;
use super::shared::{Shared, Target};
use crate::sync::{Mailbox, SendError};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_streamable::app::App;
use mcp_streamable::error::RequestError;
use mcp_streamable::head::{Method, RequestHead};
use mcp_streamable::headers;
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::SessionId;
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::principal::Principal;
use mcp_streamable::server::wire::{WireHead, Write};
use mcp_streamable::server::{upload_len, Upload, Uploads};
use mcp_streamable::server::{EndpointConfig, UnreadBody};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, watch, Notify};
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
    /// The applications' secret ([`mcp_streamable::server::ServerEndpoint::app_secret`]: the key of
    /// MRTR `requestState`), the same for every session task; `None` draws
    /// one from `ids` at start. A fleet sets one secret on every instance.
    pub app_secret: Option<[u8; 32]>,
    /// Frames queued on one streaming response before its client counts as
    /// too slow and the connection is closed (the stream stays resumable).
    pub frames_queued_max: usize,
    /// Bytes queued on one streaming response before its client counts as
    /// too slow, likewise: a reader that does not read costs at most this.
    pub frame_bytes_queued_max: usize,
    /// Bytes queued on all of one session's streaming responses, ended
    /// ones its client has not read yet included: past it, the connections
    /// furthest behind are closed (their streams stay resumable), so a
    /// client that opens many streams and reads none pins at most this
    /// much of the server's memory for its session, however many
    /// connections it holds.
    pub session_bytes_queued_max: usize,
    /// Requests queued for one session's task.
    pub requests_queued_max: usize,
    /// Broadcasts (list changes, resource updates) queued for a session task
    /// that has not taken them yet, parked ones included: one that falls
    /// further behind loses the oldest, and says so in the log.
    pub broadcasts_queued_max: usize,
    /// Open connections at once (capped by what the process's descriptor
    /// limit allows, less a few it keeps for itself); at the cap a newcomer
    /// closes the connection that has waited longest for a request head,
    /// and waits for one to end only when none is idle, so idle sockets
    /// neither exhaust the descriptors nor lock newcomers out.
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
    /// The path our accept loop serves MCP at ([`Server::bind`] and the
    /// fleet's server): a request for any other path is refused with 404
    /// ([`RequestError::UnknownPath`]) before any session sees it, the way a
    /// router in front would. `None` serves every path (the service mounted
    /// behind a router of its own does not read this: the router decides).
    pub path: Option<Arc<str>>,
    /// Who is calling ([`crate::auth`]): the application's hook, which
    /// refuses with `401` and the resource's metadata; without one, a
    /// [`Principal`] a layer in front
    /// put in the request's extensions, else nobody. Sessions are bound to
    /// the principal that opened them.
    pub auth: crate::auth::Auth,
    /// Under a preset whose steps leave a window (a listen registered before
    /// its acknowledgement, a GET's `200` before its stream is wired), how
    /// long each such step waits before it runs
    /// ([`ServerDriver::with_step_delay`]): what arrives meanwhile lands in
    /// the window, as it would under a slow scheduler. `None` takes each
    /// step in the turn that enabled it. Nothing changes under FIXED.
    ///
    /// [`ServerDriver::with_step_delay`]: mcp_streamable::server::ServerDriver::with_step_delay
    pub step_delay: Option<std::time::Duration>,
}

impl ServerOptions {
    /// The bounds of one owner's queued frames.
    pub(crate) fn queue_bounds(&self) -> QueueBounds {
        QueueBounds {
            frames_queued_max: self.frames_queued_max,
            frame_bytes_queued_max: self.frame_bytes_queued_max,
            bytes_queued_max: self.session_bytes_queued_max,
        }
    }
}

/// Where [`Server::bind`] serves MCP unless told otherwise
/// ([`ServerOptions::path`]), as the SDKs' examples do.
pub const DEFAULT_PATH: &str = "/mcp";

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
            session_bytes_queued_max: 4 << 20,
            requests_queued_max: 1024,
            broadcasts_queued_max: 1024,
            connections_max: 1024,
            header_read_timeout: std::time::Duration::from_secs(10),
            body_read_timeout: std::time::Duration::from_secs(30),
            accept_backoff_max: std::time::Duration::from_secs(1),
            path: Some(Arc::from(DEFAULT_PATH)),
            auth: crate::auth::Auth::default(),
            step_delay: None,
        }
    }
}

/// A running server.
pub struct ServerHandle {
    /// The address it listens on (TCP).
    pub addr: Option<SocketAddr>,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) accept: JoinHandle<()>,
    pub(crate) live: Arc<Live>,
    /// Set once the server stopped serving on its own ([`ServerHandle::halted`]).
    pub(crate) halted: watch::Receiver<bool>,
}

/// What every owner holds strongly: how many owners are live, which a
/// shutdown waits on (an owner that outlives the shared state, a stream
/// ended by the shutdown, still counts itself out), and the epoch every
/// session's clock counts from, so that times in the admission table
/// compare across owners (held here rather than in each owner: a parked
/// session's 16 bytes).
pub(crate) struct Live {
    pub(crate) count: AtomicUsize,
    pub(crate) notify: Notify,
    pub(crate) epoch: tokio::time::Instant,
}

impl Live {
    /// `count` live owners, the epoch now.
    pub(crate) fn new(count: usize) -> Arc<Live> {
        Arc::new(Live {
            count: AtomicUsize::new(count),
            notify: Notify::new(),
            epoch: tokio::time::Instant::now(),
        })
    }
}

impl ServerHandle {
    /// Resolves once the server has stopped serving on its own, not by
    /// [`ServerHandle::shutdown`]: a fleet instance whose store was lost
    /// (`http::fleet`), which then answers every request 503 until its
    /// process is restarted. A plain server never does. `serve` exits on it,
    /// so that a supervisor restarts the instance once its store is back.
    pub async fn halted(&self) {
        let mut halted = self.halted.clone();
        loop {
            if *halted.borrow_and_update() {
                return;
            }
            if halted.changed().await.is_err() {
                // Nobody can set it any more: it never happens.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Stops accepting, ends every stream, and waits for every task.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.accept.await;
        let (count, notify) = (&self.live.count, &self.live.notify);
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
pub(super) enum ToOwner {
    Request(Box<RequestForOwner>),
    Evict(SessionId),
}

/// A session task's inbox: the mailbox (shared with the loom models, see
/// [`crate::sync`]) and the task's wake-up.
pub(super) struct Inbox {
    pub(super) mail: Mailbox<ToOwner>,
    wake: Notify,
}

impl Inbox {
    pub(super) fn new(queued_max: usize) -> Arc<Inbox> {
        Arc::new(Inbox {
            mail: Mailbox::new(queued_max),
            wake: Notify::new(),
        })
    }

    pub(super) fn send(&self, m: ToOwner) -> Result<(), SendError<ToOwner>> {
        self.mail.send(m)?;
        self.wake.notify_one();
        Ok(())
    }

    /// The next request; `None` once closed and drained. `notify_one` keeps a
    /// permit when nobody waits, so a send between the check and the wait
    /// still wakes us.
    pub(super) async fn recv(&self) -> Option<ToOwner> {
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

pub(super) struct RequestForOwner {
    pub(super) head: RequestHead,
    pub(super) body: Result<Bytes, UnreadBody>,
    pub(super) peer: Option<SocketAddr>,
    pub(super) principal: Option<Principal>,
    /// Closes the request's connection, when our accept loop serves it.
    pub(super) cut: Option<ConnCut>,
    pub(super) reply: oneshot::Sender<Reply>,
}

/// The whole body, within the core's bound (refused at once when
/// `Content-Length` already says more: nothing read, no `100 Continue`) and
/// the body read timeout.
pub(crate) async fn read_body<B: RequestBody>(
    head: &RequestHead,
    body: B,
    options: &ServerOptions,
) -> Result<Bytes, UnreadBody> {
    let max = mcp_streamable::server::body_limit(head, options.endpoint.body_max)?;
    let collect = http_body_util::Limited::new(body, max).collect();
    match tokio::time::timeout(options.body_read_timeout, collect).await {
        Err(_) => Err(UnreadBody::TimedOut),
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(UnreadBody::TooLarge),
        Ok(Err(_)) => Err(UnreadBody::Unreadable),
    }
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
    pub(super) shared: Arc<Shared<A>>,
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
        let (peer, cut) = peer_of(&req);
        self.serve(req, peer, cut)
    }
}

impl<A: App> McpService<A> {
    /// `req`, which came from `peer` on a connection `cut` closes, answered:
    /// what every way of calling the service comes to.
    fn serve<B: RequestBody>(
        &self,
        req: hyper::Request<B>,
        peer: Option<SocketAddr>,
        cut: Option<ConnCut>,
    ) -> McpFuture {
        Box::pin(serve_one(req, peer, cut, self.shared.clone()))
    }
}

/// The peer an embedding put in the request's extensions ([`PeerAddr`]),
/// and the handle our accept loop put there to close its connection.
pub(crate) fn peer_of<B>(req: &hyper::Request<B>) -> (Option<SocketAddr>, Option<ConnCut>) {
    let peer = req.extensions().get::<PeerAddr>().map(|p| p.0);
    (peer, req.extensions().get::<ConnCut>().cloned())
}

/// A service our own accept loop calls with the connection's peer in hand:
/// no [`PeerAddr`] in the request's extensions (their map is three
/// allocations per request, and a lookup).
pub(crate) trait ServeFrom: Clone + Send + Sync + 'static {
    /// The body of its answers.
    type Body: hyper::body::Body<Data = Bytes, Error: Into<BoxError>> + Send + Unpin + 'static;
    /// Answers `req`, which came from `peer` on a connection `cut` closes.
    fn serve_from(
        &self,
        req: hyper::Request<Incoming>,
        peer: Option<SocketAddr>,
        cut: ConnCut,
    ) -> Served<Self::Body>;
    /// The loop's own refusal (a path it does not serve) as one of its answers.
    fn refusal(r: hyper::Response<ResponseBody>) -> hyper::Response<Self::Body>;
}

/// An answer on its way: what [`Routes::answer`] returns.
pub type Served<B> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<hyper::Response<B>, Infallible>> + Send>,
>;

/// An error any body may end with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<A: App> ServeFrom for McpService<A> {
    type Body = ResponseBody;
    fn serve_from(
        &self,
        req: hyper::Request<Incoming>,
        peer: Option<SocketAddr>,
        cut: ConnCut,
    ) -> McpFuture {
        self.serve(req, peer, Some(cut))
    }
    fn refusal(r: hyper::Response<ResponseBody>) -> hyper::Response<ResponseBody> {
        r
    }
}

/// What [`Server::serve_service`] serves: any tower service of hyper
/// requests that answers every request (`Error = Infallible`), such as an
/// axum `Router` with an [`McpService`] mounted in it.
pub trait Routes: Clone + Send + Sync + 'static {
    /// The body of its answers.
    type Body: hyper::body::Body<Data = Bytes, Error: Into<BoxError>> + Send + Unpin + 'static;
    /// Answers `req`, once the service is ready.
    fn answer(&self, req: hyper::Request<Incoming>) -> Served<Self::Body>;
}

impl<S, B> Routes for S
where
    S: tower_service::Service<
            hyper::Request<Incoming>,
            Response = hyper::Response<B>,
            Error = Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
    B: hyper::body::Body<Data = Bytes, Error: Into<BoxError>> + Send + Unpin + 'static,
{
    type Body = B;
    fn answer(&self, req: hyper::Request<Incoming>) -> Served<B> {
        let mut service = self.clone();
        Box::pin(async move {
            std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
            service.call(req).await
        })
    }
}

/// A [`Routes`] on our accept loop: the peer goes in each request's
/// extensions as a [`PeerAddr`], where a mounted `McpService` reads it.
#[derive(Clone)]
struct Routed<S>(S);

impl<S: Routes> ServeFrom for Routed<S> {
    type Body = http_body_util::Either<ResponseBody, S::Body>;
    fn serve_from(
        &self,
        mut req: hyper::Request<Incoming>,
        peer: Option<SocketAddr>,
        cut: ConnCut,
    ) -> Served<Self::Body> {
        if let Some(peer) = peer {
            req.extensions_mut().insert(PeerAddr(peer));
        }
        req.extensions_mut().insert(cut);
        let answer = self.0.answer(req);
        Box::pin(async move { Ok(answer.await?.map(http_body_util::Either::Right)) })
    }
    fn refusal(r: hyper::Response<ResponseBody>) -> hyper::Response<Self::Body> {
        r.map(http_body_util::Either::Left)
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
        let (peer, cut) = peer_of(&req);
        self.serve(req, peer, cut)
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
        let live = Live::new(0);
        let shared = Arc::new(Shared::new(
            options,
            Box::new(make_app),
            tap,
            shutdown_rx,
            live.clone(),
        ));
        let handle = ServerHandle {
            addr: None,
            shutdown,
            accept: tokio::spawn(async {}),
            live,
            halted: watch::channel(false).1,
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

    /// Serves `service` on `listener` within `options`' connection bounds
    /// (`connections_max`, `header_read_timeout`, `accept_backoff_max`): any
    /// tower service of hyper requests, such as an axum `Router` with the
    /// [`McpService`] of [`Server::start`] mounted in it. The accept loop is
    /// [`Server::bind`]'s, so a silent socket is closed and open connections
    /// are capped as they are for our own server, which a general-purpose
    /// `serve` (axum's) does not do. Each request carries the peer as a
    /// [`PeerAddr`] in its extensions. `options.path` is not read: the
    /// service routes. The handle's `shutdown` stops accepting and tells
    /// every connection to finish its open requests; stop the MCP side with
    /// its own handle.
    pub fn serve_service<L: Listen, S: Routes>(
        listener: L,
        options: &ServerOptions,
        service: S,
    ) -> ServerHandle {
        let (shutdown, stop) = watch::channel(false);
        let options = ServerOptions {
            path: None,
            ..options.clone()
        };
        ServerHandle {
            addr: None,
            shutdown,
            accept: tokio::spawn(accept_loop(listener, options, Routed(service), stop)),
            live: Live::new(0),
            halted: watch::channel(false).1,
        }
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
        let options = service.shared.options().clone();
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
    S: ServeFrom,
{
    let options = &options;
    let cap = connection_cap(options.connections_max);
    let slots = Arc::new(tokio::sync::Semaphore::new(cap));
    let idle = Arc::new(Idle::default());
    let (header_timeout, backoff_max) = (options.header_read_timeout, options.accept_backoff_max);
    let mut backoff = std::time::Duration::ZERO;
    let mut next_conn = 0u64;
    loop {
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
        // A slot for it: at the cap, the connection idle the longest (waiting
        // for a request head) is closed to make room; with none idle the
        // newcomer waits for one to end.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if let Some(cut) = idle.longest() {
                    tracing::debug!(
                        "at connections_max: the longest-idle connection closed for a newcomer"
                    );
                    cut.cut();
                }
                tokio::select! {
                    s = slots.clone().acquire_owned() => match s {
                        Ok(s) => s,
                        Err(_) => return,
                    },
                    _ = shutdown.changed() => return,
                }
            }
        };
        let peer = L::peer(&io);
        let service = service.clone();
        let path = options.path.clone();
        let auth = options.auth.clone();
        let mut stop = shutdown.clone();
        let cut = ConnCut::new();
        next_conn += 1;
        // The header-read deadline, kept lazily (crates/mcp-streamable-hyper/src/head_watch.rs):
        // not hyper's timer, which costs a timer per request. Registered here,
        // before the task first runs: a newcomer accepted right after must
        // find it to displace.
        let watch = HeadWatch::new();
        let registered = idle.register(next_conn, watch.clone(), cut.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let _registered = registered;
            let requests = watch.clone();
            let cuts = cut.clone();
            let svc = hyper::service::service_fn(move |req| {
                let request = requests.request();
                let metadata = auth.metadata_response(req.method(), req.uri().path());
                let answer = match metadata.or_else(|| elsewhere(&req, path.as_deref())) {
                    Some(refusal) => Box::pin(std::future::ready(Ok(S::refusal(refusal)))),
                    None => service.serve_from(req, peer, cuts.clone()),
                };
                async move {
                    let response = answer.await?;
                    Ok::<_, Infallible>(response.map(|body| Watched::new(body, request)))
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .max_buf_size(READ_BUF_MAX)
                .serve_connection(TokioIo::new(io), svc);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "connection ended");
                    }
                }
                () = watch.overdue(header_timeout) => {
                    tracing::debug!("no request head in time: connection closed");
                }
                () = cut.cut_off() => {
                    tracing::debug!("a reader too slow, or past its session's budget: connection closed");
                }
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
}

/// Descriptors kept for what is not a client connection: listeners, the
/// store's links, files, the standard streams.
const DESCRIPTORS_RESERVED: u64 = 32;

/// The connection cap: `connections_max`, within what the process may open
/// (its descriptor limit less [`DESCRIPTORS_RESERVED`]): a cap the process
/// cannot reach would let idle sockets exhaust its descriptors, where
/// newcomers then wait for an accept that fails instead of displacing them.
fn connection_cap(connections_max: usize) -> usize {
    #[cfg(unix)]
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .map(|n| n.saturating_sub(DESCRIPTORS_RESERVED).max(1));
    #[cfg(not(unix))]
    let limit: Option<u64> = None;
    let limit = limit.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    connections_max.min(limit).max(1)
}

/// The connections waiting for a request head, which a newcomer may
/// displace at the cap: each registers while it lives.
#[derive(Default)]
struct Idle(Mutex<BTreeMap<u64, (Arc<HeadWatch>, ConnCut)>>);

impl Idle {
    /// Connection `id`, registered until the returned guard is dropped.
    fn register(self: &Arc<Self>, id: u64, watch: Arc<HeadWatch>, cut: ConnCut) -> Registered {
        if let Ok(mut m) = self.0.lock() {
            m.insert(id, (watch, cut));
        }
        Registered(self.clone(), id)
    }

    /// The connection that has waited longest for a head, if any waits.
    fn longest(&self) -> Option<ConnCut> {
        let m = self.0.lock().ok()?;
        m.values()
            .filter_map(|(w, cut)| Some((w.waiting_since()?, cut)))
            .min_by_key(|(since, _)| *since)
            .map(|(_, cut)| cut.clone())
    }
}

/// A connection's registration in [`Idle`].
struct Registered(Arc<Idle>, u64);

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut m) = self.0 .0.lock() {
            m.remove(&self.1);
        }
    }
}

/// hyper's read buffer per connection at most: it is kept as long as the
/// connection lives, so the default (about 400 KiB, reached by any large
/// body) held by hundreds of idle keep-alive connections is hundreds of MB.
/// Bodies stream through it; a larger one only takes more reads.
const READ_BUF_MAX: usize = 64 << 10;

/// The 404 for a request whose path is not `endpoint`, if it is not.
fn elsewhere<B>(
    req: &hyper::Request<B>,
    endpoint: Option<&str>,
) -> Option<hyper::Response<ResponseBody>> {
    let endpoint = endpoint?;
    let path = req.uri().path();
    if path == endpoint {
        return None;
    }
    Some(refusal(&RequestError::UnknownPath {
        path: path.to_owned(),
        endpoint: endpoint.to_owned(),
    }))
}

async fn serve_one<A: App, B: RequestBody>(
    req: hyper::Request<B>,
    peer: Option<SocketAddr>,
    cut: Option<ConnCut>,
    shared: Arc<Shared<A>>,
) -> Result<hyper::Response<ResponseBody>, Infallible> {
    let Taken {
        head,
        body,
        principal,
        upload: _reading,
    } = match take_request(req, shared.options(), shared.reading()).await {
        Ok(taken) => taken,
        Err(refused) => return Ok(refused),
    };
    let (reply, rx) = oneshot::channel();
    let sid = shared.session_for(&head, &body);
    let mut request = Box::new(RequestForOwner {
        head,
        body,
        peer,
        principal,
        cut,
        reply,
    });
    let mut delivered = false;
    // An owner that has just parked closes its mailbox: look the session up again.
    for _ in 0..4 {
        let inbox = match shared.target(sid.as_ref()) {
            // A fresh endpoint answers here, on this task (crates/mcp-streamable-hyper/src/owner.rs).
            Target::Nobody => {
                Owner::fresh(&shared).serve_inline(*request);
                delivered = true;
                break;
            }
            // Woken: served here when its client uses it one request at a
            // time, else as a task that takes the burst (crates/mcp-streamable-hyper/src/owner.rs).
            Target::Woken(owner) if owner.serves_inline(request.peer) => {
                owner.serve_inline(*request);
                delivered = true;
                break;
            }
            Target::Woken(owner) => owner.spawn(),
            Target::Running(inbox) => inbox,
        };
        match inbox.send(ToOwner::Request(request)) {
            Ok(()) => {
                delivered = true;
                break;
            }
            Err(SendError::Closed(ToOwner::Request(r))) => request = r,
            // Overloaded: `requests_queued_max` requests already wait.
            Err(_) => break,
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

/// A request as the core takes it: its head, its body (or why it could not
/// be read) and who sent it; or the refusal of the authentication hook,
/// before any of the body is read. Every shell that serves takes it so.
pub(crate) async fn take_request<B: RequestBody>(
    req: hyper::Request<B>,
    options: &ServerOptions,
    reading: &Reading,
) -> Result<Taken, hyper::Response<ResponseBody>> {
    let (parts, body) = req.into_parts();
    let principal = options
        .auth
        .principal(&parts)
        .map_err(|challenge| crate::auth::refused(&challenge))?;
    let head = request_head(&parts);
    // A POST naming a session: its body counts against that session's
    // budget while it is read (the core's `Uploads`), refused unread past it.
    let upload = match head
        .header(headers::MCP_SESSION_ID)
        .and_then(|s| s.parse::<SessionId>().ok())
    {
        Some(sid) if head.method == Method::Post => Some(
            reading
                .begin(&sid, principal.as_ref(), &head, options)
                .map_err(|e| refusal(&e))?,
        ),
        _ => None,
    };
    let body = read_body(&head, body, options).await;
    Ok(Taken {
        head,
        body,
        principal,
        upload,
    })
}

/// A request as [`take_request`] took it.
pub(crate) struct Taken {
    pub(crate) head: RequestHead,
    pub(crate) body: Result<Bytes, UnreadBody>,
    pub(crate) principal: Option<Principal>,
    /// Its body's bytes, counted against its session's budget until the
    /// session has taken or refused it (dropped then).
    pub(crate) upload: Option<BodyCount>,
}

/// The bodies being read, by the session they name and who sends them (the
/// core's [`Uploads`]), shared by a server's connection tasks.
#[derive(Clone, Default)]
pub(crate) struct Reading(Arc<Mutex<Uploads>>);

/// One body's bytes, counted against its session until dropped.
pub(crate) struct BodyCount {
    uploads: Arc<Mutex<Uploads>>,
    upload: Option<Upload>,
}

impl Drop for BodyCount {
    fn drop(&mut self) {
        if let (Some(upload), Ok(mut uploads)) = (self.upload.take(), self.uploads.lock()) {
            uploads.end(upload);
        }
    }
}

impl Reading {
    /// Begins reading `head`'s body for `sid` from `principal`: its count,
    /// or the core's refusal (429).
    fn begin(
        &self,
        sid: &SessionId,
        principal: Option<&Principal>,
        head: &RequestHead,
        options: &ServerOptions,
    ) -> Result<BodyCount, RequestError> {
        let bytes = upload_len(head, options.endpoint.body_max);
        let max = options.endpoint.session.in_flight_bytes_max;
        let upload = self
            .0
            .lock()
            .map_err(|_| RequestError::Overloaded)?
            .begin(sid, principal, bytes, max)?;
        Ok(BodyCount {
            uploads: self.0.clone(),
            upload: Some(upload),
        })
    }
}

/// The core's view of a request's head: its method and the headers the
/// cores read ([`headers::kept_on_requests`]: the known ones named by their
/// constants, and every `Mcp-*` header; any other header is no input of
/// theirs and is not copied).
pub(crate) fn request_head(req: &hyper::http::request::Parts) -> RequestHead {
    let mut headers = Vec::with_capacity(req.headers.len().min(headers::READ_ON_REQUESTS.len()));
    for (n, v) in &req.headers {
        let Some(name) = headers::kept_on_requests(n.as_str()) else {
            continue;
        };
        let value = match v.to_str() {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(v.as_bytes()).into_owned(),
        };
        headers.push((name, value));
    }
    RequestHead {
        method: Method::parse(req.method.as_str()),
        headers,
    }
}

/// Wakes parked sessions whose idle deadline has passed, so their cores can
/// expire them (every `period`).
async fn sweep<A: App>(shared: Arc<Shared<A>>, period: std::time::Duration) {
    let mut shutdown = shared.shutdown();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.changed() => return,
        }
        // Woken as tasks, which see their deadline passed and expire them.
        for sid in shared.due(tokio::time::Instant::now()) {
            if let Target::Woken(owner) = shared.target(Some(&sid)) {
                owner.spawn();
            }
        }
    }
}

/// The shell's own refusal when a session's queue of requests is full: the
/// core's answer for [`RequestError::Overloaded`].
pub(crate) fn unavailable() -> hyper::Response<ResponseBody> {
    refusal(&RequestError::Overloaded)
}

/// The whole response the core writes for `error`.
fn refusal(error: &RequestError) -> hyper::Response<ResponseBody> {
    let Write::Whole { head, body } = Write::refusal(error) else {
        unreachable!("a refusal is a whole response")
    };
    response(head, ResponseBody::full(Bytes::from(body)))
}

/// The hyper response for a head the core wrote.
pub(crate) fn response(head: WireHead, body: ResponseBody) -> hyper::Response<ResponseBody> {
    let mut r = hyper::Response::new(body);
    *r.status_mut() = hyper::StatusCode::from_u16(head.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    h.reserve(head.headers.len());
    for (name, value) in head.headers {
        // A constant is borrowed; an owned value's bytes move into the
        // header (validated, not copied).
        let bytes = match value {
            std::borrow::Cow::Borrowed(text) => Bytes::from_static(text.as_bytes()),
            std::borrow::Cow::Owned(text) => Bytes::from(text),
        };
        let value = hyper::header::HeaderValue::from_maybe_shared(bytes);
        if let (Some(n), Ok(v)) = (header_name(name), value) {
            h.insert(n, v);
        }
    }
    r
}

/// The names the core writes, made once; any other is parsed.
fn header_name(name: &'static str) -> Option<hyper::header::HeaderName> {
    use hyper::header::{self, HeaderName};
    const MCP_SESSION_ID: HeaderName = HeaderName::from_static(headers::MCP_SESSION_ID);
    const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static(headers::X_ACCEL_BUFFERING);
    Some(match name {
        headers::CONTENT_TYPE => header::CONTENT_TYPE,
        headers::CACHE_CONTROL => header::CACHE_CONTROL,
        headers::MCP_SESSION_ID => MCP_SESSION_ID,
        headers::X_ACCEL_BUFFERING => X_ACCEL_BUFFERING,
        headers::ALLOW => header::ALLOW,
        other => return HeaderName::from_bytes(other.as_bytes()).ok(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_embedding_names_the_peer_in_the_extensions() {
        let addr: SocketAddr = "127.0.0.1:4000".parse().expect("an address");
        let mut req = hyper::Request::new(());
        assert_eq!(peer_of(&req).0, None);
        req.extensions_mut().insert(PeerAddr(addr));
        assert_eq!(peer_of(&req).0, Some(addr));
    }

    #[test]
    fn the_head_holds_the_headers_the_cores_read_each_time_they_come() {
        let req = hyper::Request::post("/mcp")
            .header("host", "a")
            .header("user-agent", "x")
            .header("origin", "http://one")
            .header("origin", "http://two")
            .header("mcp-session-id", "s")
            .header("x-forwarded-for", "1.2.3.4")
            .body(())
            .expect("request")
            .into_parts()
            .0;
        let head = request_head(&req);
        assert_eq!(head.method, Method::Post);
        let names: Vec<&str> = head.headers.iter().map(|(n, _)| n.as_ref()).collect();
        // Repeats kept: a second Origin or Host is refused by the core.
        assert_eq!(names, ["host", "origin", "origin", "mcp-session-id"]);
        assert_eq!(head.headers[2].1, "http://two");
        assert!(head
            .headers
            .iter()
            .all(|(n, _)| matches!(n, std::borrow::Cow::Borrowed(_))));
    }

    #[test]
    fn a_response_carries_the_cores_headers_constant_or_owned() {
        let head = WireHead::of(&mcp_streamable::head::ResponseHead {
            status: 200,
            content: mcp_streamable::head::Content::Sse,
            session_id: "abc".parse().ok(),
            allow: false,
        });
        let r = response(head, ResponseBody::full(Bytes::new()));
        let h = r.headers();
        assert_eq!(h["content-type"], "text/event-stream");
        assert_eq!(h["cache-control"], "no-cache");
        assert_eq!(h["x-accel-buffering"], "no");
        assert_eq!(h["mcp-session-id"], "abc");
    }
}
