//! Runs one model (our explorer, or stateright's checkers) and reports the
//! outcome.

use super::engine::{self, Limit, Limits, Order, Progress};
use super::memory;
use super::model::{Action, CheckModel};
use crate::monitor::Violation;
use stateright::{Checker, Model};
use std::time::{Duration, Instant};

/// A counterexample: the actions from the initial state, with the simulated
/// time at which each was taken, and what broke.
#[derive(Clone, Debug)]
pub struct Counterexample<A = Action, V = Violation> {
    /// `(time in ms, action)` in order.
    pub steps: Vec<(u64, A)>,
    /// The violation in the last state.
    pub violation: V,
}

/// What one exploration found.
#[derive(Clone, Debug)]
pub struct Outcome<A = Action, V = Violation> {
    /// Distinct states visited.
    pub states: usize,
    /// Deepest path explored.
    pub depth: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// The counterexample, if any (shortest under [`Order::Bfs`]).
    pub counterexample: Option<Counterexample<A, V>>,
    /// The budget the run reached before exhausting its bounds: then no
    /// counterexample means "bounded", never "holds".
    pub limit: Option<Limit>,
    /// How the space was searched.
    pub order: Order,
    /// The largest resident size seen, when known.
    pub rss_peak: Option<u64>,
}

impl<A, V> Outcome<A, V> {
    /// Whether the exploration covered everything within the model's bounds.
    pub fn exhaustive(&self) -> bool {
        self.limit.is_none()
    }

    /// The depth bound, when the search met it with actions enabled and
    /// found nothing ([`Limit::DepthBound`]): the model holds within that
    /// depth, and nothing is known past it.
    pub fn holds_within_depth(&self) -> Option<usize> {
        match (self.limit, &self.counterexample) {
            (Some(Limit::DepthBound { depth }), None) => Some(depth),
            _ => None,
        }
    }
}

/// How the state space is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// Breadth first while its frontier is small, then depth first; a
    /// counterexample met depth first is searched for again breadth first,
    /// for a shortest one (`check`'s default). Breadth first expands states
    /// made long before, cold in every cache, and costs about twice what
    /// depth first does per state (`docs/performance.md`): a large model that
    /// holds is searched at depth first's cost, and a shallow violation is
    /// still met breadth first, within the share. The share is
    /// [`Limits::bfs_memory_max`] when set, else [`AUTO_FRONTIER_MAX`].
    Auto,
    /// Breadth first (our explorer): shortest counterexamples; gives way to
    /// depth first when the frontier outgrows half the memory budget.
    Bfs,
    /// Depth first (our explorer): least memory, longer counterexamples.
    Dfs,
    /// stateright's own breadth-first checker (no budget): a cross-check of
    /// our explorer, which must agree with it on every bundled model.
    StaterightBfs,
    /// Depth first against a bit array of 2^`log2_bits` bits instead of a
    /// fingerprint table (`engine::bitstate`), for state spaces past
    /// memory: finds bugs with real counterexamples, proves nothing, and
    /// says how much it may have missed.
    BitState {
        /// log2 of the array's size in bits.
        log2_bits: u32,
    },
    /// Random walks from the initial state (seeded, stateright), for bounds
    /// too big to exhaust; stops at the time limit. Finds bugs, proves nothing.
    Simulation {
        /// Seed of the walks.
        seed: u64,
        /// Wall-time limit.
        limit: Duration,
    },
}

/// How much the resident size may grow while [`Search::Auto`] searches
/// breadth first, before it turns depth first. Small: a model that passes
/// it is searched at depth first's cost, about half breadth first's per
/// state (a model of 4.1 M states: 22 s against 43 s breadth first to half
/// the memory budget; the three bundled checks that pass it, 4.4 s against
/// 6.8 s); a violation met past it is searched for again breadth first
/// (`docs/performance.md`).
pub const AUTO_FRONTIER_MAX: u64 = 64 << 20;

/// The least budget, in states, of the search for a shortest counterexample
/// after the reduced search found one (ten times the reduced search's states
/// when that is more).
const SHORTEST_STATES_MIN: usize = 1_000_000;

/// Explores `model` breadth-first with `threads` threads up to its depth
/// bound, within the default memory budget.
pub fn run(model: &CheckModel, threads: usize) -> Outcome {
    run_search(model, Limits::new(threads), Search::Bfs, |_| {})
}

/// Whether `out`'s counterexample is a path of `model`'s reduced search: a
/// reduced model's breadth first hands over a shortest one found without
/// the reduction ([`Order::Bfs`]) when the search for it ends within its
/// budget, and the reduced one otherwise; depth first and bit-state keep
/// theirs. Its steps replay on the model they were found on
/// ([`crate::Trace::reduced`]).
pub fn found_reduced(model: &CheckModel, out: &Outcome) -> bool {
    out.counterexample.is_some() && model.reduces() && out.order != Order::Bfs
}

/// [`run`] with a chosen budget and search, calling `progress` about every
/// quarter second while it works.
pub fn run_search(
    model: &CheckModel,
    limits: Limits,
    search: Search,
    mut progress: impl FnMut(&Progress),
) -> Outcome {
    search_with(model, limits, search, &mut progress)
}

/// [`run_search`] with its progress behind a reference: [`Search::Auto`]
/// runs two searches of its own through it.
fn search_with(
    model: &CheckModel,
    limits: Limits,
    search: Search,
    progress: &mut dyn FnMut(&Progress),
) -> Outcome {
    match search {
        Search::Auto => {
            let quick = Limits {
                bfs_memory_max: Some(limits.bfs_memory_max.unwrap_or(AUTO_FRONTIER_MAX)),
                depth_first: false,
                ..limits
            };
            let out = search_with(model, quick, Search::Bfs, progress);
            if out.counterexample.is_none() || !matches!(out.order, Order::BfsThenDfs { .. }) {
                return out;
            }
            // Met depth first: breadth first again, to half the memory
            // budget as `Search::Bfs` goes, for a shortest counterexample.
            // One it cannot find (a budget, an interrupt) leaves the one
            // depth first met, which the order says may be longer.
            let again = Limits {
                bfs_memory_max: None,
                ..limits
            };
            let shortest = search_with(model, again, Search::Bfs, progress);
            let elapsed = out.elapsed + shortest.elapsed;
            let rss_peak = out.rss_peak.max(shortest.rss_peak);
            if shortest.counterexample.is_some() {
                return Outcome {
                    elapsed,
                    rss_peak,
                    ..shortest
                };
            }
            Outcome {
                elapsed,
                rss_peak,
                ..out
            }
        }
        Search::Bfs | Search::Dfs => {
            let limits = Limits {
                depth_first: search == Search::Dfs,
                ..limits
            };
            let out = engine::explore(model, limits, &mut *progress);
            if out.counterexample.is_none() || !model.reduces() || out.order != Order::Bfs {
                return out;
            }
            // The reduction runs one client's component ahead of the others,
            // so its counterexample may be longer than the shortest: breadth first
            // without it finds a shortest one (every state the reduced search
            // reached is reachable, so it finds one), stopping there. Within a
            // budget: a deep violation of a big model can lie past millions of
            // unreduced states, and a search that gave way to depth first
            // would not find a shortest one either.
            let budget = SHORTEST_STATES_MIN.max(out.states.saturating_mul(10));
            let shortest = Limits {
                states_max: Some(limits.states_max.map_or(budget, |m| m.min(budget))),
                bfs_memory_max: Some(u64::MAX),
                ..limits
            };
            let full = engine::explore(
                &model.clone().with_reduction(false),
                shortest,
                &mut *progress,
            );
            let elapsed = out.elapsed + full.elapsed;
            if full.counterexample.is_some() {
                return Outcome { elapsed, ..full };
            }
            Outcome {
                elapsed,
                order: Order::ReducedBfs {
                    unreduced_states: full.states,
                },
                ..out
            }
        }
        Search::BitState { log2_bits } => {
            engine::bitstate::explore(model, limits, log2_bits, &mut *progress)
        }
        Search::StaterightBfs => {
            let builder = stateright_builder(model, limits.threads);
            finish(model, builder.spawn_bfs(), Order::Bfs, progress)
        }
        Search::Simulation { seed, limit } => {
            let builder = stateright_builder(model, limits.threads).timeout(limit);
            let out = finish(
                model,
                builder.spawn_simulation(seed, stateright::UniformChooser),
                Order::Dfs,
                progress,
            );
            Outcome {
                limit: Some(Limit::Walks),
                ..out
            }
        }
    }
}

fn stateright_builder(
    model: &CheckModel,
    threads: usize,
) -> stateright::CheckerBuilder<CheckModel> {
    model
        .clone()
        .checker()
        .threads(threads.max(1))
        .target_max_depth(model.scenario.bounds.depth)
}

// The checker's runner, not a core: the wall time it reads is a report
// figure (the `time` column of `check`), never an input to a model.
#[allow(clippy::disallowed_methods)]
fn finish(
    model: &CheckModel,
    checker: impl Checker<CheckModel>,
    order: Order,
    mut progress: impl FnMut(&Progress),
) -> Outcome {
    // Asked every millisecond, so its time is measured to the millisecond
    // as our explorer's is (naps that doubled would end at 7, 15, 31 … ms
    // and report up to twice the time taken); progress every quarter
    // second once half a second has gone.
    let start = Instant::now();
    let mut reported = Duration::ZERO;
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(1));
        let elapsed = start.elapsed();
        if elapsed > Duration::from_millis(500) && elapsed - reported >= Duration::from_millis(250)
        {
            reported = elapsed;
            progress(&Progress {
                states: checker.unique_state_count(),
                depth: checker.max_depth(),
                rss: memory::rss_bytes(),
                elapsed: start.elapsed(),
                order,
            });
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
            .filter_map(|(s, a)| a.map(|a| (s.world.latest_now().as_millis(), a)))
            .collect();
        Some(Counterexample { steps, violation })
    });
    Outcome {
        states: checker.unique_state_count(),
        depth: checker.max_depth(),
        elapsed,
        counterexample,
        limit: None,
        order,
        rss_peak: memory::rss_bytes(),
    }
}
