//! The symmetry reduction is sound: on every bundled model (and every pair
//! its file lists), the same verdicts and counterexamples exactly as short
//! with it on and off; never more states with it on; and, where clients are
//! interchangeable, far fewer.

#![cfg(feature = "check")]

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use mcp_streamable::check::{run_search, Action, CheckModel, Limits, Scenario, Search};
use std::path::Path;

fn bundled() -> Vec<Scenario> {
    Scenario::load_dir(Path::new("models"))
        .expect("models load")
        .into_iter()
        .map(|(_, s)| s)
        .collect()
}

#[test]
fn symmetry_on_and_off_agree_on_every_bundled_model() {
    let (mut compared, mut reduced) = (0, 0);
    for s in bundled() {
        // One client: every group is a singleton and the reduction is the
        // identity (the other one-client models below show the counts equal);
        // lifecycle is only the biggest of them.
        if s.name == "lifecycle" {
            continue;
        }
        for e in &s.expect {
            let label = format!("{} {} x {}", s.name, e.server, e.client);
            let m = CheckModel::for_expectation(&s, e).expect("presets");
            let interchangeable = m.symmetry.groups().iter().any(|g| g.len() > 1);
            // k interchangeable clients fold at most k! states into one, and
            // nearly that many when few states are symmetric to themselves.
            let orbit: usize = m
                .symmetry
                .groups()
                .iter()
                .map(|g| (1..=g.len()).product::<usize>())
                .product();
            let on = run_search(
                &m.clone().with_symmetry(true),
                Limits::new(2),
                Search::Bfs,
                |_| {},
            );
            let off = run_search(&m.with_symmetry(false), Limits::new(2), Search::Bfs, |_| {});
            assert!(on.exhaustive() && off.exhaustive(), "{label}");
            let id = |o: &mcp_streamable::check::Outcome| {
                o.counterexample
                    .as_ref()
                    .map(|c| (c.violation.id, c.steps.len()))
            };
            assert_eq!(
                id(&on),
                id(&off),
                "{label}: verdict and counterexample length"
            );
            // A run that finds a violation stops when a worker does: its
            // count depends on the threads' timing; only full runs compare.
            if on.counterexample.is_none() {
                if interchangeable {
                    assert!(
                        off.states <= on.states * orbit && on.states * orbit * 3 < off.states * 4,
                        "{label}: {orbit} orders of the clients, {} vs {} states",
                        on.states,
                        off.states
                    );
                    reduced += 1;
                } else {
                    assert_eq!(on.states, off.states, "{label}: nothing to swap");
                }
            }
            compared += 1;
        }
    }
    assert!(compared >= 30, "{compared} pairs compared");
    assert!(reduced >= 1, "a model with interchangeable clients holds");
}

fn three_clients() -> CheckModel {
    let s = bundled()
        .into_iter()
        .find(|s| s.name == "three_clients")
        .expect("bundled");
    CheckModel::new(s, "FIXED", "FIXED").expect("presets")
}

#[test]
fn swapped_clients_share_a_fingerprint_only_with_symmetry_on() {
    let m = three_clients();
    assert_eq!(m.symmetry.groups(), &[vec![0, 1, 2]]);
    let init = m.initial();
    let first = |c: usize| {
        let s = m
            .step(&init, &Action::ClientStep { client: c })
            .expect("enabled");
        // Deliver the request, so the server has minted its first session
        // for whichever client came first.
        let http = *s.world.links.keys().next().expect("one exchange");
        m.step(&s, &Action::DeliverRequest { http })
            .expect("deliverable")
    };
    let (a, b) = (first(0), first(2));
    assert_ne!(a, b, "different clients initialized");
    assert_eq!(
        a.world.server.session_ids().collect::<Vec<_>>(),
        b.world.server.session_ids().collect::<Vec<_>>(),
        "the same session id, minted for another client"
    );
    assert_eq!(m.fingerprint(&a), m.fingerprint(&b));
    let off = m.clone().with_symmetry(false);
    assert_ne!(off.fingerprint(&a), off.fingerprint(&b));

    // Not every difference is a swap: two clients initialized is another state.
    let both = m
        .step(&a, &Action::ClientStep { client: 1 })
        .expect("enabled");
    assert_ne!(m.fingerprint(&a), m.fingerprint(&both));
}

#[test]
fn clients_with_different_scripts_are_never_swapped() {
    let s = bundled()
        .into_iter()
        .find(|s| s.name == "two_clients")
        .expect("bundled");
    let m = CheckModel::new(s, "FIXED", "FIXED").expect("presets");
    assert_eq!(m.symmetry.groups(), &[vec![0], vec![1]]);
    let init = m.initial();
    let a = m
        .step(&init, &Action::ClientStep { client: 0 })
        .expect("enabled");
    let b = m
        .step(&init, &Action::ClientStep { client: 1 })
        .expect("enabled");
    assert_ne!(m.fingerprint(&a), m.fingerprint(&b));
}
