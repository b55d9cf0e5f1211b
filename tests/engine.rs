//! Our explorer against stateright's checker, and its budgets: the same
//! verdicts and state counts on the bundled models, depth first as well as
//! breadth first, and "bounded" (never "holds") when a budget stops a run.

/// The allocator of the `mcp-streamable` binary: the checker clones and frees
/// millions of states across threads (see docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use mcp_streamable_check::engine::explore;
use mcp_streamable_check::{
    run_search, CheckModel, Interrupt, Limit, Limits, Order, Search, Verdict,
};

mod check_support;
use check_support::{model, small_pairs};

#[test]
fn our_explorer_agrees_with_staterights_checker() {
    let mut holds = 0;
    for (label, m, expected) in small_pairs() {
        // stateright knows nothing of our symmetry reduction (tests/checker/reductions.rs).
        let m = m.with_symmetry(false);
        // Our explorer on the graph stateright searches: `run_search`
        // would search a reduced counterexample again without the
        // reduction, on another graph, whose shortest path may be longer
        // (a client retired out of a notify's reach skips the deliveries
        // that reach nothing).
        let ours = explore(&m, Limits::new(2), |_| {});
        let theirs = run_search(&m, Limits::new(2), Search::StaterightBfs, |_| {});
        assert_eq!(ours.order, Order::Bfs, "{label}");
        assert!(ours.exhaustive(), "{label}");
        match (&ours.counterexample, &theirs.counterexample) {
            (None, None) => {
                assert_eq!(ours.states, theirs.states, "{label}: the same states");
                assert_eq!(expected, Verdict::Holds, "{label}");
                holds += 1;
            }
            (Some(o), Some(t)) => {
                // stateright judges a state when it pops it, we when we
                // generate it: ours can only be as short or shorter.
                assert!(
                    o.steps.len() <= t.steps.len(),
                    "{label}: {} vs {}",
                    o.steps.len(),
                    t.steps.len()
                );
                let Verdict::Violates(ids) = &expected else {
                    panic!("{label}: expected holds, found {}", o.violation.id)
                };
                assert!(
                    ids.iter().any(|i| i == o.violation.id),
                    "{label}: {}",
                    o.violation.id
                );
            }
            (o, t) => panic!(
                "{label}: ours {:?}, stateright {:?}",
                o.as_ref().map(|c| c.violation.id),
                t.as_ref().map(|c| c.violation.id)
            ),
        }
    }
    assert!(holds >= 8, "{holds} holding pairs compared");
}

#[test]
fn depth_first_finds_the_same_states_and_verdicts() {
    let mut checked = 0;
    for (label, m, _) in small_pairs() {
        // Both on the same graph (the reduced one where the model reduces).
        let bfs = explore(&m, Limits::new(2), |_| {});
        let dfs = run_search(&m, Limits::new(2), Search::Dfs, |_| {});
        assert_eq!(dfs.order, Order::Dfs);
        let verdict =
            |o: &mcp_streamable_check::Outcome| o.counterexample.as_ref().map(|c| c.violation.id);
        assert_eq!(verdict(&bfs).is_some(), verdict(&dfs).is_some(), "{label}");
        match (&bfs.counterexample, &dfs.counterexample) {
            (None, _) => {
                assert!(
                    dfs.exhaustive(),
                    "{label}: depth first was cut: {:?}",
                    dfs.limit
                );
                assert_eq!(
                    bfs.states, dfs.states,
                    "{label}: the same space, searched otherwise"
                );
                checked += 1;
            }
            (Some(b), Some(d)) => {
                assert!(b.steps.len() <= d.steps.len(), "{label}: BFS is shortest");
            }
            (Some(_), None) => unreachable!("compared above"),
        }
    }
    assert!(checked >= 8, "{checked} holding pairs compared");
}

#[test]
fn a_state_budget_gives_bounded_never_holds() {
    let m = model("lifecycle", "FIXED", "FIXED");
    let mut limits = Limits::new(2);
    limits.states_max = Some(2_000);
    let out = run_search(&m, limits, Search::Bfs, |_| {});
    assert_eq!(out.limit, Some(Limit::States(2_000)));
    assert!(!out.exhaustive());
    assert!(out.counterexample.is_none());
    assert!(
        (2_000..2_100).contains(&out.states),
        "stops at the budget: {}",
        out.states
    );
    // The same model without the budget is far bigger.
    assert!(out.depth < 26, "{}", out.depth);
}

#[test]
fn an_interrupt_stops_a_run_as_bounded_breadth_and_depth_first() {
    use std::sync::atomic::{AtomicBool, Ordering};
    // A full lifecycle run is 151,340 states; the flag is set from the
    // progress callback, which the watching thread calls after half a second.
    for search in [Search::Bfs, Search::Dfs] {
        let flag: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let m = model("lifecycle", "FIXED", "FIXED");
        let mut limits = Limits::new(2);
        limits.interrupt = Some(Interrupt::new(flag));
        let out = run_search(&m, limits, search, |p| {
            if p.states > 1_000 {
                flag.store(true, Ordering::Relaxed);
            }
        });
        assert_eq!(out.limit, Some(Limit::Interrupted), "{search:?}");
        assert!(!out.exhaustive());
        assert!(out.counterexample.is_none());
        assert!(
            (1_000..151_340).contains(&out.states),
            "{search:?}: {}",
            out.states
        );
    }
    // Limits compare their interrupts by the flag they watch.
    let other: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let mine: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    assert_eq!(Interrupt::new(mine), Interrupt::new(mine));
    assert_ne!(Interrupt::new(mine), Interrupt::new(other));
    // Set before the run: only the initial state.
    let flag: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(true)));
    let mut limits = Limits::new(1);
    limits.interrupt = Some(Interrupt::new(flag));
    let out = run_search(
        &model("lifecycle", "FIXED", "FIXED"),
        limits,
        Search::Bfs,
        |_| {},
    );
    assert_eq!((out.limit, out.states), (Some(Limit::Interrupted), 1));
}

#[test]
fn a_memory_budget_stops_cleanly() {
    let m = model("competing_get_streams_3", "FIXED", "EVENTSOURCE_RECONNECT");
    let mut limits = Limits::new(2);
    limits.memory_max = Some(1 << 20); // less than the process already holds
    let out = run_search(&m, limits, Search::Bfs, |_| {});
    assert_eq!(out.limit, Some(Limit::Memory(1 << 20)));
    assert!(out.counterexample.is_none());
    assert!(out.states < 202_845, "{}", out.states);
}

#[test]
fn breadth_first_turns_depth_first_when_the_frontier_outgrows_its_share() {
    let m = model("competing_get_streams_3", "FIXED", "EVENTSOURCE_RECONNECT");
    let whole = run_search(&m, Limits::new(2), Search::Bfs, |_| {});
    assert_eq!(whole.order, Order::Bfs);
    // Any growth of the resident size outgrows a frontier share of zero:
    // breadth first gives way at its first reading, and depth first
    // finishes. No hard budget, so the verdict does not depend on what the
    // tests running beside this one hold (the three-quarters rule of the
    // hard budget is `frontier_outgrew`'s unit test).
    let mut limits = Limits::new(2);
    limits.memory_max = None;
    limits.bfs_memory_max = Some(0);
    let out = run_search(&m, limits, Search::Bfs, |_| {});
    assert_eq!(out.order, Order::BfsThenDfs { depth: 1 });
    assert!(out.exhaustive());
    assert!(out.counterexample.is_none());
    assert_eq!(
        out.states, whole.states,
        "the same space, searched otherwise"
    );

    // And a buggy preset is still caught after the switch.
    let bad = model(
        "resume_finished_request_stream",
        "RMCP_3_9",
        "EVENTSOURCE_RECONNECT",
    );
    let out = run_search(&bad, limits, Search::Bfs, |_| {});
    assert_eq!(out.counterexample.map(|c| c.violation.id), Some("B5"));
}

/// `check`'s default search: breadth first within its share, then depth
/// first; the same states where the model holds, and where it does not, a
/// counterexample as short as breadth first's alone, found again breadth
/// first after depth first met one.
#[test]
fn the_default_search_turns_depth_first_and_keeps_shortest_counterexamples() {
    // A share of zero: breadth first gives way at its first reading.
    let mut limits = Limits::new(2);
    limits.memory_max = None;
    limits.bfs_memory_max = Some(0);
    let m = model("competing_get_streams_3", "FIXED", "EVENTSOURCE_RECONNECT");
    let whole = run_search(&m, Limits::new(2), Search::Bfs, |_| {});
    let out = run_search(&m, limits, Search::Auto, |_| {});
    assert_eq!(out.order, Order::BfsThenDfs { depth: 1 });
    assert!(out.exhaustive() && out.counterexample.is_none());
    assert_eq!(out.states, whole.states, "the same space");
    assert!(out.states > 10_000, "{}", out.states);

    // Depth first alone meets a longer one on at least one of them: the
    // search again is what makes it shortest.
    let mut longer = false;
    for (name, server, client, id) in [
        (
            "resume_finished_request_stream",
            "RMCP_3_9",
            "EVENTSOURCE_RECONNECT",
            "B5",
        ),
        ("three_clients", "RMCP_0_16", "FIXED", "A5"),
    ] {
        let bad = model(name, server, client);
        let depth_first = run_search(&bad, limits, Search::Dfs, |_| {});
        let breadth_first = run_search(&bad, Limits::new(2), Search::Bfs, |_| {});
        let out = run_search(&bad, limits, Search::Auto, |_| {});
        let len = |o: &mcp_streamable_check::Outcome| {
            o.counterexample.as_ref().map(|c| c.steps.len()).unwrap()
        };
        assert_eq!(
            out.counterexample.as_ref().map(|c| c.violation.id),
            Some(id),
            "{name}"
        );
        assert_eq!(len(&out), len(&breadth_first), "{name}: a shortest one");
        assert_ne!(
            out.order,
            Order::BfsThenDfs { depth: 1 },
            "{name}: searched again"
        );
        assert!(
            len(&depth_first) >= len(&out),
            "{name}: depth first's {} against {}",
            len(&depth_first),
            len(&out)
        );
        longer |= len(&depth_first) > len(&out);
    }
    assert!(
        longer,
        "depth first met a shortest counterexample everywhere"
    );
}

#[test]
fn random_walks_are_never_exhaustive() {
    let m = model("competing_get_streams_2", "FIXED", "FIXED");
    let out = run_search(
        &m,
        Limits::new(1),
        Search::Simulation {
            seed: 7,
            limit: std::time::Duration::from_millis(300),
        },
        |_| {},
    );
    assert!(out.counterexample.is_none());
    assert_eq!(out.limit, Some(Limit::Walks));
    assert!(!out.exhaustive(), "random walks prove nothing");
}

/// Models whose states the tests below walk: one, two and three clients,
/// buggy presets, a clock per component.
const WALKED: [(&str, &str, &str); 5] = [
    ("lifecycle", "FIXED", "FIXED"),
    ("two_clients", "FIXED", "FIXED"),
    ("three_clients", "FIXED", "FIXED"),
    (
        "competing_get_streams_2",
        "RMCP_0_16",
        "EVENTSOURCE_RECONNECT",
    ),
    (
        "stale_notification_after_registration",
        "MCP_GO_0_44",
        "FIXED",
    ),
];

/// The depth a breadth-first run reports is that of its deepest state, the
/// initial state being depth 1, and states at the model's depth bound
/// generated but not expanded: here against a plain level-by-level walk,
/// on one thread and on two.
#[test]
fn breadth_first_reports_the_depth_of_its_last_level() {
    for (name, server, client) in [
        ("competing_get_streams_3", "FIXED", "FIXED"),
        ("stale_notification_after_registration", "FIXED", "FIXED"),
        ("response_on_background_get", "FIXED", "FIXED"),
    ] {
        let m = model(name, server, client);
        let bound = m.scenario.bounds.depth;
        let mut seen = std::collections::HashSet::from([m.fingerprint(&m.initial())]);
        let (mut level, mut levels) = (vec![m.initial()], 1);
        let mut actions = Vec::new();
        while levels < bound {
            let mut next = Vec::new();
            for s in &level {
                actions.clear();
                m.enabled(s, &mut actions);
                for n in actions.iter().filter_map(|a| m.step(s, a)) {
                    if seen.insert(m.fingerprint(&n)) {
                        next.push(n);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
            levels += 1;
        }
        for threads in [1, 2] {
            let out = run_search(&m, Limits::new(threads), Search::Bfs, |_| {});
            assert!(out.counterexample.is_none(), "{name}");
            assert_eq!(out.states, seen.len(), "{name}: the same states");
            assert_eq!(out.depth, levels, "{name} on {threads} thread(s)");
        }
    }
}

/// Calls `f` on up to `max` distinct states of `m` (depth first from the
/// initial state) with their enabled actions.
fn walk(
    m: &CheckModel,
    max: usize,
    mut f: impl FnMut(&mcp_streamable_check::State, &[mcp_streamable_check::Action]),
) {
    let mut seen = std::collections::HashSet::new();
    let mut todo = vec![m.initial()];
    let mut actions = Vec::new();
    while let Some(s) = todo.pop() {
        if seen.len() >= max || !seen.insert(m.fingerprint(&s)) {
            continue;
        }
        actions.clear();
        m.enabled(&s, &mut actions);
        f(&s, &actions);
        todo.extend(actions.iter().filter_map(|a| m.step(&s, a)));
    }
}

/// The judge asks whether anything is enabled (`any_enabled`, which stops
/// at the first action) instead of listing every action of every new state:
/// it must answer as the lists do, in every state reached, quiet ones (where
/// the end-of-run checks apply) included.
#[test]
fn whether_anything_is_enabled_agrees_with_the_lists() {
    let (mut busy, mut quiet) = (0usize, 0usize);
    for (name, server, client) in WALKED {
        let m = model(name, server, client);
        walk(&m, 3_000, |s, actions| {
            let mut all = Vec::new();
            m.all_enabled(s, &mut all);
            assert_eq!(m.any_enabled(s), !actions.is_empty(), "{name}");
            assert_eq!(all.is_empty(), actions.is_empty(), "{name}");
            if actions.is_empty() {
                quiet += 1;
            } else {
                busy += 1;
            }
        });
    }
    assert!(quiet > 0 && busy > 1_000, "{quiet} quiet, {busy} busy");
}

/// The explorer makes the last successor of a state from the state itself
/// (`step_owned`): it must be the state `step` makes from a copy, in every
/// state reached, for every enabled action.
#[test]
fn a_step_from_the_state_itself_equals_a_step_from_a_copy() {
    let mut compared = 0usize;
    for (name, server, client) in WALKED {
        let m = model(name, server, client);
        walk(&m, 3_000, |s, actions| {
            for a in actions {
                assert_eq!(m.step(s, a), m.step_owned(s.clone(), a), "{name}: {a:?}");
                compared += 1;
            }
        });
    }
    assert!(compared > 10_000, "only {compared} steps compared");
}

/// The checker's worlds share a memo of client steps (`sim::ClientMemo`):
/// a step through it must give the state a step in place gives, in every
/// state reached, for every enabled action, and the memo must be used.
#[test]
fn a_memoized_client_step_equals_a_step_in_place() {
    use mcp_streamable::unhashed::Unhashed;
    let mut compared = 0usize;
    let mut hits = 0u64;
    for (name, server, client) in WALKED {
        let memoized = model(name, server, client);
        let in_place = memoized.clone().with_memo(false);
        walk(&memoized, 3_000, |s, actions| {
            let mut plain = s.clone();
            plain.world.memo = Unhashed(None);
            for a in actions {
                let through = memoized.step(s, a);
                let stepped = in_place.step(&plain, a);
                assert_eq!(through, stepped, "{name}: {a:?}");
                if let (Some(t), Some(p)) = (&through, &stepped) {
                    // Equal also in what equality does not see, and in
                    // what the monitor was told.
                    assert_eq!(t.world.monitor, p.world.monitor, "{name}: {a:?}");
                    assert_eq!(t.world.outcomes, p.world.outcomes, "{name}: {a:?}");
                }
                compared += 1;
            }
        });
        hits += memoized.memo.as_ref().map_or(0, |m| m.hits());
    }
    assert!(compared > 10_000, "only {compared} steps compared");
    assert!(hits > 1_000, "the memo was hit {hits} times");
}

/// A depth-first worker localizes a state it takes from another worker
/// (`Explorable::localize`, `World::localize`): the copy must be the same
/// state, with the same fingerprint, and step exactly as the original in
/// every state reached, for every enabled action; and it must share no
/// client core, server side or exchange with the original any more (that
/// is what it is for).
#[test]
fn a_localized_state_is_the_same_state_and_shares_nothing_counted() {
    use mcp_streamable_check::engine::Explorable;
    let mut compared = 0usize;
    for (name, server, client) in WALKED {
        let m = model(name, server, client);
        walk(&m, 2_000, |s, actions| {
            let mut own = s.clone();
            Explorable::localize(&m, &mut own);
            assert_eq!(&own, s, "{name}");
            assert_eq!(m.fingerprint(&own), m.fingerprint(s), "{name}");
            let (w, o) = (&s.world, &own.world);
            for (a, b) in w.clients.iter().zip(&o.clients) {
                assert!(
                    !std::ptr::eq(&**a, &**b),
                    "{name}: a client core still shared"
                );
            }
            assert!(
                !std::ptr::eq(&*w.server, &*o.server),
                "{name}: the server side"
            );
            for (a, b) in w.links.values().zip(o.links.values()) {
                assert!(
                    !std::ptr::eq(&**a, &**b),
                    "{name}: an exchange still shared"
                );
            }
            for a in actions {
                assert_eq!(m.step(s, a), m.step(&own, a), "{name}: {a:?}");
                compared += 1;
            }
            // A second time: nothing is shared, nothing is copied.
            let core = &*own.world.clients[0] as *const _;
            Explorable::localize(&m, &mut own);
            assert!(std::ptr::eq(core, &*own.world.clients[0]), "{name}");
        });
    }
    assert!(compared > 10_000, "only {compared} steps compared");
}
