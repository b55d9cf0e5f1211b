//! The real hyper shells over turmoil's simulated TCP: one server host, client
//! hosts, seeded latency; the monitor judges every observation of both sides.

use mcp_streamable::http::client::{Client, ClientOptions};
use mcp_streamable::http::{Connect, EverythingApp, Listen, Server, ServerOptions};
use mcp_streamable::monitor::{Monitor, Observation};
use mcp_streamable::policy::{ClientPolicy, ServerPolicy};
use mcp_streamable::server::AllowList;
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct SimListener(turmoil::net::TcpListener);

impl Listen for SimListener {
    type Io = turmoil::net::TcpStream;
    async fn accept(&mut self) -> std::io::Result<Self::Io> {
        Ok(self.0.accept().await?.0)
    }
}

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

/// What the network does to one run.
struct Faults {
    /// Message latency is drawn from 1 ms to this.
    max_latency_ms: u64,
    /// All client<->server traffic is held from `.0` ms for `.1` ms, then released in a burst.
    hold: Option<(u64, u64)>,
}

/// What one run left: judged by the monitor at the end.
struct Outcome {
    ids: Vec<&'static str>,
    completed: usize,
    trace: Vec<String>,
    simulated: Duration,
}

/// One simulated run of `tools` against `serve`'s application; faults off
/// once the hold window is over (the liveness phase).
fn simulate(
    seed: u64,
    server: ServerPolicy,
    client: ClientPolicy,
    faults: Faults,
    tools: &'static [&'static str],
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
                seed,
                policy: server,
                ..ServerOptions::default()
            };
            options.endpoint.allow = AllowList::any();
            options.endpoint.session.retry_ms = 200;
            let _handle = Server::serve(
                SimListener(listener),
                options,
                EverythingApp::default,
                Some(tap(&m, &l)),
            );
            std::future::pending::<()>().await;
            Ok(())
        }
    });
    let done = Arc::new(Mutex::new(0usize));
    let (m, l, d) = (monitor.clone(), log.clone(), done.clone());
    sim.client("client", async move {
        let options = ClientOptions {
            policy: client,
            tap: Some(tap(&m, &l)),
            ..ClientOptions::default()
        };
        let (c, _) = Client::connect(SimConnect("server:8080"), "server:8080", "/mcp", options)
            .await
            .map_err(|e| e.to_string())?;
        for tool in tools {
            let r = c
                .call_tool_with_progress(
                    tool,
                    serde_json::json!({"text": "t"}),
                    serde_json::json!(1),
                )
                .await
                .map_err(|e| e.to_string())?;
            if r.is_ok() {
                *d.lock().unwrap() += 1;
            }
        }
        // Let the background GET and any reconnection settle, then end the session.
        tokio::time::sleep(Duration::from_secs(3)).await;
        c.close().await;
        Ok(())
    });
    let (mut held, mut released) = (false, false);
    let ended_ok = loop {
        let elapsed = sim.elapsed().as_millis() as u64;
        if let Some((at, len)) = faults.hold {
            if !held && elapsed >= at {
                sim.hold("client", "server");
                held = true;
            }
            if held && !released && elapsed >= at + len {
                sim.release("client", "server");
                released = true;
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
    let completed = *done.lock().unwrap();
    let trace = log.lock().unwrap().clone();
    Outcome {
        ids,
        completed,
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
            hold: None,
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
        } = run(seed, ServerPolicy::FIXED, ClientPolicy::FIXED);
        simulated += sim;
        assert!(
            ids.is_empty(),
            "seed {seed}: {ids:?}\nreplay: run({seed}, ServerPolicy::FIXED, ClientPolicy::FIXED) in tests/turmoil_sim.rs"
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
    assert!(caught.is_some(), "B1 found within 8 seeds");
}

/// VOPR-style: each seed first draws its own fault rates (latency spread, a
/// window in which all traffic between client and server is held, then
/// released in a burst), then runs the workload; the liveness check is that
/// every call completes and the monitor finds nothing.
fn run_with_faults(seed: u64) -> Outcome {
    let mut draw = mcp_streamable::rng::SeededRng::new(seed ^ 0xfa17);
    let max_latency_ms = 5 + draw.next_u64() % 195; // 5..200 ms
    let hold_at = 50 + draw.next_u64() % 2_000; // ms into the run
    let hold_for = draw.next_u64() % 2_000; // up to 2 s
    let faults = Faults {
        max_latency_ms,
        hold: Some((hold_at, hold_for)),
    };
    let tools = &[
        "test_tool_with_progress",
        "test_reconnection",
        "echo",
        "test_reconnection",
    ];
    simulate(
        seed,
        ServerPolicy::FIXED,
        ClientPolicy::FIXED,
        faults,
        tools,
    )
}

#[test]
fn fixed_survives_per_seed_fault_rates() {
    let seeds: u64 = std::env::var("TURMOIL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24);
    for seed in 0..seeds {
        let Outcome { ids, completed, .. } = run_with_faults(seed);
        assert!(
            ids.is_empty(),
            "seed {seed}: {ids:?}\nreplay: run_with_faults({seed}) in tests/turmoil_sim.rs"
        );
        assert_eq!(
            completed, 4,
            "seed {seed}: every call completed after the faults"
        );
    }
}
