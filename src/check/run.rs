//! Runs one model under stateright's breadth-first checker (shortest
//! counterexamples) and reports the verdict.

use super::model::{Action, CheckModel};
use crate::monitor::Violation;
use stateright::{Checker, Model};
use std::time::{Duration, Instant};

/// A counterexample: the actions from the initial state, with the simulated
/// time at which each was taken, and what broke.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// `(time in ms, action)` in order.
    pub steps: Vec<(u64, Action)>,
    /// The violation in the last state.
    pub violation: Violation,
}

/// What one exploration found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Distinct states visited.
    pub states: usize,
    /// Deepest path explored.
    pub depth: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// The shortest counterexample, if any.
    pub counterexample: Option<Counterexample>,
}

/// How the state space is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// Breadth first: exhaustive within the depth bound, shortest counterexamples.
    Bfs,
    /// Depth first: exhaustive within the depth bound, less memory, longer counterexamples.
    Dfs,
    /// Random walks from the initial state (seeded), for bounds too big to
    /// exhaust; stops at the time limit. Finds bugs, proves nothing.
    Simulation {
        /// Seed of the walks.
        seed: u64,
        /// Wall-time limit.
        limit: Duration,
    },
}

/// Explores `model` breadth-first with `threads` threads up to its depth bound.
pub fn run(model: &CheckModel, threads: usize) -> Outcome {
    run_with_progress(model, threads, |_, _| {})
}

/// [`run`] with a chosen search strategy.
pub fn run_search(
    model: &CheckModel,
    threads: usize,
    search: Search,
    progress: impl FnMut(usize, Duration),
) -> Outcome {
    run_inner(model, threads, search, progress)
}

/// [`run`], calling `progress(states, elapsed)` about every half second while it works.
pub fn run_with_progress(
    model: &CheckModel,
    threads: usize,
    progress: impl FnMut(usize, Duration),
) -> Outcome {
    run_inner(model, threads, Search::Bfs, progress)
}

fn run_inner(
    model: &CheckModel,
    threads: usize,
    search: Search,
    progress: impl FnMut(usize, Duration),
) -> Outcome {
    let builder = model
        .clone()
        .checker()
        .threads(threads.max(1))
        .target_max_depth(model.scenario.bounds.depth);
    match search {
        Search::Bfs => finish(model, builder.spawn_bfs(), progress),
        Search::Dfs => finish(model, builder.spawn_dfs(), progress),
        Search::Simulation { seed, limit } => finish(
            model,
            builder
                .timeout(limit)
                .spawn_simulation(seed, stateright::UniformChooser),
            progress,
        ),
    }
}

// The checker's runner, not a core: the wall time it reads is a report
// figure (the `time` column of `check`), never an input to a model.
#[allow(clippy::disallowed_methods)]
fn finish(
    model: &CheckModel,
    checker: impl Checker<CheckModel>,
    mut progress: impl FnMut(usize, Duration),
) -> Outcome {
    let start = Instant::now();
    let mut nap = Duration::from_millis(1);
    while !checker.is_done() {
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(250));
        if start.elapsed() > Duration::from_millis(500) {
            progress(checker.unique_state_count(), start.elapsed());
        }
    }
    let checker = checker.join();
    let elapsed = start.elapsed();
    let counterexample = checker.discovery("invariants").and_then(|path| {
        let pairs = path.into_vec();
        let last = pairs.last().map(|(s, _)| s.clone())?;
        let violation = model.violation(&last)?;
        let steps = pairs
            .into_iter()
            .filter_map(|(s, a)| a.map(|a| (s.world.now.as_millis(), a)))
            .collect();
        Some(Counterexample { steps, violation })
    });
    Outcome {
        states: checker.unique_state_count(),
        depth: checker.max_depth(),
        elapsed,
        counterexample,
    }
}
