//! The committed minimal counterexamples of each seed race replay on the
//! cores to the same violation; a tampered trace is refused with a clear error.

use mcp_streamable_check::{replay, Diagram, Trace, TraceError};
use std::path::Path;

fn traces() -> Vec<(String, Trace)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("tests/traces").expect("tests/traces") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|x| x == "json") {
            let trace = Trace::load(&path).expect("trace loads");
            out.push((path.display().to_string(), trace));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn every_committed_trace_replays_to_its_violation() {
    let all = traces();
    assert!(all.len() >= 8, "one per seed race and hole");
    for (file, trace) in &all {
        let r = replay(trace).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(r.steps.len(), trace.steps.len());
        let d = Diagram::new(trace, &r);
        assert!(
            d.svg().contains(&trace.violation.id),
            "{file}: picture names the violation"
        );
        assert!(d.mermaid().starts_with("sequenceDiagram"));
    }
}

#[test]
fn each_seed_race_has_its_trace() {
    let ids: Vec<(String, String)> = traces()
        .into_iter()
        .map(|(_, t)| (t.server.clone() + " x " + &t.client, t.violation.id))
        .collect();
    let has = |pair: &str, id: &str| ids.iter().any(|(p, i)| p == pair && i == id);
    assert!(has("MCP_GO_0_44 x FIXED", "A1"), "{ids:?}");
    assert!(has("RMCP_0_16 x EVENTSOURCE_RECONNECT", "B1"), "{ids:?}");
    assert!(has("RMCP_3_9 x FIXED", "A5"), "{ids:?}");
    assert!(
        has("CONFORMANCE_SSE_RETRY x CSHARP_BASELINE", "C2"),
        "{ids:?}"
    );
    assert!(
        has("CONFORMANCE_SSE_RETRY x CSHARP_PR1381", "C3"),
        "{ids:?}"
    );
    assert!(has("FIXED x CSHARP_PR1381", "C5"), "{ids:?}");
}

#[test]
fn a_trace_run_under_fixed_does_not_reach_the_violation() {
    // The same schedule with the fixed presets: either a step is no longer
    // possible, or the end state is clean; never the recorded violation.
    for (file, mut trace) in traces() {
        trace.server = "FIXED".into();
        trace.client = "FIXED".into();
        match replay(&trace) {
            Ok(_) => panic!("{file}: FIXED reached {}", trace.violation.id),
            Err(
                TraceError::NotEnabled { .. }
                | TraceError::ViolationMismatch { .. }
                | TraceError::TimeMismatch { .. },
            ) => {}
            Err(e) => panic!("{file}: {e}"),
        }
    }
}

#[test]
fn malformed_traces_name_the_file_and_field() {
    let dir = std::env::temp_dir().join("mcp-streamable-trace-test");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.trace.json");
    let mut v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("tests/traces/race_b_rmcp_0_16.trace.json").unwrap(),
    )
    .unwrap();
    v["steps"][0]["action"]["type"] = "teleport".into();
    std::fs::write(&bad, v.to_string()).unwrap();
    let e = Trace::load(&bad).unwrap_err().to_string();
    assert!(
        e.contains("bad.trace.json") && e.contains("steps[0].action"),
        "{e}"
    );
    v["format"] = 99.into();
    std::fs::write(&bad, v.to_string()).unwrap();
    assert!(Trace::load(&bad).is_err());
    assert!(Trace::load(Path::new("/nonexistent.json"))
        .unwrap_err()
        .to_string()
        .contains("/nonexistent.json"));
}

/// A trace is a file anyone may hand over: a step naming a client the model
/// does not have is "not enabled", and a recorded model that a model file
/// could not be (four clients, a name with `/`) is refused on load.
#[test]
fn a_hostile_trace_is_refused_not_a_panic() {
    let dir = std::env::temp_dir().join("mcp-streamable-hostile-trace-test");
    std::fs::create_dir_all(&dir).unwrap();
    let original: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("tests/traces/race_b_rmcp_0_16.trace.json").unwrap(),
    )
    .unwrap();
    let bad = dir.join("hostile.trace.json");
    let load = |v: &serde_json::Value| {
        std::fs::write(&bad, v.to_string()).unwrap();
        Trace::load(&bad)
    };
    let mut v = original.clone();
    v["steps"][0]["action"] = serde_json::json!({"type": "client_step", "client": 7});
    let trace = load(&v).expect("well formed");
    match replay(&trace) {
        Err(TraceError::NotEnabled { step: 0, .. }) => {}
        other => panic!("{:?}", other.map(|r| r.steps.len())),
    }
    for (edit, field) in [
        (
            (|v| {
                v["scenario"]["clients"] = serde_json::json!([
                    ["initialize"],
                    ["initialize"],
                    ["initialize"],
                    ["initialize"]
                ])
            }) as fn(&mut serde_json::Value),
            "scenario.clients",
        ),
        (
            |v| v["scenario"]["name"] = "../../x".into(),
            "scenario.name",
        ),
        (
            |v| v["scenario"]["invariants"] = serde_json::json!(["Q1"]),
            "scenario.invariants",
        ),
    ] {
        let mut v = original.clone();
        edit(&mut v);
        let e = load(&v).unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
}
