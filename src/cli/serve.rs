//! `mcp-streamable serve`: the reference server (the conformance suite's tool
//! set) on 127.0.0.1; `--preset` serves a buggy preset for demonstrations.

use mcp_streamable::policy::{ResumeLookup, ServerPolicy};
use mcp_streamable_check::monitor::Monitor;
use mcp_streamable_hyper::auth::{Auth, ResourceMetadata, StaticTokens};
use mcp_streamable_hyper::{EverythingApp, Server, ServerOptions, Tap};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Arguments of `serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to bind (loopback by default, R43).
    #[arg(long, default_value = "127.0.0.1:3000")]
    addr: SocketAddr,
    /// The path MCP is served at; any other path is answered 404.
    #[arg(long, default_value = mcp_streamable_hyper::DEFAULT_PATH)]
    path: String,
    /// Server preset (FIXED, MCP_GO_0_44, RMCP_0_16, …).
    #[arg(long, default_value = "FIXED")]
    preset: String,
    /// SSE `retry` announced to clients, in ms.
    #[arg(long, default_value_t = 1000)]
    retry_ms: u64,
    /// Accept any Host and Origin (default: localhost only, R41).
    #[arg(long)]
    any_host: bool,
    /// Runtime worker threads. The owner task runs all sessions on one of them;
    /// on 2 cores shared with a load generator one worker is fastest (see
    /// docs/performance.md).
    #[arg(long, default_value_t = 1, value_parser = super::at_least_one::<usize>)]
    threads: usize,
    /// Judge every exchange with the invariant monitor; on shutdown print what
    /// it found and exit 1 if anything (the interop tests use this).
    #[arg(long)]
    monitor: bool,
    /// Announce `notifications/resources/list_changed` while registering each
    /// session, right after `initialize` (toolhive's hook before PR #4075):
    /// with `--preset MCP_GO_0_44` this reproduces race A.
    #[arg(long)]
    registration_notice: bool,
    /// Under a preset whose steps leave a window (GO_SDK_1_7's listen
    /// registered before its acknowledgement, CSHARP_BEFORE_1212's GET
    /// `200` before its stream is wired, PYTHON_PR2934's writer not started
    /// yet), how long each such step waits, in ms, as a slow scheduler
    /// would: what a client sends meanwhile lands in the window, so a
    /// prober sees over the wire what the checker explores. 0 takes each
    /// step in the turn that enabled it. FIXED has no such steps.
    #[arg(long, default_value_t = 200)]
    step_delay_ms: u64,
    /// Open connections at once (newcomers wait in the backlog past it).
    #[arg(long, value_parser = super::at_least_one::<usize>)]
    connections_max: Option<usize>,
    /// Close a connection that sends no request head within this many ms
    /// (idle keep-alive connections included).
    #[arg(long, value_parser = super::at_least_one::<u64>)]
    header_timeout_ms: Option<u64>,
    /// Live sessions at once (half-open, then idle ones are evicted first).
    #[arg(long, value_parser = super::at_least_one::<usize>)]
    sessions_max: Option<usize>,
    /// Live sessions one client address may hold (429 past it).
    #[arg(long, value_parser = super::at_least_one::<usize>)]
    sessions_per_peer_max: Option<usize>,
    /// End sessions that have not sent `notifications/initialized` after this many ms.
    #[arg(long, value_parser = super::at_least_one::<u64>)]
    init_timeout_ms: Option<u64>,
    /// Serve as one instance of a fleet sharing this store: `redis://host:port`
    /// (built with `--features redis`), or `memory` (one instance alone, the
    /// store in its process). Run each instance with its own `--instance` and
    /// the same `--app-secret` (docs/fleets.md).
    #[arg(long)]
    store: Option<String>,
    /// This instance's id in its fleet (unique, below 4096).
    #[arg(long, default_value_t = 0)]
    instance: u16,
    /// The fleet's application secret, 64 hex digits, the same on every
    /// instance (MRTR states sealed on one are opened on another).
    #[arg(long)]
    app_secret: Option<String>,
    /// Require a bearer token: `TOKEN=PRINCIPAL` (repeatable). A request
    /// without a listed token is refused 401 with
    /// `WWW-Authenticate: Bearer resource_metadata="…"`; the resource's
    /// metadata (RFC 9728) is served at its well-known path; each session
    /// serves only the principal that opened it.
    #[arg(long = "auth-token", value_name = "TOKEN=PRINCIPAL")]
    auth_tokens: Vec<String>,
    /// With `--auth-token`: an authorization server the metadata names
    /// (repeatable).
    #[arg(long = "authorization-server", value_name = "URL")]
    authorization_servers: Vec<String>,
    /// With `--auth-token`: the resource's canonical URL in its metadata
    /// (default: `http://ADDR PATH`).
    #[arg(long)]
    resource: Option<String>,
}

/// The static bearer check of `--auth-token`, or none.
fn auth(args: &ServeArgs) -> Result<Auth, String> {
    if args.auth_tokens.is_empty() {
        if args.resource.is_some() || !args.authorization_servers.is_empty() {
            return Err("--resource and --authorization-server need --auth-token".into());
        }
        return Ok(Auth::default());
    }
    let mut tokens = StaticTokens::new();
    for entry in &args.auth_tokens {
        let (token, principal) =
            StaticTokens::parse_entry(entry).map_err(|e| format!("--auth-token: {e}"))?;
        tokens = tokens.with(&token, principal);
    }
    let resource = args
        .resource
        .clone()
        .unwrap_or_else(|| format!("http://{}{}", args.addr, args.path));
    let metadata = ResourceMetadata::new(resource, args.authorization_servers.clone());
    Ok(Auth::with(tokens).metadata(metadata))
}

/// The layout a preset needs when its bug lives between sessions of one
/// endpoint: a `Last-Event-ID` looked up across sessions
/// ([`ResumeLookup::AnySession`]) reaches no other session in the plain
/// server, which gives each session an endpoint of its own. Such a preset is
/// served as one fleet instance alone (`--store memory`), whose one endpoint
/// holds every session, as an embedding of the bare core would.
fn one_endpoint(args: &ServeArgs, policy: ServerPolicy) -> Option<String> {
    if policy.resume_lookup != ResumeLookup::AnySession {
        return None;
    }
    eprintln!(
        "preset {}: its lookup crosses sessions, so every session is served by one \
         endpoint (as --store memory)",
        args.preset.to_uppercase()
    );
    Some("memory".to_owned())
}

pub fn run(args: ServeArgs) -> Result<ExitCode, String> {
    let policy = ServerPolicy::preset(&args.preset).ok_or_else(|| {
        let names = ServerPolicy::preset_names();
        format!(
            "unknown preset {:?}; expected one of {names:?}",
            args.preset
        )
    })?;
    let mut options = ServerOptions {
        policy,
        step_delay: (args.step_delay_ms > 0)
            .then(|| std::time::Duration::from_millis(args.step_delay_ms)),
        ..ServerOptions::default()
    };
    options.endpoint.session.retry_ms = args.retry_ms;
    options.endpoint.tool_headers = mcp_streamable_hyper::everything::tool_headers();
    if !args.path.starts_with('/') {
        return Err(format!("--path {:?} must start with /", args.path));
    }
    options.path = Some(args.path.as_str().into());
    if let Some(n) = args.connections_max {
        options.connections_max = n;
    }
    if let Some(ms) = args.header_timeout_ms {
        options.header_read_timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(n) = args.sessions_max {
        options.endpoint.sessions_max = n;
    }
    options.endpoint.sessions_per_peer_max = args.sessions_per_peer_max;
    if let Some(ms) = args.init_timeout_ms {
        options.endpoint.session.init_timeout_ms = Some(ms);
    }
    if args.any_host {
        options.endpoint.allow.hosts.clear();
    }
    if let Some(hex) = &args.app_secret {
        options.app_secret = Some(parse_secret(hex)?);
    }
    options.auth = auth(&args)?;
    if let Some(store) = args.store.clone().or_else(|| one_endpoint(&args, policy)) {
        let app = EverythingApp::with_registration_notice(args.registration_notice);
        return super::serve_fleet::run(
            args.addr,
            args.instance,
            &store,
            options,
            app,
            args.threads,
        );
    }
    let rt = runtime(args.threads)?;
    let monitor = Arc::new(Mutex::new(Monitor::new()));
    let tap: Option<Tap> = args.monitor.then(|| {
        let m = monitor.clone();
        Box::new(move |o: &mcp_streamable_check::monitor::Observation| {
            if let Ok(mut m) = m.lock() {
                m.observe(o);
            }
        }) as Tap
    });
    rt.block_on(async move {
        let notice = args.registration_notice;
        let make_app = move || EverythingApp::with_registration_notice(notice);
        let server = Server::bind(args.addr, options, make_app, tap)
            .await
            .map_err(|e| format!("{}: {e}", args.addr))?;
        let addr = server.addr.unwrap_or(args.addr);
        println!(
            "mcp-streamable serving http://{addr}{} (preset {})",
            args.path,
            args.preset.to_uppercase()
        );
        until_stopped().await?;
        server.shutdown().await;
        if !args.monitor {
            return Ok(ExitCode::SUCCESS);
        }
        // Checks made as observations arrived (the end-of-run ones need a
        // quiescent run, which a server stopped by a signal is not).
        let m = monitor.lock().map_err(|_| "monitor poisoned")?;
        println!(
            "monitor: {} observations, {} violations",
            m.steps(),
            m.violations().len()
        );
        for v in m.violations() {
            println!("  {} {:?}: {}", v.id, v.http, v.detail);
        }
        Ok(if m.violations().is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}

/// 32 bytes from 64 hex digits.
fn parse_secret(hex: &str) -> Result<[u8; 32], String> {
    let bad = || {
        format!(
            "--app-secret: expected 64 hex digits, got {} characters",
            hex.len()
        )
    };
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut key = [0u8; 32];
    for (i, b) in key.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(key)
}

/// The runtime `serve` runs on, with `threads` workers. One worker is
/// tokio's current-thread scheduler: the same single thread of work without
/// the work-stealing scheduler's bookkeeping (measured side by side:
/// `docs/performance.md`, "Where c=1 loses to bare hyper").
pub(super) fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, String> {
    let mut builder = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(threads);
        b
    };
    builder.enable_all().build().map_err(|e| e.to_string())
}

/// Returns at Ctrl-C or SIGTERM.
pub(super) async fn until_stopped() -> Result<(), String> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Ok(())
}
