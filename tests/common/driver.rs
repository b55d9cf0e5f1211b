//! A transport's view of the server: [`ServerDriver`] with the reference
//! application, the monitor judging every observation, and the time (ms)
//! the test moves. Shared by the driver's tests and the eras' tests.

use mcp_streamable::app::Tap;
use mcp_streamable::client::{ClientEvent, ClientSession, ClientTransmitKind};
use mcp_streamable::head::{Content, RequestHead, ResponseHead};
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::HttpId;
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::principal::Caller;
use mcp_streamable::server::wire::Write;
use mcp_streamable::server::{EndpointConfig, ServerDriver, ServerEndpoint};
use mcp_streamable::sse::{SseDecoder, SseItem};
use mcp_streamable::time::Instant;
use mcp_streamable_check::monitor::{Monitor, Observation};
use mcp_streamable_hyper::EverythingApp;
use std::collections::BTreeMap;
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
        Self::with_policy(config, ServerPolicy::FIXED)
    }

    pub fn with_policy(config: EndpointConfig, policy: ServerPolicy) -> Self {
        let monitor = Arc::new(Mutex::new(Monitor::new()));
        let m = monitor.clone();
        let tap: Tap = Box::new(move |o: &Observation| m.lock().unwrap().observe(o));
        let ep = ServerEndpoint::with_ids(config, policy, IdSource::reproducible(7));
        let driver = ServerDriver::new(ep, EverythingApp::default(), 1)
            .with_tap(Some(Arc::new(Mutex::new(tap))));
        DriverHarness {
            driver,
            monitor,
            now: 0,
        }
    }

    /// The driver holds each step that leaves a preset's window back for
    /// `ms` ([`ServerDriver::with_step_delay`]).
    pub fn with_step_delay(self, ms: u64) -> Self {
        let delay = std::time::Duration::from_millis(ms);
        DriverHarness {
            driver: self.driver.with_step_delay(delay),
            ..self
        }
    }

    pub fn now(&self) -> Instant {
        Instant::from_millis(self.now)
    }

    /// A request with its whole body, at the current time.
    pub fn send(&mut self, head: RequestHead, body: &str) -> HttpId {
        let now = self.now();
        self.driver
            .handle_request(&head, Ok(body.as_bytes()), &Caller::default(), now)
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

/// A client core wired to a [`DriverHarness`] as a transport would wire
/// them: each request the client sends is handed to the driver whole, each
/// write goes back (SSE through a decoder per exchange), an abort closes
/// the server's side, and time moves to the next timer of either.
#[derive(Default)]
pub struct Link {
    to_client: BTreeMap<HttpId, HttpId>,
    to_server: BTreeMap<HttpId, HttpId>,
    sse: BTreeMap<HttpId, SseDecoder>,
}

impl DriverHarness {
    /// Runs `c` against the driver until both are quiet or `horizon_ms`
    /// passes; every client event goes to `on_event`, which may command
    /// the client (answer input, cancel, listen).
    pub fn link(
        &mut self,
        c: &mut ClientSession,
        link: &mut Link,
        horizon_ms: u64,
        mut on_event: impl FnMut(&mut ClientSession, ClientEvent, Instant),
    ) {
        let end = self.now + horizon_ms;
        for _ in 0..10_000 {
            let now = self.now();
            let mut moved = false;
            while let Some(t) = c.poll_transmit() {
                moved = true;
                match t.kind {
                    ClientTransmitKind::Send { head, body } => {
                        let sh =
                            self.driver
                                .handle_request(&head, Ok(&body), &Caller::default(), now);
                        link.to_client.insert(sh, t.http);
                        link.to_server.insert(t.http, sh);
                    }
                    ClientTransmitKind::Abort => {
                        if let Some(sh) = link.to_server.remove(&t.http) {
                            link.to_client.remove(&sh);
                            self.driver.handle_http_closed(sh, now);
                        }
                    }
                }
            }
            while let Some((sh, w)) = self.driver.poll_write() {
                moved = true;
                let Some(&ch) = link.to_client.get(&sh) else {
                    continue;
                };
                let ends = w.ends();
                let bytes = match w {
                    Write::Whole { head, body } | Write::Open { head, body } => {
                        let head = ResponseHead::from_wire(
                            head.status,
                            head.headers.iter().map(|(n, v)| (*n, v.as_ref())),
                        );
                        if head.content == Content::Sse {
                            link.sse.insert(ch, SseDecoder::new());
                        }
                        c.handle_response_head(ch, head, now);
                        body
                    }
                    Write::More(b) | Write::Last(b) => b,
                };
                match link.sse.get_mut(&ch) {
                    Some(decoder) => {
                        let mut items = Vec::new();
                        let _ = decoder.feed(&bytes, &mut items);
                        for item in items {
                            c.handle_sse_event(ch, item, now);
                        }
                    }
                    None if !bytes.is_empty() => c.handle_body(ch, &bytes, now),
                    None => {}
                }
                if ends {
                    link.sse.remove(&ch);
                    link.to_client.remove(&sh);
                    link.to_server.remove(&ch);
                    c.handle_http_closed(ch, now);
                }
            }
            while let Some(e) = c.poll_event() {
                moved = true;
                on_event(c, e, now);
            }
            if moved {
                continue;
            }
            let next = [self.driver.poll_timeout(), c.poll_timeout().map(|(t, _)| t)]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(at) if at.as_millis() <= end => {
                    self.now = at.as_millis().max(self.now);
                    let now = self.now();
                    self.driver.handle_timeout(now);
                    c.handle_timeout(now);
                }
                _ => return,
            }
        }
        panic!("the client and the driver never went quiet");
    }
}
