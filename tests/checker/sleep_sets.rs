//! The reduction's sleep sets are sound (`crates/mcp-streamable-check/src/sleep.rs`): every step
//! a state leaves out makes a state that an explored path makes too,
//! checked in every state of the bundled models; and on every bundled model
//! they keep every state, verdict and counterexample length while the
//! search takes fewer steps.

use crate::check_support::{
    agrees, all_enabled, apart_models, apart_runs, bfs_on_one_thread, bundled, explored, par_map,
};
use mcp_streamable_check::{Action, CheckModel};
use std::collections::{HashSet, VecDeque};

fn label(m: &CheckModel) -> String {
    format!("{} {} x {}", m.scenario.name, m.server_name, m.client_name)
}

/// What each step left out, by kind.
#[derive(Default, Debug)]
struct LeftOut {
    ticks: usize,
    idles: usize,
}

/// Breadth first over `m` (at most `max` states): for every state `t` made
/// by step `a` from `s`, each step `t` leaves out makes a state that an
/// explored path makes. A tick left out after `Idle(c)` makes the state
/// `s` makes by its own tick, which `s` explores. An idle step left out
/// after `a` makes the state `s·Idle(c)·a`: `Idle(c)` is enabled at `s`,
/// and `s·Idle(c)` explores `a`; `s` explores `Idle(c)` or leaves it out,
/// which the same check made of `s`'s own parent (by induction, the
/// sleep set theorem).
fn check_left_out(m: &CheckModel, max: usize) -> LeftOut {
    let all = m.clone().with_sleep_sets(false);
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([m.initial()]);
    let mut left = LeftOut::default();
    while let Some(s) = queue.pop_front() {
        if seen.len() >= max {
            break;
        }
        if !seen.insert(m.fingerprint(&s)) || !s.world.monitor.violations().is_empty() {
            continue;
        }
        let here = explored(m, &s);
        for a in &here {
            let Some(t) = m.step(&s, a) else { continue };
            let kept = explored(m, &t);
            for b in explored(&all, &t).iter().filter(|b| !kept.contains(b)) {
                match b {
                    Action::TickClient { client } => {
                        assert_eq!(*a, Action::Idle { client: *client }, "{}", label(m));
                        assert!(here.contains(b), "{}: the tick is not explored", label(m));
                        assert!(
                            m.step(&t, b) == m.step(&s, b),
                            "{}: {b:?} after {a:?} is not {b:?} alone",
                            label(m)
                        );
                        left.ticks += 1;
                    }
                    Action::Idle { .. } => {
                        // Explored from `s`, or asleep there already (put
                        // to sleep further up, or by the server's `notify`
                        // explored alone): enabled at `s` either way.
                        assert!(
                            all_enabled(m, &s).contains(b),
                            "{}: {b:?} asleep after {a:?} but not enabled before",
                            label(m)
                        );
                        let idled = m.step(&s, b).expect("enabled");
                        assert!(
                            explored(m, &idled).contains(a),
                            "{}: {a:?} is not explored after {b:?}",
                            label(m)
                        );
                        assert!(
                            m.step(&t, b) == m.step(&idled, a),
                            "{}: {a:?} and {b:?} do not commute",
                            label(m)
                        );
                        left.idles += 1;
                    }
                    other => panic!("{}: left out {other:?}, which sleeps never", label(m)),
                }
            }
            queue.push_back(t);
        }
    }
    left
}

#[test]
fn every_step_left_out_is_made_by_an_explored_path() {
    let models: Vec<CheckModel> = bundled().iter().flat_map(apart_models).collect();
    let mut left = LeftOut::default();
    for l in par_map(&models, |m| check_left_out(m, 20_000)) {
        left.ticks += l.ticks;
        left.idles += l.idles;
    }
    println!("{left:?}");
    // Both kinds act on the bundled models (a test that checked nothing
    // would pass as well).
    assert!(left.ticks >= 100, "{left:?}");
    assert!(left.idles >= 100, "{left:?}");
}

/// Breadth first over all of `m`: distinct states (by fingerprint) and the
/// steps taken to reach them.
fn states_and_steps(m: &CheckModel) -> (usize, usize) {
    let mut seen = HashSet::from([m.fingerprint(&m.initial())]);
    let mut queue = VecDeque::from([m.initial()]);
    let mut steps = 0;
    while let Some(s) = queue.pop_front() {
        if !s.world.monitor.violations().is_empty() {
            continue;
        }
        for a in explored(m, &s) {
            if let Some(t) = m.step(&s, &a) {
                steps += 1;
                if seen.insert(m.fingerprint(&t)) {
                    queue.push_back(t);
                }
            }
        }
    }
    (seen.len(), steps)
}

#[test]
fn sleep_sets_keep_every_state_verdict_and_counterexample_length() {
    // lifecycle is the biggest: `check --no-reduction` against `check`
    // compares it by hand (docs/reduction.md).
    let steps = par_map(apart_runs(), |(on, found_on)| {
        let off = on.clone().with_sleep_sets(false);
        let name = label(on);
        let found_off = bfs_on_one_thread(&off);
        agrees(&name, found_on, &found_off);
        let ((states, on_steps), (off_states, off_steps)) =
            (states_and_steps(on), states_and_steps(&off));
        assert_eq!(states, off_states, "{name}: the states reached");
        assert!(
            on_steps <= off_steps,
            "{name}: {on_steps} steps, {off_steps} without"
        );
        (on_steps, off_steps)
    });
    let compared = steps.len();
    let fewer = steps.iter().filter(|(on, off)| on < off).count();
    let steps_on: usize = steps.iter().map(|s| s.0).sum();
    let steps_off: usize = steps.iter().map(|s| s.1).sum();
    println!("{compared} compared, {fewer} with fewer steps: {steps_on} against {steps_off}");
    assert!(compared >= 30, "{compared}");
    assert!(fewer >= 5, "only {fewer} models took fewer steps");
}
