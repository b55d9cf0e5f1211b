//! The client embedding users copy, run as they would run it:
//! `examples/blocking_client.rs` (the client core on `std::net`, a thread
//! per exchange) against `serve` in each era, against `examples/blocking.rs`
//! (both cores without an async runtime), through a stream cut before its
//! answer (resumed with `Last-Event-ID`, as the core decides), and against a
//! server whose head has no end.

// A hang guard reads the wall clock (the cores never do).
#![allow(clippy::disallowed_methods)]

mod raw_http;
mod spawned;

use spawned::Spawned;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs the client example with `args`; its exit code and what it printed.
/// A hang is a failure, not a stuck test run.
fn client(args: &[&str]) -> (Option<i32>, String) {
    let mut child = spawned::example("blocking_client")
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the client example did not end: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn serve() -> Spawned {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-streamable"));
    command.args(["serve", "--addr", "127.0.0.1:0"]);
    Spawned::start(command)
}

#[test]
fn the_blocking_client_calls_a_tool_in_every_era() {
    let server = serve();
    for (era, version) in [
        ("v2025", "2025-11-25, session"),
        ("v2026", "2026-07-28, no session"),
        ("auto", "2026-07-28, no session"),
    ] {
        let (code, out) = client(&[
            "--url",
            &server.url,
            "--era",
            era,
            "--args",
            r#"{"text":"over std::net"}"#,
        ]);
        assert_eq!(code, Some(0), "{era}: {out}");
        assert!(
            out.contains(&format!("initialized: {version}")),
            "{era}: {out}"
        );
        assert!(out.contains(r#""text":"over std::net""#), "{era}: {out}");
    }
    let (code, out) = client(&["--url", &server.url, "--tool", "nope"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("error: -32602"), "{out}");
}

#[test]
fn both_cores_talk_without_an_async_runtime() {
    let mut command = spawned::example("blocking");
    command.args(["--addr", "127.0.0.1:0"]);
    let server = Spawned::start(command);
    for era in ["v2025", "auto"] {
        let (code, out) = client(&["--url", &server.url, "--era", era]);
        assert_eq!(code, Some(0), "{era}: {out}");
        assert!(out.contains("hello from std::net"), "{era}: {out}");
    }
}

/// One SSE event as a chunk of a chunked body.
fn chunk(event: &str) -> String {
    format!("{:x}\r\n{event}\r\n", event.len())
}

#[test]
fn a_stream_cut_before_its_answer_is_resumed_where_it_broke() {
    let call_id = Arc::new(Mutex::new(serde_json::Value::Null));
    let resumed_from = Arc::new(Mutex::new(Vec::new()));
    let (id, seen) = (call_id.clone(), resumed_from.clone());
    let addr = raw_http::serve(move |r| {
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
        let sse_head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: s1\r\n\
                        Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
        if r.line.starts_with("GET") {
            let from = r.head.lines().find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("last-event-id:")
                    .map(|v| v.trim().to_owned())
            });
            let Some(from) = from else {
                // No standalone stream here.
                return raw_http::head("405 Method Not Allowed", "application/json", 0)
                    .into_bytes();
            };
            seen.lock().unwrap().push(from);
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": *id.lock().unwrap(),
                "result": {"content": [{"type": "text", "text": "resumed"}]}});
            return format!(
                "{sse_head}{}0\r\n\r\n",
                chunk(&format!("id: e2\ndata: {answer}\n\n"))
            )
            .into_bytes();
        }
        if r.line.starts_with("DELETE") {
            return raw_http::head("200 OK", "application/json", 0).into_bytes();
        }
        match body["method"].as_str() {
            Some("initialize") => {
                let result = serde_json::json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "cutter", "version": "0"}}})
                .to_string();
                format!(
                    "{}{result}",
                    raw_http::head("200 OK", "application/json", result.len())
                )
                .into_bytes()
            }
            Some("tools/call") => {
                *id.lock().unwrap() = body["id"].clone();
                // The priming event, then the connection ends mid-body.
                format!("{sse_head}{}", chunk("id: e1\nretry: 10\ndata: \n\n")).into_bytes()
            }
            _ => raw_http::head("202 Accepted", "application/json", 0).into_bytes(),
        }
    });
    let url = format!("http://{addr}/mcp");
    let (code, out) = client(&["--url", &url]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(r#""text":"resumed""#), "{out}");
    assert_eq!(*resumed_from.lock().unwrap(), ["e1"], "{out}");
}

/// A server that sends a header line without end and then holds the
/// connection open: the client stops reading at its head bound and the
/// exchange ends as a broken one (its `initialize` fails at once), instead of
/// reading until the core's request timeout (60 s, past this test's guard).
#[test]
fn a_response_head_without_end_is_read_no_further_than_its_bound() {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut s in listener.incoming().flatten() {
            let mut endless = b"HTTP/1.1 200 OK\r\nX-Endless: ".to_vec();
            endless.resize(1 << 20, b'a');
            let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
            let _ = s.write_all(&endless);
            held.push(s);
        }
    });
    let url = format!("http://{addr}/mcp");
    let (code, out) = client(&["--url", &url]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("stream ended without a response"), "{out}");
}
