//! `mcp-streamable probe` against `serve`: FIXED shows no violation, and each
//! buggy preset shows its own race, found black box over real HTTP.

mod raw_http;
mod spawned;

use serde_json::{json, Value};
use spawned::Spawned;
use std::collections::BTreeSet;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcp-streamable"))
}

/// `serve` on a free loopback port; killed on drop.
fn serve(preset: &str, extra: &[&str]) -> Spawned {
    let mut command = bin();
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--preset", preset])
        .args(extra);
    Spawned::start(command)
}

const NOTIFY: [&str; 4] = [
    "--notify-tool",
    "notify",
    "--notify-args",
    r#"{"delay_ms":100}"#,
];

/// Two principals' tokens for `serve`, and the prober's credentials: its
/// own and the intruder's (I2).
const TOKEN_A: [&str; 2] = ["--auth-token", "token-a=alice"];
const TOKEN_B: [&str; 2] = ["--auth-token", "token-b=bob"];
const WHO: [&str; 4] = ["--bearer", "token-a", "--intruder-bearer", "token-b"];

/// Runs the prober; its exit code and the rules by verdict.
fn probe(url: &str, extra: &[&str]) -> (Option<i32>, BTreeSet<String>, BTreeSet<String>, String) {
    let out = bin()
        .args(["probe", "--json", url])
        .args(extra)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let findings: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let rules = |verdict: &str| -> BTreeSet<String> {
        findings
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["verdict"] == verdict)
            .map(|f| f["rule"].as_str().unwrap().to_owned())
            .collect()
    };
    (out.status.code(), rules("violates"), rules("holds"), text)
}

#[test]
fn fixed_holds_every_rule_it_can_test() {
    // Two principals: every rule runs authenticated, and I2 can be tested.
    let s = serve(
        "FIXED",
        &[&["--registration-notice"][..], &TOKEN_A, &TOKEN_B].concat(),
    );
    let args = [&NOTIFY[..], &WHO[..]].concat();
    let (code, violated, held, text) = probe(&s.url, &args);
    assert_eq!(code, Some(0), "{text}");
    assert!(violated.is_empty(), "{violated:?}\n{text}");
    for rule in [
        "R21", "R24", "A1", "A2", "A3", "A5", "C1", "R36", "R37", "R38", "B9", "B10", "I1", "I2",
        "B1", "R18", "B4", "B2", "B3", "B5", "B8", "A4",
        // The 2026-07-28 era, on the same endpoint.
        "D1", "H1", "H2", "H3", "H4", "H5", "H6", "V1", "U1", "G1", "M1", "M2", "M3", "J1",
    ] {
        assert!(held.contains(rule), "{rule} not shown to hold\n{text}");
    }
    assert!(!text.contains("could_not_test"), "{text}");
    let one_id = finding(&text, "I1", "2026-07-28 callers under one request id");
    assert_eq!(one_id["verdict"], "holds", "{text}");
    let resumed = finding(&text, "A5", "finished POST stream");
    assert_eq!(resumed["verdict"], "holds", "{text}");
    // The aimed rounds: a change made as a stream opens.
    for (rule, what) in [("B4", "sent as a GET opens"), ("M2", "starts as a change")] {
        assert_eq!(finding(&text, rule, what)["verdict"], "holds", "{text}");
    }
    let sessionless = finding(&text, "I1", "sessionless callers under one request id");
    assert_eq!(
        sessionless["verdict"], "not_applicable",
        "FIXED mints sessions\n{text}"
    );
}

fn findings(text: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(text).unwrap();
    v.as_array().unwrap().clone()
}

/// The one finding of `rule` whose `what` contains `what`.
fn finding(text: &str, rule: &str, what: &str) -> Value {
    let findings = findings(text);
    let mut hits = findings
        .iter()
        .filter(|f| f["rule"] == rule && f["what"].as_str().unwrap().contains(what));
    let hit = hits
        .next()
        .unwrap_or_else(|| panic!("no {rule} {what:?}\n{text}"));
    assert!(hits.next().is_none(), "two {rule} {what:?}\n{text}");
    hit.clone()
}

#[test]
fn a_shared_stateless_transport_answers_one_caller_on_the_others_exchange() {
    let s = serve("TS_SDK_1_25_SHARED", &[]);
    let (code, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(code, Some(1), "I1 is a MUST: {text}");
    let one_id = finding(&text, "I1", "2026-07-28 callers under one request id");
    assert_eq!(one_id["verdict"], "violates", "{text}");
    let evidence = one_id["evidence"].as_str().unwrap();
    assert!(evidence.contains("carried A's"), "{evidence}");
    assert_eq!(
        violated,
        BTreeSet::from(["I1".to_owned()]),
        "the session era is FIXED's\n{text}"
    );
}

/// `serve` with two principals' tokens, probed as the first with the
/// second as the intruder; the I2 finding.
fn probe_two_principals(preset: &str) -> (Value, String) {
    let s = serve(preset, &[TOKEN_A, TOKEN_B].concat());
    let (_, _, _, text) = probe(&s.url, &WHO);
    (finding(&text, "I2", "another principal's session"), text)
}

#[test]
fn a_session_bound_to_its_principal_refuses_another() {
    let (i2, text) = probe_two_principals("FIXED");
    assert_eq!(i2["verdict"], "holds", "{text}");
    let evidence = i2["evidence"].as_str().unwrap();
    assert!(evidence.contains("the owner is still served"), "{evidence}");
    let (_, _, _, text) = probe(&serve("FIXED", &[]).url, &[]);
    let i2 = finding(&text, "I2", "another principal's session");
    assert_eq!(i2["verdict"], "could_not_test", "one credential: {text}");
}

#[test]
fn python_1_27_1_serves_another_principal_in_the_session() {
    let (i2, text) = probe_two_principals("PYTHON_1_27_1");
    assert_eq!(i2["verdict"], "violates", "{text}");
    let evidence = i2["evidence"].as_str().unwrap();
    assert!(
        evidence.contains("its tools/list was answered"),
        "{evidence}"
    );
}

#[test]
fn mcp_go_0_44_leaks_the_registration_notification() {
    // No notify tool: the registration hook alone is the source (race A).
    let s = serve("MCP_GO_0_44", &["--registration-notice"]);
    let (code, violated, _, text) = probe(&s.url, &[]);
    assert!(
        violated.contains("A1") || violated.contains("A3"),
        "{violated:?}\n{text}"
    );
    if violated.contains("A1") {
        assert_eq!(code, Some(1), "A1 is a MUST");
    }
}

/// A fleet instance takes a preset's scheduling points as the plain
/// server does: mcp-go's handler steps answer its notification POSTs (race
/// A shows there too), and GO_SDK_1_7's held acknowledgement leaves its
/// window open to the same aimed change.
#[test]
fn a_fleet_instance_plays_a_presets_scheduling_points() {
    let s = serve(
        "MCP_GO_0_44",
        &["--registration-notice", "--store", "memory"],
    );
    let (_, violated, _, text) = probe(&s.url, &NOTIFY);
    assert!(
        violated.contains("A1") || violated.contains("A3"),
        "{violated:?}\n{text}"
    );
    let s = serve("GO_SDK_1_7", &["--store", "memory"]);
    let (_, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(
        violated,
        BTreeSet::from(["M2".to_owned()]),
        "as on the plain server\n{text}"
    );
}

#[test]
fn toolhive_4075_still_leaks_a_later_notification() {
    let s = serve("TOOLHIVE_4075", &["--registration-notice"]);
    let (_, violated, _, text) = probe(&s.url, &NOTIFY);
    assert!(
        violated.contains("A1") || violated.contains("A3"),
        "{violated:?}\n{text}"
    );
}

#[test]
fn rmcp_0_16_ends_streams_replays_inclusively_and_across_streams() {
    let s = serve("RMCP_0_16", &[]);
    let (code, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(code, Some(1), "{text}");
    for rule in ["R24", "R18", "B2", "B3"] {
        assert!(violated.contains(rule), "{rule}: {violated:?}\n{text}");
    }
}

#[test]
fn rmcp_3_9_starves_the_shadow_streams_and_resumes_into_nothing() {
    let s = serve("RMCP_3_9", &[]);
    let (code, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(code, Some(1), "{text}");
    // M3: its listen is acknowledged before it is registered; `serve`
    // holds the registration back for its step delay, and the change the
    // prober makes once acknowledged is lost there.
    for rule in ["B4", "R18", "B2", "B5", "M3"] {
        assert!(violated.contains(rule), "{rule}: {violated:?}\n{text}");
    }
    let b5 = finding(
        &text,
        "B5",
        "a resumption with nothing to replay does not end empty again and again",
    );
    assert!(
        b5["evidence"]
            .as_str()
            .is_some_and(|e| e.contains("3 resumptions")),
        "{text}"
    );
    // The finished stream is forgotten: resumed from before its response,
    // it answers an empty stream (rust-sdk PR #799's review).
    let resumed = finding(&text, "A5", "finished POST stream");
    assert_eq!(resumed["verdict"], "violates", "{text}");
}

#[test]
fn frontmcp_before_529_replays_another_sessions_events_from_one_endpoint() {
    // `serve` gives this preset one endpoint for every session, where its
    // lookup across sessions acts; FIXED in the same layout keeps them apart.
    let what = "Last-Event-ID of another session";
    let s = serve("FRONTMCP_BEFORE_529", &[]);
    let (code, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(code, Some(1), "I1 is a MUST: {text}");
    let i1 = finding(&text, "I1", what);
    assert_eq!(i1["verdict"], "violates", "{text}");
    assert!(
        i1["evidence"]
            .as_str()
            .is_some_and(|e| e.contains("replayed A's")),
        "{text}"
    );
    assert_eq!(
        violated,
        BTreeSet::from(["I1".to_owned()]),
        "only the lookup differs from FIXED\n{text}"
    );
    let s = serve("FIXED", &["--store", "memory"]);
    let (code, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(code, Some(0), "{violated:?}\n{text}");
    assert_eq!(finding(&text, "I1", what)["verdict"], "holds", "{text}");
}

#[test]
fn rmcp_2_2_answers_a_call_with_its_progress() {
    let s = serve("RMCP_2_2", &[]);
    let (code, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(code, Some(1), "J1 is a MUST: {text}");
    assert_eq!(
        violated,
        BTreeSet::from(["J1".to_owned()]),
        "only the framing differs from FIXED\n{text}"
    );
    // I2 needs two principals; the overlapping calls' I1 gets progress
    // for answers, the bug J1 shows, so it cannot judge them.
    let untested: Vec<String> = findings(&text)
        .into_iter()
        .filter(|f| f["verdict"] == "could_not_test" && f["rule"] != "I2")
        .filter(|f| !f["what"].as_str().unwrap().contains("under one request id"))
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        untested.is_empty(),
        "a listen is no JSON answer: {untested:?}\n{text}"
    );
}

#[test]
fn the_ts_example_event_store_resumes_into_nothing() {
    let s = serve("TS_EXAMPLE_EVENT_STORE", &[]);
    let (_, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(
        violated,
        BTreeSet::from(["A5".to_owned(), "B4".to_owned()]),
        "nothing replayed, nothing after: only the store differs from FIXED\n{text}"
    );
}

#[test]
fn mcp_go_before_933_asks_on_the_standalone_get() {
    let s = serve("MCP_GO_BEFORE_933", &[]);
    let (_, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(
        violated,
        BTreeSet::from(["B8".to_owned()]),
        "only the question's stream differs from FIXED\n{text}"
    );
    assert!(text.contains("the request on the standalone GET"), "{text}");
}

#[test]
fn python_pr2934_closes_a_stream_before_any_event_id() {
    // `test_reconnection` closes its stream in the handler, before the
    // lazily started writer has put the priming event on the wire.
    let s = serve("PYTHON_PR2934", &[]);
    let (_, violated, _, text) = probe(&s.url, &NOTIFY);
    assert!(violated.contains("B9"), "{violated:?}\n{text}");
    assert!(text.contains("last event id None"), "{text}");
}

#[test]
fn java_sdk_2_0_drops_what_it_sends_before_the_get() {
    let s = serve("JAVA_SDK_2_0", &[]);
    let (_, violated, _, text) = probe(&s.url, &NOTIFY);
    assert!(violated.contains("B10"), "{violated:?}\n{text}");
    assert_eq!(violated.len(), 1, "only the window: {violated:?}\n{text}");
}

/// The TypeScript SDK's server (1.32.2, 2.4.0): a cancelled call's POST
/// is never ended (A4), and nothing waits for a GET not open yet (B10);
/// the two findings `probe` makes on the real servers, and nothing more.
#[test]
fn ts_sdk_1_32_never_ends_a_cancelled_calls_post() {
    let s = serve("TS_SDK_1_32", &[]);
    let (_, violated, _, text) = probe(&s.url, &NOTIFY);
    let expected: BTreeSet<String> = ["A4", "B10"].map(str::to_owned).into();
    assert_eq!(violated, expected, "{text}");
    let hang = finding(&text, "A4", "cancelled while its POST waits");
    let evidence = hang["evidence"].as_str().unwrap();
    assert!(evidence.contains("still open"), "{evidence}");
}

#[test]
fn go_sdk_1_7_lets_a_change_precede_the_acknowledgement() {
    // `serve` holds the listen's acknowledgement back for its step delay,
    // as a slow scheduler would; a change aimed into that window goes
    // first. Taken in the same turn, the window is closed to the wire.
    let what = "starts as a change is made";
    let s = serve("GO_SDK_1_7", &[]);
    let (code, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(code, Some(1), "M2 is a MUST: {text}");
    assert_eq!(
        violated,
        BTreeSet::from(["M2".to_owned()]),
        "only the listen's start differs from FIXED\n{text}"
    );
    let m2 = finding(&text, "M2", what);
    assert_eq!(m2["verdict"], "violates", "{text}");
    assert!(
        m2["evidence"]
            .as_str()
            .is_some_and(|e| e.contains("tools/list_changed")),
        "{text}"
    );
    assert_eq!(
        finding(&text, "M2", "opens with its acknowledgement, naming it")["verdict"],
        "holds",
        "a listen alone is acknowledged first: {text}"
    );
    let s = serve("GO_SDK_1_7", &["--step-delay-ms", "0"]);
    let (code, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(code, Some(0), "{violated:?}\n{text}");
    assert_eq!(finding(&text, "M2", what)["verdict"], "holds", "{text}");
}

#[test]
fn csharp_before_1212_drops_what_is_sent_as_a_get_opens() {
    // With the registration notice held for the session's first GET (as
    // `scripts/compat.sh` serves it): the prober reads that off first.
    let what = "sent as a GET opens";
    let s = serve("CSHARP_BEFORE_1212", &["--registration-notice"]);
    let (_, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(
        violated,
        BTreeSet::from(["B4".to_owned()]),
        "only the GET's wiring differs from FIXED\n{text}"
    );
    let b4 = finding(&text, "B4", what);
    assert_eq!(b4["verdict"], "violates", "{text}");
    assert_eq!(
        finding(&text, "B4", "with a GET open")["verdict"],
        "holds",
        "a GET open for a while is wired: {text}"
    );
}

#[test]
fn conformance_mock_answers_on_a_plain_get() {
    let s = serve("CONFORMANCE_SSE_RETRY", &[]);
    let (code, violated, _, text) = probe(&s.url, &NOTIFY);
    assert_eq!(code, Some(1), "{text}");
    assert!(violated.contains("C1"), "{violated:?}\n{text}");
}

#[test]
fn without_a_notify_tool_the_prober_says_what_it_could_not_test() {
    let s = serve("FIXED", &[]);
    let out = bin().args(["probe", &s.url]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("CouldNotTest") && text.contains("needs --notify-tool"),
        "{text}"
    );
}

#[test]
fn a_bad_notify_args_is_a_usage_error() {
    let out = bin()
        .args(["probe", "http://127.0.0.1:9/mcp", "--notify-args", "[1]"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--notify-args"));
}

/// One request read off `c`: its head and a body of its Content-Length
/// (within two seconds).
fn read_request(c: &mut std::net::TcpStream) -> Vec<u8> {
    use std::io::Read;
    let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(2)));
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = c.read(&mut buf) {
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen).to_ascii_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if seen.len() >= end + 4 + len {
                break;
            }
        }
    }
    seen
}

/// A server that answers every request with one canned HTTP answer (`ID`
/// in `body` becomes the request's id): what a careless or 2025-only server
/// might do. One connection at a time, each
/// closed after its answer; the thread ends with the test process.
fn canned(status: &str, body: &'static str) -> String {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let status = status.to_owned();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(500) {
            let Ok(mut c) = conn else { continue };
            let seen = read_request(&mut c);
            let id = String::from_utf8_lossy(&seen)
                .split_once("\r\n\r\n")
                .and_then(|(_, b)| serde_json::from_str::<Value>(b).ok())
                .and_then(|m| m.get("id").cloned())
                .unwrap_or(Value::Null);
            let body = body.replace("ID", &id.to_string());
            let _ = write!(
                c,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/mcp")
}

#[test]
fn a_server_that_says_yes_to_everything_breaks_the_new_eras_rules() {
    // It lists 2026-07-28 and a tool with a custom header (SEP-2243), then
    // answers every refusal the era requires with 200.
    let url = canned(
        "200 OK",
        r#"{"jsonrpc":"2.0","id":ID,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"}}}}]}}"#,
    );
    let (_, violated, _, text) = probe(&url, &[]);
    for rule in ["H1", "H2", "H3", "H4", "H5", "V1", "U1", "G1"] {
        assert!(violated.contains(rule), "{rule}: {violated:?}\n{text}");
    }
}

#[test]
fn a_2025_server_whose_refusal_names_no_request_is_reported() {
    // TS SDK 1.32.2's answer to a `server/discover` probe: no id to correlate,
    // so a client that falls back only on a correlated error cannot.
    let url = canned(
        "400 Bad Request",
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad session"}}"#,
    );
    let (_, violated, _, text) = probe(&url, &[]);
    assert!(violated.contains("F1"), "{violated:?}\n{text}");
    assert!(!violated.contains("H1"), "no new-era rule applies: {text}");
}

/// A server that answers every POST with `answer` (a content type and a
/// body, status 200, then closes) and every GET with 405, over raw TCP: a
/// hostile server the prober must survive.
fn raw_server(ctype: &'static str, body: Vec<u8>) -> String {
    let addr = raw_http::serve(move |request| {
        let (status, ctype, body): (_, _, &[u8]) = if request.is_post() {
            ("200 OK", ctype, &body)
        } else {
            ("405 Method Not Allowed", "text/plain", b"")
        };
        let mut bytes = raw_http::head(status, ctype, body.len()).into_bytes();
        bytes.extend_from_slice(body);
        bytes
    });
    format!("http://{addr}/mcp")
}

/// What a hostile server sends is kept within the prober's bounds and
/// reported in one line each: an event stream without end is summarized
/// ("and N more"), a JSON body past 1 MiB is read no further, evidence with
/// the server's newlines stays one line of at most 400 characters.
#[test]
fn a_hostile_server_is_probed_within_bounds() {
    let events: String = (0..5_000)
        .map(|n| format!("data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"n\":{n}}}}}\n\n"))
        .collect();
    let mut json = br#"{"jsonrpc":"2.0","id":1,"result":{"x":""#.to_vec();
    json.resize(64 << 20, b'x');
    json.extend_from_slice(br#""}}"#);
    for (url, says) in [
        (
            raw_server("text/event-stream", events.into_bytes()),
            "4984 more]",
        ),
        (
            raw_server("application/json", json),
            "over 1048576 body bytes (read no further)",
        ),
    ] {
        let (_, _, _, text) = probe(&url, &[]);
        let findings: Value = serde_json::from_str(&text).unwrap();
        let evidence: Vec<&str> = findings
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["evidence"].as_str().unwrap())
            .collect();
        assert!(
            evidence.iter().any(|e| e.contains(says)),
            "{says}: {evidence:#?}"
        );
        for e in &evidence {
            assert!(e.chars().count() <= 401 && !e.contains('\n'), "{e}");
        }
    }
}

/// A server whose `tools/call` opens an event stream and never writes to
/// it or ends it, cancelled or not: a server that drops a cancelled call's
/// answer and waits for ever for one to end the stream with. It keeps
/// every such connection open until the test process ends; everything
/// else is answered at once (a session, its tools: `slow_progress`, 202 to
/// notifications, -32601 to other requests, 405 to GETs) and closed.
fn never_ends_a_call() -> String {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().take(500) {
            let Ok(mut c) = conn else { continue };
            let seen = read_request(&mut c);
            let text = String::from_utf8_lossy(&seen).into_owned();
            let message = text
                .split_once("\r\n\r\n")
                .and_then(|(_, b)| serde_json::from_str::<Value>(b).ok())
                .unwrap_or(Value::Null);
            let id = message.get("id").cloned().unwrap_or(Value::Null);
            let answer = |status: &str, body: Value| {
                let body = body.to_string();
                format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
            };
            let reply = match message["method"].as_str() {
                _ if text.starts_with("GET") => answer("405 Method Not Allowed", json!({})),
                Some("tools/call") => {
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                    let _ = c.write_all(head.as_bytes());
                    held.push(c);
                    continue;
                }
                Some("initialize") => answer(
                    "200 OK",
                    json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "x", "version": "1"}}}),
                ),
                Some("tools/list") => answer(
                    "200 OK",
                    json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                        {"name": "slow_progress", "inputSchema": {"type": "object"}}]}}),
                ),
                Some(_) if id.is_null() => {
                    "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_owned()
                }
                _ => answer(
                    "200 OK",
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
                ),
            };
            let _ = c.write_all(reply.as_bytes());
        }
    });
    format!("http://{addr}/mcp")
}

/// A4 after a cancellation: `serve` ends a cancelled call's POST at once
/// (`fixed_holds_every_rule_it_can_test` requires it to hold); a server
/// that never ends it is reported, with what the POST got.
#[test]
fn a_cancelled_call_whose_post_never_ends_is_reported() {
    let s = serve("FIXED", &[]);
    let (_, _, _, text) = probe(&s.url, &[]);
    let fixed = finding(&text, "A4", "cancelled while its POST waits");
    assert_eq!(fixed["verdict"], "holds", "{text}");
    assert!(
        fixed["evidence"].as_str().unwrap().contains("ended after"),
        "{text}"
    );

    let url = never_ends_a_call();
    let (code, violated, _, text) = probe(&url, &[]);
    assert!(violated.contains("A4"), "{violated:?}\n{text}");
    let hang = finding(&text, "A4", "cancelled while its POST waits");
    let evidence = hang["evidence"].as_str().unwrap();
    assert!(evidence.contains("still open"), "{evidence}");
    assert_eq!(hang["must"], false, "the spec does not say it in a MUST");
    assert_ne!(code, None, "the prober ends: {text}");
}
