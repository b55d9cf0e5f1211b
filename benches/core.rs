//! Core throughput and idle-session memory.
//!
//! `cargo bench --bench core` runs the criterion groups and then prints the
//! idle-session figures, the core's and the HTTP shell's, measured with a
//! counting allocator (`-- --idle-only`: only those).
#![allow(missing_docs, unsafe_code)]

use criterion::{criterion_group, Criterion, Throughput};
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::SessionId;
use mcp_streamable::jsonrpc::RawJson;
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::principal::Caller;
use mcp_streamable::server::{
    Cause, EndpointConfig, RequestHead, ServerEndpoint, ServerEvent, ServerOutput, SessionConfig,
};
use mcp_streamable::time::Instant;
use mcp_streamable::version::ProtocolVersion;
use std::sync::atomic::Ordering;

#[path = "../tests/heap_support/mod.rs"]
mod heap_support;
use heap_support::LIVE;

fn config() -> EndpointConfig {
    EndpointConfig {
        session: SessionConfig {
            keepalive_ms: None,
            ..SessionConfig::default()
        }
        .into(),
        ..EndpointConfig::default()
    }
}

const INIT: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Opens a ready session; returns its id.
fn open(ep: &mut ServerEndpoint, now: Instant) -> SessionId {
    let d = ep.handle_request(&RequestHead::post(None, None), INIT, now);
    let sid = d.session.expect("session");
    drain(ep, now);
    let head = RequestHead::post(Some(&sid), Some(ProtocolVersion::V2025_11_25));
    ep.handle_request(&head, INITIALIZED, now);
    drain(ep, now);
    sid
}

/// Drains outputs (the crate's observed drain, nobody observing), answering
/// every request at once; returns outputs seen.
fn drain(ep: &mut ServerEndpoint, now: Instant) -> usize {
    let mut n = 0;
    ep.drain_observed(&mut |_| {}, |ep, out, _| {
        n += 1;
        match out {
            ServerOutput::Transmit(t) => {
                if matches!(t.kind, mcp_streamable::server::TransmitKind::End(_)) {
                    ep.handle_http_closed(t.http, now);
                }
                std::hint::black_box(&t);
            }
            ServerOutput::Event(sid, ServerEvent::Request { id, .. }) => {
                let s = ep.session_mut(&sid).expect("session");
                let _ = s.respond(&id, Ok(RawJson::empty_object()), now);
            }
            ServerOutput::Event(..) => {}
        }
    });
    n
}

fn post_round_trip(c: &mut Criterion) {
    let now = Instant::ZERO;
    let mut ep = ServerEndpoint::with_ids(config(), ServerPolicy::FIXED, IdSource::reproducible(1));
    let sid = open(&mut ep, now);
    let head = RequestHead::post(Some(&sid), Some(ProtocolVersion::V2025_11_25));
    let mut id = 1u64;
    // Outputs per round trip: request event + head, priming, response, end.
    let per_call = {
        let body = br#"{"jsonrpc":"2.0","id":"warm","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
        ep.handle_request(&head, body, now);
        drain(&mut ep, now) as u64
    };
    let mut g = c.benchmark_group("server");
    g.throughput(Throughput::Elements(per_call));
    g.bench_function("post_tools_call_round_trip", |b| {
        b.iter(|| {
            id += 1;
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}}}}}}"#
            );
            ep.handle_request(&head, body.as_bytes(), now);
            drain(&mut ep, now)
        })
    });
    g.finish();
}

/// What `serve` runs per request, short of HTTP: the driver (the endpoint,
/// the `everything` application, the wire) answering a `tools/call` whole.
fn driver_tools_call(c: &mut Criterion) {
    use mcp_streamable::server::ServerDriver;
    use mcp_streamable_hyper::EverythingApp;
    let now = Instant::ZERO;
    let ep = ServerEndpoint::with_ids(config(), ServerPolicy::FIXED, IdSource::reproducible(4));
    let mut driver = ServerDriver::new(ep, EverythingApp::default(), 4);
    let drain = |d: &mut ServerDriver<EverythingApp>| {
        let mut bytes = 0;
        while let Some((_, w)) = d.poll_write() {
            bytes += w.body().len();
        }
        bytes
    };
    driver.handle_request(
        &RequestHead::post(None, None),
        Ok(INIT),
        &Caller::default(),
        now,
    );
    drain(&mut driver);
    let sid = driver
        .endpoint()
        .session_ids()
        .next()
        .cloned()
        .expect("session");
    let head = RequestHead::post(Some(&sid), Some(ProtocolVersion::V2025_11_25));
    driver.handle_request(&head, Ok(INITIALIZED), &Caller::default(), now);
    drain(&mut driver);
    let mut id = 1u64;
    let mut g = c.benchmark_group("driver");
    g.throughput(Throughput::Elements(1));
    g.bench_function("tools_call_everything", |b| {
        b.iter(|| {
            id += 1;
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}}}}}}"#
            );
            driver.handle_request(&head, Ok(body.as_bytes()), &Caller::default(), now);
            let n = drain(&mut driver);
            assert!(n > 0 && !driver.has_open_exchanges());
            n
        })
    });
    g.finish();
}

/// What `serve` runs per request short of TCP and hyper's parse: the shell's
/// `McpService` (the head and body taken in, the routing table, the parked
/// session woken and served on the caller's task, the driver, the hyper
/// response) answering a `tools/call` on one session, one request at a time.
fn http_service_tools_call(c: &mut Criterion) {
    let server = heap_support::InProcess::start().with_one_peer();
    let sid = server.open();
    let mut id = 1u64;
    let mut g = c.benchmark_group("http");
    g.throughput(Throughput::Elements(1));
    g.bench_function("service_tools_call", |b| {
        b.iter(|| {
            id += 1;
            server.call_echo(&sid, id).len()
        })
    });
    g.finish();
}

fn notify_live_get(c: &mut Criterion) {
    let now = Instant::ZERO;
    let mut cfg = config();
    cfg.session.events_max = 64;
    let mut ep = ServerEndpoint::with_ids(cfg, ServerPolicy::FIXED, IdSource::reproducible(2));
    let sid = open(&mut ep, now);
    ep.handle_request(
        &RequestHead::get(&sid, ProtocolVersion::V2025_11_25, None),
        b"",
        now,
    );
    drain(&mut ep, now);
    let params = RawJson::parse(r#"{"level":"info","data":"tick"}"#).expect("json");
    let mut g = c.benchmark_group("server");
    g.throughput(Throughput::Elements(1));
    g.bench_function("notify_to_live_get", |b| {
        b.iter(|| {
            let s = ep.session_mut(&sid).expect("session");
            let _ = s.notify(
                "notifications/message",
                Some(params.clone()),
                Cause::Unrelated,
                now,
            );
            drain(&mut ep, now)
        })
    });
    g.finish();
}

/// Net heap bytes per idle session (initialized, nothing open), over 10,000 sessions.
fn idle_session_bytes() {
    let now = Instant::ZERO;
    let mut ep = ServerEndpoint::with_ids(config(), ServerPolicy::FIXED, IdSource::reproducible(3));
    open(&mut ep, now);
    let before = LIVE.load(Ordering::Relaxed);
    let n = 10_000;
    for _ in 0..n {
        open(&mut ep, now);
    }
    let after = LIVE.load(Ordering::Relaxed);
    let per = (after - before) as f64 / n as f64;
    let sid = ep.session_ids().next().cloned().expect("one");
    let stack = std::mem::size_of::<mcp_streamable::server::ServerSession>();
    println!(
        "idle_session_heap_bytes: {per:.0} per session over {n} sessions (ServerSession struct {stack} B inline; approx_bytes() {})",
        ep.session(&sid).map(|s| s.approx_bytes()).unwrap_or(0)
    );
}

/// Net heap bytes per idle session of the HTTP shell, over 10,000
/// sessions (`heap_support::http_idle_session_bytes`).
fn http_idle_session_bytes() {
    let n = 10_000;
    let per = heap_support::http_idle_session_bytes(n);
    println!(
        "http_idle_session_heap_bytes: {per:.0} per session over {n} sessions (parked owners)"
    );
    let calls = 1_000;
    let per = heap_support::http_call_allocations(calls);
    println!("http_call_allocations: {per:.1} per tools/call over {calls} calls (in process)");
}

criterion_group!(
    benches,
    post_round_trip,
    driver_tools_call,
    http_service_tools_call,
    notify_live_get
);

fn main() {
    if std::env::args().any(|a| a == "--idle-only") {
        idle_session_bytes();
        http_idle_session_bytes();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    idle_session_bytes();
    http_idle_session_bytes();
}
