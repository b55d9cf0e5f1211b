//! The command line, as a user runs it.

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

/// `serve` on a free loopback port; returns the child and its URL.
fn serve(preset: &str) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = bin()
        .args(["serve", "--addr", "127.0.0.1:0", "--preset", preset])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("serving URL")
        .to_owned();
    (child, url)
}

#[test]
fn probe_finds_nothing_wrong_with_fixed() {
    let (mut child, url) = serve("FIXED");
    let out = bin().args(["probe", &url]).output().unwrap();
    child.kill().ok();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(!stdout.contains("Violates"), "{stdout}");
    assert!(stdout.matches("Holds").count() >= 8, "{stdout}");
}

#[test]
fn probe_finds_rmcp_0_16_on_its_own() {
    let (mut child, url) = serve("RMCP_0_16");
    let out = bin().args(["probe", "--json", &url]).output().unwrap();
    child.kill().ok();
    assert_eq!(out.status.code(), Some(1), "a MUST rule is violated");
    let findings: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let violated: Vec<&str> = findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "violates")
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(
        violated.contains(&"B1"),
        "the second GET ends the first: {violated:?}"
    );
    assert!(
        violated.contains(&"R24"),
        "401 instead of 404: {violated:?}"
    );
}
