//! Every file of `models/` is checked: each expectation's verdict must come out.

use mcp_streamable_check::{run, CheckModel, Scenario, Verdict};
use std::path::Path;

#[test]
fn every_model_meets_its_expectations() {
    let models = Scenario::load_dir(Path::new("models")).expect("models load");
    assert!(!models.is_empty());
    let mut failures = Vec::new();
    for (file, scenario) in &models {
        for e in &scenario.expect {
            let model = CheckModel::for_expectation(scenario, e).expect("presets exist");
            let out = run(&model, 2);
            let got = out.counterexample.as_ref().map(|c| c.violation.id);
            println!(
                "{} {} x {}: states {} depth {} {:?} -> {:?}",
                scenario.name, e.server, e.client, out.states, out.depth, out.elapsed, got
            );
            match (&e.verdict, &out.counterexample) {
                (Verdict::Holds, None) => {
                    let floor = e.min_states.unwrap_or(1);
                    if out.states < floor {
                        failures.push(format!(
                            "{}: {} x {}: only {} states (floor {floor})",
                            file.display(),
                            e.server,
                            e.client,
                            out.states
                        ));
                    }
                }
                (Verdict::Violates(ids), Some(c)) if ids.iter().any(|i| i == c.violation.id) => {}
                (v, c) => failures.push(format!(
                    "{}: {} x {}: expected {v:?}, got {:?}",
                    file.display(),
                    e.server,
                    e.client,
                    c.as_ref().map(|c| (&c.violation.id, &c.violation.detail))
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_fleet_model_meets_its_expectations() {
    use mcp_streamable_check::fleet::FleetFile;
    use mcp_streamable_check::Limits;
    let files = FleetFile::load_dir(Path::new("models/fleet")).expect("fleet models load");
    assert!(
        files.len() >= 5,
        "the five races of issue 17 each have a model"
    );
    let mut failures = Vec::new();
    for (file, f) in &files {
        assert!(
            f.expect.iter().any(|e| e.verdict == Verdict::Holds),
            "{}: FIXED must be verified",
            file.display()
        );
        assert!(
            f.expect
                .iter()
                .any(|e| matches!(e.verdict, Verdict::Violates(_))),
            "{}: a naive design must be caught",
            file.display()
        );
        for e in &f.expect {
            let run = f.run(e, Limits::new(2));
            println!(
                "{} {}: states {} depth {} -> {:?}",
                f.name, e.design, run.states, run.depth, run.violated
            );
            if run.as_expected(e) != Some(true) {
                failures.push(format!(
                    "{}: {}: expected {:?}, got {:?} in {} states",
                    file.display(),
                    e.design,
                    e.verdict,
                    run.violated,
                    run.states
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_fleet_model_with_an_unknown_design_names_the_field() {
    use mcp_streamable_check::fleet::FleetFile;
    let text = r#"{"name": "x", "description": "", "sessions": {"requests": 1, "delete": true, "expiry": false},
        "depth": 8, "expect": [{"design": "ordered", "verdict": "holds"}]}"#;
    let err = FleetFile::parse(Path::new("x.json"), text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("expect[0].design"), "{err}");
    let text = r#"{"name": "x", "description": "", "relay": {"writers": [], "end": true},
        "depth": 8, "expect": []}"#;
    let err = FleetFile::parse(Path::new("x.json"), text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("relay"), "{err}");
    let text = r#"{"name": "x", "description": "", "sessions": {"requests": 1, "delete": true, "expiry": false},
        "depth": 8, "expect": [{"design": "atomic", "verdict": {"violates": ["F9"]}}]}"#;
    let err = FleetFile::parse(Path::new("x.json"), text)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expect[0].verdict.violates") && err.contains("F9"),
        "{err}"
    );
    let text = r#"{"name": "../x", "description": "", "sessions": {"requests": 1, "delete": true, "expiry": false},
        "depth": 8, "expect": [{"design": "atomic", "verdict": {"violates": ["F4"]}}]}"#;
    let err = FleetFile::parse(Path::new("x.json"), text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("field `name`"), "{err}");
    let world = std::fs::read_to_string("models/fleet/world_broadcast_elsewhere.json").unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&world).unwrap();
    assert!(FleetFile::parse(Path::new("x.json"), &v.to_string()).is_ok());
    v["world"]["client"] = serde_json::json!(["call"]);
    let err = FleetFile::parse(Path::new("x.json"), &v.to_string())
        .unwrap_err()
        .to_string();
    assert!(err.contains("world.client"), "{err}");
    // `listen` only for a 2026-07-28 client.
    v["world"]["client"] = serde_json::json!(["initialize", "listen"]);
    let err = FleetFile::parse(Path::new("x.json"), &v.to_string())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("world.client") && err.contains("v2026"),
        "{err}"
    );
    v["world"]["v2026"] = true.into();
    assert!(FleetFile::parse(Path::new("x.json"), &v.to_string()).is_ok());
}

/// The ids a model may name are the ids `docs/properties.md` lists, both
/// ways: a property documented but not judgeable, or judgeable but not
/// documented, fails here.
/// L1 fed its breach: a server without a deadline for its questions, and
/// a client whose application never answers. Once the call is answered and
/// nothing more can happen, the session still awaits the answer, and the
/// checker says so at quiescence. With the client answering, or with the
/// server's deadline, the same model holds, drops included: a question a
/// dropped connection took is replayed to the client's resumption (its
/// stream is kept, finished or not), so in this model only a client that
/// never answers leaves one waiting.
#[test]
fn a_question_nobody_answers_is_l1_once_nothing_more_can_happen() {
    let run_one = |answer: bool, drops: u8, deadline: &str| {
        let text = format!(
            r#"{{"name": "question", "description": "a question", "clients": [["initialize", "call"]], "server": ["ask_client"],
               "bounds": {{"depth": 40, "time_ms": 4000, "drops": {drops}}},
               "settings": {{"background_get": false, "clients_answer": {answer}, "outbound_timeout_ms": {deadline}}}, "expect": []}}"#
        );
        let scenario = Scenario::parse(Path::new("question.json"), &text).unwrap();
        let model = CheckModel::new(scenario, "FIXED", "FIXED").unwrap();
        run(&model, 2)
    };
    for (answer, drops) in [(false, 0), (false, 1)] {
        let r = run_one(answer, drops, "null");
        let c = r.counterexample.expect("L1 reported");
        assert_eq!(c.violation.id, "L1", "{}", c.violation.detail);
        assert!(c.violation.detail.contains("awaits the client's answer"));
    }
    for (answer, drops, deadline, floor) in [
        (true, 0, "null", 10),
        (true, 1, "null", 100),
        (false, 0, "1000", 10),
        (true, 1, "1000", 100),
    ] {
        let r = run_one(answer, drops, deadline);
        assert!(
            r.counterexample.is_none(),
            "answer {answer}, drops {drops}, deadline {deadline}: {:?}",
            r.counterexample.map(|c| c.violation)
        );
        assert!(r.exhaustive(), "a verdict that holds, not a bounded one");
        assert!(r.states > floor, "{} states", r.states);
    }
}

#[test]
fn the_property_ids_are_the_documented_ones() {
    let doc = std::fs::read_to_string("docs/properties.md").unwrap();
    let mut documented: Vec<&str> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| ")?.split(' ').next())
        .filter(|id| {
            id.len() >= 2
                && id.starts_with(|c: char| c.is_ascii_uppercase())
                && id[1..].chars().all(|c| c.is_ascii_digit())
        })
        .collect();
    documented.sort();
    let mut known: Vec<&str> = mcp_streamable_check::monitor::PROPERTIES
        .iter()
        .chain(mcp_streamable_check::fleet::PROPERTIES.iter())
        .copied()
        .collect();
    known.sort();
    assert_eq!(documented, known);
}

/// The large models (`models/large/`, minutes each, run by hand: README)
/// stay loadable, with expectations for presets that exist.
#[test]
fn the_large_models_load() {
    let models = Scenario::load_dir(Path::new("models/large")).expect("large models load");
    assert!(!models.is_empty());
    for (_, scenario) in &models {
        for e in &scenario.expect {
            CheckModel::for_expectation(scenario, e).expect("presets exist");
        }
    }
}

/// README runs the large models depth first: every buggy pair there must be
/// caught with one of the invariants its model lists, whatever order depth
/// first takes (one thread, and two, where the first violation found
/// varies), not only breadth first's shortest. Each is found within a few
/// thousand states; the budget only keeps a regression from running for
/// minutes.
#[test]
fn the_large_models_buggy_pairs_are_caught_depth_first_as_listed() {
    use mcp_streamable_check::{run_search, Limits, Search};
    let mut caught = 0;
    for (_, scenario) in Scenario::load_dir(Path::new("models/large")).expect("large models load") {
        for e in &scenario.expect {
            let Verdict::Violates(ids) = &e.verdict else {
                continue;
            };
            let model = CheckModel::for_expectation(&scenario, e).expect("presets exist");
            for threads in [1, 2] {
                let mut limits = Limits::new(threads);
                limits.states_max = Some(2_000_000);
                let out = run_search(&model, limits, Search::Dfs, |_| {});
                let label = format!("{} {} x {} on {threads}", scenario.name, e.server, e.client);
                let found = out.counterexample.as_ref().map(|c| c.violation.id);
                assert!(
                    found.is_some_and(|id| ids.iter().any(|x| x == id)),
                    "{label}: found {found:?}, listed {ids:?}"
                );
                caught += 1;
            }
        }
    }
    assert!(caught >= 8, "{caught} depth-first runs of buggy pairs");
}

/// The cancelled call that asks the client, in the fleet world as in the
/// single-server one: a client initializes, calls a tool and cancels the
/// call, while the application reports progress and asks the client
/// something for that call; no fault. Behind the balancer on one instance,
/// FIXED holds exhaustively: the question is given up with the call, so
/// the session does not await an answer (F6), and the whole monitor (L1
/// included) finds nothing. On two instances
/// (`models/large/fleet/world_cancelled_call_asks_client.json`) the
/// cancellation may land on the instance not running the call: forwarded
/// to the one that is, FIXED holds; kept where it landed, F6.
#[test]
fn a_cancelled_calls_question_ends_in_the_fleet_world_too() {
    use mcp_streamable_check::fleet::FleetFile;
    use mcp_streamable_check::Limits;
    let text = r#"{"name": "cancelled_call_asks_client", "description": "the issue's scenario",
        "world": {"instances": 1, "client": ["initialize", "call", "cancel"],
                  "app": ["progress", "ask"], "background_get": true, "drops": 0,
                  "time_ms": 3000, "store": "commands_at_once"},
        "depth": 200,
        "expect": [{"design": "ordered", "verdict": "holds", "min_states": 250000}]}"#;
    let f = FleetFile::parse(Path::new("cancelled.json"), text).expect("the model parses");
    let e = &f.expect[0];
    let run = f.run(e, Limits::new(2));
    println!(
        "{} states, depth {}, {:?}",
        run.states, run.depth, run.violated
    );
    assert!(run.exhaustive, "bounded, not verified");
    assert_eq!(run.violated, None, "{:?}", run.steps);
    assert!(run.states >= 250_000, "{} states", run.states);

    let path = Path::new("models/large/fleet/world_cancelled_call_asks_client.json");
    let text = std::fs::read_to_string(path).expect("the model is there");
    let f = FleetFile::parse(path, &text).expect("the model parses");
    assert_eq!(
        f.expect.len(),
        2,
        "FIXED and the design that keeps it local"
    );
    for e in &f.expect {
        let run = f.run(e, Limits::new(2));
        println!(
            "two instances, {}: {} states, depth {}, {:?} in {} steps",
            e.design,
            run.states,
            run.depth,
            run.violated,
            run.steps.len()
        );
        assert_eq!(
            run.as_expected(e),
            Some(true),
            "{}: {:?}",
            e.design,
            run.steps
        );
    }
}

/// L2, every request ends, fed its breach: a server that writes a call's
/// response on the standalone GET (`CONFORMANCE_SSE_RETRY`, with a client
/// that reads it there only after its polling close) and rmcp 0.16's GET
/// that takes over the common stream leave a call with nothing but its
/// client's deadline to end it: judged on L2 alone, both are caught; FIXED,
/// judged on L2 alone, holds on the same models, exhaustively.
#[test]
fn every_request_ends_is_judged_and_its_breaches_caught() {
    let models = Scenario::load_dir(Path::new("models")).expect("models load");
    let find = |name: &str| {
        models
            .iter()
            .map(|(_, s)| s)
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("model {name}"))
            .clone()
    };
    for (name, server, floor) in [
        ("response_on_background_get", "CONFORMANCE_SSE_RETRY", 1_000),
        ("two_eras", "RMCP_0_16", 2_500),
    ] {
        let scenario = find(name);
        let mut e = scenario.expect[0].clone();
        e.judge = vec!["L2".into()];
        e.client = "FIXED".into();
        for server in [server, "FIXED"] {
            e.server = server.into();
            let model = CheckModel::for_expectation(&scenario, &e).expect("presets exist");
            let out = run(&model, 2);
            let got = out.counterexample.as_ref().map(|c| c.violation.id);
            println!("{name} {server}: {} states, {got:?}", out.states);
            if server == "FIXED" {
                assert_eq!(got, None, "{name}: FIXED breaks L2");
                assert!(out.exhaustive(), "{name}: bounded, not verified");
                assert!(out.states >= floor, "{name}: {} states", out.states);
            } else {
                assert_eq!(got, Some("L2"), "{name}: {server} is not caught by L2");
            }
        }
    }
}

/// L2 asks whether a client's requests wait on nothing but their deadlines:
/// every timer it has armed, not only its next. A resumption planned behind
/// a deadline (the call's stream cut just before its deadline, the server's
/// `retry` longer than what is left) is the transport at work, not a request
/// left to its deadline. One client with its GET, a call, two notifies and
/// a drop, on a clock of its own (whose idle step reaches the instant just
/// before the deadline): FIXED holds; judged on the next timer alone, it
/// broke L2 in 18 steps.
#[test]
fn a_resumption_planned_behind_a_deadline_is_not_l2() {
    use mcp_streamable_check::sim::Clocks;
    use mcp_streamable_check::{ClientStep, NotifyReach, ServerStep};
    let mut s = crate::check_support::bundled()
        .into_iter()
        .find(|s| s.name == "competing_get_streams_2")
        .expect("bundled");
    s.clients = vec![vec![ClientStep::Initialize, ClientStep::Call]];
    s.server = vec![ServerStep::Notify, ServerStep::Notify];
    s.invariants.clear();
    s.bounds.depth = 100;
    s.bounds.time_ms = 6_000;
    s.bounds.drops = 1;
    s.bounds.gets_max = None;
    s.settings.background_get = true;
    s.settings.retry_ms = 500;
    s.settings.request_timeout_ms = 4_000;
    let m = CheckModel::new(s, "FIXED", "FIXED")
        .expect("presets")
        .with_clocks(Clocks::PerComponent)
        .with_notify(NotifyReach::PerSession);
    let out = run(&m, 2);
    assert!(
        out.counterexample.is_none(),
        "{:?}",
        out.counterexample.map(|c| c.violation)
    );
    assert!(
        out.exhaustive() && out.states > 100_000,
        "{} states",
        out.states
    );
}
