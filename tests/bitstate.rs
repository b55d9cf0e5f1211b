//! `check --search bitstate` (`engine::bitstate`) against the exact
//! explorer: the same states and verdicts where its bits suffice, real
//! counterexamples, and a coverage that says how much a small array missed.
//! Alone in its binary: its bit arrays would grow the resident size that
//! `tests/engine.rs`'s memory budgets watch.

use mcp_streamable_check::{run_search, CheckModel, Limit, Limits, Search};

mod check_support;
use check_support::{model, small_pairs};

/// The steps of `c` replayed on `m` from its initial state end in a state
/// that breaks a property.
fn replays_to_a_violation(m: &CheckModel, c: &mcp_streamable_check::Counterexample) -> bool {
    let mut s = m.initial();
    for (at, a) in &c.steps {
        if s.world.latest_now().as_millis() != *at {
            return false;
        }
        match m.step(&s, a) {
            Some(n) => s = n,
            None => return false,
        }
    }
    m.violation(&s).map(|v| v.id) == Some(c.violation.id)
}

#[test]
fn bit_state_finds_what_an_exact_search_finds_and_never_holds() {
    let (mut compared, mut caught) = (0, 0);
    for (label, m, _) in small_pairs() {
        let exact = run_search(&m, Limits::new(2), Search::Bfs, |_| {});
        let bits = run_search(
            &m,
            Limits::new(1),
            Search::BitState { log2_bits: 28 },
            |_| {},
        );
        let coverage = match (bits.limit, &bits.counterexample) {
            (Some(Limit::BitState(c)), None) => c,
            (None, Some(_)) => Default::default(),
            other => panic!("{label}: {other:?}"),
        };
        match (&exact.counterexample, &bits.counterexample) {
            (None, None) => {
                assert!(!bits.exhaustive(), "{label}: never holds");
                // 2^28 bits (32 MiB) for at most a few hundred thousand
                // states: a collision is so unlikely that the counts agree,
                // and the estimate says so. At 2^25 bits a pair of 60 k
                // states expects about 3e-3 states missed, and any change
                // to the fingerprints draws again: too likely, over every
                // pair, to rest a test on.
                assert!(coverage.missed_expected < 1e-4, "{label}: {coverage:?}");
                assert!(coverage.bits_set <= 3 * bits.states as u64, "{label}");
                if !coverage.depth_cut {
                    assert_eq!(bits.states, exact.states, "{label}: the same space");
                    compared += 1;
                }
            }
            (Some(_), Some(c)) => {
                assert!(
                    replays_to_a_violation(&m, c),
                    "{label}: a real counterexample"
                );
                caught += 1;
            }
            (None, Some(c)) => panic!("{label}: bit-state found {} where none is", c.violation.id),
            (Some(e), None) => {
                // Depth first meets states in another order: behind a
                // state it first met deep, the depth bound may cut what
                // breadth first reaches. Never silently: it says so.
                assert!(
                    coverage.depth_cut,
                    "{label}: {} missed, uncut",
                    e.violation.id
                );
            }
        }
    }
    assert!(compared >= 8, "{compared} holding pairs compared");
    assert!(caught >= 20, "{caught} violations found by bit-state");
}

#[test]
fn a_bit_array_too_small_for_the_model_says_how_much_it_missed() {
    // lifecycle is 143,617 states; 2^20 bits, three a state, fill up.
    let m = model("lifecycle", "FIXED", "FIXED");
    let small = run_search(
        &m,
        Limits::new(1),
        Search::BitState { log2_bits: 20 },
        |_| {},
    );
    let big = run_search(
        &m,
        Limits::new(1),
        Search::BitState { log2_bits: 27 },
        |_| {},
    );
    let (Some(Limit::BitState(s)), Some(Limit::BitState(b))) = (small.limit, big.limit) else {
        panic!("{:?} {:?}", small.limit, big.limit);
    };
    assert!(small.counterexample.is_none() && big.counterexample.is_none());
    assert!(
        small.states < big.states,
        "{} < {}",
        small.states,
        big.states
    );
    assert!(s.miss_chance > 0.01, "{s:?}");
    assert!(s.missed_expected > 100.0, "{s:?}");
    assert!(b.missed_expected < 0.01, "{b:?}");
    assert!(b.miss_chance < s.miss_chance);
}

#[test]
fn an_interrupt_stops_a_bit_state_run_as_bounded() {
    use mcp_streamable_check::Interrupt;
    use std::sync::atomic::{AtomicBool, Ordering};
    let m = model("lifecycle", "FIXED", "FIXED");
    let flag: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let mut limits = Limits::new(1);
    limits.interrupt = Some(Interrupt::new(flag));
    let search = Search::BitState { log2_bits: 24 };
    let out = run_search(&m, limits, search, |p| {
        if p.states > 1_000 {
            flag.store(true, Ordering::Relaxed);
        }
    });
    assert_eq!(out.limit, Some(Limit::Interrupted));
    assert!(out.counterexample.is_none());
    assert!((1_000..143_617).contains(&out.states), "{}", out.states);
    // Set before the run: only the initial state.
    let out = run_search(&m, limits, search, |_| {});
    assert_eq!((out.limit, out.states), (Some(Limit::Interrupted), 1));
}
