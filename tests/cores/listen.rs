//! The client's `subscriptions/listen` (2026-07-28) against our server in the
//! in-memory world, the monitor judging both sides: the acknowledgement is
//! announced (list now), changes arrive, a broken stream is listened again
//! and announced again (list again: M4), bounded; and the monitor catches a
//! client that re-listens silently (M4).

use mcp_streamable::client::{
    ClientConfig, ClientEra, ClientError, ClientEvent, ClientUsageError, Purpose,
};
use mcp_streamable::ids::{HttpId, RequestId};
use mcp_streamable::policy::{ClientPolicy, ListenPool, Relisten};
use mcp_streamable::server::v2026::ListenFilter;
use mcp_streamable_check::sim::{PairConfig, World};

const TOOLS: &str = "notifications/tools/list_changed";

fn world(relisten: Relisten) -> World {
    let client = ClientConfig {
        retry_default_ms: 100,
        ..ClientConfig::default()
    };
    world_with(
        client,
        ClientPolicy {
            relisten,
            ..ClientPolicy::FIXED
        },
    )
}

/// A 2026-07-28 client (`client`, its era set) under `policy`, initialized
/// against our server.
fn world_with(client: ClientConfig, policy: ClientPolicy) -> World {
    let config = PairConfig {
        client: ClientConfig {
            era: ClientEra::V2026,
            ..client
        },
        client_policy: policy,
        ..PairConfig::default()
    };
    let mut w = World::with(config);
    w.log = Some(Vec::new());
    w.initialize();
    w.drive();
    assert!(w.client().is_v2026());
    w
}

/// The world id of the listen's current exchange.
fn listen_link(w: &World) -> HttpId {
    let local = w
        .client()
        .exchanges()
        .find(|h| matches!(w.client().purpose(*h), Some(Purpose::Listen { .. })))
        .expect("a listen exchange");
    World::world_http(0, local)
}

fn listening(w: &World) -> Vec<bool> {
    w.client_events
        .iter()
        .filter_map(|e| match e {
            ClientEvent::Listening { resumed, .. } => Some(*resumed),
            _ => None,
        })
        .collect()
}

fn heard(w: &World, method: &str) -> usize {
    w.client_events
        .iter()
        .filter(|e| matches!(e, ClientEvent::Notification { method: m, .. } if m == method))
        .count()
}

fn violations(w: &mut World) -> Vec<&'static str> {
    w.finish();
    w.monitor.violations().iter().map(|v| v.id).collect()
}

#[test]
fn a_listen_is_announced_hears_changes_and_relists_after_a_break() {
    let mut w = world(Relisten::AndRelist);
    let l = w.listen_on(0).expect("listen");
    w.drive();
    assert_eq!(listening(&w), [false], "the acknowledgement says: list now");
    assert!(w.client().is_listening(l));
    let Some(ClientEvent::Listening { agreed, .. }) = w
        .client_events
        .iter()
        .find(|e| matches!(e, ClientEvent::Listening { .. }))
    else {
        unreachable!()
    };
    assert!(agreed.tools && !agreed.prompts, "{agreed:?}");

    assert_eq!(w.server_broadcast(TOOLS), 1);
    w.drive();
    assert_eq!(heard(&w, TOOLS), 1);
    let first = w.client().listen_request(l).unwrap();

    // The stream breaks; a change is broadcast while nothing listens.
    w.drop_link(listen_link(&w), true);
    assert!(!w.client().is_listening(l));
    assert_eq!(w.server_broadcast(TOOLS), 0, "nobody listens now");
    w.run(1_000);
    assert_eq!(listening(&w), [false, true], "listened again, and said so");
    assert!(w.client().is_listening(l));
    assert_ne!(
        w.client().listen_request(l).unwrap(),
        first,
        "a new request id"
    );
    assert_eq!(heard(&w, TOOLS), 1, "the lost change is not replayed");

    w.server_broadcast(TOOLS);
    w.drive();
    assert_eq!(heard(&w, TOOLS), 2);
    assert_eq!(violations(&mut w), Vec::<&str>::new());
}

#[test]
fn an_unnoticed_end_leaves_a_stale_list_and_is_caught_as_m4() {
    // go-sdk v1.7.0: the listen is fire and forget.
    let mut w = world(Relisten::Unnoticed);
    let l = w.listen_on(0).unwrap();
    w.drive();
    w.drop_link(listen_link(&w), true);
    w.run(1_000);
    assert!(!w.client().is_listening(l));
    assert_eq!(
        w.client().listens().collect::<Vec<_>>(),
        [l],
        "still on, as far as it knows"
    );
    w.server_broadcast(TOOLS);
    w.drive();
    assert_eq!(listening(&w), [false]);
    assert_eq!(heard(&w, TOOLS), 0);
    assert_eq!(violations(&mut w), ["M4"]);
}

#[test]
fn with_no_change_after_the_break_nothing_is_stale() {
    // M4 judges what the application knows, not the policy.
    let mut w = world(Relisten::Unnoticed);
    w.listen_on(0).unwrap();
    w.drive();
    w.server_broadcast(TOOLS);
    w.drive();
    w.drop_link(listen_link(&w), true);
    w.run(1_000);
    assert_eq!(heard(&w, TOOLS), 1);
    assert_eq!(violations(&mut w), Vec::<&str>::new());
}

#[test]
fn never_relisten_ends_the_listen_and_says_why() {
    let mut w = world(Relisten::Never);
    let l = w.listen_on(0).unwrap();
    w.drive();
    w.drop_link(listen_link(&w), true);
    w.server_broadcast(TOOLS);
    w.run(1_000);
    assert!(w.client_events.iter().any(|e| matches!(
        e,
        ClientEvent::ListenEnded { listen, error: Some(ClientError::StreamLost) } if *listen == l
    )));
    assert_eq!(w.client().listens().count(), 0);
    assert_eq!(violations(&mut w), Vec::<&str>::new());
}

#[test]
fn relistens_without_an_acknowledgement_are_bounded() {
    let mut w = world(Relisten::AndRelist);
    let max = w.client().config().relisten_failures_max;
    let l = w.listen_on(0).unwrap();
    // Every listen request breaks before the server sees it.
    let mut opened = 0;
    for _ in 0..20 {
        if w.client().listens().next().is_none() {
            break;
        }
        let open = w
            .client()
            .exchanges()
            .find(|h| matches!(w.client().purpose(*h), Some(Purpose::Listen { .. })));
        if let Some(h) = open {
            opened += 1;
            w.drop_link(World::world_http(0, h), true);
        }
        w.advance(w.client().config().retry_default_ms);
    }
    assert_eq!(opened, max + 1, "the first listen and {max} more");
    assert!(w.client_events.iter().any(|e| matches!(
        e,
        ClientEvent::ListenEnded { listen, error: Some(ClientError::StreamLost) } if *listen == l
    )));
}

#[test]
fn a_graceful_end_is_announced_without_an_error() {
    let mut w = world(Relisten::AndRelist);
    let l = w.listen_on(0).unwrap();
    w.drive();
    let now = w.now;
    w.server.end_listens(now);
    w.drive();
    assert!(w
        .client_events
        .iter()
        .any(|e| matches!(e, ClientEvent::ListenEnded { listen, error: None } if *listen == l)));
    assert_eq!(w.client().listens().count(), 0);
    assert_eq!(violations(&mut w), Vec::<&str>::new());
}

#[test]
fn unlisten_closes_the_stream_and_nothing_more_is_heard() {
    let mut w = world(Relisten::AndRelist);
    let l = w.listen_on(0).unwrap();
    w.drive();
    w.client_mut().unlisten(l).unwrap();
    w.pump();
    w.drive();
    w.server_broadcast(TOOLS);
    w.drive();
    assert_eq!(heard(&w, TOOLS), 0);
    assert!(w.client_events.iter().any(|e| matches!(
        e,
        ClientEvent::ListenEnded { listen, error: Some(ClientError::Cancelled) } if *listen == l
    )));
    assert_eq!(
        w.client_mut().unlisten(l),
        Err(ClientUsageError::UnknownListen(l))
    );
    assert_eq!(violations(&mut w), Vec::<&str>::new());
}

#[test]
fn listen_needs_the_v2026_era_and_is_bounded() {
    let mut w = World::with(PairConfig::default());
    w.initialize();
    w.drive();
    let now = w.now;
    assert_eq!(
        w.client_mut().listen(ListenFilter::all(), now),
        Err(ClientUsageError::SessionEra)
    );

    let mut w = world(Relisten::AndRelist);
    let max = w.client().config().listens_max;
    let now = w.now;
    for _ in 0..max {
        w.client_mut().listen(ListenFilter::all(), now).unwrap();
    }
    assert_eq!(
        w.client_mut().listen(ListenFilter::all(), now),
        Err(ClientUsageError::TooManyRequests)
    );
}

#[test]
fn unlisten_while_waiting_to_listen_again_is_over_for_the_monitor_too() {
    // Found by tests/cores/era_props.rs: the stream broke, the re-listen waited,
    // the application stopped the listen; a change then is no stale list.
    let mut w = world(Relisten::AndRelist);
    let l = w.listen_on(0).unwrap();
    w.drive();
    let stream = w
        .client()
        .exchanges()
        .find(|h| matches!(w.client().purpose(*h), Some(Purpose::Listen { .. })))
        .expect("the listen's stream");
    w.drop_link(World::world_http(0, stream), false);
    w.pump();
    w.client_mut().unlisten(l).unwrap();
    w.pump();
    w.server_broadcast(TOOLS);
    w.drive();
    assert_eq!(violations(&mut w), Vec::<&str>::new());
}

/// A world whose client's transport keeps `pool` connections
/// (`ClientConfig::connections_max`), its listens under `listen_pool`.
fn pooled(pool: usize, listen_pool: ListenPool) -> World {
    let client = ClientConfig {
        connections_max: Some(pool),
        ..ClientConfig::default()
    };
    world_with(
        client,
        ClientPolicy {
            listen_pool,
            ..ClientPolicy::FIXED
        },
    )
}

fn answered(w: &World, id: &RequestId) -> bool {
    w.client_events
        .iter()
        .any(|e| matches!(e, ClientEvent::Response { id: r, .. } if r == id))
}

/// A listen holds its connection for as long as it lasts: FIXED never lets
/// one take the last connection of the pool, so requests always have one.
/// On a pool of one there is no listen; on a pool of two, one; once it
/// ends, another may take its place.
#[test]
fn a_listen_never_takes_the_pools_last_connection() {
    let mut w = pooled(1, ListenPool::LeavesOne);
    let now = w.now;
    assert_eq!(
        w.client_mut().listen(ListenFilter::all(), now),
        Err(ClientUsageError::NoSpareConnection)
    );
    let call = w.call_on(0, "echo").expect("call");
    w.drive();
    assert!(answered(&w, &call), "{:?}", w.client_events);

    let mut w = pooled(2, ListenPool::LeavesOne);
    let l = w
        .listen_on(0)
        .expect("the first listen leaves a connection");
    w.drive();
    assert!(w.client().is_listening(l));
    let now = w.now;
    assert_eq!(
        w.client_mut().listen(ListenFilter::all(), now),
        Err(ClientUsageError::NoSpareConnection)
    );
    let call = w.call_on(0, "echo").expect("call");
    w.drive();
    assert!(answered(&w, &call), "{:?}", w.client_events);
    w.client_mut().unlisten(l).unwrap();
    w.pump();
    let again = w.listen_on(0).expect("its connection is free again");
    w.drive();
    assert!(w.client().is_listening(again));
    assert_eq!(violations(&mut w), Vec::<&str>::new());
}

/// A client that ignores its pool (`ListenPool::IgnoringPool`): on a pool
/// of one the listen takes the connection, and a call after it is never
/// sent: it waits for its deadline (the checker's L2,
/// `tests/checker/pool.rs`).
#[test]
fn a_listen_that_ignores_the_pool_leaves_requests_waiting() {
    let mut w = pooled(1, ListenPool::IgnoringPool);
    let l = w.listen_on(0).expect("listens whatever the pool");
    w.drive();
    assert!(w.client().is_listening(l));
    let call = w.call_on(0, "echo").expect("call");
    w.drive();
    assert!(!answered(&w, &call), "{:?}", w.client_events);
    assert!(w.client().pending().any(|p| p == call), "still pending");
}
