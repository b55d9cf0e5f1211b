//! `mcp-streamable probe-client` against our own client (`call`): FIXED
//! holds every scenario it takes, and each buggy client preset is caught by
//! the scenario of its bug, over real HTTP, as a hang or a violation.

use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-streamable");

/// Runs the client prober on `call` with `call_args`; its exit code and the
/// verdict of each scenario run.
fn probe_client(extra: &[&str], call_args: &[&str]) -> (Option<i32>, BTreeMap<String, String>) {
    let out = Command::new(BIN)
        .args(["probe-client", "--json", "--timeout-ms", "3000"])
        .args(extra)
        .args(["--", BIN, "call"])
        .args(call_args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let doc: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
    let verdicts = doc["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["scenario"].as_str().unwrap().to_owned(),
                s["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (out.status.code(), verdicts)
}

fn with(verdicts: &BTreeMap<String, String>, verdict: &str) -> Vec<String> {
    verdicts
        .iter()
        .filter(|(_, v)| *v == verdict)
        .map(|(k, _)| k.clone())
        .collect()
}

#[test]
fn our_client_holds_every_scenario_it_takes() {
    // The session era, with its standalone GET: every session-era scenario applies.
    let (code, v) = probe_client(&[], &["--background-get"]);
    assert_eq!(code, Some(0), "{v:?}");
    assert_eq!(
        with(&v, "holds").len(),
        18,
        "baseline, the sixteen session-era scenarios and given-up-call: {v:?}"
    );
    assert_eq!(
        with(&v, "not_applicable"),
        [
            "discover-refused-400",
            "discover-refused-404",
            "discover-refused-405",
            "listen-cut"
        ],
        "a session-era client never asks server/discover, and hears changes on its GET"
    );
    // A one-shot call opens no GET: the question sent there cannot reach it.
    let (code, v) = probe_client(&["--scenario", "request-on-get"], &[]);
    assert_eq!(code, Some(0));
    assert_eq!(v["request-on-get"], "not_applicable");
    // Auto: discover refused in each way a 2025 server refuses it, and the
    // fallback; the 2026-07-28 era's JSON faults judged too.
    let (code, v) = probe_client(
        &[
            "--scenario",
            "discover-refused-400",
            "--scenario",
            "discover-refused-404",
            "--scenario",
            "discover-refused-405",
            "--scenario",
            "json-not-the-response",
            "--scenario",
            "resumed-response",
            "--scenario",
            "listen-cut",
            "--scenario",
            "given-up-call",
        ],
        &["--era", "auto"],
    );
    assert_eq!(code, Some(0), "{v:?}");
    for s in [
        "discover-refused-400",
        "discover-refused-404",
        "discover-refused-405",
        "json-not-the-response",
        "listen-cut",
        "given-up-call",
    ] {
        assert_eq!(v[s], "holds", "{s}: {v:?}");
    }
    assert_eq!(
        v["resumed-response"], "not_applicable",
        "no session, no resumption"
    );
}

#[test]
fn each_buggy_client_preset_is_caught_by_its_scenario() {
    // rmcp #912: a 404 re-initializes and leaves the call in flight.
    let (code, v) = probe_client(
        &[
            "--scenario",
            "session-gone",
            "--scenario",
            "resumed-response",
        ],
        &["--preset", "RMCP_1_7"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["session-gone"], "hangs", "{v:?}");
    assert_eq!(v["resumed-response"], "holds", "{v:?}");
    // The same with two calls in flight: each is left waiting.
    let (code, v) = probe_client(
        &["--scenario", "session-gone-in-flight"],
        &["--preset", "RMCP_1_7"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["session-gone-in-flight"], "hangs", "{v:?}");
    // go-sdk 1.7 and the TS SDK 2.4.0's `listChanged` subscription never
    // notice that a listen's stream is gone: the change cut from it is lost.
    for preset in ["GO_SDK_1_7", "TS_SDK_2_4"] {
        let (code, v) = probe_client(
            &["--scenario", "listen-cut"],
            &["--era", "auto", "--preset", preset],
        );
        assert_eq!(code, Some(1), "{preset}");
        assert_eq!(v["listen-cut"], "violates", "{preset}: {v:?}");
    }
    // rmcp PR #1208: a JSON 200 without the response leaves the call waiting.
    let (code, v) = probe_client(
        &[
            "--scenario",
            "malformed-json",
            "--scenario",
            "json-not-the-response",
        ],
        &["--preset", "RMCP_3_3"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["malformed-json"], "hangs", "{v:?}");
    assert_eq!(v["json-not-the-response"], "hangs", "{v:?}");
    // The Python SDK's client (and rmcp 3.9's) start their resumption count
    // anew on every clean end: empty resumptions without end.
    let (code, v) = probe_client(
        &["--scenario", "empty-resume", "--scenario", "second-drop"],
        &["--preset", "PYTHON_2_3"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["empty-resume"], "loops", "{v:?}");
    assert_eq!(v["second-drop"], "holds", "it keeps its place: {v:?}");
    // The TypeScript SDK's client: a stream it cannot resume, and a JSON
    // body that is another message, leave the call waiting; a body that is
    // not JSON-RPC fails it; a call it gave up keeps its POST, or the
    // resumption it was polling with, read for as long as it stays
    // connected (the server never ends them).
    let (code, v) = probe_client(
        &[
            "--scenario",
            "close-before-priming",
            "--scenario",
            "json-not-the-response",
            "--scenario",
            "malformed-json",
            "--scenario",
            "given-up-call",
            "--scenario",
            "given-up-while-polling",
        ],
        &["--preset", "TS_SDK_1_32"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["close-before-priming"], "hangs", "{v:?}");
    assert_eq!(v["json-not-the-response"], "hangs", "{v:?}");
    assert_eq!(v["malformed-json"], "holds", "{v:?}");
    assert_eq!(v["given-up-call"], "violates", "{v:?}");
    assert_eq!(v["given-up-while-polling"], "violates", "{v:?}");
    // Race C: the C# client before PR #1381 completes a call only once its
    // own stream (or a resumption of it) returns; the response sent on the
    // background GET does not count, and the resumption, answered 204 (the
    // call's stream is over), fails the call though its response arrived.
    let (code, v) = probe_client(
        &["--scenario", "response-on-open-get"],
        &["--preset", "CSHARP_BASELINE", "--background-get"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["response-on-open-get"], "violates", "{v:?}");
    // typescript-sdk #2654: a withdrawal of request 0 is ignored and the
    // application's late answer sent; request 1's is obeyed.
    let (code, v) = probe_client(
        &[
            "--scenario",
            "withdrawn-request",
            "--scenario",
            "withdrawn-request-id-0",
        ],
        &["--preset", "TS_SDK_2_0"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["withdrawn-request-id-0"], "violates", "{v:?}");
    assert_eq!(v["withdrawn-request"], "holds", "{v:?}");
    // csharp-sdk PR #1381's C5: initialize completes before its session id
    // is committed, so the first call goes without it.
    let (code, v) = probe_client(&["--scenario", "baseline"], &["--preset", "CSHARP_PR1381"]);
    assert_eq!(code, Some(1));
    assert_eq!(v["baseline"], "violates", "{v:?}");
}

#[test]
fn a_client_that_never_exits_is_a_hang_within_the_bound_and_its_group_is_killed() {
    // `sleep` stands for a client that never connects: the run ends at the
    // bound with the verdict, not stuck on it.
    let out = Command::new(BIN)
        .args([
            "probe-client",
            "--json",
            "--timeout-ms",
            "500",
            "--scenario",
            "baseline",
            "--",
            "sh",
            "-c",
            "sleep 30 & sleep 30",
        ])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["scenarios"][0]["verdict"], "hangs");
    assert!(doc["scenarios"][0]["evidence"]
        .as_str()
        .unwrap()
        .contains("nothing reached the server"));
    assert_eq!(out.status.code(), Some(1));
}
