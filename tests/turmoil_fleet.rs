//! A fleet over turmoil's simulated TCP: two `FleetServer` instances sharing
//! one store (a `MemoryHub` on a host of its own), the client's every
//! connection going to the next live instance in turn (a balancer without
//! stickiness that skips a machine that refuses), seeded latency; the
//! client's monitor judges every observation. Then one instance crashes: the
//! session goes on through the other, and every call completes (answered, or
//! failed with the error a dead instance's calls get) instead of hanging.

use mcp_streamable::fleet::instance::InstanceConfig;
use mcp_streamable::fleet::InstanceId;
use mcp_streamable::id_source::IdSource;
use mcp_streamable::server::AllowList;
use mcp_streamable_check::monitor::Monitor;
use mcp_streamable_hyper::client::{Client, ClientOptions};
use mcp_streamable_hyper::fleet::{FleetOptions, FleetServer, MemoryHub};
use mcp_streamable_hyper::{Connect, EverythingApp, ServerOptions};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod turmoil_support;
use turmoil_support::SimListener;

const INSTANCES: [&str; 2] = ["i0:8080", "i1:8080"];

/// The balancer: each connection to the next instance; one that does not
/// accept within `CONNECT_TIMEOUT` (crashed: turmoil drops what is sent to
/// it) is marked down for `DOWN_FOR` and the next one is tried, as HAProxy's
/// `timeout connect`, health checks and redispatch do.
#[derive(Clone, Default)]
struct RoundRobin {
    next: Arc<AtomicUsize>,
    down_until: Arc<Mutex<[Option<tokio::time::Instant>; 2]>>,
}

const CONNECT_TIMEOUT: Duration = Duration::from_millis(200);
const DOWN_FOR: Duration = Duration::from_secs(2);

impl Connect for RoundRobin {
    type Io = turmoil::net::TcpStream;
    async fn connect(&self) -> std::io::Result<Self::Io> {
        for _ in 0..2 * INSTANCES.len() {
            let i = self.next.fetch_add(1, Ordering::Relaxed) % INSTANCES.len();
            let now = tokio::time::Instant::now();
            if self.down_until.lock().unwrap()[i].is_some_and(|t| t > now) {
                continue;
            }
            let attempt = turmoil::net::TcpStream::connect(INSTANCES[i]);
            match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
                Ok(Ok(s)) => return Ok(s),
                _ => self.down_until.lock().unwrap()[i] = Some(now + DOWN_FOR),
            }
        }
        Err(std::io::ErrorKind::ConnectionRefused.into())
    }
}

/// What the client saw.
#[derive(Debug, Default, Clone)]
struct Outcome {
    /// Calls answered.
    answered: usize,
    /// Calls completed with an error answer (a call on the instance that
    /// crashed, completed by the other).
    errors: usize,
    /// Calls that did not complete (the client gave up: a timeout).
    stuck: usize,
    violations: Vec<&'static str>,
    finished: bool,
    /// Simulated time when the client finished.
    finished_at_ms: u64,
}

const WORKLOAD: &[&str] = &[
    "test_tool_with_progress",
    "test_reconnection",
    "echo",
    "notify",
];
const ROUNDS: usize = 3;

fn run(seed: u64, crash_at_ms: u64) -> Outcome {
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(120))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(20))
        .build();
    let hub: Arc<Mutex<Option<Arc<MemoryHub>>>> = Arc::new(Mutex::new(None));
    let h = hub.clone();
    sim.host("store", move || {
        let h = h.clone();
        async move {
            *h.lock().unwrap() = Some(Arc::new(MemoryHub::start(1024)));
            std::future::pending::<()>().await;
            Ok(())
        }
    });
    for (i, name) in ["i0", "i1"].into_iter().enumerate() {
        let h = hub.clone();
        sim.host(name, move || {
            let h = h.clone();
            async move {
                let id = InstanceId(i as u16);
                let link = loop {
                    let ready = h.lock().unwrap().clone();
                    if let Some(hub) = ready {
                        break hub.connect(id);
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                };
                let listener = turmoil::net::TcpListener::bind("0.0.0.0:8080").await?;
                let mut server = ServerOptions {
                    ids: IdSource::reproducible(seed * 10 + i as u64),
                    app_secret: Some([7; 32]),
                    ..ServerOptions::default()
                };
                server.endpoint.allow = AllowList::any();
                server.endpoint.session.retry_ms = 200;
                let options = FleetOptions {
                    server,
                    instance: InstanceConfig {
                        id,
                        ..InstanceConfig::default()
                    },
                };
                let _handle = FleetServer::serve(
                    SimListener(listener),
                    options,
                    EverythingApp::default(),
                    link,
                )
                .expect("a fleet setting");
                std::future::pending::<()>().await;
                Ok(())
            }
        });
    }
    let monitor = Arc::new(Mutex::new(Monitor::new()));
    let outcome = Arc::new(Mutex::new(Outcome::default()));
    let (m, out) = (monitor.clone(), outcome.clone());
    sim.client("client", async move {
        let m2 = m.clone();
        let mut options = ClientOptions {
            tap: Some(Box::new(move |o| m2.lock().unwrap().observe(o))),
            ..ClientOptions::default()
        };
        options.config.request_timeout_ms = 10_000;
        let rr = RoundRobin::default();
        let (c, _) = Client::connect(rr, "fleet:8080", "/mcp", options).await?;
        for _ in 0..ROUNDS {
            for tool in WORKLOAD {
                let args = serde_json::json!({"text": "t"});
                let r = c.call_tool(tool, args).await;
                let mut o = out.lock().unwrap();
                match r {
                    Ok(Ok(_)) => o.answered += 1,
                    Ok(Err(_)) => o.errors += 1,
                    Err(_) => o.stuck += 1,
                }
            }
        }
        {
            let mut o = out.lock().unwrap();
            o.finished = true;
            o.finished_at_ms = turmoil::elapsed().as_millis() as u64;
        }
        c.close().await;
        Ok(())
    });
    let mut crashed = false;
    loop {
        let t = sim.elapsed().as_millis() as u64;
        if !crashed && t >= crash_at_ms {
            sim.crash("i1");
            crashed = true;
        }
        match sim.step() {
            Ok(true) => break,
            Ok(false) => continue,
            Err(e) => {
                let o = outcome.lock().unwrap().clone();
                panic!("seed {seed}: {e}; so far {o:?}");
            }
        }
    }
    let mut o = outcome.lock().unwrap().clone();
    o.violations = monitor
        .lock()
        .unwrap()
        .violations()
        .iter()
        .map(|v| v.id)
        .collect();
    o
}

#[test]
fn a_session_spread_over_two_instances_survives_the_crash_of_one() {
    // The crash lands at 13 points of the workload (about 1.3 s of it).
    let mut completed_for_the_dead = 0;
    for (seed, crash_at_ms) in (1..=13).map(|k| (k, 100 * k)) {
        let o = run(seed, crash_at_ms);
        eprintln!("seed {seed}, i1 crashed at {crash_at_ms} ms: {o:?}");
        assert!(o.finished, "seed {seed}: {o:?}");
        assert_eq!(o.stuck, 0, "seed {seed}: every call completes: {o:?}");
        assert_eq!(
            o.answered + o.errors,
            ROUNDS * WORKLOAD.len(),
            "seed {seed}: {o:?}"
        );
        assert!(
            o.errors <= 1,
            "seed {seed}: only a call in flight on the crashed instance fails: {o:?}"
        );
        assert!(o.violations.is_empty(), "seed {seed}: {:?}", o.violations);
        completed_for_the_dead += o.errors;
    }
    assert!(
        completed_for_the_dead >= 1,
        "some crash must land mid-call, or the completion of a dead instance's call is not exercised"
    );
}
