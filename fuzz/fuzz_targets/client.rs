//! Structure-aware fuzzing of the client core's input path: response heads
//! with any status, content type and session id, JSON bodies and raw SSE bytes
//! (through the real `SseDecoder`, in fuzzed chunks) on any exchange the
//! client opened, plus closes, clock steps and application commands, under
//! every client preset. Every output is drained after every step and fed to
//! the `Monitor`. Property: nothing panics; violations are not failures.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use mcp_streamable::client::{
    ClientConfig, ClientEvent, ClientOutput, ClientSession, ClientTransmitKind,
};
use mcp_streamable::head::{Content, ResponseHead};
use mcp_streamable::ids::{HttpId, RequestId};
use mcp_streamable::jsonrpc::RawJson;
use mcp_streamable_check::monitor::{Monitor, Observation};
use mcp_streamable::policy::ClientPolicy;
use mcp_streamable::preset::Scheduled;
use mcp_streamable::sse::SseDecoder;
use mcp_streamable::time::Instant;
use std::collections::BTreeMap;

/// Operations per run.
const OPS_MAX: usize = 300;
/// Largest fuzzed body or SSE chunk, in bytes.
const BYTES_MAX: usize = 512;

struct Driver {
    client: ClientSession,
    mon: Monitor,
    now: u64,
    /// Exchanges the client opened and has not aborted, with their SSE decoder.
    open: BTreeMap<HttpId, SseDecoder>,
    requests: Vec<RequestId>,
    server_requests: Vec<RequestId>,
}

impl Driver {
    fn drain(&mut self) {
        let Driver {
            client,
            mon,
            open,
            server_requests,
            ..
        } = self;
        client.drain_observed(0, &mut |o| mon.observe(o), |_, out, _| match out {
            ClientOutput::Transmit(t) => match t.kind {
                ClientTransmitKind::Send { .. } => {
                    open.insert(t.http, SseDecoder::with_limits(256, 1024));
                }
                ClientTransmitKind::Abort => {
                    open.remove(&t.http);
                }
            },
            ClientOutput::Event(ClientEvent::ServerRequest { id, .. }) => {
                if server_requests.len() < 16 {
                    server_requests.push(id);
                }
            }
            ClientOutput::Event(_) => {}
        });
        assert!(self.client.poll_transmit().is_none());
        assert!(self.client.poll_event().is_none());
    }

    fn pick_open(&self, u: &mut Unstructured<'_>) -> Result<Option<HttpId>> {
        if self.open.is_empty() {
            return Ok(None);
        }
        let i = u.choose_index(self.open.len())?;
        Ok(self.open.keys().nth(i).copied())
    }

    fn step(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let now = Instant::from_millis(self.now);
        match u.int_in_range(0u8..=11)? {
            0 => {
                let _ = self.client.initialize(RawJson::empty_object(), now);
            }
            1 => {
                if let Ok(id) = self.client.send_request("tools/call", None, now) {
                    if self.requests.len() < 32 {
                        self.requests.push(id);
                    }
                }
            }
            2 => {
                let _ = self.client.notify("notifications/x", None, now);
            }
            3 => {
                if !self.server_requests.is_empty() {
                    let i = u.choose_index(self.server_requests.len())?;
                    let id = self.server_requests[i].clone();
                    let _ = self.client.respond(id, Ok(RawJson::empty_object()), now);
                }
            }
            4 => {
                if !self.requests.is_empty() {
                    let i = u.choose_index(self.requests.len())?;
                    let id = self.requests[i].clone();
                    let _ = self.client.cancel(&id, now);
                }
            }
            5 => self.client.close(now),
            6 => {
                if let Some(h) = self.pick_open(u)? {
                    let status = match u.int_in_range(0u8..=7)? {
                        0 => 200,
                        1 => 202,
                        2 => 204,
                        3 => 400,
                        4 => 404,
                        5 => 405,
                        6 => 500,
                        _ => u.int_in_range(100u16..=599)?,
                    };
                    let content = match u.int_in_range(0u8..=2)? {
                        0 => Content::Sse,
                        1 => Content::Json,
                        _ => Content::None,
                    };
                    let mut head = ResponseHead::new(status, content);
                    if u.arbitrary::<bool>()? {
                        let len = u.int_in_range(1usize..=40)?;
                        let text: String = (0..len)
                            .map(|_| u.int_in_range(0x21u8..=0x7e).map(char::from))
                            .collect::<Result<_>>()?;
                        head.session_id = text.parse().ok();
                    }
                    self.client.handle_response_head(h, head, now);
                }
            }
            7 => {
                if let Some(h) = self.pick_open(u)? {
                    let body = self.body(u)?;
                    self.client.handle_body(h, &body, now);
                }
            }
            8 => {
                if let Some(h) = self.pick_open(u)? {
                    let bytes = self.sse_bytes(u)?;
                    let mut items = Vec::new();
                    if let Some(dec) = self.open.get_mut(&h) {
                        let _ = dec.feed(&bytes, &mut items);
                    }
                    for item in items {
                        if let mcp_streamable::sse::SseItem::Message { data, .. } = &item {
                            if let Ok(m) = mcp_streamable::jsonrpc::parse_message(data) {
                                self.mon.observe(&Observation::ClientReceived {
                                    client: 0,
                                    http: h,
                                    message: m,
                                });
                            }
                        }
                        self.client.handle_sse_event(h, item, now);
                    }
                }
            }
            9 => {
                if let Some(h) = self.pick_open(u)? {
                    self.open.remove(&h);
                    self.mon
                        .observe(&Observation::ClientClosed { client: 0, http: h });
                    self.client.handle_http_closed(h, now);
                }
            }
            10 => {
                self.now += u64::from(u.int_in_range(0u16..=5000)?);
                self.client.handle_timeout(Instant::from_millis(self.now));
            }
            _ => {
                if let Some((h, p)) = self.client.scheduling_points().first().copied() {
                    self.client.handle_scheduling_point(h, p, now);
                }
            }
        }
        self.drain();
        Ok(())
    }

    /// A JSON body: fuzzed bytes, or a response/request/notification aimed at our ids.
    fn body(&self, u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
        if u.arbitrary::<bool>()? {
            let len = u.int_in_range(0..=BYTES_MAX)?;
            return u.bytes(len).map(<[u8]>::to_vec);
        }
        Ok(self.message(u)?.into_bytes())
    }

    fn message(&self, u: &mut Unstructured<'_>) -> Result<String> {
        let id: i64 = if !self.requests.is_empty() && u.arbitrary::<bool>()? {
            match &self.requests[u.choose_index(self.requests.len())?] {
                RequestId::Num(n) => *n,
                RequestId::Str(_) => 0,
            }
        } else {
            u.int_in_range(-2i64..=40)?
        };
        let version =
            ["2025-03-26", "2025-06-18", "2025-11-25", "1999-01-01"][u.choose_index(4)?];
        Ok(match u.int_in_range(0u8..=4)? {
            0 => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"{version}"}}}}"#),
            1 => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32000,"message":"x"}}}}"#),
            2 => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"roots/list"}}"#),
            3 => r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}"#.to_owned(),
            _ => format!(r#"[{{"jsonrpc":"2.0","id":{id},"result":{{}}}}]"#),
        })
    }

    /// SSE bytes: fuzzed, or well-formed events carrying our messages, ids and retry.
    fn sse_bytes(&self, u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
        if u.arbitrary::<bool>()? {
            let len = u.int_in_range(0..=BYTES_MAX)?;
            return u.bytes(len).map(<[u8]>::to_vec);
        }
        let mut out = Vec::new();
        let id = format!("{}", u.int_in_range(0u16..=20)?);
        let retry = if u.arbitrary::<bool>()? {
            Some(u64::from(u.int_in_range(0u16..=3000)?))
        } else {
            None
        };
        let data = if u.arbitrary::<bool>()? {
            Some(self.message(u)?)
        } else {
            None
        };
        mcp_streamable::sse::encode_event(&mut out, Some(&id), retry, data.as_deref());
        Ok(out)
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let presets = ClientPolicy::presets();
    let Ok(i) = u.choose_index(presets.len()) else {
        return;
    };
    let config = ClientConfig {
        resume_attempts_max: u.int_in_range(0u32..=4).unwrap_or(3),
        pending_max: u.int_in_range(0usize..=8).unwrap_or(8),
        finished_max: u.int_in_range(0usize..=8).unwrap_or(8),
        ..ClientConfig::default()
    };
    let mut d = Driver {
        client: ClientSession::new(config, presets[i].policy),
        mon: Monitor::new(),
        now: 0,
        open: BTreeMap::new(),
        requests: Vec::new(),
        server_requests: Vec::new(),
    };
    for _ in 0..OPS_MAX {
        if u.is_empty() || d.step(&mut u).is_err() {
            break;
        }
    }
    d.mon.finish(&[]);
});
