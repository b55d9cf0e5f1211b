//! A finished client is retired (`World::retire_client`, called by the
//! checker's reduction): its end states meet, and what its part would have
//! raised at the end of the run is still raised.

use crate::check_support::bundled;
use mcp_streamable_check::sim::Clocks;
use mcp_streamable_check::{CheckModel, ClientStep, NotifyReach, Scenario, ServerStep, State};
use std::collections::{BTreeSet, HashSet, VecDeque};

/// Every state the reduced search of `m` explores.
fn reachable(m: &CheckModel) -> Vec<State> {
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([m.initial()]);
    let mut states = Vec::new();
    while let Some(s) = queue.pop_front() {
        if !seen.insert(m.fingerprint(&s)) {
            continue;
        }
        let mut next = Vec::new();
        m.enabled(&s, &mut next);
        queue.extend(next.iter().filter_map(|a| m.step(&s, a)));
        states.push(s);
    }
    states
}

/// Bundled `two_clients` under `server`, each client `initialize` + `call`,
/// the server running `script`, `change` applied to the scenario last; a
/// clock per component and per-session notifies.
fn two_calling(
    server: &str,
    script: Vec<ServerStep>,
    change: impl FnOnce(&mut Scenario),
) -> CheckModel {
    let mut s = bundled()
        .into_iter()
        .find(|s| s.name == "two_clients")
        .expect("bundled");
    s.clients = vec![vec![ClientStep::Initialize, ClientStep::Call]; 2];
    s.server = script;
    change(&mut s);
    CheckModel::new(s, server, "FIXED")
        .expect("presets")
        .with_clocks(Clocks::PerComponent)
        .with_notify(NotifyReach::PerSession)
}

/// The server notifying twice, one drop: issue 11's aim with two clients.
fn two_callers(server: &str) -> CheckModel {
    two_calling(server, vec![ServerStep::Notify, ServerStep::Notify], |s| {
        s.bounds.drops = 1;
    })
}

#[test]
fn a_finished_clients_end_states_meet() {
    let m = two_callers("FIXED");
    let states = reachable(&m);
    // Client 0 retired, client 1 not started: what is left of client 0 is
    // its end-of-run flags and whether a deadline was pending; the rest is
    // client 1's notices (delivered to no session yet, or not).
    let met: BTreeSet<u64> = states
        .iter()
        .filter(|s| s.world.monitor.is_retired(0) && s.client_pc[1] == 0)
        .map(|s| m.fingerprint(s))
        .collect();
    assert!(!met.is_empty(), "client 0 never retired");
    assert!(met.len() <= 12, "{} end states of client 0", met.len());
    // Every retired client is gone from the world: no link, no session.
    for s in states.iter().filter(|s| s.world.monitor.is_retired(0)) {
        assert_eq!(s.world.links_of(0).count(), 0);
        assert!(!s.world.session_owner.values().any(|c| *c == 0));
    }
    // Both clients retire in the end states.
    assert!(states
        .iter()
        .any(|s| s.world.monitor.is_retired(0) && s.world.monitor.is_retired(1)));
    assert!(states.len() > 5_000, "{} states", states.len());
}

#[test]
fn a_retired_clients_end_of_run_violations_are_still_raised() {
    // RMCP 3.9 loses a notification written into a stream that was gone
    // (A5, an end-of-run check): where the client that lost it has retired
    // before the run ends, its flag must still make the run's verdict.
    let m = two_callers("RMCP_3_9");
    let states = reachable(&m);
    let carried: Vec<&State> = states
        .iter()
        .filter(|s| s.world.monitor.retired_flag_ids().next().is_some())
        .collect();
    assert!(!carried.is_empty(), "no retired client left a flag");
    // Nothing is raised before the end; at quiescence, the verdict names it.
    let ended: Vec<&&State> = carried
        .iter()
        .filter(|s| {
            let mut next = Vec::new();
            m.enabled(s, &mut next);
            next.is_empty()
        })
        .collect();
    assert!(!ended.is_empty());
    for s in &carried {
        assert!(s.world.monitor.violations().is_empty());
    }
    let ids: BTreeSet<&str> = ended
        .iter()
        .filter_map(|s| m.violation(s))
        .map(|v| v.id)
        .collect();
    assert!(ids.contains("A5"), "{ids:?}");
}

/// Two clients, each `initialize` + `call`, no standalone GET, the server
/// asking the oldest call's client and then notifying, no drop: a client
/// stops early where its `initialize` times out on the way.
fn asked_then_notified() -> CheckModel {
    two_calling(
        "FIXED",
        vec![ServerStep::AskClient, ServerStep::Notify],
        |s| {
            s.settings.background_get = false;
        },
    )
}

#[test]
fn a_client_out_of_the_notifys_reach_retires_before_it() {
    // A client whose `initialize` never reached the server holds no
    // session for a `notify` to reach: it retires while the server's
    // script still has one to run, and the clients after it run once
    // instead of once per way it stopped.
    let m = asked_then_notified();
    let states = reachable(&m);
    let notify_at = m.scenario.server.len() - 1;
    let early = states
        .iter()
        .filter(|s| usize::from(s.server_pc) <= notify_at)
        .filter(|s| (0..2).any(|c| s.world.monitor.is_retired(c)))
        .count();
    assert!(early > 0, "no client retired before the notify");
    // A retired client is owed nothing: the notify records no notice for
    // it, and one it was owed is dropped with it.
    for s in &states {
        for c in 0..2 {
            if s.world.monitor.is_retired(c) {
                assert_eq!(s.notices[c], 0, "retired client {c} owed a notice");
            }
        }
    }
    assert!(states.len() > 1_000, "{} states", states.len());
}
