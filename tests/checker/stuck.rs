//! L2 is never a false alarm: wherever a state is judged to leave a request
//! waiting for ever, no continuation without time (no tick, no idle, so no
//! deadline) gives that request an outcome. Checked on every L2 state of
//! every small bundled pair, the per-client judgment of models that keep
//! their components apart included: a step the judgment counts in another
//! client's component (an answer in a session another client opened, as a
//! server sharing one stateless transport gives) must not be one that could
//! end the request.

use crate::check_support::{all_enabled, par_map, small_pairs};
use mcp_streamable_check::{Action, CheckModel, State};
use std::collections::{HashSet, VecDeque};

/// States searched per pair, L2 states followed per pair, and states
/// searched from each of them.
const STATES_MAX: usize = 20_000;
const STUCK_MAX: usize = 25;
const AFTER_MAX: usize = 4_000;

fn is_time(a: &Action) -> bool {
    matches!(
        a,
        Action::Tick | Action::TickClient { .. } | Action::Idle { .. }
    )
}

/// A state reachable from `stuck` without a step of time where one of the
/// requests waiting in `stuck` of a client the judgment names (`detail`:
/// "client 1's 2, ...") has its outcome, if any. Where components are
/// apart, a client is judged alone: another's request may still end.
fn outcome_without_time(m: &CheckModel, stuck: &State, detail: &str) -> Option<String> {
    let waiting: Vec<_> = stuck
        .world
        .waiting_requests()
        .filter(|(c, _)| detail.contains(&format!("client {c}'s ")))
        .cloned()
        .collect();
    assert!(!waiting.is_empty(), "no waiting client named in {detail:?}");
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([stuck.clone()]);
    while let Some(s) = queue.pop_front() {
        if seen.len() >= AFTER_MAX || !seen.insert(m.fingerprint(&s)) {
            continue;
        }
        let still: Vec<_> = s.world.waiting_requests().cloned().collect();
        if let Some(ended) = waiting.iter().find(|w| !still.contains(w)) {
            return Some(format!("client {}'s {:?}", ended.0, ended.1));
        }
        for a in all_enabled(m, &s).iter().filter(|a| !is_time(a)) {
            if let Some(t) = m.step(&s, a) {
                queue.push_back(t);
            }
        }
    }
    None
}

/// The L2 states of `m` (breadth first, unreduced, within the budgets),
/// each with a request of its that a continuation without time ends.
fn false_alarms(m: &CheckModel) -> (usize, Vec<String>) {
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([m.initial()]);
    let (mut stuck, mut wrong) = (0, Vec::new());
    while let Some(s) = queue.pop_front() {
        if seen.len() >= STATES_MAX || stuck >= STUCK_MAX {
            break;
        }
        if !seen.insert(m.fingerprint(&s)) {
            continue;
        }
        if let Some(v) = m.violation(&s) {
            stuck += 1;
            if let Some(ended) = outcome_without_time(m, &s, &v.detail) {
                wrong.push(format!("{} ({ended} ends)", v.detail));
            }
            continue;
        }
        for a in all_enabled(m, &s) {
            if let Some(t) = m.step(&s, &a) {
                queue.push_back(t);
            }
        }
    }
    (stuck, wrong)
}

#[test]
fn a_request_judged_stuck_gets_no_outcome_without_a_deadline() {
    let pairs: Vec<_> = small_pairs()
        .into_iter()
        .map(|(label, mut m, _)| {
            m.judge = vec!["L2".into()];
            (label, m.with_reduction(false))
        })
        .collect();
    let found = par_map(&pairs, |(label, m)| (label.clone(), false_alarms(m)));
    let mut stuck_states = 0;
    let mut shared_apart = false;
    for (label, (stuck, wrong)) in &found {
        assert!(wrong.is_empty(), "{label}: {wrong:?}");
        stuck_states += stuck;
        shared_apart |=
            label.starts_with("stateless_requests_with_one_id TS_SDK_1_25_SHARED") && *stuck > 0;
    }
    println!("{stuck_states} states judged L2, none a false alarm");
    assert!(stuck_states >= 200, "{stuck_states} L2 states followed");
    assert!(
        shared_apart,
        "the shared stateless transport's L2 is followed"
    );
}
