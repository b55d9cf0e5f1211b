//! What an idle session of the HTTP shell costs, bounded: the parked owner
//! gives back the emptied maps and queues of its driver, endpoint, wire and
//! exchanges, shares the endpoint's and the sessions' configuration, and
//! keeps no keystream (`docs/performance.md`, "Idle sessions of the HTTP
//! shell"). Heap bytes are counted by a global allocator, so the figure is
//! deterministic: not a timed test. Before that work it was 4,619 bytes.
#![cfg(feature = "http")]

#[path = "heap_support/mod.rs"]
mod heap_support;

#[test]
fn an_idle_http_session_costs_under_2_200_heap_bytes() {
    let per = heap_support::http_idle_session_bytes(2_000);
    assert!(per > 1_000.0, "the measure counts the sessions: {per:.0} B");
    assert!(
        per < 2_200.0,
        "an idle session of the HTTP shell holds {per:.0} heap bytes"
    );
}
