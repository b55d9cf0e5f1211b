//! The checker's reductions are sound: on every bundled model (and every
//! pair its file lists), the same verdicts and counterexamples exactly as
//! short with each on and off. The symmetry reduction never gives more
//! states and, where clients are interchangeable, far fewer; naming by
//! exchange folds the orders in which requests arrive.

use crate::check_support::{
    bfs_on_one_thread, bfs_within, bundled, par_map, verdict, TOO_BIG_UNREDUCED,
};

use mcp_streamable_check::sim::Naming;
use mcp_streamable_check::{Action, CheckModel, Outcome};
use std::sync::OnceLock;

/// One bundled pair's run: its label, model, whether it has
/// interchangeable clients and how many orders of them there are, and the
/// outcome with symmetry on and naming by arrival (the baseline both tests
/// compare against, run once).
struct Baseline {
    label: String,
    model: CheckModel,
    interchangeable: bool,
    orbit: usize,
    outcome: Outcome,
}

fn baselines() -> &'static [Baseline] {
    static RUNS: OnceLock<Vec<Baseline>> = OnceLock::new();
    RUNS.get_or_init(|| {
        // The models too big unreduced (`TOO_BIG_UNREDUCED`), and the two
        // models with a hijacking client, which fork four exchanges at once
        // (millions of states by arrival);
        // `check --arrival-naming` cross-checks them by hand
        // (docs/reduction.md).
        let by_hand = ["session_hijack", "resume_from_another_sessions_event"];
        let mut pairs = Vec::new();
        for s in bundled() {
            let name = s.name.as_str();
            if by_hand.contains(&name) || TOO_BIG_UNREDUCED.contains(&name) {
                continue;
            }
            for e in &s.expect {
                let m = CheckModel::for_expectation(&s, e).expect("presets");
                pairs.push((format!("{} {} x {}", s.name, e.server, e.client), m));
            }
        }
        par_map(&pairs, |(label, m)| {
            // k interchangeable clients fold at most k! states into one,
            // and nearly that many when few states are symmetric to themselves.
            let orbit: usize = m
                .symmetry
                .groups()
                .iter()
                .map(|g| (1..=g.len()).product::<usize>())
                .product();
            let model = m.clone().with_symmetry(true).with_naming(Naming::Arrival);
            Baseline {
                label: label.clone(),
                interchangeable: orbit > 1,
                orbit,
                outcome: bfs_on_one_thread(&model),
                model,
            }
        })
    })
}

/// The most states a search without the partial-order reduction may take
/// in [`symmetry_on_and_off_agree_on_every_bundled_model`] (with symmetry;
/// `k!` times that without).
const UNREDUCED_MAX: usize = 150_000;

#[test]
fn symmetry_on_and_off_agree_on_every_bundled_model() {
    let (mut compared, mut reduced, mut folded) = (0, 0, 0);
    let offs = par_map(baselines(), |b| {
        bfs_on_one_thread(&b.model.clone().with_symmetry(false))
    });
    // Where the partial-order reduction acts, it runs first the component
    // of the least client index of a rank (`CheckModel::ample`), so a state
    // and its mirror run different clients first and continue apart: the
    // search without symmetry is not the one with it unfolded, and its
    // size is bounded by no orbit (FIXED x TS_SDK_2_4 on
    // `cancelled_calls_left_open_two_clients`: 2.2 times, two orders of
    // two clients). A tie broken by the clients' parts instead would be
    // mirrored, but flips from client to client as their parts change and
    // lets the interleavings back in (`three_clients_with_gets`: 251,393
    // states, 1,347,911 so). There the counts are compared unreduced, where
    // the bound is exact, for the pairs whose unreduced search is small
    // enough for CI (`UNREDUCED_MAX`); the reduced runs compare verdicts.
    let unreduced = par_map(baselines(), |b| {
        if !(b.interchangeable && b.model.reduces() && b.outcome.counterexample.is_none()) {
            return None;
        }
        let full = |o: Outcome| o.exhaustive().then_some(o);
        let m = b.model.clone().with_reduction(false);
        let on = full(bfs_within(&m, Some(UNREDUCED_MAX)))?;
        let off = full(bfs_within(
            &m.with_symmetry(false),
            Some(UNREDUCED_MAX * b.orbit + 1),
        ))?;
        Some((on, off))
    });
    for ((b, off), unreduced) in baselines().iter().zip(offs).zip(unreduced) {
        let (label, on) = (&b.label, &b.outcome);
        assert_eq!(
            verdict(on),
            verdict(&off),
            "{label}: verdict and counterexample length"
        );
        // A run that finds a violation stops when a worker does: its
        // count depends on the threads' timing; only full runs compare.
        if on.counterexample.is_none() {
            if b.interchangeable {
                let orbit = b.orbit;
                // The counts the orbit bounds exactly (none where only the
                // reduced searches ended within the budget).
                let counts = match &unreduced {
                    Some((on, off)) => {
                        assert_eq!(verdict(on), verdict(off), "{label}: unreduced");
                        reduced += 1;
                        Some((on, off))
                    }
                    None => (!b.model.reduces()).then_some((on, &off)),
                };
                if let Some((on, off)) = counts {
                    assert!(
                        on.states <= off.states && off.states <= on.states * orbit,
                        "{label}: {orbit} orders of the clients, {} vs {} states",
                        on.states,
                        off.states
                    );
                }
                // Nearly k! where the model interleaves the clients' steps
                // (it is not written for the partial-order reduction).
                if !b.model.reduces() {
                    assert!(
                        on.states * orbit * 3 < off.states * 4,
                        "{label}: {orbit} orders of the clients, {} vs {} states",
                        on.states,
                        off.states
                    );
                    folded += 1;
                }
            } else {
                assert_eq!(on.states, off.states, "{label}: nothing to swap");
            }
        }
        compared += 1;
    }
    assert!(compared >= 30, "{compared} pairs compared");
    assert!(folded >= 1, "a model with interchangeable clients holds");
    assert!(
        reduced >= 1,
        "a model the partial-order reduction acts on, compared unreduced"
    );
}

#[test]
fn naming_by_exchange_and_by_arrival_agree_on_every_bundled_model() {
    let (mut compared, mut folded) = (0, 0);
    let exchanges = par_map(baselines(), |b| {
        bfs_on_one_thread(&b.model.clone().with_naming(Naming::ByExchange))
    });
    for (b, by_exchange) in baselines().iter().zip(exchanges) {
        let (label, arrival) = (&b.label, &b.outcome);
        assert_eq!(
            verdict(arrival),
            verdict(&by_exchange),
            "{label}: verdict and counterexample length"
        );
        if arrival.counterexample.is_none() {
            // Where clients differ, every order of their requests folds
            // into one; identical clients were folded by the symmetry
            // already, which names by exchange keep only in part (a few
            // more states on three_clients: docs/reduction.md).
            if !b.interchangeable {
                assert!(
                    by_exchange.states <= arrival.states,
                    "{label}: {} by exchange vs {} by arrival",
                    by_exchange.states,
                    arrival.states
                );
            }
            if by_exchange.states * 3 <= arrival.states {
                folded += 1;
            }
        }
        compared += 1;
    }
    assert!(compared >= 30, "{compared} pairs compared");
    assert!(
        folded >= 3,
        "{folded} models at least 3x smaller by exchange"
    );
}

#[test]
fn two_orders_of_arrival_are_one_state_only_when_named_by_exchange() {
    let s = bundled()
        .into_iter()
        .find(|s| s.name == "two_clients")
        .expect("bundled");
    let base = CheckModel::new(s, "FIXED", "FIXED").expect("presets");
    for (naming, folded) in [(Naming::ByExchange, true), (Naming::Arrival, false)] {
        let m = base.clone().with_naming(naming);
        let mut sent = m.initial();
        for client in [0, 1] {
            sent = m
                .step(&sent, &Action::ClientStep { client })
                .expect("enabled");
        }
        let https: Vec<_> = sent.world.links.keys().copied().collect();
        assert_eq!(https.len(), 2, "one initialize each");
        let deliver = |order: [usize; 2]| {
            order.iter().fold(sent.clone(), |s, &i| {
                m.step(&s, &Action::DeliverRequest { http: https[i] })
                    .expect("deliverable")
            })
        };
        let (a, b) = (deliver([0, 1]), deliver([1, 0]));
        // Nothing names the order of arrival then: not the server, the
        // monitor, the network, nor the application's queue (which keeps
        // only its calls in arrival order, for a server step's "oldest call").
        let (wa, wb) = (&a.world, &b.world);
        // By arrival, the first session minted has the same id whichever
        // client asked: the server alike, but which client holds which id
        // (and the exchange each one's request became) differs.
        let alike = wa.server == wb.server
            && wa.monitor == wb.monitor
            && wa.by_server == wb.by_server
            && wa.clients == wb.clients
            && wa.links == wb.links
            && wa.server_pending == wb.server_pending;
        assert_eq!(alike, folded, "{naming:?}");
        assert_eq!(a == b, folded, "{naming:?}: the whole state");
        assert_eq!(a.world.server.session_ids().count(), 2);
    }
}

fn three_clients() -> CheckModel {
    let s = bundled()
        .into_iter()
        .find(|s| s.name == "three_clients")
        .expect("bundled");
    // The symmetry folds arrival orders of identical clients only while the
    // server names by arrival (the first session minted is the same id
    // whichever client asked).
    CheckModel::new(s, "FIXED", "FIXED")
        .expect("presets")
        .with_naming(Naming::Arrival)
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
