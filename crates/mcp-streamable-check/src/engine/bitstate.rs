//! Bit-state search (Holzmann's "supertrace"): depth first against a
//! visited set of a few bits per state in one fixed bit array, for state
//! spaces whose fingerprint table would not fit in memory.
//!
//! A state is taken for visited when all of its [`HASHES`] bits are set, so
//! two states can share them: the second is then never expanded, and what
//! only it leads to is missed. The search therefore never says "holds".
//! It says how many states it stored, how full the array was, and what a
//! collision costs: the chance that a state never met is taken for a
//! visited one, at the end (the array's fill to the power [`HASHES`]), and
//! the number of states expected to have been missed that way (the sum of
//! that chance over every state stored: each store is one test of a state
//! that was new, and each such test could have been a collision). A
//! counterexample it finds is real: it is the path on the search's stack,
//! replayed from the initial state.
//!
//! One worker, on the calling thread: the array is the memory, and one
//! thread keeps the search and its counts deterministic.

use super::{Explorable, Limit, Limits, Order, Progress};
use crate::memory;
use crate::run::{Counterexample, Outcome};
use std::time::{Duration, Instant};

/// Bits set per state.
pub const HASHES: u32 = 3;

/// The smallest and largest bit arrays, as powers of two (2^20 bits is
/// 128 KiB; 2^40 bits, 128 GiB).
pub const LOG2_BITS_RANGE: std::ops::RangeInclusive<u32> = 20..=40;

/// Expansions between two looks at the clock, the interrupt and the budget.
const CHECK_EVERY: u32 = 256;

/// What a bit-state search says of its own coverage.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Coverage {
    /// log2 of the array's size in bits.
    pub log2_bits: u32,
    /// Bits set at the end.
    pub bits_set: u64,
    /// The chance, at the end, that a state never met is taken for a
    /// visited one.
    pub miss_chance: f64,
    /// States expected to have been taken for visited ones by a collision
    /// (whatever only they lead to is missed with them).
    pub missed_expected: f64,
    /// Whether the search met the model's depth bound with actions still
    /// enabled (paths past it were not explored either).
    pub depth_cut: bool,
}

/// The visited bits.
struct Bits {
    words: Vec<u64>,
    shift: u32,
    set: u64,
    log2_bits: u32,
}

impl Bits {
    fn new(log2_bits: u32) -> Self {
        Bits {
            words: vec![0; 1usize << (log2_bits - 6)],
            shift: 64 - log2_bits,
            set: 0,
            log2_bits,
        }
    }

    /// The bit positions of fingerprint `fp`: multiplicative hashes by odd
    /// constants, each keeping the top bits.
    fn positions(&self, fp: u64) -> [u64; HASHES as usize] {
        const ODD: [u64; HASHES as usize] = [
            0x9E37_79B9_7F4A_7C15,
            0xC2B2_AE3D_27D4_EB4F,
            0x1656_67B1_9E37_79F9,
        ];
        ODD.map(|k| (fp ^ (fp >> 29)).wrapping_mul(k) >> self.shift)
    }

    /// Sets `fp`'s bits; whether they were all set already.
    fn test_and_set(&mut self, fp: u64) -> bool {
        let mut all = true;
        for p in self.positions(fp) {
            let (w, b) = ((p >> 6) as usize, 1u64 << (p & 63));
            if self.words[w] & b == 0 {
                all = false;
                self.words[w] |= b;
                self.set += 1;
            }
        }
        all
    }

    /// The chance that a state never met has all its bits set now.
    fn miss_chance(&self) -> f64 {
        let fill = self.set as f64 / (1u64 << self.log2_bits) as f64;
        fill.powi(HASHES as i32)
    }
}

/// A state on the search's stack, with the actions still to try from it
/// (the state itself is given up to its last action's step, which then
/// takes it instead of a copy).
struct Frame<M: Explorable> {
    state: Option<M::State>,
    time: u64,
    actions: Vec<M::Action>,
    next: usize,
}

impl<M: Explorable> Frame<M> {
    fn new(model: &M, state: M::State, actions: Vec<M::Action>) -> Self {
        Frame {
            time: model.time_of(&state),
            state: Some(state),
            actions,
            next: 0,
        }
    }
}

/// Explores `model` depth first within its depth bound and `limits` (the
/// state budget and the interrupt; the array is the memory), against a bit
/// array of 2^`log2_bits` bits. `progress` is called about every quarter
/// second. Without a violation the outcome's limit is [`Limit::BitState`]
/// (or the budget or interrupt that stopped it): a bit-state search never
/// holds.
#[allow(clippy::disallowed_methods)] // wall time is a report figure, never a model input
pub fn explore<M: Explorable>(
    model: &M,
    limits: Limits,
    log2_bits: u32,
    mut progress: impl FnMut(&Progress),
) -> Outcome<M::Action, M::Violation> {
    let start = Instant::now();
    let log2_bits = log2_bits.clamp(*LOG2_BITS_RANGE.start(), *LOG2_BITS_RANGE.end());
    let mut bits = Bits::new(log2_bits);
    let states_max = limits.states_max.unwrap_or(usize::MAX);
    let depth_bound = model.depth_bound();
    let init = model.initial();
    bits.test_and_set(model.fingerprint(&init));
    let mut states = 1usize;
    let mut missed_expected = 0.0f64;
    let mut max_depth = 1usize;
    let mut stopped = None;
    let mut cut = false;
    let mut found = None;
    let mut peak = memory::rss_bytes();
    let mut stack: Vec<Frame<M>> = Vec::new();
    if let Some(v) = model.violation(&init) {
        found = Some((Vec::new(), v));
    } else {
        let mut actions = Vec::new();
        if depth_bound > 1 {
            model.enabled(&init, &mut actions);
        }
        stack.push(Frame::new(model, init, actions));
    }
    // The first look comes at once: a run interrupted before it began
    // explores nothing.
    let mut since_check = CHECK_EVERY - 1;
    let mut last_report = start;
    while let Some(top) = stack.last_mut() {
        since_check += 1;
        if since_check >= CHECK_EVERY {
            since_check = 0;
            if limits.interrupt.is_some_and(|i| i.is_set()) {
                stopped = Some(Limit::Interrupted);
                break;
            }
            if last_report.elapsed() >= Duration::from_millis(250) {
                last_report = Instant::now();
                let rss = memory::rss_bytes();
                peak = peak.max(rss);
                progress(&Progress {
                    states,
                    depth: max_depth,
                    rss,
                    elapsed: start.elapsed(),
                    order: Order::Dfs,
                });
            }
        }
        let Some(action) = top.actions.get(top.next).cloned() else {
            stack.pop();
            continue;
        };
        top.next += 1;
        let next = match top.next == top.actions.len() {
            true => top.state.take().and_then(|s| model.step_owned(s, &action)),
            false => top.state.as_ref().and_then(|s| model.step(s, &action)),
        };
        let Some(next) = next else {
            continue;
        };
        if bits.test_and_set(model.fingerprint(&next)) {
            continue;
        }
        missed_expected += bits.miss_chance();
        states += 1;
        // The new state's depth, the initial state being 1.
        let depth = stack.len() + 1;
        max_depth = max_depth.max(depth);
        if let Some(v) = model.violation(&next) {
            // Each step with the time of the state it was taken in, the
            // action each frame took last (this one's included).
            let path = stack
                .iter()
                .map(|f| (f.time, f.actions[f.next - 1].clone()))
                .collect();
            found = Some((path, v));
            break;
        }
        if states >= states_max {
            stopped = Some(Limit::States(states_max));
            break;
        }
        let mut actions = Vec::new();
        model.enabled(&next, &mut actions);
        if depth >= depth_bound {
            // Generated, not expanded (the explorer's convention).
            cut |= !actions.is_empty();
            continue;
        }
        stack.push(Frame::new(model, next, actions));
    }
    let coverage = Coverage {
        log2_bits,
        bits_set: bits.set,
        miss_chance: bits.miss_chance(),
        missed_expected,
        depth_cut: cut,
    };
    let counterexample = found.map(|(steps, violation)| Counterexample { steps, violation });
    // A violation found is definite, as it is for the exact searches; only
    // a search without one is bounded by what its bits may have hidden.
    let limit = match (&counterexample, stopped) {
        (Some(_), _) => None,
        (None, Some(stop)) => Some(stop),
        (None, None) => Some(Limit::BitState(coverage)),
    };
    Outcome {
        states,
        depth: max_depth,
        elapsed: start.elapsed(),
        counterexample,
        limit,
        order: Order::Dfs,
        rss_peak: peak.max(memory::rss_bytes()),
    }
}
