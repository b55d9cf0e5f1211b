//! What the monitor remembers of one client (C2–C5, and the client's half of
//! I1). Each client of a run has its own: request ids are per client, so two
//! clients that both send request `1` are two different requests.

use super::Flag;
use mcp_streamable::client::{ClientEvent, ClientTransmit, ClientTransmitKind, Purpose};
use mcp_streamable::head::Method;
use mcp_streamable::headers;
use mcp_streamable::ids::{HttpId, RequestId};
use mcp_streamable::jsonrpc::{self, Message};
use std::collections::{BTreeMap, BTreeSet};

/// One client's side of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct ClientSide {
    /// Each request id this client's records name, with what is known of
    /// it ([`Mark`]). One map rather than a set per mark: a checker copies
    /// a client side at nearly every step it tries, and one map is one
    /// allocation to copy, hash and free where seven sets were seven.
    requests: BTreeMap<RequestId, Marks>,
    /// Client exchanges still open, with the request they work for.
    open: BTreeMap<HttpId, Option<RequestId>>,
    /// The session id `initialize` returned, once the application has it.
    initialized: Option<Option<std::sync::Arc<str>>>,
    /// M4: the application's listens and the changes they have not heard.
    heard: super::listen::Heard,
    /// Later rounds of multi round-trip requests: each retry's id → the
    /// handle the application knows (2026-07-28 MRTR).
    handles: BTreeMap<RequestId, RequestId>,
    /// Each multi-round handle's latest round.
    latest: BTreeMap<RequestId, RequestId>,
    /// L3: the GETs resuming each request's stream since a message of it
    /// was last read.
    resumes: BTreeMap<RequestId, u32>,
    /// C6: the server's requests this client has read and not answered
    /// (server-side ids), and those of them whose `notifications/cancelled`
    /// it read after.
    asked: BTreeSet<RequestId>,
    withdrawn: BTreeSet<RequestId>,
}

/// What the monitor knows of one request of a client.
#[derive(Clone, Copy, Debug)]
enum Mark {
    /// This client sent it (`initialize` included).
    Sent = 1,
    /// Its response reached the client (not when: the step a path took to
    /// get there decides nothing, and would split states).
    Arrived = 1 << 1,
    /// The application got its result.
    Returned = 1 << 2,
    /// It failed for the application.
    Failed = 1 << 3,
    /// A listen request: its end (`complete`) is the listen's.
    Listen = 1 << 4,
    /// It was answered with an `InputRequiredResult`: not an answer for
    /// the caller, a question; C2 asks that it reach the application or be
    /// retried or failed.
    Question = 1 << 5,
    /// The application was asked its question (`ClientEvent::InputRequired`).
    Asked = 1 << 6,
}

/// The [`Mark`]s of one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Marks(u8);

impl ClientSide {
    /// Whether request `id` has mark `m`.
    fn is(&self, id: &RequestId, m: Mark) -> bool {
        self.requests.get(id).is_some_and(|k| k.0 & m as u8 != 0)
    }

    /// Gives request `id` mark `m`; whether it did not have it yet.
    fn mark(&mut self, id: &RequestId, m: Mark) -> bool {
        let marks = match self.requests.get_mut(id) {
            Some(k) => k,
            None => self.requests.entry(id.clone()).or_default(),
        };
        let new = marks.0 & m as u8 == 0;
        marks.0 |= m as u8;
        new
    }

    /// The requests with mark `m`, in id order.
    fn marked(&self, m: Mark) -> impl Iterator<Item = &RequestId> {
        self.requests
            .iter()
            .filter(move |(_, k)| k.0 & m as u8 != 0)
            .map(|(id, _)| id)
    }

    /// The round handle `h` is now in (itself, before any retry).
    fn current(&self, h: &RequestId) -> RequestId {
        self.latest.get(h).unwrap_or(h).clone()
    }

    /// The handle request `r` is a round of (itself, for a first round).
    fn handle(&self, r: &RequestId) -> RequestId {
        self.handles.get(r).unwrap_or(r).clone()
    }

    /// The session this client's application holds, if any.
    pub(super) fn session(&self) -> Option<&str> {
        self.initialized.as_ref()?.as_deref()
    }

    /// The client core started or aborted an exchange.
    pub(super) fn on_transmit(
        &mut self,
        t: &ClientTransmit,
        resumes_max: u32,
        flags: &mut Vec<Flag>,
    ) {
        match &t.kind {
            ClientTransmitKind::Send { head, body } => {
                if t.purpose == Purpose::Notify {
                    self.on_answers(t.http, body, flags);
                }
                if let (Purpose::Request(r), Method::Get) = (&t.purpose, &head.method) {
                    self.resumed(r, resumes_max, t.http, flags);
                }
                if let Purpose::Listen { request, .. } = &t.purpose {
                    self.mark(request, Mark::Listen);
                }
                if let Purpose::Round { handle, request } = &t.purpose {
                    self.handles.insert(request.clone(), handle.clone());
                    self.latest.insert(handle.clone(), request.clone());
                }
                let request = t.purpose.request().cloned();
                if let Some(r) = &request {
                    self.mark(r, Mark::Sent);
                    if self.is(r, Mark::Returned) || self.is(&self.handle(r), Mark::Returned) {
                        flags.push(Flag::new(
                            "C3",
                            Some(t.http),
                            format!("new exchange for {r} after the caller had its result"),
                        ));
                    }
                }
                if let Some(Some(_)) = &self.initialized {
                    let carries = head.header(headers::MCP_SESSION_ID).is_some();
                    if !carries && !matches!(t.purpose, Purpose::Initialize(_)) {
                        flags.push(Flag::new(
                            "C5",
                            Some(t.http),
                            "request sent without Mcp-Session-Id after initialize returned".into(),
                        ));
                    }
                }
                self.open.insert(t.http, request);
            }
            ClientTransmitKind::Abort => {
                self.open.remove(&t.http);
                if let Purpose::Listen { listen: l, .. } = t.purpose {
                    // The application stopped it (or the core ended it
                    // and said so): nothing more is owed to its view.
                    self.heard.ended(l);
                }
            }
        }
    }

    /// L3: one more resumption of `r`'s stream with no message of it read
    /// since the last; more than `max` in a row is a loop without progress.
    fn resumed(&mut self, r: &RequestId, max: u32, http: HttpId, flags: &mut Vec<Flag>) {
        let n = self.resumes.entry(r.clone()).or_insert(0);
        *n += 1;
        if *n == max + 1 {
            flags.push(Flag::new(
                "L3",
                Some(http),
                format!("{n} resumptions of {r}'s stream in a row with no message of it read (at most {max})"),
            ));
        }
    }

    /// The client POSTs answers to the server's requests: C6 for one whose
    /// cancellation it read after the request (the receiver SHOULD NOT
    /// answer a cancelled request, `basic/utilities/cancellation.mdx`).
    /// An answered request is forgotten: nothing is left to judge of it,
    /// and a record would tell apart runs that differ in nothing else.
    fn on_answers(&mut self, http: HttpId, body: &[u8], flags: &mut Vec<Flag>) {
        if self.asked.is_empty() && self.withdrawn.is_empty() {
            return;
        }
        for m in mcp_streamable::observe::body_messages(body).unwrap_or_default() {
            let Some(id) = m.id().filter(|_| m.is_response()) else {
                continue;
            };
            self.asked.remove(id);
            if self.withdrawn.remove(id) {
                flags.push(Flag::new(
                    "C6",
                    Some(http),
                    format!("answered the server's request {id} after reading its cancellation"),
                ));
            }
        }
    }

    /// The client read `message` on exchange `http`.
    pub(super) fn on_received(&mut self, http: HttpId, message: &Message, flags: &mut Vec<Flag>) {
        match message {
            Message::Request { id, .. } => {
                self.asked.insert(id.clone());
            }
            // A cancellation of a request not read yet may be ignored
            // ("MAY ignore … if the referenced request is unknown"); one of
            // a request read is not to be answered.
            Message::Notification { method, params } if method == jsonrpc::CANCELLED => {
                if let Some((id, _)) = jsonrpc::cancelled_request(params.as_ref()) {
                    if self.asked.remove(&id) {
                        self.withdrawn.insert(id);
                    }
                }
            }
            _ => {}
        }
        if let Some(Some(r)) = self.open.get(&http) {
            // Progress on the request's stream: its resumptions count anew.
            self.resumes.remove(r);
        }
        let (true, Some(id)) = (message.is_response(), message.id()) else {
            return;
        };
        if self.is(id, Mark::Listen) {
            return;
        }
        if !self.is(id, Mark::Sent) {
            flags.push(Flag::new(
                "I1",
                Some(http),
                format!("response to {id}, which this client never sent"),
            ));
            return;
        }
        if let Message::Response { result, .. } = message {
            if mcp_streamable::mrtr::is_input_required(result) {
                self.mark(id, Mark::Question);
                return;
            }
        }
        self.mark(id, Mark::Arrived);
    }

    /// The client's exchange `http` is over.
    pub(super) fn on_closed(&mut self, http: HttpId) {
        self.open.remove(&http);
    }

    /// The client core told its application something.
    pub(super) fn on_event(&mut self, e: &ClientEvent, flags: &mut Vec<Flag>) {
        if let ClientEvent::Response { id, .. } | ClientEvent::Failed { id, .. } = e {
            // Its outcome is out: no more resumptions of it to count (nor
            // states that differ only in how many there were).
            let round = self.current(id);
            self.resumes.remove(id);
            self.resumes.remove(&round);
        }
        match e {
            ClientEvent::Initialized { id, session_id, .. } => {
                self.initialized = Some(session_id.as_ref().map(|s| s.as_str().into()));
                if !self.mark(id, Mark::Returned) {
                    flags.push(Flag::new("C4", None, format!("{id} completed twice")));
                }
            }
            ClientEvent::Response { id, .. } => {
                if !self.mark(id, Mark::Returned) {
                    flags.push(Flag::new("C4", None, format!("{id} completed twice")));
                }
                let round = self.current(id);
                self.mark(&round, Mark::Returned);
            }
            ClientEvent::InputRequired { id, .. } => {
                let round = self.current(id);
                self.mark(&round, Mark::Asked);
            }
            // The probe's answer reached the core, which decided on it.
            ClientEvent::FellBack { id, .. } => {
                self.mark(id, Mark::Returned);
            }
            ClientEvent::Failed { id, .. } => {
                let round = self.current(id);
                if self.is(&round, Mark::Arrived) && !self.is(&round, Mark::Returned) {
                    flags.push(Flag::new(
                        "C2",
                        None,
                        format!("{id} failed although its response had arrived"),
                    ));
                }
                self.mark(id, Mark::Failed);
                self.mark(&round, Mark::Failed);
            }
            ClientEvent::SessionLost => {
                self.initialized = None;
            }
            ClientEvent::Notification { method, params } => {
                let params = params
                    .as_ref()
                    .map(mcp_streamable::jsonrpc::RawJson::to_value);
                self.heard.notified(method, params.as_ref());
            }
            ClientEvent::Listening { listen, agreed, .. } => self.heard.listening(*listen, agreed),
            ClientEvent::ListenEnded { listen, .. } => self.heard.ended(*listen),
            _ => {}
        }
    }

    /// The application broadcast `method` (M4).
    pub(super) fn heard_broadcast(&mut self, method: &str, params: Option<&serde_json::Value>) {
        self.heard.broadcast(method, params);
    }

    /// End-of-run checks: C2 (arrived, never returned), C3 (exchanges of
    /// finished requests still open) and M4 (a listen left stale).
    pub(super) fn finish(&self, flags: &mut Vec<Flag>) {
        self.heard.finish(flags);
        for id in self.marked(Mark::Arrived) {
            if !self.is(id, Mark::Returned) && !self.is(id, Mark::Failed) {
                flags.push(Flag::new(
                    "C2",
                    None,
                    format!("{id}: the response arrived but the caller never got it"),
                ));
            }
        }
        for q in self.marked(Mark::Question) {
            let h = self.handle(q);
            let settled = self.is(q, Mark::Asked)
                || self.is(&h, Mark::Returned)
                || self.is(&h, Mark::Failed)
                || self.current(&h) != *q;
            if !settled {
                flags.push(Flag::new(
                    "C2",
                    None,
                    format!("{q}: the server asked for input and the caller never heard"),
                ));
            }
        }
        for (http, id) in &self.open {
            let Some(id) = id else { continue };
            if self.is(id, Mark::Returned) || self.is(id, Mark::Failed) {
                flags.push(Flag::new(
                    "C3",
                    Some(*http),
                    format!("exchange for {id} still running after it finished"),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! C2 and C4 across the rounds of a multi round-trip request.
    use super::*;
    use mcp_streamable::head::RequestHead;
    use mcp_streamable::jsonrpc::RawJson;

    fn send(side: &mut ClientSide, http: u64, purpose: Purpose) {
        let t = ClientTransmit {
            http: HttpId(http),
            purpose,
            kind: ClientTransmitKind::Send {
                head: RequestHead::post(None, None),
                body: Vec::new(),
            },
        };
        side.on_transmit(&t, 3, &mut Vec::new());
        side.on_closed(HttpId(http));
    }

    /// L3: a fourth resumption in a row with no message of the request read
    /// is a loop; a message read between starts the count anew, and so
    /// does the request's outcome.
    #[test]
    fn resumptions_without_progress_past_the_bound_are_l3() {
        let get = |http: u64| ClientTransmit {
            http: HttpId(http),
            purpose: Purpose::Request(RequestId::Num(2)),
            kind: ClientTransmitKind::Send {
                head: RequestHead::new(Method::Get),
                body: Vec::new(),
            },
        };
        let note = Message::notification("notifications/progress", None);
        let run = |progress_at: Option<u64>| {
            let mut side = ClientSide::default();
            let mut flags = Vec::new();
            send(&mut side, 1, Purpose::Request(RequestId::Num(2)));
            for http in 2..7 {
                side.on_transmit(&get(http), 3, &mut flags);
                if progress_at == Some(http) {
                    side.on_received(HttpId(http), &note, &mut flags);
                }
                side.on_closed(HttpId(http));
            }
            flags.iter().map(|f| f.id).collect::<Vec<_>>()
        };
        assert_eq!(run(None), ["L3"], "five resumptions, once flagged");
        assert!(run(Some(3)).is_empty(), "progress after the second");
        let mut side = ClientSide::default();
        let mut flags = Vec::new();
        for http in 2..5 {
            side.on_transmit(&get(http), 3, &mut flags);
        }
        let failed = ClientEvent::Failed {
            id: RequestId::Num(2),
            error: mcp_streamable::client::ClientError::StreamLost,
        };
        side.on_event(&failed, &mut flags);
        assert!(side.resumes.is_empty(), "the outcome clears the count");
        assert!(flags.is_empty());
    }

    fn answer(side: &mut ClientSide, id: i64, result: serde_json::Value) {
        let m = Message::Response {
            id: RequestId::Num(id),
            result: RawJson::from(result),
        };
        side.on_received(HttpId(0), &m, &mut Vec::new());
    }

    fn question() -> serde_json::Value {
        serde_json::json!({"resultType": "input_required", "requestState": "s"})
    }

    fn ids(side: &ClientSide, mut flags: Vec<Flag>) -> Vec<&'static str> {
        side.finish(&mut flags);
        flags.into_iter().map(|f| f.id).collect()
    }

    #[test]
    fn every_round_settles_under_the_one_handle() {
        let mut side = ClientSide::default();
        let h = RequestId::Num(1);
        send(&mut side, 1, Purpose::Request(h.clone()));
        answer(&mut side, 1, question());
        let mut flags = Vec::new();
        let asked = ClientEvent::InputRequired {
            id: h.clone(),
            requests: RawJson::empty_object(),
            round: 1,
        };
        side.on_event(&asked, &mut flags);
        send(
            &mut side,
            2,
            Purpose::Round {
                handle: h.clone(),
                request: RequestId::Num(2),
            },
        );
        answer(&mut side, 2, serde_json::json!({"content": []}));
        let done = ClientEvent::Response {
            id: h,
            result: Ok(RawJson::empty_object()),
        };
        side.on_event(&done, &mut flags);
        assert_eq!(ids(&side, flags), Vec::<&str>::new());
    }

    #[test]
    fn a_question_the_caller_never_hears_of_is_c2() {
        let mut side = ClientSide::default();
        send(&mut side, 1, Purpose::Request(RequestId::Num(1)));
        answer(&mut side, 1, question());
        assert_eq!(ids(&side, Vec::new()), ["C2"]);
        // A final answer of a later round lost the same way is C2 too.
        let mut side = ClientSide::default();
        let h = RequestId::Num(1);
        send(&mut side, 1, Purpose::Request(h.clone()));
        answer(&mut side, 1, question());
        send(
            &mut side,
            2,
            Purpose::Round {
                handle: h,
                request: RequestId::Num(2),
            },
        );
        answer(&mut side, 2, serde_json::json!({"content": []}));
        assert_eq!(ids(&side, Vec::new()), ["C2"]);
    }

    /// C6: an answer to a request of the server after reading its
    /// cancellation; never one answered before, nor one whose cancellation
    /// came before the request (a receiver may ignore that one).
    #[test]
    fn an_answer_after_the_servers_cancellation_is_c6() {
        let read = |side: &mut ClientSide, m: serde_json::Value| {
            let m: Message = serde_json::from_value(m).unwrap();
            side.on_received(HttpId(1), &m, &mut Vec::new());
        };
        let ask = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"});
        let cancel = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}});
        let reply = |side: &mut ClientSide| {
            let mut flags = Vec::new();
            let t = ClientTransmit {
                http: HttpId(9),
                purpose: Purpose::Notify,
                kind: ClientTransmitKind::Send {
                    head: RequestHead::post(None, None),
                    body: br#"{"jsonrpc":"2.0","id":0,"result":{}}"#.to_vec(),
                },
            };
            side.on_transmit(&t, 3, &mut flags);
            flags.iter().map(|f| f.id).collect::<Vec<_>>()
        };
        let mut after = ClientSide::default();
        read(&mut after, ask.clone());
        read(&mut after, cancel.clone());
        assert_eq!(reply(&mut after), ["C6"]);

        let mut before = ClientSide::default();
        read(&mut before, ask.clone());
        assert!(reply(&mut before).is_empty(), "answered in time");
        read(&mut before, cancel.clone());
        assert!(reply(&mut before).is_empty(), "forgotten once answered");

        let mut early = ClientSide::default();
        read(&mut early, cancel);
        read(&mut early, ask);
        assert!(
            reply(&mut early).is_empty(),
            "the cancellation named a request not read yet"
        );
    }
}
