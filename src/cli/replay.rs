//! `mcp-streamable replay TRACE.json`: re-runs a trace on the cores, prints
//! each step, and confirms the recorded violation (a mismatch is a
//! determinism bug and an error).

use mcp_streamable_check::{replay, Diagram, Trace};
use std::path::Path;
use std::process::ExitCode;

pub fn run(file: &Path) -> Result<ExitCode, String> {
    let trace = Trace::load(file).map_err(|e| e.to_string())?;
    println!(
        "{}: {} x {}, {} steps, expecting {}",
        trace.scenario.name,
        trace.server,
        trace.client,
        trace.steps.len(),
        trace.violation.id
    );
    let replayed = replay(&trace).map_err(|e| format!("{}: {e}", file.display()))?;
    let diagram = Diagram::new(&trace, &replayed);
    let mut step = usize::MAX;
    for row in &diagram.rows {
        if row.step != step {
            step = row.step;
            let s = &replayed.steps[step];
            println!("[{step:>3}] t={:>5}ms  {:?}", s.at_ms, s.action);
        }
        if row.from == row.to {
            println!("        {:?}: {}", row.from, row.label);
        } else {
            println!("        {:?} -> {:?}: {}", row.from, row.to, row.label);
        }
    }
    println!(
        "reached {} as recorded: {}",
        trace.violation.id, trace.violation.detail
    );
    Ok(ExitCode::SUCCESS)
}
