//! A transport's view of the server: [`ServerDriver`] with the reference
//! application, the monitor judging every observation, and the time (ms)
//! the test moves. Shared by the driver's tests and the eras' tests.

use mcp_streamable::app::{EverythingApp, Tap};
use mcp_streamable::head::RequestHead;
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::HttpId;
use mcp_streamable::monitor::{Monitor, Observation};
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::server::wire::Write;
use mcp_streamable::server::{EndpointConfig, ServerDriver, ServerEndpoint};
use mcp_streamable::sse::{SseDecoder, SseItem};
use mcp_streamable::time::Instant;
use std::sync::{Arc, Mutex};

pub struct DriverHarness {
    pub driver: ServerDriver<EverythingApp>,
    pub monitor: Arc<Mutex<Monitor>>,
    pub now: u64,
}

impl DriverHarness {
    pub fn new() -> Self {
        Self::with(EndpointConfig::default())
    }

    pub fn with(config: EndpointConfig) -> Self {
        let monitor = Arc::new(Mutex::new(Monitor::new()));
        let m = monitor.clone();
        let tap: Tap = Box::new(move |o: &Observation| m.lock().unwrap().observe(o));
        let ep = ServerEndpoint::with_ids(config, ServerPolicy::FIXED, IdSource::reproducible(7));
        let driver = ServerDriver::new(ep, EverythingApp::default(), 1)
            .with_tap(Some(Arc::new(Mutex::new(tap))));
        DriverHarness {
            driver,
            monitor,
            now: 0,
        }
    }

    pub fn now(&self) -> Instant {
        Instant::from_millis(self.now)
    }

    /// A request with its whole body, at the current time.
    pub fn send(&mut self, head: RequestHead, body: &str) -> HttpId {
        let now = self.now();
        self.driver
            .handle_request(&head, Ok(body.as_bytes()), None, now)
    }

    /// Every write ready now.
    pub fn writes(&mut self) -> Vec<(HttpId, Write)> {
        std::iter::from_fn(|| self.driver.poll_write()).collect()
    }

    /// The monitor saw something and found nothing.
    pub fn clean(&self) {
        let m = self.monitor.lock().unwrap();
        assert!(m.violations().is_empty(), "{:?}", m.violations());
        assert!(m.steps() > 0);
    }
}

/// The SSE events in `bytes`: (id, data), priming events with empty data.
pub fn sse_events(bytes: &[u8]) -> Vec<(Option<String>, String)> {
    let mut decoder = SseDecoder::new();
    let mut items = Vec::new();
    let _ = decoder.feed(bytes, &mut items);
    items
        .into_iter()
        .filter_map(|i| match i {
            SseItem::Message { id, data, .. } => Some((id, data)),
            SseItem::NoMessage { id } => Some((id, String::new())),
            SseItem::Retry(_) => None,
        })
        .collect()
}
