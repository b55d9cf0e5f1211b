//! The front: an HTTP listener on loopback between the client under test and
//! the server core. It records what reaches the server (method, session,
//! `Last-Event-ID`, the JSON-RPC messages of a POST, the status given) and
//! puts the scenario's scripted [`Fault`] in its place; everything else is
//! forwarded to the server and its answer streamed back as it comes.

use super::scenario::Fault;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Frame;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use mcp_streamable::headers;
use mcp_streamable::observe::body_messages;
use mcp_streamable::sse::SseItem;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

/// Bytes of a request body the front reads; a client that sends more is
/// answered 413 (a prober of clients has no use for large bodies).
pub const BODY_MAX: usize = 4 << 20;

/// Requests a run records; later ones are counted, not kept (a looping
/// client can send thousands within the bound).
pub const RECORDED_MAX: usize = 4096;

/// Event ids of the call's stream the front remembers (the faults that hit a
/// resumption hit only the call's own, found by these).
pub const CALL_IDS_MAX: usize = 1024;

/// Withdrawals of server requests a run records ([`Record::withdrawn`]).
pub const WITHDRAWN_MAX: usize = 64;

/// One JSON-RPC message of a POST, as the judge needs it.
#[derive(Clone, Debug, PartialEq)]
pub enum Rpc {
    /// A request (`id` set) or a notification.
    Call {
        /// Its method.
        method: String,
        /// Its id, as JSON text.
        id: Option<String>,
    },
    /// A response (result or error) to one of the server's requests.
    Answer {
        /// Its id, as JSON text.
        id: String,
    },
}

/// One request that reached the front.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Milliseconds since the scenario started.
    pub at_ms: u64,
    /// `GET`, `POST`, `DELETE`, ...
    pub method: String,
    /// `Mcp-Session-Id`.
    pub session: Option<String>,
    /// `Last-Event-ID`.
    pub last_event_id: Option<String>,
    /// The JSON-RPC messages of a POST's body.
    pub rpc: Vec<Rpc>,
    /// The status it was answered with (0: none yet, or the connection
    /// failed).
    pub status: u16,
    /// Whether a scripted fault answered it rather than the server.
    pub faulted: bool,
    /// Whether it carries the call: a POST with a `tools/call`, or a GET
    /// resuming a stream that did.
    pub of_the_call: bool,
    /// For a request of the call: when its answer ended, in ms since the
    /// scenario started: the server wrote its last byte
    /// ([`StreamEnd::Ended`]), or the client closed it first
    /// ([`StreamEnd::Closed`]). None while it is still open.
    pub end: Option<(StreamEnd, u64)>,
}

/// How the answer to a request of the call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// The server ended it.
    Ended,
    /// The client closed it (or went) before the server ended it.
    Closed,
}

impl Seen {
    /// Whether this is a GET that resumes a stream.
    pub fn is_resume(&self) -> bool {
        self.method == "GET" && self.last_event_id.is_some()
    }

    /// Whether its body carries a request of `method`.
    pub fn calls(&self, method: &str) -> bool {
        self.rpc
            .iter()
            .any(|r| matches!(r, Rpc::Call { method: m, .. } if m == method))
    }

    /// One line for a report.
    pub fn line(&self) -> String {
        let mut s = format!("{} ms {}", self.at_ms, self.method);
        for r in &self.rpc {
            match r {
                Rpc::Call {
                    method,
                    id: Some(id),
                } => s += &format!(" {method}#{id}"),
                Rpc::Call { method, id: None } => s += &format!(" {method}"),
                Rpc::Answer { id } => s += &format!(" answer#{id}"),
            }
        }
        if let Some(id) = &self.last_event_id {
            s += &format!(" Last-Event-ID={id}");
        }
        s += &format!(" -> {}", self.status);
        if self.faulted {
            s += " (scripted)";
        }
        s
    }
}

/// What the front saw during one scenario.
#[derive(Debug, Default)]
pub struct Record {
    /// The requests, in arrival order (at most [`RECORDED_MAX`]).
    pub seen: Vec<Seen>,
    /// Requests past [`RECORDED_MAX`].
    pub unrecorded: u64,
    resumes_faulted: u32,
    gone: Option<String>,
    /// The event ids the server sent on streams that carried a `tools/call`.
    call_ids: std::collections::BTreeSet<String>,
    /// Each server request withdrawn on a stream (`notifications/cancelled`
    /// naming it, its id as JSON text) and when that passed down to the
    /// client, in ms since the scenario started; the first
    /// [`WITHDRAWN_MAX`] of them.
    pub withdrawn: Vec<(String, u64)>,
    /// How many requests had reached the front when a listen was cut
    /// ([`Fault::CutListen`]): those after are the client's recovery.
    pub cut_after: Option<usize>,
    /// When the client's command ended (exited or was killed), in ms since
    /// the scenario started: a stream still open then closes with it.
    pub client_ended_ms: Option<u64>,
}

impl Record {
    /// A record of `seen` alone (the judge's tests).
    #[cfg(test)]
    pub fn of(seen: Vec<Seen>) -> Self {
        Self {
            seen,
            ..Self::default()
        }
    }

    /// Whether `seen` resumes a stream that carried the call.
    fn resumes_the_call(&self, seen: &Seen) -> bool {
        seen.method == "GET"
            && seen
                .last_event_id
                .as_ref()
                .is_some_and(|id| self.call_ids.contains(id))
    }
}

/// The front of one scenario.
pub struct Front {
    backend: SocketAddr,
    fault: Fault,
    started: Instant,
    record: Mutex<Record>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = BoxBody<Bytes, BoxError>;

/// The method of the change a [`Fault::CutListen`] cuts its listen before.
const CUT_BEFORE: &[u8] = b"notifications/tools/list_changed";

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

fn answer(status: u16, content_type: Option<&str>, body: impl Into<Bytes>) -> Response<Body> {
    let mut b = Response::builder().status(status);
    if let Some(ct) = content_type {
        b = b.header(headers::CONTENT_TYPE, ct);
    }
    b.body(full(body))
        .unwrap_or_else(|_| Response::new(full("")))
}

/// The JSON-RPC messages of a body (one message or a batch), read by the
/// core's own parser; nothing for a body that is not JSON-RPC.
fn messages(body: &[u8]) -> Vec<Rpc> {
    let id_text =
        |id: &mcp_streamable::ids::RequestId| serde_json::to_string(id).unwrap_or_default();
    body_messages(body)
        .unwrap_or_default()
        .iter()
        .filter_map(|m| match m.method() {
            Some(method) => Some(Rpc::Call {
                method: method.to_owned(),
                id: m.id().map(id_text),
            }),
            None => m.id().map(|id| Rpc::Answer { id: id_text(id) }),
        })
        .collect()
}

impl Front {
    /// A front for `backend` with `fault`, its clock started now.
    pub fn new(backend: SocketAddr, fault: Fault) -> Arc<Self> {
        Arc::new(Self {
            backend,
            fault,
            started: Instant::now(),
            record: Mutex::new(Record::default()),
        })
    }

    /// `at`, in ms since the scenario started.
    pub fn ms_at(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.started).as_millis() as u64
    }

    /// What it saw so far.
    pub fn take(&self) -> Record {
        std::mem::take(&mut *self.record())
    }

    /// Serves `listener` until the task is aborted.
    pub async fn serve(self: Arc<Self>, listener: tokio::net::TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let front = self.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    let front = front.clone();
                    async move { Ok::<_, std::convert::Infallible>(front.handle(req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    }

    fn record(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answer, read as it passes: its SSE event ids remembered as the
    /// call's (when it is `of_the_call`), and its withdrawals of server
    /// requests with the moment they passed.
    fn tap(self: &Arc<Self>, resp: Response<Body>, of_the_call: bool) -> Response<Body> {
        let sse = resp
            .headers()
            .get(headers::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        if !sse {
            return resp;
        }
        let front = self.clone();
        let mut decoder = mcp_streamable::sse::SseDecoder::default();
        let mut items = Vec::new();
        resp.map(move |body| {
            body.map_frame(move |frame| {
                if let Some(data) = frame.data_ref() {
                    let _ = decoder.feed(data, &mut items);
                    let at_ms = front.started.elapsed().as_millis() as u64;
                    let mut r = front.record();
                    for item in items.drain(..) {
                        let (id, data) = match item {
                            SseItem::Message { id, data, .. } => (id, Some(data)),
                            SseItem::NoMessage { id } => (id, None),
                            SseItem::Retry(_) => (None, None),
                        };
                        if let Some(withdrawn) = data.as_deref().and_then(withdrawn_id) {
                            if r.withdrawn.len() < WITHDRAWN_MAX {
                                r.withdrawn.push((withdrawn, at_ms));
                            }
                        }
                        if !of_the_call {
                            continue;
                        }
                        if let Some(id) = id.filter(|_| r.call_ids.len() < CALL_IDS_MAX) {
                            r.call_ids.insert(id);
                        }
                    }
                }
                frame
            })
            .boxed()
        })
    }

    /// Records `seen`; its index, if it was kept.
    fn keep(&self, seen: Seen) -> Option<usize> {
        let mut r = self.record();
        if r.seen.len() < RECORDED_MAX {
            r.seen.push(seen);
            Some(r.seen.len() - 1)
        } else {
            r.unrecorded += 1;
            None
        }
    }

    /// Whether the listen recorded at `seen` is the one to cut: the first
    /// to carry a change, once a scenario. Marks it as faulted.
    fn cut_listen(&self, seen: Option<usize>) -> bool {
        let mut r = self.record();
        if r.cut_after.is_some() {
            return false;
        }
        r.cut_after = Some(r.seen.len());
        if let Some(s) = seen.and_then(|i| r.seen.get_mut(i)) {
            s.faulted = true;
        }
        true
    }

    /// The scripted answer this request gets instead of the server's, if any.
    fn fault_for(&self, seen: &Seen) -> Option<Response<Body>> {
        let mut r = self.record();
        if r.gone.is_some() && r.gone == seen.session {
            return Some(gone());
        }
        match self.fault {
            Fault::None => None,
            Fault::EmptyResume { times } if r.resumes_the_call(seen) => {
                if times.is_some_and(|t| r.resumes_faulted >= t) {
                    return None;
                }
                r.resumes_faulted += 1;
                Some(answer(200, Some("text/event-stream"), ""))
            }
            Fault::EmptyResume { .. } => None,
            Fault::JsonBody(body) if seen.calls("tools/call") => {
                Some(answer(200, Some("application/json"), body))
            }
            Fault::JsonBody(_) => None,
            Fault::SessionGone if r.resumes_the_call(seen) => {
                r.gone = seen.session.clone();
                Some(gone())
            }
            Fault::SessionGone => None,
            Fault::DiscoverRefused { status, code } if seen.calls("server/discover") => {
                Some(match code {
                    Some(code) => {
                        let id = seen
                            .rpc
                            .iter()
                            .find_map(|m| match m {
                                Rpc::Call { id: Some(id), .. } => Some(id.clone()),
                                _ => None,
                            })
                            .unwrap_or_else(|| "null".into());
                        let body = format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":"Bad Request: no valid session"}}}}"#
                        );
                        answer(status, Some("application/json"), body)
                    }
                    None => answer(status, None, ""),
                })
            }
            Fault::DiscoverRefused { .. } | Fault::CutListen => None,
        }
    }

    async fn handle(self: &Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let at_ms = self.started.elapsed().as_millis() as u64;
        let header = |n: &str| {
            req.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let mut seen = Seen {
            at_ms,
            method: req.method().as_str().to_owned(),
            session: header(headers::MCP_SESSION_ID),
            last_event_id: header(headers::LAST_EVENT_ID),
            rpc: Vec::new(),
            status: 0,
            faulted: false,
            of_the_call: false,
            end: None,
        };
        let (parts, body) = req.into_parts();
        let body = match Limited::new(body, BODY_MAX).collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => {
                seen.status = 413;
                self.keep(seen);
                return answer(413, None, "");
            }
        };
        seen.rpc = messages(&body);
        let of_the_call = seen.calls("tools/call") || self.record().resumes_the_call(&seen);
        seen.of_the_call = of_the_call;
        if let Some(resp) = self.fault_for(&seen) {
            seen.status = resp.status().as_u16();
            seen.faulted = true;
            self.keep(seen);
            return resp;
        }
        // Kept as it arrives, its status filled in once the server answers:
        // a client may end (and the run with it) before a request it sent
        // last is answered, and the record must still show it.
        let listen = self.fault == Fault::CutListen && seen.calls("subscriptions/listen");
        let at = self.keep(seen);
        let resp = self
            .forward(parts, body)
            .await
            .map(|r| self.tap(r, of_the_call));
        let status = resp.as_ref().map_or(0, |r| r.status().as_u16());
        if let Some(i) = at {
            if let Some(s) = self.record().seen.get_mut(i) {
                s.status = status;
            }
        }
        let listen = listen && status == 200;
        match resp {
            Some(r) if listen => r.map(|inner| {
                CutBeforeChange {
                    inner,
                    front: self.clone(),
                    seen: at,
                    cut: false,
                }
                .boxed()
            }),
            Some(r) if of_the_call => r.map(|inner| {
                Watched {
                    inner,
                    front: self.clone(),
                    seen: at,
                    ended: false,
                }
                .boxed()
            }),
            Some(r) => r,
            None => answer(502, None, ""),
        }
    }

    /// Records how the answer of the request recorded at `seen` ended, the
    /// first time it does.
    fn ended(&self, seen: Option<usize>, how: StreamEnd) {
        let at_ms = self.started.elapsed().as_millis() as u64;
        let mut r = self.record();
        if let Some(s) = seen.and_then(|i| r.seen.get_mut(i)) {
            s.end.get_or_insert((how, at_ms));
        }
    }

    /// The request sent to the server on a connection of its own; its answer
    /// streamed back as the server writes it.
    async fn forward(
        &self,
        parts: hyper::http::request::Parts,
        body: Bytes,
    ) -> Option<Response<Body>> {
        let stream = tokio::net::TcpStream::connect(self.backend).await.ok()?;
        stream.set_nodelay(true).ok()?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .ok()?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let req = Request::from_parts(parts, Full::new(body));
        let resp = sender.send_request(req).await.ok()?;
        Some(resp.map(|b| b.map_err(BoxError::from).boxed()))
    }
}

/// The id (as JSON text) of the request an event's data withdraws: a
/// `notifications/cancelled` naming it; none for any other message.
fn withdrawn_id(data: &str) -> Option<String> {
    if !data.contains("notifications/cancelled") {
        return None;
    }
    use mcp_streamable::jsonrpc::{cancelled_request, parse_message, Message};
    let Message::Notification { method, params } = parse_message(data).ok()? else {
        return None;
    };
    if method != "notifications/cancelled" {
        return None;
    }
    let (id, _) = cancelled_request(params.as_ref())?;
    serde_json::to_string(&id).ok()
}

/// Where, in a chunk of a listen's stream, the event carrying a list change
/// starts (the server writes each event whole, so a chunk starts at an
/// event's first line).
fn change_at(chunk: &[u8]) -> Option<usize> {
    let at = chunk
        .windows(CUT_BEFORE.len())
        .position(|w| w == CUT_BEFORE)?;
    Some(
        chunk[..at]
            .windows(2)
            .rposition(|w| w == b"\n\n")
            .map_or(0, |i| i + 2),
    )
}

/// A listen's answer, passed on as it comes until a list change is on its
/// way ([`Fault::CutListen`]): what came before the change's event is
/// written, then the connection is cut (an error ends the body, so the
/// server side closes it with no end of the stream).
struct CutBeforeChange {
    inner: Body,
    front: Arc<Front>,
    seen: Option<usize>,
    cut: bool,
}

impl hyper::body::Body for CutBeforeChange {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.cut {
            return Poll::Ready(Some(Err("cut by the prober before a list change".into())));
        }
        let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        let Some(at) = frame.data_ref().and_then(|d| change_at(d)) else {
            return Poll::Ready(Some(Ok(frame)));
        };
        if !this.front.cut_listen(this.seen) {
            return Poll::Ready(Some(Ok(frame)));
        }
        this.cut = true;
        match frame.into_data() {
            Ok(data) if at > 0 => Poll::Ready(Some(Ok(Frame::data(data.slice(..at))))),
            _ => Poll::Ready(Some(Err("cut by the prober before a list change".into()))),
        }
    }
}

/// The answer to a request of the call (its POST, a resumption of its
/// stream), passed on untouched, noting when it ended:
/// by the server's last frame, or by being dropped first (hyper drops a
/// response body whose connection the client closed).
struct Watched {
    inner: Body,
    front: Arc<Front>,
    seen: Option<usize>,
    ended: bool,
}

impl hyper::body::Body for Watched {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) && !this.ended {
            this.ended = true;
            this.front.ended(this.seen, StreamEnd::Ended);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if !self.ended {
            let how = if hyper::body::Body::is_end_stream(&self.inner) {
                StreamEnd::Ended
            } else {
                StreamEnd::Closed
            };
            self.front.ended(self.seen, how);
        }
    }
}

/// A `404` for a session the server no longer has.
fn gone() -> Response<Body> {
    answer(
        404,
        Some("application/json"),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_read_as_its_messages() {
        let batch = br#"[{"jsonrpc":"2.0","id":3,"method":"tools/call"},{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
        assert_eq!(
            messages(batch),
            vec![
                Rpc::Call {
                    method: "tools/call".into(),
                    id: Some("3".into())
                },
                Rpc::Answer { id: "\"a\"".into() },
                Rpc::Call {
                    method: "notifications/initialized".into(),
                    id: None
                },
            ]
        );
        assert!(messages(b"{not json").is_empty());
    }

    #[test]
    fn a_withdrawal_is_read_as_the_id_it_names() {
        let cancel = |id: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"r"}}}}"#
            )
        };
        assert_eq!(withdrawn_id(&cancel("0")).as_deref(), Some("0"));
        assert_eq!(withdrawn_id(&cancel(r#""a""#)).as_deref(), Some(r#""a""#));
        assert_eq!(
            withdrawn_id(
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"notifications/cancelled"}}"#
            ),
            None
        );
        assert_eq!(withdrawn_id("not json notifications/cancelled"), None);
    }

    #[test]
    fn a_listen_is_cut_where_the_changes_event_starts() {
        let ack = "data: {\"method\":\"notifications/subscriptions/acknowledged\"}\n\n";
        let change = "data: {\"method\":\"notifications/tools/list_changed\"}\n\n";
        assert_eq!(change_at(ack.as_bytes()), None);
        assert_eq!(change_at(change.as_bytes()), Some(0));
        assert_eq!(
            change_at(format!("{ack}{change}").as_bytes()),
            Some(ack.len())
        );
    }
}
