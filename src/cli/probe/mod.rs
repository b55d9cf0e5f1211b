//! `mcp-streamable probe URL`: a black-box check of any MCP server's
//! Streamable HTTP layer against the rules of `docs/properties.md`, over real
//! HTTP, polite and bounded (a few dozen requests, each read for a bounded
//! window; about ten seconds in all). Prints one line per rule: holds,
//! violates, not applicable, or could not test, with the evidence; `--json`
//! for tools. Exits 1 if a MUST rule is violated.
//!
//! The prober makes the server notify only through a tool the user names
//! (`--notify-tool`); without one, the rules that need a notification are
//! "could not test"; the session-binding rule (I2) needs two principals'
//! credentials (`--bearer`, `--intruder-bearer`). Rule ids: `R*` are the spec's (docs/spec), `A*`/`B*`/`C*`/`I*`
//! the race invariants (docs/properties.md), `D*`/`F*`/`H*`/`V*`/`U*`/`G*`
//! and `M*` the 2026-07-28 era's (`v2026.rs`; `M*` as in docs/properties.md).

mod before_get;
mod cancelled;
mod isolation;
mod one_id;
mod principals;
mod questions;
mod race_a;
mod race_b;
mod race_c;
mod session_rules;
mod sessionless;
mod v2026;
mod wire;

use mcp_streamable::headers;
use serde_json::{json, Value};
use std::cell::Cell;
use std::process::ExitCode;
use std::time::Duration;
use wire::{Open, Target};

/// Arguments of `probe`.
#[derive(clap::Args)]
pub struct ProbeArgs {
    /// The MCP endpoint (http://127.0.0.1:PORT/path).
    url: String,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// A tool whose call makes the server send a notification unrelated to
    /// the call (e.g. `notifications/tools/list_changed`), after the call
    /// returns. Needed for the delivery rules of races A and B.
    #[arg(long)]
    notify_tool: Option<String>,
    /// Arguments for `--notify-tool`, as a JSON object.
    #[arg(long, default_value = "{}")]
    notify_args: String,
    /// A tool that closes its own SSE stream and answers later (polling,
    /// 2025-11-25). Default: `test_reconnection` if the server lists it.
    #[arg(long)]
    poll_tool: Option<String>,
    /// A tool that sends the client a request while serving the call (an
    /// elicitation). Default: `test_elicitation` if the server lists it.
    #[arg(long)]
    ask_tool: Option<String>,
    /// A tool that takes a while to answer (a few hundred ms to 3 s), for
    /// A4 after a cancellation: the prober cancels its call while the
    /// call's POST waits. Default: `slow_progress` if the server lists it.
    #[arg(long)]
    slow_tool: Option<String>,
    /// Arguments for `--slow-tool`, as a JSON object.
    #[arg(long, default_value = "{}", requires = "slow_tool")]
    slow_args: String,
    /// A bearer token every request carries: the principal the probe's
    /// sessions are opened by, on a server that requires one.
    #[arg(long, value_name = "TOKEN")]
    bearer: Option<String>,
    /// A second principal's bearer token, for I2: requests naming a session
    /// of `--bearer`'s principal are sent with it, and must be refused.
    #[arg(long, value_name = "TOKEN", requires = "bearer")]
    intruder_bearer: Option<String>,
}

/// A rule's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Holds,
    Violates,
    NotApplicable,
    CouldNotTest,
}

impl Verdict {
    fn of(ok: bool) -> Verdict {
        if ok {
            Verdict::Holds
        } else {
            Verdict::Violates
        }
    }
}

/// One line of the report.
#[derive(serde::Serialize)]
pub struct Finding {
    rule: &'static str,
    must: bool,
    what: &'static str,
    verdict: Verdict,
    evidence: String,
}

/// How long a notification may take to show up.
const NOTIFY_WAIT: Duration = Duration::from_millis(1500);
/// How long to read an answer that should come at once.
const QUICK: Duration = Duration::from_millis(500);
/// Time for the server to notice a closed connection.
const SETTLE: Duration = Duration::from_millis(300);
const VERSION: &str = "2025-11-25";
/// How long after a stream's request goes out an aimed notification is
/// made ([`Probe::aimed`]): past the server's handling of that request,
/// inside any window that request leaves open.
const AIM: Duration = Duration::from_millis(30);

/// The prober's state: the target, its options, and the report so far.
pub struct Probe {
    t: Target,
    notify: Option<(String, Value)>,
    poll_tool: Option<String>,
    ask_tool: Option<String>,
    /// `--slow-tool` and its arguments.
    slow: Option<(String, Value)>,
    /// The `Authorization` of a second principal (`--intruder-bearer`).
    intruder: Option<String>,
    next_id: Cell<u64>,
    findings: Vec<Finding>,
}

impl Probe {
    fn add(
        &mut self,
        rule: &'static str,
        must: bool,
        what: &'static str,
        verdict: Verdict,
        evidence: impl Into<String>,
    ) {
        self.findings.push(Finding {
            rule,
            must,
            what,
            verdict,
            evidence: one_line(&evidence.into()),
        });
    }

    fn id(&self) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }

    fn post_headers(sid: Option<&str>) -> Vec<(String, String)> {
        let mut h = vec![
            (
                headers::CONTENT_TYPE.to_owned(),
                headers::MIME_JSON.to_owned(),
            ),
            (
                headers::ACCEPT.to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            (headers::MCP_PROTOCOL_VERSION.to_owned(), VERSION.to_owned()),
        ];
        if let Some(s) = sid {
            h.push((headers::MCP_SESSION_ID.to_owned(), s.to_owned()));
        }
        h
    }

    fn get_headers(sid: &str, last_event_id: Option<&str>) -> Vec<(String, String)> {
        let mut h = vec![
            (headers::ACCEPT.to_owned(), headers::MIME_SSE.to_owned()),
            (headers::MCP_SESSION_ID.to_owned(), sid.to_owned()),
            (headers::MCP_PROTOCOL_VERSION.to_owned(), VERSION.to_owned()),
        ];
        if let Some(l) = last_event_id {
            h.push((headers::LAST_EVENT_ID.to_owned(), l.to_owned()));
        }
        h
    }

    /// POSTs request `method` with a fresh id; reads until the body ends or `window`.
    async fn request(
        &self,
        sid: Option<&str>,
        method: &str,
        params: Value,
        window: Duration,
    ) -> Option<(u64, Open)> {
        let id = self.id();
        let body =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let o = self
            .t
            .send("POST", &Self::post_headers(sid), &body, window)
            .await?;
        Some((id, o))
    }

    /// POSTs a notification.
    async fn notification(&self, sid: &str, method: &str, params: Value) -> Option<Open> {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        self.t
            .send("POST", &Self::post_headers(Some(sid)), &body, QUICK)
            .await
    }

    /// Opens a GET stream.
    async fn get(&self, sid: &str, last_event_id: Option<&str>) -> Option<Open> {
        self.t
            .open("GET", &Self::get_headers(sid, last_event_id), "")
            .await
    }

    /// `initialize`; the session id, the request id and the answer.
    async fn initialize(&mut self) -> Option<(String, u64, Open)> {
        self.initialize_with(json!({})).await
    }

    /// `initialize` declaring `capabilities`.
    async fn initialize_with(&mut self, capabilities: Value) -> Option<(String, u64, Open)> {
        let params = json!({"protocolVersion": VERSION, "capabilities": capabilities, "clientInfo": {"name": "mcp-streamable-probe", "version": env!("CARGO_PKG_VERSION")}});
        let (id, o) = self.request(None, "initialize", params, QUICK).await?;
        Some((o.session.clone()?, id, o))
    }

    /// `initialize` then `notifications/initialized`: a session ready for use.
    async fn ready_session(&mut self) -> Option<String> {
        let (sid, _, _) = self.initialize().await?;
        self.notification(&sid, "notifications/initialized", json!({}))
            .await?;
        Some(sid)
    }

    /// Calls the notify tool; its reply, read until it ends (bounded).
    async fn trigger(&self, sid: &str) -> Option<Open> {
        let (name, args) = self.notify.clone()?;
        let (_, o) = self
            .request(
                Some(sid),
                "tools/call",
                json!({"name": name, "arguments": args}),
                NOTIFY_WAIT,
            )
            .await?;
        Some(o)
    }

    /// How long the notify tool waits before it notifies: its `delay_ms`
    /// argument, if given.
    fn notify_delay(&self) -> Duration {
        let ms = self
            .notify
            .as_ref()
            .and_then(|(_, args)| args.get("delay_ms"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        Duration::from_millis(ms)
    }

    /// Runs `open` (a request that opens a stream) and `trigger` (a call of
    /// the notify tool) so that the notification comes [`AIM`] after
    /// `open`'s request went out: in the window, if the server leaves one,
    /// between taking a stream and being ready to write it (a listen
    /// registered before its acknowledgement, a GET's `200` out before its
    /// stream is wired). A server without one holds either way.
    async fn aimed<O, T>(
        &self,
        open: impl std::future::Future<Output = O>,
        trigger: impl std::future::Future<Output = T>,
    ) -> (O, T) {
        let delay = self.notify_delay();
        let lead = delay.saturating_sub(AIM);
        let lag = AIM.saturating_sub(delay);
        tokio::join!(
            async {
                tokio::time::sleep(lead).await;
                open.await
            },
            async {
                tokio::time::sleep(lag).await;
                trigger.await
            }
        )
    }

    /// The tool names the server lists.
    async fn tools(&mut self, sid: &str) -> Vec<String> {
        match self
            .request(Some(sid), "tools/list", json!({}), QUICK)
            .await
        {
            Some((id, o)) => wire::tool_names(&o, id),
            None => Vec::new(),
        }
    }

    async fn delete(&self, sid: &str) {
        let h = vec![(headers::MCP_SESSION_ID.to_owned(), sid.to_owned())];
        let _ = self.t.send("DELETE", &h, "", QUICK).await;
    }
}

pub fn run(args: ProbeArgs) -> Result<ExitCode, String> {
    let (authority, path) =
        mcp_streamable_hyper::client::split_url(&args.url).map_err(|e| e.to_string())?;
    let notify_args = json_object("--notify-args", &args.notify_args)?;
    let slow_args = json_object("--slow-args", &args.slow_args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let findings = rt.block_on(async move {
        let addr = tokio::net::lookup_host(&authority)
            .await
            .map_err(|e| e.to_string())?
            .next()
            .ok_or("no address")?;
        let mut p = Probe {
            t: Target {
                addr,
                authority,
                path,
                failure: Default::default(),
                authorization: args.bearer.as_ref().map(|t| format!("Bearer {t}")),
            },
            notify: args.notify_tool.map(|n| (n, notify_args)),
            poll_tool: args.poll_tool,
            ask_tool: args.ask_tool,
            slow: args.slow_tool.map(|t| (t, slow_args)),
            intruder: args.intruder_bearer.map(|t| format!("Bearer {t}")),
            next_id: Cell::new(1),
            findings: Vec::new(),
        };
        session_rules::run(&mut p).await;
        race_a::run(&mut p).await;
        before_get::run(&mut p).await;
        race_c::run(&mut p).await;
        race_b::run(&mut p).await;
        isolation::run(&mut p).await;
        sessionless::run(&mut p).await;
        principals::run(&mut p).await;
        questions::run(&mut p).await;
        cancelled::run(&mut p).await;
        v2026::run(&mut p).await;
        Ok::<_, String>(p.findings)
    })?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&findings).map_err(|e| e.to_string())?
        );
    } else {
        print_table(&findings);
    }
    let bad = findings
        .iter()
        .any(|f| f.must && f.verdict == Verdict::Violates);
    Ok(if bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A tool's arguments given as option `flag`: a JSON object.
fn json_object(flag: &str, text: &str) -> Result<Value, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("{flag}: {e}"))?;
    if !v.is_object() {
        return Err(format!("{flag}: expected a JSON object"));
    }
    Ok(v)
}

/// Characters of evidence a finding keeps.
const EVIDENCE_MAX: usize = 400;

/// Evidence as one line of at most [`EVIDENCE_MAX`] characters: what the
/// server sent may hold newlines and control characters (a terminal would
/// obey them) and be megabytes long.
fn one_line(evidence: &str) -> String {
    let mut out = String::new();
    for (n, c) in evidence.chars().enumerate() {
        if n == EVIDENCE_MAX {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn print_table(findings: &[Finding]) {
    println!(
        "{:<6} {:<4} {:<15} {:<58} evidence",
        "rule", "must", "verdict", "what"
    );
    for f in findings {
        println!(
            "{:<6} {:<4} {:<15} {:<58} {}",
            f.rule,
            if f.must { "yes" } else { "" },
            format!("{:?}", f.verdict),
            f.what,
            f.evidence
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{one_line, EVIDENCE_MAX};

    #[test]
    fn evidence_is_one_line_of_at_most_its_bound() {
        let exact = "e".repeat(EVIDENCE_MAX);
        assert_eq!(one_line(&exact), exact, "at the bound: whole");
        let over = "e".repeat(EVIDENCE_MAX + 1);
        assert_eq!(one_line(&over), format!("{exact}…"));
        assert_eq!(one_line("a\nb\r\u{1b}[31m"), "a\\nb\\r\\u{1b}[31m");
    }
}
