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

/// Ctrl-C in a long check: the running search stops, its line says
/// "bounded" with what it explored, the checks after it are named as not
/// run, and the exit code is 130. With stderr not a terminal, progress comes
/// as plain lines (the test waits for the first, so the search is running).
#[test]
fn ctrl_c_ends_a_long_check_as_bounded_with_the_figures_printed() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let mut child = bin()
        .args([
            "check",
            "--models",
            "models/large",
            "--threads",
            "1",
            "--progress-every",
            "1",
            "--out",
        ])
        .arg(std::env::temp_dir().join("mcp-streamable-cli-interrupt"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A watchdog: if no progress line ever came, the test would wait for
    // the whole model; end it after a minute (and fail below).
    let pid = child.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(60));
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
    });
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    // Progress lines come about a second apart (`--progress-every 1`); wait
    // for two, so the search is running and the lines are spaced.
    while seen.matches("progress: ").count() < 2 {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
    }
    assert!(
        seen.contains("progress: lifecycle_two_calls FIXED x FIXED:") && seen.contains(" states ("),
        "{seen}"
    );
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    stderr.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{stdout}{seen}");
    assert!(seen.contains("interrupted"), "{seen}");
    // Spaced by a second, not one per quarter-second report: two lines
    // in about two seconds, perhaps a third before the interrupt lands.
    assert!(seen.matches("progress: ").count() <= 3, "{seen}");
    assert!(
        stdout.contains("lifecycle_two_calls")
            && stdout.contains("stopped at an interrupt (Ctrl-C)")
            && stdout.contains("bounded: no violation in"),
        "{stdout}"
    );
    assert!(!stdout.contains("holds"), "never holds: {stdout}");
    // Every other check of models/large (each model's expected pairs, and
    // each fleet file's designs) was never started.
    let others = ["models/large", "models/large/fleet"]
        .into_iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let model: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            model["expect"].as_array().map_or(0, Vec::len)
        })
        .sum::<usize>()
        - 1;
    assert!(
        stdout.contains(&format!("interrupted: {others} check(s) not run"))
            && stdout.contains("1 bounded"),
        "{stdout}"
    );
}

/// A stop at any moment of any search reports: SIGINT or SIGTERM early in
/// breadth first, later in it, and in depth first, each time the running
/// check's `bounded` line and the summary, exit code 130.
#[test]
fn an_interrupt_at_any_moment_reports_the_running_check_and_the_summary() {
    use std::process::Stdio;
    let runs = [
        ("bfs", "-INT", 150),
        ("bfs", "-TERM", 600),
        ("bfs", "-INT", 1500),
        ("dfs", "-TERM", 150),
        ("dfs", "-INT", 900),
    ];
    for (search, signal, after_ms) in runs {
        let child = bin()
            .args([
                "check",
                "--models",
                "models/large",
                "--model",
                "lifecycle_two_calls",
                "--server",
                "FIXED",
                "--client",
                "FIXED",
                "--search",
                search,
                "--out",
            ])
            .arg(std::env::temp_dir().join("mcp-streamable-cli-interrupt-any"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(after_ms));
        let pid = child.id().to_string();
        assert!(Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success());
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let run = format!("{search} {signal} after {after_ms} ms:\n{stdout}{stderr}");
        assert_eq!(out.status.code(), Some(130), "{run}");
        assert!(
            stdout.contains("lifecycle_two_calls") && stdout.contains("bounded"),
            "{run}"
        );
        assert!(stdout.contains("1 check"), "the summary: {run}");
        assert!(!stdout.contains("holds"), "{run}");
    }
}

/// A model whose depth bound cuts its paths: breadth first and depth first
/// each say `holds within depth D` (never a bare `holds`), the note says
/// what was and was not explored, and the exit code is 4.
#[test]
fn a_depth_bound_that_cuts_paths_holds_within_depth_only() {
    let dir = std::env::temp_dir().join("mcp-streamable-cli-within-depth");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let model = serde_json::json!({
        "name": "cut_lifecycle",
        "description": "lifecycle with a depth bound its paths pass",
        "clients": [["initialize", "call", "close"]],
        "server": ["progress", "notify"],
        "bounds": {"depth": 10, "time_ms": 4000},
        "expect": [{"server": "FIXED", "client": "FIXED", "verdict": "holds", "min_states": 10}]
    });
    std::fs::write(dir.join("cut_lifecycle.json"), model.to_string()).unwrap();
    for search in ["bfs", "dfs"] {
        let out = bin()
            .args(["check", "--models"])
            .arg(&dir)
            .args(["--search", search, "--out"])
            .arg(dir.join("out"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(4), "{search}: {stdout}");
        assert!(
            stdout.contains("holds within depth 10")
                && stdout.contains("paths past it were not")
                && stdout
                    .contains("1 as expected, 0 not, 0 bounded, 1 within their depth bound only"),
            "{search}: {stdout}"
        );
    }
}

#[test]
fn a_bit_state_search_is_bounded_with_its_coverage_or_finds_a_real_violation() {
    let dir = std::env::temp_dir().join("mcp-streamable-cli-bitstate");
    let _ = std::fs::remove_dir_all(&dir);
    // FIXED holds on lifecycle, but a bit-state search never says so: it is
    // bounded (exit 3) and says what it may have missed.
    let out = bin()
        .args([
            "check",
            "--model",
            "lifecycle",
            "--server",
            "FIXED",
            "--search",
        ])
        .args(["bitstate", "--bitstate-bits", "20", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains("bounded")
            && stdout.contains("of its 2^20 bits set")
            && stdout.contains("states are expected to have been missed")
            && !stdout.contains(" holds "),
        "{stdout}"
    );
    // A buggy server is caught, with a counterexample that the trace
    // replays (the check writes it; `replay` confirms it).
    let out = bin()
        .args([
            "check",
            "--model",
            "competing_get_streams_2",
            "--server",
            "RMCP_0_16",
        ])
        .args(["--search", "bitstate", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("B1 ("), "{stdout}");
    let trace = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a trace written");
    let replayed = bin().args(["replay"]).arg(&trace).output().unwrap();
    let said = String::from_utf8_lossy(&replayed.stdout);
    assert!(
        replayed.status.success() && said.contains("reached B1 as recorded"),
        "{said}"
    );
    // An array outside 2^20..2^40 is refused.
    let out = bin()
        .args(["check", "--model", "lifecycle", "--search", "bitstate"])
        .args(["--bitstate-bits", "50"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn serve_refuses_a_path_that_is_not_absolute() {
    let out = bin()
        .args(["serve", "--addr", "127.0.0.1:0", "--path", "mcp"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--path \"mcp\" must start with /"), "{err}");
}

/// A bound of 0 would make a server that serves nobody (no session
/// admitted, every connection closed at once, every session ended before
/// its handshake): refused before anything is bound.
#[test]
fn serve_refuses_a_bound_of_zero() {
    for flag in [
        "--threads",
        "--connections-max",
        "--header-timeout-ms",
        "--sessions-max",
        "--sessions-per-peer-max",
        "--init-timeout-ms",
    ] {
        let out = bin()
            .args(["serve", "--addr", "127.0.0.1:0", flag, "0"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(flag) && err.contains("at least 1"),
            "{flag}: {err}"
        );
    }
}

/// A filter or a budget that would make `check` check nothing and pass (a
/// misspelt preset, a pair no model lists for one side only, zero threads
/// or states) is refused with exit code 2.
#[test]
fn check_refuses_what_would_select_or_bound_everything_away() {
    for (args, says) in [
        (
            &["--server", "NOPE"][..],
            "--server \"NOPE\": expected one of",
        ),
        (
            &["--client", "fixd"][..],
            "--client \"fixd\": expected one of",
        ),
        (
            &["--model", "lifecycle", "--server", "RMCP_0_16"][..],
            "nothing to check",
        ),
        (&["--threads", "0"][..], "at least 1"),
        (&["--max-states", "0"][..], "at least 1"),
        (&["--max-memory", "0"][..], "must be more than 0"),
    ] {
        let out = bin().arg("check").args(args).output().expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
