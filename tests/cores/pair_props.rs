//! Random operations, delivery orders and faults over `Pair`.
//!
//! FIXED x FIXED: the monitor finds nothing, no request hangs (each one
//! ends in a response or a typed failure after the liveness phase) and no
//! stream is left open with every request it carried over (L4). Each buggy
//! client preset is caught against the server that exposes it, with the shrunk
//! case printed.

use crate::common::{pick, runner};

use mcp_streamable::client::ClientEvent;
use mcp_streamable::ids::{HttpId, RequestId};
use mcp_streamable::policy::{ClientPolicy, ServerPolicy};
use mcp_streamable::server::Cause;
use mcp_streamable_check::monitor::Monitor;
use mcp_streamable_check::sim::{Pair, PairConfig};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestError};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Coverage of the FIXED x FIXED run, so its verdict is not vacuous.
static CASES: AtomicUsize = AtomicUsize::new(0);
static WITH_RESPONSE: AtomicUsize = AtomicUsize::new(0);
static WITH_RESUME: AtomicUsize = AtomicUsize::new(0);
static WITH_DROP: AtomicUsize = AtomicUsize::new(0);
static WITH_NOTIFICATION: AtomicUsize = AtomicUsize::new(0);

#[derive(Clone, Debug)]
enum Op {
    Call,
    Respond(u8),
    Progress(u8),
    Notify,
    AskClient(u8),
    PollClose(u8),
    DeliverRequest(u8),
    DeliverNext(u8),
    Drop { pick: u8, notice: bool },
    Notice(u8),
    Advance(u16),
    Cancel(u8),
    ClientStep,
    ServerStep(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Call),
        3 => any::<u8>().prop_map(Op::Respond),
        2 => any::<u8>().prop_map(Op::Progress),
        2 => Just(Op::Notify),
        1 => any::<u8>().prop_map(Op::AskClient),
        2 => any::<u8>().prop_map(Op::PollClose),
        6 => any::<u8>().prop_map(Op::DeliverRequest),
        10 => any::<u8>().prop_map(Op::DeliverNext),
        1 => (any::<u8>(), any::<bool>()).prop_map(|(pick, notice)| Op::Drop { pick, notice }),
        1 => any::<u8>().prop_map(Op::Notice),
        2 => (0u16..2500).prop_map(Op::Advance),
        1 => any::<u8>().prop_map(Op::Cancel),
        1 => Just(Op::ClientStep),
        2 => any::<u8>().prop_map(Op::ServerStep),
    ]
}

struct Run {
    p: Pair,
    sent: Vec<RequestId>,
    dropped: bool,
}

impl Run {
    fn new(server: ServerPolicy, client: ClientPolicy, ready: bool) -> Self {
        let mut config = PairConfig {
            server_policy: server,
            client_policy: client,
            server_auto_respond: false,
            ..PairConfig::default()
        };
        config.server.session.retry_ms = 300;
        config.client.request_timeout_ms = 20_000;
        let mut p = Pair::with(config);
        p.monitor = Monitor::with_gets_max(12);
        p.initialize();
        if ready {
            // Half the cases start from a live session, so every op bites.
            p.drive();
            for h in p.client_scheduling_points() {
                p.fire_client(h);
            }
            p.server_respond_all();
            p.drive();
        }
        Run {
            p,
            sent: Vec::new(),
            dropped: false,
        }
    }

    fn server_ids(&self) -> Vec<RequestId> {
        self.p
            .server_pending
            .iter()
            .map(|(_, id, _, _)| id.clone())
            .collect()
    }

    fn apply(&mut self, op: &Op) {
        let p = &mut self.p;
        match op {
            Op::Call => {
                if p.client().is_ready() {
                    self.sent.push(p.call("t"));
                }
            }
            Op::Respond(i) => {
                if let Some(id) = pick(&self.server_ids(), *i) {
                    self.p.server_respond(&id);
                }
            }
            Op::Progress(i) => {
                if let Some(id) = pick(&self.server_ids(), *i) {
                    self.p
                        .server_notify("notifications/progress", Cause::Request(id));
                }
            }
            Op::Notify => {
                p.server_notify("notifications/tools/list_changed", Cause::Unrelated);
            }
            Op::AskClient(i) => {
                let cause = match pick(&self.server_ids(), *i) {
                    Some(id) if i % 2 == 0 => Cause::Request(id),
                    _ => Cause::Unrelated,
                };
                self.p.server_request("roots/list", cause);
            }
            Op::PollClose(i) => {
                if let Some(id) = pick(&self.server_ids(), *i) {
                    self.p.server_close_connection(&id);
                }
            }
            Op::DeliverRequest(i) => {
                let ds: Vec<HttpId> = p
                    .deliverable()
                    .into_iter()
                    .filter(|d| d.1)
                    .map(|d| d.0)
                    .collect();
                if let Some(ch) = pick(&ds, *i) {
                    p.deliver_request(ch);
                }
            }
            Op::DeliverNext(i) => {
                let ds: Vec<HttpId> = p
                    .deliverable()
                    .into_iter()
                    .filter(|d| !d.1)
                    .map(|d| d.0)
                    .collect();
                if let Some(ch) = pick(&ds, *i) {
                    p.deliver_next(ch);
                }
            }
            Op::Drop { pick: i, notice } => {
                let live: Vec<HttpId> = p
                    .links
                    .iter()
                    .filter(|(_, l)| !l.client_gone && l.server_http.is_some())
                    .map(|(h, _)| *h)
                    .collect();
                if let Some(ch) = pick(&live, *i) {
                    p.drop_link(ch, *notice);
                    self.dropped = true;
                }
            }
            Op::Notice(i) => {
                let dead: Vec<HttpId> = p
                    .links
                    .iter()
                    .filter(|(_, l)| l.client_gone && !l.server_told)
                    .map(|(h, _)| *h)
                    .collect();
                if let Some(ch) = pick(&dead, *i) {
                    p.server_notices(ch);
                }
            }
            Op::Advance(ms) => p.advance(u64::from(*ms)),
            Op::Cancel(i) => {
                let pending: Vec<RequestId> = p.client().pending().collect();
                if let Some(id) = pick(&pending, *i) {
                    let now = p.now;
                    let _ = p.client_mut().cancel(&id, now);
                    p.pump();
                }
            }
            Op::ClientStep => {
                for h in p.client_scheduling_points() {
                    p.fire_client(h);
                }
            }
            Op::ServerStep(i) => {
                if let Some((h, pt)) = pick(&p.server_scheduling_points(), *i) {
                    p.fire_server(h, pt);
                }
            }
        }
    }

    /// Faults off, everything delivered, the server answers everything,
    /// time runs until every deadline has passed.
    fn liveness(&mut self) {
        let p = &mut self.p;
        let dead: Vec<HttpId> = p
            .links
            .iter()
            .filter(|(_, l)| l.client_gone)
            .map(|(h, _)| *h)
            .collect();
        for ch in dead {
            p.server_notices(ch);
        }
        for h in p.client_scheduling_points() {
            p.fire_client(h);
        }
        for _ in 0..20 {
            p.drive();
            for (h, pt) in p.server_scheduling_points() {
                p.fire_server(h, pt);
            }
            p.server_respond_all();
            p.run(5_000);
        }
        p.run(60_000);
        p.finish();
    }

    fn count_coverage(&self) {
        let p = &self.p;
        CASES.fetch_add(1, Ordering::Relaxed);
        let responded = p
            .client_events
            .iter()
            .any(|e| matches!(e, ClientEvent::Response { .. }));
        let resumed = p
            .links
            .values()
            .any(|l| l.resume && l.server_http.is_some());
        let notified = p
            .client_events
            .iter()
            .any(|e| matches!(e, ClientEvent::Notification { .. }));
        if responded {
            WITH_RESPONSE.fetch_add(1, Ordering::Relaxed);
        }
        if resumed {
            WITH_RESUME.fetch_add(1, Ordering::Relaxed);
        }
        if notified {
            WITH_NOTIFICATION.fetch_add(1, Ordering::Relaxed);
        }
        if self.dropped {
            WITH_DROP.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The first violation among `targets` ("HANG": a request without outcome).
    fn verdict(&self, targets: &[&str]) -> Result<(), String> {
        for v in self.p.monitor.violations() {
            if targets.is_empty() || targets.contains(&v.id) {
                return Err(format!("{} {}", v.id, v.detail));
            }
        }
        if targets.is_empty() || targets.contains(&"HANG") {
            for id in &self.sent {
                if self.p.result_of(id).is_none() {
                    return Err(format!("HANG {id} never got a response or a failure"));
                }
            }
        }
        if targets.is_empty() || targets.contains(&"L4") {
            let held = self.p.monitor.held_open();
            if !held.is_empty() {
                return Err(format!(
                    "L4 {held:?} open at both ends with every request they carried over"
                ));
            }
        }
        Ok(())
    }
}

type Case = (bool, Vec<Op>);

fn run(
    server: ServerPolicy,
    client: ClientPolicy,
    case: &Case,
    targets: &[&str],
) -> Result<(), String> {
    let (ready, ops) = case;
    let mut r = Run::new(server, client, *ready);
    for op in ops {
        r.apply(op);
    }
    r.liveness();
    if server == ServerPolicy::FIXED && client == ClientPolicy::FIXED {
        r.count_coverage();
    }
    r.verdict(targets)
}

fn strategy() -> impl Strategy<Value = (bool, Vec<Op>)> {
    (any::<bool>(), prop::collection::vec(op(), 1..60))
}

#[test]
fn fixed_x_fixed_is_never_caught_and_never_hangs() {
    let result = runner(1024).run(&strategy(), |ops| {
        run(ServerPolicy::FIXED, ClientPolicy::FIXED, &ops, &[]).map_err(TestCaseError::fail)
    });
    if let Err(TestError::Fail(reason, ops)) = &result {
        panic!("FIXED x FIXED: {reason}\nshrunk ops: {ops:#?}");
    }
    result.expect("FIXED x FIXED passes");
    // Not vacuous: a fair share of the cases exercised what the race needs.
    let cases = CASES.load(Ordering::Relaxed);
    let pct = |n: &AtomicUsize| n.load(Ordering::Relaxed) * 100 / cases.max(1);
    println!(
        "FIXED x FIXED coverage over {cases} cases: responses {}%, resumptions {}%, drops {}%, notifications {}%",
        pct(&WITH_RESPONSE),
        pct(&WITH_RESUME),
        pct(&WITH_DROP),
        pct(&WITH_NOTIFICATION)
    );
    assert!(pct(&WITH_RESPONSE) >= 25, "too few cases got a response");
    assert!(pct(&WITH_RESUME) >= 15, "too few cases resumed a stream");
    assert!(pct(&WITH_DROP) >= 20, "too few cases dropped a connection");
    assert!(
        pct(&WITH_NOTIFICATION) >= 20,
        "too few cases delivered a notification"
    );
}

fn assert_caught(name: &str, server: ServerPolicy, client: ClientPolicy, targets: &[&str]) {
    let result = runner(4096).run(&strategy(), |ops| {
        run(server, client, &ops, targets).map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => panic!("{name} was not caught in 4096 random cases"),
        Err(TestError::Fail(reason, ops)) => {
            println!(
                "{name}: caught {reason}\nshrunk to {} ops (ready start: {}): {:?}",
                ops.1.len(),
                ops.0,
                ops.1
            );
            let id = reason.message().split(' ').next().unwrap_or("").to_owned();
            assert!(targets.contains(&id.as_str()), "{name}: {reason}");
            let again = run(server, client, &ops, targets)
                .map_err(|e| e.split(' ').next().unwrap_or("").to_owned());
            assert_eq!(again, Err(id), "the shrunk case replays");
        }
        Err(e) => panic!("{name}: {e}"),
    }
}

#[test]
fn csharp_baseline_is_caught_against_the_conformance_mock() {
    assert_caught(
        "CSHARP_BASELINE x CONFORMANCE_SSE_RETRY",
        ServerPolicy::CONFORMANCE_SSE_RETRY,
        ClientPolicy::CSHARP_BASELINE,
        &["C2", "HANG"],
    );
}

#[test]
fn csharp_pr1381_is_caught() {
    assert_caught(
        "CSHARP_PR1381 x CONFORMANCE_SSE_RETRY",
        ServerPolicy::CONFORMANCE_SSE_RETRY,
        ClientPolicy::CSHARP_PR1381,
        &["C3", "C5"],
    );
}

#[test]
fn eventsource_reconnect_is_caught_against_rmcp_0_16() {
    assert_caught(
        "EVENTSOURCE_RECONNECT x RMCP_0_16",
        ServerPolicy::RMCP_0_16,
        ClientPolicy::EVENTSOURCE_RECONNECT,
        &["B1", "B5"],
    );
}

/// The TypeScript SDK on both sides: a request the client gives up (its
/// caller cancels it, or its deadline passes) keeps its POST, which the
/// server never ends (L4), while the client reads it on (C3).
#[test]
fn ts_sdk_1_32_on_both_sides_is_caught_holding_a_given_up_stream() {
    assert_caught(
        "TS_SDK_1_32 x TS_SDK_1_32",
        ServerPolicy::TS_SDK_1_32,
        ClientPolicy::TS_SDK_1_32,
        &["L4", "C3"],
    );
}

#[test]
fn fixed_client_is_not_caught_by_client_properties_against_buggy_servers() {
    for server in [ServerPolicy::CONFORMANCE_SSE_RETRY, ServerPolicy::RMCP_0_16] {
        let result = runner(256).run(&strategy(), |ops| {
            run(
                server,
                ClientPolicy::FIXED,
                &ops,
                &["C2", "C3", "C4", "C5", "HANG"],
            )
            .map_err(TestCaseError::fail)
        });
        if let Err(TestError::Fail(reason, ops)) = &result {
            panic!("FIXED client vs {server:?}: {reason}\nshrunk ops: {ops:#?}");
        }
    }
}
