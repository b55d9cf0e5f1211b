//! A counting global allocator and the HTTP shell's idle-session figure,
//! shared by `benches/core.rs` (which prints it) and `tests/idle_memory.rs`
//! (which bounds it). Including this module makes the allocator global.
#![allow(unsafe_code, dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting live bytes (as requested, not as the
/// allocator rounds them).
pub struct Counting;

/// Live heap bytes of the process.
pub static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Net heap bytes per idle session of the HTTP shell (`McpService`, the
/// everything application, parked after `initialize` + `initialized`), over
/// `n` sessions: the core's session and everything the shell keeps beside
/// it (its endpoint, driver, application, slot, inbox, the shared tables'
/// entries). Served in process, no sockets, so nothing but the server's own
/// memory is counted.
pub fn http_idle_session_bytes(n: usize) -> f64 {
    use http_body_util::{BodyExt, Full};
    use hyper::service::Service;
    use mcp_streamable::http::{Server, ServerOptions};
    const INIT: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle","version":"0"}}}"#;
    const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (mcp, handle) = Server::start(
            ServerOptions::default(),
            mcp_streamable::app::EverythingApp::default,
            None,
        );
        let post = |sid: Option<&str>, body: &'static [u8]| {
            let mut b = hyper::Request::post("/mcp")
                .header("host", "127.0.0.1")
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream");
            if let Some(sid) = sid {
                b = b
                    .header("mcp-session-id", sid)
                    .header("mcp-protocol-version", "2025-11-25");
            }
            b.body(Full::new(bytes::Bytes::from_static(body)))
                .expect("request")
        };
        let open = || async {
            let r = mcp.call(post(None, INIT)).await.expect("infallible");
            assert_eq!(r.status(), 200, "initialize is answered");
            let sid = r.headers()["mcp-session-id"]
                .to_str()
                .expect("text")
                .to_owned();
            let _ = r.into_body().collect().await;
            let r = mcp
                .call(post(Some(&sid), INITIALIZED))
                .await
                .expect("infallible");
            assert_eq!(r.status(), 202, "initialized is accepted");
            let _ = r.into_body().collect().await;
        };
        open().await;
        let before = LIVE.load(Ordering::Relaxed);
        for _ in 0..n {
            open().await;
        }
        let after = LIVE.load(Ordering::Relaxed);
        handle.shutdown().await;
        (after - before) as f64 / n as f64
    })
}
