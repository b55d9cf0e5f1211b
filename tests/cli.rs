//! The command line, as a user runs it.

#![cfg(feature = "cli")]

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcp-streamable"))
}

#[test]
fn replay_confirms_a_committed_trace() {
    let out = bin()
        .args(["replay", "tests/traces/race_b_rmcp_0_16.trace.json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("reached B1 as recorded"), "{stdout}");
}

#[test]
fn check_one_small_model_prints_the_matrix_and_writes_pictures() {
    let out_dir = std::env::temp_dir().join("mcp-streamable-cli-check");
    let out = bin()
        .args([
            "check",
            "--model",
            "initialize_response_races_session_commit",
            "--threads",
            "1",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("FIXED x CSHARP_PR1381") && stdout.contains("C5"),
        "{stdout}"
    );
    assert!(stdout.contains("2 as expected, 0 not"), "{stdout}");
    let svg = out_dir.join("initialize_response_races_session_commit.FIXED.CSHARP_PR1381.svg");
    assert!(std::fs::read_to_string(svg).unwrap().starts_with("<svg"));
}

#[test]
fn a_wrong_expectation_fails_the_run() {
    let dir = std::env::temp_dir().join("mcp-streamable-cli-wrong");
    std::fs::create_dir_all(&dir).unwrap();
    let model =
        std::fs::read_to_string("models/initialize_response_races_session_commit.json").unwrap();
    // Claim that PR1381 holds: the checker must disagree and exit 1.
    let wrong = model.replace(
        r#""verdict": {"violates": ["C5"]}"#,
        r#""verdict": "holds""#,
    );
    assert_ne!(wrong, model);
    std::fs::write(dir.join("m.json"), wrong).unwrap();
    let out = bin()
        .args(["check", "--threads", "1", "--models"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("MISMATCH"));
}

#[test]
fn a_malformed_model_names_file_field_and_expectation() {
    let dir = std::env::temp_dir().join("mcp-streamable-cli-bad");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("bad.json"),
        r#"{"name":"bad","description":"d","clients":[["initialize"]],"bounds":{"depth":-3,"time_ms":1},"expect":[]}"#,
    )
    .unwrap();
    let out = bin()
        .args(["check", "--models"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("bad.json") && stderr.contains("bounds.depth"),
        "{stderr}"
    );
}

#[test]
fn a_budget_stops_a_check_as_bounded_with_its_own_exit_code() {
    let out = bin()
        .args([
            "check",
            "--model",
            "lifecycle",
            "--threads",
            "1",
            "--max-states",
            "500",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("bounded"), "{stdout}");
    assert!(!stdout.contains("holds"), "never holds: {stdout}");
    assert!(
        stdout.contains("bounded: no violation in 500 states to depth"),
        "{stdout}"
    );
    assert!(stdout.contains("0 not, 1 bounded"), "{stdout}");
}
