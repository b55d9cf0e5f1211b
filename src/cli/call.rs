//! `mcp-streamable call URL [TOOL [JSON-ARGS]]`: initialize, call one tool,
//! print its result, DELETE. Also the conformance suite's client command: the
//! suite appends the URL last, names the scenario in
//! `MCP_CONFORMANCE_SCENARIO`, which picks the calls when no tool is given
//! ([`plan`]), and the version in `MCP_CONFORMANCE_PROTOCOL_VERSION`, which
//! picks the era when `--era` is not given.
//!
//! A tool of the 2026-07-28 era may ask for input (MRTR): `--elicit JSON`
//! answers every elicitation with that `ElicitResult` (in the session era
//! too); without it, or for sampling and roots, `call` declines (the
//! request fails with `InputDeclined`, the server's request gets -32601).
//!
//! A one-shot call opens no background GET unless `--background-get` asks:
//! it has nothing to listen for, and a GET racing the call would only invite
//! a response on the wrong stream.
//!
//! As `probe-client`'s command it also honours the prober's environment:
//! `MCP_PROBE_CALLS=N` makes each tool call N times at once (all sent before
//! any answer is awaited), and `MCP_PROBE_LISTEN=tools` listens for
//! tool-list changes before the calls (2026-07-28; the session era hears
//! them on its GET) and ends only once a change is learned: by its
//! notification, or by the list made again after a re-listen's
//! acknowledgement. `MCP_PROBE_ANSWER_DELAY_MS=N` answers each server
//! request N ms after it came (as `--elicit` says, or declined), unless
//! the server withdrew it meanwhile: the core no longer holds it then, and
//! the answer is not sent. `MCP_PROBE_GIVE_UP_MS=N` gives each call up N ms
//! after it was sent (the client cancels it), then stays connected
//! `MCP_PROBE_LINGER_MS` before it closes and exits 0.

use mcp_streamable::client::{ClientEra, ClientEvent};
use mcp_streamable::jsonrpc::{ErrorObject, RawJson, METHOD_NOT_FOUND};
use mcp_streamable::policy::{BackgroundGet, ClientPolicy};
use mcp_streamable::v2026::ListenFilter;
use mcp_streamable_check::monitor::Monitor;
use mcp_streamable_hyper::client::{split_url, Client, ClientOptions, ShellError};
use mcp_streamable_hyper::TcpConnect;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Arguments of `call`.
#[derive(clap::Args)]
pub struct CallArgs {
    /// The server URL (http://host:port/path), the tool and its JSON arguments, in any order of URL.
    args: Vec<String>,
    /// Print server notifications (with their params) and requests to stderr as they arrive
    /// (and ask for progress).
    #[arg(long)]
    verbose: bool,
    /// Judge the run with the invariant monitor; exit 1 if it finds anything.
    #[arg(long)]
    monitor: bool,
    /// Which protocol era to speak: v2025 (initialize, a session), v2026
    /// (2026-07-28: server/discover, no session) or auto (probe, fall back).
    /// Default: v2026 when `MCP_CONFORMANCE_PROTOCOL_VERSION` is
    /// 2026-07-28, else v2025. `legacy` and `modern` are accepted for v2025
    /// and v2026.
    #[arg(long, value_enum)]
    era: Option<Era>,
    /// Answer every elicitation with this `ElicitResult` (JSON), e.g.
    /// '{"action":"accept","content":{"confirmed":true}}'.
    #[arg(long)]
    elicit: Option<String>,
    /// Client preset (FIXED, CSHARP_BASELINE, RMCP_1_7, …): how a buggy SDK
    /// client would make the call, for demonstrations and `probe-client`'s
    /// own tests. Its background GET stays off.
    #[arg(long, default_value = "FIXED")]
    preset: String,
    /// Open the standalone GET after `initialize`, as a long-lived client
    /// does, to hear the server's requests and notifications there.
    #[arg(long)]
    background_get: bool,
}

/// `--era`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Era {
    #[value(alias = "legacy")]
    V2025,
    #[value(alias = "modern")]
    V2026,
    Auto,
}

impl From<Era> for ClientEra {
    fn from(era: Era) -> ClientEra {
        match era {
            Era::V2025 => ClientEra::V2025,
            Era::V2026 => ClientEra::V2026,
            Era::Auto => ClientEra::Auto,
        }
    }
}

pub fn run(args: CallArgs) -> Result<ExitCode, String> {
    let url = args
        .args
        .iter()
        .find(|a| a.starts_with("http://"))
        .cloned()
        .ok_or("call needs a URL (http://host:port/path)")?;
    let mut rest = args.args.iter().filter(|a| **a != url);
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let steps = match rest.next() {
        Some(tool) => {
            let arguments = match rest.next() {
                Some(json) => serde_json::from_str(json).map_err(|e| format!("JSON-ARGS: {e}"))?,
                None => serde_json::json!({}),
            };
            vec![Step::Call(tool.clone(), arguments)]
        }
        None => plan(
            &scenario,
            std::env::var("MCP_CONFORMANCE_CONTEXT").ok().as_deref(),
        ),
    };
    let mut elicit = args
        .elicit
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
        .transpose()
        .map_err(|e| format!("--elicit: {e}"))?;
    if elicit.is_none() && scenario == "sep-2322-client-request-state" {
        elicit = Some(serde_json::json!({"action": "accept", "content": {"confirmed": true}}));
    }
    let elicit_given = elicit.is_some();
    let era = args.era.unwrap_or_else(|| {
        match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
            Ok("2026-07-28") => Era::V2026,
            _ => Era::V2025,
        }
    });
    let policy = ClientPolicy::preset(&args.preset).ok_or_else(|| {
        format!(
            "unknown client preset {:?}; expected one of {:?}",
            args.preset,
            ClientPolicy::preset_names()
        )
    })?;
    let (authority, path) = split_url(&url).map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let at_once: usize = match std::env::var("MCP_PROBE_CALLS") {
        Ok(n) if !n.is_empty() => n
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("MCP_PROBE_CALLS={n}: expected a count of at least 1"))?,
        _ => 1,
    };
    let listen_for_tools = std::env::var("MCP_PROBE_LISTEN").is_ok_and(|l| l == "tools");
    let answer_delay_ms = env_ms("MCP_PROBE_ANSWER_DELAY_MS")?;
    let give_up_ms = env_ms("MCP_PROBE_GIVE_UP_MS")?;
    let linger_ms = env_ms("MCP_PROBE_LINGER_MS")?;
    let verbose = args.verbose;
    let background_get = args.background_get;
    let use_monitor = args.monitor;
    rt.block_on(async move {
        let addr = tokio::net::lookup_host(&authority)
            .await
            .map_err(|e| format!("{authority}: {e}"))?
            .next()
            .ok_or_else(|| format!("{authority}: no address"))?;
        let mut options = ClientOptions {
            policy,
            ..ClientOptions::default()
        };
        if !background_get {
            options.policy.background_get = BackgroundGet::Off;
        }
        options.config.era = era.into();
        let answer: AnswerFor = Arc::new(move |method: &str| match (method, &elicit) {
            ("elicitation/create", Some(answer)) => Ok(RawJson::from(answer.clone())),
            _ => Err(ErrorObject::new(
                METHOD_NOT_FOUND,
                format!("{method}: not here"),
            )),
        });
        let delayed = answer_delay_ms > 0;
        if delayed {
            options.answer_later = true;
        } else if elicit_given {
            let answer = answer.clone();
            options.handler = Some(Box::new(move |method, _| answer(method)));
        }
        let monitor = Arc::new(Mutex::new(Monitor::new()));
        if use_monitor {
            let m = monitor.clone();
            options.tap = Some(Box::new(move |o| {
                if let Ok(mut m) = m.lock() {
                    m.observe(o);
                }
            }));
        }
        let (client, init) = Client::connect(TcpConnect(addr), &authority, &path, options)
            .await
            .map_err(|e| format!("initialize: {e}"))?;
        eprintln!("initialized: {}", init.as_str());
        let answerer = delayed.then(|| {
            answer_later(
                client.responder(),
                client.subscribe(),
                answer_delay_ms,
                answer,
            )
        });
        let watcher = {
            let mut events = client.subscribe();
            tokio::spawn(async move {
                while let Ok(e) = events.recv().await {
                    match e {
                        ClientEvent::Notification { method, params } if verbose => match params {
                            Some(p) => eprintln!("notification {method} {}", p.as_str()),
                            None => eprintln!("notification {method}"),
                        },
                        ClientEvent::ServerRequest { method, .. } if verbose => {
                            eprintln!("server request {method}")
                        }
                        ClientEvent::ToolRejected { name, reason } => {
                            eprintln!("tool {name} left out of the listing: {reason}")
                        }
                        _ => {}
                    }
                }
            })
        };
        // Subscribed before the listen, so its acknowledgement is not missed.
        let mut changes = client.subscribe();
        let listening = match listen_for_tools {
            true => listen_for_tool_changes(&client, &mut changes).await?,
            false => false,
        };
        let mut outcome = Ok(Ok(RawJson::empty_object()));
        let mut listed = Vec::new();
        let mut listing: Option<serde_json::Value> = None;
        let mut steps = std::collections::VecDeque::from(steps);
        while let Some(step) = steps.pop_front() {
            outcome = match step {
                Step::Call(tool, arguments) if verbose => {
                    client
                        .call_tool_with_progress(&tool, arguments, serde_json::json!("call"))
                        .await
                }
                Step::Call(tool, arguments) if give_up_ms > 0 => {
                    match give_up_after(&client, &tool, arguments, give_up_ms).await {
                        Ok(None) => {
                            eprintln!(
                                "gave the call up after {give_up_ms} ms; staying {linger_ms} ms"
                            );
                            tokio::time::sleep(std::time::Duration::from_millis(linger_ms)).await;
                            break;
                        }
                        Ok(Some(answer)) => Ok(answer),
                        Err(e) => Err(e),
                    }
                }
                Step::Call(tool, arguments) if at_once > 1 => {
                    calls_at_once(&client, &tool, arguments, at_once).await
                }
                Step::Call(tool, arguments) => client.call_tool(&tool, arguments).await,
                Step::List => client.request("tools/list", None).await,
                Step::EchoSchema { of, to } => {
                    let schema = listing
                        .as_ref()
                        .and_then(|l| {
                            mcp_streamable::tool_headers::tools_of(l)
                                .find(|t| t.get("name").and_then(|n| n.as_str()) == Some(of))
                                .and_then(|t| t.get("inputSchema").cloned())
                        })
                        .ok_or_else(|| format!("no tool {of} in the listing"))?;
                    client
                        .call_tool(to, serde_json::json!({ "schema": schema }))
                        .await
                }
                Step::CallEveryListed => {
                    for name in listed.drain(..).rev() {
                        steps.push_front(Step::Call(name, serde_json::json!({})));
                    }
                    continue;
                }
            };
            match &outcome {
                Ok(Ok(result)) => {
                    println!("{}", result.as_str());
                    let value = result.to_value();
                    let names = mcp_streamable::tool_headers::tools_of(&value)
                        .filter_map(|t| t.get("name")?.as_str().map(str::to_owned))
                        .collect::<Vec<_>>();
                    if !names.is_empty() {
                        listed = names;
                        listing = Some(value);
                    }
                }
                _ => break,
            }
        }
        if listening && matches!(outcome, Ok(Ok(_))) {
            outcome = learn_of_a_change(&client, &mut changes).await;
        }
        client.close().await;
        watcher.abort();
        if let Some(a) = answerer {
            a.abort();
        }
        if use_monitor {
            let mut m = monitor.lock().map_err(|_| "monitor poisoned")?;
            m.finish(&[]);
            eprintln!(
                "monitor: {} observations, {} violations",
                m.steps(),
                m.violations().len()
            );
            for v in m.violations() {
                eprintln!("  {} {:?}: {}", v.id, v.http, v.detail);
            }
            if !m.violations().is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
        match outcome {
            Ok(Ok(_)) => Ok(ExitCode::SUCCESS),
            Ok(Err(e)) => Err(format!("JSON-RPC error {}: {}", e.code, e.message)),
            Err(e) => Err(e.to_string()),
        }
    })
}

/// `n` calls of `tool` at once: every request sent before any answer is
/// awaited. The first failure, else the last result.
async fn calls_at_once(
    client: &Client,
    tool: &str,
    arguments: serde_json::Value,
    n: usize,
) -> Answer {
    let params = call_params(tool, arguments);
    let mut answers = Vec::with_capacity(n);
    for _ in 0..n {
        let (_, answer) = client
            .start_request("tools/call", Some(params.clone()))
            .await?;
        answers.push(answer);
    }
    let mut last = Ok(Ok(RawJson::empty_object()));
    for answer in answers {
        let this = match answer.await {
            Ok(a) => a.map_err(Into::into),
            Err(_) => Err(ShellError::Stopped),
        };
        match this {
            Ok(Ok(result)) => last = Ok(Ok(result)),
            failed => return failed,
        }
    }
    last
}

/// A call of `tool` given up `ms` after it was sent, as an application with
/// a deadline does: cancelled through the client, which tells the server
/// and lets the call's stream go. None when it was given up.
async fn give_up_after(
    client: &Client,
    tool: &str,
    arguments: serde_json::Value,
    ms: u64,
) -> Result<Option<Result<RawJson, ErrorObject>>, ShellError> {
    let params = call_params(tool, arguments);
    let (id, answer) = client.start_request("tools/call", Some(params)).await?;
    match tokio::time::timeout(std::time::Duration::from_millis(ms), answer).await {
        Ok(Ok(answer)) => Ok(Some(answer?)),
        Ok(Err(_)) => Err(ShellError::Stopped),
        Err(_) => {
            client.cancel(id).await?;
            Ok(None)
        }
    }
}

/// A `tools/call`'s params: the tool's name and its arguments.
fn call_params(tool: &str, arguments: serde_json::Value) -> RawJson {
    RawJson::from(serde_json::json!({"name": tool, "arguments": arguments}))
}

/// Milliseconds from the prober's environment variable `name` (0 when unset
/// or empty).
fn env_ms(name: &str) -> Result<u64, String> {
    match std::env::var(name) {
        Ok(n) if !n.is_empty() => n
            .parse()
            .map_err(|_| format!("{name}={n}: expected milliseconds")),
        _ => Ok(0),
    }
}

/// A listen for tool-list changes, its acknowledgement awaited: `false` when
/// the era has none (the session era hears changes on its GET).
async fn listen_for_tool_changes(
    client: &Client,
    events: &mut broadcast::Receiver<ClientEvent>,
) -> Result<bool, String> {
    let filter = ListenFilter {
        tools: true,
        ..ListenFilter::default()
    };
    let listen = match client.listen(filter).await {
        Ok(listen) => listen,
        Err(e) => {
            eprintln!("no listen ({e}): changes are heard on the session's GET");
            return Ok(false);
        }
    };
    loop {
        match events.recv().await {
            Ok(ClientEvent::Listening { listen: l, .. }) if l == listen => return Ok(true),
            Ok(ClientEvent::ListenEnded { listen: l, error }) if l == listen => {
                return Err(format!(
                    "the listen ended before it was acknowledged: {error:?}"
                ))
            }
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return Err("the client stopped".into()),
        }
    }
}

/// Waits until a tool-list change is learned: its notification, or a
/// re-listen's acknowledgement (a change may have been lost while the
/// stream was broken), which the list made again answers.
async fn learn_of_a_change(
    client: &Client,
    events: &mut broadcast::Receiver<ClientEvent>,
) -> Answer {
    loop {
        match events.recv().await {
            Ok(ClientEvent::Notification { method, .. })
                if method == "notifications/tools/list_changed" =>
            {
                eprintln!("heard the tool-list change");
                return Ok(Ok(RawJson::empty_object()));
            }
            Ok(ClientEvent::Listening { resumed: true, .. }) => {
                eprintln!("listening again: listing again");
                return client.request("tools/list", None).await;
            }
            Ok(ClientEvent::ListenEnded { error, .. }) => {
                return Ok(Err(ErrorObject::new(
                    mcp_streamable::jsonrpc::INTERNAL_ERROR,
                    format!("the listen ended: {error:?}"),
                )))
            }
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return Err(ShellError::Stopped),
        }
    }
}

/// What a request comes to: a result, a JSON-RPC error, or the shell's.
type Answer = Result<Result<RawJson, ErrorObject>, ShellError>;

/// One thing `call` does.
enum Step {
    /// `tools/list`.
    List,
    /// `tools/call` of a tool with these arguments.
    Call(String, serde_json::Value),
    /// `tools/call` of every tool the last listing gave the application
    /// (what the client core kept), with no arguments.
    CallEveryListed,
    /// `tools/call` of tool `to` with `{"schema": …}`, the `inputSchema` of
    /// tool `of` as the last listing gave it to the application: what the
    /// client kept of a schema, shown to the server.
    EchoSchema {
        /// The listed tool.
        of: &'static str,
        /// The tool that gets its schema.
        to: &'static str,
    },
}

/// What a conformance scenario asks of the client: the calls its context
/// names (`toolCalls` in `MCP_CONFORMANCE_CONTEXT`, after a listing), else
/// by its name; a plain `tools/list` for any other.
fn plan(scenario: &str, context: Option<&str>) -> Vec<Step> {
    let call = |tool: &str, args: serde_json::Value| Step::Call(tool.to_owned(), args);
    let none = serde_json::json!({});
    let context: serde_json::Value = context
        .and_then(|c| serde_json::from_str(c).ok())
        .unwrap_or_default();
    if let Some(calls) = context.get("toolCalls").and_then(|c| c.as_array()) {
        let calls = calls.iter().filter_map(|c| {
            let name = c.get("name")?.as_str()?;
            Some(call(
                name,
                c.get("arguments").cloned().unwrap_or_else(|| none.clone()),
            ))
        });
        return std::iter::once(Step::List).chain(calls).collect();
    }
    match scenario {
        // SEP-2243: the tools with invalid header annotations are left out
        // of the listing; every other one is called.
        "http-invalid-tool-headers" => vec![Step::List, Step::CallEveryListed],
        // SEP-1613, SEP-2106: the schema's 2020-12 keywords kept as listed.
        "json-schema-2020-12-preservation" => vec![
            Step::List,
            Step::EchoSchema {
                of: "json_schema_2020_12_tool",
                to: "json_schema_echo",
            },
        ],
        "tools_call" => vec![call("add_numbers", serde_json::json!({"a": 1, "b": 2}))],
        "sse-retry" => vec![call("test_reconnection", none)],
        // MRTR: two multi-round calls, one plain call between them (the
        // state must not leak into it), and a result without `resultType`.
        "sep-2322-client-request-state" => vec![
            Step::List,
            call("test_mrtr_echo_state", none.clone()),
            call("test_mrtr_unrelated", none.clone()),
            call("test_mrtr_no_state", none.clone()),
            call("test_mrtr_no_result_type", none),
        ],
        "http-standard-headers" => vec![Step::List, call("test_headers", none)],
        _ => vec![Step::List],
    }
}

/// What the application answers a server request of a method.
type AnswerFor = Arc<dyn Fn(&str) -> Result<RawJson, ErrorObject> + Send + Sync>;

/// Answers each server request `delay_ms` after it came, with `answer`'s
/// word for its method; one the server withdrew meanwhile is refused by the
/// core (it holds it no longer) and said so on stderr.
fn answer_later(
    responder: mcp_streamable_hyper::client::Responder,
    mut events: broadcast::Receiver<ClientEvent>,
    delay_ms: u64,
    answer: AnswerFor,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Ok(e) = events.recv().await {
            match e {
                ClientEvent::ServerRequest { id, method, .. } => {
                    let (responder, answer) = (responder.clone(), answer.clone());
                    tokio::spawn(async move {
                        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
                        if let Err(e) = responder.respond(id.clone(), answer(&method)).await {
                            eprintln!("server request {id} not answered: {e}");
                        }
                    });
                }
                ClientEvent::ServerRequestCancelled { id, .. } => {
                    eprintln!("server request {id} withdrawn by the server");
                }
                _ => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Call {
        #[command(flatten)]
        args: CallArgs,
    }

    #[test]
    fn eras_are_named_by_year_and_their_older_names_still_parse() {
        for (given, era) in [
            ("v2025", ClientEra::V2025),
            ("legacy", ClientEra::V2025),
            ("v2026", ClientEra::V2026),
            ("modern", ClientEra::V2026),
            ("auto", ClientEra::Auto),
        ] {
            let call = Call::try_parse_from(["call", "--era", given, "http://127.0.0.1:1/mcp"])
                .unwrap_or_else(|e| panic!("--era {given}: {e}"));
            assert_eq!(
                call.args.era.map(ClientEra::from),
                Some(era),
                "--era {given}"
            );
        }
        assert!(Call::try_parse_from(["call", "--era", "2026", "http://127.0.0.1:1/mcp"]).is_err());
    }
}
