//! `mcp-streamable probe-client [--json] -- COMMAND ARGS…`: find transport
//! races in any MCP client, the way `probe` finds them in servers.
//!
//! For each scenario ([`scenario::SCENARIOS`]) it starts the server core on
//! loopback under the scenario's preset, puts a recording front before it
//! (which also plays the scenario's scripted fault, [`front`]), and runs the
//! client command with the front's URL appended, as the conformance suite's
//! client mode does. The command is told what to call in the environment:
//! `MCP_PROBE_SCENARIO`, `MCP_PROBE_TOOL` and `MCP_PROBE_ARGUMENTS` (JSON),
//! `MCP_PROBE_CALLS` (how many calls of the tool to make at once, 1 unless a
//! scenario is about requests in flight together), `MCP_PROBE_ANSWER_DELAY_MS`
//! (how long the application takes to answer a server request, 0 unless a
//! scenario withdraws the request first), `MCP_PROBE_LISTEN`
//! (`tools`: listen for tool-list changes first, 2026-07-28 clients, and
//! end only once one is learned; empty otherwise), `MCP_PROBE_GIVE_UP_MS`
//! (when not 0, the application gives each call up that long after sending
//! it, by the SDK's own means: its request timeout, an abort signal, a
//! cancellation), `MCP_PROBE_LINGER_MS` (how long a client that gave a call
//! up stays connected before it closes and exits 0), and, for conformance
//! client drivers, `MCP_CONFORMANCE_SCENARIO` and a
//! `MCP_CONFORMANCE_CONTEXT` whose `toolCalls` names the call. Each run is
//! bounded in time; a client still running at the bound is judged `hangs`
//! or `loops` from its traffic, and its process group is killed at the end
//! of every scenario.

// A prober of real processes over real HTTP: its bound and its evidence are
// wall time. The cores it drives never read the clock.
#![allow(clippy::disallowed_methods)]

pub mod front;
pub mod judge;
pub mod scenario;

use front::Front;
use judge::{Ending, Verdict};
use mcp_streamable_hyper::{EverythingApp, Server, ServerOptions};
use scenario::{Scenario, SCENARIOS};
use serde::Serialize;
use std::net::SocketAddr;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// Bytes of the client's stdout and stderr each run keeps (the end).
pub const OUTPUT_KEPT_MAX: usize = 2048;

/// Arguments of `probe-client`.
#[derive(clap::Args)]
pub struct ProbeClientArgs {
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Run only these scenarios (repeatable); `--list` names them.
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Print the scenarios and exit.
    #[arg(long)]
    list: bool,
    /// How long one scenario may run, in ms, before the client is judged
    /// hanging or looping and killed.
    #[arg(long, default_value_t = 8000, value_parser = super::at_least_one::<u64>)]
    timeout_ms: u64,
    /// The SSE `retry` the server announces, in ms.
    #[arg(long, default_value_t = 200)]
    retry_ms: u64,
    /// The client command and its arguments; the URL is appended.
    #[arg(last = true)]
    command: Vec<String>,
}

/// One scenario's outcome.
#[derive(Serialize)]
struct Outcome {
    scenario: &'static str,
    what: &'static str,
    verdict: Verdict,
    evidence: String,
    ms: u64,
    requests: Vec<String>,
    stderr: String,
}

pub fn run(args: ProbeClientArgs) -> Result<ExitCode, String> {
    if args.list {
        for s in SCENARIOS {
            println!("{:<24} {}", s.name, s.what);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.command.is_empty() {
        return Err("probe-client needs a client command after --".into());
    }
    let chosen: Vec<&Scenario> = if args.scenarios.is_empty() {
        SCENARIOS.iter().collect()
    } else {
        args.scenarios
            .iter()
            .map(|n| {
                scenario::named(n).ok_or_else(|| {
                    let names: Vec<_> = SCENARIOS.iter().map(|s| s.name).collect();
                    format!("unknown scenario {n:?}; expected one of {names:?}")
                })
            })
            .collect::<Result<_, _>>()?
    };
    let rt = super::serve::runtime(2)?;
    let outcomes = rt.block_on(async {
        let mut out = Vec::new();
        for s in chosen {
            let o = run_one(s, &args).await?;
            if !args.json {
                println!("{:<24} {:<8} {}", o.scenario, o.verdict.word(), o.evidence);
                if o.verdict.is_finding() {
                    for r in o.requests.iter().take(12) {
                        println!("{:<33} {r}", "");
                    }
                    if !o.stderr.is_empty() {
                        let tail = o.stderr.lines().rev().take(3).collect::<Vec<_>>();
                        for l in tail.into_iter().rev() {
                            println!("{:<33} stderr: {l}", "");
                        }
                    }
                }
            }
            out.push(o);
        }
        Ok::<_, String>(out)
    })?;
    let findings = outcomes.iter().filter(|o| o.verdict.is_finding()).count();
    if args.json {
        let doc = serde_json::json!({
            "client": args.command,
            "timeout_ms": args.timeout_ms,
            "scenarios": outcomes,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?
        );
    } else {
        println!(
            "{} scenario(s), {findings} finding(s) (violates, hangs or loops)",
            outcomes.len()
        );
    }
    Ok(if findings == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A loopback listener on a free port below 32768.
async fn listener() -> Result<tokio::net::TcpListener, String> {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seed = std::process::id() as u64;
    for _ in 0..2000 {
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = 20000 + ((seed.wrapping_mul(7919) + n * 7) % 12000) as u16;
        if let Ok(l) = tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            return Ok(l);
        }
    }
    Err("no free loopback port in 20000..32000".into())
}

async fn run_one(s: &'static Scenario, args: &ProbeClientArgs) -> Result<Outcome, String> {
    let policy = s.policy().ok_or("unknown preset")?;
    let mut options = ServerOptions {
        policy,
        ..ServerOptions::default()
    };
    options.endpoint.session.retry_ms = args.retry_ms;
    options.endpoint.session.first_request_number = s.first_request_number;
    options.endpoint.tool_headers = mcp_streamable_hyper::everything::tool_headers();
    let backend_listener = listener().await?;
    let backend_addr = backend_listener.local_addr().map_err(|e| e.to_string())?;
    drop(backend_listener);
    let server = Server::bind(backend_addr, options, EverythingApp::default, None)
        .await
        .map_err(|e| format!("{backend_addr}: {e}"))?;
    let front = Front::new(backend_addr, s.fault);
    let front_listener = listener().await?;
    let front_addr: SocketAddr = front_listener.local_addr().map_err(|e| e.to_string())?;
    let serving = tokio::spawn(front.clone().serve(front_listener));
    let url = format!("http://localhost:{}/mcp", front_addr.port());
    let started = Instant::now();
    let (ending, ended_at, stderr) = run_client(s, &args.command, &url, args.timeout_ms).await?;
    let ms = started.elapsed().as_millis() as u64;
    let client_ended_ms = front.ms_at(ended_at);
    serving.abort();
    server.shutdown().await;
    let mut record = front.take();
    record.client_ended_ms = Some(client_ended_ms);
    let (verdict, evidence) = judge::judge(s, &record, &ending, args.timeout_ms);
    let mut requests: Vec<String> = record.seen.iter().map(front::Seen::line).collect();
    if record.unrecorded > 0 {
        requests.push(format!("... and {} more", record.unrecorded));
    }
    Ok(Outcome {
        scenario: s.name,
        what: s.what,
        verdict,
        evidence,
        ms,
        requests,
        stderr,
    })
}

/// Keeps the last [`OUTPUT_KEPT_MAX`] bytes of a pipe.
async fn tail(mut pipe: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > 2 * OUTPUT_KEPT_MAX {
            kept.drain(..kept.len() - OUTPUT_KEPT_MAX);
        }
    }
    if kept.len() > OUTPUT_KEPT_MAX {
        kept.drain(..kept.len() - OUTPUT_KEPT_MAX);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Runs the client command in a process group of its own, bounded by
/// `bound_ms`; the group is killed at the end either way. How it ended,
/// when, and the end of its stderr.
async fn run_client(
    s: &Scenario,
    command: &[String],
    url: &str,
    bound_ms: u64,
) -> Result<(Ending, Instant, String), String> {
    let arguments = s.arguments();
    let context = serde_json::json!({"toolCalls": [{"name": s.tool, "arguments": arguments}]});
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .arg(url)
        .env("MCP_PROBE_SCENARIO", s.name)
        .env("MCP_PROBE_TOOL", s.tool)
        .env("MCP_PROBE_ARGUMENTS", arguments.to_string())
        .env("MCP_PROBE_CALLS", s.calls.to_string())
        .env("MCP_PROBE_ANSWER_DELAY_MS", s.answer_delay_ms.to_string())
        .env("MCP_PROBE_LISTEN", if s.listen { "tools" } else { "" })
        .env("MCP_PROBE_GIVE_UP_MS", s.give_up_ms.to_string())
        .env("MCP_PROBE_LINGER_MS", s.linger_ms.to_string())
        .env(
            "MCP_CONFORMANCE_SCENARIO",
            format!("probe-client-{}", s.name),
        )
        .env("MCP_CONFORMANCE_CONTEXT", context.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", command[0]))?;
    let pid = child.id();
    let out = child.stdout.take().map(|p| tokio::spawn(tail(p)));
    let err = child.stderr.take().map(|p| tokio::spawn(tail(p)));
    let ending = match tokio::time::timeout(Duration::from_millis(bound_ms), child.wait()).await {
        Ok(Ok(status)) => Ending::Exited(status.code()),
        Ok(Err(e)) => return Err(format!("waiting for the client: {e}")),
        Err(_) => Ending::TimedOut,
    };
    let ended_at = Instant::now();
    if let Some(pid) = pid {
        kill_group(pid);
    }
    let _ = child.kill().await;
    let grab = |h: Option<tokio::task::JoinHandle<String>>| async move {
        match h {
            Some(h) => tokio::time::timeout(Duration::from_secs(2), h)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        }
    };
    let _stdout = grab(out).await;
    let stderr = grab(err).await;
    Ok((ending, ended_at, stderr))
}

/// Kills process group `pgid` (the client and whatever it started).
fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
