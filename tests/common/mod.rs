//! A test driver for the server core: plays a client and an application,
//! feeds every observation to the monitor, and keeps a log per exchange.
#![allow(dead_code)]

pub mod driver;

use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::{HttpId, RequestId, SessionId};
use mcp_streamable::jsonrpc::{Message, RawJson};
use mcp_streamable::policy::ServerPolicy;
pub use mcp_streamable::preset::{Scheduled, SchedulingPoint};
use mcp_streamable::server::{
    Cause, Content, EndReason, EndpointConfig, RequestHead, ServerEndpoint, ServerEvent,
    ServerOutput, SessionConfig, TransmitKind,
};
use mcp_streamable::time::Instant;
use mcp_streamable::version::ProtocolVersion;
use mcp_streamable_check::monitor::{Monitor, Observation, Violation};
use std::collections::{BTreeMap, BTreeSet};

/// What one exchange received, in order.
#[derive(Clone, Debug, Default)]
pub struct ExchangeLog {
    pub status: Option<u16>,
    pub content: Option<Content>,
    pub session_id: Option<SessionId>,
    pub json: Vec<Message>,
    /// (id, message) of every SSE event; message None = priming.
    pub events: Vec<(Option<String>, Option<Message>)>,
    pub end: Option<EndReason>,
    pub retry_ms: Option<u64>,
    /// The client side closed it (or the network dropped it).
    pub client_closed: bool,
    /// The server has been told it is closed.
    pub server_closed: bool,
    /// SSE keep-alive comments written.
    pub comments: usize,
}

impl ExchangeLog {
    pub fn messages(&self) -> Vec<&Message> {
        self.events.iter().filter_map(|(_, m)| m.as_ref()).collect()
    }
    pub fn last_id(&self) -> Option<&str> {
        self.events.iter().rev().find_map(|(id, _)| id.as_deref())
    }
    pub fn is_open(&self) -> bool {
        self.end.is_none() && !self.client_closed
    }
}

pub struct Harness {
    pub ep: ServerEndpoint,
    pub mon: Monitor,
    pub now: Instant,
    pub version: ProtocolVersion,
    pub session: Option<SessionId>,
    pub log: BTreeMap<HttpId, ExchangeLog>,
    /// Client requests the application has been asked to serve, oldest first.
    pub pending: Vec<RequestId>,
    pub next_rid: i64,
    pub dropped: Vec<mcp_streamable::ids::MsgKey>,
    pub gets: BTreeSet<HttpId>,
    /// Who the requests come from (anonymous unless a test says).
    pub caller: mcp_streamable::principal::Caller,
}

/// The item `i` picks (modulo the length), for random operations.
pub fn pick<T: Clone>(items: &[T], i: u8) -> Option<T> {
    (!items.is_empty()).then(|| items[usize::from(i) % items.len()].clone())
}

/// A proptest runner of `cases` cases that writes no regression files
/// (the shrunk case is printed by each test instead).
pub fn runner(cases: u32) -> proptest::test_runner::TestRunner {
    proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    })
}

pub fn test_config() -> EndpointConfig {
    EndpointConfig {
        session: SessionConfig {
            keepalive_ms: None,
            ..SessionConfig::default()
        }
        .into(),
        ..EndpointConfig::default()
    }
}

impl Harness {
    pub fn new(policy: ServerPolicy) -> Self {
        Self::with(policy, ProtocolVersion::V2025_11_25, test_config())
    }

    pub fn with(policy: ServerPolicy, version: ProtocolVersion, config: EndpointConfig) -> Self {
        Harness {
            ep: ServerEndpoint::with_ids(config, policy, IdSource::reproducible(0x5eed)),
            mon: Monitor::new(),
            now: Instant::ZERO,
            version,
            session: None,
            log: BTreeMap::new(),
            pending: Vec::new(),
            next_rid: 1,
            dropped: Vec::new(),
            gets: BTreeSet::new(),
            caller: Default::default(),
        }
    }

    pub fn violations(&self) -> &[Violation] {
        self.mon.violations()
    }

    pub fn violation_ids(&self) -> BTreeSet<&'static str> {
        self.mon.violations().iter().map(|v| v.id).collect()
    }

    /// Sends a raw request and drains every output.
    pub fn request(&mut self, head: &RequestHead, body: &[u8]) -> HttpId {
        let d = self
            .ep
            .handle_request_from(head, body, &self.caller, self.now);
        let principal = self.caller.principal.clone();
        self.mon
            .observe(&Observation::request(d.http, head, body).by(principal));
        self.log.entry(d.http).or_default();
        if head.method == mcp_streamable::server::Method::Get {
            self.gets.insert(d.http);
        }
        self.drain();
        d.http
    }

    pub fn drain(&mut self) {
        let Harness {
            ep,
            mon,
            log,
            pending,
            dropped,
            ..
        } = self;
        ep.drain_observed(&mut |o| mon.observe(o), |_, out, _| match out {
            ServerOutput::Transmit(t) => record(log.entry(t.http).or_default(), t.kind),
            ServerOutput::Event(_, ServerEvent::Request { id, .. }) => pending.push(id),
            ServerOutput::Event(_, ServerEvent::Dropped { key, .. }) => dropped.push(key),
            ServerOutput::Event(..) => {}
        });
        // The server learns of an exchange's end right after it ends it.
        let ended: Vec<HttpId> = self
            .log
            .iter()
            .filter(|(_, l)| l.end.is_some() && !l.server_closed)
            .map(|(h, _)| *h)
            .collect();
        for h in ended {
            if let Some(l) = self.log.get_mut(&h) {
                l.server_closed = true;
            }
            self.ep.handle_http_closed(h, self.now);
        }
    }

    /// A session `principal` opened under `policy`, initialized, with a GET
    /// open that carries an event id (a list change went out on it); that
    /// event id.
    pub fn opened_by(policy: ServerPolicy, principal: &str) -> (Harness, String) {
        let mut h = Harness::new(policy);
        h.as_principal(Some(principal));
        h.initialize();
        h.initialized();
        let get = h.get(None);
        h.notify("notifications/tools/list_changed", Cause::Unrelated);
        let event = h.log[&get].last_id().expect("an event id").to_owned();
        (h, event)
    }

    /// The requests that follow come from `principal`.
    pub fn as_principal(&mut self, principal: Option<&str>) {
        self.caller.principal = principal.map(mcp_streamable::principal::Principal::new);
    }

    fn sid(&self) -> Option<&SessionId> {
        self.session.as_ref()
    }

    pub fn next_id(&mut self) -> RequestId {
        let id = RequestId::Num(self.next_rid);
        self.next_rid += 1;
        id
    }

    /// POSTs `initialize`, answers it, and returns the exchange.
    pub fn initialize(&mut self) -> HttpId {
        let id = self.next_id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#,
            self.version
        );
        let http = self.request(&RequestHead::post(None, None), body.as_bytes());
        self.session = self.ep.route(http).cloned();
        self.respond(&id);
        assert_eq!(
            self.log[&http].session_id, self.session,
            "Mcp-Session-Id on the initialize response"
        );
        http
    }

    pub fn initialized(&mut self) -> HttpId {
        self.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
    }

    pub fn post(&mut self, body: &str) -> HttpId {
        let head = RequestHead::post(self.sid(), Some(self.version));
        self.request(&head, body.as_bytes())
    }

    /// POSTs a `tools/call`; returns (exchange, request id).
    pub fn call(&mut self) -> (HttpId, RequestId) {
        let id = self.next_id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t","_meta":{{"progressToken":{id}}}}}}}"#
        );
        (self.post(&body), id)
    }

    pub fn get(&mut self, last_event_id: Option<&str>) -> HttpId {
        let sid = self.session.clone().expect("session");
        let head = RequestHead::get(&sid, self.version, last_event_id);
        self.request(&head, b"")
    }

    pub fn delete(&mut self) -> HttpId {
        let sid = self.session.clone().expect("session");
        self.request(&RequestHead::delete(&sid), b"")
    }

    pub fn session_key(&self) -> String {
        self.session
            .as_ref()
            .map(|s| s.to_string())
            .unwrap_or_default()
    }

    /// Answers the pending request picked by `i` (random ops), if any.
    pub fn respond_pick(&mut self, i: u8) {
        if let Some(id) = pick(&self.pending, i) {
            self.respond(&id);
        }
    }

    /// GET resuming from the last event id of the exchange picked by `i`.
    pub fn resume_pick(&mut self, i: u8) {
        let ids: Vec<String> = self
            .log
            .values()
            .filter_map(|l| l.last_id().map(str::to_owned))
            .collect();
        if let Some(id) = pick(&ids, i) {
            self.get(Some(&id));
        }
    }

    /// The client drops the open exchange picked by `i`; `notice`: the server
    /// learns of it at once.
    pub fn drop_pick(&mut self, i: u8, notice: bool) {
        let open: Vec<HttpId> = self
            .log
            .iter()
            .filter(|(_, l)| l.is_open() && l.status.is_some())
            .map(|(k, _)| *k)
            .collect();
        if let Some(http) = pick(&open, i) {
            self.client_drop(http, notice);
        }
    }

    /// The application answers request `id`.
    pub fn respond(&mut self, id: &RequestId) {
        let sid = self
            .session
            .clone()
            .or_else(|| self.ep.session_ids().next().cloned());
        let Some(sid) = sid else { return };
        let Some(s) = self.ep.session_mut(&sid) else {
            return;
        };
        if let Ok(key) = s.respond(id, Ok(RawJson::empty_object()), self.now) {
            self.mon.observe(&Observation::Sent {
                session: sid.to_string(),
                key,
                cause: Cause::Request(id.clone()),
                origin: None,
            });
        }
        self.pending.retain(|p| p != id);
        self.drain();
    }

    /// The application sends a notification.
    pub fn notify(&mut self, method: &str, cause: Cause) -> bool {
        self.notify_with(method, None, cause)
    }

    /// The application sends a notification with `params`.
    pub fn notify_with(&mut self, method: &str, params: Option<RawJson>, cause: Cause) -> bool {
        let Some(sid) = self.session.clone() else {
            return false;
        };
        let Some(s) = self.ep.session_mut(&sid) else {
            return false;
        };
        let r = s.notify(method, params, cause.clone(), self.now);
        if let Ok(key) = r {
            self.mon.observe(&Observation::Sent {
                session: sid.to_string(),
                key,
                cause,
                origin: None,
            });
        }
        self.drain();
        r.is_ok()
    }

    /// Polling close of request `id`'s connection.
    pub fn close_connection(&mut self, id: &RequestId) {
        let Some(sid) = self.session.clone() else {
            return;
        };
        if let Some(s) = self.ep.session_mut(&sid) {
            let _ = s.close_connection(id, self.now);
        }
        self.drain();
    }

    /// The client or network drops an exchange; the server learns it only
    /// when `notice` is true (otherwise later, via `server_notices`).
    pub fn client_drop(&mut self, http: HttpId, notice: bool) {
        let Some(l) = self.log.get_mut(&http) else {
            return;
        };
        if l.client_closed {
            return;
        }
        l.client_closed = true;
        self.mon.observe(&Observation::Fault);
        self.mon.observe(&Observation::Closed { http });
        if notice {
            self.server_notices(http);
        }
    }

    pub fn server_notices(&mut self, http: HttpId) {
        let Some(l) = self.log.get_mut(&http) else {
            return;
        };
        if l.server_closed {
            return;
        }
        l.server_closed = true;
        self.ep.handle_http_closed(http, self.now);
        self.drain();
    }

    pub fn listener_wake(&mut self, http: HttpId) -> bool {
        self.schedule(http, SchedulingPoint::ListenerWake)
    }

    pub fn handler_step(&mut self, http: HttpId) -> bool {
        self.schedule(http, SchedulingPoint::HandlerStep)
    }

    /// Fires a scheduling point of the session that owns `http`.
    pub fn schedule(&mut self, http: HttpId, point: SchedulingPoint) -> bool {
        let now = self.now;
        let fired = self.ep.handle_scheduling_point(http, point, now);
        self.drain();
        fired
    }

    pub fn advance(&mut self, ms: u64) {
        self.now = Instant::from_millis(self.now.as_millis() + ms);
        self.ep.handle_timeout(self.now);
        self.drain();
    }

    /// Runs every scheduling point until none does anything (bounded).
    pub fn settle_scheduling(&mut self) {
        for _ in 0..64 {
            let Some(sid) = self.session.clone() else {
                return;
            };
            let points = match self.ep.session(&sid) {
                Some(s) => s.scheduling_points(),
                None => return,
            };
            let mut any = false;
            for (http, p) in points {
                any |= self.schedule(http, p);
            }
            if !any {
                return;
            }
        }
    }

    /// Liveness phase: the server notices every dead connection, the client
    /// resumes every stream it lost (as a conforming client does), opens a
    /// standalone GET, and the monitor runs its end-of-run checks.
    pub fn finish(&mut self) {
        let initialized = self
            .session
            .as_ref()
            .and_then(|s| self.ep.session(s))
            .is_some_and(|s| s.is_initialized());
        if self
            .session
            .as_ref()
            .is_some_and(|s| self.ep.session(s).is_some())
            && !initialized
        {
            self.initialized();
        }
        self.settle_scheduling();
        let dead: Vec<HttpId> = self
            .log
            .iter()
            .filter(|(_, l)| l.client_closed)
            .map(|(h, _)| *h)
            .collect();
        for h in dead {
            self.server_notices(h);
        }
        if self.session.is_some() && self.ep.session(self.session.as_ref().unwrap()).is_some() {
            let lost: Vec<String> = self
                .log
                .iter()
                .filter(|(_, l)| l.status == Some(200) && l.content == Some(Content::Sse))
                .filter(|(_, l)| {
                    l.client_closed
                        || matches!(l.end, Some(EndReason::Polling | EndReason::Replaced))
                })
                .filter_map(|(_, l)| l.last_id().map(str::to_owned))
                .collect();
            for id in lost {
                self.get(Some(&id));
            }
            self.get(None);
            self.settle_scheduling();
        }
        let queued: Vec<(String, mcp_streamable::ids::MsgKey)> = match &self.session {
            Some(sid) => self
                .ep
                .session(sid)
                .map(|s| {
                    s.queued_keys()
                        .into_iter()
                        .map(|k| (sid.to_string(), k))
                        .collect()
                })
                .unwrap_or_default(),
            None => Vec::new(),
        };
        self.mon.finish(&queued);
    }
}

/// What the client sees of one transmit on exchange `log`.
fn record(log: &mut ExchangeLog, kind: TransmitKind) {
    if log.client_closed {
        return; // written into a dead connection: the client sees nothing
    }
    match kind {
        TransmitKind::Head(h) => {
            log.status.get_or_insert(h.status);
            log.content.get_or_insert(h.content);
            if log.session_id.is_none() {
                log.session_id = h.session_id;
            }
        }
        TransmitKind::Json(m) => log.json.push(m),
        TransmitKind::Event {
            id,
            retry_ms,
            message,
        } => {
            if retry_ms.is_some() {
                log.retry_ms = retry_ms;
            }
            log.events.push((id, message.map(|o| o.message.clone())));
        }
        TransmitKind::Comment => log.comments += 1,
        TransmitKind::End(r) => {
            log.end.get_or_insert(r);
        }
    }
}
