//! Hostile clients against the real shell over loopback: each attack is
//! reproduced, gets its documented answer, and a fresh client is served
//! during or right after it.

// The shell is real: these tests read the wall clock to bound how long an
// answer took (the cores never do).
#![allow(clippy::disallowed_methods)]

mod spawned;

use mcp_streamable_hyper::{EverythingApp, Server, ServerHandle, ServerOptions};
use serde_json::Value;
use spawned::Spawned;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn quick() -> ServerOptions {
    ServerOptions {
        header_read_timeout: Duration::from_millis(300),
        body_read_timeout: Duration::from_millis(300),
        ..ServerOptions::default()
    }
}

async fn start(options: ServerOptions) -> ServerHandle {
    Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        options,
        EverythingApp::default,
        None,
    )
    .await
    .expect("bind loopback")
}

/// A raw HTTP/1.1 answer: status, lower-case headers, body (SSE bodies as text).
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message of a JSON body, or of the last `data:` line of an SSE body.
    fn json(&self) -> Value {
        let text = if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .next_back()
                .unwrap_or("null")
                .to_owned()
        } else {
            self.body.clone()
        };
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
}

fn parse(raw: &str) -> Answer {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Sends `raw` on a fresh connection, reads until the server closes it or
/// `wait` passes.
fn exchange(addr: SocketAddr, raw: &[u8], wait: Duration) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    s.write_all(raw).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    parse(&String::from_utf8_lossy(&buf))
}

/// A raw POST of `body` (its `Content-Length`), in session `sid`, with
/// `extra` header lines (each ending in CRLF).
fn post_raw(sid: Option<&str>, extra: &str, body: &str) -> String {
    let sid = sid.map_or(String::new(), |s| format!("Mcp-Session-Id: {s}\r\n"));
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{sid}{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn post(addr: SocketAddr, sid: Option<&str>, body: &str) -> Answer {
    let raw = post_raw(sid, "Connection: close\r\n", body);
    exchange(addr, raw.as_bytes(), Duration::from_secs(5))
}

/// A fresh client: `initialize`, `notifications/initialized`, `ping`; the session id.
fn fresh_client(addr: SocketAddr) -> String {
    let init = post(addr, None, INIT);
    assert_eq!(init.status, 200, "initialize: {init:?}");
    let sid = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    assert_eq!(post(addr, Some(&sid), INITIALIZED).status, 202);
    let ping = post(
        addr,
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    );
    assert_eq!(ping.status, 200, "ping: {ping:?}");
    assert_eq!(ping.json()["result"], serde_json::json!({}));
    sid
}

/// Whether the server closed `s` within `within` (EOF or reset).
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 1024];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_half_sent_connections_are_closed() {
    let server = start(quick()).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let mut silent = TcpStream::connect(addr).unwrap();
        let mut half = TcpStream::connect(addr).unwrap();
        half.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
            .unwrap();
        // Keep-alive after one whole exchange, then silence.
        let mut kept = TcpStream::connect(addr).unwrap();
        kept.write_all(post_raw(None, "", INIT).as_bytes()).unwrap();
        let t = Instant::now();
        assert!(closed_within(&mut silent, Duration::from_secs(3)), "silent");
        assert!(
            closed_within(&mut half, Duration::from_secs(3)),
            "half a head"
        );
        assert!(
            closed_within(&mut kept, Duration::from_secs(3)),
            "idle keep-alive"
        );
        assert!(t.elapsed() < Duration::from_secs(3));
        fresh_client(addr);
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_shorter_than_its_length_gets_408() {
    let server = start(quick()).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let raw = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                   Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"";
        let a = exchange(addr, raw.as_bytes(), Duration::from_secs(3));
        assert_eq!(a.status, 408, "{a:?}");
        assert_eq!(a.json()["error"]["code"], -32000, "{a:?}");
        fresh_client(addr);
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_past_the_connection_cap_do_not_lock_out_a_new_client() {
    let mut options = quick();
    options.connections_max = 8;
    // Far longer than the bound below: only displacing an idle connection
    // can serve the newcomer in time.
    options.header_read_timeout = Duration::from_secs(30);
    let server = start(options).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let idle: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        fresh_client(addr);
        println!(
            "a newcomer past 40 idle sockets (cap 8): served in {:?}",
            t.elapsed()
        );
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        drop(idle);
    })
    .await;
    server.shutdown().await;
}

/// `serve` with 256 file descriptors and 300 idle sockets against it: its
/// connection cap is derived from the descriptor limit (not the default
/// 1,024 it could never reach), and a newcomer displaces the longest-idle
/// connection: served within a second, not after the header timeout (10 s).
#[test]
fn idle_sockets_past_the_descriptor_limit_do_not_keep_a_newcomer_waiting() {
    let bin = env!("CARGO_BIN_EXE_mcp-streamable");
    let mut command = std::process::Command::new("sh");
    command.arg("-c").arg(format!(
        "ulimit -n 256 && exec {bin} serve --addr 127.0.0.1:0"
    ));
    let server = Spawned::start(command);
    let addr = server.addr();
    let idle: Vec<TcpStream> = (0..300)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    fresh_client(addr);
    println!(
        "a newcomer past {} idle sockets, 256 descriptors: served in {:?}",
        idle.len(),
        t.elapsed()
    );
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_length_over_the_bound_is_refused_before_the_body() {
    let mut options = quick();
    options.endpoint.body_max = 1000;
    let server = start(options).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        for expect in ["", "Expect: 100-continue\r\n"] {
            let raw = format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\n{expect}Content-Length: 5000000\r\n\r\n"
            );
            // No body is sent at all: the answer must not wait for it.
            let t = Instant::now();
            let a = exchange(addr, raw.as_bytes(), Duration::from_secs(2));
            assert_eq!(a.status, 413, "{expect:?}: {a:?}");
            assert!(t.elapsed() < Duration::from_millis(1500), "answered at once");
            assert_eq!(a.json()["error"]["code"], -32000);
        }
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_chunked_framing_is_400_not_413() {
    let server = start(quick()).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let raw = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                   Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
                   zz\r\n{}\r\n0\r\n\r\n";
        let a = exchange(addr, raw.as_bytes(), Duration::from_secs(2));
        assert_eq!(a.status, 400, "{a:?}");
        // A body cut short by the client half-closing: 400 too.
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
              Accept: application/json, text/event-stream\r\nContent-Length: 50\r\n\r\n{\"a\"",
        )
        .unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = String::new();
        let _ = s.read_to_string(&mut buf);
        let a = parse(&buf);
        assert!(a.status == 400 || a.status == 0, "400 or closed, never 413: {a:?}");
        fresh_client(addr);
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_host_or_origin_and_missing_host_are_400() {
    let server = start(quick()).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let head = |extra: &str, host: bool| {
            let host = if host { "Host: 127.0.0.1\r\n" } else { "" };
            format!(
                "POST /mcp HTTP/1.1\r\n{host}{extra}Content-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{INIT}",
                INIT.len()
            )
        };
        for (extra, host) in [
            (
                "Origin: http://localhost\r\nOrigin: http://evil.com\r\n",
                true,
            ),
            ("Host: evil.com\r\n", true),
            ("", false),
        ] {
            let a = exchange(addr, head(extra, host).as_bytes(), Duration::from_secs(2));
            assert_eq!(a.status, 400, "{extra:?} host={host}: {a:?}");
            assert!(a.header("mcp-session-id").is_none());
        }
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_session_ids_or_versions_in_one_head_are_400() {
    let server = start(quick()).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let (a, b) = (fresh_client(addr), fresh_client(addr));
        let ping = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
        for extra in [
            format!("Mcp-Session-Id: {b}\r\n"),
            format!("Mcp-Session-Id: {a}\r\n"),
            "MCP-Protocol-Version: 2025-11-25\r\nMCP-Protocol-Version: 2025-03-26\r\n".into(),
            "Content-Type: text/plain\r\n".into(),
        ] {
            let raw = post_raw(Some(&a), &format!("{extra}Connection: close\r\n"), ping);
            let answer = exchange(addr, raw.as_bytes(), Duration::from_secs(2));
            assert_eq!(answer.status, 400, "{extra:?}: {answer:?}");
            assert_eq!(answer.json()["error"]["code"], -32000, "{answer:?}");
        }
        // Both sessions are untouched and still served.
        for sid in [&a, &b] {
            assert_eq!(
                post(addr, Some(sid), ping).json()["result"],
                serde_json::json!({})
            );
        }
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_other_than_the_endpoint_is_404_and_opens_no_session() {
    let server = start(quick()).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let at = |path: &str| {
            let raw = post_raw(None, "Connection: close\r\n", INIT).replacen("/mcp", path, 1);
            exchange(addr, raw.as_bytes(), Duration::from_secs(2))
        };
        for path in [
            "/",
            "/mcp/",
            "/MCP",
            "/other",
            "/mcpx",
            "/.well-known/oauth-protected-resource",
        ] {
            let a = at(path);
            assert_eq!(a.status, 404, "{path}: {a:?}");
            assert!(a.header("mcp-session-id").is_none(), "{path}: {a:?}");
            assert_eq!(a.json()["error"]["code"], -32000, "{path}: {a:?}");
            let message = a.json()["error"]["message"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            assert!(
                message.contains("\"/mcp\""),
                "names the endpoint: {message}"
            );
        }
        // The query is not part of the path.
        assert_eq!(at("/mcp?tenant=1").status, 200);
        let get = exchange(
            addr,
            b"GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            Duration::from_secs(2),
        );
        assert_eq!(get.status, 404, "{get:?}");
        fresh_client(addr);
    })
    .await;
    server.shutdown().await;
    // Another path, or none (every path: a router in front decides).
    for (path, other) in [(Some("/tools/mcp"), 404), (None, 200)] {
        let server = start(ServerOptions {
            path: path.map(Into::into),
            ..quick()
        })
        .await;
        let addr = server.addr.unwrap();
        let (mounted, elsewhere) = blocking(move || {
            let at = |p: &str| {
                let raw = post_raw(None, "Connection: close\r\n", INIT).replacen("/mcp", p, 1);
                exchange(addr, raw.as_bytes(), Duration::from_secs(2)).status
            };
            (at("/tools/mcp"), at("/mcp"))
        })
        .await;
        assert_eq!((mounted, elsewhere), (200, other), "path {path:?}");
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_initialize_answer_is_stamped_and_tools_call_params_are_checked() {
    let server = start(quick()).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let sid = fresh_client(addr);
        let ping = post(
            addr,
            Some(&sid),
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        );
        assert_eq!(ping.json()["result"], serde_json::json!({}), "{ping:?}");
        for params in [r#"[1,2]"#, r#""x""#, r#"{}"#, r#"{"name":7}"#] {
            let call = post(
                addr,
                Some(&sid),
                &format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{params}}}"#),
            );
            assert_eq!(call.json()["error"]["code"], -32602, "{params}: {call:?}");
        }
    })
    .await;
    server.shutdown().await;
}

/// One keep-alive connection sending requests back to back (answers must
/// have a Content-Length: whole JSON or whole SSE bodies).
struct KeepAlive {
    s: TcpStream,
    buf: Vec<u8>,
}

impl KeepAlive {
    fn new(addr: SocketAddr) -> Self {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.set_nodelay(true).unwrap();
        KeepAlive { s, buf: Vec::new() }
    }

    fn post(&mut self, sid: Option<&str>, body: &str) -> Answer {
        self.s
            .write_all(post_raw(sid, "", body).as_bytes())
            .unwrap();
        self.read_answer()
    }

    fn read_answer(&mut self) -> Answer {
        let mut chunk = [0u8; 8192];
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..end]).to_string();
                let len = head
                    .lines()
                    .find_map(|l| {
                        let (n, v) = l.split_once(':')?;
                        n.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .expect("a Content-Length");
                while self.buf.len() < end + 4 + len {
                    let n = self.s.read(&mut chunk).unwrap();
                    assert!(n > 0, "closed mid-answer");
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                let raw: Vec<u8> = self.buf.drain(..end + 4 + len).collect();
                return parse(&String::from_utf8_lossy(&raw));
            }
            let n = self.s.read(&mut chunk).unwrap();
            assert!(n > 0, "closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Resident memory of this process, in KiB (Linux).
fn rss_kib() -> u64 {
    rss_kib_of("self")
}

/// Resident memory of process `pid` (`self`: this one), in KiB (Linux).
fn rss_kib_of(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_bare_initializes_never_locks_out_a_new_client() {
    let mut options = quick();
    options.endpoint.sessions_max = 200;
    let server = start(options).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let before = rss_kib();
        let mut flood = KeepAlive::new(addr);
        let mut refused = 0;
        for _ in 0..10_000 {
            let a = flood.post(None, INIT);
            if a.status != 200 {
                refused += 1;
            }
        }
        assert_eq!(refused, 0, "half-open sessions make room for new ones");
        // During the flood's aftermath: a newcomer is served, and keeps its
        // session through another wave (it is initialized, the flood is not).
        let sid = fresh_client(addr);
        for _ in 0..1_000 {
            assert_eq!(flood.post(None, INIT).status, 200);
        }
        let ping = post(
            addr,
            Some(&sid),
            r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        );
        assert_eq!(
            ping.status, 200,
            "the initialized newcomer survived: {ping:?}"
        );
        let grown = rss_kib().saturating_sub(before);
        println!("flood of 11,000 initializes: +{grown} KiB RSS (sessions_max 200)");
        assert!(grown < 64 * 1024, "+{grown} KiB for at most 200 sessions");
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_sessions_expire_after_the_init_timeout() {
    let mut options = quick();
    options.endpoint.session.init_timeout_ms = Some(300);
    let server = start(options).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let half = post(addr, None, INIT);
        let half = half.header("mcp-session-id").unwrap().to_owned();
        let full = fresh_client(addr);
        // The sweeper wakes parked sessions once a second.
        std::thread::sleep(Duration::from_millis(1_600));
        let ping = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
        assert_eq!(
            post(addr, Some(&half), ping).status,
            404,
            "never initialized: gone"
        );
        assert_eq!(
            post(addr, Some(&full), ping).status,
            200,
            "initialized: kept"
        );
    })
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_peer_quota_refuses_that_peer_only_with_429() {
    let mut options = quick();
    options.endpoint.sessions_per_peer_max = Some(3);
    let server = start(options).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let held: Vec<String> = (0..3).map(|_| fresh_client(addr)).collect();
        let over = post(addr, None, INIT);
        assert_eq!(over.status, 429, "{over:?}");
        assert_eq!(over.json()["error"]["code"], -32000);
        assert!(over.body.contains("too many sessions for this client"));
        // Half-open sessions of the same peer make room for its next one.
        let del = format!(
            "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: {}\r\nConnection: close\r\n\r\n",
            held[0]
        );
        assert_eq!(exchange(addr, del.as_bytes(), Duration::from_secs(2)).status, 200);
        std::thread::sleep(Duration::from_millis(100));
        let a = post(addr, None, INIT);
        assert_eq!(a.status, 200, "{a:?}");
        let b = post(addr, None, INIT);
        assert_eq!(b.status, 200, "evicts the same peer's half-open one: {b:?}");
    })
    .await;
    server.shutdown().await;
}

fn set_level(size: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{{"level":"{}"}}}}"#,
        "x".repeat(size)
    )
}

/// Big messages the server must keep for a client (held for a GET that never
/// comes, queued for a GET that never reads, kept for replay) stay within
/// their byte bounds, and everyone else is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_messages_nobody_reads_stay_within_the_byte_budgets() {
    let mut options = quick();
    options.endpoint.session.held_bytes_max = 256 << 10;
    options.endpoint.session.events_bytes_max = 256 << 10;
    options.endpoint.session.session_bytes_max = 512 << 10;
    options.frame_bytes_queued_max = 256 << 10;
    let server = start(options).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let before = rss_kib();
        // 1. Held: 100 log notifications of 100 KB each, no GET open (10 MB).
        let sid = fresh_client(addr);
        let mut c = KeepAlive::new(addr);
        let big = set_level(100_000);
        for _ in 0..100 {
            let a = c.post(Some(&sid), &big);
            assert_eq!(a.status, 200, "{a:?}");
        }
        // A GET now gets what was held: within held_bytes_max.
        let mut get = TcpStream::connect(addr).unwrap();
        write!(
            get,
            "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
             Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
        )
        .unwrap();
        get.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 65536];
        while let Ok(n) = get.read(&mut chunk) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        let held = String::from_utf8_lossy(&got)
            .matches("Log level set to")
            .count();
        assert!(
            (1..=2).contains(&held),
            "{held} held messages of 100 KB delivered"
        );
        // 2. Queued and kept for replay: 100 more while that GET never reads
        // (on a new connection: the first has idled past the header timeout).
        let mut c = KeepAlive::new(addr);
        for _ in 0..100 {
            assert_eq!(c.post(Some(&sid), &big).status, 200);
        }
        // 3. Echoed: 8 calls of test_tool_with_progress with a 1 MB progress
        // token, each answer (progress echoes the token) never read.
        let token = "t".repeat(1 << 20);
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{{"name":"test_tool_with_progress","arguments":{{}},"_meta":{{"progressToken":"{token}"}}}}}}"#
        );
        let unread: Vec<TcpStream> = (0..8)
            .map(|i| {
                let mut s = TcpStream::connect(addr).unwrap();
                let call = call.replace(r#""id":11"#, &format!(r#""id":{}"#, 100 + i));
                s.write_all(post_raw(Some(&sid), "", &call).as_bytes())
                    .unwrap();
                s
            })
            .collect();
        // Everyone else is served meanwhile.
        fresh_client(addr);
        let grown = rss_kib().saturating_sub(before);
        println!("20 MB of messages and 8 MB of echoed tokens into one session nobody reads: +{grown} KiB RSS");
        std::thread::sleep(Duration::from_millis(1_500));
        // Each unread response fell behind at its second 1 MB echo: its
        // connection was closed (what was queued for it freed; the stream
        // stays resumable), so its client reads at most a prefix, then the end.
        for mut s in unread {
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            let mut got = Vec::new();
            let mut chunk = [0u8; 65536];
            let ended = loop {
                match s.read(&mut chunk) {
                    Ok(0) => break true,
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                    Err(e) => {
                        break !matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        )
                    }
                }
            };
            assert!(ended, "the server closed the connection of a reader that fell behind");
            let text = String::from_utf8_lossy(&got);
            assert!(text.matches("notifications/progress").count() <= 1);
            assert!(!text.contains(r#""result""#), "the rest stayed behind");
        }
        // RSS also holds what the allocator has not given back (the 1 MB
        // request bodies, parsed and dropped): a loose ceiling; the exact
        // bounds are `tests/cores/budgets.rs`'s and the reads below.
        assert!(grown < 40 * 1024, "+{grown} KiB");
        drop(get);
    })
    .await;
    server.shutdown().await;
}

/// A child process killed when dropped (a failing test must not leave it).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CPU time (user + system, in clock ticks) of process `pid`.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) are space-separated.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    num(11) + num(12)
}

/// Few file descriptors: `serve` under `ulimit -n 48` with 80 sockets held
/// open. Its connection cap comes from the limit (16), so it does not run
/// out, nor spin; each newcomer displaces the longest-idle socket, and a
/// client is served at once, not after the held sockets' header timeouts.
#[test]
fn out_of_file_descriptors_the_accept_loop_backs_off_and_recovers() {
    use std::io::BufRead;
    let bin = env!("CARGO_BIN_EXE_mcp-streamable");
    let mut child = Killed(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -n 48 && exec {bin} serve --addr 127.0.0.1:0 --header-timeout-ms 1500"
            ))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: SocketAddr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .and_then(|w| w.strip_suffix("/mcp"))
        .expect("serving URL")
        .parse()
        .unwrap();
    let held: Vec<TcpStream> = (0..80)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(child.0.id());
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ticks(child.0.id()) - before;
    println!("out of fds, 1 s: {used} ticks of CPU (100 = a whole core)");
    assert!(used < 30, "the accept loop spins: {used} ticks in 1 s");
    let t = Instant::now();
    let sid = fresh_client(addr);
    println!("newcomer served after {:?}", t.elapsed());
    assert!(!sid.is_empty());
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    drop(held);
    drop(child);
}

/// `examples/blocking.rs` (built by `cargo test` beside this test's
/// binary) on a free loopback port; killed on drop.
fn blocking_example() -> Spawned {
    let mut command = spawned::example("blocking");
    command.args(["--addr", "127.0.0.1:0"]);
    Spawned::start(command)
}

/// The blocking example is the embedding users copy, so it bounds what a
/// client can make it hold: a header line without end is read no further
/// than the head's bound (the connection is closed, nothing accumulates),
/// and a fresh client is served after.
#[test]
fn the_blocking_example_reads_a_head_without_end_no_further_than_its_bound() {
    let example = blocking_example();
    let pid = example.pid().to_string();
    let before = rss_kib_of(&pid);
    let mut s = TcpStream::connect(example.addr()).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"POST /mcp HTTP/1.1\r\nX-Endless: ").unwrap();
    let chunk = vec![b'a'; 1 << 20];
    let sent = (0..64).take_while(|_| s.write_all(&chunk).is_ok()).count();
    assert!(sent < 64, "64 MiB of one header line were all taken");
    let after = rss_kib_of(&pid);
    assert!(after < before + 8 * 1024, "{before} KiB -> {after} KiB");
    let mut fresh = TcpStream::connect(example.addr()).unwrap();
    fresh
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{INIT}",
        INIT.len()
    );
    fresh.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 15];
    fresh.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200 OK");
}

/// An application's own router (axum) served by our accept loop
/// (`Server::serve_service`, what `examples/axum.rs` does) gets its bounds:
/// silent sockets are closed after the header timeout, idle sockets past
/// `connections_max` do not lock a newcomer out, the router's own routes are
/// served, and the peer reaches the core mounted in it (its per-peer quota
/// answers 429).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_on_our_accept_loop_has_its_connection_bounds_and_its_peer() {
    let mut options = quick();
    options.connections_max = 8;
    options.endpoint.sessions_per_peer_max = Some(2);
    let (mcp, handle) = Server::start(options.clone(), EverythingApp::default, None);
    let router = axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
        .route_service("/mcp", mcp);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepting = Server::serve_service(listener, &options, router);
    blocking(move || {
        let mut silent = TcpStream::connect(addr).unwrap();
        assert!(closed_within(&mut silent, Duration::from_secs(3)), "silent");
        let idle: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let t = Instant::now();
        fresh_client(addr);
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
        drop(idle);
        let health = exchange(
            addr,
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            Duration::from_secs(3),
        );
        assert_eq!((health.status, health.body.as_str()), (200, "ok\n"));
        fresh_client(addr);
        let over = post(addr, None, INIT);
        assert_eq!(over.status, 429, "the peer reached the core: {over:?}");
    })
    .await;
    accepting.shutdown().await;
    handle.shutdown().await;
}

/// A raw request without a body, with `extra` header lines.
fn bodiless(addr: SocketAddr, method: &str, sid: &str, extra: &str) -> Answer {
    let raw = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n{extra}Connection: close\r\n\r\n"
    );
    exchange(addr, raw.as_bytes(), Duration::from_millis(800))
}

/// With authentication on: a request without a token is refused 401 with a
/// challenge naming the resource's metadata, which is served where it
/// says; a second client holding the first one's session id and an event
/// id gets, for every verb, exactly the answer of an unknown session; the
/// first client, with a refreshed token of the same subject, keeps its
/// session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stolen_session_id_is_worth_nothing_to_another_principal() {
    use mcp_streamable_hyper::auth::{Auth, Principal, ResourceMetadata, StaticTokens};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut options = quick();
    let tokens = StaticTokens::new()
        .with("alice-1", Principal::new("alice"))
        .with("alice-2", Principal::new("alice"))
        .with("bob-1", Principal::new("bob"));
    let resource = format!("http://127.0.0.1:{port}/mcp");
    options.auth = Auth::with(tokens).metadata(ResourceMetadata::new(
        resource.clone(),
        vec!["http://127.0.0.1:1/issuer".into()],
    ));
    let server = Server::bind(
        format!("127.0.0.1:{port}").parse().unwrap(),
        options,
        EverythingApp::default,
        None,
    )
    .await
    .expect("bind loopback");
    let addr = server.addr.unwrap();
    blocking(move || {
        let bearer = |t: &str| format!("Authorization: Bearer {t}\r\n");
        let send = |sid: Option<&str>, extra: &str, body: &str| {
            let raw = post_raw(sid, &format!("{extra}Connection: close\r\n"), body);
            exchange(addr, raw.as_bytes(), Duration::from_secs(5))
        };
        // No token: 401 and the challenge; a wrong one says why.
        let refused = send(None, "", INIT);
        assert_eq!(refused.status, 401);
        let challenge = refused.header("www-authenticate").expect("a challenge");
        let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
        assert_eq!(challenge, format!("Bearer resource_metadata=\"{metadata_url}\""));
        let wrong = send(None, &bearer("nope"), INIT);
        assert_eq!(wrong.status, 401);
        assert!(wrong.header("www-authenticate").unwrap().contains("error=\"invalid_token\""));
        // The metadata, where the challenge says.
        let raw = "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        let doc = exchange(addr, raw.as_bytes(), Duration::from_secs(5));
        assert_eq!(doc.status, 200);
        let doc: Value = serde_json::from_str(&doc.body).unwrap();
        assert_eq!(doc["resource"], resource);
        assert_eq!(doc["authorization_servers"][0], "http://127.0.0.1:1/issuer");

        // Alice opens a session and a GET that carries an event id.
        let init = send(None, &bearer("alice-1"), INIT);
        assert_eq!(init.status, 200, "{init:?}");
        let sid = init.header("mcp-session-id").unwrap().to_owned();
        let event = init
            .body
            .lines()
            .find_map(|l| l.strip_prefix("id: "))
            .expect("an event id on the initialize stream")
            .to_owned();
        assert_eq!(send(Some(&sid), &bearer("alice-1"), INITIALIZED).status, 202);

        // Bob, with her session id and event id: every verb, the unknown
        // session's answer.
        let unknown = send(
            Some("0000000000000000000000000000dead"),
            &bearer("bob-1"),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
        );
        assert_eq!(unknown.status, 404);
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
        let post = send(Some(&sid), &bearer("bob-1"), call);
        let get = bodiless(addr, "GET", &sid, &bearer("bob-1"));
        let resume = bodiless(
            addr,
            "GET",
            &sid,
            &format!("{}Last-Event-ID: {event}\r\n", bearer("bob-1")),
        );
        let delete = bodiless(addr, "DELETE", &sid, &bearer("bob-1"));
        for (verb, a) in [("POST", &post), ("GET", &get), ("resume", &resume), ("DELETE", &delete)] {
            assert_eq!(a.status, 404, "{verb}: {a:?}");
            assert_eq!(a.body, unknown.body, "{verb}: the unknown session's very answer");
            assert_eq!(a.header("mcp-session-id"), None, "{verb}");
        }

        // Alice, her token refreshed: still her session.
        let list = send(Some(&sid), &bearer("alice-2"), call);
        assert_eq!(list.status, 200, "{list:?}");
        assert!(list.json()["result"]["tools"].is_array(), "{list:?}");
        assert_eq!(bodiless(addr, "DELETE", &sid, &bearer("alice-2")).status, 200);
    })
    .await;
    server.shutdown().await;
}

/// Our client with a token provider against an authenticating server: no
/// token, no session (401, told to the application as a failed
/// `initialize`); a token, a session; the provider's token refreshed
/// between calls, the same session, served on (the server's hook saw the
/// new token).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_sends_its_bearer_token_and_keeps_its_session_across_a_refresh() {
    use mcp_streamable_hyper::auth::{Auth, Principal, StaticTokens};
    use mcp_streamable_hyper::client::{split_url, Client, ClientOptions};
    use mcp_streamable_hyper::TcpConnect;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    let tokens = StaticTokens::new()
        .with("alice-1", Principal::new("alice"))
        .with("alice-2", Principal::new("alice"));
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let mut options = quick();
    options.auth = Auth::with(move |parts: &hyper::http::request::Parts| {
        let value = parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        log.lock().unwrap().extend(value.map(str::to_owned));
        tokens.authenticate(value).map(Some)
    });
    let server = start(options).await;
    let addr = server.addr.unwrap();
    let (authority, path) = split_url(&format!("http://{addr}/mcp")).unwrap();

    let anonymous = Client::connect(
        TcpConnect(addr),
        &authority,
        &path,
        ClientOptions::default(),
    )
    .await;
    assert!(anonymous.is_err(), "no token, no session");

    let refreshed = Arc::new(AtomicUsize::new(1));
    let generation = refreshed.clone();
    let options = ClientOptions {
        bearer: Some(Arc::new(move || {
            Some(format!("alice-{}", generation.load(Ordering::SeqCst)))
        })),
        ..ClientOptions::default()
    };
    let (client, _) = Client::connect(TcpConnect(addr), &authority, &path, options)
        .await
        .expect("initialize with a token");
    let echo = |text: &'static str| {
        let client = &client;
        async move {
            client
                .call_tool("echo", serde_json::json!({"text": text}))
                .await
                .expect("the shell")
                .expect("a result")
                .to_value()["content"][0]["text"]
                .clone()
        }
    };
    assert_eq!(echo("one").await, "one");
    refreshed.store(2, Ordering::SeqCst);
    assert_eq!(
        echo("two").await,
        "two",
        "the refreshed token, the same session"
    );
    assert_eq!(
        seen.lock().unwrap().last().map(String::as_str),
        Some("Bearer alice-2")
    );
    client.close().await;
    server.shutdown().await;
}

/// `examples/auth_jwt.rs` run as a user runs it: its JWT hook refuses a
/// request without a token, an expired one and one for another audience
/// (401, `invalid_token`), serves alice's token, binds her session to her
/// subject (another token of hers is served, bob's gets 404 for every verb).
#[test]
fn the_jwt_example_binds_each_session_to_its_tokens_subject() {
    use jsonwebtoken::{encode, EncodingKey, Header};
    let mut command = spawned::example("auth_jwt");
    command.args(["--addr", "127.0.0.1:0", "--secret", "test-secret"]);
    let server = Spawned::start(command);
    let addr = server.addr();
    let resource = server.url.clone();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = |sub: &str, aud: &str, exp: u64| {
        let claims = serde_json::json!({
            "sub": sub, "aud": aud, "iss": "https://auth.example.com", "exp": exp
        });
        let key = EncodingKey::from_secret(b"test-secret");
        format!(
            "Authorization: Bearer {}\r\n",
            encode(&Header::default(), &claims, &key).unwrap()
        )
    };
    let send = |sid: Option<&str>, auth: &str, body: &str| {
        let raw = post_raw(sid, &format!("{auth}Connection: close\r\n"), body);
        exchange(addr, raw.as_bytes(), Duration::from_secs(5))
    };
    let refused = send(None, "", INIT);
    assert_eq!(refused.status, 401);
    assert!(refused
        .header("www-authenticate")
        .unwrap()
        .contains("/.well-known/oauth-protected-resource/mcp\""));
    for bad in [
        token("alice", &resource, now - 600),
        token("alice", "http://elsewhere/mcp", now + 600),
    ] {
        let a = send(None, &bad, INIT);
        assert_eq!(a.status, 401, "{bad}");
        assert!(a
            .header("www-authenticate")
            .unwrap()
            .contains("invalid_token"));
    }
    let init = send(None, &token("alice", &resource, now + 600), INIT);
    assert_eq!(init.status, 200, "{init:?}");
    let sid = init.header("mcp-session-id").unwrap().to_owned();
    let alice_again = token("alice", &resource, now + 1200);
    assert_eq!(send(Some(&sid), &alice_again, INITIALIZED).status, 202);
    let bob = token("bob", &resource, now + 600);
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    assert_eq!(send(Some(&sid), &bob, list).status, 404);
    assert_eq!(bodiless(addr, "GET", &sid, &bob).status, 404);
    assert_eq!(bodiless(addr, "DELETE", &sid, &bob).status, 404);
    assert_eq!(send(Some(&sid), &alice_again, list).status, 200);
}

/// `mcp-streamable serve` (the real binary, its allocator) on a free
/// loopback port; killed on drop. `args` are its flags beside the address.
/// Its allocator gives freed pages back at once (`MIMALLOC_PURGE_DELAY=0`),
/// so its RSS is what it holds, not what it held at the peak and keeps
/// cached for reuse.
fn serve_process(args: &[&str]) -> Spawned {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-streamable"));
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .env("MIMALLOC_PURGE_DELAY", "0");
    Spawned::start(command)
}

/// One session's calls, each echoing a 1 MB progress token on a stream its
/// client never reads, pin a bounded part of the server's memory, not what
/// was uploaded: the requests in flight are bounded in bytes
/// (`in_flight_bytes_max`: the rest are refused 429, nothing kept), and the
/// bytes queued on the session's streams (`session_bytes_queued_max`: the
/// connections furthest behind are closed). Measured on the `serve`
/// process.
#[test]
fn many_unread_calls_of_one_session_pin_a_bounded_part_of_the_memory() {
    let server = serve_process(&[]);
    let (addr, pid) = (server.addr(), server.pid().to_string());
    let sid = fresh_client(addr);
    let token = "t".repeat(1 << 20);
    let before = rss_kib_of(&pid);
    let unread: Vec<(TcpStream, bool)> = (0..200)
        .map(|i| {
            let mut s = TcpStream::connect(addr).unwrap();
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"test_tool_with_progress","arguments":{{}},"_meta":{{"progressToken":"{token}"}}}}}}"#,
                100 + i
            );
            // The server may refuse before the body is all read and close
            // the connection: the rest of the write then fails, and what
            // the client reads is the refusal, or nothing.
            let written = s.write_all(post_raw(Some(&sid), "", &call).as_bytes());
            let cut = match written {
                Ok(()) => false,
                Err(e) => {
                    let kind = e.kind();
                    use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
                    assert!(matches!(kind, BrokenPipe | ConnectionReset), "{e}");
                    true
                }
            };
            (s, cut)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1_500));
    fresh_client(addr);
    let grown = rss_kib_of(&pid).saturating_sub(before);
    // What each client was told: a 200 (a call taken) or a 429 (refused).
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    for (mut s, cut) in unread {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut b = [0u8; 12];
        let status = match (s.read(&mut b), cut) {
            (Ok(n), _) if n > 0 => String::from_utf8_lossy(&b[..n]).into_owned(),
            // Closed mid-upload, the answer lost with the connection: a
            // call the server did not take.
            (_, true) => "closed mid-upload".to_owned(),
            (Ok(_), false) => "closed".to_owned(),
            (Err(e), false) => format!("{:?}", e.kind()),
        };
        *statuses.entry(status).or_default() += 1;
    }
    println!("200 unread calls echoing 1 MB progress tokens into one session (200 MB uploaded): +{grown} KiB RSS; {statuses:?}");
    let refused = ["HTTP/1.1 429", "closed mid-upload"]
        .iter()
        .filter_map(|s| statuses.get(*s))
        .sum::<usize>();
    assert!(
        refused >= 100,
        "{refused} calls refused past in_flight_bytes_max: {statuses:?}"
    );
    assert!(grown < 20 * 1024, "+{grown} KiB");
}

/// One session's bodies being read count against its budget before the
/// session sees them: POSTs that declare 1 MB each and send only a few
/// bytes of it are read while their sum fits `in_flight_bytes_max` (8 MiB:
/// eight of them), and every further one is refused 429 at once, before a
/// byte of its body is read; another session is not touched, and once the
/// slow uploads give up, the session reads bodies again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_being_read_count_against_their_session_before_it_sees_them() {
    let mut options = quick();
    options.body_read_timeout = Duration::from_secs(30);
    let server = start(options).await;
    let addr = server.addr.unwrap();
    blocking(move || {
        let sid = fresh_client(addr);
        let other = fresh_client(addr);
        let head = |sid: &str| {
            format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nMcp-Session-Id: {sid}\r\n\
                 Content-Length: 1000000\r\n\r\n{{\"jsonrpc\":\"2.0\","
            )
        };
        let mut slow: Vec<TcpStream> = Vec::new();
        let mut refused = 0;
        for _ in 0..12 {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(head(&sid).as_bytes()).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
            let mut b = [0u8; 12];
            match s.read(&mut b) {
                Ok(n) if n > 0 => {
                    assert_eq!(&b[..n], b"HTTP/1.1 429", "refused, not served");
                    refused += 1;
                }
                // Still being read: the server waits for the rest.
                _ => slow.push(s),
            }
        }
        assert_eq!((slow.len(), refused), (8, 4), "8 x 1 MB fit 8 MiB");
        // Another session's bodies are its own.
        let ping = post(
            addr,
            Some(&other),
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        );
        assert_eq!(ping.status, 200, "{ping:?}");
        // Alone again, the session reads a body.
        drop(slow);
        std::thread::sleep(Duration::from_millis(200));
        let ping = post(
            addr,
            Some(&sid),
            r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
        );
        assert_eq!(ping.status, 200, "{ping:?}");
    })
    .await;
    server.shutdown().await;
}

/// One session's GETs, opened and never read, pin at most about the
/// session's queued-bytes budget however many connections carry them: 200
/// GETs nobody reads, then 300 unrelated messages of 1 MB for them.
/// Measured on the `serve` process; a newcomer is served meanwhile.
#[test]
fn many_unread_streams_of_one_session_pin_a_bounded_part_of_the_memory() {
    let server = serve_process(&[]);
    let (addr, pid) = (server.addr(), server.pid().to_string());
    let sid = fresh_client(addr);
    let before = rss_kib_of(&pid);
    let gets: Vec<TcpStream> = (0..200)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            write!(
                s,
                "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
                 Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
            )
            .unwrap();
            s
        })
        .collect();
    let mut c = KeepAlive::new(addr);
    let big = set_level(1 << 20);
    for _ in 0..300 {
        assert_eq!(c.post(Some(&sid), &big).status, 200);
    }
    fresh_client(addr);
    let grown = rss_kib_of(&pid).saturating_sub(before);
    println!("200 unread GETs of one session, 300 MB of messages for them: +{grown} KiB RSS");
    drop(gets);
    assert!(grown < 16 * 1024, "+{grown} KiB");
}

/// `examples/axum.rs` with `--auth-token`: the service mounted in an axum
/// router refuses a request without a token (401, naming the metadata the
/// accept loop serves), serves alice, and gives bob, holding her session
/// id, the unknown session's 404 for every verb; the router's own routes
/// stay open.
#[test]
fn the_axum_example_binds_sessions_to_their_principal() {
    let mut command = spawned::example("axum");
    command.args([
        "--addr",
        "127.0.0.1:0",
        "--auth-token",
        "alice-1=alice",
        "--auth-token",
        "bob-1=bob",
    ]);
    let server = Spawned::start(command);
    let addr = server.addr();
    let send = |sid: Option<&str>, auth: &str, body: &str| {
        let raw = post_raw(sid, &format!("{auth}Connection: close\r\n"), body);
        exchange(addr, raw.as_bytes(), Duration::from_secs(5))
    };
    let refused = send(None, "", INIT);
    assert_eq!(refused.status, 401);
    let challenge = refused.header("www-authenticate").unwrap().to_owned();
    let path = challenge
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|url| url.strip_prefix(&format!("http://{addr}")))
        .expect("a metadata URL on this server")
        .to_owned();
    let raw = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let doc = exchange(addr, raw.as_bytes(), Duration::from_secs(5));
    assert_eq!(doc.status, 200, "{doc:?}");
    let health = exchange(
        addr,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    );
    assert_eq!(health.status, 200, "the application's own routes stay open");
    let alice = "Authorization: Bearer alice-1\r\n";
    let init = send(None, alice, INIT);
    assert_eq!(init.status, 200, "{init:?}");
    let sid = init.header("mcp-session-id").unwrap().to_owned();
    assert_eq!(send(Some(&sid), alice, INITIALIZED).status, 202);
    let bob = "Authorization: Bearer bob-1\r\n";
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    assert_eq!(send(Some(&sid), bob, list).status, 404);
    assert_eq!(bodiless(addr, "GET", &sid, bob).status, 404);
    assert_eq!(bodiless(addr, "DELETE", &sid, bob).status, 404);
    assert_eq!(send(Some(&sid), alice, list).status, 200);
}
