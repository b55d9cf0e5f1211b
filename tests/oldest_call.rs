//! The partial-order reduction beside the server script's steps on the
//! oldest call (`docs/reduction.md`, "Steps on the oldest call"): with
//! them, the reduced search (a clock per component, the next call's
//! arrival reserved) keeps every verdict and counterexample length of the
//! search without it. A binary of its own: its searches without the
//! reduction hold a few hundred MB each, which the checker binary's
//! memory-budgeted searches running beside them would count as theirs.

#[path = "check_support/mod.rs"]
mod check_support;

use check_support::{agrees, bfs_on_one_thread, calling, par_map};
use mcp_streamable_check::{CheckModel, ServerStep};

/// With steps on the oldest call in the server's script, the reduction (a
/// clock per component, the next call's arrival reserved) keeps every
/// verdict and counterexample length of the search without it, on FIXED and
/// on buggy servers.
#[test]
fn steps_on_the_oldest_call_keep_every_verdict_and_counterexample_length() {
    // Each small enough for the search without the reduction on one
    // thread (FIXED at most 364,329 states: `progress`, `notify`), with the
    // servers it catches and one that holds.
    let cases: [(&[ServerStep], u8, &[&str]); 4] = [
        (
            &[ServerStep::AskClient],
            0,
            &[
                "FIXED",
                "MCP_GO_0_44",
                "TOOLHIVE_4075",
                "RMCP_0_16",
                "RMCP_3_9",
            ],
        ),
        (
            &[ServerStep::Progress, ServerStep::Notify],
            0,
            &[
                "FIXED",
                "MCP_GO_0_44",
                "TOOLHIVE_4075",
                "RMCP_0_16",
                "RMCP_3_9",
            ],
        ),
        (
            &[ServerStep::EndSession],
            1,
            &["FIXED", "RMCP_0_16", "RMCP_3_9"],
        ),
        (
            &[ServerStep::CloseConnection],
            0,
            &["FIXED", "RMCP_0_16", "RMCP_3_9"],
        ),
    ];
    let mut models = Vec::new();
    for (server, drops, presets) in cases {
        for preset in presets {
            let m = CheckModel::new(calling(server, drops), preset, "FIXED").expect("presets");
            models.push(m);
        }
    }
    let results = par_map(&models, |m| {
        let label = format!(
            "{:?} {} drops {}",
            m.scenario.server, m.server_name, m.scenario.bounds.drops
        );
        let on = bfs_on_one_thread(m);
        let off = bfs_on_one_thread(&m.clone().with_reduction(false));
        (
            label.clone(),
            agrees(&label, &on, &off),
            on.counterexample.is_some(),
        )
    });
    let mut folded = 0;
    for (label, ratio, caught) in &results {
        println!("{label}: {ratio:?} caught {caught}");
        if label.contains(" FIXED ") {
            assert!(!caught, "{label}: FIXED holds");
            folded += usize::from(ratio.is_some_and(|r| r >= 3.0));
        }
    }
    assert!(
        folded >= 3,
        "{folded} FIXED models at least 3x smaller reduced"
    );
    assert!(
        results.iter().filter(|r| r.2).count() >= 8,
        "buggy servers caught"
    );
}
