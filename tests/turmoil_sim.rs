//! The real hyper shells over turmoil's simulated TCP: one server host, client
//! hosts, seeded latency; the monitor judges every observation of both sides.

use mcp_streamable::client::ClientEra;
use mcp_streamable::id_source::IdSource;
use mcp_streamable::jsonrpc::{ErrorObject, RawJson};
use mcp_streamable::policy::{ClientPolicy, ServerPolicy};
use mcp_streamable::server::AllowList;
use mcp_streamable_check::monitor::{Monitor, Observation};
use mcp_streamable_hyper::client::{Client, ClientOptions, RequestHandler};
use mcp_streamable_hyper::{Connect, EverythingApp, Server, ServerOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod turmoil_support;
use turmoil_support::SimListener;

#[derive(Clone)]
struct SimConnect(&'static str);

impl Connect for SimConnect {
    type Io = turmoil::net::TcpStream;
    async fn connect(&self) -> std::io::Result<Self::Io> {
        turmoil::net::TcpStream::connect(self.0).await
    }
}

type Shared = Arc<Mutex<Monitor>>;

fn tap(m: &Shared, log: &Arc<Mutex<Vec<String>>>) -> Box<dyn FnMut(&Observation) + Send> {
    let m = m.clone();
    let log = log.clone();
    Box::new(move |o| {
        m.lock().unwrap().observe(o);
        log.lock().unwrap().push(format!("{o:?}"));
    })
}

/// What the network does to one run. Every window is in ms from the start.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// Message latency is drawn from 1 ms to this.
    max_latency_ms: u64,
    /// All client<->server traffic is held from `.0` for `.1`, then released in a burst.
    hold: Option<(u64, u64)>,
    /// The client and the server are partitioned from `.0` for `.1`: turmoil
    /// drops the segments and TCP never retransmits them, so every connection
    /// open across it stalls for good (the client's request timeout ends its
    /// calls).
    partition: Option<(u64, u64)>,
    /// A second client machine, busy with the same workload, crashes at `.0`
    /// and restarts `.1` later (a fresh session), with its sessions left behind.
    crash: Option<(u64, u64)>,
}

impl Faults {
    /// When the last fault window is over: the liveness phase starts 1 s later.
    fn quiet_at(&self) -> u64 {
        [self.hold, self.partition, self.crash]
            .iter()
            .flatten()
            .map(|(at, len)| at + len)
            .max()
            .unwrap_or(0)
            + 1_000
    }
}

/// What one run left: judged by the monitor at the end.
struct Outcome {
    ids: Vec<&'static str>,
    completed: usize,
    /// Calls that returned an error (a request timeout across a partition).
    failed: usize,
    /// The liveness call after the faults succeeded.
    alive: bool,
    trace: Vec<String>,
    simulated: Duration,
}

/// One simulated run of `tools` against `serve`'s application; then, with
/// the faults over, one more call that must succeed (the liveness phase).
fn simulate(
    seed: u64,
    server: ServerPolicy,
    client: ClientPolicy,
    faults: Faults,
    tools: &'static [&'static str],
) -> Outcome {
    simulate_with(seed, server, client, faults, tools, false, ClientEra::V2025)
}

/// What the simulated user answers: every elicitation accepted with a name.
fn user() -> RequestHandler {
    Box::new(|method, _| match method {
        "elicitation/create" => Ok(RawJson::from(
            serde_json::json!({"action": "accept", "content": {"name": "Ada", "color": "green"}}),
        )),
        _ => Err(ErrorObject::new(-32601, "no")),
    })
}

/// The calls of one client, with the arguments every tool of the workload accepts.
async fn call_all(c: &Client, tools: &[&str]) -> (usize, usize) {
    let (mut ok, mut failed) = (0, 0);
    for tool in tools {
        let args = serde_json::json!({"text": "t", "delay_ms": 30});
        match c
            .call_tool_with_progress(tool, args, serde_json::json!(1))
            .await
        {
            Ok(Ok(_)) => ok += 1,
            _ => failed += 1,
        }
    }
    (ok, failed)
}

/// [`simulate`], optionally with the registration-time notification of
/// race A (`EverythingApp::with_registration_notice`).
fn simulate_with(
    seed: u64,
    server: ServerPolicy,
    client: ClientPolicy,
    faults: Faults,
    tools: &'static [&'static str],
    registration_notice: bool,
    era: ClientEra,
) -> Outcome {
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(90))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(faults.max_latency_ms))
        .build();
    let monitor: Shared = Arc::new(Mutex::new(Monitor::new()));
    let log = Arc::new(Mutex::new(Vec::new()));
    let (m, l) = (monitor.clone(), log.clone());
    sim.host("server", move || {
        let (m, l) = (m.clone(), l.clone());
        async move {
            let listener = turmoil::net::TcpListener::bind("0.0.0.0:8080").await?;
            let mut options = ServerOptions {
                ids: IdSource::reproducible(seed),
                policy: server,
                ..ServerOptions::default()
            };
            options.endpoint.allow = AllowList::any();
            options.endpoint.session.retry_ms = 200;
            let _handle = Server::serve(
                SimListener(listener),
                options,
                move || EverythingApp::with_registration_notice(registration_notice),
                Some(tap(&m, &l)),
            );
            std::future::pending::<()>().await;
            Ok(())
        }
    });
    if faults.crash.is_some() {
        // The crash-prone machine: not tapped (the monitor judges one
        // client's ids); the server side of its traffic is judged.
        sim.host("crashy", move || async move {
            let options = ClientOptions {
                policy: client,
                ..ClientOptions::default()
            };
            if let Ok((c, _)) =
                Client::connect(SimConnect("server:8080"), "server:8080", "/mcp", options).await
            {
                call_all(&c, tools).await;
            }
            std::future::pending::<()>().await;
            Ok(())
        });
    }
    let result = Arc::new(Mutex::new((0usize, 0usize, false)));
    let (m, l, r) = (monitor.clone(), log.clone(), result.clone());
    let quiet_at = faults.quiet_at();
    sim.client("client", async move {
        let mut options = ClientOptions {
            policy: client,
            tap: Some(tap(&m, &l)),
            ..ClientOptions::default()
        };
        options.config.request_timeout_ms = 5_000;
        // An initialize lost to a partition times out; the application tries again.
        let mut attempt = 0;
        let c = loop {
            let mut o = ClientOptions {
                policy: options.policy,
                tap: options.tap.take(),
                ..ClientOptions::default()
            };
            o.config = options.config;
            o.config.era = era;
            if era != ClientEra::V2025 {
                o.handler = Some(user());
            }
            match Client::connect(SimConnect("server:8080"), "server:8080", "/mcp", o).await {
                Ok((c, _)) => break c,
                Err(e) if attempt >= 4 => return Err(e.to_string().into()),
                Err(_) => attempt += 1,
            }
            // The tap went with the failed client: a fresh one for the next try.
            options.tap = Some(tap(&m, &l));
        };
        let (ok, failed) = call_all(&c, tools).await;
        // Liveness: once the faults are over, a call must succeed.
        tokio::time::sleep(Duration::from_millis(quiet_at)).await;
        let alive = matches!(call_all(&c, &["echo"]).await, (1, 0));
        *r.lock().unwrap() = (ok, failed, alive);
        // Let the background GET and any reconnection settle, then end the session.
        tokio::time::sleep(Duration::from_secs(3)).await;
        c.close().await;
        Ok(())
    });
    let mut applied = [false; 6];
    let ended_ok = loop {
        let t = sim.elapsed().as_millis() as u64;
        let mut due = |i: usize, at: u64| {
            let now = !applied[i] && t >= at;
            applied[i] |= now;
            now
        };
        if let Some((at, len)) = faults.hold {
            if due(0, at) {
                sim.hold("client", "server");
            }
            if due(1, at + len) {
                sim.release("client", "server");
            }
        }
        if let Some((at, len)) = faults.partition {
            if due(2, at) {
                sim.partition("client", "server");
            }
            if due(3, at + len) {
                sim.repair("client", "server");
            }
        }
        if let Some((at, len)) = faults.crash {
            if due(4, at) {
                sim.crash("crashy");
            }
            if due(5, at + len) {
                sim.bounce("crashy");
            }
        }
        match sim.step() {
            Ok(true) => break true,
            Ok(false) => continue,
            Err(_) => break false,
        }
    };
    let simulated = sim.elapsed();
    let mut m = monitor.lock().unwrap();
    if ended_ok {
        m.finish(&[]);
    }
    let ids = m.violations().iter().map(|v| v.id).collect();
    let (completed, failed, alive) = *result.lock().unwrap();
    let trace = log.lock().unwrap().clone();
    Outcome {
        ids,
        completed,
        failed,
        alive,
        trace,
        simulated,
    }
}

const WORKLOAD: &[&str] = &["test_tool_with_progress", "test_reconnection", "echo"];

/// A run with seeded latency only (1-40 ms).
fn run(seed: u64, server: ServerPolicy, client: ClientPolicy) -> Outcome {
    simulate(
        seed,
        server,
        client,
        Faults {
            max_latency_ms: 40,
            ..Faults::default()
        },
        WORKLOAD,
    )
}

#[test]
#[allow(clippy::disallowed_methods)] // wall time only for the printed speed figure
fn fixed_over_simulated_tcp_completes_and_breaks_nothing() {
    let wall = std::time::Instant::now();
    let mut simulated = Duration::ZERO;
    for seed in 0..16 {
        let Outcome {
            ids,
            completed,
            trace,
            simulated: sim,
            ..
        } = run(seed, ServerPolicy::FIXED, ClientPolicy::FIXED);
        simulated += sim;
        assert!(
            ids.is_empty(),
            "seed {seed}: {ids:?}\nreplay: {}",
            replay_command("latency", seed)
        );
        assert_eq!(completed, 3, "seed {seed}: every call completed");
        assert!(
            trace.len() > 40,
            "seed {seed}: the monitor saw the run ({} observations)",
            trace.len()
        );
    }
    let wall = wall.elapsed();
    println!(
        "turmoil: {:.1} simulated s in {:.3} wall s: {:.0} simulated s per wall s",
        simulated.as_secs_f64(),
        wall.as_secs_f64(),
        simulated.as_secs_f64() / wall.as_secs_f64()
    );
}

/// The 2026-07-28 era over simulated TCP: progress, a tool that takes two
/// MRTR rounds (the handler answers as a user), echo; then the liveness call.
const V2026_WORKLOAD: &[&str] = &[
    "test_tool_with_progress",
    "test_input_required_result_multi_round",
    "echo",
];

#[test]
fn fixed_in_the_v2026_era_over_simulated_tcp_completes_and_breaks_nothing() {
    for seed in 0..8 {
        let faults = Faults {
            max_latency_ms: 40,
            ..Faults::default()
        };
        let Outcome {
            ids,
            completed,
            alive,
            trace,
            ..
        } = simulate_with(
            seed,
            ServerPolicy::FIXED,
            ClientPolicy::FIXED,
            faults,
            V2026_WORKLOAD,
            false,
            ClientEra::V2026,
        );
        assert!(ids.is_empty(), "seed {seed}: {ids:?}");
        assert_eq!(completed, 3, "seed {seed}: every call completed");
        assert!(alive, "seed {seed}: the liveness call");
        assert!(
            trace.len() > 20,
            "seed {seed}: the monitor saw the run ({} observations)",
            trace.len()
        );
    }
}

#[test]
fn same_seed_same_trace() {
    let a = run(7, ServerPolicy::FIXED, ClientPolicy::FIXED).trace;
    let b = run(7, ServerPolicy::FIXED, ClientPolicy::FIXED).trace;
    assert_eq!(a, b, "a seed replays exactly");
    let c = run(8, ServerPolicy::FIXED, ClientPolicy::FIXED).trace;
    assert_ne!(a, c, "another seed takes another path");
}

#[test]
fn race_b_rmcp_0_16_with_an_eventsource_client_is_caught_over_real_http() {
    let mut caught = None;
    for seed in 0..8 {
        let ids = run(
            seed,
            ServerPolicy::RMCP_0_16,
            ClientPolicy::EVENTSOURCE_RECONNECT,
        )
        .ids;
        if ids.contains(&"B1") {
            caught = Some(seed);
            break;
        }
    }
    println!("turmoil race B: B1 caught at seed {caught:?}");
    assert!(caught.is_some(), "B1 found within 8 seeds");
}

/// VOPR-style: each seed first draws its own fault rates (latency spread; a
/// window in which all client-server traffic is held, then released in a
/// burst; a partition window; a second client machine that crashes and
/// restarts), then runs the workload. The checks: the monitor finds nothing;
/// every call returns (done, or a typed error when a partition stalled its
/// connection); after the faults, a new call succeeds.
fn draw_faults(seed: u64) -> Faults {
    let mut draw = mcp_streamable::rng::SeededRng::new(seed ^ 0xfa17);
    let mut d = |n: u64| draw.next_u64() % n;
    let max_latency_ms = 5 + d(195);
    let hold = (d(2) == 0).then(|| (50 + d(2_000), d(2_000)));
    let partition = (d(3) == 0).then(|| (100 + d(3_000), 100 + d(1_500)));
    let crash = (d(2) == 0).then(|| (100 + d(3_000), 200 + d(2_000)));
    Faults {
        max_latency_ms,
        hold,
        partition,
        crash,
    }
}

fn run_with_faults(seed: u64) -> Outcome {
    simulate(
        seed,
        ServerPolicy::FIXED,
        ClientPolicy::FIXED,
        draw_faults(seed),
        VOPR_WORKLOAD,
    )
}

const VOPR_WORKLOAD: &[&str] = &[
    "test_tool_with_progress",
    "test_reconnection",
    "echo",
    "test_reconnection",
];

#[test]
fn fixed_survives_per_seed_fault_rates() {
    let seeds: u64 = std::env::var("TURMOIL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24);
    let (mut partitions, mut crashes, mut timeouts) = (0, 0, 0);
    for seed in 0..seeds {
        let o = run_with_faults(seed);
        assert!(
            o.ids.is_empty(),
            "seed {seed}: {:?}\nreplay: {}",
            o.ids,
            replay_command("faults", seed)
        );
        assert_eq!(
            o.completed + o.failed,
            VOPR_WORKLOAD.len(),
            "seed {seed}: every call returned\nreplay: {}",
            replay_command("faults", seed)
        );
        assert!(
            o.alive,
            "seed {seed}: a call after the faults failed\nreplay: {}",
            replay_command("faults", seed)
        );
        timeouts += o.failed;
        let f = draw_faults(seed);
        partitions += usize::from(f.partition.is_some());
        crashes += usize::from(f.crash.is_some());
    }
    println!("turmoil VOPR: {seeds} seeds, {partitions} with a partition, {crashes} with a crash, {timeouts} calls timed out");
    assert!(
        seeds < 8 || (partitions > 0 && crashes > 0),
        "the draw exercises every fault"
    );
}

/// Race A over real HTTP: the mcp-go presets' competing listeners are the
/// shell's seeded scheduler; a registration-time notification and a tool's
/// later one race the next POSTs. FIXED, same workload: clean.
fn race_a(seed: u64, server: ServerPolicy) -> Outcome {
    // No background GET (toolhive's vMCP client had none): nothing else
    // reads the session queue.
    let client = ClientPolicy {
        background_get: mcp_streamable::policy::BackgroundGet::Off,
        ..ClientPolicy::FIXED
    };
    simulate_with(
        seed,
        server,
        client,
        Faults {
            max_latency_ms: 20,
            ..Faults::default()
        },
        &["notify", "echo", "notify", "echo"],
        true,
        ClientEra::V2025,
    )
}

#[test]
fn race_a_is_caught_over_real_http_and_fixed_is_clean() {
    for server in [ServerPolicy::MCP_GO_0_44, ServerPolicy::TOOLHIVE_4075] {
        let caught = (0..16).find(|&seed| {
            let ids = race_a(seed, server).ids;
            ids.iter().any(|id| ["A1", "A3", "A4", "A5"].contains(id))
        });
        println!("turmoil race A, {server:?}: caught at seed {caught:?}");
        assert!(caught.is_some(), "{server:?}: race A not found in 16 seeds");
    }
    for seed in 0..8 {
        let Outcome { ids, completed, .. } = race_a(seed, ServerPolicy::FIXED);
        assert!(
            ids.is_empty(),
            "seed {seed}: {ids:?}\nreplay: {}",
            replay_command("race_a", seed)
        );
        assert_eq!(completed, 4, "seed {seed}");
    }
}

/// Race C over real HTTP: wide latency spread, so the client's background
/// GET sometimes reaches the server only after `test_reconnection` closed its
/// POST stream for polling; the conformance mock then answers on it (C1).
fn race_c(seed: u64, server: ServerPolicy) -> Outcome {
    simulate(
        seed,
        server,
        ClientPolicy::FIXED,
        Faults {
            max_latency_ms: 400,
            ..Faults::default()
        },
        &["test_reconnection", "echo"],
    )
}

#[test]
fn race_c_is_caught_over_real_http_and_fixed_is_clean() {
    let caught = (0..32).find(|&seed| {
        race_c(seed, ServerPolicy::CONFORMANCE_SSE_RETRY)
            .ids
            .contains(&"C1")
    });
    println!("turmoil race C: C1 caught at seed {caught:?}");
    assert!(caught.is_some(), "C1 not found in 32 seeds");
    for seed in 0..8 {
        let Outcome { ids, completed, .. } = race_c(seed, ServerPolicy::FIXED);
        assert!(
            ids.is_empty(),
            "seed {seed}: {ids:?}\nreplay: {}",
            replay_command("race_c", seed)
        );
        assert_eq!(completed, 2, "seed {seed}");
    }
}

/// The exact command that re-runs one FIXED seed of a sweep and prints its trace.
fn replay_command(kind: &str, seed: u64) -> String {
    format!("TURMOIL_REPLAY={kind}:{seed} cargo test --profile test-release --test turmoil_sim replay_one_seed -- --nocapture")
}

/// `TURMOIL_REPLAY=kind:seed`: re-runs that FIXED run and prints every
/// observation (a no-op without the variable).
#[test]
fn replay_one_seed() {
    let Some(spec) = std::env::var("TURMOIL_REPLAY").ok() else {
        return;
    };
    let (kind, seed) = spec.split_once(':').expect("kind:seed");
    let seed: u64 = seed.parse().expect("seed");
    let out = match kind {
        "latency" => run(seed, ServerPolicy::FIXED, ClientPolicy::FIXED),
        "faults" => run_with_faults(seed),
        "race_a" => race_a(seed, ServerPolicy::FIXED),
        "race_c" => race_c(seed, ServerPolicy::FIXED),
        other => panic!("unknown kind {other}"),
    };
    for line in &out.trace {
        println!("{line}");
    }
    let f = draw_faults(seed);
    println!(
        "violations: {:?}, completed: {}, failed: {}, alive: {}, simulated {:?}; faults: latency <= {} ms, hold {:?}, partition {:?}, crash {:?}",
        out.ids, out.completed, out.failed, out.alive, out.simulated, f.max_latency_ms, f.hold, f.partition, f.crash
    );
}
