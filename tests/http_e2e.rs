//! Our client shell against our server shell over real loopback HTTP, every
//! observation of both sides judged by one monitor.

mod raw_http;

use mcp_streamable::client::ClientEvent;
use mcp_streamable::ids::RequestId;
use mcp_streamable::jsonrpc::{ErrorObject, RawJson};
use mcp_streamable::server::Cause;
use mcp_streamable_check::monitor::{Monitor, Observation};
use mcp_streamable_hyper::client::{split_url, Client, ClientOptions, ShellError};
use mcp_streamable_hyper::{App, Cx, Server, ServerHandle, ServerOptions, TcpConnect};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// echo; `slow`: progress, a polling close, then the answer 300 ms later;
/// `announce`: an unrelated notification, then the answer.
#[derive(Default)]
struct TestApp {
    later: BTreeMap<u64, RequestId>,
    next: u64,
}

impl App for TestApp {
    fn on_request(
        &mut self,
        cx: &mut Cx<'_>,
        id: RequestId,
        method: &str,
        params: Option<RawJson>,
    ) {
        let v = params.map(|p| p.to_value()).unwrap_or_default();
        match (method, v.get("name").and_then(|n| n.as_str())) {
            ("initialize", _) => {
                cx.respond(&id, Ok(RawJson::from(serde_json::json!({"capabilities": {"tools": {}}, "serverInfo": {"name": "t", "version": "0"}}))));
            }
            ("tools/call", Some("slow")) => {
                cx.notify(
                    "notifications/progress",
                    Some(RawJson::from(
                        serde_json::json!({"progressToken": 1, "progress": 1}),
                    )),
                    Cause::Request(id.clone()),
                );
                cx.close_connection(&id);
                self.next += 1;
                self.later.insert(self.next, id);
                cx.after(300, self.next);
            }
            ("tools/call", Some("wait")) => {
                // Answered only after five seconds: a call the client may
                // cancel first.
                self.next += 1;
                self.later.insert(self.next, id);
                cx.after(5_000, self.next);
            }
            ("tools/call", Some("announce")) => {
                cx.notify("notifications/tools/list_changed", None, Cause::Unrelated);
                cx.respond(&id, Ok(RawJson::from(serde_json::json!({"content": []}))));
            }
            ("tools/call", _) => {
                let text = v.pointer("/arguments/text").cloned().unwrap_or_default();
                cx.respond(
                    &id,
                    Ok(RawJson::from(
                        serde_json::json!({"content": [{"type": "text", "text": text}]}),
                    )),
                );
            }
            _ => {
                cx.respond(&id, Err(ErrorObject::new(-32601, "nope")));
            }
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, token: u64) {
        if let Some(id) = self.later.remove(&token) {
            cx.respond(
                &id,
                Ok(RawJson::from(
                    serde_json::json!({"content": [{"type": "text", "text": "late"}]}),
                )),
            );
        }
    }
}

type Shared = Arc<Mutex<Monitor>>;

fn tap(m: &Shared) -> Box<dyn FnMut(&Observation) + Send> {
    let m = m.clone();
    Box::new(move |o| m.lock().unwrap().observe(o))
}

async fn start(monitor: &Shared) -> ServerHandle {
    let mut options = ServerOptions::default();
    options.endpoint.session.retry_ms = 100;
    Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        options,
        TestApp::default,
        Some(tap(monitor)),
    )
    .await
    .expect("bind loopback")
}

/// A client of `http://{addr}{path}`, initialized (or discovered).
async fn open(
    addr: std::net::SocketAddr,
    path: &str,
    options: ClientOptions,
) -> Result<(Client, RawJson), ShellError> {
    let (authority, path) = split_url(&format!("http://{addr}{path}")).unwrap();
    Client::connect(TcpConnect(addr), &authority, &path, options).await
}

async fn connect(server: &ServerHandle, monitor: &Shared) -> Client {
    let addr = server.addr.unwrap();
    let options = ClientOptions {
        tap: Some(tap(monitor)),
        ..ClientOptions::default()
    };
    let (client, result) = open(addr, "/mcp", options).await.expect("initialize");
    assert_eq!(result.to_value()["protocolVersion"], "2025-11-25");
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_call_progress_polling_resume_notify_delete() {
    let monitor: Shared = Arc::new(Mutex::new(Monitor::new()));
    let server = start(&monitor).await;
    let client = connect(&server, &monitor).await;
    let mut events = client.subscribe();

    let r = client
        .call_tool("echo", serde_json::json!({"text": "hi"}))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.to_value()["content"][0]["text"], "hi");

    // Progress, a polling close, then the answer after a resumption.
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool("slow", serde_json::json!({})),
    )
    .await
    .expect("no hang")
    .unwrap()
    .unwrap();
    assert_eq!(r.to_value()["content"][0]["text"], "late");

    // An unrelated notification reaches the client on the background GET.
    client
        .call_tool("announce", serde_json::json!({}))
        .await
        .unwrap()
        .unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match events.recv().await {
                Ok(ClientEvent::Notification { method, .. })
                    if method == "notifications/tools/list_changed" =>
                {
                    return true
                }
                Ok(_) => continue,
                Err(_) => return false,
            }
        }
    })
    .await
    .unwrap_or(false);
    assert!(got, "list_changed delivered");

    client.close().await;
    server.shutdown().await;
    let mut m = monitor.lock().unwrap();
    m.finish(&[]);
    assert!(m.violations().is_empty(), "{:#?}", m.violations());
    assert!(
        m.steps() > 30,
        "the monitor saw the run ({} observations)",
        m.steps()
    );
}

/// Raw requests, as an attacker or a confused client would send them.
async fn raw(
    addr: std::net::SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, Option<String>) {
    use http_body_util::BodyExt;
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut b = hyper::Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", addr.to_string());
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    let resp = sender
        .send_request(
            b.body(http_body_util::Full::new(bytes::Bytes::from(
                body.to_owned(),
            )))
            .unwrap(),
        )
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    // Read what is there within a short time (SSE streams stay open).
    let mut body = resp.into_body();
    let mut text = Vec::new();
    let _ = tokio::time::timeout(Duration::from_millis(300), async {
        while let Some(Ok(f)) = body.frame().await {
            if let Ok(d) = f.into_data() {
                text.extend_from_slice(&d);
            }
        }
    })
    .await;
    (status, String::from_utf8_lossy(&text).into_owned(), sid)
}

/// A server of [`TestApp`]s on a loopback port of its own.
async fn bind(options: ServerOptions) -> mcp_streamable_hyper::ServerHandle {
    Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        options,
        TestApp::default,
        None,
    )
    .await
    .unwrap()
}

const POST: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

async fn open_session(addr: std::net::SocketAddr) -> String {
    let (status, _, sid) = raw(addr, "POST", &POST, r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#).await;
    assert_eq!(status, 200);
    let sid = sid.expect("session id");
    let h = [POST[0], POST[1], ("mcp-session-id", sid.as_str())];
    let (status, _, _) = raw(
        addr,
        "POST",
        &h,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, 202);
    sid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_isolated_and_foreign_cursors_replay_nothing() {
    let monitor: Shared = Arc::new(Mutex::new(Monitor::new()));
    let server = start(&monitor).await;
    let addr = server.addr.unwrap();
    let a = open_session(addr).await;
    let b = open_session(addr).await;
    assert_ne!(a, b);

    // A guessed id reads and writes nothing.
    let guessed = "0123456789abcdef0123456789abcdef";
    let h = [POST[0], POST[1], ("mcp-session-id", guessed)];
    let (status, _, _) = raw(
        addr,
        "POST",
        &h,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}"#,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _, _) = raw(
        addr,
        "GET",
        &[("accept", "text/event-stream"), ("mcp-session-id", guessed)],
        "",
    )
    .await;
    assert_eq!(status, 404);

    // Session A's stream has an event id; session B cannot resume it.
    let ha = [POST[0], POST[1], ("mcp-session-id", a.as_str())];
    let (status, body, _) = raw(addr, "POST", &ha, r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"secret"}}}"#).await;
    assert_eq!(status, 200);
    assert!(body.contains("secret"));
    let a_id = body
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("event id")
        .to_owned();
    let (status, body, _) = raw(
        addr,
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", b.as_str()),
            ("last-event-id", a_id.as_str()),
        ],
        "",
    )
    .await;
    assert_eq!(status, 400, "another session's cursor names nothing");
    assert!(!body.contains("secret"));

    // A cursor of another stream of the same session replays only that stream.
    let (status, body, _) = raw(
        addr,
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", a.as_str()),
            ("last-event-id", "zz-1-1"),
        ],
        "",
    )
    .await;
    assert_eq!(status, 400);
    assert!(!body.contains("secret"));

    // Origin checks, body bound and DELETE.
    let (status, _, _) = raw(
        addr,
        "POST",
        &[POST[0], POST[1], ("origin", "http://evil.example.com")],
        "{}",
    )
    .await;
    assert_eq!(status, 403);
    // A body over the bound is refused on its Content-Length, before a byte
    // of it is read (tests/hostile.rs has the rest of the body rules).
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Session-Id: {a}\r\n\
             Content-Length: {}\r\n\r\n",
            (4 << 20) + 10
        );
        s.write_all(head.as_bytes()).await.unwrap();
        let mut status = [0u8; 12];
        s.read_exact(&mut status).await.unwrap();
        assert_eq!(&status, b"HTTP/1.1 413");
    }
    let (status, _, _) = raw(addr, "DELETE", &[("mcp-session-id", a.as_str())], "").await;
    assert_eq!(status, 200);
    let (status, _, _) = raw(
        addr,
        "POST",
        &ha,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    )
    .await;
    assert_eq!(status, 404);
    server.shutdown().await;
    assert!(
        monitor.lock().unwrap().violations().is_empty(),
        "{:#?}",
        monitor.lock().unwrap().violations()
    );
}

/// The endpoint mounted Router-style under a path of the user's own hyper server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mounts_under_a_path_of_your_own_router() {
    use hyper::service::Service;
    let (mcp, handle) = Server::start(ServerOptions::default(), TestApp::default, None);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let mcp = mcp.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let mcp = mcp.clone();
                        async move {
                            if req.uri().path() == "/tools/mcp" {
                                mcp.call(req)
                                    .await
                                    .map(|r| r.map(http_body_util::Either::Left))
                            } else {
                                let mut r = hyper::Response::new(http_body_util::Either::Right(
                                    http_body_util::Empty::<bytes::Bytes>::new(),
                                ));
                                *r.status_mut() = hyper::StatusCode::NOT_FOUND;
                                Ok(r)
                            }
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    let (client, _) = open(addr, "/tools/mcp", ClientOptions::default())
        .await
        .expect("initialize");
    let r = client
        .call_tool("echo", serde_json::json!({"text": "mounted"}))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.to_value()["content"][0]["text"], "mounted");
    client.close().await;
    let (status, _, _) = raw(addr, "POST", &POST, "{}").await;
    assert_eq!(status, 404, "other paths belong to the router");
    router.abort();
    handle.shutdown().await;
}

/// A standalone GET held open (the session is busy while it lives).
async fn hold_get(addr: std::net::SocketAddr, sid: &str) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "the GET stream opened");
    s
}

/// One task per session: the session limit holds across tasks (a busy
/// session is never evicted: 503), an idle one makes room for a newcomer
/// (and gets 404 after), and a deleted session's task leaves the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_limit_and_cleanup_across_session_tasks() {
    let mut options = ServerOptions::default();
    options.endpoint.sessions_max = 1;
    let server = bind(options).await;
    let addr = server.addr.unwrap();
    let first = open_session(addr).await;
    let get = hold_get(addr, &first).await;
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
    let (status, body, _) = raw(addr, "POST", &POST, init).await;
    assert_eq!(status, 503, "sessions_max = 1, and the one session is busy");
    assert!(body.contains("too many sessions"), "{body}");
    let (status, _, _) = raw(addr, "DELETE", &[("mcp-session-id", first.as_str())], "").await;
    assert_eq!(status, 200);
    drop(get);
    let mut again = None;
    for _ in 0..50 {
        let (status, _, sid) = raw(addr, "POST", &POST, init).await;
        if status == 200 {
            again = sid;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = again.expect("the ended session's task left the table");
    let h = [POST[0], POST[1], ("mcp-session-id", second.as_str())];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(raw(addr, "POST", &h, initialized).await.0, 202);
    // Idle now: a newcomer evicts it instead of being refused.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (status, _, third) = raw(addr, "POST", &POST, init).await;
    assert_eq!(status, 200, "the idle session made room");
    assert_ne!(third.as_deref(), Some(second.as_str()));
    let ping = r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;
    assert_eq!(
        raw(addr, "POST", &h, ping).await.0,
        404,
        "the evicted session is gone"
    );
    server.shutdown().await;
}

/// An idle session parks (its task ends) and wakes on the next request; a
/// parked session past its idle expiry is swept and its core ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_park_wake_and_expire() {
    let mut options = ServerOptions::default();
    options.endpoint.session.idle_timeout_ms = Some(1_500);
    let server = bind(options).await;
    let addr = server.addr.unwrap();
    let sid = open_session(addr).await;
    let h = [POST[0], POST[1], ("mcp-session-id", sid.as_str())];
    let call = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"again"}}}"#;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(200)).await; // parked by now
        let (status, body, _) = raw(addr, "POST", &h, call).await;
        assert_eq!(status, 200);
        assert!(body.contains("again"), "woken session answers: {body}");
    }
    tokio::time::sleep(Duration::from_millis(3_000)).await; // past expiry + a sweep
    let (status, _, _) = raw(addr, "POST", &h, call).await;
    assert_eq!(status, 404, "the core expired the parked session");
    server.shutdown().await;
}

/// Requests racing for one session (crates/mcp-streamable-hyper/src/owner.rs): whichever finds it
/// parked serves it on its own connection task while the others queue for
/// that owner, which then goes on as a task and parks again. Every request
/// is answered once, with its own id and text, round after round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_requests_on_one_session_are_each_answered_once() {
    let server = bind(ServerOptions::default()).await;
    let addr = server.addr.unwrap();
    let sid = open_session(addr).await;
    for round in 0..12u64 {
        let mut calls = tokio::task::JoinSet::new();
        for i in 0..12u64 {
            let sid = sid.clone();
            calls.spawn(async move {
                let id = 1_000 + round * 100 + i;
                let h = [POST[0], POST[1], ("mcp-session-id", sid.as_str())];
                let call = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"t{id}"}}}}}}"#
                );
                (id, raw(addr, "POST", &h, &call).await)
            });
        }
        while let Some(done) = calls.join_next().await {
            let (id, (status, body, _)) = done.unwrap();
            assert_eq!(status, 200, "request {id}: {body}");
            assert_eq!(body.matches(&format!("\"id\":{id}")).count(), 1, "{body}");
            assert!(body.contains(&format!("t{id}")), "request {id} got {body}");
        }
        // Now and then long enough for the owner to park between rounds.
        if round % 3 == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    server.shutdown().await;
}

/// One keep-alive connection: requests sent in turn on it, each answered whole.
struct KeepAlive {
    sender: hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>,
    addr: std::net::SocketAddr,
}

impl KeepAlive {
    async fn open(addr: std::net::SocketAddr) -> Self {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        KeepAlive { sender, addr }
    }

    async fn post(&mut self, sid: Option<&str>, body: &str) -> (u16, String, Option<String>) {
        use http_body_util::BodyExt;
        let mut b = hyper::Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("host", self.addr.to_string());
        for (n, v) in POST {
            b = b.header(n, v);
        }
        if let Some(sid) = sid {
            b = b.header("mcp-session-id", sid);
        }
        let req = b
            .body(http_body_util::Full::new(bytes::Bytes::from(
                body.to_owned(),
            )))
            .unwrap();
        self.sender.ready().await.unwrap();
        let resp = self.sender.send_request(req).await.unwrap();
        let status = resp.status().as_u16();
        let sid = resp
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let text = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&text).into_owned(), sid)
    }
}

/// A client using its session one request at a time on one connection
/// (crates/mcp-streamable-hyper/src/owner.rs): the session parks after each answer and the next
/// request on that connection wakes it inline, on the connection's task.
/// Requests from another connection between them wake it as a task; back on
/// the first connection it is inline again; and a request on it past the
/// idle expiry finds the session ended (404): woken inline, its core ends it
/// first (or, on a slow machine, the sweep did; the answer is the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_wakes_its_parked_session_inline_and_others_as_a_task() {
    let mut options = ServerOptions::default();
    options.endpoint.session.idle_timeout_ms = Some(1_000);
    let server = bind(options).await;
    let addr = server.addr.unwrap();
    let mut a = KeepAlive::open(addr).await;
    let (status, _, sid) = a
        .post(None, r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#)
        .await;
    assert_eq!(status, 200);
    let sid = sid.expect("session id");
    let (status, _, _) = a
        .post(
            Some(&sid),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
    assert_eq!(status, 202);
    let call = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"t{id}"}}}}}}"#
        )
    };
    let mut b = KeepAlive::open(addr).await;
    for id in 10..22u64 {
        // Every third request from the other connection; now and then a
        // pause long enough to park for certain (it parks at once anyway).
        let conn = if id % 3 == 0 { &mut b } else { &mut a };
        let (status, body, _) = conn.post(Some(&sid), &call(id)).await;
        assert_eq!(status, 200, "request {id}: {body}");
        assert_eq!(body.matches(&format!("\"id\":{id}")).count(), 1, "{body}");
        assert!(body.contains(&format!("t{id}")), "request {id} got {body}");
        if id % 4 == 0 {
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let (status, body, _) = a.post(Some(&sid), &call(99)).await;
    assert_eq!(status, 404, "the core expired the parked session: {body}");
    server.shutdown().await;
}

/// A parked session past its idle expiry, named before the sweep comes by:
/// the request that wakes it finds its deadline passed, the core ends the
/// session first, and a fresh endpoint answers 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_waking_an_expired_session_gets_404_before_any_sweep() {
    let mut options = ServerOptions::default();
    options.endpoint.session.idle_timeout_ms = Some(200);
    let server = bind(options).await;
    let addr = server.addr.unwrap();
    let sid = open_session(addr).await;
    // Past the expiry, before the first sweep (one second after the start).
    tokio::time::sleep(Duration::from_millis(450)).await;
    let h = [POST[0], POST[1], ("mcp-session-id", sid.as_str())];
    let ping = r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;
    let (status, body, _) = raw(addr, "POST", &h, ping).await;
    assert_eq!(status, 404, "{body}");
    server.shutdown().await;
}

/// A call to be answered in JSON (`ResponseMode::JsonWhenAlone`) that the
/// client cancels while its POST waits: the POST is answered at once, `202`
/// with no body, over real HTTP (not left open until the application's late
/// answer, which is dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_call_cancelled_while_its_post_waits_is_answered_202() {
    let mut options = ServerOptions::default();
    options.endpoint.session.response_mode = mcp_streamable::server::ResponseMode::JsonWhenAlone;
    let server = bind(options).await;
    let addr = server.addr.unwrap();
    let sid = open_session(addr).await;
    let h = [POST[0], POST[1], ("mcp-session-id", sid.as_str())];
    let named = sid.clone();
    let call = tokio::spawn(async move {
        let h = [POST[0], POST[1], ("mcp-session-id", named.as_str())];
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait"}}"#;
        raw(addr, "POST", &h, body).await
    });
    // The cancellation, sent until the call's POST is answered: one that
    // arrives before the call names no request in flight (202, nothing
    // more), so no guess at when the call reached the server is needed.
    // The application answers after 5 s: an answer within 3 s is the
    // cancellation's.
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#;
    tokio::time::timeout(Duration::from_secs(3), async {
        while !call.is_finished() {
            let (status, _, _) = raw(addr, "POST", &h, cancel).await;
            assert_eq!(status, 202);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("answered once cancelled, not at the late answer");
    let (status, body, _) = call.await.unwrap();
    assert_eq!(status, 202);
    assert!(body.is_empty(), "no body: {body}");
    server.shutdown().await;
}

/// A server that answers `initialize` with a JSON body of `len` bytes (a
/// valid answer padded with spaces) and anything else with 202.
async fn padded_server(len: usize) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as much body as Content-Length says.
                loop {
                    let Ok(n) = s.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&got).to_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let want = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if got.len() >= end + 4 + want {
                            break;
                        }
                    }
                }
                let reply = if String::from_utf8_lossy(&got).contains("\"initialize\"") {
                    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"padded","version":"1"}}}"#;
                    let body = format!("{answer}{}", " ".repeat(len.saturating_sub(answer.len())));
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    )
                } else {
                    "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_string()
                };
                let _ = s.write_all(reply.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_answer_past_body_max_is_cut_off_not_buffered() {
    let connect = |addr: std::net::SocketAddr, body_max: usize| async move {
        let mut options = ClientOptions::default();
        options.config.body_max = body_max;
        tokio::time::timeout(Duration::from_secs(10), open(addr, "/mcp", options))
            .await
            .expect("an outcome, not a hang")
    };
    let addr = padded_server(64 * 1024).await;
    // The control: within the bound the same answer initializes.
    assert!(connect(addr, 128 * 1024).await.is_ok());
    // Past it the transport stops reading; the core fails the request.
    assert!(connect(addr, 16 * 1024).await.is_err());
}

/// The reference application on loopback, for the 2026-07-28 era's tests.
async fn start_everything(monitor: &Shared) -> ServerHandle {
    Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        ServerOptions::default(),
        mcp_streamable_hyper::EverythingApp::default,
        Some(tap(monitor)),
    )
    .await
    .expect("bind loopback")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v2026_shell_answers_input_rounds_with_its_handler_and_listens() {
    use mcp_streamable::client::ClientEra;
    use mcp_streamable::server::v2026::ListenFilter;
    let monitor: Shared = Arc::default();
    let server = start_everything(&monitor).await;
    let addr = server.addr.unwrap();
    let mut options = ClientOptions {
        tap: Some(tap(&monitor)),
        ..ClientOptions::default()
    };
    options.config.era = ClientEra::V2026;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    options.handler = Some(Box::new(move |method, _params| {
        log.lock().unwrap().push(method.to_owned());
        match method {
            "elicitation/create" => Ok(RawJson::from(
                serde_json::json!({"action": "accept", "content": {"name": "Ada", "color": "green"}}),
            )),
            _ => Err(ErrorObject::new(-32601, "no")),
        }
    }));
    let (client, discovered) = open(addr, "/mcp", options).await.expect("discover");
    assert!(discovered.to_value()["supportedVersions"]
        .as_array()
        .unwrap()
        .contains(&"2026-07-28".into()));
    let answer = client
        .call_tool(
            "test_input_required_result_multi_round",
            serde_json::json!({}),
        )
        .await
        .expect("answered")
        .expect("a result");
    assert_eq!(answer.to_value()["content"][0]["text"], "Ada likes green");
    assert_eq!(
        *asked.lock().unwrap(),
        ["elicitation/create", "elicitation/create"],
        "the handler answered both rounds"
    );
    // A listen hears a change the server makes after its acknowledgement.
    let mut events = client.subscribe();
    let filter = ListenFilter {
        tools: true,
        ..ListenFilter::default()
    };
    let listen = client.listen(filter).await.expect("listen");
    let acked = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Ok(ClientEvent::Listening { listen: l, .. }) = events.recv().await {
                break l;
            }
        }
    })
    .await
    .expect("acknowledged");
    assert_eq!(acked, listen);
    client
        .call_tool("notify", serde_json::json!({}))
        .await
        .expect("answered")
        .expect("a result");
    let heard = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Ok(ClientEvent::Notification { method, .. }) = events.recv().await {
                break method;
            }
        }
    })
    .await
    .expect("the change reached the listen");
    assert_eq!(heard, "notifications/tools/list_changed");
    client.unlisten(listen).await.unwrap();
    client.close().await;
    server.shutdown().await;
    let mut m = monitor.lock().unwrap();
    m.finish(&[]);
    assert!(m.violations().is_empty(), "{:?}", m.violations());
}

/// A server that answers `initialize`, then every call with an SSE event of
/// `event_bytes` bytes of data (after a priming event it could be resumed
/// from), or with a JSON body that long when not `sse`, over raw TCP: what
/// no well-behaved server sends.
fn oversized_server(event_bytes: usize, sse: bool) -> std::net::SocketAddr {
    scripted_server(0, move |msg| {
        if sse {
            let event = "x".repeat(event_bytes);
            (
                "text/event-stream",
                format!("id: e0\ndata: \n\nid: e1\ndata: {event}\n\n"),
            )
        } else {
            let text = serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "content": [{"type": "text", "text": "x".repeat(event_bytes)}]}});
            ("application/json", text.to_string())
        }
    })
}

/// How [`scripted_server`] answers a request: its content type and body.
type Answer = fn(&serde_json::Value) -> (&'static str, String);

/// A raw HTTP/1.1 server that initializes a session like any other and
/// answers every other request with `answer(request)`: a content type and
/// a body, status 200 (a server no SDK would write), its `Content-Length`
/// declaring `missing` bytes more than it sends before closing.
fn scripted_server(
    missing: usize,
    answer: impl Fn(&serde_json::Value) -> (&'static str, String) + Send + Sync + 'static,
) -> std::net::SocketAddr {
    raw_http::serve(move |request| {
        let msg: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let (status, ctype, text, missing) = match msg["method"].as_str() {
            _ if !request.is_post() => ("405 Method Not Allowed", "text/plain", String::new(), 0),
            Some("initialize") => {
                let result = serde_json::json!({"protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "0"}});
                let text = serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": result});
                ("200 OK", "application/json", text.to_string(), 0)
            }
            _ if msg.get("id").is_none() => ("202 Accepted", "text/plain", String::new(), 0),
            _ => {
                let (ctype, text) = answer(&msg);
                ("200 OK", ctype, text, missing)
            }
        };
        raw_http::head(status, ctype, text.len() + missing)
            .into_bytes()
            .into_iter()
            .chain(text.into_bytes())
            .collect()
    })
}

/// Initializes with the server at `addr`, calls `echo`, and returns why
/// the call failed (within 20 s: an answer, not the request's deadline).
async fn failed_call(addr: std::net::SocketAddr) -> String {
    let (client, _) = open(addr, "/mcp", ClientOptions::default())
        .await
        .expect("initialize");
    let call = client.call_tool("echo", serde_json::json!({"text": "x"}));
    let r = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("an outcome, not a wait for the deadline");
    r.expect_err("the call fails").to_string()
}

/// A JSON answer cut off mid-body (the connection closed before its
/// `Content-Length`) is a broken exchange, not one over the client's bound.
#[tokio::test]
async fn a_json_answer_cut_short_is_not_called_too_large() {
    let addr = scripted_server(1000, |msg| {
        let text = serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}});
        ("application/json", text.to_string())
    });
    let error = failed_call(addr).await;
    assert!(!error.contains("which was not read"), "{error}");
}

#[tokio::test]
async fn a_call_answered_with_something_else_says_what_it_was() {
    let answers: [(&str, Answer); 2] = [
        ("its body was not JSON-RPC", |_| {
            (
                "text/html",
                "<html><body>502 Bad Gateway</body></html>".into(),
            )
        }),
        ("it answered an id the client never used", |msg| {
            let id = msg["id"].as_i64().unwrap() + 1000;
            let text = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}});
            ("application/json", text.to_string())
        }),
    ];
    for (why, answer) in answers {
        let error = failed_call(scripted_server(0, answer)).await;
        assert!(error.contains(why), "{why}: {error}");
    }
}

#[tokio::test]
async fn an_answer_over_the_clients_bound_fails_the_call_saying_so() {
    // An SSE event past the decoder's 1 MiB; a JSON body past `body_max`.
    for (sse, bound) in [(true, "1048576"), (false, "4194304")] {
        let error = failed_call(oversized_server(5 << 20, sse)).await;
        assert!(
            error.contains(&format!("over {bound} bytes")),
            "sse {sse}: {error}"
        );
    }
}
