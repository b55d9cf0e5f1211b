//! `fleet::Instance`: two instances of one fleet on the in-memory store,
//! one session's requests landing on either. The store runs every op as it
//! comes (one legal order; the fleet checker explores the others).

use mcp_streamable::fleet::instance::{FleetConfigError, Instance, InstanceConfig, INSTANCES_MAX};
use mcp_streamable::fleet::store::{MemoryStore, Output};
use mcp_streamable::fleet::{Cancellations, Conn, InstanceId, StoreOp, StoreReply, CONTROL};
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::{HttpId, RequestId, SessionId};
use mcp_streamable::jsonrpc::{Message, RawJson};
use mcp_streamable::policy::{EventIdScheme, ServerPolicy};
use mcp_streamable::principal::Caller;
use mcp_streamable::server::{
    key_base, Cause, EndReason, EndpointConfig, RequestHead, ServerEvent, TransmitKind,
    STREAM_ID_SPAN,
};
use mcp_streamable::time::Instant;
use mcp_streamable::version::ProtocolVersion;
use std::collections::BTreeMap;

/// What one exchange showed its client.
#[derive(Debug, Default)]
struct Seen {
    status: Option<u16>,
    session: Option<SessionId>,
    /// SSE events: id and message (None: priming).
    events: Vec<(Option<String>, Option<Message>)>,
    json: Option<Message>,
    end: Option<EndReason>,
}

impl Seen {
    fn messages(&self) -> Vec<&Message> {
        self.events.iter().filter_map(|(_, m)| m.as_ref()).collect()
    }
}

struct Fleet {
    store: MemoryStore,
    nodes: Vec<Instance>,
    now: Instant,
    seen: BTreeMap<(usize, HttpId), Seen>,
    session: Option<SessionId>,
    version: ProtocolVersion,
    next_id: i64,
    /// Publications on control channels are dropped.
    lose_announcements: bool,
    /// Instances that died: their ops and what the store has for them are
    /// gone.
    dead: Vec<usize>,
}

const TTL_MS: u64 = 60_000;

impl Fleet {
    fn new(n: u16, entries_per_log_max: usize, config: impl Fn(&mut InstanceConfig)) -> Self {
        Self::with_endpoint(n, entries_per_log_max, config, EndpointConfig::default())
    }

    /// [`Fleet::new`] with every instance's endpoint set up as `endpoint`.
    fn with_endpoint(
        n: u16,
        entries_per_log_max: usize,
        config: impl Fn(&mut InstanceConfig),
        endpoint: EndpointConfig,
    ) -> Self {
        let nodes = (0..n)
            .map(|i| {
                let mut c = InstanceConfig {
                    id: InstanceId(i),
                    session_ttl_ms: TTL_MS,
                    ..InstanceConfig::default()
                };
                config(&mut c);
                Instance::new(
                    c,
                    endpoint.clone(),
                    ServerPolicy::FIXED,
                    IdSource::reproducible(u64::from(i) + 1),
                )
                .expect("a fleet setting")
            })
            .collect();
        Fleet {
            store: MemoryStore::new(entries_per_log_max),
            nodes,
            now: Instant::ZERO,
            seen: BTreeMap::new(),
            session: None,
            version: ProtocolVersion::LATEST,
            next_id: 0,
            lose_announcements: false,
            dead: Vec::new(),
        }
    }

    fn sid(&self) -> SessionId {
        self.session.clone().expect("initialized")
    }

    /// Moves what each instance wrote to what its clients saw.
    fn collect(&mut self) {
        for (i, node) in self.nodes.iter_mut().enumerate() {
            while let Some(t) = node.poll_transmit() {
                let seen = self.seen.entry((i, t.http)).or_default();
                match t.kind {
                    TransmitKind::Head(h) => {
                        assert!(seen.status.is_none(), "one head per exchange");
                        seen.status = Some(h.status);
                        seen.session = h.session_id;
                    }
                    TransmitKind::Json(m) => seen.json = Some(m),
                    TransmitKind::Event { id, message, .. } => {
                        assert!(seen.status.is_some() && seen.end.is_none());
                        seen.events.push((id, message.map(|o| o.message.clone())));
                    }
                    TransmitKind::Comment => {}
                    TransmitKind::End(r) => {
                        assert!(seen.end.is_none(), "one end per exchange");
                        seen.end = Some(r);
                    }
                }
            }
        }
    }

    /// Runs the store until no instance has anything for it.
    fn pump(&mut self) {
        self.pump_holding_back(usize::MAX);
    }

    /// A request on instance `i`, the store not run yet.
    fn request_unpumped(&mut self, i: usize, head: RequestHead, body: &str) -> HttpId {
        let http =
            self.nodes[i].handle_request(&head, body.as_bytes(), &Caller::default(), self.now);
        self.collect();
        http
    }

    fn request(&mut self, i: usize, head: RequestHead, body: &str) -> HttpId {
        let http = self.request_unpumped(i, head, body);
        self.pump();
        http
    }

    fn post(&mut self, i: usize, body: &str) -> HttpId {
        let head = RequestHead::post(Some(&self.sid()), Some(self.version));
        self.request(i, head, body)
    }

    fn next_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// The requests instance `i`'s application was handed.
    fn requests(&mut self, i: usize) -> Vec<(RequestId, String)> {
        let mut out = Vec::new();
        while let Some((_, e)) = self.nodes[i].poll_event() {
            if let ServerEvent::Request { id, method, .. } = e {
                out.push((id, method));
            }
        }
        out
    }

    fn respond(&mut self, i: usize, id: i64) {
        let sid = self.sid();
        let now = self.now;
        let s = self.nodes[i].session_mut(&sid).expect("held here");
        s.respond(
            &RequestId::Num(id),
            Ok(RawJson::from(serde_json::json!({}))),
            now,
        )
        .expect("answerable");
        self.nodes[i].flush(now);
        self.pump();
    }

    fn progress(&mut self, i: usize, for_id: i64, n: u32) {
        let sid = self.sid();
        let now = self.now;
        let params = RawJson::from(serde_json::json!({ "progress": n }));
        let s = self.nodes[i].session_mut(&sid).expect("held here");
        s.notify(
            "notifications/progress",
            Some(params),
            Cause::Request(RequestId::Num(for_id)),
            now,
        )
        .expect("notifiable");
        self.nodes[i].flush(now);
        self.pump();
    }

    /// Runs the store for every instance but `held`, whose ops are kept
    /// back and returned, until nothing moves (announcements on control
    /// channels dropped while `lose_announcements`).
    fn pump_holding_back(&mut self, held: usize) -> Vec<StoreOp> {
        let mut kept = Vec::new();
        loop {
            let mut moved = false;
            for (i, node) in self.nodes.iter_mut().enumerate() {
                while let Some(op) = node.poll_op() {
                    if self.dead.contains(&i) {
                        continue;
                    }
                    if i == held {
                        kept.push(op);
                        continue;
                    }
                    moved = true;
                    let control =
                        matches!(&op, StoreOp::Publish { log, .. } if log.stream == CONTROL);
                    if control && self.lose_announcements {
                        continue;
                    }
                    self.store.handle_op(InstanceId(i as u16), op, self.now);
                }
            }
            while let Some((to, out)) = self.store.poll_output() {
                if self.dead.contains(&usize::from(to.0)) {
                    continue;
                }
                let node = &mut self.nodes[usize::from(to.0)];
                match out {
                    Output::Reply(r) => node.handle_reply(r, self.now),
                    Output::Push(p) => node.handle_push(p, self.now),
                }
                moved = true;
            }
            if !moved {
                break;
            }
        }
        self.collect();
        kept
    }

    /// Runs what the store has for the instances, and the store again,
    /// until nothing moves.
    fn pump_outputs(&mut self) {
        while let Some((to, out)) = self.store.poll_output() {
            let node = &mut self.nodes[usize::from(to.0)];
            match out {
                Output::Reply(r) => node.handle_reply(r, self.now),
                Output::Push(p) => node.handle_push(p, self.now),
            }
        }
        self.pump();
    }

    /// `handshake`, with the announcement of `initialized` on the session's
    /// control channel lost on its way (a store connection that failed).
    fn handshake_losing_the_announcement(&mut self, i: usize, j: usize) {
        self.lose_announcements = true;
        self.handshake(i, j);
        self.lose_announcements = false;
    }

    /// `initialize` on instance `i`, answered; `notifications/initialized`
    /// on instance `j`.
    fn handshake(&mut self, i: usize, j: usize) {
        let id = self.next_id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#,
            self.version
        );
        let http = self.request_unpumped(i, RequestHead::post(None, None), &body);
        assert_eq!(
            self.requests(i),
            vec![(RequestId::Num(id), "initialize".into())]
        );
        let sid = self.nodes[i].endpoint().route(http).cloned();
        self.session = sid;
        // Answered, but the head with the new id waits for the store.
        let (sid, now) = (self.sid(), self.now);
        let s = self.nodes[i].session_mut(&sid).unwrap();
        s.respond(
            &RequestId::Num(id),
            Ok(RawJson::from(serde_json::json!({}))),
            now,
        )
        .unwrap();
        self.nodes[i].flush(self.now);
        self.collect();
        assert!(
            !self.seen.contains_key(&(i, http)),
            "nothing of the initialize answer before its record is stored"
        );
        self.pump();
        let seen = &self.seen[&(i, http)];
        assert_eq!((seen.status, &seen.session), (Some(200), &self.session));
        assert_eq!(seen.end, Some(EndReason::Complete));
        let h = self.post(
            j,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        assert_eq!(self.seen[&(j, h)].status, Some(202));
    }

    /// A `tools/call` on instance `i`; its id and exchange.
    fn call(&mut self, i: usize) -> (i64, HttpId) {
        let id = self.next_id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t"}}}}"#
        );
        let http = self.post(i, &body);
        assert_eq!(
            self.requests(i),
            vec![(RequestId::Num(id), "tools/call".into())]
        );
        (id, http)
    }

    fn get(&mut self, i: usize, last_event_id: Option<&str>) -> HttpId {
        let head = RequestHead::get(&self.sid(), self.version, last_event_id);
        self.request(i, head, "")
    }

    /// An unrelated `notifications/message` numbered `n`, emitted on
    /// instance `i`.
    fn log_message(&mut self, i: usize, n: u64) {
        let sid = self.sid();
        let now = self.now;
        let params = RawJson::from(serde_json::json!({ "level": "info", "data": n }));
        let s = self.nodes[i].session_mut(&sid).expect("held here");
        s.notify("notifications/message", Some(params), Cause::Unrelated, now)
            .expect("notifiable");
        self.nodes[i].flush(now);
        self.pump();
    }

    /// The numbers of the `notifications/message`s exchange `http` of
    /// instance `i` showed.
    fn logged(&self, i: usize, http: HttpId) -> Vec<u64> {
        self.seen
            .get(&(i, http))
            .map(|s| s.messages().into_iter().filter_map(data_of).collect())
            .unwrap_or_default()
    }

    fn close(&mut self, i: usize, http: HttpId) {
        self.nodes[i].handle_http_closed(http, self.now);
        self.pump();
    }

    fn last_id(&self, i: usize, http: HttpId) -> String {
        self.seen[&(i, http)]
            .events
            .iter()
            .rev()
            .find_map(|(id, _)| id.clone())
            .expect("an event id")
    }
}

fn progress_of(m: &Message) -> Option<u64> {
    match m {
        Message::Notification { params, .. } => params.as_ref()?.to_value()["progress"].as_u64(),
        _ => None,
    }
}

fn data_of(m: &Message) -> Option<u64> {
    match m {
        Message::Notification { method, params } if method == "notifications/message" => {
            params.as_ref()?.to_value()["data"].as_u64()
        }
        _ => None,
    }
}

/// The stream part of a stream-scoped event id (`ns-stream-seq`).
fn stream_of(id: &str) -> u32 {
    id.split('-').nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_call_resumed_on_another_instance_gets_the_rest_once_in_order() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 1);
    let (id, call) = f.call(0);
    f.progress(0, id, 1);
    let cursor = f.last_id(0, call);
    assert!(stream_of(&cursor) < STREAM_ID_SPAN, "instance 0's range");
    f.close(0, call); // the connection drops
    f.progress(0, id, 2); // written while nobody listens
    let resumed = f.get(1, Some(&cursor));
    {
        let seen = &f.seen[&(1, resumed)];
        assert_eq!((seen.status, &seen.session), (Some(200), &f.session));
        assert_eq!(
            seen.messages()
                .iter()
                .filter_map(|m| progress_of(m))
                .collect::<Vec<_>>(),
            vec![2],
            "what came after the cursor, from the store"
        );
        assert_eq!(seen.end, None, "the call goes on");
    }
    assert_eq!(f.nodes[1].relayed_len(), 1);
    assert_eq!(f.nodes[1].subscriptions_len(), 1);
    f.progress(0, id, 3); // live, through the subscription
    f.respond(0, id);
    let seen = &f.seen[&(1, resumed)];
    let messages = seen.messages();
    assert_eq!(
        messages
            .iter()
            .filter_map(|m| progress_of(m))
            .collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert!(
        matches!(messages.last(), Some(Message::Response { id: RequestId::Num(n), .. }) if *n == id),
        "the response last: {messages:?}"
    );
    assert_eq!(seen.end, Some(EndReason::Complete));
    let ids: Vec<&String> = seen
        .events
        .iter()
        .filter_map(|(id, _)| id.as_ref())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_by_key(|id| id.rsplit('-').next().unwrap().parse::<u64>().unwrap());
    sorted.dedup();
    assert_eq!(ids, sorted, "ids increasing, none twice");
    assert_eq!(f.nodes[1].relayed_len(), 0, "the relayed GET is over");
    assert_eq!(f.nodes[1].subscriptions_len(), 0, "and unsubscribed");
    assert!(!f.store.is_subscribed(&log_of(&f, &cursor), InstanceId(1)));
}

fn log_of(f: &Fleet, event_id: &str) -> mcp_streamable::fleet::LogKey {
    mcp_streamable::fleet::LogKey {
        session: f.sid(),
        stream: mcp_streamable::ids::StreamId(stream_of(event_id)),
    }
}

#[test]
fn each_instance_numbers_its_streams_in_its_own_range_and_logs_them() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let (id, call) = f.call(1);
    f.progress(1, id, 1);
    let cursor = f.last_id(1, call);
    let stream = stream_of(&cursor);
    assert!(
        (STREAM_ID_SPAN..2 * STREAM_ID_SPAN).contains(&stream),
        "{cursor}"
    );
    f.respond(1, id);
    // Priming, progress, response, end: the log's numbers are the stream's.
    let log = log_of(&f, &cursor);
    let entries = f.store.entries(&log);
    assert_eq!(entries.len(), 4, "{entries:?}");
    assert_eq!(entries.last().map(|e| e.seq), Some(4));
    assert_eq!(
        f.nodes[1].logs().len(),
        1,
        "answered on its connection: its log kept while the session keeps the stream for its resumption"
    );
    // Resuming on instance 0 from the priming event replays the rest.
    let priming = f.seen[&(1, call)].events[0].0.clone().unwrap();
    let resumed = f.get(0, Some(&priming));
    let seen = &f.seen[&(0, resumed)];
    assert_eq!(seen.messages().len(), 2, "progress and response");
    assert_eq!(seen.end, Some(EndReason::Complete));
}

#[test]
fn a_resumption_elsewhere_while_the_first_connection_seems_alive_gets_the_answer() {
    // The client's connection to instance 0 died without instance 0
    // noticing: it writes the answer there, and the stream is done with on
    // its side. The client, resuming on instance 1, must still get it.
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let (id, call) = f.call(0);
    f.progress(0, id, 1);
    let cursor = f.last_id(0, call);
    let resumed = f.get(1, Some(&cursor));
    assert_eq!(f.seen[&(1, resumed)].status, Some(200));
    f.progress(0, id, 2);
    f.respond(0, id);
    assert_eq!(f.seen[&(0, call)].end, Some(EndReason::Complete));
    let seen = &f.seen[&(1, resumed)];
    assert_eq!(seen.messages().len(), 2, "{:?}", seen.events);
    assert_eq!(progress_of(seen.messages()[0]), Some(2));
    assert_eq!(seen.end, Some(EndReason::Complete));
}

#[test]
fn two_resumptions_of_one_stream_on_one_instance_share_its_subscription() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let (id, call) = f.call(0);
    f.progress(0, id, 1);
    let cursor = f.last_id(0, call);
    f.close(0, call);
    let a = f.get(1, Some(&cursor));
    let b = f.get(1, Some(&cursor));
    assert_eq!(f.nodes[1].subscriptions_len(), 1);
    f.close(1, a);
    assert_eq!(f.nodes[1].subscriptions_len(), 1, "b still follows");
    f.progress(0, id, 2);
    assert_eq!(f.seen[&(1, b)].messages().len(), 1, "b got it after a left");
    assert!(f.seen[&(1, a)].messages().is_empty());
    f.respond(0, id);
    assert_eq!(f.seen[&(1, b)].end, Some(EndReason::Complete));
    assert_eq!(f.nodes[1].subscriptions_len(), 0);
}

#[test]
fn delete_on_one_instance_ends_the_session_on_every_other() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let get = f.get(0, None);
    assert_eq!(f.seen[&(0, get)].status, Some(200));
    let sid = f.sid();
    let del = f.request(1, RequestHead::delete(&sid), "");
    assert_eq!(f.seen[&(1, del)].status, Some(200));
    assert_eq!(f.store.sessions_len(), 0);
    // Instance 0 still holds its copy, with its GET, until a request tells it.
    assert!(f.nodes[0].endpoint().session(&sid).is_some());
    let id = f.next_id();
    let late = f.post(
        0,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
    );
    assert_eq!(f.seen[&(0, late)].status, Some(404));
    assert_eq!(f.seen[&(0, get)].end, Some(EndReason::SessionEnded));
    let again = f.request(0, RequestHead::delete(&sid), "");
    assert_eq!(f.seen[&(0, again)].status, Some(404));
}

#[test]
fn a_session_expired_in_the_store_is_unknown_everywhere() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 1);
    f.now = Instant::from_millis(TTL_MS - 1);
    let id = f.next_id();
    let ok = f.post(
        0,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
    );
    assert_eq!(f.seen[&(0, ok)].status, Some(200), "refreshed by the check");
    f.now = Instant::from_millis(2 * TTL_MS - 2);
    let id = f.next_id();
    let ok = f.post(
        1,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
    );
    assert_eq!(
        f.seen[&(1, ok)].status,
        Some(200),
        "one ms before its expiry"
    );
    f.now = Instant::from_millis(3 * TTL_MS - 2);
    let id = f.next_id();
    let gone = f.post(
        0,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
    );
    assert_eq!(f.seen[&(0, gone)].status, Some(404), "at its expiry");
}

/// An instance asks for time at its earliest deadline (here a copy's idle
/// expiry, between two heartbeats). A copy its endpoint ends on that timer
/// lets go of what it followed for the session at once; the session itself
/// lives on in the store (the fleet's TTL decides, another instance may be
/// serving it), and another instance serves it.
#[test]
fn a_copy_idle_on_its_instance_ends_at_its_deadline_and_lets_go_of_its_logs() {
    let mut endpoint = EndpointConfig::default();
    endpoint.session.idle_timeout_ms = Some(2_500);
    let mut f = Fleet::with_endpoint(2, 64, |c| c.beat_ms = 1_000, endpoint);
    f.handshake(0, 0);
    let sid = f.sid();
    // A call on a stream, which the copy logs; its connection drops (the
    // stream stays resumable) and every other exchange is over: the copy is
    // idle from here.
    let (id, _) = f.call(0);
    f.progress(0, id, 1);
    let done: Vec<HttpId> = f
        .seen
        .keys()
        .filter(|(i, _)| *i == 0)
        .map(|k| k.1)
        .collect();
    for http in done {
        f.close(0, http);
    }
    let written = f.nodes[0].logs().len();
    assert!(written > 0, "the copy logged its streams");
    let mut deadlines = Vec::new();
    while f.nodes[0]
        .endpoint()
        .session(&sid)
        .is_some_and(|s| !s.is_ended())
    {
        let t = f.nodes[0]
            .poll_timeout()
            .expect("an instance always has a deadline: its next heartbeat");
        assert!(
            t >= f.now,
            "a deadline not behind, not {t:?} at {:?}",
            f.now
        );
        assert!(deadlines.len() < 10, "never expired: {deadlines:?}");
        deadlines.push(t.as_millis());
        f.now = t;
        f.nodes[0].handle_timeout(t);
        f.pump();
    }
    // The first heartbeat at once, two more, then the expiry.
    assert_eq!(deadlines, [0, 1_000, 2_000, 2_500]);
    assert!(f.nodes[0].logs().is_empty(), "{written} logs kept");
    assert_eq!(
        f.store.sessions_len(),
        1,
        "the session lives on in the store"
    );
    let id = f.next_id();
    let later = f.post(
        1,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
    );
    assert_eq!(f.seen[&(1, later)].status, Some(200));
}

#[test]
fn parked_max_refuses_past_it_with_503() {
    let mut f = Fleet::new(1, 64, |c| c.parked_max = 2);
    f.handshake(0, 0);
    let sid = f.sid();
    let a = f.request_unpumped(0, RequestHead::get(&sid, f.version, None), "");
    let b = f.request_unpumped(0, RequestHead::get(&sid, f.version, None), "");
    assert_eq!(f.nodes[0].parked_len(), 2);
    let c = f.request_unpumped(0, RequestHead::get(&sid, f.version, None), "");
    assert_eq!(f.seen[&(0, c)].status, Some(503));
    assert!(!f.seen.contains_key(&(0, a)) && !f.seen.contains_key(&(0, b)));
    f.pump();
    assert_eq!(f.nodes[0].parked_len(), 0);
    assert_eq!(f.seen[&(0, a)].status, Some(200));
    assert_eq!(f.seen[&(0, b)].status, Some(200));
}

#[test]
fn a_request_whose_client_left_while_parked_is_never_served() {
    let mut f = Fleet::new(1, 64, |_| {});
    f.handshake(0, 0);
    let sid = f.sid();
    let a = f.request_unpumped(0, RequestHead::get(&sid, f.version, None), "");
    f.close(0, a);
    assert!(!f.seen.contains_key(&(0, a)));
    assert_eq!(
        f.nodes[0]
            .endpoint()
            .session(&sid)
            .unwrap()
            .exchanges()
            .count(),
        0
    );
}

#[test]
fn a_resumption_from_before_what_the_store_keeps_is_refused_with_400() {
    let mut f = Fleet::new(2, 2, |_| {});
    f.handshake(0, 0);
    let (id, call) = f.call(0);
    f.progress(0, id, 1);
    let cursor = f.last_id(0, call);
    f.close(0, call);
    for n in 2..=4 {
        f.progress(0, id, n);
    }
    let resumed = f.get(1, Some(&cursor));
    assert_eq!(f.seen[&(1, resumed)].status, Some(400));
    assert_eq!(f.nodes[1].relayed_len(), 0);
    assert_eq!(f.nodes[1].subscriptions_len(), 0);
}

#[test]
fn initialized_on_another_instance_readies_the_copy_that_answered_initialize() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 1); // `initialized` went to instance 1
    let sid = f.sid();
    let copy = |f: &Fleet| f.nodes[0].endpoint().session(&sid).cloned().unwrap();
    assert!(
        copy(&f).is_initialized(),
        "announced on the control channel"
    );
    assert_eq!(
        f.nodes[0].subscriptions_len(),
        0,
        "and no longer listened to"
    );
    // Past init_timeout_ms the copy lives on, and what is emitted there
    // goes out (here through the mailbox to the GET on instance 1).
    f.now = Instant::from_millis(20_000);
    f.nodes[0].handle_timeout(f.now);
    f.pump();
    assert!(!copy(&f).is_ended());
    let get = f.get(1, None);
    f.log_message(0, 1);
    assert_eq!(f.logged(1, get), [1]);
}

#[test]
fn the_initialize_answer_waits_for_the_control_channel_too() {
    let mut f = Fleet::new(2, 64, |_| {});
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let http = f.request_unpumped(0, RequestHead::post(None, None), body);
    let sid = f.nodes[0].endpoint().route(http).cloned().unwrap();
    f.nodes[0].poll_event();
    let now = f.now;
    let s = f.nodes[0].session_mut(&sid).unwrap();
    s.respond(
        &RequestId::Num(1),
        Ok(RawJson::from(serde_json::json!({}))),
        now,
    )
    .unwrap();
    f.nodes[0].flush(now);
    // Run the command connection only (the record stored), not the
    // subscriber connection: the answer still waits.
    let ops: Vec<_> = std::iter::from_fn(|| f.nodes[0].poll_op()).collect();
    let (command, subscriber): (Vec<_>, Vec<_>) =
        ops.into_iter().partition(|op| op.conn() == Conn::Command);
    assert_eq!(subscriber.len(), 1, "the control channel: {subscriber:?}");
    for op in command {
        f.store.handle_op(InstanceId(0), op, now);
    }
    while let Some((_, out)) = f.store.poll_output() {
        if let Output::Reply(r) = out {
            f.nodes[0].handle_reply(r, now);
        }
    }
    f.collect();
    assert!(
        !f.seen.contains_key(&(0, http)),
        "stored, not yet listened to"
    );
    for op in subscriber {
        f.store.handle_op(InstanceId(0), op, now);
    }
    f.pump_outputs();
    assert_eq!(f.seen[&(0, http)].status, Some(200));
}

#[test]
fn a_request_past_the_handshake_readies_the_copy_when_the_announcement_is_lost() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake_losing_the_announcement(0, 1);
    let sid = f.sid();
    assert!(!f.nodes[0]
        .endpoint()
        .session(&sid)
        .unwrap()
        .is_initialized());
    let (id, _) = f.call(0);
    assert!(f.nodes[0]
        .endpoint()
        .session(&sid)
        .unwrap()
        .is_initialized());
    f.now = Instant::from_millis(20_000);
    f.nodes[0].handle_timeout(f.now);
    f.pump();
    assert!(!f.nodes[0].endpoint().session(&sid).unwrap().is_ended());
    f.respond(0, id);
}

#[test]
fn a_fleet_refuses_settings_it_cannot_serve() {
    let bad_id = InstanceConfig {
        id: InstanceId(INSTANCES_MAX),
        ..InstanceConfig::default()
    };
    let ids = || IdSource::reproducible(1);
    let e = Instance::new(
        bad_id,
        EndpointConfig::default(),
        ServerPolicy::FIXED,
        ids(),
    );
    assert_eq!(e.err(), Some(FleetConfigError::InstanceId(INSTANCES_MAX)));
    let last = InstanceConfig {
        id: InstanceId(INSTANCES_MAX - 1),
        ..InstanceConfig::default()
    };
    assert!(Instance::new(last, EndpointConfig::default(), ServerPolicy::FIXED, ids()).is_ok());
    let rmcp = ServerPolicy {
        event_ids: EventIdScheme::Rmcp39,
        ..ServerPolicy::FIXED
    };
    let e = Instance::new(
        InstanceConfig::default(),
        EndpointConfig::default(),
        rmcp,
        ids(),
    );
    assert_eq!(
        e.err(),
        Some(FleetConfigError::EventIds(EventIdScheme::Rmcp39))
    );
}

#[test]
fn two_instances_never_mint_the_same_message_key_for_one_session() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 1);
    let (a, _) = f.call(0);
    let (b, _) = f.call(1);
    let sid = f.sid();
    let now = f.now;
    let mut keys = Vec::new();
    for (i, id) in [(0, a), (1, b), (0, a), (1, b)] {
        let s = f.nodes[i].session_mut(&sid).expect("held here");
        let key = s
            .notify(
                "notifications/progress",
                Some(RawJson::from(serde_json::json!({ "progress": 1 }))),
                Cause::Request(RequestId::Num(id)),
                now,
            )
            .expect("notifiable");
        keys.push((i, key.0));
    }
    // Instance i mints from key_base(i × STREAM_ID_SPAN) + 1 on.
    for &(i, key) in &keys {
        let base = key_base(i as u32 * STREAM_ID_SPAN);
        assert!(key > base && key < base + (1 << 52), "{i}: {key:#x}");
    }
    let mut distinct: Vec<u64> = keys.iter().map(|&(_, k)| k).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), keys.len(), "{keys:?}");
}

#[test]
fn an_unrelated_message_reaches_the_get_held_by_another_instance_once() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 1);
    let get = f.get(1, None);
    assert_eq!(f.seen[&(1, get)].status, Some(200));
    // Emitted on instance 0, which holds no GET: through the mailbox.
    f.log_message(0, 1);
    f.log_message(0, 2);
    // Emitted on instance 1, which holds it: at once.
    f.log_message(1, 3);
    assert_eq!(f.logged(1, get), [1, 2, 3]);
    let sid = f.sid();
    let mailbox = mcp_streamable::fleet::LogKey::mailbox(sid);
    assert_eq!(f.store.entries(&mailbox).len(), 2, "3 went directly");
    // The GET's log holds them too: a resumption elsewhere replays them.
    let cursor = f.seen[&(1, get)].events[0].0.clone().expect("primed");
    f.close(1, get);
    let resumed = f.get(0, Some(&cursor));
    assert_eq!(f.logged(0, resumed), [1, 2, 3]);
}

#[test]
fn with_no_get_anywhere_messages_wait_in_the_mailbox_for_the_next_one() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 1);
    f.log_message(0, 1);
    f.log_message(1, 2);
    f.log_message(0, 3);
    let get = f.get(1, None);
    // Each instance keeps its own order; both hand off in emission order.
    let got = f.logged(1, get);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got.iter().position(|&n| n == 1) < got.iter().position(|&n| n == 3),
        "{got:?}"
    );
    f.log_message(0, 4);
    assert_eq!(f.logged(1, get).last(), Some(&4));
    for node in &f.nodes {
        assert_eq!(node.parked_len(), 0);
    }
}

#[test]
fn two_gets_on_two_instances_share_the_messages_each_once() {
    let mut f = Fleet::new(3, 64, |_| {});
    f.handshake(0, 0);
    let a = f.get(1, None);
    let b = f.get(2, None);
    for n in 1..=6 {
        f.log_message(0, n);
    }
    let mut all = f.logged(1, a);
    all.extend(f.logged(2, b));
    all.sort_unstable();
    assert_eq!(all, [1, 2, 3, 4, 5, 6], "each once, on one of them");
    // One GET goes: the rest reach the other.
    f.close(1, a);
    let before = f.logged(2, b).len();
    f.log_message(0, 7);
    assert_eq!(f.logged(2, b).len(), before + 1);
    assert_eq!(f.logged(2, b).last(), Some(&7));
    assert_eq!(f.nodes[1].subscriptions_len(), 0, "its claim ended with it");
}

#[test]
fn a_last_event_id_naming_the_mailbox_is_refused_like_any_unknown_id() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 1);
    f.log_message(0, 1);
    let get = f.get(1, None);
    let primed = f.seen[&(1, get)].events[0].0.clone().expect("primed");
    // The same namespace, stream 0 (the mailbox's), and stream 2^20 (a
    // range's base, never numbered).
    let ns = primed.split('-').next().unwrap().to_owned();
    // And the last id of instance 1's range (its answers log).
    for stream in [0, STREAM_ID_SPAN, 2 * STREAM_ID_SPAN - 1] {
        let forged = format!("{ns}-{stream}-0");
        let h = f.get(1, Some(&forged));
        assert_eq!(f.seen[&(1, h)].status, Some(400), "{forged}");
        assert!(f.logged(1, h).is_empty());
    }
}

#[test]
fn what_a_claim_brings_to_a_copy_ended_meanwhile_goes_back_to_the_mailbox() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let get = f.get(1, None);
    let sid = f.sid();
    let now = f.now;
    let params = RawJson::from(serde_json::json!({ "level": "info", "data": 1 }));
    let s = f.nodes[0].session_mut(&sid).unwrap();
    s.notify("notifications/message", Some(params), Cause::Unrelated, now)
        .unwrap();
    f.nodes[0].flush(now);
    // Instance 1 hears of it and claims; the claim is held back while the
    // copy there ends (closed by its application).
    let kept = f.pump_holding_back(1);
    assert!(
        kept.iter().any(|op| matches!(op, StoreOp::Claim { .. })),
        "{kept:?}"
    );
    f.nodes[1].session_mut(&sid).unwrap().close(now);
    f.nodes[1].flush(now);
    for op in kept
        .into_iter()
        .chain(std::iter::from_fn(|| f.nodes[1].poll_op()))
    {
        f.store.handle_op(InstanceId(1), op, now);
    }
    f.pump_outputs();
    assert!(
        f.logged(1, get).is_empty(),
        "the GET there ended with its copy"
    );
    // The message went back: the next GET, on instance 0, gets it.
    let again = f.get(0, None);
    assert_eq!(f.logged(0, again), [1]);
}

#[test]
fn relayed_gets_are_bounded_per_instance_and_per_session() {
    // Per instance: relayed_max, then 503.
    let mut f = Fleet::new(2, 64, |c| c.relayed_max = 2);
    f.handshake(0, 0);
    let (id, call) = f.call(0);
    f.progress(0, id, 1);
    let cursor = f.last_id(0, call);
    let a = f.get(1, Some(&cursor));
    let b = f.get(1, Some(&cursor));
    let c = f.get(1, Some(&cursor));
    assert_eq!(f.seen[&(1, a)].status, Some(200));
    assert_eq!(f.seen[&(1, b)].status, Some(200));
    assert_eq!(f.seen[&(1, c)].status, Some(503), "past relayed_max");
    assert_eq!(f.nodes[1].relayed_len(), 2);
    f.close(1, a);
    let d = f.get(1, Some(&cursor));
    assert_eq!(f.seen[&(1, d)].status, Some(200), "a place was freed");

    // Per session: its streams_max (32 by default); a newer one ends the
    // oldest, which is taken over.
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let (id, call) = f.call(0);
    f.progress(0, id, 1);
    let cursor = f.last_id(0, call);
    let gets: Vec<HttpId> = (0..33).map(|_| f.get(1, Some(&cursor))).collect();
    assert_eq!(f.nodes[1].relayed_len(), 32);
    assert_eq!(f.seen[&(1, gets[0])].end, Some(EndReason::TakenOver));
    assert!(gets[1..].iter().all(|h| f.seen[&(1, *h)].end.is_none()));
    // The rest still get what is written.
    f.progress(0, id, 2);
    let got: Vec<u64> = f.seen[&(1, gets[32])]
        .messages()
        .into_iter()
        .filter_map(progress_of)
        .collect();
    assert_eq!(got, [2], "after the cursor (progress 1)");
}

/// Instance `i` asks the client something on the GET `get` it holds;
/// returns the request's id as the client saw it.
fn ask(f: &mut Fleet, i: usize, get: HttpId) -> i64 {
    let sid = f.sid();
    let now = f.now;
    let s = f.nodes[i].session_mut(&sid).expect("held here");
    let (id, _) = s
        .request("roots/list", None, Cause::Unrelated, now)
        .expect("askable");
    f.nodes[i].flush(now);
    f.pump();
    let seen = f.seen[&(i, get)].messages();
    let asked = seen
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Request {
                id: RequestId::Num(n),
                method,
                ..
            } if method == "roots/list" => Some(*n),
            _ => None,
        })
        .expect("the request on the GET");
    assert_eq!(RequestId::Num(asked), id);
    asked
}

fn answers_of(f: &mut Fleet, i: usize) -> Vec<(RequestId, bool)> {
    let mut out = Vec::new();
    while let Some((_, e)) = f.nodes[i].poll_event() {
        if let ServerEvent::Response { id, result } = e {
            out.push((id, result.is_ok()));
        }
    }
    out
}

#[test]
fn an_answer_posted_to_another_instance_reaches_the_one_that_asked() {
    let mut f = Fleet::new(3, 64, |_| {});
    f.handshake(0, 2);
    let get = f.get(1, None);
    let id = ask(&mut f, 1, get);
    assert_eq!(id >> 32, 1, "instance 1's range of request ids");
    let sid = f.sid();
    let answers = mcp_streamable::fleet::LogKey::answers(sid, InstanceId(1));
    assert!(f.store.is_subscribed(&answers, InstanceId(1)), "awaiting");
    // The client posts the answer through the balancer: instance 2.
    let h = f.post(
        2,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"roots":[]}}}}"#),
    );
    assert_eq!(f.seen[&(2, h)].status, Some(202));
    assert_eq!(answers_of(&mut f, 1), [(RequestId::Num(id), true)]);
    assert!(answers_of(&mut f, 2).is_empty(), "not instance 2's");
    assert!(
        !f.store.is_subscribed(&answers, InstanceId(1)),
        "nothing awaited now"
    );
    // An error answer, and one posted to the instance that asked itself.
    let e = ask(&mut f, 1, get);
    let again = ask(&mut f, 1, get);
    f.post(
        0,
        &format!(r#"{{"jsonrpc":"2.0","id":{e},"error":{{"code":-1,"message":"no"}}}}"#),
    );
    f.post(
        1,
        &format!(r#"{{"jsonrpc":"2.0","id":{again},"result":{{}}}}"#),
    );
    let mut got = answers_of(&mut f, 1);
    got.sort_by_key(|(id, _)| format!("{id:?}"));
    let mut want = vec![(RequestId::Num(e), false), (RequestId::Num(again), true)];
    want.sort_by_key(|(id, _)| format!("{id:?}"));
    assert_eq!(got, want);
    // Forwarded twice (a retry through the balancer): delivered once.
    let twice = ask(&mut f, 1, get);
    let body = format!(r#"{{"jsonrpc":"2.0","id":{twice},"result":{{}}}}"#);
    f.post(0, &body);
    f.post(2, &body);
    assert_eq!(answers_of(&mut f, 1), [(RequestId::Num(twice), true)]);
}

#[test]
fn an_answer_posted_before_the_asking_instance_listens_is_not_lost() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let get = f.get(1, None);
    let sid = f.sid();
    let now = f.now;
    // Instance 1 asks; its store connections are held back, so its
    // subscription to its answers is not in effect when the answer lands.
    let s = f.nodes[1].session_mut(&sid).unwrap();
    let (id, _) = s
        .request("roots/list", None, Cause::Unrelated, now)
        .unwrap();
    f.nodes[1].flush(now);
    let kept = f.pump_holding_back(1);
    assert!(kept
        .iter()
        .any(|op| matches!(op, StoreOp::Subscribe { .. })));
    assert!(f.seen[&(1, get)]
        .messages()
        .iter()
        .any(|m| m.id() == Some(&id)));
    let RequestId::Num(n) = id else { panic!() };
    f.post(0, &format!(r#"{{"jsonrpc":"2.0","id":{n},"result":{{}}}}"#));
    assert!(answers_of(&mut f, 1).is_empty());
    for op in kept {
        f.store.handle_op(InstanceId(1), op, now);
    }
    f.pump_outputs();
    assert_eq!(
        answers_of(&mut f, 1),
        [(id, true)],
        "claimed once it listens"
    );
}

/// A cancellation posted to an instance that serves no such call is
/// published on the fleet's cancellations channel; the instance serving the
/// call takes it there: the call's stream ends unanswered, the question
/// asked for it fails to the application, the client is told. Kept where it
/// landed (`Cancellations::WhereLanded`), the call runs on and its question
/// waits.
#[test]
fn a_cancellation_posted_to_another_instance_reaches_the_call() {
    for design in [Cancellations::ToTheCall, Cancellations::WhereLanded] {
        let mut f = Fleet::new(3, 64, |c| c.cancellations = design);
        for node in &mut f.nodes {
            assert!(node.join_cancellations());
            assert!(!node.is_ready(), "until the subscription is in effect");
        }
        f.pump();
        assert!(f.nodes.iter().all(Instance::is_ready));
        f.handshake(0, 0);
        let (id, call) = f.call(1);
        let sid = f.sid();
        let now = f.now;
        let s = f.nodes[1].session_mut(&sid).expect("held here");
        let (asked, _) = s
            .request("roots/list", None, Cause::Request(RequestId::Num(id)), now)
            .expect("askable");
        f.nodes[1].flush(now);
        f.pump();
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
        );
        let h = f.post(2, &cancel);
        assert_eq!(f.seen[&(2, h)].status, Some(202));
        let s = f.nodes[1].endpoint().session(&sid).expect("held here");
        let forwarded = design == Cancellations::ToTheCall;
        assert_eq!(!s.is_serving(&RequestId::Num(id)), forwarded, "{design:?}");
        assert_eq!(!s.awaits_answers(), forwarded, "{design:?}");
        assert_eq!(f.seen[&(1, call)].end.is_some(), forwarded, "{design:?}");
        assert!(
            !f.seen[&(1, call)]
                .messages()
                .iter()
                .any(|m| matches!(m, Message::Response { .. })),
            "never answered"
        );
        let failed: Vec<_> = answers_of(&mut f, 1);
        let want = if forwarded {
            vec![(asked, false)]
        } else {
            vec![]
        };
        assert_eq!(failed, want, "{design:?}: the question fails with its call");
        assert!(answers_of(&mut f, 0).is_empty() && answers_of(&mut f, 2).is_empty());
    }
}

/// Time moves to `ms` for every instance in `alive` (the others are dead:
/// nothing drives them), and the store runs.
fn tick(f: &mut Fleet, ms: u64, alive: &[usize]) {
    f.now = Instant::from_millis(ms);
    for &i in alive {
        f.nodes[i].handle_timeout(f.now);
    }
    f.pump();
}

fn errors_of(m: &Message) -> Option<(i64, i64)> {
    match m {
        Message::Error {
            id: Some(RequestId::Num(id)),
            error,
        } => Some((*id, error.code)),
        _ => None,
    }
}

#[test]
fn a_call_whose_instance_dies_completes_with_an_error_where_it_was_resumed() {
    let mut f = Fleet::new(3, 64, |_| {});
    f.handshake(0, 0);
    tick(&mut f, 0, &[0, 1, 2]); // every instance beats
    let (id, call) = f.call(0);
    f.progress(0, id, 1);
    let cursor = f.last_id(0, call);
    f.close(0, call);
    let a = f.get(1, Some(&cursor));
    let b = f.get(2, Some(&cursor));
    assert_eq!(f.seen[&(1, a)].status, Some(200));
    // Instance 0 still beats: its streams are left alone.
    tick(&mut f, 1000, &[0, 1, 2]);
    tick(&mut f, 2000, &[0, 1, 2]);
    assert_eq!(f.seen[&(1, a)].end, None);
    // Instance 0 dies (nothing drives it from here): past its heartbeat's
    // TTL, instances 1 and 2 each find it dead and complete the call once.
    for ms in [3000, 4000, 5000, 6000] {
        tick(&mut f, ms, &[1, 2]);
    }
    for (i, get) in [(1, a), (2, b)] {
        let seen = &f.seen[&(i, get)];
        let errors: Vec<(i64, i64)> = seen.messages().into_iter().filter_map(errors_of).collect();
        assert_eq!(
            errors,
            [(id, -32603)],
            "instance {i}: the call failed, once"
        );
        assert_eq!(seen.end, Some(EndReason::Complete), "instance {i}");
    }
    let log = log_of(&f, &cursor);
    let ends = f
        .store
        .entries(&log)
        .iter()
        .filter(|e| e.record == mcp_streamable::fleet::Record::End)
        .count();
    assert_eq!(ends, 1, "completed once in the store");
    assert_eq!(f.nodes[1].relayed_len(), 0);
    assert_eq!(f.nodes[2].relayed_len(), 0);
}

#[test]
fn a_stream_its_dead_writer_answered_is_not_completed_again() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    tick(&mut f, 0, &[0, 1]);
    let (id, call) = f.call(0);
    f.progress(0, id, 1);
    let cursor = f.last_id(0, call);
    f.close(0, call);
    f.progress(0, id, 2);
    // The answer is logged, then instance 0 dies before a follower reads it:
    // the follower on 1 is held back until after the writer's death.
    let sid = f.sid();
    let log = log_of(&f, &cursor);
    let s = f.nodes[0].session_mut(&sid).unwrap();
    s.respond(
        &RequestId::Num(id),
        Ok(RawJson::from(serde_json::json!({}))),
        f.now,
    )
    .unwrap();
    f.nodes[0].flush(f.now);
    f.pump();
    assert!(f
        .store
        .entries(&log)
        .iter()
        .any(|e| e.record == mcp_streamable::fleet::Record::End));
    let resumed = f.get(1, Some(&cursor));
    for ms in [1000, 4000, 5000] {
        tick(&mut f, ms, &[1]);
    }
    let seen = &f.seen[&(1, resumed)];
    assert!(
        seen.messages().iter().all(|m| errors_of(m).is_none()),
        "{:?}",
        seen.messages()
    );
    assert!(
        matches!(seen.messages().last(), Some(Message::Response { .. })),
        "the writer's own answer"
    );
    assert_eq!(seen.end, Some(EndReason::Complete));
}

fn records_of(
    f: &Fleet,
    log: &mcp_streamable::fleet::LogKey,
) -> Vec<mcp_streamable::fleet::Record> {
    f.store.entries(log).into_iter().map(|e| e.record).collect()
}

#[test]
fn a_standalone_get_resumed_elsewhere_goes_on_as_the_sessions_get_there() {
    use mcp_streamable::fleet::Record;
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let get = f.get(0, None);
    f.log_message(0, 1);
    let cursor = f.seen[&(0, get)].events[0].0.clone().expect("primed");
    let old = log_of(&f, &cursor);
    // Its GET gone, instance 0 lets go of the stream: the log's last entry
    // says so, and nothing is written after it.
    f.close(0, get);
    assert_eq!(records_of(&f, &old).last(), Some(&Record::Released));
    // Held on instance 0 meanwhile (no GET anywhere): to the mailbox.
    f.log_message(0, 2);
    // Resumed on instance 1 from the priming event: the rest of the log,
    // then, on the same connection, the session's GET there (one head;
    // a new stream's priming event moves the cursor), which takes 2 from
    // the mailbox and then whatever instance 0 emits.
    let resumed = f.get(1, Some(&cursor));
    f.log_message(0, 3);
    f.log_message(1, 4);
    assert_eq!(f.logged(1, resumed), [1, 2, 3, 4]);
    let seen = &f.seen[&(1, resumed)];
    assert_eq!(seen.status, Some(200));
    assert_eq!(seen.end, None);
    let streams: Vec<u32> = seen
        .events
        .iter()
        .filter_map(|(id, _)| id.as_deref().map(stream_of))
        .collect();
    assert_eq!(
        streams.first(),
        Some(&stream_of(&cursor)),
        "the old stream's rest first"
    );
    let new = *streams.last().expect("events");
    assert_ne!(new, stream_of(&cursor), "then a stream of instance 1");
    assert!(
        streams.iter().skip_while(|&&s| s != new).all(|&s| s == new),
        "{streams:?}"
    );
    // The new stream is logged like any: cut again, it resumes anywhere.
    let cursor = f.last_id(1, resumed);
    f.close(1, resumed);
    let again = f.get(0, Some(&cursor));
    f.log_message(1, 5);
    assert_eq!(f.logged(0, again), [5]);
}

#[test]
fn a_standalone_get_resumed_where_it_was_written_goes_on_there_too() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let get = f.get(0, None);
    f.log_message(0, 1);
    let cursor = f.seen[&(0, get)].events[0].0.clone().expect("primed");
    f.close(0, get);
    f.log_message(0, 2);
    let resumed = f.get(0, Some(&cursor));
    f.log_message(0, 3);
    assert_eq!(f.logged(0, resumed), [1, 2, 3]);
    assert_eq!(
        f.nodes[0].relayed_len(),
        0,
        "not followed: the session's GET"
    );
    // What went on after the resumption is logged too (a new stream: the
    // released one is never written again), so a resumption on the other
    // instance gets what was emitted after the cut.
    let cursor = f.last_id(0, resumed);
    f.close(0, resumed);
    f.log_message(0, 4);
    let elsewhere = f.get(1, Some(&cursor));
    assert_eq!(f.logged(1, elsewhere), [4]);
}

#[test]
fn a_standalone_stream_whose_writer_died_is_released_where_it_was_resumed() {
    use mcp_streamable::fleet::Record;
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    tick(&mut f, 0, &[0, 1]);
    let get = f.get(0, None);
    f.log_message(0, 1);
    let cursor = f.last_id(0, get);
    let old = log_of(&f, &cursor);
    // Instance 0 dies with its GET (it never learns the connection went).
    f.dead.push(0);
    let resumed = f.get(1, Some(&cursor));
    f.log_message(1, 2);
    assert_eq!(
        f.logged(1, resumed),
        Vec::<u64>::new(),
        "2 waits in the mailbox"
    );
    for ms in [1000, 2000, 3000, 4000, 5000] {
        tick(&mut f, ms, &[1]);
    }
    assert_eq!(records_of(&f, &old).last(), Some(&Record::Released));
    assert_eq!(
        f.logged(1, resumed),
        [2],
        "released: the session's GET here"
    );
    assert_eq!(f.nodes[1].relayed_len(), 0);
    assert!(
        !f.nodes[1].is_watching(),
        "the dead writer is not asked about again"
    );
}

#[test]
fn under_follow_log_a_resumed_standalone_get_only_follows_and_the_dead_writer_is_asked_about_once()
{
    use mcp_streamable::fleet::Record;
    use mcp_streamable::policy::ResumedGet;
    let mut f = Fleet::new(2, 64, |c| c.resumed = ResumedGet::FollowLog);
    f.handshake(0, 0);
    tick(&mut f, 0, &[0, 1]);
    let get = f.get(0, None);
    let cursor = f.last_id(0, get);
    let old = log_of(&f, &cursor);
    f.close(0, get);
    assert!(!records_of(&f, &old).contains(&Record::Released));
    let resumed = f.get(1, Some(&cursor));
    f.log_message(1, 1);
    for ms in [1000, 2000, 3000, 4000, 5000, 6000, 7000] {
        tick(&mut f, ms, &[1]);
    }
    assert_eq!(f.logged(1, resumed), Vec::<u64>::new(), "the known flaw");
    assert_eq!(f.nodes[1].relayed_len(), 1, "still following");
    assert!(
        !f.nodes[1].is_watching(),
        "found dead once, not asked about again"
    );
}

#[test]
fn a_message_trimmed_from_the_mailbox_before_any_take_is_reported_dropped() {
    use mcp_streamable::server::DropReason;
    // The store keeps 2 entries a log; no GET anywhere, three messages.
    let mut f = Fleet::new(2, 2, |_| {});
    f.handshake(0, 0);
    for n in 1..=3 {
        f.log_message(0, n);
    }
    let dropped: Vec<DropReason> = std::iter::from_fn(|| f.nodes[0].poll_event())
        .filter_map(|(_, e)| match e {
            ServerEvent::Dropped { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(dropped, [DropReason::MailboxFull], "the oldest, once");
    let get = f.get(1, None);
    assert_eq!(f.logged(1, get), [2, 3]);
}

#[test]
fn a_call_resumed_on_its_own_instance_is_served_there_not_from_the_log() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let (id, call) = f.call(0);
    f.progress(0, id, 1);
    // Resumed while its first connection seems alive: taken over here.
    let cursor = f.last_id(0, call);
    let again = f.get(0, Some(&cursor));
    assert_eq!(f.seen[&(0, call)].end, Some(EndReason::TakenOver));
    assert_eq!(f.nodes[0].relayed_len(), 0);
    // Cut, then resumed here again: still the endpoint's own stream.
    let cursor = f.last_id(0, again);
    f.close(0, again);
    f.progress(0, id, 2);
    let last = f.get(0, Some(&cursor));
    assert_eq!(f.nodes[0].relayed_len(), 0);
    f.respond(0, id);
    let seen = &f.seen[&(0, last)];
    let progress: Vec<u64> = seen
        .messages()
        .into_iter()
        .filter_map(progress_of)
        .collect();
    assert_eq!(progress, [2]);
    assert_eq!(seen.end, Some(EndReason::Complete));
}

/// A call answered on a connection its instance took for live may have
/// lost its answer with that connection: resumed on the same instance, the
/// kept stream replays it, as the endpoint alone does, with nothing relayed.
#[test]
fn a_finished_stream_resumed_on_its_own_instance_replays_from_what_it_kept() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let (id, call) = f.call(0);
    let cursor = f.last_id(0, call);
    f.respond(0, id);
    assert_eq!(f.seen[&(0, call)].end, Some(EndReason::Complete));
    let late = f.get(0, Some(&cursor));
    let seen = &f.seen[&(0, late)];
    assert_eq!(seen.status, Some(200), "as the endpoint alone");
    assert!(seen.messages().iter().any(|m| m.is_response()), "{seen:?}");
    assert_eq!(f.nodes[0].relayed_len(), 0);
}

#[test]
fn only_the_dead_writers_calls_are_completed() {
    let mut f = Fleet::new(3, 64, |_| {});
    f.handshake(0, 0);
    tick(&mut f, 0, &[0, 1, 2]);
    let (a, call_a) = f.call(0);
    let (b, call_b) = f.call(2);
    f.progress(0, a, 1);
    f.progress(2, b, 1);
    let (cursor_a, cursor_b) = (f.last_id(0, call_a), f.last_id(2, call_b));
    f.close(0, call_a);
    f.close(2, call_b);
    let ra = f.get(1, Some(&cursor_a));
    let rb = f.get(1, Some(&cursor_b));
    // Instance 0 dies; instance 2 beats on.
    f.dead.push(0);
    for ms in [1000, 2000, 3000, 4000, 5000, 6000] {
        tick(&mut f, ms, &[1, 2]);
    }
    let errors = |f: &Fleet, h| -> Vec<(i64, i64)> {
        f.seen[&(1, h)]
            .messages()
            .into_iter()
            .filter_map(errors_of)
            .collect()
    };
    assert_eq!(errors(&f, ra), [(a, -32603)]);
    assert_eq!(errors(&f, rb), [], "instance 2 lives: its call goes on");
    assert_eq!(f.seen[&(1, rb)].end, None);
    f.respond(2, b);
    assert_eq!(f.seen[&(1, rb)].end, Some(EndReason::Complete));
    assert_eq!(errors(&f, rb), []);
}

/// A copy that ended on an instance (closed by its application there, or
/// its idle timer) while the session lives on is taken up again by the next
/// request landing there. The new copy numbers its streams and its requests
/// to the client in a slice of the instance's ranges of its own: it neither
/// appends to the logs the first copy left nor reuses the ids of requests
/// the client may still answer.
#[test]
fn a_copy_taken_up_again_numbers_streams_and_requests_afresh() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 0);
    let sid = f.sid();
    let (first_call, first) = f.call(1);
    f.progress(1, first_call, 1);
    let first_cursor = f.last_id(1, first);
    let first_get = f.get(1, None);
    let first_asked = ask(&mut f, 1, first_get);
    let now = f.now;
    f.nodes[1].session_mut(&sid).unwrap().close(now);
    f.nodes[1].flush(now);
    f.pump();
    let first_log = f.store.entries(&log_of(&f, &first_cursor));
    // Taken up again on instance 1.
    let (second_call, second) = f.call(1);
    f.progress(1, second_call, 2);
    let second_cursor = f.last_id(1, second);
    let second_get = f.get(1, None);
    let second_asked = ask(&mut f, 1, second_get);
    let range = STREAM_ID_SPAN..2 * STREAM_ID_SPAN;
    let (a, b) = (stream_of(&first_cursor), stream_of(&second_cursor));
    assert!(range.contains(&a) && range.contains(&b), "{a} {b}");
    assert_ne!(a, b, "a stream of its own");
    assert_eq!(
        f.store.entries(&log_of(&f, &first_cursor)),
        first_log,
        "nothing appended to the first copy's log"
    );
    let second_log = f.store.entries(&log_of(&f, &second_cursor));
    assert_eq!(second_log.first().map(|e| e.seq), Some(1), "{second_log:?}");
    assert_ne!(first_asked, second_asked, "request ids of its own");
    assert_eq!(
        (first_asked >> 32, second_asked >> 32),
        (1, 1),
        "both in instance 1's range: the answer still names who asked"
    );
    // Only the two take-ups were counted, not every request that found a
    // copy held (each count spent brings the slices round sooner).
    let count = StoreOp::LoadSession {
        session: sid,
        adopt: true,
    };
    f.store.handle_op(InstanceId(0), count, f.now);
    let counted = std::iter::from_fn(|| f.store.poll_output()).find_map(|(_, o)| match o {
        Output::Reply(StoreReply::Session { adoption, .. }) => Some(adoption),
        _ => None,
    });
    assert_eq!(counted, Some(3), "two adoptions, then this one");
}

/// How many `notifications/tools/list_changed` exchange `http` of
/// instance `i` showed.
fn list_changes(f: &Fleet, i: usize, http: HttpId) -> usize {
    f.seen.get(&(i, http)).map_or(0, |s| {
        s.messages()
            .into_iter()
            .filter(|m| m.method() == Some("notifications/tools/list_changed"))
            .count()
    })
}

fn broadcast_on(f: &mut Fleet, i: usize) {
    let now = f.now;
    f.nodes[i].broadcast("notifications/tools/list_changed", None, now);
    f.pump();
}

#[test]
fn a_broadcast_reaches_every_session_of_the_fleet_once() {
    let mut f = Fleet::new(3, 64, |_| {});
    for node in &mut f.nodes {
        assert!(node.join_broadcasts());
        assert!(!node.join_broadcasts(), "once");
    }
    f.pump();
    assert_eq!(f.nodes[0].subscriptions_len(), 1, "the broadcast channel");
    // A: copies on 0 (its initialize) and 1 (its GET).
    f.handshake(0, 1);
    let a = f.get(1, None);
    // B: on 2 alone.
    f.handshake(2, 2);
    let b = f.get(2, None);
    // C: on 1, with no GET anywhere yet.
    f.handshake(1, 1);
    broadcast_on(&mut f, 0);
    assert_eq!(list_changes(&f, 1, a), 1, "A once, though 0 and 1 hold it");
    assert_eq!(list_changes(&f, 2, b), 1, "B, which 0 never saw");
    // C's waits in its mailbox for its GET, wherever it opens.
    let c = f.get(2, None);
    assert_eq!(list_changes(&f, 2, c), 1, "C once, when its GET came");
    // Another, from the instance holding B's GET.
    broadcast_on(&mut f, 2);
    assert_eq!(
        [
            list_changes(&f, 1, a),
            list_changes(&f, 2, b),
            list_changes(&f, 2, c)
        ],
        [2, 2, 2]
    );
    for node in &f.nodes {
        assert_eq!(node.broadcasts_dropped(), 0);
    }
}

#[test]
fn without_joining_a_broadcast_reaches_the_sessions_held_where_it_was_made() {
    let mut f = Fleet::new(2, 64, |_| {});
    f.handshake(0, 1);
    let a = f.get(1, None);
    f.handshake(1, 1);
    let b = f.get(1, None);
    // Instance 0 holds A (no GET there: through A's mailbox), not B.
    broadcast_on(&mut f, 0);
    assert_eq!((list_changes(&f, 1, a), list_changes(&f, 1, b)), (1, 0));
}

#[test]
fn a_broadcast_claim_is_taken_once_and_never_for_a_session_gone() {
    let mut store = MemoryStore::new(8);
    let sid = SessionId::from_bits(9);
    let claim = |store: &mut MemoryStore, from: u16, id: u64, now: u64| {
        store.handle_op(
            InstanceId(from),
            StoreOp::ClaimDelivery {
                session: sid.clone(),
                id,
                ttl_ms: 100,
            },
            Instant::from_millis(now),
        );
        match store.poll_output() {
            Some((_, Output::Reply(StoreReply::Delivery { won, .. }))) => won,
            other => panic!("a delivery reply, not {other:?}"),
        }
    };
    assert!(!claim(&mut store, 0, 1, 0), "no such session in this store");
    store.handle_op(
        InstanceId(0),
        StoreOp::PutSession {
            session: sid.clone(),
            record: "r".to_owned().into(),
            ttl_ms: 1000,
        },
        Instant::ZERO,
    );
    store.poll_output();
    assert!(claim(&mut store, 0, 1, 0), "the first asks: taken");
    assert!(!claim(&mut store, 1, 1, 10), "the second: already taken");
    assert!(
        claim(&mut store, 1, 2, 10),
        "another broadcast: its own claim"
    );
    assert!(!claim(&mut store, 0, 1, 99), "kept up to its TTL");
    assert!(claim(&mut store, 0, 1, 100), "and forgotten after it");
    assert!(!claim(&mut store, 0, 3, 1000), "the session expired");
}

#[test]
fn broadcasts_past_pending_max_are_given_up_oldest_first_and_counted() {
    let mut f = Fleet::new(2, 64, |c| c.broadcasts_pending_max = 1);
    for node in &mut f.nodes {
        node.join_broadcasts();
    }
    f.pump();
    f.handshake(0, 0);
    let get = f.get(0, None);
    // Two broadcasts before the store answers the first's claim.
    let now = f.now;
    f.nodes[0].broadcast("notifications/tools/list_changed", None, now);
    let params = RawJson::from(serde_json::json!({"second": true}));
    f.nodes[0].broadcast("notifications/tools/list_changed", Some(params), now);
    assert_eq!(f.nodes[0].broadcasts_dropped(), 1, "the first one's claim");
    f.pump();
    assert_eq!(list_changes(&f, 0, get), 1, "the second alone");
    let seen = f.seen[&(0, get)].messages();
    let last = seen.last().expect("a notification").to_json();
    assert!(last.contains("second"), "{last}");
    assert_eq!(f.nodes[1].broadcasts_dropped(), 0);
}

#[test]
fn a_v2026_listen_gets_a_broadcast_made_on_another_instance_unclaimed() {
    let mut f = Fleet::new(2, 64, |_| {});
    for node in &mut f.nodes {
        node.join_broadcasts();
    }
    f.pump();
    let head = RequestHead::post(None, None)
        .with("mcp-protocol-version", "2026-07-28")
        .with("mcp-method", "subscriptions/listen");
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let listen = f.request(1, head, body);
    assert_eq!(f.seen[&(1, listen)].status, Some(200));
    // Made on 0, which holds no listen: none got it there at once.
    let now = f.now;
    let here = f.nodes[0].broadcast("notifications/tools/list_changed", None, now);
    assert_eq!(here, 0);
    f.pump();
    assert_eq!(list_changes(&f, 1, listen), 1, "through the channel");
    // Made on 1, which holds it: at once, and once.
    let here = f.nodes[1].broadcast("notifications/tools/list_changed", None, now);
    assert_eq!(here, 1);
    f.pump();
    assert_eq!(list_changes(&f, 1, listen), 2);
    assert!(
        f.store
            .entries(&mcp_streamable::fleet::LogKey::broadcasts())
            .is_empty(),
        "the channel is publications only"
    );
}

#[test]
fn a_copy_not_yet_ready_takes_no_claim_its_ready_sibling_needs() {
    let mut f = Fleet::new(2, 64, |_| {});
    for node in &mut f.nodes {
        node.join_broadcasts();
    }
    f.pump();
    // The copy that answered `initialize` (on 0) never hears of the
    // `initialized` posted to 1: it is not ready; 1's copy is, with the GET.
    f.handshake_losing_the_announcement(0, 1);
    let get = f.get(1, None);
    // Made on 0, whose claim would go out first: only 1's copy claims.
    broadcast_on(&mut f, 0);
    assert_eq!(list_changes(&f, 1, get), 1);
}

#[test]
fn requests_wait_until_the_broadcast_subscription_is_confirmed_then_go_in_order() {
    // Found by the fleet world (`world_broadcast_elsewhere`): a GET taken
    // up before this instance's subscription reached the store missed a
    // broadcast another instance published meanwhile.
    let mut f = Fleet::new(2, 64, |c| c.parked_max = 2);
    assert!(f.nodes[1].is_ready(), "not joined: ready");
    f.nodes[1].join_broadcasts();
    assert!(!f.nodes[1].is_ready());
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let a = f.request_unpumped(1, RequestHead::post(None, None), body);
    let gone = f.request_unpumped(1, RequestHead::post(None, None), body);
    assert_eq!(f.nodes[1].early_len(), 2);
    let refused = f.request_unpumped(1, RequestHead::post(None, None), body);
    assert_eq!(f.seen[&(1, refused)].status, Some(503), "past parked_max");
    let now = f.now;
    f.nodes[1].handle_http_closed(gone, now);
    assert_eq!(f.nodes[1].early_len(), 1, "its client left: forgotten");
    assert!(
        !f.seen.contains_key(&(1, a)),
        "nothing before the store's word"
    );
    f.pump();
    assert!(f.nodes[1].is_ready());
    assert_eq!(f.nodes[1].early_len(), 0);
    assert_eq!(f.requests(1).len(), 1, "the initialize, taken up once");
    assert!(!f.seen.contains_key(&(1, gone)), "never served");
}

#[test]
fn every_copy_delivers_twice_and_instance_only_misses_sessions_held_elsewhere() {
    use mcp_streamable::fleet::BroadcastDelivery;
    // A: copies on 0 (its initialize) and 1 (its GET), as in the test above.
    let run = |delivery: BroadcastDelivery| {
        let mut f = Fleet::new(2, 64, |c| c.broadcast = delivery);
        for node in &mut f.nodes {
            node.join_broadcasts();
        }
        f.pump();
        f.handshake(0, 1);
        let a = f.get(1, None);
        broadcast_on(&mut f, 0);
        list_changes(&f, 1, a)
    };
    assert_eq!(run(BroadcastDelivery::Claimed), 1);
    assert_eq!(run(BroadcastDelivery::EveryCopy), 2, "each copy, unclaimed");
    let mut f = Fleet::new(2, 64, |c| c.broadcast = BroadcastDelivery::InstanceOnly);
    for node in &mut f.nodes {
        node.join_broadcasts();
    }
    f.pump();
    f.handshake(1, 1);
    let b = f.get(1, None);
    broadcast_on(&mut f, 0);
    assert_eq!(list_changes(&f, 1, b), 0, "0 holds no copy of B");
    broadcast_on(&mut f, 1);
    assert_eq!(list_changes(&f, 1, b), 1);
}
