//! The partial-order reduction is sound (`crates/mcp-streamable-check/src/ample.rs`): where it
//! says the clients' components are apart, they are, in every state of
//! several models, checked by stepping both orders; a relation that is
//! wrong (a drop budget shared by all clients, a `notify` reaching every
//! session in one step) is caught by the same check; and on every bundled
//! model, the reduction keeps every verdict and counterexample length while
//! it explores fewer states.

use crate::check_support::{
    agrees, all_enabled, apart_runs, bfs_on_one_thread, bundled, calling, par_map,
};
use mcp_streamable_check::sim::Clocks;
use mcp_streamable_check::{Action, Ample, CheckModel, NotifyReach, Scenario, ServerStep, State};
use std::collections::{HashSet, VecDeque};

fn scenario(name: &str) -> Scenario {
    bundled()
        .into_iter()
        .find(|s| s.name == name)
        .expect("bundled")
}

/// `name`'s pair under a clock per component, `notify` per session.
fn apart(name: &str, server: &str, client: &str) -> CheckModel {
    CheckModel::new(scenario(name), server, client)
        .expect("presets")
        .with_clocks(Clocks::PerComponent)
        .with_notify(NotifyReach::PerSession)
}

/// The enabled actions of component `c` in `s`, under `owner`.
fn of(
    all: &[Action],
    c: usize,
    s: &State,
    owner: &dyn Fn(&State, &Action) -> Option<usize>,
) -> Vec<Action> {
    all.iter()
        .filter(|a| owner(s, a) == Some(c))
        .cloned()
        .collect()
}

/// A pair of steps that `owner` says are independent and are not: one
/// disables, enables or changes the other, or the two orders end apart.
#[derive(Debug)]
struct Dependent {
    mine: Action,
    other: Action,
    what: &'static str,
}

/// Whether `other`, enabled in `s`, is independent of component `c`'s
/// enabled actions `mine`: taking it leaves them as they were (none
/// disabled, none enabled) and commutes with each (both orders can be taken
/// and, where neither breaks a property, end in one state).
fn stays_independent(
    m: &CheckModel,
    s: &State,
    c: usize,
    mine: &[Action],
    other: &Action,
    owner: &dyn Fn(&State, &Action) -> Option<usize>,
) -> Result<(), Dependent> {
    let Some(after_other) = m.step(s, other) else {
        return Ok(());
    };
    let now_mine = of(&all_enabled(m, &after_other), c, &after_other, owner);
    if let Some(changed) = mine
        .iter()
        .find(|a| !now_mine.contains(a))
        .or_else(|| now_mine.iter().find(|a| !mine.contains(a)))
    {
        return Err(Dependent {
            mine: changed.clone(),
            other: other.clone(),
            what: "disables or enables a step of the component",
        });
    }
    for a in mine {
        let (Some(ab), Some(ba)) = (
            m.step(s, a).and_then(|t| m.step(&t, other)),
            m.step(&after_other, a),
        ) else {
            return Err(Dependent {
                mine: a.clone(),
                other: other.clone(),
                what: "one order cannot be taken",
            });
        };
        let clean =
            ab.world.monitor.violations().is_empty() && ba.world.monitor.violations().is_empty();
        if clean && ab != ba {
            return Err(Dependent {
                mine: a.clone(),
                other: other.clone(),
                what: "the two orders end in different states",
            });
        }
    }
    Ok(())
}

/// Every state of `m` (unreduced, at most `max` states) where `apart`
/// holds: for every component, every action of another component (or of
/// nobody, but the server's `notify`) leaves the component's enabled
/// actions as they were and commutes with each of them. How many states
/// were checked (and how many of them with the server's `notify`
/// enabled), or the first dependent pair.
fn check_independence(
    m: &CheckModel,
    max: usize,
    apart: &dyn Fn(&State, &[Action]) -> bool,
    owner: &dyn Fn(&State, &Action) -> Option<usize>,
) -> Result<(usize, usize), Dependent> {
    let unreduced = m.clone().with_reduction(false);
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([m.initial()]);
    let (mut checked, mut with_notify) = (0, 0);
    while let Some(s) = queue.pop_front() {
        if seen.len() >= max {
            break;
        }
        if !seen.insert(unreduced.fingerprint(&s)) {
            continue;
        }
        let all = all_enabled(m, &s);
        if apart(&s, &all) && s.world.monitor.violations().is_empty() {
            checked += 1;
            for c in 0..s.client_pc.len() {
                let mine = of(&all, c, &s, owner);
                for other in all
                    .iter()
                    .filter(|b| **b != Action::ServerStep && owner(&s, b) != Some(c))
                {
                    stays_independent(m, &s, c, &mine, other, owner)?;
                }
            }
        }
        if apart(&s, &all) && s.world.monitor.violations().is_empty() {
            with_notify += usize::from(notify_commutes(m, &s, &all)?);
        }
        for a in &all {
            if let Some(t) = m.step(&s, a) {
                queue.push_back(t);
            }
        }
    }
    Ok((checked, with_notify))
}

/// The server's next `notify`, which the reduction runs first wherever it
/// is enabled: no other enabled step disables it, and it commutes with each.
fn notify_commutes(m: &CheckModel, s: &State, all: &[Action]) -> Result<bool, Dependent> {
    let notify_next = m.scenario.server.get(usize::from(s.server_pc)) == Some(&ServerStep::Notify);
    if !all.contains(&Action::ServerStep) || !notify_next {
        return Ok(false);
    }
    let dependent = |other: &Action, what| Dependent {
        mine: Action::ServerStep,
        other: other.clone(),
        what,
    };
    for other in all.iter().filter(|b| **b != Action::ServerStep) {
        let Some(after_other) = m.step(s, other) else {
            continue;
        };
        if !all_enabled(m, &after_other).contains(&Action::ServerStep) {
            return Err(dependent(other, "disables the server's notify"));
        }
        let (Some(ab), Some(ba)) = (
            m.step(s, &Action::ServerStep)
                .and_then(|t| m.step(&t, other)),
            m.step(&after_other, &Action::ServerStep),
        ) else {
            return Err(dependent(other, "one order cannot be taken"));
        };
        let clean =
            ab.world.monitor.violations().is_empty() && ba.world.monitor.violations().is_empty();
        if clean && ab != ba {
            return Err(dependent(other, "the two orders end in different states"));
        }
    }
    Ok(true)
}

fn checked(m: &CheckModel, max: usize) -> (usize, usize) {
    check_independence(m, max, &|s, all| m.components_apart(s, all), &|s, a| {
        m.component_of(s, a)
    })
    .unwrap_or_else(|d| {
        panic!(
            "{}: {}: {:?} against {:?}",
            m.scenario.name, d.what, d.mine, d.other
        )
    })
}

#[test]
fn components_are_independent_wherever_the_reduction_says_so() {
    // Two clients with different scripts (a drop, notifications, a call),
    // three interchangeable ones, and a session-era client beside a 2026-07-28
    // one: every state each holds (or the first 20,000). The last has no
    // `notify` in its server script.
    for (name, least, least_with_notify) in [
        ("two_clients", 5_000, 1_000),
        ("three_clients", 10_000, 2_000),
        ("two_eras_notifications", 1_000, 0),
    ] {
        let m = apart(name, "FIXED", "FIXED");
        let (n, with_notify) = checked(&m, 20_000);
        println!("{name}: {n} states apart, {with_notify} with the notify enabled");
        assert!(
            n >= least,
            "{name}: only {n} states where components are apart"
        );
        assert!(
            with_notify >= least_with_notify,
            "{name}: only {with_notify} states with the notify enabled"
        );
    }
    // A buggy server keeps its sessions apart too.
    let (n, _) = checked(&apart("two_clients", "RMCP_3_9", "FIXED"), 10_000);
    assert!(n >= 1_000, "{n}");
}

#[test]
fn a_drop_budget_shared_by_all_clients_is_caught_as_dependent() {
    // Without the reservation, a drop of one client's exchange spends the
    // budget another client's drop needs: the check must see it.
    let mut two = scenario("two_clients");
    two.bounds.drops = 1;
    let m = CheckModel::new(two, "FIXED", "FIXED")
        .expect("presets")
        .with_clocks(Clocks::PerComponent)
        .with_notify(NotifyReach::PerSession);
    let r = check_independence(
        &m.clone().with_reduction(false),
        30_000,
        &|s, all| {
            all.iter()
                .all(|a| *a == Action::ServerStep || m.component_of(s, a).is_some())
        },
        &|s, a| m.component_of(s, a),
    );
    let d = r.expect_err("a shared budget is a dependency");
    assert!(
        matches!(d.other, Action::Drop { .. }) || matches!(d.mine, Action::Drop { .. }),
        "{d:?}"
    );
}

#[test]
fn a_notify_reaching_every_session_at_once_is_caught_as_dependent() {
    // Claim that an atomic `notify` belongs to client 0: it writes into
    // every session, so another client's steps do not commute with it.
    let m = CheckModel::new(scenario("two_clients"), "FIXED", "FIXED")
        .expect("presets")
        .with_clocks(Clocks::PerComponent)
        .with_notify(NotifyReach::Atomic);
    let owner = |s: &State, a: &Action| match a {
        Action::ServerStep => Some(0),
        _ => m.component_of(s, a),
    };
    let r = check_independence(
        &m,
        30_000,
        &|s, all| {
            (s.drops_for.is_some() || m.scenario.bounds.drops == 0)
                && all.iter().all(|a| owner(s, a).is_some())
        },
        &owner,
    );
    let d = r.expect_err("an atomic notify touches every session");
    // Caught where it first shows: a session of another client enables it,
    // or it does not commute with another client's steps.
    assert!(
        d.mine == Action::ServerStep || d.other == Action::ServerStep,
        "{d:?}"
    );
}

#[test]
fn the_reduction_keeps_every_verdict_and_counterexample_length() {
    // lifecycle is the biggest (one client: nothing to fold);
    // `check --clocks per-component --notify per-session` with and
    // without `--no-reduction` compares it by hand (docs/reduction.md).
    let ratios = par_map(apart_runs(), |(m, on)| {
        let label = format!("{} {} x {}", m.scenario.name, m.server_name, m.client_name);
        let off = bfs_on_one_thread(&m.clone().with_reduction(false));
        let ratio = agrees(&label, on, &off);
        // The drops' reservation copies the early levels once per
        // client; where the reduction hardly acts it costs a little.
        if let Some(r) = ratio.filter(|r| *r < 3.0) {
            assert!(r > 0.95, "{label}: {r:.3}");
        }
        ratio
    });
    let compared = ratios.len();
    let folded = ratios.iter().flatten().filter(|r| **r >= 3.0).count();
    assert!(compared >= 30, "{compared} pairs compared");
    assert!(folded >= 3, "{folded} models at least 3x smaller reduced");
}

/// Every state the search meets from `m`'s first state taking every enabled
/// action (the reservations included, at most `max` states), where the
/// reduction explores one component alone: each action outside it leaves
/// the component's enabled actions as they were and commutes with each.
/// How many such states were checked, or the first dependent pair.
fn check_ample_choices(m: &CheckModel, max: usize) -> Result<usize, Dependent> {
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([m.initial()]);
    let mut checked = 0;
    while let Some(s) = queue.pop_front() {
        if seen.len() >= max {
            break;
        }
        if !seen.insert(m.fingerprint(&s)) {
            continue;
        }
        let all = all_enabled(m, &s);
        let clean = s.world.monitor.violations().is_empty();
        if let (Some(Ample::Component(c)), true) = (m.ample(&s, &all), clean) {
            checked += 1;
            let owner = |s: &State, a: &Action| m.component_of(s, a);
            let mine = of(&all, c, &s, &owner);
            for other in all.iter().filter(|b| !mine.contains(b)) {
                stays_independent(m, &s, c, &mine, other, &owner)?;
            }
        }
        for a in &all {
            if let Some(t) = m.step(&s, a) {
                queue.push_back(t);
            }
        }
    }
    Ok(checked)
}

/// A step of the server's script on the oldest call (a question to the
/// client, progress, a polling close, the session's end) is the component's
/// of that call: where the reduction runs one component alone beside such
/// steps, everything outside it is independent of it, the next call's
/// arrival reserved where two clients race to be the oldest.
#[test]
fn components_stay_independent_beside_steps_on_the_oldest_call() {
    let scripts: [&[ServerStep]; 4] = [
        &[ServerStep::AskClient, ServerStep::Progress],
        &[ServerStep::Progress, ServerStep::Notify],
        &[ServerStep::CloseConnection],
        &[ServerStep::EndSession],
    ];
    let counts = par_map(&scripts, |server| {
        let m = CheckModel::new(calling(server, 0), "FIXED", "FIXED").expect("presets");
        assert!(
            m.reduces(),
            "{server:?}: the defaults keep components apart"
        );
        let n = check_ample_choices(&m, 15_000).unwrap_or_else(|d| {
            panic!("{server:?}: {}: {:?} against {:?}", d.what, d.mine, d.other)
        });
        (format!("{server:?}"), n)
    });
    for (server, n) in counts {
        println!("{server}: {n} states with one component alone");
        assert!(
            n >= 500,
            "{server}: only {n} states with one component alone"
        );
    }
}

/// Without the reservation, the order two calls arrive in decides which a
/// question to the client is for: the check that every client's steps are
/// independent of the others' must see it.
#[test]
fn the_order_two_calls_arrive_in_is_caught_as_dependent() {
    let m = CheckModel::new(calling(&[ServerStep::AskClient], 0), "FIXED", "FIXED")
        .expect("presets")
        .with_reduction(false);
    let owner = |s: &State, a: &Action| m.component_of(s, a);
    let r = check_independence(
        &m,
        30_000,
        &|s, all| all.iter().all(|a| owner(s, a).is_some()),
        &owner,
    );
    let d = r.expect_err("which call arrives first is a dependency");
    let arrival = |a: &Action| matches!(a, Action::DeliverRequest { .. });
    assert!(arrival(&d.mine) && arrival(&d.other), "{d:?}");
}

/// Every switch from one component to another leaves the first stopped
/// wherever it was, and each such point meets the other's whole run. A
/// client that has begun and is done calling (no call of its pending, none
/// it can bring) is out of the reach of every step on the oldest call, so
/// it runs to its end first and its end states meet before another client
/// runs from each of them. Three clients with their GETs, a question to
/// the oldest call's client, written with the documented defaults: FIXED
/// holds, in 43,867 states where clients done calling waiting behind the
/// oldest call's owner made 142,811.
#[test]
fn a_client_done_calling_runs_to_its_end_first() {
    fixed_holds_under_the_defaults(
        r#"{"name": "three_asked", "description": "three clients, a question to the oldest call's client",
        "clients": [["initialize", "call"], ["initialize", "call"], ["initialize", "call"]],
        "server": ["ask_client"], "invariants": [],
        "bounds": {"depth": 100, "time_ms": 6000},
        "expect": [{"server": "FIXED", "client": "FIXED", "verdict": "holds"}]}"#,
        10_000..60_000,
        "clients done calling wait behind the oldest call's owner",
    );
}

/// Checks the model `text` (written with the documented defaults, the
/// reduction acting) breadth first: FIXED holds in a number of states
/// within `states`; `why` names what a count outside it means.
fn fixed_holds_under_the_defaults(text: &str, states: std::ops::Range<usize>, why: &str) {
    let s = Scenario::parse(std::path::Path::new("model.json"), text).expect("model");
    let m = CheckModel::for_expectation(&s, &s.expect[0]).expect("presets");
    assert!(m.reduces(), "the defaults keep components apart");
    let out = bfs_on_one_thread(&m);
    println!("{}: {} states", s.name, out.states);
    assert!(out.counterexample.is_none(), "FIXED holds");
    assert!(states.contains(&out.states), "{} states: {why}", out.states);
}

/// A reservation says whose call reaches the server next; it is no reason
/// to stop a client that is running. A reserved caller that has not begun
/// comes after the clients that have (whose calls, once answered, may
/// still bring one back: a 2026-07-28 call asked for input is issued
/// again, an `auto` client sends what waited on its probe), and a
/// reservation ends once no step on the oldest call is left in the
/// server's script. Three clients, one of each era, a question to the
/// oldest call's client, the documented defaults: FIXED holds in 39,235
/// states, where the reserved caller first made 1,204,119 and a
/// reservation kept to the end 56,883.
#[test]
fn a_reservation_stops_no_running_client() {
    fixed_holds_under_the_defaults(
        r#"{"name": "three_eras_asked", "description": "one client of each era, a question to the oldest call's client",
        "clients": [["initialize", "call"], ["initialize", "call"], ["initialize", "call"]],
        "server": ["ask_client"], "invariants": [],
        "bounds": {"depth": 100, "time_ms": 6000},
        "settings": {"eras": ["v2025", "v2026", "auto"]},
        "expect": [{"server": "FIXED", "client": "FIXED", "verdict": "holds"}]}"#,
        15_000..50_000,
        "a reservation stops running clients, or outlives the steps it orders",
    );
}
