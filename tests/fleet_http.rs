//! A fleet over real HTTP: two `FleetServer` instances sharing a store (the
//! in-process `MemoryHub`, and a real `redis-server` with `--features
//! redis`), each request of one session sent to either instance by hand, as
//! a balancer without stickiness would.
//!
//! The Redis test starts `redis-server` from `PATH` on a loopback port of its
//! own; without it the test says so and passes, unless
//! `MCP_STREAMABLE_REQUIRE_REDIS` is set (CI sets it, after
//! `scripts/install-fleet.sh`).

use http_body_util::BodyExt;
use mcp_streamable::fleet::instance::InstanceConfig;
use mcp_streamable::fleet::InstanceId;
use mcp_streamable_hyper::fleet::{FleetOptions, FleetServer, MemoryHub, StoreLink};
use mcp_streamable_hyper::{EverythingApp, ServerHandle, ServerOptions};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const POST: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

/// A response being read: status, session id, and the body so far (read by
/// a task of its own, so SSE streams can be watched while they stay open).
struct Open {
    status: u16,
    sid: Option<String>,
    body: Arc<Mutex<Vec<u8>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Open {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body.lock().unwrap()).into_owned()
    }

    /// Waits (at most 5 s) until the body holds `needle`.
    async fn wait_for(&self, needle: &str) -> String {
        for _ in 0..500 {
            let t = self.text();
            if t.contains(needle) {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no {needle:?} within 5 s in {:?}", self.text());
    }

    /// Waits (at most 5 s) until the body has ended.
    async fn ended(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(5), &mut self.reader)
            .await
            .expect("the body ends")
            .unwrap();
        self.text()
    }
}

async fn send(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> Open {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut b = hyper::Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", format!("localhost:{}", addr.port()));
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    let req = b
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_owned(),
        )))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let buf = Arc::new(Mutex::new(Vec::new()));
    let into = buf.clone();
    let mut body = resp.into_body();
    let reader = tokio::spawn(async move {
        while let Some(Ok(f)) = body.frame().await {
            if let Ok(d) = f.into_data() {
                into.lock().unwrap().extend_from_slice(&d);
            }
        }
    });
    Open {
        status,
        sid,
        body: buf,
        reader,
    }
}

/// The last SSE event id in `text`.
fn last_event_id(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
}

async fn instance(id: u16, link: StoreLink) -> ServerHandle {
    let mut server = ServerOptions {
        app_secret: Some([7; 32]),
        ..ServerOptions::default()
    };
    server.endpoint.session.retry_ms = 50;
    let options = FleetOptions {
        server,
        instance: InstanceConfig {
            id: InstanceId(id),
            ..InstanceConfig::default()
        },
    };
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    FleetServer::bind(addr, options, EverythingApp::default(), link)
        .await
        .unwrap()
}

/// One session over instances `a` and `b`: the handshake split between
/// them, a message emitted on `b` reaching the GET held on `a`, a call on
/// `a` whose stream is cut resumed on `b`, an elicitation asked on `a`
/// answered through `b`, another's call cancelled through `b`, a DELETE on
/// `b` ending it on `a`.
/// Calls the `notify` tool (request `id`) on `at`, which emits a
/// `list_changed` with no request to answer: it reaches the GET `get`, once.
/// What `get` showed.
async fn list_changed_once(
    at: SocketAddr,
    headers: &[(&str, &str)],
    id: u32,
    get: &Open,
) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"notify","arguments":{{}}}}}}"#
    );
    let mut call = send(at, "POST", headers, &body).await;
    assert_eq!(call.status, 200);
    assert!(call.ended().await.contains(&format!(r#""id":{id}"#)));
    let seen = get.wait_for("notifications/tools/list_changed").await;
    assert_eq!(seen.matches("list_changed").count(), 1, "once: {seen}");
    seen
}

async fn one_session_over_two_instances(a: SocketAddr, b: SocketAddr) {
    // The handshake ends on the other instance; the GET on `a`, and a
    // message emitted on `b` (no GET there) reaches it.
    let (sid, h, get) = session_with_get(a, b, a).await;
    let h: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let seen = list_changed_once(b, &h, 2, &get).await;

    // The GET cut (`a` lets go of its stream) and resumed on `b`: it goes
    // on there as the session's GET, and a message emitted on `a`, which
    // holds no GET now, reaches it once.
    let cursor = last_event_id(&seen).expect("an event id");
    get.reader.abort();
    let resume_get = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
        ("last-event-id", cursor.as_str()),
    ];
    let moved = send(b, "GET", &resume_get, "").await;
    assert_eq!(moved.status, 200, "{}", moved.text());
    list_changed_once(a, &h, 10, &moved).await;

    // A call on `a` whose stream the server cuts, resumed on `b`.
    let mut cut = send(
        a,
        "POST",
        &h,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_reconnection","arguments":{}}}"#,
    )
    .await;
    assert_eq!(cut.status, 200);
    let text = cut.ended().await;
    assert!(!text.contains(r#""id":3"#), "cut before the answer: {text}");
    let cursor = last_event_id(&text).expect("a primed stream");
    let resume_headers = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
        ("last-event-id", cursor.as_str()),
    ];
    let mut resumed = send(b, "GET", &resume_headers, "").await;
    assert_eq!(resumed.status, 200, "{}", resumed.text());
    let rest = resumed.ended().await;
    assert_eq!(
        rest.matches(r#""id":3"#).count(),
        1,
        "the answer once: {rest}"
    );

    // A call on `a` that asks the client (elicitation); the client posts
    // its answer to `b`, which forwards it to `a`, where the call goes on.
    let (mut asking, asked) = call_that_asks(a, &h, 4).await;
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": asked, "result": {"action": "accept", "content": {"name": "n"}}});
    let r = send(b, "POST", &h, &answer.to_string()).await;
    assert_eq!(r.status, 202);
    let done = asking.ended().await;
    assert_eq!(
        done.matches(r#""id":4"#).count(),
        1,
        "answered once: {done}"
    );
    assert!(done.contains("accept"), "{done}");

    // A call on `a` that asks the client, cancelled through `b`: `b`
    // serves no such call and publishes the cancellation on the fleet's
    // cancellations channel, which `a` listens to; the call's stream ends
    // there unanswered, and the client is told its question is withdrawn
    // (on its GET, held on `b`).
    let (mut cancelled, asked) = call_that_asks(a, &h, 6).await;
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6,"reason":"user"}}"#;
    assert_eq!(send(b, "POST", &h, cancel).await.status, 202);
    let done = cancelled.ended().await;
    assert!(
        !done.contains(r#""id":6"#),
        "no answer to a cancelled call: {done}"
    );
    let withdrawn = format!(r#""requestId":{asked}"#);
    let seen = moved.wait_for(&withdrawn).await;
    assert!(seen.contains("notifications/cancelled"), "{seen}");

    // DELETE on `b`; the session is gone on `a` too.
    let r = send(b, "DELETE", &h, "").await;
    assert_eq!(r.status, 200);
    let r = send(a, "POST", &h, r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#).await;
    assert_eq!(r.status, 404, "{}", r.text());
}

/// A `tools/call` (request `id`) of the `test_elicitation` tool posted to
/// `at`: its stream, once it carries the `elicitation/create`, and that
/// request's id.
async fn call_that_asks(
    at: SocketAddr,
    headers: &[(&str, &str)],
    id: u32,
) -> (Open, serde_json::Value) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"test_elicitation","arguments":{{"message":"m"}}}}}}"#
    );
    let call = send(at, "POST", headers, &body).await;
    assert_eq!(call.status, 200);
    let text = call.wait_for("elicitation/create").await;
    let asked = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
        .find(|m| m["method"] == "elicitation/create")
        .expect("the request")["id"]
        .clone();
    (call, asked)
}

/// A session-era session: `initialize` on `init_at`,
/// `notifications/initialized` on `ready_at`, its GET on `get_at`. Its id,
/// its POST headers and its GET.
async fn session_with_get(
    init_at: SocketAddr,
    ready_at: SocketAddr,
    get_at: SocketAddr,
) -> (String, Vec<(&'static str, String)>, Open) {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut r = send(init_at, "POST", &POST, init).await;
    assert_eq!(r.status, 200);
    let sid = r.sid.clone().expect("a session id");
    assert!(r.ended().await.contains("protocolVersion"));
    let mut h: Vec<(&str, String)> = POST.iter().map(|(n, v)| (*n, v.to_string())).collect();
    h.push(("mcp-session-id", sid.clone()));
    h.push(("mcp-protocol-version", "2025-11-25".into()));
    let hr: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(send(ready_at, "POST", &hr, note).await.status, 202);
    let get_headers = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let get = send(get_at, "GET", &get_headers, "").await;
    assert_eq!(get.status, 200, "{}", get.text());
    (sid, h, get)
}

/// Sessions A (held on `a`) and B (held on `b`), each with its GET where
/// it was opened; B calls the `broadcast` tool on `a`, then on `b`: each
/// GET shows each broadcast once.
async fn a_broadcast_reaches_both_instances_sessions(a: SocketAddr, b: SocketAddr) {
    let (_, _, get_a) = session_with_get(a, a, a).await;
    let (_, h, get_b) = session_with_get(b, b, b).await;
    let h: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
    for (round, at) in [(1, a), (2, b)] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"broadcast","arguments":{{}}}}}}"#,
            round + 1
        );
        let mut call = send(at, "POST", &h, &body).await;
        assert_eq!(call.status, 200);
        assert!(call.ended().await.contains("broadcast;"));
        for get in [&get_a, &get_b] {
            for _ in 0..500 {
                if get.text().matches("tools/list_changed").count() >= round {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    // Time for a second copy, if one were on its way.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (name, get) in [("A", &get_a), ("B", &get_b)] {
        let seen = get.text();
        assert_eq!(
            seen.matches("tools/list_changed").count(),
            2,
            "{name}: {seen}"
        );
    }
}

/// `scenario` over two instances on the in-process memory hub.
async fn on_two_hub_instances<F: std::future::Future<Output = ()>>(
    scenario: impl FnOnce(SocketAddr, SocketAddr) -> F,
) {
    let hub = MemoryHub::start(1024);
    let a = instance(0, hub.connect(InstanceId(0))).await;
    let b = instance(1, hub.connect(InstanceId(1))).await;
    scenario(a.addr.unwrap(), b.addr.unwrap()).await;
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_reaches_every_instance_on_the_memory_hub() {
    on_two_hub_instances(a_broadcast_reaches_both_instances_sessions).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_spans_two_instances_on_the_memory_hub() {
    on_two_hub_instances(one_session_over_two_instances).await;
}

/// One instance serving two sessions bounds each session's queued bytes on
/// its own (`session_bytes_queued_max`): session A's calls, each echoing a
/// 1 MB progress token (three progress notifications) on a stream its
/// client never reads, pass A's budget, and A's connections furthest behind
/// are closed; session B's one unread call, far within its own budget, is
/// not touched, though the instance holds more than a budget in all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_bounds_each_sessions_queued_bytes_on_its_own() {
    let hub = MemoryHub::start(1024);
    let mut server = ServerOptions {
        app_secret: Some([7; 32]),
        // Past one stream's bound: only the session's budget can cut.
        frame_bytes_queued_max: 64 << 20,
        session_bytes_queued_max: 2 << 20,
        ..ServerOptions::default()
    };
    server.endpoint.body_max = 8 << 20;
    let options = FleetOptions {
        server,
        instance: InstanceConfig {
            id: InstanceId(0),
            ..InstanceConfig::default()
        },
    };
    let handle = FleetServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        options,
        EverythingApp::default(),
        hub.connect(InstanceId(0)),
    )
    .await
    .unwrap();
    let at = handle.addr.unwrap();
    let (a, _, _get_a) = session_with_get(at, at, at).await;
    let (b, _, _get_b) = session_with_get(at, at, at).await;
    let (a_closed, b_closed) = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        // A call echoing a token of `size` bytes, from a client that reads
        // nothing.
        let unread = |sid: &str, id: u32, size: usize| {
            let stream = std::net::TcpStream::connect(at).unwrap();
            let token = "t".repeat(size);
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"test_tool_with_progress","arguments":{{}},"_meta":{{"progressToken":"{token}"}}}}}}"#
            );
            let raw = format!(
                "POST /mcp HTTP/1.1\r\nHost: localhost:{}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nMcp-Session-Id: {sid}\r\n\
                 MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{call}",
                at.port(),
                call.len()
            );
            let mut stream = stream;
            stream.write_all(raw.as_bytes()).unwrap();
            stream
        };
        let b_stream = unread(&b, 10, 100_000);
        let a_streams: Vec<_> = (0..4).map(|i| unread(&a, 20 + i, 1 << 20)).collect();
        std::thread::sleep(Duration::from_millis(1_500));
        // Closed: the server's end came (EOF or reset) once what it had
        // written is read.
        let closed = |mut s: std::net::TcpStream| {
            s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match s.read(&mut buf) {
                    Ok(0) => return true,
                    Ok(_) => continue,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        return false
                    }
                    Err(_) => return true,
                }
            }
        };
        let a_closed = a_streams.into_iter().filter(|s| closed(s.try_clone().unwrap())).count();
        (a_closed, closed(b_stream))
    })
    .await
    .unwrap();
    assert!(
        a_closed >= 1,
        "A past its budget: none of its connections closed"
    );
    assert!(!b_closed, "B, within its own budget, was cut for A");
    handle.shutdown().await;
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use mcp_streamable_redis::{connect, RedisOptions};

    /// A `redis-server` of this test's own, stopped when dropped.
    pub struct Redis {
        child: std::process::Child,
        pub port: u16,
        _dir: std::path::PathBuf,
    }

    impl Drop for Redis {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    impl Redis {
        /// Options for a link to this server.
        fn options(&self) -> RedisOptions {
            RedisOptions {
                url: format!("redis://127.0.0.1:{}", self.port),
                ..RedisOptions::default()
            }
        }
    }

    /// The next reply on a link's command connection (publications skipped).
    async fn next_reply(link: &mut StoreLink) -> mcp_streamable::fleet::StoreReply {
        use mcp_streamable_hyper::fleet::FromStore;
        loop {
            let got = tokio::time::timeout(Duration::from_secs(5), link.from.recv())
                .await
                .expect("a reply within 5 s")
                .expect("the link stays up");
            if let FromStore::Reply(r) = got {
                return r;
            }
        }
    }

    /// Starts one on a free loopback port below 32768, or `None` if there
    /// is no `redis-server` (a failure where CI requires it).
    pub fn start_redis() -> Option<Redis> {
        let found = std::process::Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok();
        if !found {
            assert!(
                std::env::var_os("MCP_STREAMABLE_REQUIRE_REDIS").is_none(),
                "redis-server is required (scripts/install-fleet.sh)"
            );
            eprintln!("redis-server not found: skipped (scripts/install-fleet.sh installs it)");
            return None;
        }
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("mcp-streamable-redis-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        #[allow(clippy::zombie_processes)] // waited for by `Redis`'s drop
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(Redis {
                    child,
                    port,
                    _dir: dir,
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("redis-server did not listen on {port}");
    }

    /// A free loopback port below 32768, a different one on every call
    /// (the tests of this file start their servers at once, in one
    /// process: one port each).
    fn free_port() -> u16 {
        use std::sync::atomic::{AtomicU32, Ordering};
        static CALLS: AtomicU32 = AtomicU32::new(0);
        let seed = std::process::id();
        for _ in 0..10_000 {
            let n = CALLS.fetch_add(1, Ordering::Relaxed);
            let port = 20000 + ((seed.wrapping_mul(7919) + n) % 10000) as u16;
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return port;
            }
        }
        panic!("no free loopback port in 20000..30000");
    }

    /// `scenario` over two instances on a `redis-server` of its own.
    async fn on_two_redis_instances<F: std::future::Future<Output = ()>>(
        scenario: impl FnOnce(SocketAddr, SocketAddr) -> F,
    ) {
        let Some(redis) = start_redis() else {
            return;
        };
        let options = redis.options();
        let a = instance(0, connect(options.clone()).await.unwrap()).await;
        let b = instance(1, connect(options).await.unwrap()).await;
        scenario(a.addr.unwrap(), b.addr.unwrap()).await;
        a.shutdown().await;
        b.shutdown().await;
    }

    /// Redis going away ends an instance (it cannot serve a session it
    /// cannot store): its handle says so, which `serve` exits on, and
    /// requests meanwhile get 503. A memory hub's instance never halts.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_instance_whose_redis_is_lost_halts_and_answers_503() {
        let Some(redis) = start_redis() else {
            return;
        };
        let handle = instance(0, connect(redis.options()).await.unwrap()).await;
        let addr = handle.addr.unwrap();
        let hub = instance(1, MemoryHub::start(64).connect(InstanceId(1))).await;
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let mut first = send(addr, "POST", &POST, init).await;
        assert_eq!(first.status, 200);
        assert!(first.ended().await.contains("protocolVersion"));
        drop(redis);
        tokio::time::timeout(Duration::from_secs(30), handle.halted())
            .await
            .expect("the instance sees its store go within 30 s");
        let after = send(addr, "POST", &POST, init).await;
        assert_eq!(after.status, 503);
        let never = tokio::time::timeout(Duration::from_millis(100), hub.halted()).await;
        assert!(never.is_err(), "a memory hub's instance never halts");
        handle.shutdown().await;
        hub.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_session_spans_two_instances_on_redis() {
        on_two_redis_instances(one_session_over_two_instances).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_broadcast_reaches_every_instance_on_redis() {
        on_two_redis_instances(a_broadcast_reaches_both_instances_sessions).await;
    }

    /// The same trim semantics as `MemoryStore` (its unit test
    /// `a_claimed_log_reports_what_its_trim_takes_before_any_claim`), on
    /// the Lua scripts: an append past the bound returns the mailbox
    /// entries it trimmed that no claim had taken.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_mailbox_trimmed_on_redis_reports_what_no_claim_took() {
        use mcp_streamable::fleet::{LogKey, Record, StoreOp, StoreReply};
        let Some(redis) = start_redis() else {
            return;
        };
        let options = RedisOptions {
            entries_per_log_max: 2,
            ..redis.options()
        };
        let mut link = connect(options).await.unwrap();
        let mailbox = LogKey::mailbox("0123456789abcdef0123456789abcdef".parse().unwrap());
        let append = async |link: &mut StoreLink, m: &str| {
            let record = Record::Message(format!("1 {m}").into());
            let log = mailbox.clone();
            link.ops.send(StoreOp::Append { log, record }).unwrap();
            match next_reply(link).await {
                StoreReply::Appended { evicted, .. } => {
                    evicted.iter().map(|e| e.seq).collect::<Vec<_>>()
                }
                other => panic!("{other:?}"),
            }
        };
        assert!(append(&mut link, "a").await.is_empty());
        assert!(append(&mut link, "b").await.is_empty());
        let claim = StoreOp::Claim {
            log: mailbox.clone(),
            max: 1,
        };
        link.ops.send(claim).unwrap();
        assert!(matches!(
            next_reply(&mut link).await,
            StoreReply::Claimed { ref entries, .. } if entries.len() == 1
        ));
        assert!(append(&mut link, "c").await.is_empty(), "1 was taken");
        assert_eq!(append(&mut link, "d").await, [2], "2 was not");
    }

    /// The session ops give the same replies on the Lua scripts as on
    /// `MemoryStore`: a touch or a load counts an adoption only when asked,
    /// a record overwritten keeps the count, a deleted session starts over.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn session_ops_count_adoptions_on_redis_as_in_memory() {
        use mcp_streamable::fleet::store::{MemoryStore, Output};
        use mcp_streamable::fleet::{InstanceId, StoreOp};
        use mcp_streamable::time::Instant;
        let Some(redis) = start_redis() else {
            return;
        };
        let mut link = connect(redis.options()).await.unwrap();
        let session: mcp_streamable::ids::SessionId =
            "0123456789abcdef0123456789abcdef".parse().unwrap();
        let put = |r: &str| StoreOp::PutSession {
            session: session.clone(),
            record: r.to_string().into(),
            ttl_ms: 60_000,
        };
        let touch = |adopt| StoreOp::TouchSession {
            session: session.clone(),
            ttl_ms: 60_000,
            adopt,
        };
        let load = |adopt| StoreOp::LoadSession {
            session: session.clone(),
            adopt,
        };
        let ops = [
            touch(true),
            put("r1"),
            touch(false),
            touch(true),
            load(true),
            load(false),
            put("r2"),
            touch(true),
            StoreOp::DeleteSession {
                session: session.clone(),
            },
            load(true),
            put("r3"),
            touch(true),
        ];
        let mut memory = MemoryStore::new(8);
        let (mut on_redis, mut in_memory) = (Vec::new(), Vec::new());
        for op in ops {
            memory.handle_op(InstanceId(0), op.clone(), Instant::ZERO);
            while let Some((_, out)) = memory.poll_output() {
                if let Output::Reply(r) = out {
                    in_memory.push(r);
                }
            }
            link.ops.send(op).unwrap();
            on_redis.push(next_reply(&mut link).await);
        }
        assert_eq!(on_redis, in_memory);
        let adoptions: Vec<u32> = in_memory
            .iter()
            .filter_map(|r| match r {
                mcp_streamable::fleet::StoreReply::Session {
                    record: Some(_),
                    adoption,
                    ..
                } => Some(*adoption),
                _ => None,
            })
            .collect();
        assert_eq!(adoptions, [0, 1, 2, 0, 3, 1]);
    }
}
