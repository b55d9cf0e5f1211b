//! Models nobody wrote: random scenarios in the documented schema (1 to 3
//! clients of any era, any script, a server script, drops, settings), each
//! checked FIXED x FIXED under every invariant. A counterexample here is a
//! race in FIXED or a false alarm of the monitor; either way a defect. The
//! bundled models are what we thought of; users write others.
//!
//! Each model is explored breadth first up to a state budget, so the check is
//! "no violation within N states" for every model, and exhaustive for the
//! small ones (the test asserts some are). `RANDOM_MODELS_CASES` sets the
//! number of models (default 24), `RANDOM_MODELS_STATES` the budget (default
//! 20,000), `RANDOM_MODELS_SEED` which models (default 0),
//! `RANDOM_MODELS_STEPS` the longest client script (4) and
//! `RANDOM_MODELS_DROPS` the most drops (1).

use crate::check_support;

use mcp_streamable::client::ClientEra;
use mcp_streamable_check::scenario::{Bounds, Settings};
use mcp_streamable_check::{
    run_search, CheckModel, ClientStep, Limits, Outcome, Scenario, Search, ServerStep,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};

fn client_step() -> impl Strategy<Value = ClientStep> {
    prop_oneof![
        3 => Just(ClientStep::Initialize),
        4 => Just(ClientStep::Call),
        2 => Just(ClientStep::Notify),
        1 => Just(ClientStep::Cancel),
        1 => Just(ClientStep::Close),
        2 => Just(ClientStep::Listen),
    ]
}

/// A script: most begin with `initialize` (every other step waits for a
/// session, or a probe, to be ready), some do not (they must wait quietly).
fn client_script() -> impl Strategy<Value = Vec<ClientStep>> {
    (
        prop::bool::weighted(0.9),
        prop::collection::vec(client_step(), 0..steps_max()),
    )
        .prop_map(|(init, mut rest)| {
            if init || rest.is_empty() {
                rest.insert(0, ClientStep::Initialize);
            }
            rest
        })
}

fn server_step() -> impl Strategy<Value = ServerStep> {
    prop_oneof![
        Just(ServerStep::Notify),
        Just(ServerStep::HookNotify),
        Just(ServerStep::Progress),
        Just(ServerStep::AskClient),
        Just(ServerStep::CloseConnection),
        Just(ServerStep::Broadcast),
    ]
}

fn era() -> impl Strategy<Value = ClientEra> {
    prop_oneof![
        2 => Just(ClientEra::V2025),
        1 => Just(ClientEra::V2026),
        1 => Just(ClientEra::Auto),
    ]
}

prop_compose! {
    fn scenario()(
        clients in prop::collection::vec(client_script(), 1..=3),
        eras in prop::collection::vec(era(), 3),
        server in prop::collection::vec(server_step(), 0..=3),
        drops in 0u8..=drops_max(),
        silent_drops in any::<bool>(),
        background_get in any::<bool>(),
        events_max in prop_oneof![Just(1usize), Just(2), Just(8)],
        time_ms in prop_oneof![Just(1_000u64), Just(6_000)],
    ) -> Scenario {
        let eras = eras[..clients.len()].to_vec();
        Scenario {
            name: "random".into(),
            description: "generated".into(),
            clients,
            server,
            invariants: Vec::new(),
            bounds: Bounds {
                drops,
                silent_drops,
                depth: 60,
                time_ms,
                gets_max: None,
                reader_reconnects: 3,
                resume_attempts: 2,
            },
            settings: Settings {
                background_get,
                events_max,
                eras,
                ..Settings::default()
            },
            expect: Vec::new(),
        }
    }
}

/// A model drawn over the whole schema: [`scenario`]'s, then what it leaves
/// at its defaults drawn too: the steps that answer the server's requests
/// (`answer`), turn a client attacker (`hijack`, which makes every client
/// authenticate) and end a session from the server's side (`end_session`),
/// and the settings of timers, pools, response modes and request numbering.
/// Kept apart from [`scenario`] so that the reduction's comparisons keep
/// drawing the models they were written for.
fn whole_schema_scenario() -> impl Strategy<Value = Scenario> {
    let extras = (
        (
            prop::collection::vec((0usize..3, 1usize..6), 0..=2),
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.25),
        ),
        (
            prop_oneof![Just(100u64), Just(500), Just(1_000)],
            prop_oneof![Just(1_000u64), Just(4_000)],
            prop_oneof![Just(None), Just(Some(500u64)), Just(Some(2_000))],
            prop::bool::weighted(0.8),
        ),
        (
            any::<bool>(),
            prop_oneof![Just(None), Just(Some(1usize)), Just(Some(2))],
            prop_oneof![Just(0i64), Just(1)],
            any::<bool>(),
        ),
    );
    (scenario(), extras).prop_map(|(mut sc, extras)| {
        let ((answers, hijack, end_session), timers, rest) = extras;
        let (retry_ms, request_timeout_ms, outbound_timeout_ms, clients_answer) = timers;
        let (json, connections_max, first_request_number, calls_await_questions) = rest;
        let n = sc.clients.len();
        for (c, at) in answers {
            let script = &mut sc.clients[c % n];
            let at = at.min(script.len());
            script.insert(at, ClientStep::Answer);
        }
        if hijack && n >= 2 {
            sc.clients[n - 1].insert(1, ClientStep::Hijack);
        }
        if end_session {
            sc.server.push(ServerStep::EndSession);
        }
        let s = &mut sc.settings;
        s.retry_ms = retry_ms;
        s.request_timeout_ms = request_timeout_ms;
        s.outbound_timeout_ms = outbound_timeout_ms;
        // A question no deadline ends, never answered or lost with a
        // dropped connection, is L1 for every server (`docs/models.md`):
        // not a model FIXED can hold on.
        s.clients_answer = clients_answer || outbound_timeout_ms.is_none();
        if outbound_timeout_ms.is_none() {
            sc.bounds.drops = 0;
        }
        if json {
            s.response_mode = mcp_streamable::server::ResponseMode::JsonWhenAlone;
        }
        s.connections_max = connections_max;
        s.first_request_number = first_request_number;
        s.calls_await_questions = calls_await_questions;
        sc
    })
}

fn steps_max() -> usize {
    env("RANDOM_MODELS_STEPS", 4)
}

fn drops_max() -> u8 {
    env("RANDOM_MODELS_DROPS", 1) as u8
}

/// A runner drawing from `RANDOM_MODELS_SEED` (default 0): a CI run is
/// reproducible; another seed draws other models.
fn seeded_runner(config: Config) -> TestRunner {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&(env("RANDOM_MODELS_SEED", 0) as u64).to_le_bytes());
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed))
}

/// `sc` under one preset pair, breadth first on one thread up to `budget` states.
fn explore(sc: &Scenario, server: &str, client: &str, budget: usize) -> Outcome {
    let model = CheckModel::new(sc.clone(), server, client).expect("presets");
    let mut limits = Limits::new(1);
    limits.states_max = Some(budget);
    run_search(&model, limits, Search::Bfs, |_| {})
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What FIXED x FIXED explored over a run of random models.
struct Tally {
    states: usize,
    exhaustive: usize,
    attacked: usize,
}

/// FIXED x FIXED on `cases` models drawn from `models`, each breadth first
/// up to `RANDOM_MODELS_STATES`; a counterexample fails the test, the model
/// shrunk first to a smaller one (fewer steps and clients).
fn fixed_holds_on(models: impl Strategy<Value = Scenario>, cases: u32) -> Tally {
    let budget = env("RANDOM_MODELS_STATES", 20_000);
    let (states, exhaustive, attacked) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    let mut runner = seeded_runner(Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    });
    runner
        .run(&models, |sc| {
            let out = explore(&sc, "FIXED", "FIXED", budget);
            states.fetch_add(out.states, Ordering::Relaxed);
            exhaustive.fetch_add(out.exhaustive() as usize, Ordering::Relaxed);
            let attacker = sc.clients.iter().any(|s| s.contains(&ClientStep::Hijack));
            attacked.fetch_add(attacker as usize, Ordering::Relaxed);
            if let Some(c) = &out.counterexample {
                return Err(TestCaseError::fail(format!(
                    "FIXED x FIXED: {} ({}) after {} steps on\n{}",
                    c.violation.id,
                    c.violation.detail,
                    c.steps.len(),
                    serde_json::to_string(&sc).unwrap_or_default()
                )));
            }
            Ok(())
        })
        .unwrap();
    Tally {
        states: states.into_inner(),
        exhaustive: exhaustive.into_inner(),
        attacked: attacked.into_inner(),
    }
}

#[test]
fn fixed_holds_on_random_models() {
    let cases = env("RANDOM_MODELS_CASES", 24) as u32;
    let Tally {
        states, exhaustive, ..
    } = fixed_holds_on(scenario(), cases);
    println!("{cases} random models, {exhaustive} explored to the end, {states} states in all");
    // Not vacuous: models are explored, and some to the end (a "holds").
    assert!(states >= cases as usize * 20, "{states} states");
    assert!(exhaustive >= 1, "no random model was explored to the end");
}

/// FIXED x FIXED on models drawn over the whole schema
/// ([`whole_schema_scenario`]): attackers, answers, a server that ends
/// sessions, pools, deadlines. `RANDOM_MODELS_CASES` and
/// `RANDOM_MODELS_STATES` as above.
#[test]
fn fixed_holds_on_random_models_of_the_whole_schema() {
    let cases = env("RANDOM_MODELS_CASES", 24) as u32;
    let Tally {
        states,
        exhaustive,
        attacked,
    } = fixed_holds_on(whole_schema_scenario(), cases);
    println!(
        "{cases} models of the whole schema, {attacked} with an attacker, {exhaustive} explored to the end, {states} states in all"
    );
    assert!(states >= cases as usize * 20, "{states} states");
    assert!(exhaustive >= 1, "no model explored to the end");
    assert!(attacked >= 1, "no model with an attacker");
}

/// The generator has teeth: on random models of the same seed, every buggy preset is
/// caught on at least one (the races are not only in the models we wrote).
#[test]
fn buggy_presets_are_caught_on_random_models() {
    let cases = env("RANDOM_MODELS_CASES", 24);
    // Races show early (breadth first finds them within a few thousand
    // states), so a smaller budget than FIXED's keeps this test quick.
    let budget = env("RANDOM_MODELS_STATES", 20_000) / 4;
    let mut runner = seeded_runner(Config::default());
    let models: Vec<Scenario> = (0..cases)
        .map(|_| scenario().new_tree(&mut runner).expect("a model").current())
        .collect();
    let pairs = [
        ("MCP_GO_0_44", "FIXED"),
        ("TOOLHIVE_4075", "FIXED"),
        ("RMCP_0_16", "EVENTSOURCE_RECONNECT"),
        ("RMCP_3_9", "FIXED"),
        ("GO_SDK_1_7", "FIXED"),
        ("FIXED", "GO_SDK_1_7"),
        ("CONFORMANCE_SSE_RETRY", "FIXED"),
        ("CONFORMANCE_SSE_RETRY", "CSHARP_BASELINE"),
        ("FIXED", "CSHARP_PR1381"),
    ];
    let mut missed = Vec::new();
    for (server, client) in pairs {
        let mut caught = std::collections::BTreeMap::<&str, usize>::new();
        for sc in &models {
            if let Some(c) = &explore(sc, server, client, budget).counterexample {
                *caught.entry(c.violation.id).or_default() += 1;
            }
        }
        println!("{server} x {client}: caught on {caught:?} of {cases} models");
        if caught.is_empty() {
            missed.push(format!("{server} x {client}"));
        }
    }
    assert!(missed.is_empty(), "never caught: {missed:?}");
}

/// The partial-order reduction (`crates/mcp-streamable-check/src/ample.rs`) on models nobody
/// wrote: each random model under a clock per component and `notify` per
/// session, with the reduction on and off, under FIXED and two buggy
/// servers. Where both runs end within the budget, the same verdict and a
/// counterexample as short; some models fold, some races are caught.
#[test]
fn the_reduction_agrees_on_random_models() {
    use mcp_streamable_check::sim::Clocks;
    use mcp_streamable_check::NotifyReach;
    let cases = env("RANDOM_MODELS_CASES", 16);
    let budget = env("RANDOM_MODELS_STATES", 20_000);
    let mut runner = seeded_runner(Config::default());
    let (mut compared, mut folded, mut caught) = (0, 0, 0);
    for _ in 0..cases {
        let mut sc = scenario().new_tree(&mut runner).expect("a model").current();
        sc.settings.clocks = Clocks::PerComponent;
        sc.settings.notify = NotifyReach::PerSession;
        for (server, client) in [
            ("FIXED", "FIXED"),
            ("RMCP_3_9", "FIXED"),
            ("MCP_GO_0_44", "FIXED"),
        ] {
            let model = CheckModel::new(sc.clone(), server, client).expect("presets");
            let mut limits = Limits::new(1);
            limits.states_max = Some(budget);
            let run = |m: &CheckModel| run_search(m, limits, Search::Bfs, |_| {});
            let (on, off) = (run(&model), run(&model.clone().with_reduction(false)));
            // A run cut by the budget is bounded, either way: nothing to
            // compare. (The reduced run can be cut where the other is not:
            // its first step, the drops' reservation, copies the early
            // levels once per client, and its counterexamples lie deeper.)
            let done = |o: &Outcome| o.exhaustive() || o.counterexample.is_some();
            if !done(&off) || !done(&on) {
                continue;
            }
            let label = format!(
                "{server} x {client} on\n{}",
                serde_json::to_string(&sc).unwrap_or_default()
            );
            match check_support::agrees(&label, &on, &off) {
                Some(ratio) if ratio > 1.0 => folded += 1,
                Some(_) => {}
                None => caught += 1,
            }
            compared += 1;
        }
    }
    println!("{compared} random pairs compared, {folded} folded, {caught} caught both ways");
    assert!(compared >= cases, "{compared} pairs compared");
    assert!(
        folded >= 1 && caught >= 1,
        "{folded} folded, {caught} caught"
    );
}

/// Reductions by default on models nobody wrote: each random model made one
/// where `auto` picks a clock per component (two clients or more, a server
/// script of `notify`s only), checked under its defaults and under one clock
/// with atomic notifies. FIXED holds both ways; a race one clock shows, the
/// defaults show too (a clock per component and per-session notifies allow
/// every order between components that one clock does).
#[test]
fn the_defaults_keep_one_clocks_verdicts_on_random_models() {
    use mcp_streamable_check::sim::Clocks;
    use mcp_streamable_check::NotifyReach;
    let cases = env("RANDOM_MODELS_CASES", 16);
    let budget = env("RANDOM_MODELS_STATES", 20_000);
    let mut runner = seeded_runner(Config::default());
    let (mut compared, mut caught) = (0, 0);
    for _ in 0..cases {
        let mut sc = scenario().new_tree(&mut runner).expect("a model").current();
        if sc.clients.len() < 2 {
            sc.clients.push(sc.clients[0].clone());
            sc.settings.eras.push(sc.settings.eras[0]);
        }
        sc.server.retain(|step| *step == ServerStep::Notify);
        for (server, client) in [
            ("FIXED", "FIXED"),
            ("RMCP_3_9", "FIXED"),
            ("MCP_GO_0_44", "FIXED"),
            ("TOOLHIVE_4075", "FIXED"),
        ] {
            let defaults = CheckModel::new(sc.clone(), server, client).expect("presets");
            assert_eq!(defaults.scenario.settings.clocks, Clocks::PerComponent);
            let one = defaults
                .clone()
                .with_clocks(Clocks::Global)
                .with_notify(NotifyReach::Atomic);
            let mut limits = Limits::new(1);
            limits.states_max = Some(budget);
            let run = |m: &CheckModel| run_search(m, limits, Search::Bfs, |_| {});
            let (auto, global) = (run(&defaults), run(&one));
            let label = format!(
                "{server} x {client} on\n{}",
                serde_json::to_string(&sc).unwrap_or_default()
            );
            if server == "FIXED" {
                assert!(auto.counterexample.is_none(), "defaults: {label}");
                assert!(global.counterexample.is_none(), "one clock: {label}");
            }
            // Where one clock finds a race and the defaults' search ends,
            // the defaults find one too.
            if global.counterexample.is_some()
                && (auto.exhaustive() || auto.counterexample.is_some())
            {
                assert!(
                    auto.counterexample.is_some(),
                    "missed under the defaults: {label}"
                );
                caught += 1;
            }
            if auto.exhaustive() && global.exhaustive() {
                compared += 1;
            }
        }
    }
    println!(
        "{compared} random pairs explored to the end both ways, {caught} races caught both ways"
    );
    assert!(compared >= cases, "{compared} pairs compared");
    assert!(caught >= 1, "no race caught");
}
