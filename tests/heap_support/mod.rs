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

std::thread_local! {
    /// Allocations made on this thread (`alloc` and `realloc` calls): a
    /// per-request count is deterministic where a time is not, and other
    /// tests' threads do not touch it.
    static ALLOCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Allocations made so far on the calling thread.
pub fn allocations_here() -> u64 {
    ALLOCS.with(|a| a.get())
}

fn count_allocation() {
    // `try_with`: the thread's slot may be gone while it is torn down.
    let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        count_allocation();
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
        count_allocation();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The HTTP shell's `McpService` (the everything application, default
/// options) served in process on a current-thread runtime: no sockets, so
/// nothing but the server's own work and memory is counted.
pub struct InProcess {
    rt: tokio::runtime::Runtime,
    mcp: mcp_streamable_hyper::McpService<mcp_streamable_hyper::EverythingApp>,
    handle: Option<mcp_streamable_hyper::ServerHandle>,
    /// The client address a connection would give (`None`: none, as a
    /// server mounted without one).
    peer: Option<mcp_streamable_hyper::PeerAddr>,
}

const INIT: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle","version":"0"}}}"#;
const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

impl InProcess {
    pub fn start() -> InProcess {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let (mcp, handle) = rt.block_on(async {
            mcp_streamable_hyper::Server::start(
                mcp_streamable_hyper::ServerOptions::default(),
                mcp_streamable_hyper::EverythingApp::default,
                None,
            )
        });
        InProcess {
            rt,
            mcp,
            handle: Some(handle),
            peer: None,
        }
    }

    /// Every request comes from one client address, as on one connection
    /// (a parked session is then served on the caller's task).
    pub fn with_one_peer(mut self) -> InProcess {
        self.peer = Some(mcp_streamable_hyper::PeerAddr(
            ([127, 0, 0, 1], 40000).into(),
        ));
        self
    }

    /// POSTs `body` (on session `sid`): the status, the session id header,
    /// the body.
    pub fn post(&self, sid: Option<&str>, body: Vec<u8>) -> (u16, Option<String>, bytes::Bytes) {
        use http_body_util::{BodyExt, Full};
        use hyper::service::Service;
        let mut b = hyper::Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(sid) = sid {
            b = b
                .header("mcp-session-id", sid)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let mut req = b
            .body(Full::new(bytes::Bytes::from(body)))
            .expect("request");
        if let Some(peer) = self.peer {
            req.extensions_mut().insert(peer);
        }
        self.rt.block_on(async {
            let r = self.mcp.call(req).await.expect("infallible");
            let status = r.status().as_u16();
            let sid = r
                .headers()
                .get("mcp-session-id")
                .map(|v| v.to_str().expect("text").to_owned());
            let body = r.into_body().collect().await.expect("body").to_bytes();
            (status, sid, body)
        })
    }

    /// A new session, initialized; its id.
    pub fn open(&self) -> String {
        let (status, sid, _) = self.post(None, INIT.to_vec());
        assert_eq!(status, 200, "initialize is answered");
        let sid = sid.expect("a session id");
        let (status, _, _) = self.post(Some(&sid), INITIALIZED.to_vec());
        assert_eq!(status, 202, "initialized is accepted");
        sid
    }

    /// `tools/call` of `echo` with request id `id` on `sid`: the answer's bytes.
    pub fn call_echo(&self, sid: &str, id: u64) -> bytes::Bytes {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}}}}}}"#
        );
        let (status, _, bytes) = self.post(Some(sid), body.into_bytes());
        assert_eq!(status, 200, "tools/call is answered");
        bytes
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.rt.block_on(h.shutdown());
        }
    }
}

/// Net heap bytes per idle session of the HTTP shell (`McpService`, the
/// everything application, parked after `initialize` + `initialized`), over
/// `n` sessions: the core's session and everything the shell keeps beside
/// it (its endpoint, driver, application, slot, inbox, the shared tables'
/// entries).
pub fn http_idle_session_bytes(n: usize) -> f64 {
    let server = InProcess::start();
    server.open();
    let before = LIVE.load(Ordering::Relaxed);
    for _ in 0..n {
        server.open();
    }
    let after = LIVE.load(Ordering::Relaxed);
    (after - before) as f64 / n as f64
}

/// Allocations per `tools/call` answered on a parked session by the HTTP
/// shell in process (served on the caller's task, as `serve` does for a
/// client that sends one request at a time), over `n` calls after a warm-up.
pub fn http_call_allocations(n: u64) -> f64 {
    let server = InProcess::start().with_one_peer();
    let sid = server.open();
    for id in 1..=10 {
        server.call_echo(&sid, id);
    }
    let before = allocations_here();
    for id in 11..11 + n {
        server.call_echo(&sid, id);
    }
    (allocations_here() - before) as f64 / n as f64
}
