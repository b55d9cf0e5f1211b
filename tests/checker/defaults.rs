//! Reductions by default: a model written without `clocks` or `notify`
//! gets a clock per component and per-session notifies where the
//! partial-order reduction acts, one clock and atomic notifies elsewhere;
//! a client still but for its open GET retires; and L2 judges what one
//! client waits on, the same way with the reduction on and off.

use crate::check_support::{agrees, bfs_on_one_thread, bundled};
use mcp_streamable_check::sim::Clocks;
use mcp_streamable_check::{CheckModel, ClientStep, NotifyReach, Scenario, ServerStep};

fn named(name: &str) -> Scenario {
    bundled()
        .into_iter()
        .find(|s| s.name == name)
        .expect("bundled")
}

/// Clients `initialize` + `call` with their GETs open, the server notifying
/// twice, `drops` drops, nothing said of clocks or notify.
fn callers_with_gets(clients: usize, drops: u8) -> Scenario {
    let mut s = named("three_clients_with_gets");
    s.clients = vec![vec![ClientStep::Initialize, ClientStep::Call]; clients];
    s.bounds.drops = drops;
    assert_eq!(s.settings.clocks, Clocks::Auto);
    assert_eq!(s.settings.notify, NotifyReach::Auto);
    s
}

fn settings_of(m: &CheckModel) -> (Clocks, NotifyReach) {
    (m.scenario.settings.clocks, m.scenario.settings.notify)
}

#[test]
fn auto_settings_choose_a_clock_per_component_only_where_the_reduction_acts() {
    let apart = (Clocks::PerComponent, NotifyReach::PerSession);
    let one = (Clocks::Global, NotifyReach::Atomic);
    let m = |s: Scenario| CheckModel::new(s, "FIXED", "FIXED").expect("presets");
    assert_eq!(settings_of(&m(callers_with_gets(3, 1))), apart);
    assert_eq!(settings_of(&m(callers_with_gets(2, 0))), apart);
    // One client: nothing to fold against.
    assert_eq!(settings_of(&m(callers_with_gets(1, 1))), one);
    // A step on the oldest call acts in that call's session only: the
    // reduction acts beside it (the order calls arrive in reserved).
    let mut progress = callers_with_gets(2, 0);
    progress.server = vec![ServerStep::Notify, ServerStep::Progress];
    assert_eq!(settings_of(&m(progress)), apart);
    // A step reaching every session at once couples the components.
    let mut hook = callers_with_gets(2, 0);
    hook.server = vec![ServerStep::HookNotify, ServerStep::Progress];
    assert_eq!(settings_of(&m(hook)), one);
    // B5 counts GETs across components.
    let mut gets = callers_with_gets(2, 0);
    gets.bounds.gets_max = Some(4);
    assert_eq!(settings_of(&m(gets)), one);
    // An attacker's requests reach another client's session.
    let mut hijack = callers_with_gets(2, 0);
    hijack.clients[1].push(ClientStep::Hijack);
    assert_eq!(settings_of(&m(hijack)), one);
    // What a model says is kept; what `check --clocks` asks, too, and a
    // notify left `auto` follows the clocks asked.
    let mut said = callers_with_gets(3, 1);
    said.settings.clocks = Clocks::Global;
    assert_eq!(settings_of(&m(said)), one);
    let asked = m(callers_with_gets(3, 1)).with_clocks(Clocks::Global);
    assert_eq!(settings_of(&asked), one);
    let back = asked.with_clocks(Clocks::Auto);
    assert_eq!(settings_of(&back), apart);
    let atomic = back.with_notify(NotifyReach::Atomic);
    assert_eq!(
        settings_of(&atomic),
        (Clocks::PerComponent, NotifyReach::Atomic)
    );
}

#[test]
fn three_clients_with_their_gets_complete_under_the_defaults() {
    let m = CheckModel::new(callers_with_gets(3, 1), "FIXED", "FIXED").expect("presets");
    let out = bfs_on_one_thread(&m);
    assert!(out.counterexample.is_none(), "{:?}", out.counterexample);
    // Not vacuous, and folded: without retiring a client still but for its
    // GET, the same search is past 3.7 x 10^7 states.
    assert!(
        (150_000..2_000_000).contains(&out.states),
        "{} states",
        out.states
    );
}

/// A client whose script is over and whose standalone GET stays open, with
/// nothing more to come on it, retires: its end states meet before the next
/// client runs from them.
#[test]
fn a_client_still_but_for_its_open_get_retires() {
    let m = CheckModel::new(callers_with_gets(2, 0), "FIXED", "FIXED").expect("presets");
    let mut seen = std::collections::HashSet::new();
    let mut queue = std::collections::VecDeque::from([m.initial()]);
    let (mut retired_first, mut met) = (0usize, std::collections::BTreeSet::new());
    while let Some(s) = queue.pop_front() {
        if !seen.insert(m.fingerprint(&s)) {
            continue;
        }
        if s.world.monitor.is_retired(0) && s.client_pc[1] == 0 {
            retired_first += 1;
            met.insert(m.fingerprint(&s));
            assert_eq!(
                s.world.links_of(0).count(),
                0,
                "a retired client's GET is gone"
            );
        }
        let mut next = Vec::new();
        m.enabled(&s, &mut next);
        queue.extend(next.iter().filter_map(|a| m.step(&s, a)));
    }
    assert!(
        retired_first > 0,
        "client 0 never retired with its GET open"
    );
    // What is left of client 0: its end-of-run flags, whether a deadline
    // was pending, and client 1's notices (delivered to no session yet, or
    // not); before GETs retired, one state per end state of client 0.
    assert!(met.len() <= 12, "{} end states of client 0", met.len());
}

/// Where components are apart, L2 is judged per client, so a client stuck
/// on its deadlines is found while the others still have steps: with the
/// reduction on (one component at a time) as with it off, the same verdict
/// and counterexample length. TypeScript SDK 1.32's client gives a call up
/// without failing it when a resumption is cut before any event; two
/// clients, one drop.
#[test]
fn l2_is_judged_per_client_with_the_reduction_on_and_off() {
    let mut s = named("resumption_cut_before_any_event");
    s.clients = vec![s.clients[0].clone(); 2];
    s.server.clear();
    s.settings.clocks = Clocks::PerComponent;
    s.settings.notify = NotifyReach::PerSession;
    for (client, caught) in [("FIXED", false), ("TS_SDK_1_32", true)] {
        let m = CheckModel::new(s.clone(), "FIXED", client).expect("presets");
        let on = bfs_on_one_thread(&m);
        let off = bfs_on_one_thread(&m.clone().with_reduction(false));
        agrees(client, &on, &off);
        let id = on.counterexample.as_ref().map(|c| c.violation.id);
        assert_eq!(id, caught.then_some("L2"), "{client}");
    }
}
