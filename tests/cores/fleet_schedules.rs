//! `fleet::Instance` under random schedules: each instance's two store
//! connections are FIFOs each way, and the store runs the head of any of
//! them at any time, interleaved with the application writing, the client's
//! connection dropping and its resumption landing on either instance. What
//! the client sees over both of its connections must be every progress
//! notification once, in order, then the response, then the end
//! (properties F1–F3 of `docs/properties.md`, end to end through the
//! instances).

use mcp_streamable::fleet::instance::{Instance, InstanceConfig};
use mcp_streamable::fleet::store::{MemoryStore, Output};
use mcp_streamable::fleet::{Conn, InstanceId, Push, Relay, StoreOp, StoreReply};
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::{HttpId, RequestId, SessionId};
use mcp_streamable::jsonrpc::{Message, RawJson};
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::server::{
    Cause, EndReason, EndpointConfig, RequestHead, ServerEvent, TransmitKind,
};
use mcp_streamable::time::Instant;
use mcp_streamable::version::ProtocolVersion;
use proptest::prelude::*;
use std::collections::{BTreeMap, VecDeque};

const NODES: usize = 2;

/// The fleet with its connections in flight.
struct World {
    store: MemoryStore,
    nodes: Vec<Instance>,
    to_store: BTreeMap<(usize, Conn), VecDeque<StoreOp>>,
    replies: Vec<VecDeque<StoreReply>>,
    pushes: Vec<VecDeque<Push>>,
    now: Instant,
    seen: BTreeMap<(usize, HttpId), Seen>,
}

/// What one exchange showed its client: status, messages, end.
type Seen = (Option<u16>, Vec<Message>, Option<EndReason>);

impl World {
    fn new(relay: Relay) -> Self {
        let nodes = (0..NODES)
            .map(|i| {
                let c = InstanceConfig {
                    id: InstanceId(i as u16),
                    follower_pending_max: 2,
                    relay,
                    ..InstanceConfig::default()
                };
                let ids = IdSource::reproducible(i as u64 + 1);
                Instance::new(c, EndpointConfig::default(), ServerPolicy::FIXED, ids).unwrap()
            })
            .collect();
        World {
            store: MemoryStore::new(64),
            nodes,
            to_store: BTreeMap::new(),
            replies: vec![VecDeque::new(); NODES],
            pushes: vec![VecDeque::new(); NODES],
            now: Instant::ZERO,
            seen: BTreeMap::new(),
        }
    }

    /// Moves every instance's outputs onto the wires and to the clients.
    fn collect(&mut self) {
        for (i, node) in self.nodes.iter_mut().enumerate() {
            while let Some(op) = node.poll_op() {
                self.to_store
                    .entry((i, op.conn()))
                    .or_default()
                    .push_back(op);
            }
            while let Some(t) = node.poll_transmit() {
                let seen = self.seen.entry((i, t.http)).or_default();
                match t.kind {
                    TransmitKind::Head(h) => seen.0 = Some(h.status),
                    TransmitKind::Json(m) => seen.1.push(m),
                    TransmitKind::Event {
                        message: Some(o), ..
                    } => seen.1.push(o.message.clone()),
                    TransmitKind::End(r) => seen.2 = Some(r),
                    _ => {}
                }
            }
        }
    }

    /// What could move now: a connection's head op to the store, or the
    /// head reply or push to an instance.
    fn steps(&self) -> Vec<Step> {
        let mut out = Vec::new();
        for (&(i, conn), q) in &self.to_store {
            if !q.is_empty() {
                out.push(Step::Execute(i, conn));
            }
        }
        for i in 0..NODES {
            if !self.replies[i].is_empty() {
                out.push(Step::Reply(i));
            }
            if !self.pushes[i].is_empty() {
                out.push(Step::Push(i));
            }
        }
        out
    }

    fn run(&mut self, step: Step) {
        match step {
            Step::Execute(i, conn) => {
                let op = self
                    .to_store
                    .get_mut(&(i, conn))
                    .unwrap()
                    .pop_front()
                    .unwrap();
                self.store.handle_op(InstanceId(i as u16), op, self.now);
                while let Some((to, out)) = self.store.poll_output() {
                    let to = usize::from(to.0);
                    match out {
                        Output::Reply(r) => self.replies[to].push_back(r),
                        Output::Push(p) => self.pushes[to].push_back(p),
                    }
                }
            }
            Step::Reply(i) => {
                let r = self.replies[i].pop_front().unwrap();
                self.nodes[i].handle_reply(r, self.now);
            }
            Step::Push(i) => {
                let p = self.pushes[i].pop_front().unwrap();
                self.nodes[i].handle_push(p, self.now);
            }
        }
        self.collect();
    }

    /// Runs the store steps `choices` pick, one per choice.
    fn shuffle(&mut self, choices: &mut impl Iterator<Item = u8>, n: usize) {
        for _ in 0..n {
            let steps = self.steps();
            let Some(c) = choices.next() else { return };
            if steps.is_empty() {
                return;
            }
            self.run(steps[usize::from(c) % steps.len()]);
        }
    }

    /// Everything in flight, delivered.
    fn settle(&mut self) {
        while let Some(&s) = self.steps().first() {
            self.run(s);
        }
    }

    fn request(&mut self, i: usize, head: RequestHead, body: &str) -> HttpId {
        let http = self.nodes[i].handle_request(
            &head,
            body.as_bytes(),
            &mcp_streamable::principal::Caller::default(),
            self.now,
        );
        self.collect();
        http
    }

    fn with_session(
        &mut self,
        i: usize,
        sid: &SessionId,
        f: impl FnOnce(&mut mcp_streamable::server::ServerSession, Instant),
    ) {
        let now = self.now;
        f(self.nodes[i].session_mut(sid).expect("held"), now);
        self.nodes[i].flush(now);
        self.collect();
    }
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Execute(usize, Conn),
    Reply(usize),
    Push(usize),
}

fn ok() -> Result<RawJson, mcp_streamable::jsonrpc::ErrorObject> {
    Ok(RawJson::from(serde_json::json!({})))
}

/// One session opened on instance 0, a call on `writer` writing `n`
/// progress notifications and its answer, the client dropping its
/// connection after `drop_after` of them and resuming on `reader`; the
/// store's steps interleaved as `choices` say.
fn scenario(
    relay: Relay,
    writer: usize,
    reader: usize,
    n: u32,
    drop_after: u32,
    choices: Vec<u8>,
) -> Result<(), String> {
    let mut w = World::new(relay);
    let mut choices = choices.into_iter();
    let v = ProtocolVersion::LATEST;
    // The handshake settled at once: the schedule is the call's.
    let sid = open_session(&mut w, 0, &mut std::iter::empty());
    w.settle();

    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}"#;
    let first = w.request(writer, RequestHead::post(Some(&sid), Some(v)), call);
    w.settle();
    let mut got_call = false;
    while let Some((_, e)) = w.nodes[writer].poll_event() {
        got_call |= matches!(e, ServerEvent::Request { .. });
    }
    assert!(got_call);
    let mut resumed = None;
    for k in 1..=n {
        if k == drop_after + 1 {
            resumed = Some(drop_and_resume(&mut w, writer, reader, first, &sid));
        }
        w.with_session(writer, &sid, |s, now| {
            let params = RawJson::from(serde_json::json!({ "progress": k }));
            s.notify(
                "notifications/progress",
                Some(params),
                Cause::Request(RequestId::Num(2)),
                now,
            )
            .unwrap();
        });
        w.shuffle(&mut choices, 3);
    }
    let resumed = resumed.unwrap_or_else(|| drop_and_resume(&mut w, writer, reader, first, &sid));
    w.with_session(writer, &sid, |s, now| {
        s.respond(&RequestId::Num(2), ok(), now).unwrap();
    });
    w.shuffle(&mut choices, 64);
    w.settle();

    let before = &w.seen[&(writer, first)].1;
    let (status, after, end) = &w.seen[&resumed];
    ensure(*status == Some(200), || {
        format!("resumption answered {status:?}")
    })?;
    let all: Vec<&Message> = before.iter().chain(after.iter()).collect();
    let progress: Vec<u64> = all
        .iter()
        .filter_map(|m| match m {
            Message::Notification { params, .. } => {
                params.as_ref()?.to_value()["progress"].as_u64()
            }
            _ => None,
        })
        .collect();
    let expected: Vec<u64> = (1..=u64::from(n)).collect();
    ensure(progress == expected, || {
        format!("each once, in order (F1, F2, F3): {progress:?}")
    })?;
    ensure(
        matches!(
            all.last(),
            Some(Message::Response {
                id: RequestId::Num(2),
                ..
            })
        ),
        || format!("the response last: {all:?}"),
    )?;
    ensure(*end == Some(EndReason::Complete), || {
        format!("ended {end:?}")
    })?;
    for node in &w.nodes {
        ensure(
            node.relayed_len() + node.subscriptions_len() + node.parked_len() == 0,
            || "an instance still follows, subscribes or parks".into(),
        )?;
    }
    Ok(())
}

/// A session opened on instance 0; a GET on `first_get`, and on
/// `second_get` if given; `n` unrelated messages, message k emitted on
/// instance `emitters >> k & 1`; after `drop_after` of them the first GET's
/// connection closes and a GET opens on `third_get`; the store's steps
/// interleaved as `choices` say. Over the GETs every message arrives once:
/// each mailbox entry is claimed by one instance, and a claim whose GET went
/// meanwhile hands its entries back.
#[allow(clippy::too_many_arguments)]
fn mailbox_scenario(
    initialized_on: usize,
    first_get: usize,
    second_get: Option<usize>,
    third_get: usize,
    n: u64,
    emitters: u8,
    drop_after: u64,
    choices: Vec<u8>,
) -> Result<(), String> {
    let mut w = World::new(Relay::Ordered);
    let mut choices = choices.into_iter();
    let sid = open_session(&mut w, initialized_on, &mut choices);
    let v = ProtocolVersion::LATEST;
    // Instance 1 takes the session up (a ping lands there), so the
    // application there can emit for it.
    let ping = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
    w.request(1, RequestHead::post(Some(&sid), Some(v)), ping);
    w.settle();
    let mut gets = vec![(
        first_get,
        w.request(first_get, RequestHead::get(&sid, v, None), ""),
    )];
    if let Some(i) = second_get {
        gets.push((i, w.request(i, RequestHead::get(&sid, v, None), "")));
    }
    w.shuffle(&mut choices, 4);
    for k in 1..=n {
        if k == drop_after + 1 {
            let (i, http) = gets[0];
            w.nodes[i].handle_http_closed(http, w.now);
            w.collect();
            w.shuffle(&mut choices, 2);
            gets.push((
                third_get,
                w.request(third_get, RequestHead::get(&sid, v, None), ""),
            ));
        }
        let emitter = usize::from(emitters >> k & 1);
        w.with_session(emitter, &sid, |s, now| {
            let params = RawJson::from(serde_json::json!({ "level": "info", "data": k }));
            s.notify("notifications/message", Some(params), Cause::Unrelated, now)
                .unwrap();
        });
        w.shuffle(&mut choices, 3);
    }
    if drop_after >= n {
        // The drop comes after the last message.
        let (i, http) = gets[0];
        w.nodes[i].handle_http_closed(http, w.now);
        w.collect();
        gets.push((
            third_get,
            w.request(third_get, RequestHead::get(&sid, v, None), ""),
        ));
    }
    w.shuffle(&mut choices, 64);
    w.settle();
    let mut got: Vec<u64> = Vec::new();
    for (n, key) in gets.iter().enumerate() {
        let Some((status, messages, _)) = w.seen.get(key) else {
            // The first GET, closed while still parked: never served.
            ensure(n == 0, || format!("GET {key:?} unanswered"))?;
            continue;
        };
        ensure(*status == Some(200), || {
            format!("GET {key:?} answered {status:?}")
        })?;
        got.extend(messages.iter().filter_map(|m| match m {
            Message::Notification { params, .. } => params.as_ref()?.to_value()["data"].as_u64(),
            _ => None,
        }));
    }
    got.sort_unstable();
    let expected: Vec<u64> = (1..=n).collect();
    ensure(got == expected, || {
        format!("every message once over the GETs: {got:?}")
    })?;
    for node in &w.nodes {
        ensure(node.parked_len() == 0, || "a request still parked".into())?;
    }
    let creator = w.nodes[0].endpoint().session(&sid);
    ensure(creator.is_some_and(|s| s.is_initialized()), || {
        "the copy that answered initialize is not ready".into()
    })?;
    Ok(())
}

/// `initialize` on instance 0 and `notifications/initialized` on
/// `initialized_on`, the store's steps between as `choices` say.
fn open_session(
    w: &mut World,
    initialized_on: usize,
    choices: &mut impl Iterator<Item = u8>,
) -> SessionId {
    let v = ProtocolVersion::LATEST;
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{v}","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    );
    let http = w.request(0, RequestHead::post(None, None), &init);
    let sid = w.nodes[0].endpoint().route(http).cloned().unwrap();
    w.with_session(0, &sid, |s, now| {
        s.respond(&RequestId::Num(1), ok(), now).unwrap();
    });
    // The client sends `initialized` once it has the answer.
    while !w.seen.contains_key(&(0, http)) {
        let Some(c) = choices.next() else {
            w.settle();
            break;
        };
        let steps = w.steps();
        if steps.is_empty() {
            break;
        }
        w.run(steps[usize::from(c) % steps.len()]);
    }
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    w.request(initialized_on, RequestHead::post(Some(&sid), Some(v)), note);
    w.shuffle(choices, 4);
    for node in &mut w.nodes {
        while node.poll_event().is_some() {}
    }
    sid
}

fn ensure(holds: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if holds {
        Ok(())
    } else {
        Err(why())
    }
}

/// The client's connection drops; it resumes on `reader` from the last id
/// it saw (the stream's priming event at least).
fn drop_and_resume(
    w: &mut World,
    writer: usize,
    reader: usize,
    first: HttpId,
    sid: &SessionId,
) -> (usize, HttpId) {
    w.collect();
    let last = last_event_id(w, writer, first);
    w.nodes[writer].handle_http_closed(first, w.now);
    w.collect();
    let head = RequestHead::get(sid, ProtocolVersion::LATEST, Some(&last));
    (reader, w.request(reader, head, ""))
}

fn last_event_id(w: &mut World, writer: usize, first: HttpId) -> String {
    // The ids the client saw on its first connection are re-derived from
    // the messages it got: the priming event's id is 1, each message one
    // more (the stream numbers every event).
    let seen = w.seen[&(writer, first)].1.len() as u64;
    let sid = w.nodes[writer].endpoint().route(first).cloned().unwrap();
    let s = w.nodes[writer].endpoint().session(&sid).unwrap();
    let stream = s.streams().find(|st| !st.is_standalone()).unwrap().id;
    s.render_event_id(mcp_streamable::ids::EventId {
        stream,
        seq: 1 + seen,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_resumed_call_sees_everything_once_in_order_on_any_schedule(
        writer in 0..NODES,
        reader in 0..NODES,
        n in 1u32..5,
        drop_after in 0u32..5,
        choices in proptest::collection::vec(any::<u8>(), 0..96),
    ) {
        let verdict = scenario(Relay::Ordered, writer, reader, n, drop_after.min(n), choices);
        prop_assert_eq!(verdict, Ok(()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn unrelated_messages_reach_the_gets_once_on_any_schedule(
        initialized_on in 0..NODES,
        first_get in 0..NODES,
        second_get in proptest::option::of(0..NODES),
        third_get in 0..NODES,
        n in 1u64..6,
        emitters in any::<u8>(),
        drop_after in 0u64..7,
        choices in proptest::collection::vec(any::<u8>(), 0..128),
    ) {
        let verdict =
            mailbox_scenario(initialized_on, first_get, second_get, third_get, n, emitters, drop_after, choices);
        prop_assert_eq!(verdict, Ok(()));
    }
}

#[test]
fn the_same_on_fixed_schedules_both_ways() {
    for writer in 0..NODES {
        for reader in 0..NODES {
            for drop_after in 0..=3 {
                for choices in [vec![], (0..=255).collect()] {
                    let v = scenario(Relay::Ordered, writer, reader, 3, drop_after, choices);
                    assert_eq!(
                        v,
                        Ok(()),
                        "writer {writer} reader {reader} drop {drop_after}"
                    );
                }
            }
        }
    }
}

/// The naive relays of `docs/fleets.md` are caught end to end: some
/// schedule of a few hundred (a fixed pseudo-random sequence) loses or
/// repeats a notification.
#[test]
fn the_naive_relays_are_caught_through_the_instances() {
    for relay in [Relay::SubscribeThenReplay, Relay::ReplayThenSubscribe] {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let caught = (0..500).find_map(|_| {
            let r = next();
            let choices = (0..96).map(|_| next() as u8).collect();
            let drop_after = (r % 4) as u32;
            scenario(relay, 0, 1, 3, drop_after, choices).err()
        });
        let why = caught.unwrap_or_else(|| panic!("{relay:?} not caught in 500 schedules"));
        assert!(
            why.contains("F1, F2, F3") || why.contains("last"),
            "{relay:?}: {why}"
        );
    }
}
