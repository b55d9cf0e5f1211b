//! The explorer's memory watch judges what a run grows, not what the process
//! held before it (alone in its binary: a test beside it would grow the same
//! process's resident size while this one watches it).

/// The allocator of the `mcp-streamable` binary (see tests/engine.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use mcp_streamable_check::{memory, run_search, CheckModel, Limits, Order, Scenario, Search};
use std::path::Path;

#[test]
fn memory_the_process_held_before_the_run_is_not_its_frontier() {
    // What an earlier check of the same `check` run left to the allocator
    // (its first milliseconds turned the next model depth first at depth 1),
    // or an embedding's own data: held across the whole run, touched.
    let held = vec![1u8; 256 << 20];
    let rss = memory::rss_bytes().expect("linux");
    assert!(rss > 256 << 20, "{rss}");
    let (_, s) = Scenario::load_dir(Path::new("models"))
        .expect("models load")
        .into_iter()
        .find(|(_, s)| s.name == "competing_get_streams_2")
        .expect("bundled model");
    let e = s.expect[0].clone();
    let m = CheckModel::for_expectation(&s, &e).expect("presets");
    let mut limits = Limits::new(2);
    limits.memory_max = None;
    limits.bfs_memory_max = Some(128 << 20);
    let out = run_search(&m, limits, Search::Bfs, |_| {});
    assert_eq!(out.order, Order::Bfs, "(rss {rss})");
    assert!(out.exhaustive());
    assert!(out.states > 50, "{}", out.states);
    assert!(std::hint::black_box(&held)
        .iter()
        .step_by(4096)
        .all(|b| *b == 1));
}
