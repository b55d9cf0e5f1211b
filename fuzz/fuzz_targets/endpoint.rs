//! Structure-aware fuzzing of the server core: the input bytes drive a bounded
//! sequence of client requests, application commands, closes and clock steps
//! against one `ServerEndpoint`, with a full drain after every operation and
//! every observation fed to the `Monitor`.
//!
//! Properties: nothing panics (endpoint, sessions, monitor). Monitor
//! violations are NOT failures: the presets of real SDKs break the properties
//! on purpose, and this driver also plays clients that misbehave.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use mcp_streamable::headers;
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::{HttpId, MsgKey, RequestId, SessionId};
use mcp_streamable::jsonrpc::{ErrorObject, Message, RawJson};
use mcp_streamable_check::monitor::{Monitor, Observation};
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::preset::{Scheduled, SchedulingPoint};
use mcp_streamable::server::{
    Cause, EndpointConfig, Method, RequestHead, ResponseMode, ServerEndpoint,
    ServerEvent, ServerOutput, SessionConfig, TransmitKind,
};
use mcp_streamable::time::Instant;
use mcp_streamable::version::ProtocolVersion;
use std::collections::BTreeSet;

/// Operations per run.
const OPS_MAX: usize = 300;
/// Largest fuzzed body, in bytes.
const BODY_MAX: usize = 512;
/// Event ids remembered for `Last-Event-ID`.
const SEEN_IDS_MAX: usize = 64;

struct Driver {
    ep: ServerEndpoint,
    mon: Monitor,
    now: u64,
    /// Every session id ever minted (ended ones too: they must answer 404).
    sessions: Vec<SessionId>,
    /// Every exchange minted.
    https: Vec<HttpId>,
    /// Exchanges the server ended and has not yet been told are closed.
    ended: BTreeSet<HttpId>,
    /// Exchanges the server has been told are closed.
    closed: BTreeSet<HttpId>,
    /// Tell the server about an ended exchange right after the drain.
    auto_close: bool,
    /// Client requests handed to the application and not yet answered.
    pending: Vec<(SessionId, RequestId)>,
    /// Server-to-client requests awaiting the client's answer.
    outbound: Vec<(SessionId, RequestId)>,
    /// SSE event ids seen in transmits.
    seen_ids: Vec<String>,
    next_rid: i64,
}

fn pick<'a, T>(u: &mut Unstructured<'_>, v: &'a [T]) -> Result<Option<&'a T>> {
    if v.is_empty() {
        return Ok(None);
    }
    Ok(v.get(u.choose_index(v.len())?))
}

fn small_string(u: &mut Unstructured<'_>, max: usize) -> Result<String> {
    let len = u.int_in_range(0..=max)?;
    let bytes = u.bytes(len.min(u.len()))?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

fn id_json(id: &RequestId) -> String {
    RawJson::new(id).as_str().to_owned()
}

impl Driver {
    fn new(u: &mut Unstructured<'_>) -> Result<Self> {
        let presets = ServerPolicy::presets();
        let policy = presets[usize::from(u.arbitrary::<u8>()?) % presets.len()].policy;
        let seed = u.arbitrary::<u64>()?;
        let flags = u.arbitrary::<u8>()?;
        let config = if flags & 1 == 0 {
            EndpointConfig::default()
        } else {
            // Small bounds and short timers, to reach the overflow and expiry paths.
            let session = SessionConfig {
                // Any instance's range of a fleet (the last one ends at u32::MAX).
                stream_id_base: u32::from(u.int_in_range(0u16..=4095)?)
                    * mcp_streamable::server::STREAM_ID_SPAN,
                retry_ms: u.int_in_range(0..=5000)?,
                // Requests to the client numbered from 0 (as most SDKs do) or 1.
                first_request_number: u.int_in_range(0..=1)?,
                events_max: u.int_in_range(0..=4)?,
                events_bytes_max: u.int_in_range(0..=4096)?,
                held_bytes_max: u.int_in_range(0..=4096)?,
                session_bytes_max: u.int_in_range(0..=8192)?,
                streams_max: u.int_in_range(0..=4)?,
                held_max: u.int_in_range(0..=4)?,
                held_ttl_ms: u.int_in_range(0..=2000)?,
                in_flight_max: u.int_in_range(0..=4)?,
                in_flight_bytes_max: u.int_in_range(0..=4096)?,
                outbound_requests_max: u.int_in_range(0..=4)?,
                outbound_timeout_ms: if u.arbitrary()? {
                    Some(u.int_in_range(0..=5000)?)
                } else {
                    None
                },
                cancelled_max: u.int_in_range(0..=4)?,
                idle_timeout_ms: if u.arbitrary()? {
                    Some(u.int_in_range(0..=5000)?)
                } else {
                    None
                },
                init_timeout_ms: if u.arbitrary()? {
                    Some(u.int_in_range(0..=5000)?)
                } else {
                    None
                },
                keepalive_ms: if u.arbitrary()? {
                    Some(u.int_in_range(1..=2000)?)
                } else {
                    None
                },
                response_mode: if u.arbitrary()? {
                    ResponseMode::Sse
                } else {
                    ResponseMode::JsonWhenAlone
                },
            };
            EndpointConfig {
                session: session.into(),
                body_max: u.int_in_range(0..=1024)?,
                sessions_max: u.int_in_range(0..=4)?,
                ..EndpointConfig::default()
            }
        };
        Ok(Driver {
            ep: ServerEndpoint::with_ids(config, policy, IdSource::reproducible(seed)),
            mon: Monitor::new(),
            now: 0,
            sessions: Vec::new(),
            https: Vec::new(),
            ended: BTreeSet::new(),
            closed: BTreeSet::new(),
            auto_close: flags & 2 == 0,
            pending: Vec::new(),
            outbound: Vec::new(),
            seen_ids: Vec::new(),
            next_rid: 1,
        })
    }

    fn now(&self) -> Instant {
        Instant::from_millis(self.now)
    }

    fn next_id(&mut self, u: &mut Unstructured<'_>) -> Result<RequestId> {
        self.next_rid += 1;
        Ok(match u.int_in_range(0..=7u8)? {
            0 => RequestId::Str(format!("r{}", self.next_rid)),
            1 => RequestId::Str(small_string(u, 8)?),
            2 => RequestId::Num(u.arbitrary()?),
            // Reuse an id in flight: a duplicate.
            3 => match pick(u, &self.pending)? {
                Some((_, id)) => id.clone(),
                None => RequestId::Num(self.next_rid),
            },
            _ => RequestId::Num(self.next_rid),
        })
    }

    /// A live session if there is one, else any session ever seen.
    fn session(&self, u: &mut Unstructured<'_>) -> Result<Option<SessionId>> {
        let live: Vec<SessionId> = self.ep.session_ids().cloned().collect();
        if !live.is_empty() && u.ratio(7u8, 8u8)? {
            return Ok(pick(u, &live)?.cloned());
        }
        Ok(pick(u, &self.sessions)?.cloned())
    }

    fn version(
        &self,
        u: &mut Unstructured<'_>,
        sid: Option<&SessionId>,
    ) -> Result<ProtocolVersion> {
        if let Some(v) = sid.and_then(|s| self.ep.session(s)).map(|s| s.version()) {
            if u.ratio(7u8, 8u8)? {
                return Ok(v);
            }
        }
        Ok(*u.choose(&ProtocolVersion::ALL)?)
    }

    /// Sends a request, observes it, and drains.
    fn request(&mut self, head: &RequestHead, body: &[u8]) {
        let d = self.ep.handle_request(head, body, self.now());
        self.mon.observe(&Observation::request(d.http, head, body));
        self.https.push(d.http);
        if let Some(sid) = d.session {
            if !self.sessions.contains(&sid) {
                self.sessions.push(sid);
            }
        }
        self.drain();
    }

    /// Drains every transmit and event, feeding the monitor; then, when
    /// `auto_close`, tells the server about the exchanges it ended.
    fn drain(&mut self) {
        loop {
            let Driver {
                ep,
                mon,
                sessions,
                ended,
                closed,
                pending,
                outbound,
                seen_ids,
                ..
            } = self;
            ep.drain_observed(&mut |o| mon.observe(o), |_, out, _| match out {
                ServerOutput::Transmit(t) => match &t.kind {
                    TransmitKind::Head(h) => {
                        if let Some(sid) = &h.session_id {
                            if !sessions.contains(sid) {
                                sessions.push(sid.clone());
                            }
                        }
                    }
                    TransmitKind::Event { id: Some(id), .. } => {
                        if seen_ids.len() >= SEEN_IDS_MAX {
                            seen_ids.remove(0);
                        }
                        seen_ids.push(id.clone());
                    }
                    TransmitKind::End(_) => {
                        if !closed.contains(&t.http) {
                            ended.insert(t.http);
                        }
                    }
                    _ => {}
                },
                ServerOutput::Event(sid, e) => match e {
                    ServerEvent::Request { id, .. } => pending.push((sid, id)),
                    ServerEvent::Response { id, .. } => {
                        outbound.retain(|(s, i)| !(s == &sid && i == &id));
                    }
                    ServerEvent::SessionEnded { .. } => {
                        pending.retain(|(s, _)| s != &sid);
                        outbound.retain(|(s, _)| s != &sid);
                    }
                    ServerEvent::Dropped { .. }
                    | ServerEvent::Withdrawn { .. }
                    | ServerEvent::Notification { .. } => {}
                },
            });
            if !self.auto_close || self.ended.is_empty() {
                break;
            }
            let ended = std::mem::take(&mut self.ended);
            for h in ended {
                self.closed.insert(h);
                self.ep.handle_http_closed(h, self.now());
            }
        }
        assert!(
            self.ep.poll_transmit().is_none(),
            "transmit left after a full drain"
        );
        assert!(
            self.ep.poll_event().is_none(),
            "event left after a full drain"
        );
    }

    fn sent(&mut self, sid: &SessionId, key: MsgKey, cause: Cause) {
        self.mon.observe(&Observation::Sent {
            session: sid.to_string(),
            key,
            cause,
            origin: None,
        });
    }

    fn cause(&mut self, u: &mut Unstructured<'_>, sid: &SessionId) -> Result<Cause> {
        Ok(match u.int_in_range(0..=3u8)? {
            0 | 1 => Cause::Unrelated,
            2 => {
                let mine: Vec<RequestId> = self
                    .pending
                    .iter()
                    .filter(|(s, _)| s == sid)
                    .map(|(_, id)| id.clone())
                    .collect();
                match pick(u, &mine)? {
                    Some(id) => Cause::Request(id.clone()),
                    None => Cause::Unrelated,
                }
            }
            // A cause that names an answered or unknown request.
            _ => Cause::Request(self.next_id(u)?),
        })
    }

    /// A body for a POST on an existing session.
    fn session_body(&mut self, u: &mut Unstructured<'_>, sid: &SessionId) -> Result<Vec<u8>> {
        let one = |d: &mut Driver, u: &mut Unstructured<'_>| -> Result<String> {
            Ok(match u.int_in_range(0..=7u8)? {
                0 => r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
                1 | 2 => {
                    let id = d.next_id(u)?;
                    let meta = if u.arbitrary()? {
                        format!(r#","_meta":{{"progressToken":{}}}"#, id_json(&id))
                    } else {
                        String::new()
                    };
                    let method = *u.choose(&["tools/call", "ping", "initialize", "resources/read"])?;
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{},"method":"{method}","params":{{"name":"t"{meta}}}}}"#,
                        id_json(&id)
                    )
                }
                3 => {
                    let mine: Vec<RequestId> = d
                        .pending
                        .iter()
                        .filter(|(s, _)| s == sid)
                        .map(|(_, id)| id.clone())
                        .collect();
                    let id = match pick(u, &mine)? {
                        Some(id) => id.clone(),
                        None => d.next_id(u)?,
                    };
                    format!(
                        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{},"reason":"x"}}}}"#,
                        id_json(&id)
                    )
                }
                4 | 5 => {
                    let mine: Vec<RequestId> = d
                        .outbound
                        .iter()
                        .filter(|(s, _)| s == sid)
                        .map(|(_, id)| id.clone())
                        .collect();
                    let id = match pick(u, &mine)? {
                        Some(id) => id.clone(),
                        None => RequestId::Num(u.int_in_range(0..=8)?),
                    };
                    if u.arbitrary()? {
                        Message::Response {
                            id,
                            result: RawJson::empty_object(),
                        }
                        .to_json()
                    } else {
                        Message::Error {
                            id: Some(id),
                            error: ErrorObject::new(-1, "no"),
                        }
                        .to_json()
                    }
                }
                6 => r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#
                    .to_owned(),
                _ => r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#
                    .to_owned(),
            })
        };
        Ok(match u.int_in_range(0..=5u8)? {
            0 => {
                let n = u.int_in_range(0..=BODY_MAX)?;
                u.bytes(n.min(u.len()))?.to_vec()
            }
            1 => {
                let n = u.int_in_range(0..=4)?;
                let mut parts = Vec::new();
                for _ in 0..n {
                    parts.push(one(self, u)?);
                }
                format!("[{}]", parts.join(",")).into_bytes()
            }
            _ => one(self, u)?.into_bytes(),
        })
    }

    fn op(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        match u.int_in_range(0..=15u8)? {
            // Raw request: fuzzed method, headers and body.
            0 => {
                let method = match u.int_in_range(0..=4u8)? {
                    0 => Method::Get,
                    1 => Method::Post,
                    2 => Method::Delete,
                    3 => Method::Other("PUT".to_owned()),
                    _ => Method::parse(&small_string(u, 8)?),
                };
                let mut head = RequestHead::new(method);
                let n = u.int_in_range(0..=6)?;
                for _ in 0..n {
                    let name = match u.int_in_range(0..=8u8)? {
                        0 => headers::ACCEPT.to_owned(),
                        1 => headers::CONTENT_TYPE.to_owned(),
                        2 => "Mcp-Session-Id".to_owned(),
                        3 => headers::MCP_PROTOCOL_VERSION.to_owned(),
                        4 => headers::LAST_EVENT_ID.to_owned(),
                        5 => headers::ORIGIN.to_owned(),
                        6 => headers::HOST.to_owned(),
                        _ => small_string(u, 16)?,
                    };
                    let value = match u.int_in_range(0..=7u8)? {
                        0 => "application/json, text/event-stream".to_owned(),
                        1 => headers::MIME_JSON.to_owned(),
                        2 => match self.session(u)? {
                            Some(s) => s.to_string(),
                            None => small_string(u, 40)?,
                        },
                        3 => u.choose(&ProtocolVersion::ALL)?.as_str().to_owned(),
                        4 => match pick(u, &self.seen_ids)? {
                            Some(id) => id.clone(),
                            None => small_string(u, 16)?,
                        },
                        5 => "http://localhost:3000".to_owned(),
                        _ => small_string(u, 64)?,
                    };
                    head = head.with(&name, &value);
                }
                let len = u.int_in_range(0..=BODY_MAX)?;
                let body = u.bytes(len.min(u.len()))?.to_vec();
                self.request(&head, &body);
            }
            // A valid initialize (optionally with a version header or a bogus offer).
            1 => {
                let id = self.next_id(u)?;
                let offered = match u.int_in_range(0..=4u8)? {
                    0 => small_string(u, 12)?.replace(['"', '\\'], ""),
                    _ => u.choose(&ProtocolVersion::ALL)?.as_str().to_owned(),
                };
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"method":"initialize","params":{{"protocolVersion":"{offered}","capabilities":{{}},"clientInfo":{{"name":"fuzz","version":"0"}}}}}}"#,
                    id_json(&id)
                );
                let header = if u.arbitrary()? {
                    Some(*u.choose(&ProtocolVersion::ALL)?)
                } else {
                    None
                };
                self.request(&RequestHead::post(None, header), body.as_bytes());
            }
            // POST with the live session id.
            2 | 3 | 4 => {
                let Some(sid) = self.session(u)? else {
                    return Ok(());
                };
                let version = self.version(u, Some(&sid))?;
                let header = if u.ratio(1u8, 8u8)? {
                    None
                } else {
                    Some(version)
                };
                let body = self.session_body(u, &sid)?;
                self.request(&RequestHead::post(Some(&sid), header), &body);
            }
            // GET, with no, a seen or a fuzzed Last-Event-ID.
            5 | 6 => {
                let Some(sid) = self.session(u)? else {
                    return Ok(());
                };
                let version = self.version(u, Some(&sid))?;
                let last = match u.int_in_range(0..=3u8)? {
                    0 => None,
                    1 | 2 => pick(u, &self.seen_ids)?.cloned(),
                    _ => Some(small_string(u, 24)?),
                };
                self.request(&RequestHead::get(&sid, version, last.as_deref()), b"");
            }
            // DELETE.
            7 => {
                let Some(sid) = self.session(u)? else {
                    return Ok(());
                };
                self.request(&RequestHead::delete(&sid), b"");
            }
            // The client or network closes an exchange; the server may or may not be told.
            8 => {
                let Some(&http) = pick(u, &self.https)? else {
                    return Ok(());
                };
                self.mon.observe(&Observation::Closed { http });
                if u.ratio(3u8, 4u8)? {
                    self.ended.remove(&http);
                    self.closed.insert(http);
                    self.ep.handle_http_closed(http, self.now());
                }
                self.drain();
            }
            // Time passes.
            9 => {
                let step = match u.int_in_range(0..=3u8)? {
                    0 => u64::from(u.arbitrary::<u8>()?),
                    1 => u64::from(u.arbitrary::<u16>()?),
                    2 => u64::from(u.arbitrary::<u32>()?),
                    _ => self
                        .ep
                        .poll_timeout()
                        .map_or(0, |(at, _)| at.as_millis().saturating_sub(self.now)),
                };
                self.now = self.now.saturating_add(step);
                self.ep.handle_timeout(self.now());
                self.drain();
            }
            // The application answers a pending request.
            10 | 11 => {
                let Some((sid, id)) = pick(u, &self.pending)?.cloned() else {
                    return Ok(());
                };
                let result = if u.ratio(3u8, 4u8)? {
                    Ok(RawJson::empty_object())
                } else {
                    Err(ErrorObject::new(-32603, "boom"))
                };
                let now = self.now();
                let r = self
                    .ep
                    .session_mut(&sid)
                    .map(|s| s.respond(&id, result, now));
                if let Some(Ok(key)) = r {
                    self.sent(&sid, key, Cause::Request(id.clone()));
                }
                if u.ratio(7u8, 8u8)? {
                    // Occasionally keep it, to respond twice.
                    self.pending.retain(|(s, i)| !(s == &sid && i == &id));
                }
                self.drain();
            }
            // The application sends a notification.
            12 => {
                let Some(sid) = self.session(u)? else {
                    return Ok(());
                };
                let cause = self.cause(u, &sid)?;
                let now = self.now();
                let method = *u.choose(&[
                    "notifications/message",
                    "notifications/progress",
                    "notifications/resources/list_changed",
                ])?;
                let r = self
                    .ep
                    .session_mut(&sid)
                    .map(|s| s.notify(method, None, cause.clone(), now));
                if let Some(Ok(key)) = r {
                    self.sent(&sid, key, cause);
                }
                self.drain();
            }
            // The application sends a server-to-client request.
            13 => {
                let Some(sid) = self.session(u)? else {
                    return Ok(());
                };
                let cause = self.cause(u, &sid)?;
                let now = self.now();
                let r = self.ep.session_mut(&sid).map(|s| {
                    s.request(
                        "sampling/createMessage",
                        Some(RawJson::empty_object()),
                        cause.clone(),
                        now,
                    )
                });
                if let Some(Ok((id, key))) = r {
                    self.outbound.push((sid.clone(), id));
                    self.sent(&sid, key, cause);
                }
                self.drain();
            }
            // Polling close of a request's connection, or the server ends a session.
            14 => {
                let now = self.now();
                if u.ratio(3u8, 4u8)? {
                    let Some((sid, id)) = pick(u, &self.pending)?.cloned() else {
                        return Ok(());
                    };
                    if let Some(s) = self.ep.session_mut(&sid) {
                        let _ = s.close_connection(&id, now);
                    }
                } else {
                    let Some(sid) = self.session(u)? else {
                        return Ok(());
                    };
                    if let Some(s) = self.ep.session_mut(&sid) {
                        s.close(now);
                    }
                }
                self.drain();
            }
            // A scheduling point (mcp-go's competing listeners), or one on any exchange.
            _ => {
                let Some(sid) = self.session(u)? else {
                    return Ok(());
                };
                let now = self.now();
                let points = self
                    .ep
                    .session(&sid)
                    .map(|s| s.scheduling_points())
                    .unwrap_or_default();
                let point = if !points.is_empty() && u.ratio(7u8, 8u8)? {
                    pick(u, &points)?.copied()
                } else {
                    let http = pick(u, &self.https)?.copied();
                    let p = match u.int_in_range(0..=2u8)? {
                        0 => SchedulingPoint::ListenerWake,
                        1 => SchedulingPoint::HandlerStep,
                        _ => SchedulingPoint::ListenStep,
                    };
                    http.map(|h| (h, p))
                };
                if let (Some((http, p)), Some(s)) = (point, self.ep.session_mut(&sid)) {
                    s.handle_scheduling_point(http, p, now);
                }
                self.drain();
            }
        }
        Ok(())
    }

    /// End of run: the monitor's end-of-run checks, with what is still queued.
    fn finish(&mut self) {
        let mut queued = Vec::new();
        for sid in &self.sessions {
            if let Some(s) = self.ep.session(sid) {
                queued.extend(s.queued_keys().into_iter().map(|k| (sid.to_string(), k)));
            }
        }
        self.mon.finish(&queued);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mut d) = Driver::new(&mut u) else {
        return;
    };
    for _ in 0..OPS_MAX {
        if u.is_empty() || d.op(&mut u).is_err() {
            break;
        }
    }
    d.finish();
});
