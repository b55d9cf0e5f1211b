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

/// Explores `model` breadth-first with `threads` threads up to its depth bound.
pub fn run(model: &CheckModel, threads: usize) -> Outcome {
    run_with_progress(model, threads, |_, _| {})
}

/// [`run`], calling `progress(states, elapsed)` about every half second while it works.
#[allow(clippy::disallowed_methods)] // wall time of the exploration is a report figure, not a core input
pub fn run_with_progress(
    model: &CheckModel,
    threads: usize,
    mut progress: impl FnMut(usize, Duration),
) -> Outcome {
    let start = Instant::now();
    let depth = model.scenario.bounds.depth;
    let checker = model
        .clone()
        .checker()
        .threads(threads.max(1))
        .target_max_depth(depth)
        .spawn_bfs();
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
