//! The client shell: hyper/tokio around [`ClientSession`].
//!
//! One owner task runs the core; each HTTP exchange the core starts runs in
//! its own task (its own connection), which decodes the response (JSON whole,
//! SSE through [`SseDecoder`]) and hands items back. An `Abort` from the core
//! aborts that task. The application talks to the owner through [`Client`].

use super::io::Connect;
use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::{LengthLimitError, Limited};
use hyper_util::rt::TokioIo;
use mcp_streamable::client::{
    ClientConfig, ClientError, ClientEvent, ClientOutput, ClientSession, ClientTransmitKind,
    ListenId, ServerRequests,
};
use mcp_streamable::head::{Content, RequestHead, ResponseHead};
use mcp_streamable::ids::{HttpId, RequestId};
use mcp_streamable::jsonrpc::{ErrorObject, RawJson};
use mcp_streamable::observe::Observation;
use mcp_streamable::policy::ClientPolicy;
use mcp_streamable::sse::{SseDecoder, SseError, SseItem};
use mcp_streamable::time::Instant;
use mcp_streamable::v2026::ListenFilter;
use std::collections::BTreeMap;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;

/// Why the shell could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// The URL is not `http://host:port/path`.
    #[error("bad URL {0:?}: expected http://host:port/path")]
    BadUrl(String),
    /// The core failed the request.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The command was refused by the core (not ready, closed, …).
    #[error("{0}")]
    Usage(String),
    /// The client task is gone.
    #[error("client stopped")]
    Stopped,
}

/// Answers server-to-client requests (sampling, elicitation, roots/list, …):
/// in the session era as they arrive, in the 2026-07-28 era each input
/// request of an `InputRequiredResult`, before the shell retries.
pub type RequestHandler =
    Box<dyn FnMut(&str, Option<RawJson>) -> Result<RawJson, ErrorObject> + Send>;

/// Settings of the client shell.
pub struct ClientOptions {
    /// The core's settings.
    pub config: ClientConfig,
    /// The policy.
    pub policy: ClientPolicy,
    /// `initialize` parameters besides `protocolVersion` (capabilities, clientInfo).
    pub initialize: RawJson,
    /// Answers server requests; without one (and without
    /// `answer_later`), the core answers each -32601 (method not found).
    pub handler: Option<RequestHandler>,
    /// Without a handler, server requests are the application's to answer
    /// when it is ready: each comes through [`Client::subscribe`] as
    /// [`ClientEvent::ServerRequest`] and is answered with
    /// [`Client::respond`]; one the server withdraws first comes as
    /// [`ClientEvent::ServerRequestCancelled`], and is no longer answered.
    pub answer_later: bool,
    /// Sees every observation (for the monitor).
    pub tap: Option<super::Tap>,
    /// The bearer token for each request (`Authorization: Bearer …`), asked
    /// anew for every request, so a refreshed token is sent as soon as the
    /// provider has it; the session goes on, since the server binds it to
    /// the token's subject, not its bytes. `None`: no `Authorization`.
    pub bearer: Option<TokenProvider>,
}

/// Gives the current bearer token, if there is one.
pub type TokenProvider = std::sync::Arc<dyn Fn() -> Option<String> + Send + Sync>;

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            config: ClientConfig::default(),
            policy: ClientPolicy::FIXED,
            initialize: RawJson::from(serde_json::json!({
                "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
                "clientInfo": {"name": "mcp-streamable", "version": env!("CARGO_PKG_VERSION")}
            })),
            handler: None,
            answer_later: false,
            tap: None,
            bearer: None,
        }
    }
}

/// Splits `http://host:port/path` into authority and path.
pub fn split_url(url: &str) -> Result<(String, String), ShellError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| ShellError::BadUrl(url.to_owned()))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(ShellError::BadUrl(url.to_owned()));
    }
    Ok((authority.to_owned(), path.to_owned()))
}

type Answer = Result<Result<RawJson, ErrorObject>, ClientError>;

enum Cmd {
    Initialize(oneshot::Sender<Result<RawJson, ShellError>>),
    Call {
        method: String,
        params: Option<RawJson>,
        id: oneshot::Sender<Result<RequestId, ShellError>>,
        answer: oneshot::Sender<Answer>,
    },
    Notify {
        method: String,
        params: Option<RawJson>,
    },
    Cancel(RequestId),
    Respond {
        id: RequestId,
        result: Result<RawJson, ErrorObject>,
        reply: oneshot::Sender<Result<(), ShellError>>,
    },
    Listen(ListenFilter, oneshot::Sender<Result<ListenId, ShellError>>),
    Unlisten(ListenId),
    Close(oneshot::Sender<()>),
}

enum Input {
    Head(HttpId, ResponseHead),
    Body(HttpId, Bytes),
    Sse(HttpId, SseItem),
    /// Part of the answer was over this many bytes and was not read.
    TooLarge(HttpId, usize),
    Closed(HttpId),
}

/// A connected MCP client.
pub struct Client {
    tx: mpsc::Sender<Cmd>,
    events: broadcast::Sender<ClientEvent>,
    owner: JoinHandle<()>,
}

impl Client {
    /// Starts the client and initializes a session with the server at `path`.
    pub async fn connect<C: Connect>(
        connector: C,
        authority: &str,
        path: &str,
        options: ClientOptions,
    ) -> Result<(Client, RawJson), ShellError> {
        let (tx, rx) = mpsc::channel(256);
        let (inputs_tx, inputs_rx) = mpsc::unbounded_channel();
        let (events, _) = broadcast::channel(1024);
        let owner = Owner {
            core: ClientSession::new(
                ClientConfig {
                    server_requests: if options.handler.is_some() || options.answer_later {
                        ServerRequests::Application
                    } else {
                        ServerRequests::Decline
                    },
                    ..options.config
                },
                options.policy,
            ),
            connector,
            authority: authority.to_owned(),
            path: path.to_owned(),
            start: tokio::time::Instant::now(),
            tasks: BTreeMap::new(),
            waiters: BTreeMap::new(),
            init: None,
            close: None,
            initialize: options.initialize,
            handler: options.handler,
            tap: options.tap,
            bearer: options.bearer,
            inputs_tx,
            events: events.clone(),
        };
        let owner = tokio::spawn(owner.run(rx, inputs_rx));
        let client = Client { tx, events, owner };
        let (reply, rx) = oneshot::channel();
        client
            .tx
            .send(Cmd::Initialize(reply))
            .await
            .map_err(|_| ShellError::Stopped)?;
        let result = rx.await.map_err(|_| ShellError::Stopped)??;
        Ok((client, result))
    }

    /// Sends a request and waits for its answer (a result or a JSON-RPC error).
    pub async fn request(
        &self,
        method: &str,
        params: Option<RawJson>,
    ) -> Result<Result<RawJson, ErrorObject>, ShellError> {
        let (_, answer) = self.start_request(method, params).await?;
        Ok(answer.await.map_err(|_| ShellError::Stopped)??)
    }

    /// Sends a request; returns its id (for `cancel`) and the answer to await.
    pub async fn start_request(
        &self,
        method: &str,
        params: Option<RawJson>,
    ) -> Result<(RequestId, oneshot::Receiver<Answer>), ShellError> {
        let (id_tx, id_rx) = oneshot::channel();
        let (answer_tx, answer_rx) = oneshot::channel();
        self.tx
            .send(Cmd::Call {
                method: method.to_owned(),
                params,
                id: id_tx,
                answer: answer_tx,
            })
            .await
            .map_err(|_| ShellError::Stopped)?;
        let id = id_rx.await.map_err(|_| ShellError::Stopped)??;
        Ok((id, answer_rx))
    }

    /// Calls a tool.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Value,
    ) -> Result<Result<RawJson, ErrorObject>, ShellError> {
        let params = RawJson::from(serde_json::json!({"name": name, "arguments": arguments}));
        self.request("tools/call", Some(params)).await
    }

    /// Calls a tool asking for progress notifications under `token`
    /// (`_meta.progressToken`); they arrive through [`Client::subscribe`].
    pub async fn call_tool_with_progress(
        &self,
        name: &str,
        arguments: serde_json::Value,
        token: serde_json::Value,
    ) -> Result<Result<RawJson, ErrorObject>, ShellError> {
        let params = RawJson::from(serde_json::json!({
            "name": name, "arguments": arguments, "_meta": {"progressToken": token}
        }));
        self.request("tools/call", Some(params)).await
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<RawJson>) -> Result<(), ShellError> {
        self.tx
            .send(Cmd::Notify {
                method: method.to_owned(),
                params,
            })
            .await
            .map_err(|_| ShellError::Stopped)
    }

    /// Cancels a request (`notifications/cancelled`; its answer becomes `Cancelled`).
    pub async fn cancel(&self, id: RequestId) -> Result<(), ShellError> {
        self.tx
            .send(Cmd::Cancel(id))
            .await
            .map_err(|_| ShellError::Stopped)
    }

    /// Answers server request `id` (held for the application with
    /// [`ClientOptions::answer_later`]) ([`Responder::respond`]).
    pub async fn respond(
        &self,
        id: RequestId,
        result: Result<RawJson, ErrorObject>,
    ) -> Result<(), ShellError> {
        self.responder().respond(id, result).await
    }

    /// A handle that answers server requests from another task.
    pub fn responder(&self) -> Responder {
        Responder {
            tx: self.tx.clone(),
        }
    }

    /// Listens for the change notifications `filter` names (2026-07-28
    /// only; the session era hears them on its background GET). The
    /// acknowledgement comes as [`ClientEvent::Listening`] (list what you
    /// show now), the notifications as [`ClientEvent::Notification`], both
    /// through [`Client::subscribe`]; a broken stream is listened again,
    /// the end is [`ClientEvent::ListenEnded`].
    pub async fn listen(&self, filter: ListenFilter) -> Result<ListenId, ShellError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Cmd::Listen(filter, reply))
            .await
            .map_err(|_| ShellError::Stopped)?;
        rx.await.map_err(|_| ShellError::Stopped)?
    }

    /// Stops a listen (closes its stream).
    pub async fn unlisten(&self, listen: ListenId) -> Result<(), ShellError> {
        self.tx
            .send(Cmd::Unlisten(listen))
            .await
            .map_err(|_| ShellError::Stopped)
    }

    /// Server notifications, server requests and session events, as they come.
    pub fn subscribe(&self) -> broadcast::Receiver<ClientEvent> {
        self.events.subscribe()
    }

    /// Ends the session (DELETE) and stops the client.
    pub async fn close(self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Cmd::Close(tx)).await.is_ok() {
            let _ = rx.await;
        }
        let _ = self.owner.await;
    }
}

/// Answers the server requests a [`Client`] holds for its application
/// ([`ClientOptions::answer_later`]), from any task.
#[derive(Clone)]
pub struct Responder {
    tx: mpsc::Sender<Cmd>,
}

impl Responder {
    /// Answers server request `id`. Refused for a request that is not held:
    /// answered already, withdrawn by the server, or never asked.
    pub async fn respond(
        &self,
        id: RequestId,
        result: Result<RawJson, ErrorObject>,
    ) -> Result<(), ShellError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Cmd::Respond { id, result, reply })
            .await
            .map_err(|_| ShellError::Stopped)?;
        rx.await.map_err(|_| ShellError::Stopped)?
    }
}

struct Owner<C: Connect> {
    core: ClientSession,
    connector: C,
    authority: String,
    path: String,
    start: tokio::time::Instant,
    tasks: BTreeMap<HttpId, JoinHandle<()>>,
    waiters: BTreeMap<RequestId, oneshot::Sender<Answer>>,
    init: Option<oneshot::Sender<Result<RawJson, ShellError>>>,
    close: Option<oneshot::Sender<()>>,
    initialize: RawJson,
    handler: Option<RequestHandler>,
    tap: Option<super::Tap>,
    bearer: Option<TokenProvider>,
    inputs_tx: mpsc::UnboundedSender<Input>,
    events: broadcast::Sender<ClientEvent>,
}

impl<C: Connect> Owner<C> {
    fn now(&self) -> Instant {
        super::clock::now(self.start)
    }

    fn observe(&mut self, o: Observation) {
        if let Some(tap) = &mut self.tap {
            tap(&o);
        }
    }

    async fn run(
        mut self,
        mut rx: mpsc::Receiver<Cmd>,
        mut inputs: mpsc::UnboundedReceiver<Input>,
    ) {
        loop {
            let next = self.core.poll_timeout().map(|(t, _)| t);
            let sleep = super::clock::sleep_until(self.start, next);
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(cmd) => self.on_command(cmd),
                    None => {
                        let now = self.now();
                        self.core.close(now);
                        self.pump();
                        return;
                    }
                },
                Some(input) = inputs.recv() => self.on_input(input),
                _ = sleep => {
                    let now = self.now();
                    self.core.handle_timeout(now);
                }
            }
            self.pump();
            if let Some(done) = self.close.take() {
                if self.tasks.is_empty() {
                    let _ = done.send(());
                    return;
                }
                self.close = Some(done);
            }
        }
    }

    fn on_command(&mut self, cmd: Cmd) {
        let now = self.now();
        match cmd {
            Cmd::Initialize(reply) => match self.core.initialize(self.initialize.clone(), now) {
                Ok(_) => self.init = Some(reply),
                Err(e) => {
                    let _ = reply.send(Err(ShellError::Usage(e.to_string())));
                }
            },
            Cmd::Call {
                method,
                params,
                id,
                answer,
            } => match self.core.send_request(&method, params, now) {
                Ok(rid) => {
                    self.waiters.insert(rid.clone(), answer);
                    let _ = id.send(Ok(rid));
                }
                Err(e) => {
                    let _ = id.send(Err(ShellError::Usage(e.to_string())));
                }
            },
            Cmd::Notify { method, params } => {
                let _ = self.core.notify(&method, params, now);
            }
            Cmd::Cancel(id) => {
                let _ = self.core.cancel(&id, now);
            }
            Cmd::Respond { id, result, reply } => {
                let done = self.core.respond(id, result, now);
                let _ = reply.send(done.map_err(|e| ShellError::Usage(e.to_string())));
            }
            Cmd::Listen(filter, reply) => {
                let listen = self.core.listen(filter, now);
                let _ = reply.send(listen.map_err(|e| ShellError::Usage(e.to_string())));
            }
            Cmd::Unlisten(listen) => {
                let _ = self.core.unlisten(listen);
            }
            Cmd::Close(done) => {
                self.core.close(now);
                self.close = Some(done);
            }
        }
    }

    fn on_input(&mut self, input: Input) {
        let now = self.now();
        match input {
            Input::Head(h, head) => self.core.handle_response_head(h, head, now),
            Input::Body(h, b) => {
                if let Ok(body) = mcp_streamable::jsonrpc::parse_body(
                    &b,
                    mcp_streamable::version::ProtocolVersion::V2025_03_26,
                ) {
                    for m in body.into_messages() {
                        self.observe(Observation::ClientReceived {
                            client: 0,
                            http: h,
                            message: m,
                        });
                    }
                }
                self.core.handle_body(h, &b, now)
            }
            Input::Sse(h, item) => {
                if let SseItem::Message { data, .. } = &item {
                    if let Ok(m) = mcp_streamable::jsonrpc::parse_message(data) {
                        self.observe(Observation::ClientReceived {
                            client: 0,
                            http: h,
                            message: m,
                        });
                    }
                }
                self.core.handle_sse_event(h, item, now)
            }
            Input::TooLarge(h, max) => self.core.handle_too_large(h, max),
            Input::Closed(h) => {
                self.tasks.remove(&h);
                self.observe(Observation::ClientClosed { client: 0, http: h });
                self.core.handle_http_closed(h, now);
            }
        }
    }

    /// The client core's observed drain ([`ClientSession::drain_observed`]):
    /// requests onto connections of their own, aborts to their tasks,
    /// events to whoever waits for them.
    fn pump(&mut self) {
        let now = self.now();
        let Owner {
            core,
            connector,
            authority,
            path,
            tasks,
            waiters,
            init,
            handler,
            tap,
            bearer,
            inputs_tx,
            events,
            ..
        } = self;
        let mut observe = |o: &Observation| {
            if let Some(tap) = tap {
                tap(o);
            }
        };
        let body_max = core.config().body_max;
        core.drain_observed(0, &mut observe, |core, out, _| match out {
            ClientOutput::Transmit(t) => match t.kind {
                ClientTransmitKind::Send { head, body } => {
                    let task = tokio::spawn(exchange(
                        connector.clone(),
                        authority.clone(),
                        path.clone(),
                        Outgoing {
                            http: t.http,
                            head,
                            body,
                            body_max,
                            authorization: bearer
                                .as_ref()
                                .and_then(|token| token())
                                .map(|t| format!("Bearer {t}")),
                        },
                        inputs_tx.clone(),
                    ));
                    tasks.insert(t.http, task);
                }
                ClientTransmitKind::Abort => {
                    if let Some(task) = tasks.remove(&t.http) {
                        task.abort();
                    }
                }
            },
            ClientOutput::Event(e) => {
                match &e {
                    ClientEvent::Initialized { result, .. } => {
                        if let Some(reply) = init.take() {
                            let _ = reply.send(Ok(result.clone()));
                        }
                    }
                    ClientEvent::Response { id, result } => {
                        if let Some(w) = waiters.remove(id) {
                            let _ = w.send(Ok(result.clone()));
                        }
                    }
                    ClientEvent::Failed { id, error } => {
                        if let Some(w) = waiters.remove(id) {
                            let _ = w.send(Err(error.clone()));
                        } else if let Some(reply) = init.take() {
                            let _ = reply.send(Err(ShellError::Client(error.clone())));
                        }
                    }
                    ClientEvent::ServerRequest { id, method, params } => {
                        // Without a handler the core declines them itself (-32601).
                        if let Some(h) = handler {
                            let answer = h(method, params.clone());
                            let _ = core.respond(id.clone(), answer, now);
                        }
                    }
                    ClientEvent::InputRequired { id, requests, .. } => {
                        // Without a handler the core fails these itself
                        // (`InputDeclined`).
                        if let Some(h) = handler {
                            let answers = answer_inputs(h, requests);
                            let _ = core.provide_input(id, answers, now);
                        }
                    }
                    _ => {}
                }
                let _ = events.send(e);
            }
        });
    }
}

/// The handler's answer to each input request of an `InputRequiredResult`,
/// keyed as the server keyed them. One the handler fails is left out: the
/// server asks again (bounded by `input_rounds_max`) or does without.
fn answer_inputs(handler: &mut RequestHandler, requests: &RawJson) -> RawJson {
    let asked = requests.to_value();
    let answers: serde_json::Map<String, serde_json::Value> = asked
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, request)| {
            let method = request.get("method")?.as_str()?;
            let params = request.get("params").cloned().map(RawJson::from);
            let answer = handler(method, params).ok()?;
            Some((key.clone(), answer.to_value()))
        })
        .collect();
    RawJson::from(serde_json::Value::Object(answers))
}

/// One request the core asked to send, and how much of a whole answer to read.
struct Outgoing {
    http: HttpId,
    head: RequestHead,
    body: Vec<u8>,
    body_max: usize,
    /// `Authorization`, from the options' token provider.
    authorization: Option<String>,
}

/// Runs one HTTP exchange on its own connection and reports what comes back.
async fn exchange<C: Connect>(
    connector: C,
    authority: String,
    path: String,
    out: Outgoing,
    inputs: mpsc::UnboundedSender<Input>,
) {
    let http = out.http;
    let _ = run_exchange(connector, authority, path, out, &inputs).await;
    let _ = inputs.send(Input::Closed(http));
}

async fn run_exchange<C: Connect>(
    connector: C,
    authority: String,
    path: String,
    out: Outgoing,
    inputs: &mpsc::UnboundedSender<Input>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let Outgoing {
        http,
        head,
        body,
        body_max,
        authorization,
    } = out;
    let io = connector.connect().await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    let driver = tokio::spawn(conn);
    let mut builder = hyper::Request::builder()
        .method(head.method.as_str())
        .uri(path)
        .header(hyper::header::HOST, authority);
    for (name, value) in &head.headers {
        builder = builder.header(name.as_ref(), value.as_str());
    }
    if let Some(value) = authorization {
        builder = builder.header(hyper::header::AUTHORIZATION, value);
    }
    let request = builder.body(http_body_util::Full::new(Bytes::from(body)))?;
    let response = sender.send_request(request).await?;
    let rh = ResponseHead::from_wire(
        response.status().as_u16(),
        response
            .headers()
            .iter()
            .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?))),
    );
    let content = rh.content;
    inputs.send(Input::Head(http, rh))?;
    let mut body = response.into_body();
    match content {
        Content::Sse => {
            let mut decoder = SseDecoder::new();
            let mut items = Vec::new();
            while let Some(frame) = body.frame().await {
                let Ok(data) = frame?.into_data() else {
                    continue;
                };
                let over = decoder.feed(&data, &mut items).err();
                for item in items.drain(..) {
                    inputs.send(Input::Sse(http, item))?;
                }
                // The decoder dropped an event (or line) over its bound and
                // reads on: the core hears of it, so it is not lost unsaid.
                if let Some(SseError::LineTooLong { max } | SseError::DataTooLong { max }) = over {
                    inputs.send(Input::TooLarge(http, max))?;
                }
            }
        }
        // Past `body_max` the read stops and the core hears why.
        Content::Json | Content::None => {
            let bytes = match Limited::new(body, body_max).collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                    inputs.send(Input::TooLarge(http, body_max))?;
                    driver.abort();
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            // An empty body says nothing the head did not.
            if !bytes.is_empty() {
                inputs.send(Input::Body(http, bytes))?;
            }
        }
    }
    driver.abort();
    Ok(())
}
