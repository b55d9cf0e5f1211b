//! Every file of `models/` is checked: each expectation's verdict must come out.

#![cfg(feature = "check")]

/// The allocator of the `mcp-streamable` binary: the checker clones and frees
/// millions of states across threads (see docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use mcp_streamable::check::{run, CheckModel, Scenario, Verdict};
use std::path::Path;

#[test]
fn every_model_meets_its_expectations() {
    let models = Scenario::load_dir(Path::new("models")).expect("models load");
    assert!(!models.is_empty());
    let mut failures = Vec::new();
    for (file, scenario) in &models {
        for e in &scenario.expect {
            let model = CheckModel::for_expectation(scenario, e).expect("presets exist");
            let out = run(&model, 2);
            let got = out.counterexample.as_ref().map(|c| c.violation.id);
            println!(
                "{} {} x {}: states {} depth {} {:?} -> {:?}",
                scenario.name, e.server, e.client, out.states, out.depth, out.elapsed, got
            );
            match (&e.verdict, &out.counterexample) {
                (Verdict::Holds, None) => {
                    let floor = e.min_states.unwrap_or(1);
                    if out.states < floor {
                        failures.push(format!(
                            "{}: {} x {}: only {} states (floor {floor})",
                            file.display(),
                            e.server,
                            e.client,
                            out.states
                        ));
                    }
                }
                (Verdict::Violates(ids), Some(c)) if ids.iter().any(|i| i == c.violation.id) => {}
                (v, c) => failures.push(format!(
                    "{}: {} x {}: expected {v:?}, got {:?}",
                    file.display(),
                    e.server,
                    e.client,
                    c.as_ref().map(|c| (&c.violation.id, &c.violation.detail))
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
