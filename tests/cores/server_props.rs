//! Random operations against the server core, judged by the monitor.
//!
//! FIXED must never be caught; each buggy preset must be caught, and the test
//! prints the shrunk operation sequence that shows it.

use crate::common::{pick, runner, Harness, Scheduled};
use mcp_streamable::ids::{HttpId, SessionId};
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::server::{Cause, RequestHead};
use mcp_streamable::version::ProtocolVersion;
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestError};

#[derive(Clone, Debug)]
enum Op {
    Initialized,
    Call,
    Respond(u8),
    Progress(u8),
    Notify,
    Get,
    Resume(u8),
    Drop { pick: u8, notice: bool },
    Notice(u8),
    PollClose(u8),
    ClientNotification,
    Schedule(u8),
    Tick(u16),
    BadRequest(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Initialized),
        3 => Just(Op::Call),
        3 => any::<u8>().prop_map(Op::Respond),
        2 => any::<u8>().prop_map(Op::Progress),
        3 => Just(Op::Notify),
        2 => Just(Op::Get),
        2 => any::<u8>().prop_map(Op::Resume),
        2 => (any::<u8>(), any::<bool>()).prop_map(|(pick, notice)| Op::Drop { pick, notice }),
        1 => any::<u8>().prop_map(Op::Notice),
        1 => any::<u8>().prop_map(Op::PollClose),
        1 => Just(Op::ClientNotification),
        4 => any::<u8>().prop_map(Op::Schedule),
        1 => (0u16..3000).prop_map(Op::Tick),
        1 => any::<u8>().prop_map(Op::BadRequest),
    ]
}

fn apply(h: &mut Harness, op: &Op) {
    match op {
        Op::Initialized => {
            h.initialized();
        }
        Op::Call => {
            h.call();
        }
        Op::Respond(i) => h.respond_pick(*i),
        Op::Progress(i) => {
            if let Some(id) = pick(&h.pending, *i) {
                h.notify("notifications/progress", Cause::Request(id));
            }
        }
        Op::Notify => {
            h.notify("notifications/tools/list_changed", Cause::Unrelated);
        }
        Op::Get => {
            h.get(None);
        }
        Op::Resume(i) => h.resume_pick(*i),
        Op::Drop { pick: i, notice } => h.drop_pick(*i, *notice),
        Op::Notice(i) => {
            let dead: Vec<HttpId> = h
                .log
                .iter()
                .filter(|(_, l)| l.client_closed && !l.server_closed)
                .map(|(k, _)| *k)
                .collect();
            if let Some(http) = pick(&dead, *i) {
                h.server_notices(http);
            }
        }
        Op::PollClose(i) => {
            if let Some(id) = pick(&h.pending, *i) {
                h.close_connection(&id);
            }
        }
        Op::ClientNotification => {
            h.post(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
        }
        Op::Schedule(i) => {
            let points = h
                .session
                .as_ref()
                .and_then(|s| h.ep.session(s))
                .map(|s| s.scheduling_points())
                .unwrap_or_default();
            if let Some((http, p)) = pick(&points, *i) {
                h.schedule(http, p);
            }
        }
        Op::Tick(ms) => h.advance(u64::from(*ms)),
        Op::BadRequest(i) => {
            let ping = br#"{"jsonrpc":"2.0","id":900,"method":"ping"}"#;
            match i % 3 {
                0 => {
                    h.request(
                        &RequestHead::post(None, Some(ProtocolVersion::V2025_11_25)),
                        ping,
                    );
                }
                1 => {
                    let unknown: SessionId = "0123456789abcdef".parse().expect("valid");
                    h.request(
                        &RequestHead::get(&unknown, ProtocolVersion::V2025_11_25, None),
                        b"",
                    );
                }
                _ => {
                    let sid = h.session.clone();
                    let head =
                        RequestHead::post(sid.as_ref(), None).with("accept", "application/json");
                    h.request(&head, ping);
                }
            }
        }
    }
}

/// Runs one case; returns the first violation among `targets` (all when
/// empty) as "ID detail".
fn run(policy: ServerPolicy, ops: &[Op], targets: &[&str]) -> Result<(), String> {
    let mut h = Harness::new(policy);
    h.initialize();
    for op in ops {
        apply(&mut h, op);
    }
    h.finish();
    match h
        .violations()
        .iter()
        .find(|v| targets.is_empty() || targets.contains(&v.id))
    {
        Some(v) => Err(format!("{} {}", v.id, v.detail)),
        None => Ok(()),
    }
}

fn strategy() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..40)
}

#[test]
fn fixed_is_never_caught() {
    let mut r = runner(4096);
    let result = r.run(&strategy(), |ops| {
        run(ServerPolicy::FIXED, &ops, &[]).map_err(TestCaseError::fail)
    });
    if let Err(TestError::Fail(reason, ops)) = &result {
        panic!("FIXED violated {reason}\nshrunk ops: {ops:#?}");
    }
    result.expect("FIXED passes");
}

/// Runs random cases until the preset is caught on one of `expected` (the
/// properties of its race); prints the shrunk case and replays it.
fn assert_caught(name: &str, policy: ServerPolicy, expected: &[&str]) {
    let mut r = runner(4096);
    let result = r.run(&strategy(), |ops| {
        run(policy, &ops, expected).map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => panic!("{name} was not caught in 4096 random cases"),
        Err(TestError::Fail(reason, ops)) => {
            println!(
                "{name}: caught {reason}\nshrunk to {} ops: {ops:?}",
                ops.len()
            );
            let id = reason.message().split(' ').next().unwrap_or("");
            assert!(
                expected.contains(&id),
                "{name}: caught {reason}, expected one of {expected:?}"
            );
            // The shrunk case reproduces deterministically.
            assert_eq!(
                run(policy, &ops, expected).map_err(|e| e
                    .split(' ')
                    .next()
                    .unwrap_or("")
                    .to_owned()),
                Err(id.to_owned())
            );
        }
        Err(e) => panic!("{name}: {e}"),
    }
}

#[test]
fn mcp_go_0_44_is_caught() {
    assert_caught(
        "MCP_GO_0_44",
        ServerPolicy::MCP_GO_0_44,
        &["A1", "A3", "A4", "A5"],
    );
}

#[test]
fn toolhive_4075_is_caught() {
    assert_caught(
        "TOOLHIVE_4075",
        ServerPolicy::TOOLHIVE_4075,
        &["A1", "A3", "A4", "A5"],
    );
}

#[test]
fn rmcp_0_16_is_caught() {
    assert_caught(
        "RMCP_0_16",
        ServerPolicy::RMCP_0_16,
        &["B1", "B2", "B3", "B6", "R32"],
    );
}

#[test]
fn rmcp_3_9_is_caught() {
    assert_caught(
        "RMCP_3_9",
        ServerPolicy::RMCP_3_9,
        &["B2", "B3", "B4", "A5", "R32"],
    );
}

#[test]
fn conformance_sse_retry_is_caught() {
    // The mock ignores Last-Event-ID, so besides C1 (a response on a fresh
    // GET) random runs also see unrelated traffic on a "resumed" POST stream.
    assert_caught(
        "CONFORMANCE_SSE_RETRY",
        ServerPolicy::CONFORMANCE_SSE_RETRY,
        &["C1", "A3", "B3"],
    );
}

#[test]
fn csharp_before_1212_is_caught() {
    // A GET's 200 out before its stream is wired: what comes between is
    // dropped while the client reads the GET.
    assert_caught(
        "CSHARP_BEFORE_1212",
        ServerPolicy::CSHARP_BEFORE_1212,
        &["B4"],
    );
}

#[test]
fn rmcp_0_16_is_caught_on_b1() {
    assert_caught("RMCP_0_16 (B1)", ServerPolicy::RMCP_0_16, &["B1"]);
}

#[test]
fn rmcp_3_9_is_caught_on_shadow_starvation() {
    assert_caught("RMCP_3_9 (shadow)", ServerPolicy::RMCP_3_9, &["B4", "A5"]);
}

#[test]
fn conformance_sse_retry_is_caught_on_c1() {
    assert_caught(
        "CONFORMANCE_SSE_RETRY (C1)",
        ServerPolicy::CONFORMANCE_SSE_RETRY,
        &["C1"],
    );
}

#[test]
fn mcp_go_0_44_is_caught_on_the_202() {
    assert_caught("MCP_GO_0_44 (A1)", ServerPolicy::MCP_GO_0_44, &["A1"]);
}
