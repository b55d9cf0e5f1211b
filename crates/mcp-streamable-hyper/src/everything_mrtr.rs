//! The reference application's MRTR fixtures (2026-07-28): the tools and
//! the prompt the conformance suite's `input-required-result-*` and
//! `server-stateless` scenarios call, on [`mcp_streamable::mrtr`]. Every round is
//! a request of its own; what a later round needs comes back in the sealed
//! `requestState`, so no instance keeps anything between rounds.

use mcp_streamable::jsonrpc::{ErrorObject, RawJson};
use mcp_streamable::mrtr::{
    input_required, input_responses, missing_capability, request_state, Binding,
    ClientCapabilities, InputKind, InputRequests, StateSealer,
};
use mcp_streamable::time::Instant;
use serde_json::{json, Map, Value};

/// How long a state of these fixtures lives.
const STATE_TTL_MS: u64 = 5 * 60 * 1000;

/// The tools, as `tools/list` shows them.
pub const TOOLS: [(&str, &str); 11] = [
    (
        "test_input_required_result_elicitation",
        "Asks the user's name (MRTR elicitation)",
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model a question (MRTR sampling)",
    ),
    (
        "test_input_required_result_list_roots",
        "Asks for the client's roots (MRTR roots)",
    ),
    (
        "test_input_required_result_request_state",
        "Asks for confirmation, carrying a sealed requestState",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks for three inputs at once",
    ),
    (
        "test_input_required_result_multi_round",
        "Asks twice, then answers",
    ),
    (
        "test_input_required_result_tampered_state",
        "Refuses a requestState it did not issue",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only for what the client declared",
    ),
    (
        "test_missing_capability",
        "Needs sampling: -32021 without it",
    ),
    (
        "test_streaming_elicitation",
        "Asks the user in this era's way (never a request on the stream)",
    ),
    (
        "test_logging_tool",
        "Logs only when the request sets a log level",
    ),
];

/// The tools that carry a sealed `requestState` between rounds.
const STATEFUL: [&str; 4] = [
    "test_input_required_result_request_state",
    "test_input_required_result_tampered_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
];

/// The prompt that asks for input.
pub const PROMPT: &str = "test_input_required_result_prompt";

/// The `_meta` key of a request's log level.
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// One MRTR round: the method, its params, the time, and the sealer.
pub struct Round<'a> {
    pub method: &'a str,
    pub params: &'a Value,
    /// Who sent it: a state sealed for one principal opens for no other.
    pub principal: Option<mcp_streamable::principal::Principal>,
    pub now: Instant,
    pub sealer: &'a mut StateSealer,
}

impl Round<'_> {
    fn caps(&self) -> ClientCapabilities {
        ClientCapabilities::of(Some(self.params))
    }

    fn binding(&self) -> Binding {
        Binding::of(
            self.method,
            Some(self.params),
            self.principal.as_ref().map(|p| p.as_str()),
        )
    }

    fn responses(&self) -> Map<String, Value> {
        input_responses(Some(self.params))
    }

    /// The data of the state this round echoes: `Ok(None)` if it sent none.
    fn state(&self) -> Result<Option<Value>, ErrorObject> {
        match request_state(Some(self.params)) {
            None => Ok(None),
            Some(s) => self
                .sealer
                .open(s, &self.binding(), self.now)
                .map(Some)
                .map_err(|e| e.to_error()),
        }
    }

    fn seal(&mut self, data: Value) -> String {
        let b = self.binding();
        self.sealer.seal(&b, &data, self.now)
    }

    fn ask(&self, requests: &InputRequests, state: Option<&str>) -> Result<RawJson, ErrorObject> {
        input_required(self.method, &self.caps(), requests, state).map_err(|e| match e {
            mcp_streamable::mrtr::InputError::Undeclared(kind) => missing_capability(&[kind]),
            other => ErrorObject::new(mcp_streamable::jsonrpc::INTERNAL_ERROR, other.to_string()),
        })
    }
}

fn text_result(t: impl Into<String>) -> Result<RawJson, ErrorObject> {
    Ok(RawJson::from(
        json!({"content": [{"type": "text", "text": t.into()}]}),
    ))
}

fn ask_name(key: &str) -> InputRequests {
    InputRequests::new().ask(key, InputKind::Elicitation, json!({
        "mode": "form",
        "message": "Please provide your name",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    }))
}

fn ask_capital(r: InputRequests, key: &str) -> InputRequests {
    r.ask(key, InputKind::Sampling, json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
        "maxTokens": 100,
    }))
}

fn ask_roots(r: InputRequests, key: &str) -> InputRequests {
    r.ask(key, InputKind::Roots, json!({}))
}

/// An accepted elicitation's `content.<field>` string.
fn accepted(responses: &Map<String, Value>, key: &str, field: &str) -> Option<String> {
    let r = responses.get(key)?;
    (r.get("action")?.as_str()? == "accept")
        .then(|| {
            r.pointer(&format!("/content/{field}"))?
                .as_str()
                .map(str::to_owned)
        })
        .flatten()
}

/// Any accepted elicitation's content, whatever its fields.
fn accepted_any(responses: &Map<String, Value>, key: &str) -> Option<Value> {
    let r = responses.get(key)?;
    (r.get("action")?.as_str()? == "accept")
        .then(|| r.get("content").cloned())
        .flatten()
}

fn sampled(responses: &Map<String, Value>, key: &str) -> Option<String> {
    responses
        .get(key)?
        .pointer("/content/text")?
        .as_str()
        .map(str::to_owned)
}

fn roots(responses: &Map<String, Value>, key: &str) -> Option<usize> {
    responses.get(key)?.get("roots")?.as_array().map(Vec::len)
}

/// The answer to tool `name`, if it is one of these fixtures.
pub fn call(name: &str, mut round: Round<'_>) -> Option<Result<RawJson, ErrorObject>> {
    let r = &mut round;
    // The tools that issue a state verify the one echoed to them first.
    let state = if STATEFUL.contains(&name) {
        match r.state() {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        }
    } else {
        None
    };
    let answer = match name {
        "test_input_required_result_elicitation" => {
            match accepted(&r.responses(), "user_name", "name") {
                Some(n) => text_result(format!("Hello, {n}!")),
                // Missing, declined or malformed: ask again (the spec's SHOULD).
                None => r.ask(&ask_name("user_name"), None),
            }
        }
        "test_input_required_result_sampling" => {
            match sampled(&r.responses(), "capital_question") {
                Some(t) => text_result(format!("The model said: {t}")),
                None => r.ask(&ask_capital(InputRequests::new(), "capital_question"), None),
            }
        }
        "test_input_required_result_list_roots" => match roots(&r.responses(), "client_roots") {
            Some(n) => text_result(format!("The client has {n} roots")),
            None => r.ask(&ask_roots(InputRequests::new(), "client_roots"), None),
        },
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => {
            match (state, accepted_any(&r.responses(), "confirm")) {
                (Some(s), Some(_)) if s["step"] == 1 => text_result("state-ok"),
                _ => {
                    let confirm = InputRequests::new().ask("confirm", InputKind::Elicitation, json!({
                        "mode": "form",
                        "message": "Please confirm",
                        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
                    }));
                    let s = r.seal(json!({"step": 1}));
                    r.ask(&confirm, Some(&s))
                }
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let got = r.responses();
            match (
                state,
                accepted(&got, "user_name", "name"),
                sampled(&got, "greeting"),
                roots(&got, "client_roots"),
            ) {
                (Some(_), Some(n), Some(g), Some(k)) => {
                    text_result(format!("{n} said {g:?} with {k} roots"))
                }
                _ => {
                    let asks = ask_roots(
                        ask_capital(ask_name("user_name"), "greeting"),
                        "client_roots",
                    );
                    let s = r.seal(json!({"step": 1}));
                    r.ask(&asks, Some(&s))
                }
            }
        }
        "test_input_required_result_multi_round" => {
            let got = r.responses();
            let round = state
                .as_ref()
                .and_then(|s| s["round"].as_u64())
                .unwrap_or(0);
            let name = state
                .as_ref()
                .and_then(|s| s["name"].as_str().map(str::to_owned));
            match (
                round,
                accepted(&got, "user_name", "name"),
                accepted(&got, "favorite_color", "color"),
            ) {
                (1, Some(n), _) => {
                    let color = InputRequests::new().ask("favorite_color", InputKind::Elicitation, json!({
                        "mode": "form",
                        "message": format!("{n}, what is your favorite color?"),
                        "requestedSchema": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
                    }));
                    let s = r.seal(json!({"round": 2, "name": n}));
                    r.ask(&color, Some(&s))
                }
                (2, _, Some(c)) => text_result(format!("{} likes {c}", name.unwrap_or_default())),
                _ => {
                    let s = r.seal(json!({"round": 1}));
                    r.ask(&ask_name("user_name"), Some(&s))
                }
            }
        }
        "test_input_required_result_capabilities" => {
            let got = r.responses();
            if !got.is_empty() {
                text_result(format!("Got {} inputs", got.len()))
            } else {
                // Ask for every kind the client declared, and only those.
                let caps = r.caps();
                let mut asks = InputRequests::new();
                if caps.allows(InputKind::Elicitation) {
                    asks = ask_name("user_name");
                }
                if caps.allows(InputKind::Sampling) {
                    asks = ask_capital(asks, "capital_question");
                }
                if caps.allows(InputKind::Roots) {
                    asks = ask_roots(asks, "client_roots");
                }
                if asks.is_empty() {
                    Err(missing_capability(&[
                        InputKind::Elicitation,
                        InputKind::Sampling,
                        InputKind::Roots,
                    ]))
                } else {
                    r.ask(&asks, None)
                }
            }
        }
        "test_missing_capability" => match sampled(&r.responses(), "capital_question") {
            Some(t) => text_result(format!("The model said: {t}")),
            // Undeclared sampling is the -32021 `ask` gives.
            None => r.ask(&ask_capital(InputRequests::new(), "capital_question"), None),
        },
        "test_streaming_elicitation" => match accepted(&r.responses(), "user_name", "name") {
            Some(n) => text_result(format!("Hello, {n}!")),
            None => r.ask(&ask_name("user_name"), None),
        },
        _ => return None,
    };
    Some(answer)
}

/// Whether `test_logging_tool` should log: only if the request set a level.
pub fn log_level(params: &Value) -> Option<&str> {
    params.pointer("/_meta")?.get(META_LOG_LEVEL)?.as_str()
}

/// The answer to the prompt [`PROMPT`].
pub fn prompt(mut round: Round<'_>) -> Result<RawJson, ErrorObject> {
    let r = &mut round;
    match accepted(&r.responses(), "context", "context") {
        Some(c) => Ok(RawJson::from(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": format!("Use this context: {c}")}}
        ]}))),
        None => {
            let ask = InputRequests::new().ask("context", InputKind::Elicitation, json!({
                "mode": "form",
                "message": "What context should the prompt use?",
                "requestedSchema": {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
            }));
            r.ask(&ask, None)
        }
    }
}

/// The sealer of an application: the endpoint's secret as its key (every
/// round may reach another application instance), nonces from `entropy`.
pub fn sealer(key: [u8; 32], entropy: mcp_streamable::id_source::IdSource) -> StateSealer {
    StateSealer::new(key, entropy, STATE_TTL_MS)
}
