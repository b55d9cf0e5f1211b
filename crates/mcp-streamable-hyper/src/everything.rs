//! The reference application of `mcp-streamable serve`: the tool, resource
//! and prompt set the MCP conformance suite's server scenarios call (after
//! its `everything-server`, v0.1.16), written for our [`App`] API.
//!
//! Server-to-client requests (sampling, elicitation) are sent as caused by
//! the tool call, so they travel on its own POST stream (R7).

use crate::everything_mrtr::{self, Round};
use mcp_streamable::app::tool_call::{text_result, Arguments, ToolCall};
use mcp_streamable::app::{App, Cx};
use mcp_streamable::ids::{RequestId, SessionId};
use mcp_streamable::jsonrpc::{ErrorObject, RawJson, INVALID_PARAMS, METHOD_NOT_FOUND};
use mcp_streamable::server::Cause;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

const IMG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
const LOGGER: &str = "mcp-streamable-everything";

/// What a timer or a client answer continues.
#[derive(Clone, Debug)]
enum Pending {
    /// Send log message `step` (of 3) for request `id`.
    Log { id: RequestId, step: u8 },
    /// Send progress `step` of `count` for request `id`.
    Progress {
        id: RequestId,
        step: u32,
        count: Counting,
        token: Value,
    },
    /// Answer `test_reconnection`.
    Reconnection { id: RequestId },
    /// The client answered sampling for request `id`.
    Sampling { id: RequestId },
    /// The client answered an elicitation for request `id`; the result's prefix.
    Elicitation { id: RequestId, prefix: &'static str },
    /// Send the `notify` tool's unrelated notification.
    Notify,
    /// 2026-07-28 era: broadcast the `notify` tool's list change, then answer
    /// the call (its request is all there is to keep a timer alive).
    NotifyThenAnswer { id: RequestId },
    /// Send the registration-time notification.
    RegistrationNotice,
    /// Withdraw request `asked` (an elicitation for call `id`) if the client
    /// has not answered it yet, then answer the call `then_ms` later.
    Withdraw {
        id: RequestId,
        asked: RequestId,
        then_ms: u64,
    },
    /// Answer call `id`, whose elicitation was withdrawn.
    Withdrawn { id: RequestId },
}

/// When an eliciting tool withdraws its question (`withdraw_after_ms`,
/// at most 10 s) and how long after that it answers its call
/// (`answer_after_ms`, default 0, at most 10 s): none for a tool that
/// waits for its answer. A client must drop a question the server
/// withdrew, not answer it (C6).
pub fn withdrawal(args: &Value) -> Option<(u64, u64)> {
    let ms = |k: &str| args.get(k).and_then(Value::as_u64).map(|v| v.min(10_000));
    Some((ms("withdraw_after_ms")?, ms("answer_after_ms").unwrap_or(0)))
}

/// How a progress-reporting tool counts: `steps` notifications, `step_ms`
/// apart, then the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counting {
    /// Progress notifications sent, the first at once (at least 1).
    pub steps: u32,
    /// Between two of them.
    pub step_ms: u64,
}

impl Counting {
    /// `test_tool_with_progress`, as the conformance suite expects it:
    /// 0, 50 and 100 of 100, 50 ms apart.
    pub const CONFORMANCE: Counting = Counting {
        steps: 3,
        step_ms: 50,
    };
    /// Most steps `slow_progress` takes: a client cannot keep a call alive
    /// for longer than `steps_max * step_ms_max` (100 s).
    pub const STEPS_MAX: u32 = 100;
    /// Longest pause `slow_progress` takes between two steps.
    pub const STEP_MS_MAX: u64 = 1_000;

    /// `slow_progress`'s arguments (`steps`, default 10; `step_ms`, default
    /// 100), clamped to the bounds above.
    pub fn slow(args: &Value) -> Counting {
        let steps = args.get("steps").and_then(Value::as_u64).unwrap_or(10);
        let step_ms = args.get("step_ms").and_then(Value::as_u64).unwrap_or(100);
        Counting {
            steps: steps.clamp(1, u64::from(Self::STEPS_MAX)) as u32,
            step_ms: step_ms.min(Self::STEP_MS_MAX),
        }
    }

    /// Progress at `step`, out of 100.
    fn percent(self, step: u32) -> u32 {
        if self.steps <= 1 {
            100
        } else {
            step * 100 / (self.steps - 1)
        }
    }
}

/// The reference application.
#[derive(Debug, Default)]
pub struct EverythingApp {
    timers: BTreeMap<u64, Pending>,
    /// Server requests awaiting the client's answer, by session: one
    /// application may serve many sessions (a driver over a whole endpoint).
    asked: BTreeMap<(SessionId, RequestId), Pending>,
    next_token: u64,
    registration_notice: bool,
    /// Seals the MRTR fixtures' `requestState`; made on first use, keyed by
    /// the endpoint's application secret.
    sealer: Option<mcp_streamable::mrtr::StateSealer>,
}

impl EverythingApp {
    /// Longest `slow_reconnection` waits before it answers.
    pub const RECONNECTION_MS_MAX: u64 = 10_000;

    /// An application that, like toolhive's session hook before PR #4075,
    /// announces `notifications/resources/list_changed` while registering the
    /// session, right after answering `initialize`: race A's source. The
    /// session holds it until `initialized` (FIXED) or lets it race (the mcp-go
    /// presets). `false` gives the default application.
    pub fn with_registration_notice(notice: bool) -> Self {
        EverythingApp {
            registration_notice: notice,
            ..EverythingApp::default()
        }
    }

    /// A session-era client hears it on its own session; in the 2026-07-28
    /// era, a list change is for every listen that subscribed to it.
    fn notify_unrelated(cx: &mut Cx<'_>, method: &str) {
        if cx.is_v2026() {
            cx.broadcast(method, None);
        } else {
            cx.notify(method, None, Cause::Unrelated);
        }
    }
}

fn text(t: impl Into<String>) -> Value {
    json!({"type": "text", "text": t.into()})
}

fn ok(v: Value) -> Result<RawJson, ErrorObject> {
    Ok(RawJson::from(v))
}

/// A tool's answer of one text content, written straight ([`text_result`]).
fn text_answer(t: &str) -> Result<RawJson, ErrorObject> {
    Ok(text_result(t))
}

fn tool_result(content: Vec<Value>) -> Result<RawJson, ErrorObject> {
    ok(json!({ "content": content }))
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// The tools, as `tools/list` answers (both eras' fixtures).
pub fn tools() -> Value {
    let empty = object(json!({}), &[]);
    let mut tools = json!({"tools": [
        {"name": "echo", "description": "Echoes its text argument.",
         "inputSchema": object(json!({"text": {"type": "string", "description": "Text to echo"}}), &["text"])},
        {"name": "test_simple_text", "description": "Tests simple text content response", "inputSchema": empty},
        {"name": "notify", "description": "Sends notifications/tools/list_changed, unrelated to the call, after delay_ms (default 0): the standard way for a prober to make the server notify.",
         "inputSchema": object(json!({"delay_ms": {"type": "integer", "minimum": 0, "maximum": 10000}}), &[])},
        {"name": "broadcast", "description": "Sends notifications/tools/list_changed to every client of the server, in either era (every session of a fleet, wherever it is held), and answers with how many got it at once.",
         "inputSchema": empty},
        {"name": "test_image_content", "description": "Tests image content response", "inputSchema": empty},
        {"name": "test_audio_content", "description": "Tests audio content response", "inputSchema": empty},
        {"name": "test_embedded_resource", "description": "Tests embedded resource content response", "inputSchema": empty},
        {"name": "test_multiple_content_types", "description": "Tests response with multiple content types (text, image, resource)", "inputSchema": empty},
        {"name": "test_tool_with_logging", "description": "Tests tool that emits log messages during execution", "inputSchema": empty},
        {"name": "test_tool_with_progress", "description": "Tests tool that reports progress notifications", "inputSchema": empty},
        {"name": "test_error_handling", "description": "Tests error response handling", "inputSchema": empty},
        {"name": "slow_progress", "description": "Reports progress `steps` times (default 10, at most 100), `step_ms` apart (default 100, at most 1000), then answers: a call that stays in flight while its stream is cut or its instance killed.",
         "inputSchema": object(json!({"steps": {"type": "integer", "minimum": 1, "maximum": 100}, "step_ms": {"type": "integer", "minimum": 0, "maximum": 1000}}), &[])},
        {"name": "test_reconnection", "description": "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close the stream mid-call and send the result after client reconnects.", "inputSchema": empty},
        {"name": "slow_reconnection", "description": "Closes the call's stream at once, for polling (SEP-1699), and answers `answer_after_ms` later (default 3000, at most 10000) on the stream the client resumed: a call that stays in flight while the client polls for it.",
         "inputSchema": object(json!({"answer_after_ms": {"type": "integer", "minimum": 0, "maximum": 10000}}), &[])},
        {"name": "test_sampling", "description": "Tests server-initiated sampling (LLM completion request)",
         "inputSchema": object(json!({"prompt": {"type": "string", "description": "The prompt to send to the LLM"}}), &["prompt"])},
        {"name": "test_elicitation", "description": "Tests server-initiated elicitation (user input request)",
         "inputSchema": object(json!({"message": {"type": "string", "description": "The message to show the user"},
            "withdraw_after_ms": {"type": "integer", "minimum": 0, "maximum": 10000, "description": "Withdraw the question (notifications/cancelled) if it is not answered by then"},
            "answer_after_ms": {"type": "integer", "minimum": 0, "maximum": 10000, "description": "After a withdrawal, answer the call this much later"}}), &["message"])},
        {"name": "test_elicitation_sep1034_defaults", "description": "Tests elicitation with default values per SEP-1034", "inputSchema": empty},
        {"name": "test_elicitation_sep1330_enums", "description": "Tests elicitation with enum schema improvements per SEP-1330", "inputSchema": empty},
        {"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106: $defs with $anchor, composition, conditionals)",
         "inputSchema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"}, "email": {"type": "string"}},
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false}},
        {"name": "test_param_headers", "description": "Mirrors its annotated arguments as Mcp-Param-* headers (SEP-2243, 2026-07-28): a call whose headers disagree with its arguments is refused (400, -32020). Answers with the arguments it got.",
         "inputSchema": object(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"}}), &["region"])}
    ]});
    // The 2026-07-28 fixtures (MRTR and the stateless checks).
    if let Some(list) = tools["tools"].as_array_mut() {
        for (name, description) in everything_mrtr::TOOLS {
            list.push(json!({"name": name, "description": description, "inputSchema": empty}));
        }
    }
    tools
}

/// What the tools' `x-mcp-header` annotations declare (SEP-2243), for
/// [`EndpointConfig::tool_headers`](mcp_streamable::server::EndpointConfig::tool_headers):
/// a server serving these fixtures checks `test_param_headers`' headers.
pub fn tool_headers() -> mcp_streamable::tool_headers::ToolHeaderTable {
    mcp_streamable::tool_headers::ToolHeaderTable::from_list(&tools()).0
}

/// The tools whose answer depends on their arguments alone (no request to
/// the client, no notification, no timer): their result, or `None` for
/// any other tool. Shared with every embedding of these fixtures (the rmcp
/// example serves them too).
pub fn static_tool(name: &str, args: Arguments<'_>) -> Option<Result<RawJson, ErrorObject>> {
    Some(match name {
        "echo" => {
            // Any text but a string is none.
            #[derive(serde::Deserialize)]
            struct Echo<'a> {
                #[serde(borrow)]
                text: Cow<'a, str>,
            }
            let echo = args.read::<Echo>();
            Ok(text_result(echo.as_ref().map_or("", |e| &e.text)))
        }
        "test_simple_text" => text_answer("This is a simple text response for testing."),
        "test_image_content" => tool_result(vec![
            json!({"type": "image", "data": IMG, "mimeType": "image/png"}),
        ]),
        "test_audio_content" => tool_result(vec![
            json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
        ]),
        "test_embedded_resource" => tool_result(vec![
            json!({"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}),
        ]),
        "test_multiple_content_types" => tool_result(vec![
            text("Multiple content types test:"),
            json!({"type": "image", "data": IMG, "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}),
        ]),
        "test_error_handling" => ok(
            json!({"content": [text("This tool intentionally returns an error for testing")], "isError": true}),
        ),
        "json_schema_2020_12_tool" => text_answer(&format!(
            "JSON Schema 2020-12 tool called with: {}",
            args.value()
        )),
        "test_param_headers" => text_answer(&format!("headers agreed with: {}", args.value())),
        _ => return None,
    })
}

/// The resource templates, as `resources/templates/list` answers.
pub fn resource_templates() -> Value {
    json!({"resourceTemplates": [{"name": "template",
        "uriTemplate": "test://template/{id}/data", "title": "Resource Template",
        "description": "A resource template with parameter substitution", "mimeType": "application/json"}]})
}

/// The `elicitation/create` params a tool asks with, and the prefix of its
/// answer ([`elicitation_answer`]); `None` for tools that do not elicit.
pub fn elicitation(name: &str, args: &Value) -> Option<(Value, &'static str)> {
    let (message, schema, prefix) = match name {
        "test_elicitation" => (
            json!(args.get("message").and_then(Value::as_str).unwrap_or("")),
            object(
                json!({"response": {"type": "string", "description": "User's response"}}),
                &["response"],
            ),
            "User response",
        ),
        "test_elicitation_sep1034_defaults" => (
            json!("Please review and update the form fields with defaults"),
            object(
                json!({
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}
                }),
                &[],
            ),
            "Elicitation completed",
        ),
        "test_elicitation_sep1330_enums" => (
            json!("Please select options from the enum fields"),
            object(
                json!({
                    "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                        {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3,
                        "items": {"anyOf": [{"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}]}}
                }),
                &[],
            ),
            "Elicitation completed",
        ),
        _ => return None,
    };
    Some((
        json!({"message": message, "requestedSchema": schema}),
        prefix,
    ))
}

/// What an eliciting tool answers, given the client's answer.
pub fn elicitation_answer(prefix: &str, answer: Result<Value, ErrorObject>) -> String {
    match answer {
        Ok(v) => {
            let action = v.get("action").and_then(Value::as_str).unwrap_or("");
            let content = v.get("content").cloned().unwrap_or(json!({}));
            format!("{prefix}: action={action}, content={content}")
        }
        Err(e) => format!("Elicitation not supported or error: {}", e.message),
    }
}

/// How long `notify` waits before it notifies, in ms (at most 10 s).
pub fn notify_delay(args: &Value) -> u64 {
    args.get("delay_ms")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(10_000)
}

/// The `sampling/createMessage` params `test_sampling` asks with.
pub fn sampling(args: &Value) -> Value {
    let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("");
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100})
}

/// What `test_sampling` answers, given the client's answer.
pub fn sampling_answer(answer: Result<Value, ErrorObject>) -> String {
    match answer {
        Ok(v) => {
            let said = v
                .pointer("/content/text")
                .or_else(|| v.pointer("/message/content/text"))
                .and_then(Value::as_str)
                .unwrap_or("No response");
            format!("LLM response: {said}")
        }
        Err(e) => format!("Sampling not supported or error: {}", e.message),
    }
}

/// The resources, as `resources/list` answers.
pub fn resources() -> Value {
    json!({"resources": [
        {"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource", "description": "A static text resource for testing", "mimeType": "text/plain"},
        {"uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource", "description": "A static binary resource (image) for testing", "mimeType": "image/png"},
        {"uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource", "description": "A resource that can be subscribed to", "mimeType": "text/plain"}
    ]})
}

/// `resources/read` of `uri`.
pub fn read(uri: &str) -> Result<RawJson, ErrorObject> {
    let content = match uri {
        "test://static-text" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."})
        }
        "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": IMG}),
        "test://watched-resource" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"})
        }
        _ => match uri
            .strip_prefix("test://template/")
            .and_then(|r| r.strip_suffix("/data"))
        {
            Some(id) => json!({"uri": uri, "mimeType": "application/json",
                "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()}),
            None => {
                return Err(ErrorObject::new(
                    INVALID_PARAMS,
                    format!("Resource {uri} not found"),
                ))
            }
        },
    };
    ok(json!({ "contents": [content] }))
}

/// The prompts, as `prompts/list` answers.
pub fn prompts() -> Value {
    json!({"prompts": [
        {"name": "test_simple_prompt", "title": "Simple Test Prompt", "description": "A simple prompt without arguments"},
        {"name": "test_prompt_with_arguments", "title": "Prompt With Arguments", "description": "A prompt with required arguments",
         "arguments": [{"name": "arg1", "description": "First test argument", "required": true},
                       {"name": "arg2", "description": "Second test argument", "required": true}]},
        {"name": "test_prompt_with_embedded_resource", "title": "Prompt With Embedded Resource", "description": "A prompt that includes an embedded resource",
         "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]},
        {"name": "test_prompt_with_image", "title": "Prompt With Image", "description": "A prompt that includes image content"},
        {"name": everything_mrtr::PROMPT, "title": "Prompt Asking For Input", "description": "Asks for its context first (MRTR, 2026-07-28)"}
    ]})
}

/// `prompts/get` of `name` with `args`.
pub fn prompt(name: &str, args: &Value) -> Result<RawJson, ErrorObject> {
    let user = |content: Value| json!({"role": "user", "content": content});
    let arg = |k: &str| -> Result<String, ErrorObject> {
        args.get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| ErrorObject::new(INVALID_PARAMS, format!("missing argument {k}")))
    };
    let messages = match name {
        "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
        "test_prompt_with_arguments" => vec![user(text(format!(
            "Prompt with arguments: arg1='{}', arg2='{}'",
            arg("arg1")?,
            arg("arg2")?
        )))],
        "test_prompt_with_embedded_resource" => vec![
            user(
                json!({"type": "resource", "resource": {"uri": arg("resourceUri")?, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}),
            ),
            user(text("Please process the embedded resource above.")),
        ],
        "test_prompt_with_image" => vec![
            user(json!({"type": "image", "data": IMG, "mimeType": "image/png"})),
            user(text("Please analyze the image above.")),
        ],
        _ => {
            return Err(ErrorObject::new(
                INVALID_PARAMS,
                format!("Prompt {name} not found"),
            ))
        }
    };
    ok(json!({ "messages": messages }))
}

impl EverythingApp {
    fn later(&mut self, cx: &mut Cx<'_>, ms: u64, p: Pending) {
        self.next_token += 1;
        self.timers.insert(self.next_token, p);
        cx.after(ms, self.next_token);
    }

    fn log(cx: &mut Cx<'_>, data: &str, cause: Cause) {
        cx.notify(
            "notifications/message",
            Some(RawJson::from(
                json!({"level": "info", "logger": LOGGER, "data": data}),
            )),
            cause,
        );
    }

    /// Asks the client for call `id`; the request's id, or none when it
    /// could not be sent (the call is answered so).
    fn ask(
        &mut self,
        cx: &mut Cx<'_>,
        id: RequestId,
        method: &str,
        params: Value,
        p: Pending,
    ) -> Option<RequestId> {
        match cx.request(
            method,
            Some(RawJson::from(params)),
            Cause::Request(id.clone()),
        ) {
            Some(asked) => {
                self.asked.insert((cx.session().clone(), asked.clone()), p);
                Some(asked)
            }
            None => {
                cx.respond(&id, text_answer("Could not ask the client"));
                None
            }
        }
    }

    fn call(&mut self, cx: &mut Cx<'_>, id: RequestId, call: &ToolCall<'_>) {
        let name = &*call.name;
        if let Some(answer) = static_tool(name, call.arguments()) {
            cx.respond(&id, answer);
            return;
        }
        let args = call.arguments().value();
        if let Some((params, prefix)) = elicitation(name, &args) {
            let p = Pending::Elicitation {
                id: id.clone(),
                prefix,
            };
            let asked = self.ask(cx, id.clone(), "elicitation/create", params, p);
            if let (Some(asked), Some((after, then_ms))) = (asked, withdrawal(&args)) {
                let w = Pending::Withdraw { id, asked, then_ms };
                self.later(cx, after, w);
            }
            return;
        }
        let answer = match name {
            "notify" => {
                let delay = notify_delay(&args);
                if delay == 0 {
                    Self::notify_unrelated(cx, "notifications/tools/list_changed");
                } else if cx.is_v2026() {
                    self.later(cx, delay, Pending::NotifyThenAnswer { id });
                    return;
                } else {
                    self.later(cx, delay, Pending::Notify);
                }
                text_answer(&format!("notifying in {delay} ms"))
            }
            "broadcast" => {
                let here = cx.broadcast("notifications/tools/list_changed", None);
                text_answer(&format!("broadcast; {here} got it at once"))
            }
            "test_tool_with_logging" => {
                Self::log(cx, "Tool execution started", Cause::Request(id.clone()));
                self.later(cx, 50, Pending::Log { id, step: 1 });
                return;
            }
            "test_tool_with_progress" | "slow_progress" => {
                let meta = call.meta().value();
                let token = meta.get("progressToken").cloned().unwrap_or(json!(0));
                let count = match name {
                    "slow_progress" => Counting::slow(&args),
                    _ => Counting::CONFORMANCE,
                };
                self.progress(cx, id, 0, count, token);
                return;
            }
            "test_reconnection" | "slow_reconnection" => {
                // Close the connection now; the answer comes after the client resumed.
                let after = match name {
                    "slow_reconnection" => args
                        .get("answer_after_ms")
                        .and_then(Value::as_u64)
                        .unwrap_or(3_000)
                        .min(Self::RECONNECTION_MS_MAX),
                    _ => 100,
                };
                cx.close_connection(&id);
                self.later(cx, after, Pending::Reconnection { id });
                return;
            }
            "test_sampling" => {
                let params = sampling(&args);
                let p = Pending::Sampling { id: id.clone() };
                let _ = self.ask(cx, id, "sampling/createMessage", params, p);
                return;
            }
            // An unknown tool is a protocol error, not a tool's failed
            // result (`server/tools.mdx`, "Error Handling").
            other => Err(ErrorObject::new(
                INVALID_PARAMS,
                format!("Unknown tool: {other}"),
            )),
        };
        cx.respond(&id, answer);
    }

    fn progress(
        &mut self,
        cx: &mut Cx<'_>,
        id: RequestId,
        step: u32,
        count: Counting,
        token: Value,
    ) {
        let progress = count.percent(step);
        cx.notify(
            "notifications/progress",
            Some(RawJson::from(
                json!({"progressToken": token, "progress": progress, "total": 100,
                "message": format!("Completed step {progress} of 100")}),
            )),
            Cause::Request(id.clone()),
        );
        if step + 1 < count.steps {
            self.later(
                cx,
                count.step_ms,
                Pending::Progress {
                    id,
                    step: step + 1,
                    count,
                    token,
                },
            );
        } else {
            let t = match &token {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            cx.respond(&id, text_answer(&t));
        }
    }
}

/// An MRTR fixture called in the session era, which asks by requests instead.
fn needs_v2026() -> ErrorObject {
    ErrorObject::new(
        INVALID_PARAMS,
        "this fixture asks for input with InputRequiredResult: 2026-07-28 only",
    )
}

impl EverythingApp {
    /// An MRTR round of a 2026-07-28 request; `None` in the session era.
    fn round<'a>(
        &'a mut self,
        cx: &mut Cx<'_>,
        method: &'a str,
        params: &'a Value,
    ) -> Option<Round<'a>> {
        if !cx.is_v2026() {
            return None;
        }
        let now = cx.now();
        let sealer = self
            .sealer
            .get_or_insert_with(|| everything_mrtr::sealer(cx.app_secret(), cx.entropy()));
        Some(Round {
            method,
            params,
            principal: cx.principal().cloned(),
            now,
            sealer,
        })
    }

    /// The 2026-07-28 fixtures' answer to tool `name`.
    fn call_v2026(
        &mut self,
        cx: &mut Cx<'_>,
        id: &RequestId,
        name: &str,
        p: &Value,
    ) -> Result<RawJson, ErrorObject> {
        if name == "test_logging_tool" {
            // This era has no logging/setLevel: a request sets its own level.
            if let Some(level) = everything_mrtr::log_level(p) {
                let level = level.to_owned();
                Self::log(
                    cx,
                    &format!("Logging at {level}"),
                    Cause::Request(id.clone()),
                );
            }
            return text_answer("Logged only if asked");
        }
        match self.round(cx, "tools/call", p) {
            Some(round) => everything_mrtr::call(name, round).unwrap_or_else(|| {
                Err(ErrorObject::new(
                    INVALID_PARAMS,
                    format!("Unknown tool: {name}"),
                ))
            }),
            None => Err(needs_v2026()),
        }
    }
}

impl EverythingApp {
    /// A `tools/call`, its params read where they lie ([`ToolCall`]),
    /// answered now or, by tools that wait, later.
    fn tools_call(&mut self, cx: &mut Cx<'_>, id: RequestId, params: Option<&RawJson>) {
        let Some(call) = ToolCall::parse(params) else {
            // Not a tool that failed: the request itself is malformed.
            let error = ErrorObject::new(
                INVALID_PARAMS,
                "tools/call needs params {\"name\": string, \"arguments\"?: object}",
            );
            cx.respond(&id, Err(error));
            return;
        };
        if everything_mrtr::TOOLS.iter().any(|(t, _)| *t == call.name) {
            let p = params.map_or(Value::Null, RawJson::to_value);
            let answer = self.call_v2026(cx, &id, &call.name, &p);
            cx.respond(&id, answer);
            return;
        }
        self.call(cx, id, &call);
    }
}

impl App for EverythingApp {
    fn on_request(
        &mut self,
        cx: &mut Cx<'_>,
        id: RequestId,
        method: &str,
        params: Option<RawJson>,
    ) {
        if method == "tools/call" {
            return self.tools_call(cx, id, params.as_ref());
        }
        let p = params.map(|p| p.to_value()).unwrap_or(Value::Null);
        let answer = match method {
            // Who this server is, in either era's shape.
            "initialize" | "server/discover" => ok(mcp_streamable::app::self_description(
                method,
                capabilities(),
                server_info(),
            )),
            "ping" => ok(json!({})),
            "logging/setLevel" => {
                let level = p
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info")
                    .to_owned();
                Self::log(cx, &format!("Log level set to: {level}"), Cause::Unrelated);
                ok(json!({}))
            }
            "completion/complete" => {
                ok(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
            }
            "tools/list" => ok(tools()),
            "resources/list" => ok(resources()),
            "resources/templates/list" => ok(resource_templates()),
            "resources/read" => read(p.get("uri").and_then(Value::as_str).unwrap_or("")),
            "resources/subscribe" | "resources/unsubscribe" => {
                let uri = p.get("uri").and_then(Value::as_str).unwrap_or("");
                let verb = if method == "resources/subscribe" {
                    "Subscribed to"
                } else {
                    "Unsubscribed from"
                };
                Self::log(cx, &format!("{verb} resource: {uri}"), Cause::Unrelated);
                ok(json!({}))
            }
            "prompts/list" => ok(prompts()),
            "prompts/get"
                if p.get("name").and_then(Value::as_str) == Some(everything_mrtr::PROMPT) =>
            {
                match self.round(cx, method, &p) {
                    Some(round) => everything_mrtr::prompt(round),
                    None => Err(needs_v2026()),
                }
            }
            "prompts/get" => prompt(
                p.get("name").and_then(Value::as_str).unwrap_or(""),
                &p.get("arguments").cloned().unwrap_or(json!({})),
            ),
            other => Err(ErrorObject::new(
                METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        };
        cx.respond(&id, answer);
        if method == "initialize" && self.registration_notice {
            // mcp-go runs the hook after the reply is written: a moment later,
            // not in the same step as the answer.
            self.later(cx, 1, Pending::RegistrationNotice);
        }
    }

    fn on_response(
        &mut self,
        cx: &mut Cx<'_>,
        id: RequestId,
        result: Result<RawJson, ErrorObject>,
    ) {
        let Some(p) = self.asked.remove(&(cx.session().clone(), id)) else {
            return;
        };
        match p {
            Pending::Sampling { id } => {
                let t = sampling_answer(result.map(|r| r.to_value()));
                cx.respond(&id, text_answer(&t));
            }
            Pending::Elicitation { id, prefix } => {
                let t = elicitation_answer(prefix, result.map(|r| r.to_value()));
                cx.respond(&id, text_answer(&t));
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_>, token: u64) {
        let Some(p) = self.timers.remove(&token) else {
            return;
        };
        match p {
            Pending::Log { id, step } => {
                let (data, done) = match step {
                    1 => ("Tool processing data", false),
                    _ => ("Tool execution completed", true),
                };
                Self::log(cx, data, Cause::Request(id.clone()));
                if done {
                    cx.respond(&id, text_answer("Tool with logging executed successfully"));
                } else {
                    self.later(cx, 50, Pending::Log { id, step: step + 1 });
                }
            }
            Pending::Progress {
                id,
                step,
                count,
                token,
            } => self.progress(cx, id, step, count, token),
            Pending::Reconnection { id } => {
                cx.respond(&id, text_answer("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."));
            }
            Pending::Notify => Self::notify_unrelated(cx, "notifications/tools/list_changed"),
            Pending::NotifyThenAnswer { id } => {
                Self::notify_unrelated(cx, "notifications/tools/list_changed");
                cx.respond(&id, text_answer("notified"));
            }
            Pending::RegistrationNotice => {
                Self::notify_unrelated(cx, "notifications/resources/list_changed")
            }
            Pending::Withdraw { id, asked, then_ms } => {
                // Answered already: nothing to withdraw.
                if self
                    .asked
                    .remove(&(cx.session().clone(), asked.clone()))
                    .is_some()
                {
                    cx.cancel_request(&asked, "withdrawn by the tool");
                    self.later(cx, then_ms, Pending::Withdrawn { id });
                }
            }
            Pending::Withdrawn { id } => {
                cx.respond(
                    &id,
                    text_answer("Elicitation withdrawn: the question was not answered in time"),
                );
            }
            Pending::Sampling { .. } | Pending::Elicitation { .. } => {}
        }
    }
}

/// What this server can do, in both eras.
pub fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "logging": {},
        "completions": {}
    })
}

/// Who this server is.
pub fn server_info() -> Value {
    json!({"name": "mcp-streamable-everything", "version": env!("CARGO_PKG_VERSION")})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What static tool `name` answers to `args`.
    fn static_answer(name: &str, args: &str) -> Value {
        let raw = RawJson::parse(args).expect("json");
        let answer = static_tool(name, Arguments::of(&raw)).expect("a static tool");
        answer.expect("a result").to_value()
    }

    #[test]
    fn echo_answers_its_text_and_nothing_else() {
        let echo = |args: &str| static_answer("echo", args);
        let said = |t: &str| json!({"content": [{"type": "text", "text": t}]});
        assert_eq!(echo(r#"{"text":"a\"b"}"#), said("a\"b"));
        // No text, or text that is not a string, echoes nothing.
        for args in ["{}", r#"{"text":7}"#, r#""hi""#, "null"] {
            assert_eq!(echo(args), said(""), "{args}");
        }
        let none = static_tool("echo", Arguments::NONE).expect("a static tool");
        assert_eq!(none.expect("a result").to_value(), said(""));
    }

    /// Every annotation of the fixtures is valid (a client would drop the
    /// tool otherwise), and exactly one tool declares custom headers.
    #[test]
    fn the_fixtures_declare_custom_headers_on_one_tool() {
        let (table, invalid) = mcp_streamable::tool_headers::ToolHeaderTable::from_list(&tools());
        assert!(invalid.is_empty(), "{invalid:?}");
        let params = table.get("test_param_headers").expect("annotated");
        let mut names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["Priority", "Region", "Verbose"]);
        assert_eq!(table, tool_headers());
    }

    #[test]
    fn every_static_tool_answers_as_the_conformance_suite_expects() {
        let call = static_answer;
        let first_text = |v: &Value| v["content"][0]["text"].as_str().map(str::to_owned);
        let simple = call("test_simple_text", "{}");
        assert_eq!(
            first_text(&simple).as_deref(),
            Some("This is a simple text response for testing.")
        );
        assert_eq!(simple.get("isError"), None);
        let failed = call("test_error_handling", "{}");
        assert_eq!(
            failed["isError"],
            json!(true),
            "a tool's failure is a result"
        );
        assert!(first_text(&failed).is_some_and(|t| t.contains("error")));
        let schema = call(
            "json_schema_2020_12_tool",
            r#"{"name":"n","address":{"city":"c"}}"#,
        );
        assert_eq!(
            first_text(&schema).as_deref(),
            Some(r#"JSON Schema 2020-12 tool called with: {"address":{"city":"c"},"name":"n"}"#)
        );
        for (name, kind) in [
            ("test_image_content", "image"),
            ("test_audio_content", "audio"),
            ("test_embedded_resource", "resource"),
        ] {
            assert_eq!(
                call(name, "{}")["content"][0]["type"],
                json!(kind),
                "{name}"
            );
        }
        let mixed = call("test_multiple_content_types", "{}");
        assert_eq!(mixed["content"].as_array().map(Vec::len), Some(3));
        // Any other tool is not one of these (`call` answers it, or refuses it).
        assert!(static_tool("no_such_tool", Arguments::NONE).is_none());
    }
}
