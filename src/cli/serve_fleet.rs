//! `mcp-streamable serve --store redis://…`: one instance of a fleet, the
//! reference application on [`FleetServer`], its state shared through Redis;
//! `--store memory`: the same instance alone with the store in its process
//! (the fleet layer's own cost, measured against the plain server).

use mcp_streamable::fleet::instance::InstanceConfig;
use mcp_streamable::fleet::InstanceId;
use mcp_streamable_hyper::fleet::{FleetOptions, FleetServer, MemoryHub};
use mcp_streamable_hyper::{EverythingApp, ServerOptions};
use std::net::SocketAddr;
use std::process::ExitCode;

/// Serves `app` as instance `instance` on `addr` with the store at `store`.
pub fn run(
    addr: SocketAddr,
    instance: u16,
    store: &str,
    server: ServerOptions,
    app: EverythingApp,
    threads: usize,
) -> Result<ExitCode, String> {
    let rt = super::serve::runtime(threads)?;
    rt.block_on(async move {
        let instance = InstanceConfig {
            id: InstanceId(instance),
            ..InstanceConfig::default()
        };
        let link = if store == "memory" {
            MemoryHub::start(4096).connect(instance.id)
        } else {
            connect(store, &instance).await?
        };
        let path = server.path.clone().unwrap_or_else(|| "/".into());
        let options = FleetOptions { server, instance };
        let handle = FleetServer::bind(addr, options, app, link)
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        let local = handle.addr.unwrap_or(addr);
        println!(
            "mcp-streamable serving http://{local}{path} (fleet instance {}, store {store})",
            instance.id.0
        );
        // An instance whose store is lost answers 503 from then on: it exits
        // instead, with an error, so that a supervisor restarts it (and a
        // balancer's TCP check stops sending it clients) once the store is back.
        tokio::select! {
            stopped = super::serve::until_stopped() => stopped?,
            () = handle.halted() => {
                return Err(format!(
                    "the store {store} was lost: instance {} stopped serving \
                     (restart it once the store is back)",
                    instance.id.0
                ));
            }
        }
        handle.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(feature = "redis")]
async fn connect(
    store: &str,
    instance: &InstanceConfig,
) -> Result<mcp_streamable_hyper::fleet::StoreLink, String> {
    use mcp_streamable_redis::{connect, RedisOptions};
    if !store.starts_with("redis://") {
        return Err(format!(
            "--store: expected redis://host:port, got {store:?}"
        ));
    }
    let options = RedisOptions {
        url: store.to_owned(),
        log_ttl_ms: instance.session_ttl_ms,
        ..RedisOptions::default()
    };
    connect(options).await.map_err(|e| format!("{store}: {e}"))
}

#[cfg(not(feature = "redis"))]
async fn connect(
    store: &str,
    _: &InstanceConfig,
) -> Result<mcp_streamable_hyper::fleet::StoreLink, String> {
    Err(format!(
        "--store {store}: this build has no Redis store (cargo build --release --features redis)"
    ))
}
