//! The three races reproduced end to end with `Pair`: each buggy pairing is
//! caught by the monitor with the right invariant id; FIXED x FIXED is clean
//! under the same schedule.

use mcp_streamable::client::{ClientEvent, Purpose};
use mcp_streamable::ids::{HttpId, RequestId};
use mcp_streamable::policy::{ClientPolicy, ServerPolicy};
use mcp_streamable::preset::SchedulingPoint;
use mcp_streamable::server::Cause;
use mcp_streamable_check::monitor::Monitor;
use mcp_streamable_check::sim::{Pair, PairConfig};
use std::collections::BTreeSet;

fn ids(p: &Pair) -> BTreeSet<&'static str> {
    p.monitor.violations().iter().map(|v| v.id).collect()
}

fn pair(server: ServerPolicy, client: ClientPolicy) -> Pair {
    let mut config = PairConfig {
        server_policy: server,
        client_policy: client,
        server_auto_respond: false,
        ..PairConfig::default()
    };
    config.server.session.retry_ms = 500;
    Pair::with(config)
}

/// Delivers everything in flight except what `hold` holds back.
fn drive_holding(p: &mut Pair, hold: impl Fn(&Pair, HttpId) -> bool) {
    for _ in 0..10_000 {
        let next = p.deliverable().into_iter().find(|(ch, _)| !hold(p, *ch));
        let Some((ch, is_request)) = next else { return };
        if is_request {
            p.deliver_request(ch);
        } else {
            p.deliver_next(ch);
        }
    }
}

/// Holds back the background GET's request (its response flows once delivered).
fn hold_background(p: &Pair, ch: HttpId) -> bool {
    p.client().purpose(ch) == Some(Purpose::Background)
        && p.links.get(&ch).is_some_and(|l| l.request.is_some())
}

fn drive_except(p: &mut Pair, _held: Option<HttpId>) {
    drive_holding(p, |_, _| false);
}

fn background(p: &Pair) -> Option<HttpId> {
    p.client()
        .exchanges()
        .find(|h| p.client().purpose(*h) == Some(Purpose::Background))
}

/// Race C (csharp-sdk #1381): the background GET is delayed until after the
/// tool call's POST stream was primed and closed for polling; the server
/// answers and the response reaches whichever stream it chooses.
fn race_c(server: ServerPolicy, client: ClientPolicy) -> (Pair, RequestId) {
    let mut p = pair(server, client);
    p.initialize();
    drive_holding(&mut p, hold_background);
    let init = p.server_pending[0].1.clone();
    p.server_respond(&init);
    drive_holding(&mut p, hold_background);
    for h in p.client_scheduling_points() {
        p.fire_client(h); // PR #1381: the foreground commits before the caller moves on here
    }
    drive_holding(&mut p, hold_background);
    // The session is committed; GET#1 is in flight but held back.
    let bg = background(&p).expect("background GET");
    let id = p.call("test_reconnection");
    drive_holding(&mut p, hold_background);
    let server_id = p.server_pending[0].1.clone();
    p.server_close_connection(&server_id); // priming went out; the POST connection closes
    drive_holding(&mut p, hold_background);
    p.server_respond(&server_id);
    drive_holding(&mut p, hold_background);
    // Now the late GET#1 reaches the server.
    p.deliver_request(bg);
    p.run(30_000);
    p.finish();
    (p, id)
}

#[test]
fn race_c_csharp_baseline_hangs_against_the_conformance_mock() {
    let (p, id) = race_c(
        ServerPolicy::CONFORMANCE_SSE_RETRY,
        ClientPolicy::CSHARP_BASELINE,
    );
    assert!(p.result_of(&id).is_none(), "the caller never returns");
    let v = ids(&p);
    assert!(
        v.contains("C1"),
        "server side: response on a fresh GET {v:?}"
    );
    assert!(
        v.contains("C2"),
        "client side: completed but never returned {v:?}"
    );
}

#[test]
fn race_c_pr1381_returns_but_leaves_the_foreground_polling() {
    let (p, id) = race_c(
        ServerPolicy::CONFORMANCE_SSE_RETRY,
        ClientPolicy::CSHARP_PR1381,
    );
    assert!(matches!(
        p.result_of(&id),
        Some(ClientEvent::Response { .. })
    ));
    let v = ids(&p);
    assert!(v.contains("C3"), "{v:?}");
    assert!(!v.contains("C2"), "{v:?}");
}

#[test]
fn race_c_fixed_client_completes_once_and_stops_against_the_mock() {
    let (p, id) = race_c(ServerPolicy::CONFORMANCE_SSE_RETRY, ClientPolicy::FIXED);
    assert!(matches!(
        p.result_of(&id),
        Some(ClientEvent::Response { .. })
    ));
    let v = ids(&p);
    assert_eq!(
        v,
        BTreeSet::from(["C1"]),
        "only the mock's own violation remains"
    );
}

/// Race C's schedule gets its response and breaks nothing.
fn assert_race_c_clean(server: ServerPolicy, client: ClientPolicy) {
    let (p, id) = race_c(server, client);
    assert!(matches!(
        p.result_of(&id),
        Some(ClientEvent::Response { .. })
    ));
    assert!(
        p.monitor.violations().is_empty(),
        "{:#?}",
        p.monitor.violations()
    );
}

#[test]
fn race_c_fixed_x_fixed_is_clean() {
    assert_race_c_clean(ServerPolicy::FIXED, ClientPolicy::FIXED);
}

#[test]
fn race_c_baseline_client_is_fine_with_the_fixed_server() {
    assert_race_c_clean(ServerPolicy::FIXED, ClientPolicy::CSHARP_BASELINE);
}

#[test]
fn c5_pr1381_sends_before_the_session_is_committed() {
    let mut p = pair(ServerPolicy::FIXED, ClientPolicy::CSHARP_PR1381);
    p.initialize();
    drive_except(&mut p, None);
    let init = p.server_pending[0].1.clone();
    p.server_respond(&init);
    // Deliver the initialize response; the caller hears of it before the foreground commits.
    drive_except(&mut p, None);
    assert!(p
        .client_events
        .iter()
        .any(|e| matches!(e, ClientEvent::Initialized { .. })));
    let staged = p.client_scheduling_points();
    assert_eq!(staged.len(), 1, "the commit is still staged");
    let id = p.call("too_early");
    drive_except(&mut p, None);
    assert!(
        matches!(p.result_of(&id), Some(ClientEvent::Failed { .. })),
        "400 without a session id"
    );
    assert!(ids(&p).contains("C5"), "{:?}", p.monitor.violations());
    // FIXED commits on parse: the same schedule is clean.
    let mut f = pair(ServerPolicy::FIXED, ClientPolicy::FIXED);
    f.initialize();
    drive_except(&mut f, None);
    let init = f.server_pending[0].1.clone();
    f.server_respond(&init);
    drive_except(&mut f, None);
    let id = f.call("in_time");
    drive_except(&mut f, None);
    let sid = f.server_pending.last().unwrap().1.clone();
    f.server_respond(&sid);
    drive_except(&mut f, None);
    assert!(matches!(
        f.result_of(&id),
        Some(ClientEvent::Response { .. })
    ));
    f.finish();
    assert!(
        f.monitor.violations().is_empty(),
        "{:#?}",
        f.monitor.violations()
    );
}

/// Race B (rmcp #660): an EventSource-style client reconnects the finished
/// initialize stream with its priming id, which rmcp 0.16 reads as the common
/// stream; each GET replaces the other.
fn race_b(server: ServerPolicy, client: ClientPolicy) -> Pair {
    let mut config = PairConfig {
        server_policy: server,
        client_policy: client,
        ..PairConfig::default()
    };
    config.client.reader_reconnects_max = 20;
    let mut p = Pair::with(config);
    p.monitor = Monitor::with_gets_max(6);
    p.initialize();
    p.run(20_000);
    p.finish();
    p
}

#[test]
fn race_b_rmcp_0_16_with_eventsource_readers_leapfrogs() {
    let p = race_b(ServerPolicy::RMCP_0_16, ClientPolicy::EVENTSOURCE_RECONNECT);
    let v = ids(&p);
    assert!(v.contains("B1"), "{v:?}");
    assert!(v.contains("B5"), "an endless reconnect loop: {v:?}");
}

#[test]
fn race_b_fixed_server_stops_the_eventsource_reader() {
    let p = race_b(ServerPolicy::FIXED, ClientPolicy::EVENTSOURCE_RECONNECT);
    assert!(
        p.monitor.violations().is_empty(),
        "{:#?}",
        p.monitor.violations()
    );
    let gets = p.links.values().filter(|l| l.server_http.is_some()).count();
    assert!(gets <= 4, "bounded: {gets} exchanges");
}

#[test]
fn race_b_fixed_x_fixed_is_clean() {
    let p = race_b(ServerPolicy::FIXED, ClientPolicy::FIXED);
    assert!(
        p.monitor.violations().is_empty(),
        "{:#?}",
        p.monitor.violations()
    );
}

/// Race A (toolhive #4075): the registration hook's notification waits in
/// mcp-go's session queue; the `initialized` POST's listener wakes after 202.
fn race_a(server: ServerPolicy) -> Pair {
    let mut p = pair(server, ClientPolicy::FIXED);
    p.initialize();
    drive_except(&mut p, None);
    let init = p.server_pending[0].1.clone();
    p.server_respond(&init);
    p.server_notify("notifications/resources/list_changed", Cause::Unrelated); // the hook
    drive_holding(&mut p, hold_background); // initialized POST delivered; GET held
    for _ in 0..8 {
        let points = p.server_scheduling_points();
        let step = points
            .iter()
            .find(|(_, pt)| *pt == SchedulingPoint::HandlerStep)
            .copied();
        let wake = points
            .iter()
            .rev()
            .find(|(_, pt)| *pt == SchedulingPoint::ListenerWake)
            .copied();
        // One order the Go scheduler may pick: handler writes 202, the listener wakes, the handler returns.
        if let Some((h, pt)) = step {
            p.fire_server(h, pt);
        }
        if let Some((h, pt)) = wake {
            p.fire_server(h, pt);
        }
        drive_holding(&mut p, hold_background);
    }
    p.run(5_000);
    p.finish();
    p
}

#[test]
fn race_a_mcp_go_0_44_corrupts_the_initialized_202() {
    let p = race_a(ServerPolicy::MCP_GO_0_44);
    assert!(ids(&p).contains("A1"), "{:?}", p.monitor.violations());
}

#[test]
fn race_a_fixed_is_clean() {
    let p = race_a(ServerPolicy::FIXED);
    assert!(
        p.monitor.violations().is_empty(),
        "{:#?}",
        p.monitor.violations()
    );
    assert!(p
        .client_events
        .iter()
        .any(|e| matches!(e, ClientEvent::Notification { method, .. } if method == "notifications/resources/list_changed")));
}
