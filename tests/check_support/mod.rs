//! What the checker's reduction tests share: a run's verdict, and how a
//! reduced run is held to the run without the reduction.
#![allow(dead_code)]

use mcp_streamable_check::sim::Clocks;
use mcp_streamable_check::{
    Action, CheckModel, ClientStep, NotifyReach, Outcome, Scenario, ServerStep, State, Verdict,
};
use std::path::Path;

/// Every bundled scenario of `models/`.
pub fn bundled() -> Vec<Scenario> {
    Scenario::load_dir(Path::new("models"))
        .expect("models load")
        .into_iter()
        .map(|(_, s)| s)
        .collect()
}

/// A run's verdict: the violation found and its counterexample's length.
pub fn verdict(o: &Outcome) -> Option<(&'static str, usize)> {
    o.counterexample
        .as_ref()
        .map(|c| (c.violation.id, c.steps.len()))
}

/// Asserts that `reduced` agrees with `full`: the same verdict and
/// counterexample length. Then, when neither found a violation, `full`'s
/// states over `reduced`'s (below 1 where a reduction costs more than it
/// folds: the partial-order reduction's drop reservation on a model whose
/// server acts across sessions); `None` when one was found.
pub fn agrees(label: &str, reduced: &Outcome, full: &Outcome) -> Option<f64> {
    assert_eq!(verdict(reduced), verdict(full), "{label}");
    if full.counterexample.is_some() {
        return None;
    }
    Some(full.states as f64 / reduced.states.max(1) as f64)
}

/// Every expectation of `s` under a clock per component and `notify` per
/// session: where the partial-order reduction (ample sets, sleep sets) acts.
pub fn apart_models(s: &Scenario) -> Vec<CheckModel> {
    s.expect
        .iter()
        .map(|e| {
            CheckModel::for_expectation(s, e)
                .expect("presets")
                .with_clocks(Clocks::PerComponent)
                .with_notify(NotifyReach::PerSession)
        })
        .collect()
}

/// The bundled models too big for a search without a reduction: `lifecycle`
/// (756,756 states by arrival, compared by hand, docs/reduction.md) and
/// `three_clients_with_gets` (which no search finishes without the
/// partial-order reduction), `two_clients_asked` likewise. The reduction
/// tests leave them out; their verdicts are the main job's and
/// `check_models`'.
pub const TOO_BIG_UNREDUCED: [&str; 3] =
    ["lifecycle", "three_clients_with_gets", "two_clients_asked"];

/// Every bundled model but [`TOO_BIG_UNREDUCED`] under [`apart_models`], each with its run by
/// breadth first on one thread, every reduction on. Searched once per test
/// binary: the tests that hold one reduction to the search without it
/// (ample sets, sleep sets) compare against the same runs.
pub fn apart_runs() -> &'static [(CheckModel, Outcome)] {
    static RUNS: std::sync::OnceLock<Vec<(CheckModel, Outcome)>> = std::sync::OnceLock::new();
    RUNS.get_or_init(|| {
        let models: Vec<CheckModel> = bundled()
            .iter()
            .filter(|s| !TOO_BIG_UNREDUCED.contains(&s.name.as_str()))
            .flat_map(apart_models)
            .collect();
        let runs = par_map(&models, bfs_on_one_thread);
        models.into_iter().zip(runs).collect()
    })
}

/// Breadth first over all of `m` on one thread (the models share the
/// cores: [`par_map`]); it must finish within the model's bounds.
pub fn bfs_on_one_thread(m: &CheckModel) -> Outcome {
    let out = bfs_within(m, None);
    assert!(out.exhaustive(), "{}", m.scenario.name);
    out
}

/// [`bfs_on_one_thread`], stopped after `states_max` states if it is set
/// (the outcome then says it is not exhaustive).
pub fn bfs_within(m: &CheckModel, states_max: Option<usize>) -> Outcome {
    let mut limits = mcp_streamable_check::Limits::new(1);
    limits.states_max = states_max;
    mcp_streamable_check::run_search(m, limits, mcp_streamable_check::Search::Bfs, |_| {})
}

/// Every action enabled in `s`, reduced or not.
pub fn all_enabled(m: &CheckModel, s: &State) -> Vec<Action> {
    let mut out = Vec::new();
    m.all_enabled(s, &mut out);
    out
}

/// The actions the search explores from `s` (the reductions applied).
pub fn explored(m: &CheckModel, s: &State) -> Vec<Action> {
    let mut out = Vec::new();
    m.enabled(s, &mut out);
    out
}

/// Two session-era clients, each `initialize` + `call`, no standalone GET,
/// the server's script `server`, `drops` drops, nothing said of clocks or
/// notify: the defaults (a clock per component) apply.
pub fn calling(server: &[ServerStep], drops: u8) -> Scenario {
    let mut s = bundled()
        .into_iter()
        .find(|s| s.name == "two_clients")
        .expect("bundled");
    s.clients = vec![vec![ClientStep::Initialize, ClientStep::Call]; 2];
    s.server = server.to_vec();
    s.bounds.drops = drops;
    s.bounds.depth = 100;
    s.settings.clocks = Clocks::Auto;
    s.settings.notify = NotifyReach::Auto;
    s
}

/// The bundled model `name` under the listed pair `server` x `client`.
pub fn model(name: &str, server: &str, client: &str) -> CheckModel {
    let models = Scenario::load_dir(Path::new("models")).expect("models load");
    let (_, s) = models
        .into_iter()
        .find(|(_, s)| s.name == name)
        .expect("bundled model");
    let e = s
        .expect
        .iter()
        .find(|e| e.server == server && e.client == client)
        .expect("listed pair")
        .clone();
    CheckModel::for_expectation(&s, &e).expect("presets")
}

/// Every pair of every bundled model but [`TOO_BIG_UNREDUCED`] and
/// `two_clients`.
pub fn small_pairs() -> Vec<(String, CheckModel, Verdict)> {
    let mut out = Vec::new();
    for (_, s) in Scenario::load_dir(Path::new("models")).expect("models load") {
        if TOO_BIG_UNREDUCED.contains(&s.name.as_str()) || s.name == "two_clients" {
            continue;
        }
        for e in &s.expect {
            let label = format!("{} {} x {}", s.name, e.server, e.client);
            let m = CheckModel::for_expectation(&s, e).expect("presets");
            out.push((label, m, e.verdict.clone()));
        }
    }
    out
}

/// `f` of every item, in their order, computed on as many threads as the
/// machine has cores: the reduction tests walk every bundled model one
/// search at a time, and `cargo test` runs one test binary at a time, so a
/// loop on one thread leaves the other cores idle for minutes.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.min(items.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                out.lock().expect("no worker panicked holding it")[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .expect("no worker panicked holding it")
        .into_iter()
        .map(|r| r.expect("every item computed"))
        .collect()
}
