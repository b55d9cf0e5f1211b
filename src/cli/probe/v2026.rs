//! The 2026-07-28 era from outside (`basic/transports/streamable-http.mdx`,
//! `basic/patterns/subscriptions.mdx`, `changelog.mdx`):
//!
//! - D1: `server/discover` answers with a complete result that lists
//!   2026-07-28. A server that does not speak the era instead gets F1: the
//!   probe is refused so that probing clients fall back (a 4xx JSON-RPC
//!   error echoing the id, outside -32020..-32022, no session minted); the
//!   other rules here then do not apply.
//! - M1: a 2026-07-28 answer names no session and its SSE events carry no ids.
//! - H1–H3: `Mcp-Method` disagreeing with the body, a missing `Mcp-Name`, an
//!   `Mcp-Name` disagreeing with the tool: 400 with -32020.
//! - H4: a call of the first listed tool that declares a custom header
//!   (SEP-2243, `x-mcp-header` on a string parameter) whose `Mcp-Param-*`
//!   is missing, or disagrees with the argument: 400 with -32020 (the
//!   calls carry filler arguments; a server that fails the rule runs the
//!   tool with them).
//! - H5: an `Mcp-Method` repeated, the first copy agreeing with the body
//!   and the second not: 400 (never served by the first value, rmcp #1272).
//! - H6 (SHOULD): on that tool, an integer argument's header written with
//!   a fraction (`42.0` for 42) is accepted: servers compare integers by
//!   value, not as strings.
//! - V1: an unsupported version: 400 with -32022, `data.supported`, the id echoed.
//! - U1: a method the era does not have: 404 with -32601.
//! - G1: GET and DELETE carrying the 2026-07-28 version header: 405 (changelog:
//!   the era has neither; a dual-era server may still route them to sessions).
//! - J1: a call whose tool reports progress (`test_tool_with_progress`, the
//!   conformance suite's) gets its result: in an SSE answer after the
//!   progress, never a JSON body that is the progress (rmcp #980).
//! - I1 (`one_id.rs`): two callers' calls under one id at once each get
//!   only their own progress and answer (CVE-2026-25536).
//! - M2: a listen's first message is its acknowledgement, naming it.
//! - M3: a change broadcast after the acknowledgement reaches the listen
//!   once, named (needs `--notify-tool`).

use super::wire::{describe, has_result, is_response_to, Open, PROGRESS_TOOL};
use super::{one_id, Probe, Verdict, NOTIFY_WAIT, QUICK};
use mcp_streamable::headers;
use mcp_streamable::server::v2026::{
    META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SUBSCRIPTION_ID,
};
use mcp_streamable::tool_headers::{ParamHeader, ParamType, ToolHeaderTable};
use mcp_streamable::version::ProtocolVersion;
use serde_json::{json, Value};

const V2026: &str = ProtocolVersion::LATEST_V2026.as_str();
const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// One 2026-07-28 request as sent: the method, its `Mcp-Name`, its params.
struct Call<'a> {
    method: &'a str,
    name: Option<&'a str>,
    params: Value,
}

impl Call<'_> {
    /// The params with the per-request `_meta` (version `version`).
    fn params(&self, version: &str) -> Value {
        let mut params = self.params.clone();
        if let Some(o) = params.as_object_mut() {
            let meta = o.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(META_PROTOCOL_VERSION.into(), json!(version));
                meta.insert(
                    CLIENT_INFO.into(),
                    json!({"name": "mcp-streamable-probe", "version": env!("CARGO_PKG_VERSION")}),
                );
                meta.insert(META_CLIENT_CAPABILITIES.into(), json!({}));
            }
        }
        params
    }
}

/// The standard headers of a 2026-07-28 POST; `tweak` may change them.
fn v2026_headers(call: &Call, version: &str) -> Vec<(String, String)> {
    let mut h = vec![
        (
            headers::CONTENT_TYPE.to_owned(),
            headers::MIME_JSON.to_owned(),
        ),
        (
            headers::ACCEPT.to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        (headers::MCP_PROTOCOL_VERSION.to_owned(), version.to_owned()),
        (headers::MCP_METHOD.to_owned(), call.method.to_owned()),
    ];
    if let Some(n) = call.name {
        h.push((headers::MCP_NAME.to_owned(), n.to_owned()));
    }
    h
}

impl Probe {
    /// POSTs `call` as a 2026-07-28 request, headers changed by `tweak`; its id and answer.
    async fn v2026(
        &self,
        call: &Call<'_>,
        tweak: impl FnOnce(&mut Vec<(String, String)>),
        window: std::time::Duration,
    ) -> Option<(u64, Open)> {
        self.v2026_at(call, V2026, tweak, window).await
    }

    async fn v2026_at(
        &self,
        call: &Call<'_>,
        version: &str,
        tweak: impl FnOnce(&mut Vec<(String, String)>),
        window: std::time::Duration,
    ) -> Option<(u64, Open)> {
        let (id, mut o) = self.v2026_open_at(call, version, tweak).await?;
        o.gather(window).await;
        Some((id, o))
    }

    /// Opens a 2026-07-28 POST and leaves it open (a listen).
    async fn v2026_open(&self, call: &Call<'_>) -> Option<(u64, Open)> {
        self.v2026_open_at(call, V2026, |_| {}).await
    }

    async fn v2026_open_at(
        &self,
        call: &Call<'_>,
        version: &str,
        tweak: impl FnOnce(&mut Vec<(String, String)>),
    ) -> Option<(u64, Open)> {
        let id = self.id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": call.method, "params": call.params(version)})
            .to_string();
        let mut h = v2026_headers(call, version);
        tweak(&mut h);
        let o = self.t.open("POST", &h, &body).await?;
        Some((id, o))
    }
}

/// The JSON-RPC answer to `id` in `o`, if any.
fn answer_to(o: &Open, id: u64) -> Option<Value> {
    o.messages().into_iter().find(|m| is_response_to(m, id))
}

fn error_code(m: &Value) -> Option<i64> {
    m.pointer("/error/code").and_then(Value::as_i64)
}

/// "400 -32020" style evidence of an answer.
fn status_and_code(o: &Open, id: u64) -> String {
    match answer_to(o, id).as_ref().and_then(error_code) {
        Some(c) => format!("{} {c}", o.status),
        None => o.summary(),
    }
}

/// Whether `o` answers `id` with HTTP `status` and JSON-RPC error `code`.
fn refused(o: &Open, id: u64, status: u16, code: i64) -> bool {
    o.status == status && answer_to(o, id).as_ref().and_then(error_code) == Some(code)
}

/// M1's look at one 2026-07-28 answer: `Some(evidence)` if it names a session or numbers events.
fn stateful(label: &str, o: &Open) -> Option<String> {
    let ids: Vec<&str> = o.events.iter().filter_map(|e| e.id.as_deref()).collect();
    (o.session.is_some() || !ids.is_empty())
        .then(|| format!("{label}: Mcp-Session-Id {:?}, event ids {ids:?}", o.session))
}

const D1_WHAT: &str = "server/discover lists 2026-07-28 (required in that era)";
const F1_WHAT: &str =
    "a 2025-only server refuses the probe so clients fall back (4xx, id echoed, no session)";
const M1_WHAT: &str = "a 2026-07-28 answer names no session, its events no ids";
const H1_WHAT: &str = "Mcp-Method disagreeing with the body gets 400 -32020";
const H2_WHAT: &str = "tools/call without Mcp-Name gets 400 -32020";
const H3_WHAT: &str = "Mcp-Name disagreeing with the tool gets 400 -32020";
const H4_WHAT: &str =
    "a tool's Mcp-Param header missing or disagreeing with its argument gets 400 -32020";
const H5_WHAT: &str = "a repeated Mcp-* header gets 400, never the first value's answer";
const H6_WHAT: &str = "an integer's custom header written as 42.0 for 42 is accepted";
const V1_WHAT: &str = "an unsupported version gets 400 -32022 naming the supported, id echoed";
const U1_WHAT: &str = "a method the era does not have gets 404 -32601";
const G1_WHAT: &str = "GET and DELETE with the 2026-07-28 version header get 405";
const M2_WHAT: &str = "a listen opens with its acknowledgement, naming it";
const J1_WHAT: &str =
    "a call whose tool reports progress gets its result (never the progress as its JSON body)";
const M3_WHAT: &str = "a change after the acknowledgement reaches the listen once, named";
const M2_UNDER_CHANGE_WHAT: &str =
    "a listen that starts as a change is made still opens with its acknowledgement";

pub async fn run(p: &mut Probe) {
    let discover = Call {
        method: "server/discover",
        name: None,
        params: json!({}),
    };
    let Some((id, o)) = p.v2026(&discover, |_| {}, QUICK).await else {
        p.add("D1", true, D1_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        return;
    };
    let result = answer_to(&o, id).and_then(|m| m.get("result").cloned());
    let lists_v2026 = result
        .as_ref()
        .and_then(|r| r.get("supportedVersions"))
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|s| s.as_str() == Some(V2026)));
    if !lists_v2026 {
        fall_back(p, id, &o);
        return;
    }
    p.add(
        "D1",
        true,
        D1_WHAT,
        Verdict::Holds,
        format!(
            "{} supportedVersions {}",
            o.status,
            result
                .as_ref()
                .map_or(Value::Null, |r| r["supportedVersions"].clone())
        ),
    );
    let mut stateful_seen = stateful("server/discover", &o);
    let tools = Call {
        method: "tools/list",
        name: None,
        params: json!({}),
    };
    let mut listing = Vec::new();
    if let Some((id, o)) = p.v2026(&tools, |_| {}, QUICK).await {
        stateful_seen = stateful_seen.or_else(|| stateful("tools/list", &o));
        listing = answer_to(&o, id)
            .and_then(|m| m.pointer("/result/tools").cloned())
            .and_then(|t| t.as_array().cloned())
            .unwrap_or_default();
    }
    let listed: Vec<String> = listing
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    progress_rule(p, &listed).await;
    one_id_rule(p, &listed).await;
    headers_rules(p).await;
    param_headers_rule(p, &listing).await;
    versions_and_methods(p).await;
    let listen = listen_rules(p).await;
    stateful_seen = stateful_seen.or(listen);
    p.add(
        "M1",
        true,
        M1_WHAT,
        Verdict::of(stateful_seen.is_none()),
        stateful_seen.unwrap_or_else(|| "no session id, no event id".to_owned()),
    );
}

/// J1: calls the conformance suite's progress tool, asking for progress;
/// its result must come, after any progress in an SSE answer. A JSON body
/// that is not the response (rmcp #980: the progress notification became
/// the body and the result was lost) violates it.
async fn progress_rule(p: &mut Probe, listed: &[String]) {
    if !listed.iter().any(|t| t == PROGRESS_TOOL) {
        let why = format!("no {PROGRESS_TOOL} tool listed");
        p.add("J1", true, J1_WHAT, Verdict::CouldNotTest, why);
        return;
    }
    let call = Call {
        method: "tools/call",
        name: Some(PROGRESS_TOOL),
        params: json!({"name": PROGRESS_TOOL, "arguments": {}, "_meta": {"progressToken": "j1"}}),
    };
    let Some((id, o)) = p.v2026(&call, |_| {}, NOTIFY_WAIT).await else {
        p.add("J1", true, J1_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        return;
    };
    let answered = has_result(&o, id);
    let evidence = format!("tools/call {PROGRESS_TOOL}: {}", o.summary());
    p.add("J1", true, J1_WHAT, Verdict::of(answered), evidence);
}

/// I1 for 2026-07-28 requests: two callers' overlapping calls under one
/// id (`one_id.rs`).
async fn one_id_rule(p: &mut Probe, listed: &[String]) {
    let what = one_id::V2026_WHAT;
    let Some((tool, args_a, args_b)) = one_id::slow_tool(listed) else {
        p.add(
            "I1",
            true,
            what,
            Verdict::CouldNotTest,
            one_id::no_slow_tool(),
        );
        return;
    };
    let id = p.id();
    let caller = |args: Value, token: String| {
        let call = Call {
            method: "tools/call",
            name: Some(tool),
            params: one_id::call_params(tool, args, &token),
        };
        one_id::Caller {
            headers: v2026_headers(&call, V2026),
            body: one_id::body(id, &call.params(V2026)),
            token,
        }
    };
    let a = caller(args_a, format!("i1-a-{id}"));
    let b = caller(args_b, format!("i1-b-{id}"));
    one_id::judge_overlap(p, what, id, a, b).await;
}

/// F1, for a server that did not answer the probe as a 2026-07-28 server would.
fn fall_back(p: &mut Probe, id: u64, o: &Open) {
    let answer = answer_to(o, id);
    let code = answer.as_ref().and_then(error_code);
    let echoed = answer.is_some();
    let ok = (400..500).contains(&o.status)
        && o.content_type == headers::MIME_JSON
        && echoed
        && !code.is_some_and(|c| (-32022..=-32020).contains(&c))
        && o.session.is_none();
    p.add(
        "D1",
        true,
        D1_WHAT,
        Verdict::NotApplicable,
        format!("the server does not speak 2026-07-28: {}", o.summary()),
    );
    let body = String::from_utf8_lossy(&o.body);
    p.add(
        "F1",
        false,
        F1_WHAT,
        Verdict::of(ok),
        format!(
            "{} {} {}{}",
            o.status,
            if o.content_type.is_empty() {
                "-"
            } else {
                &o.content_type
            },
            body.chars().take(160).collect::<String>(),
            o.session
                .as_ref()
                .map_or(String::new(), |s| format!(" (minted session {s})"))
        ),
    );
}

/// H1–H3 on `tools/list` and `tools/call`.
async fn headers_rules(p: &mut Probe) {
    let list = Call {
        method: "tools/list",
        name: None,
        params: json!({}),
    };
    let set = |h: &mut Vec<(String, String)>, name: &str, value: Option<&str>| {
        h.retain(|(n, _)| n != name);
        if let Some(v) = value {
            h.push((name.to_owned(), v.to_owned()));
        }
    };
    let r = p
        .v2026(
            &list,
            |h| set(h, headers::MCP_METHOD, Some("prompts/list")),
            QUICK,
        )
        .await;
    judge_refusal(p, "H1", H1_WHAT, r, 400, -32020);
    let call = Call {
        method: "tools/call",
        name: Some("mcp-streamable-probe-absent"),
        params: json!({"name": "mcp-streamable-probe-absent", "arguments": {}}),
    };
    let r = p
        .v2026(&call, |h| set(h, headers::MCP_NAME, None), QUICK)
        .await;
    judge_refusal(p, "H2", H2_WHAT, r, 400, -32020);
    let r = p
        .v2026(
            &call,
            |h| set(h, headers::MCP_NAME, Some("mcp-streamable-probe-other")),
            QUICK,
        )
        .await;
    judge_refusal(p, "H3", H3_WHAT, r, 400, -32020);
}

/// H4: the first listed tool with a valid custom header on a string
/// parameter, called with filler arguments (each required one by its
/// type, the chosen one a probe value): its `Mcp-Param-*` left out, then
/// disagreeing; both must be refused with 400 -32020. H5: a `tools/list`
/// with `Mcp-Method` twice, the second copy disagreeing.
async fn param_headers_rule(p: &mut Probe, listing: &[Value]) {
    let of_type = |tool: &Value, kind: ParamType| {
        let params = mcp_streamable::tool_headers::of_tool(tool).ok()?;
        params.into_iter().find(|ph| ph.kind == kind)
    };
    let chosen = listing
        .iter()
        .find_map(|tool| Some((tool, of_type(tool, ParamType::String)?)));
    match chosen {
        None => p.add(
            "H4",
            true,
            H4_WHAT,
            Verdict::NotApplicable,
            "no listed tool declares x-mcp-header on a string parameter",
        ),
        Some((tool, param)) => {
            let name = tool["name"].as_str().unwrap_or_default().to_owned();
            let arguments = filler_arguments(tool, &param.path, "mcp-streamable-probe");
            let call = Call {
                method: "tools/call",
                name: Some(&name),
                params: json!({"name": name, "arguments": arguments}),
            };
            let headers = custom_headers(tool, &name, &arguments);
            let header = format!("Mcp-Param-{}", param.name);
            let with = |value: Option<&'static str>| {
                let (header, headers) = (header.clone(), headers.clone());
                move |h: &mut Vec<(String, String)>| {
                    h.extend(headers.into_iter().filter(|(n, _)| *n != header));
                    if let Some(v) = value {
                        h.push((header, v.to_owned()));
                    }
                }
            };
            let missing = p.v2026(&call, with(None), QUICK).await;
            let other = p
                .v2026(&call, with(Some("mcp-streamable-probe-other")), QUICK)
                .await;
            match (missing, other) {
                (Some((i1, o1)), Some((i2, o2))) => {
                    let ok = refused(&o1, i1, 400, -32020) && refused(&o2, i2, 400, -32020);
                    let evidence = format!(
                        "tools/call {name}: {header} missing: {}; disagreeing: {}",
                        status_and_code(&o1, i1),
                        status_and_code(&o2, i2)
                    );
                    p.add("H4", true, H4_WHAT, Verdict::of(ok), evidence);
                }
                _ => p.add("H4", true, H4_WHAT, Verdict::CouldNotTest, p.t.no_answer()),
            }
        }
    }
    let list = Call {
        method: "tools/list",
        name: None,
        params: json!({}),
    };
    let twice = |h: &mut Vec<(String, String)>| {
        h.push((headers::MCP_METHOD.to_owned(), "prompts/list".to_owned()));
    };
    match p.v2026(&list, twice, QUICK).await {
        None => p.add("H5", true, H5_WHAT, Verdict::CouldNotTest, p.t.no_answer()),
        Some((id, o)) => p.add(
            "H5",
            true,
            H5_WHAT,
            Verdict::of(o.status == 400),
            format!(
                "tools/list with Mcp-Method tools/list and prompts/list: {}",
                status_and_code(&o, id)
            ),
        ),
    }
    integer_header_rule(p, listing, &of_type).await;
}

/// H6: the first listed tool with a valid custom header on an integer
/// parameter, called with agreeing headers but that integer's written
/// `42.0`: accepted (anything but 400 -32020).
async fn integer_header_rule(
    p: &mut Probe,
    listing: &[Value],
    of_type: &impl Fn(&Value, ParamType) -> Option<ParamHeader>,
) {
    let Some((tool, param)) = listing
        .iter()
        .find_map(|tool| Some((tool, of_type(tool, ParamType::Integer)?)))
    else {
        let why = "no listed tool declares x-mcp-header on an integer parameter";
        p.add("H6", false, H6_WHAT, Verdict::NotApplicable, why);
        return;
    };
    let name = tool["name"].as_str().unwrap_or_default().to_owned();
    let mut arguments = filler_arguments(tool, &[], "");
    set_at(&mut arguments, &param.path, json!(42));
    let call = Call {
        method: "tools/call",
        name: Some(&name),
        params: json!({"name": name, "arguments": arguments}),
    };
    let header = format!("Mcp-Param-{}", param.name);
    let headers = custom_headers(tool, &name, &arguments);
    let tweak = |h: &mut Vec<(String, String)>| {
        for (n, v) in headers {
            let v = if n == header { "42.0".to_owned() } else { v };
            h.push((n, v));
        }
    };
    match p.v2026(&call, tweak, QUICK).await {
        None => p.add("H6", false, H6_WHAT, Verdict::CouldNotTest, p.t.no_answer()),
        Some((id, o)) => p.add(
            "H6",
            false,
            H6_WHAT,
            Verdict::of(!refused(&o, id, 400, -32020)),
            format!(
                "tools/call {name} with {}: 42.0: {}",
                param.name,
                status_and_code(&o, id)
            ),
        ),
    }
}

/// The `Mcp-Param-*` headers a client sends on a call of `tool` with
/// `arguments`, as its listing declares them.
fn custom_headers(tool: &Value, name: &str, arguments: &Value) -> Vec<(String, String)> {
    ToolHeaderTable::from_list(&json!([tool]))
        .0
        .headers_for(name, Some(arguments))
}

/// Sets `value` at `path` in `args`, making the objects on the way.
fn set_at(args: &mut Value, path: &[String], value: Value) {
    let mut at = args;
    for (i, key) in path.iter().enumerate() {
        let Some(map) = at.as_object_mut() else {
            return;
        };
        let next = if i + 1 == path.len() {
            value.clone()
        } else {
            map.get(key)
                .cloned()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}))
        };
        map.insert(key.clone(), next);
        at = &mut map[key];
    }
}

/// Arguments for `tool`: each required property by its type (a string, 0,
/// false), and `value` at `path`.
fn filler_arguments(tool: &Value, path: &[String], value: &str) -> Value {
    let schema = &tool["inputSchema"];
    let mut args = serde_json::Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let Some(name) = name.as_str() else { continue };
        let filler = match schema["properties"][name]["type"].as_str() {
            Some("integer" | "number") => json!(0),
            Some("boolean") => json!(false),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("mcp-streamable-probe-filler"),
        };
        args.insert(name.to_owned(), filler);
    }
    let mut args = Value::Object(args);
    set_at(&mut args, path, json!(value));
    args
}

fn judge_refusal(
    p: &mut Probe,
    rule: &'static str,
    what: &'static str,
    r: Option<(u64, Open)>,
    status: u16,
    code: i64,
) {
    match r {
        None => p.add(rule, true, what, Verdict::CouldNotTest, p.t.no_answer()),
        Some((id, o)) => p.add(
            rule,
            true,
            what,
            Verdict::of(refused(&o, id, status, code)),
            status_and_code(&o, id),
        ),
    }
}

/// V1, U1 and G1.
async fn versions_and_methods(p: &mut Probe) {
    let list = Call {
        method: "tools/list",
        name: None,
        params: json!({}),
    };
    match p.v2026_at(&list, "2099-01-01", |_| {}, QUICK).await {
        None => p.add("V1", true, V1_WHAT, Verdict::CouldNotTest, p.t.no_answer()),
        Some((id, o)) => {
            let supported = answer_to(&o, id)
                .and_then(|m| m.pointer("/error/data/supported").cloned())
                .and_then(|s| s.as_array().cloned())
                .unwrap_or_default();
            let ok =
                refused(&o, id, 400, -32022) && supported.iter().any(|s| s.as_str() == Some(V2026));
            p.add(
                "V1",
                true,
                V1_WHAT,
                Verdict::of(ok),
                format!(
                    "{}, supported {}",
                    status_and_code(&o, id),
                    Value::Array(supported)
                ),
            );
        }
    }
    let unknown = Call {
        method: "mcp-streamable/absent",
        name: None,
        params: json!({}),
    };
    let r = p.v2026(&unknown, |_| {}, QUICK).await;
    judge_refusal(p, "U1", U1_WHAT, r, 404, -32601);
    let h = vec![
        (headers::ACCEPT.to_owned(), headers::MIME_SSE.to_owned()),
        (headers::MCP_PROTOCOL_VERSION.to_owned(), V2026.to_owned()),
    ];
    let get = p.t.send("GET", &h, "", QUICK).await;
    let delete = p.t.send("DELETE", &h[1..], "", QUICK).await;
    let status = |o: &Option<Open>| o.as_ref().map(|o| o.status);
    let verdict = match (status(&get), status(&delete)) {
        (Some(g), Some(d)) => Verdict::of(g == 405 && d == 405),
        _ => Verdict::CouldNotTest,
    };
    let show = |o: &Option<Open>| o.as_ref().map_or("no answer".to_owned(), Open::summary);
    // Not a MUST here: a dual-era server may take a header-only GET for the
    // session era (TS 2.4's documented routing does: a body-less GET is legacy).
    p.add(
        "G1",
        false,
        G1_WHAT,
        verdict,
        format!("GET {}; DELETE {}", show(&get), show(&delete)),
    );
}

/// A listen for tool list changes.
fn listen_call() -> Call<'static> {
    Call {
        method: "subscriptions/listen",
        name: None,
        params: json!({"notifications": {"toolsListChanged": true}}),
    }
}

/// A 2026-07-28 call of the notify tool `tool` with `args`.
fn notify_call<'a>(tool: &'a str, args: &Value) -> Call<'a> {
    Call {
        method: "tools/call",
        name: Some(tool),
        params: json!({"name": tool, "arguments": args}),
    }
}

/// Whether `m` names subscription `id`.
fn names_subscription(m: &Value, id: u64) -> bool {
    m.pointer(&format!(
        "/params/_meta/{}",
        pointer_key(META_SUBSCRIPTION_ID)
    ))
    .and_then(Value::as_u64)
        == Some(id)
}

/// Reads listen `id` until its first message; whether that message is
/// the acknowledgement naming it (M2), and the message as evidence.
async fn first_is_acknowledgement(o: &mut Open, id: u64) -> (bool, String) {
    let first = |o: &Open| o.messages().into_iter().next();
    o.until(QUICK, |o| first(o).is_some()).await;
    let m = first(o);
    let acknowledged = m.as_ref().is_some_and(|m| {
        m.get("method").and_then(Value::as_str) == Some(ACKNOWLEDGED) && names_subscription(m, id)
    });
    let shown = m.map_or("none".to_owned(), |m| m.to_string());
    (acknowledged, format!("first message {shown}"))
}

/// M2 and M3; M1's evidence from the listen stream, if any.
async fn listen_rules(p: &mut Probe) -> Option<String> {
    let Some((id, mut o)) = p.v2026_open(&listen_call()).await else {
        p.add("M2", true, M2_WHAT, Verdict::CouldNotTest, p.t.no_answer());
        return None;
    };
    let (acknowledged, evidence) = first_is_acknowledgement(&mut o, id).await;
    let named = |m: &Value| names_subscription(m, id);
    if !o.is_sse() {
        p.add(
            "M2",
            true,
            M2_WHAT,
            Verdict::CouldNotTest,
            format!("no listen stream: {}", o.summary()),
        );
        return stateful("subscriptions/listen", &o);
    }
    p.add("M2", true, M2_WHAT, Verdict::of(acknowledged), evidence);
    if !acknowledged {
        return stateful("subscriptions/listen", &o);
    }
    let Some((tool, args)) = p.notify.clone() else {
        p.add(
            "M3",
            false,
            M3_WHAT,
            Verdict::CouldNotTest,
            "no --notify-tool",
        );
        return stateful("subscriptions/listen", &o);
    };
    let call = notify_call(&tool, &args);
    let changed = |m: &Value| {
        m.get("method").and_then(Value::as_str) == Some("notifications/tools/list_changed")
    };
    let called = p.v2026(&call, |_| {}, NOTIFY_WAIT).await;
    o.until(NOTIFY_WAIT, |o| o.messages().iter().any(changed))
        .await;
    // A second copy would come at once: a short look for it.
    o.gather(QUICK).await;
    let on_listen: Vec<Value> = o.messages().into_iter().filter(|m| changed(m)).collect();
    let all_named = on_listen.iter().all(named);
    let kinds: Vec<String> = o.messages().iter().map(describe).collect();
    p.add(
        "M3",
        false,
        M3_WHAT,
        match called {
            None => Verdict::CouldNotTest,
            Some(_) => Verdict::of(on_listen.len() == 1 && all_named),
        },
        format!(
            "{} named {}: listen stream {:?}",
            on_listen.len(),
            all_named,
            kinds
        ),
    );
    let seen = stateful("subscriptions/listen", &o);
    drop(o);
    listen_under_a_change(p, &tool, &args).await;
    seen
}

/// M2 again, for a listen that starts as a change is made: the change
/// is aimed just after the listen's request ([`Probe::aimed`]), so a
/// server that registers a listen for changes before it writes the
/// acknowledgement, with nothing holding a change back between (go-sdk
/// v1.7.0, ruby-sdk before PR #532), lets the change out first.
async fn listen_under_a_change(p: &mut Probe, tool: &str, args: &Value) {
    let listen = listen_call();
    let call = notify_call(tool, args);
    let (opened, _) = p
        .aimed(p.v2026_open(&listen), p.v2026(&call, |_| {}, QUICK))
        .await;
    let Some((id, mut o)) = opened else {
        p.add(
            "M2",
            true,
            M2_UNDER_CHANGE_WHAT,
            Verdict::CouldNotTest,
            p.t.no_answer(),
        );
        return;
    };
    let (acknowledged, evidence) = first_is_acknowledgement(&mut o, id).await;
    let verdict = if o.is_sse() {
        Verdict::of(acknowledged)
    } else {
        Verdict::CouldNotTest
    };
    let evidence = format!(
        "a change made {} ms after the listen: {evidence}",
        super::AIM.as_millis()
    );
    p.add("M2", true, M2_UNDER_CHANGE_WHAT, verdict, evidence);
}

/// A JSON pointer token for `key` (RFC 6901: `~` and `/` escaped).
fn pointer_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
