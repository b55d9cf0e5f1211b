//! The fleet's relay, explored exhaustively: a client resuming on one
//! instance while another writes, and notifications written on several
//! instances for a stream held on another. FIXED (`Relay::Ordered`) holds;
//! each naive design is caught, with its shortest counterexample.

use mcp_streamable::fleet::{Conn, Relay};
use mcp_streamable_check::engine::{explore, Explorable, Limits};
use mcp_streamable_check::fleet::RelayAction;
use mcp_streamable_check::fleet::{RelayModel, RelayScenario, RelayViolation};
use mcp_streamable_check::Outcome;

fn run(sc: RelayScenario) -> Outcome<RelayAction, RelayViolation> {
    explore(&RelayModel::new(sc), Limits::new(2), |_| {})
}

fn holds(sc: RelayScenario, states_min: usize) -> usize {
    let o = run(sc.clone());
    assert!(o.exhaustive(), "{sc:?}: stopped at {:?}", o.limit);
    if let Some(cx) = &o.counterexample {
        panic!("{sc:?}: {:?} after {:#?}", cx.violation, cx.steps);
    }
    assert!(o.states >= states_min, "{sc:?}: only {} states", o.states);
    o.states
}

fn caught(sc: RelayScenario, id: &str) -> usize {
    let o = run(sc.clone());
    let cx = o
        .counterexample
        .unwrap_or_else(|| panic!("{sc:?}: not caught in {} states", o.states));
    assert_eq!(cx.violation.id(), id, "{sc:?}: {:?}", cx.violation);
    cx.steps.len()
}

#[test]
fn ordered_relay_holds_when_a_client_resumes_on_another_instance_while_the_first_writes() {
    for (stored, cursor, messages, min) in [
        (1, 1, 2, 500),
        (2, 1, 2, 500),
        (1, 0, 3, 1_500),
        (0, 0, 4, 4_000),
    ] {
        let n = holds(
            RelayScenario::resume_while_writing(Relay::Ordered, stored, cursor, messages),
            min,
        );
        eprintln!("resume, {stored} stored, cursor {cursor}, {messages} more: {n} states");
    }
}

#[test]
fn ordered_relay_holds_for_notifications_written_on_two_instances() {
    let n = holds(
        RelayScenario::notifications_from(Relay::Ordered, vec![2, 1], 1, 1),
        2_000,
    );
    eprintln!("two writers: {n} states");
    let n = holds(
        RelayScenario::notifications_from(Relay::Ordered, vec![1, 1, 1], 0, 0),
        5_000,
    );
    eprintln!("three writers: {n} states");
    // One entry may wait ahead of the cursor: a second one drops what waits
    // and reads the store again.
    let mut sc = RelayScenario::notifications_from(Relay::Ordered, vec![1, 1, 1], 0, 0);
    sc.pending_max = 1;
    let n = holds(sc, 5_000);
    eprintln!("three writers, pending_max 1: {n} states");
}

#[test]
fn replay_then_subscribe_is_caught_sending_twice_and_losing_what_is_appended_in_between() {
    let sc = RelayScenario::resume_while_writing(Relay::ReplayThenSubscribe, 1, 1, 1);
    // The shortest violation is the duplicate: the read already had the
    // entry whose publication the new subscription then gets.
    let steps = caught(sc.clone(), "F2");
    assert!(steps <= 12, "{steps} steps");
    // The gap, on a schedule of its own: the read runs, the writer appends
    // and publishes, and only then does the subscription take effect.
    let model = RelayModel::new(sc);
    let (r, w) = (1, 0);
    let schedule = [
        RelayAction::Resume,
        RelayAction::Execute {
            instance: r,
            conn: Conn::Command,
        }, // the read: nothing new
        RelayAction::Write { w: 0 },
        RelayAction::Execute {
            instance: w,
            conn: Conn::Command,
        }, // append 2
        RelayAction::Receive {
            instance: w,
            conn: Conn::Command,
        },
        RelayAction::Execute {
            instance: w,
            conn: Conn::Command,
        }, // publish 2: nobody
        RelayAction::Receive {
            instance: r,
            conn: Conn::Command,
        }, // the read's reply: subscribe
        RelayAction::Execute {
            instance: r,
            conn: Conn::Subscriber,
        },
        RelayAction::Receive {
            instance: r,
            conn: Conn::Subscriber,
        },
        RelayAction::Write { w: 0 }, // the end
        RelayAction::Execute {
            instance: w,
            conn: Conn::Command,
        },
        RelayAction::Receive {
            instance: w,
            conn: Conn::Command,
        },
        RelayAction::Execute {
            instance: w,
            conn: Conn::Command,
        }, // publish 3: the reader has it
        RelayAction::Receive {
            instance: r,
            conn: Conn::Subscriber,
        },
    ];
    let mut s = model.initial();
    for (i, a) in schedule.iter().enumerate() {
        assert_eq!(model.violation(&s), None, "before step {i}");
        s = model
            .step(&s, a)
            .unwrap_or_else(|| panic!("step {i} {a:?} not enabled"));
    }
    assert_eq!(s.got(), [3], "the end came, entry 2 never did");
    assert_eq!(
        model.violation(&s),
        Some(RelayViolation::Lost { missing: vec![2] })
    );
    // The same schedule under FIXED reads entry 2 after its subscription.
}

#[test]
fn subscribe_then_replay_sends_a_stored_then_published_entry_twice() {
    let sc = RelayScenario::resume_while_writing(Relay::SubscribeThenReplay, 1, 1, 1);
    let o = run(sc);
    let cx = o.counterexample.expect("caught");
    assert!(
        matches!(
            cx.violation,
            RelayViolation::Twice { .. } | RelayViolation::OutOfOrder { .. }
        ),
        "{:?}",
        cx.violation
    );
}

#[test]
fn concurrent_deduplicated_relay_loses_the_end_published_before_its_subscription() {
    let sc = RelayScenario::resume_while_writing(Relay::ConcurrentDeduplicated, 1, 1, 0);
    caught(sc, "F1");
}

#[test]
fn a_follower_without_hole_filling_is_needed_only_for_the_last_entry() {
    // The concurrent design's flaw shows in a stream that ends; with two
    // writers and no end, a later publication fills nothing either: caught.
    let sc = RelayScenario::notifications_from(Relay::ConcurrentDeduplicated, vec![1, 1], 0, 0);
    caught(sc, "F1");
}

// ---- sessions in the store (F4) ----

use mcp_streamable::fleet::SessionRefresh;
use mcp_streamable_check::fleet::{SessionsAction, SessionsModel, SessionsScenario};

fn run_sessions(
    sc: SessionsScenario,
) -> Outcome<SessionsAction, mcp_streamable_check::fleet::SessionsViolation> {
    explore(&SessionsModel::new(sc), Limits::new(2), |_| {})
}

#[test]
fn an_atomic_refresh_keeps_a_deleted_or_expired_session_ended_on_every_instance() {
    let both = |requests| SessionsScenario {
        expiry: true,
        ..SessionsScenario::delete_elsewhere(SessionRefresh::Atomic, requests)
    };
    for (sc, min) in [
        (
            SessionsScenario::delete_elsewhere(SessionRefresh::Atomic, 4),
            4_000,
        ),
        (SessionsScenario::expiry(SessionRefresh::Atomic, 4), 2_000),
        (both(3), 2_000),
        (both(5), 50_000),
    ] {
        let o = run_sessions(sc.clone());
        assert!(o.exhaustive(), "{sc:?}");
        assert!(o.counterexample.is_none(), "{sc:?}: {:?}", o.counterexample);
        assert!(o.states >= min, "{sc:?}: only {} states", o.states);
        eprintln!("{sc:?}: {} states", o.states);
    }
}

#[test]
fn load_then_store_resurrects_a_session_deleted_or_expired_between_the_two() {
    for sc in [
        SessionsScenario::delete_elsewhere(SessionRefresh::LoadThenStore, 2),
        SessionsScenario::expiry(SessionRefresh::LoadThenStore, 2),
    ] {
        let o = run_sessions(sc.clone());
        let cx = o
            .counterexample
            .unwrap_or_else(|| panic!("{sc:?}: not caught in {} states", o.states));
        assert_eq!(cx.violation.id(), "F4");
        // Load (1), its write-back waits; the session ends (delete: 3
        // steps; expiry: 1); the write-back runs; a second request's load.
        assert!(cx.steps.len() <= 12, "{sc:?}: {} steps", cx.steps.len());
        eprintln!("{sc:?}: F4 in {} steps", cx.steps.len());
    }
    // With one request there is no one to be told: the write-back alone
    // breaks nothing the model observes.
    let o = run_sessions(SessionsScenario::delete_elsewhere(
        SessionRefresh::LoadThenStore,
        1,
    ));
    assert!(o.counterexample.is_none());
}

/// The world of the `world` fleet models, driven by hand: a fleet of one
/// instance whose store is a shared memory. The call is answered (the
/// world drains the fleet's outputs), and every exchange the client closed
/// is gone from the instance (the close reached it): nothing routed stays
/// behind a client that is done.
#[test]
fn a_fleet_world_answers_and_forgets_each_exchange_its_client_closed() {
    use mcp_streamable::fleet::instance::{Instance, InstanceConfig};
    use mcp_streamable::fleet::store::MemoryStore;
    use mcp_streamable::fleet::InstanceId;
    use mcp_streamable::id_source::IdSource;
    use mcp_streamable::policy::ServerPolicy;
    use mcp_streamable::server::EndpointConfig;
    use mcp_streamable_check::sim::{Fleet, PairConfig, StoreTiming, World};

    let instance = Instance::new(
        InstanceConfig {
            id: InstanceId(0),
            ..InstanceConfig::default()
        },
        EndpointConfig::default(),
        ServerPolicy::FIXED,
        IdSource::reproducible(1),
    )
    .expect("a fleet setting");
    let fleet = Fleet::new(vec![instance], MemoryStore::new(64)).with_timing(StoreTiming::AtOnce);
    let mut w = World::with_servers(PairConfig::default(), fleet);
    w.initialize();
    w.drive();
    let id = w.call("echo");
    w.drive();
    assert!(
        matches!(
            w.result_of(&id),
            Some(mcp_streamable::client::ClientEvent::Response { result: Ok(_), .. })
        ),
        "the call was not answered: {:?}",
        w.result_of(&id)
    );
    let closed: Vec<_> = w
        .links
        .values()
        .filter(|l| l.client_gone)
        .filter_map(|l| l.server_http)
        .collect();
    assert!(closed.len() >= 2, "initialize and the call: {closed:?}");
    let endpoint = w.server.instance(0).expect("alive").endpoint();
    for sh in closed {
        let (_, h) = Fleet::split(sh);
        assert_eq!(
            endpoint.route(h),
            None,
            "exchange {sh:?} outlived its close"
        );
    }
    w.finish();
    assert!(
        w.monitor.violations().is_empty(),
        "{:#?}",
        w.monitor.violations()
    );
}

/// The scenario of a call cancelled while its question is out, in a fleet
/// of one instance behind the balancer, no fault: the instance gives the
/// question up with the call, so no copy of the session awaits an answer
/// once nothing more can happen (F6), under the whole monitor, F5 and F7.
/// A test rather than a file of `models/fleet/`: those files pair FIXED
/// with a naive fleet design the model catches, and this scenario's defect
/// was in the session core, not in a fleet design.
#[test]
fn a_cancelled_call_leaves_no_question_awaiting_in_a_fleet() {
    use mcp_streamable_check::fleet::FleetFile;
    use mcp_streamable_check::Limits;
    let text = r#"{"name": "world_cancelled_call_asks_client", "description": "One instance behind the balancer; the client initializes, calls a tool and cancels the call; the application reports progress and asks the client (roots/list) for that call; no fault. The client stops reading the call's stream when it cancels, so the question may never reach it: the instance gives the question up with the call (the application hears it failed, the client is told), so no copy of the session awaits an answer once nothing more can happen (F6). Judged by the whole monitor, F5, F6 and F7.", "world": {"instances": 1, "client": ["initialize", "call", "cancel"], "app": ["progress", "ask"], "background_get": true, "drops": 0, "time_ms": 3000, "store": "commands_at_once"}, "depth": 200, "expect": [{"design": "ordered", "verdict": "holds", "min_states": 250000}]}"#;
    let f = FleetFile::parse(std::path::Path::new("cancelled.json"), text).expect("a fleet model");
    let e = &f.expect[0];
    let run = f.run(e, Limits::new(2));
    assert_eq!(
        run.as_expected(e),
        Some(true),
        "{:?} in {} states",
        run.violated,
        run.states
    );
    assert!(run.states >= 250_000, "{} states", run.states);
}

/// A fleet model's 2026-07-28 client is `"v2026": true`; a file written
/// with the field's older name, `"modern"`, reads the same.
#[test]
fn a_fleet_worlds_era_reads_by_either_name() {
    use mcp_streamable_check::fleet::FleetFile;
    let path = std::path::Path::new("models/fleet/world_broadcast_to_listen_elsewhere.json");
    let text = std::fs::read_to_string(path).expect("the bundled model");
    assert!(
        text.contains("\"v2026\": true"),
        "the bundled model names the era"
    );
    let older = text.replace("\"v2026\": true", "\"modern\": true");
    let new = FleetFile::parse(path, &text).expect("a fleet model");
    let old = FleetFile::parse(path, &older).expect("a fleet model");
    assert_eq!(format!("{:?}", new.model), format!("{:?}", old.model));
    assert!(format!("{:?}", new.model).contains("v2026: true"));
}
