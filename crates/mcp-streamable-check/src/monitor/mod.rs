//! The invariant monitor: judges a run from what can be observed.
//!
//! Every harness (proptest, the model checker, turmoil, the HTTP shells) feeds
//! it [`Observation`]s: requests as they reach the server, what the server
//! wrote on each exchange, exchanges the client or network closed, and what
//! the application sent. It never looks inside a core, so the same monitor
//! judges our cores, the presets of real SDKs, and (later) black-box peers.
//!
//! Properties (see `docs/properties.md`): A1–A5 (stale notifications),
//! B1–B9 (competing GET streams, resumption, what a GET carries), C1 (responses on foreign streams), C2–C5
//! (per client, `monitor::client`), I1 (isolation between sessions), and the spec
//! rules R13, R21 and R32 that a server's output shows.
//!
//! The hub here keeps the records (exchanges, lineages, event ids, what was
//! sent and delivered) and asks each property's own function, in
//! `assertions`, when an observation concerns it; those judge and change
//! nothing.

mod assertions;
mod client;
mod headers;
mod listen;
mod retire;
#[cfg(test)]
mod tests;

use assertions::{Part, Rewrite};
use client::ClientSide;
use mcp_streamable::client::{ClientEvent, ClientTransmitKind};
use mcp_streamable::ids::{HttpId, MsgKey, RequestId};
use mcp_streamable::jsonrpc::{Message, RawJson};
use mcp_streamable::principal::Principal;
use mcp_streamable::server::{
    Cause, Content, DropReason, EndReason, Method, Transmit, TransmitKind,
};
use mcp_streamable::shared::Shared;
use mcp_streamable::unhashed::Unhashed;
use retire::Retired;
pub use retire::RetiredPart;

/// Every property id the monitor can report, as `docs/properties.md` lists
/// them: what a model may name in `invariants`, `judge` and `violates` (a
/// name not here would judge nothing and make every run "hold").
pub const PROPERTIES: [&str; 35] = [
    "A1", "A2", "A3", "A4", "A5", "B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9", "B10",
    "C1", "C2", "C3", "C4", "C5", "C6", "I1", "I2", "L1", "L2", "L3", "L4", "M1", "M2", "M3", "M4",
    "M5", "R13", "R21", "R32",
];
pub use mcp_streamable::observe::{body_messages, Observation};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Text the monitor keeps (session ids, event ids): shared, as every state a
/// checker copies holds the same few.
type Text = Arc<str>;

/// A broken property.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Violation {
    /// Property id: `A1`…`A5`, `B1`…`B6`, `C1`…`C5`, `I1`, `M1`, `M2`, or a spec rule `R13`, `R21`, `R32`.
    pub id: &'static str,
    /// Index of the observation that revealed it (0-based); `usize::MAX` for end-of-run checks.
    pub step: usize,
    /// The exchange involved.
    pub http: Option<HttpId>,
    /// What happened.
    pub detail: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Kind {
    /// A POST carrying requests.
    PostRequests(Vec<RequestId>),
    /// A POST carrying only notifications/responses.
    PostAccepted,
    /// `initialize`.
    Initialize(RequestId),
    /// Any other POST (unparseable, discover, …).
    PostOther,
    /// GET without `Last-Event-ID`.
    GetPlain,
    /// GET with `Last-Event-ID`.
    GetResume(String),
    /// DELETE.
    Delete,
    /// Anything else.
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Exchange {
    kind: Kind,
    session: Option<Text>,
    status: Option<u16>,
    content: Option<Content>,
    json_bodies: u32,
    ended: bool,
    closed: bool,
    lineage: HttpId,
    /// A 2026-07-28 exchange.
    v2026: bool,
    /// A 2026-07-28 `subscriptions/listen`: its id, and once acknowledged, the
    /// filter the server agreed to.
    listen: Option<Box<(RequestId, Option<mcp_streamable::v2026::ListenFilter>)>>,
    /// Who sent it.
    principal: Option<Principal>,
    /// It names a session another principal opened (I2).
    foreign: bool,
    /// An event id new to its stream was written on it (B7: nothing
    /// replayed may follow one).
    wrote_new_id: bool,
}

/// A chain of exchanges carrying one logical stream (a POST and its resumptions,
/// or a standalone GET and its resumptions), as far as the wire shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Lineage {
    /// Requests of the originating POST (empty for a standalone GET).
    requests: Vec<RequestId>,
    /// Requests of `requests` answered so far.
    answered: BTreeSet<RequestId>,
    /// Event ids first written on this lineage, in order.
    ids: Vec<Text>,
    /// Exchanges that carried this lineage, oldest first.
    connections: Vec<HttpId>,
    /// A resumption (GET with a `Last-Event-ID` of this lineage) was answered 2xx.
    resumed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EventRecord {
    key: Option<MsgKey>,
    lineage: HttpId,
    position: usize,
}

/// The monitor. Feed it with [`Monitor::observe`]; read [`Monitor::violations`];
/// call [`Monitor::finish`] once at quiescence for the end-of-run checks.
///
/// Equality and hashing ignore how many observations were seen (and at which
/// step a violation was found), so a model checker fingerprints equal
/// situations reached by paths of different lengths as one state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Monitor {
    /// Observations seen: how many says nothing about what can happen next.
    step: Unhashed<usize>,
    exchanges: Shared<BTreeMap<HttpId, Shared<Exchange>>>,
    /// By the exchange that began each (not by arrival: a checker's states
    /// that differ only in the order two clients' requests arrived are one).
    lineages: Shared<BTreeMap<HttpId, Shared<Lineage>>>,
    /// (session, event id) → first write.
    event_ids: Shared<BTreeMap<(Text, Text), EventRecord>>,
    sent: Shared<BTreeMap<(Text, MsgKey), Cause>>,
    delivered: Shared<BTreeSet<(Text, MsgKey)>>,
    fresh_writes: Shared<BTreeMap<(Text, MsgKey), BTreeSet<HttpId>>>,
    /// I1: the response the application just handed a core, and the
    /// exchange its request arrived on (`Sent`'s `origin`), until it is
    /// written: a harness's core writes it in the same step.
    answering: Option<(RequestId, HttpId)>,
    /// What changes a few times along a run, kept apart (see [`Rare`]).
    rare: Shared<Rare>,
    /// Each client's side, by client index. The big records above and each
    /// client side are [`Shared`]: one observation changes one or two of
    /// them, and a checker's copy of the monitor shares the rest.
    clients: BTreeMap<usize, Shared<ClientSide>>,
    gets_max: Option<usize>,
    /// L3: resumptions of one request's stream in a row without a message.
    resumes_max: ResumesMax,
    faults: usize,
    /// M3: broadcasts owed to acknowledged listen streams.
    owed: listen::Owed,
    /// M5: requests whose headers disagree with their body, and the tools'
    /// custom headers as listed.
    headers: Shared<headers::HeaderAgreement>,
    violations: Found,
    /// Clients whose part was judged and let go ([`Monitor::retire`]).
    retired: Shared<BTreeMap<usize, Retired>>,
}

/// Records that change a few times along a run (a session issued, deleted or
/// ended, a request cancelled, a message dropped by policy, a GET stream
/// opened), each shared, and shared again as one: a model checker copies a
/// monitor for every step it tries and frees most copies at once, and each
/// shared record it holds is a reference counted up and down from both
/// CPUs. Together they are one count per copy where they were six, on
/// records nearly every state of a run holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Rare {
    sessions_issued: Shared<BTreeSet<Text>>,
    sessions_deleted: Shared<BTreeSet<Text>>,
    sessions_ended: Shared<BTreeSet<Text>>,
    /// Requests the server had a `notifications/cancelled` for, each with
    /// the messages the application had handed over for it by then: those
    /// were sent before the server knew, and a replay of one after the
    /// cancellation is a resumption doing its work, not a message the
    /// cancelled request caused afterwards (A3).
    cancelled: Shared<BTreeMap<(Text, RequestId), BTreeSet<MsgKey>>>,
    dropped: Shared<BTreeSet<(Text, MsgKey)>>,
    gets_per_session: Shared<BTreeMap<Text, usize>>,
    /// Who opened each session (the principal of its `initialize`).
    owners: Shared<BTreeMap<Text, Option<Principal>>>,
    /// Sessions another principal than their owner sent a DELETE for.
    foreign_deletes: Shared<BTreeSet<Text>>,
}

/// The violations found, compared and hashed without the step each was
/// found at (the same situation reached by a longer path is the same state).
#[derive(Clone, Debug, Default)]
struct Found(Vec<Violation>);

impl Found {
    fn key(&self) -> impl Iterator<Item = (&'static str, Option<HttpId>, &String)> {
        self.0.iter().map(|v| (v.id, v.http, &v.detail))
    }
}

impl PartialEq for Found {
    fn eq(&self, other: &Self) -> bool {
        self.key().eq(other.key())
    }
}

impl Eq for Found {}

impl std::hash::Hash for Found {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.len().hash(state);
        for k in self.key() {
            k.hash(state);
        }
    }
}

impl Monitor {
    /// Gives every record this monitor shares with its clones by a
    /// reference count a copy of its own ([`crate::sim::World::localize`]).
    /// Nothing it means changes.
    pub fn localize(&mut self) {
        let Monitor {
            step: _,
            exchanges,
            lineages,
            event_ids,
            sent,
            delivered,
            fresh_writes,
            answering: _,
            rare,
            clients,
            gets_max: _,
            resumes_max: _,
            faults: _,
            owed: _,
            headers,
            violations: _,
            retired,
        } = self;
        headers.localize();
        exchanges.localize_deep();
        lineages.localize_deep();
        event_ids.localize();
        sent.localize();
        delivered.localize();
        fresh_writes.localize();
        rare.localize();
        clients.values_mut().for_each(Shared::localize);
        retired.localize();
    }

    /// A monitor with nothing seen.
    pub fn new() -> Self {
        Monitor::default()
    }

    /// A monitor that also checks B5: with no [`Observation::Fault`], a
    /// session sees at most `gets_max` GETs.
    pub fn with_gets_max(gets_max: usize) -> Self {
        Monitor {
            gets_max: Some(gets_max),
            ..Monitor::default()
        }
    }

    /// The monitor, judging L3 against `max` resumptions of one request's
    /// stream in a row without a message (the client's own bound: the
    /// checker passes the model's `resume_attempts`; by default
    /// [`ClientConfig`](mcp_streamable::client::ClientConfig)'s).
    pub fn with_resumes_max(mut self, max: u32) -> Self {
        self.resumes_max = ResumesMax(max);
        self
    }

    /// Violations found so far.
    pub fn violations(&self) -> &[Violation] {
        &self.violations.0
    }

    /// Exchanges the server took that the client still waits on with no
    /// response head (neither answered nor closed by either side): at the
    /// end of a run, requests that would hang.
    pub fn unanswered(&self) -> Vec<HttpId> {
        self.exchanges
            .iter()
            .filter(|(_, e)| e.status.is_none() && !e.ended && !e.closed)
            .map(|(h, _)| *h)
            .collect()
    }

    /// Whether a POST of session `session` carrying request `id` reached
    /// the server.
    fn has_request(&self, session: &Text, id: &RequestId) -> bool {
        self.exchanges.values().any(|e| {
            e.session.as_ref() == Some(session)
                && matches!(&e.kind, Kind::PostRequests(ids) if ids.contains(id))
        })
    }

    /// The messages of session `session` the application has handed over
    /// for request `id` so far (`Sent` with that cause) and that no stream
    /// has carried yet.
    fn sent_for(&self, session: &Text, id: &RequestId) -> BTreeSet<MsgKey> {
        self.sent
            .range((session.clone(), MsgKey(0))..)
            .take_while(|((s, _), _)| s == session)
            .filter(|(sk, cause)| {
                matches!(cause, Cause::Request(r) if r == id)
                    && !self.fresh_writes.contains_key(*sk)
            })
            .map(|((_, k), _)| *k)
            .collect()
    }

    /// Whether request `id` of `session` is over for message `key` written
    /// now: the server had its cancellation before the application handed
    /// the message over (a message the monitor saw no `Sent` for, on the
    /// wire alone, counts as after).
    fn cancelled_for(&self, session: &Text, id: &RequestId, key: Option<MsgKey>) -> bool {
        self.rare
            .cancelled
            .get(&(session.clone(), id.clone()))
            .is_some_and(|before| key.is_none_or(|k| !before.contains(&k)))
    }

    /// L4, every stream ends: exchanges open at both ends (the server has
    /// not ended them, the client still reads them) whose requests are all
    /// over (answered, or cancelled by the client), a listen's excepted: at
    /// the end of a run, streams held open for nothing, each keeping a
    /// connection until the client gives up.
    pub fn held_open(&self) -> Vec<HttpId> {
        self.exchanges
            .iter()
            .filter(|(_, e)| {
                let Some(lineage) = self.lineages.get(&e.lineage) else {
                    return false;
                };
                let session = e.session.clone().unwrap_or_default();
                assertions::l4_held_for_nothing(e, lineage, |r| {
                    self.rare
                        .cancelled
                        .contains_key(&(session.clone(), r.clone()))
                })
            })
            .map(|(h, _)| *h)
            .collect()
    }

    /// L4 at the end of a run: the exchanges [`Monitor::held_open`] names,
    /// as a violation, if any.
    pub fn held_open_violation(&self) -> Option<Violation> {
        let f = assertions::l4_streams_held_open(&self.held_open())?;
        Some(Violation {
            id: f.id,
            step: usize::MAX,
            http: f.http,
            detail: f.detail,
        })
    }

    /// The first violation, if any.
    pub fn first_violation(&self) -> Option<&Violation> {
        self.violations.0.first()
    }

    /// Observations seen.
    pub fn steps(&self) -> usize {
        self.step.0
    }

    /// Hashes all but the client sides, which [`Monitor::hash_client`]
    /// hashes one by one: the checker's symmetry reduction combines those
    /// as a multiset. Every field is named, so a new one cannot be
    /// forgotten here.
    pub fn hash_shared<H: Hasher>(&self, h: &mut H) {
        let Monitor {
            step: _,
            exchanges,
            lineages,
            event_ids,
            sent,
            delivered,
            fresh_writes,
            answering,
            rare,
            clients: _,
            gets_max,
            resumes_max,
            faults,
            owed,
            headers,
            violations,
            retired: _, // each client's, in its part
        } = self;
        resumes_max.hash(h);
        exchanges.hash(h);
        lineages.hash(h);
        event_ids.hash(h);
        sent.hash(h);
        delivered.hash(h);
        fresh_writes.hash(h);
        answering.hash(h);
        rare.hash(h);
        gets_max.hash(h);
        faults.hash(h);
        owed.hash(h);
        headers.hash(h);
        violations.hash(h);
    }

    /// Hashes client `client`'s side (see [`Monitor::hash_shared`]).
    pub fn hash_client<H: Hasher>(&self, client: usize, h: &mut H) {
        self.clients.get(&client).hash(h);
        self.retired.get(&client).hash(h);
    }

    /// Feeds one observation.
    pub fn observe(&mut self, obs: &Observation) {
        match obs {
            Observation::Request {
                http,
                method,
                session,
                last_event_id,
                messages,
                v2026,
                mcp_headers,
                principal,
            } => {
                let named = (session, last_event_id);
                if !mcp_headers.is_empty() {
                    self.headers
                        .on_request(*http, *v2026, mcp_headers, messages);
                }
                self.on_request(*http, method, named, messages, *v2026, principal)
            }
            Observation::Transmit(t) => self.on_transmit(t),
            // Faults excuse B5's bound only: without it nothing reads them,
            // and states that differ only in their count are one.
            Observation::Fault if self.gets_max.is_some() => self.faults += 1,
            Observation::Fault => {}
            Observation::Closed { http } => {
                if let Some(e) = self.exchanges.get_mut(http) {
                    e.closed = true;
                }
                self.owed.closed(*http);
            }
            Observation::Broadcast { method, params } => self.on_broadcast(method, params),
            Observation::Sent {
                session,
                key,
                cause,
                origin,
            } => {
                self.sent
                    .insert((session.as_str().into(), *key), cause.clone());
                if let (Cause::Request(id), Some(o)) = (cause, origin) {
                    self.answering = Some((id.clone(), *o));
                }
            }
            Observation::Dropped {
                session,
                key,
                reason,
            } => {
                let sk: (Text, MsgKey) = (session.as_str().into(), *key);
                self.check_dropped_beside_get(&sk, *reason);
                self.check_dropped_unheld(&sk, *reason);
                if let Some(Cause::Request(r)) = self.sent.get(&sk).cloned() {
                    self.excused(&sk.0, &r, sk.1);
                }
                self.rare.dropped.insert(sk);
            }
            Observation::SessionEnded {
                session,
                deleted_by,
            } => self.on_session_ended(session, *deleted_by),
            Observation::ClientTransmit { client, transmit } => {
                if let ClientTransmitKind::Send { head, body } = &transmit.kind {
                    if let Some(why) = self.headers.on_client_send(head, body) {
                        self.flag("M5", None, why);
                    }
                }
                let mut flags = Vec::new();
                let max = self.resumes_max.0;
                self.client_side(*client)
                    .on_transmit(transmit, max, &mut flags);
                self.raise(flags);
            }
            Observation::ClientEvent { client, event } => self.on_client_event(*client, event),
            Observation::ClientReceived {
                client,
                http,
                message,
            } => {
                if self.headers.teaches(message) {
                    self.headers.learn(message);
                }
                let mut flags = Vec::new();
                self.client_side(*client)
                    .on_received(*http, message, &mut flags);
                self.raise(flags);
            }
            Observation::ClientClosed { client, http } => {
                self.client_side(*client).on_closed(*http)
            }
        }
        self.step.0 += 1;
    }

    /// The last event id (in the monitor's order) written on session
    /// `session`: what a client that read the session's streams, or an
    /// attacker that saw one of its events, could resume from.
    pub fn last_event_id(&self, session: &str) -> Option<String> {
        let s: Text = session.into();
        self.event_ids
            .keys()
            .filter(|(sess, _)| *sess == s)
            .max_by_key(|(_, id)| {
                let r = &self.event_ids[&(s.clone(), id.clone())];
                (r.lineage, r.position)
            })
            .map(|(_, id)| id.to_string())
    }

    /// End-of-run checks, at quiescence. `queued` lists keys the core still
    /// holds legitimately (waiting for a stream); a key that is neither
    /// delivered, dropped by policy, nor queued was lost (A5). An unrelated key
    /// still queued while a standalone GET is open breaks B4.
    pub fn finish(&mut self, queued: &[(String, MsgKey)]) {
        // Sessions with a standalone GET open (B4 is judged per session).
        let open_standalone = self.open_standalone();
        self.finish_client();
        let mut flags = self.retired_flags();
        self.owed.finish(&mut flags);
        for f in flags {
            self.flag_end(f.id, f.http, f.detail);
        }
        let sent: Vec<((Text, MsgKey), Cause)> = self
            .sent
            .iter()
            .map(|(k, c)| (k.clone(), c.clone()))
            .collect();
        for (key, cause) in sent {
            if cause != Cause::Unrelated
                || self.delivered.contains(&key)
                || self.rare.dropped.contains(&key)
                || self.rare.sessions_ended.contains(&key.0)
                || self.rare.sessions_deleted.contains(&key.0)
            {
                continue;
            }
            let (_, k) = &key;
            if queued.iter().any(|(s, q)| **s == *key.0 && *q == key.1) {
                let get_open = open_standalone.contains(&key.0);
                self.judge_end(assertions::b4_not_held_beside_a_get(*k, get_open));
                continue;
            }
            // Written only into connections that were already dead: lost to the
            // network unless the client resumed that stream, in which case the
            // replay must have brought it.
            let written_on: Vec<HttpId> = self
                .fresh_writes
                .get(&key)
                .map(|l| l.iter().copied().collect())
                .unwrap_or_default();
            let resumed = written_on.iter().any(|l| self.lineages[l].resumed);
            let written = !written_on.is_empty();
            self.judge_end(assertions::a5_not_lost(*k, written, resumed));
        }
    }

    /// The sessions with a standalone GET open now: its `200` written, not
    /// ended, not closed by the client.
    fn open_standalone(&self) -> BTreeSet<Text> {
        self.exchanges
            .values()
            .filter(|e| {
                matches!(e.kind, Kind::GetPlain | Kind::GetResume(_))
                    && !e.ended
                    && !e.closed
                    && e.status == Some(200)
                    && self
                        .lineages
                        .get(&e.lineage)
                        .is_some_and(|l| l.requests.is_empty())
            })
            .filter_map(|e| e.session.clone())
            .collect()
    }

    /// B4: an unrelated message is never dropped for want of a stream
    /// while a standalone GET of its session is open (its `200` out and the
    /// client reading it): the stream is there to take it.
    fn check_dropped_beside_get(&mut self, key: &(Text, MsgKey), reason: DropReason) {
        let unrelated = self.sent.get(key).is_some_and(|c| *c == Cause::Unrelated);
        if reason != DropReason::NoStream || !unrelated {
            return;
        }
        if self.open_standalone().contains(&key.0) {
            self.flag(
                "B4",
                None,
                format!(
                    "{} dropped for want of a stream while a standalone GET of its session is open",
                    key.1
                ),
            );
        }
    }

    /// B10: an unrelated message is held for the standalone GET its
    /// client may still open, never dropped when sent for want of one
    /// ([`DropReason::Unheld`]), unless the session's client was refused a
    /// GET (a server without the stream: nothing will come to take it).
    fn check_dropped_unheld(&mut self, key: &(Text, MsgKey), reason: DropReason) {
        if reason != DropReason::Unheld {
            return;
        }
        let refused = self.exchanges.values().any(|e| {
            matches!(e.kind, Kind::GetPlain)
                && e.session.as_ref() == Some(&key.0)
                && e.status.is_some_and(|s| s == 405)
        });
        if !refused {
            self.flag(
                "B10",
                None,
                format!(
                    "{} dropped when sent: no standalone GET open yet, none refused, nothing held for it",
                    key.1
                ),
            );
        }
    }

    fn client_side(&mut self, client: usize) -> &mut ClientSide {
        self.clients.entry(client).or_default()
    }

    fn on_client_event(&mut self, client: usize, event: &ClientEvent) {
        let mut flags = Vec::new();
        self.client_side(client).on_event(event, &mut flags);
        if let ClientEvent::Initialized {
            session_id: Some(sid),
            ..
        } = event
        {
            let sid = sid.to_string();
            if let Some(other) = self
                .clients
                .iter()
                .find(|(c, side)| **c != client && side.session() == Some(sid.as_str()))
            {
                flags.push(Flag::new(
                    "I1",
                    None,
                    format!("clients {} and {client} were given one session", other.0),
                ));
            }
        }
        self.raise(flags);
    }

    fn finish_client(&mut self) {
        let mut flags = Vec::new();
        for side in self.clients.values() {
            side.finish(&mut flags);
        }
        for f in flags {
            self.flag_end(f.id, f.http, f.detail);
        }
    }

    fn raise(&mut self, flags: Vec<Flag>) {
        for f in flags {
            self.flag(f.id, f.http, f.detail);
        }
    }

    /// Raises what an assertion found now; whether it found anything.
    fn judge(&mut self, found: Option<Flag>) -> bool {
        let Some(f) = found else {
            return false;
        };
        self.flag(f.id, f.http, f.detail);
        true
    }

    /// Raises what an end-of-run assertion found.
    fn judge_end(&mut self, found: Option<Flag>) {
        if let Some(f) = found {
            self.flag_end(f.id, f.http, f.detail);
        }
    }

    fn flag(&mut self, id: &'static str, http: Option<HttpId>, detail: String) {
        debug_assert!(PROPERTIES.contains(&id), "{id} is not in PROPERTIES");
        self.violations.0.push(Violation {
            id,
            step: self.step.0,
            http,
            detail,
        });
    }

    fn flag_end(&mut self, id: &'static str, http: Option<HttpId>, detail: String) {
        debug_assert!(PROPERTIES.contains(&id), "{id} is not in PROPERTIES");
        self.violations.0.push(Violation {
            id,
            step: usize::MAX,
            http,
            detail,
        });
    }

    fn new_lineage(&mut self, http: HttpId, requests: Vec<RequestId>) -> HttpId {
        self.lineages.insert(
            http,
            Shared::new(Lineage {
                requests,
                ..Lineage::default()
            }),
        );
        http
    }

    fn on_request(
        &mut self,
        http: HttpId,
        method: &Method,
        (session, last_event_id): (&Option<String>, &Option<String>),
        messages: &[Message],
        v2026: bool,
        principal: &Option<Principal>,
    ) {
        // A 2026-07-28 request names no session, whatever it sends.
        let session: &Option<Text> = &session.as_deref().filter(|_| !v2026).map(Text::from);
        let foreign = session
            .as_ref()
            .and_then(|s| self.rare.owners.get(s))
            .is_some_and(|owner| owner != principal);
        // A DELETE for a session already gone changes nothing: its owner's
        // later 404 is the earlier end's.
        let gone = |s: &Text| {
            self.rare.sessions_ended.contains(s) || self.rare.sessions_deleted.contains(s)
        };
        if let (true, Method::Delete, Some(s)) = (foreign, method, session) {
            if !gone(s) {
                self.rare.foreign_deletes.insert(s.clone());
            }
        }
        let kind = match method {
            Method::Post => {
                let requests: Vec<RequestId> = messages
                    .iter()
                    .filter(|m| m.is_request())
                    .filter_map(|m| m.id().cloned())
                    .collect();
                match messages {
                    [m] if m.is_initialize() => {
                        Kind::Initialize(m.id().cloned().unwrap_or(RequestId::Num(0)))
                    }
                    [] => Kind::PostOther,
                    _ if requests.is_empty() => Kind::PostAccepted,
                    _ => Kind::PostRequests(requests),
                }
            }
            Method::Get => match last_event_id {
                Some(l) => Kind::GetResume(l.clone()),
                None => Kind::GetPlain,
            },
            Method::Delete => Kind::Delete,
            Method::Other(_) => Kind::Other,
        };
        if let Some(s) = session {
            for m in messages {
                if let Message::Notification {
                    method,
                    params: Some(p),
                } = m
                {
                    if method == "notifications/cancelled" {
                        // Only a request the server has: one that reaches it
                        // after its cancellation is served as any other (the
                        // receiver MAY ignore a cancellation it cannot match).
                        if let Some(id) = p
                            .to_value()
                            .get("requestId")
                            .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())
                            .filter(|id| self.has_request(s, id))
                        {
                            let before = self.sent_for(s, &id);
                            self.rare.cancelled.entry((s.clone(), id)).or_insert(before);
                        }
                    }
                }
            }
        }
        if let (Method::Get, Some(s)) = (method, session) {
            let n = self.rare.gets_per_session.entry(s.clone()).or_default();
            *n += 1;
            let n = *n;
            let max = self.gets_max.filter(|_| self.faults == 0);
            self.judge(assertions::b5_gets_bounded(http, n, max));
        }
        let lineage = match &kind {
            Kind::PostRequests(r) => self.new_lineage(http, r.clone()),
            Kind::Initialize(r) => self.new_lineage(http, vec![r.clone()]),
            Kind::GetResume(l) => {
                let known = session
                    .as_ref()
                    .and_then(|s| self.event_ids.get(&(s.clone(), l.as_str().into())))
                    .map(|r| r.lineage);
                match known {
                    Some(lin) => lin,
                    None => self.new_lineage(http, Vec::new()),
                }
            }
            _ => self.new_lineage(http, Vec::new()),
        };
        if let Some(l) = self.lineages.get_mut(&lineage) {
            l.connections.push(http);
        }
        let listen = match messages {
            [Message::Request { id, method, .. }] if v2026 && method == "subscriptions/listen" => {
                Some(Box::new((id.clone(), None)))
            }
            _ => None,
        };
        self.exchanges.insert(
            http,
            Exchange {
                kind,
                session: session.clone(),
                status: None,
                content: None,
                json_bodies: 0,
                ended: false,
                closed: false,
                lineage,
                v2026,
                listen,
                principal: principal.clone(),
                foreign,
                wrote_new_id: false,
            }
            .into(),
        );
    }

    fn on_transmit(&mut self, t: &Transmit) {
        let http = t.http;
        let Some(ex) = self.exchanges.get(&http).cloned() else {
            return; // a request the harness did not report: nothing to judge against
        };
        let part = part_of(&t.kind);
        if ex.ended
            && part != Part::End
            && self.judge(assertions::a4_response_in_order(http, &ex, part))
        {
            return;
        }
        if let TransmitKind::Head(head) = &t.kind {
            if self.headers.disagreed(http) {
                if let Some(why) = self.headers.on_head(http, head.status) {
                    self.flag("M5", Some(http), why);
                }
            }
        }
        let said = match &t.kind {
            TransmitKind::Json(m) => Some(m),
            TransmitKind::Event {
                message: Some(o), ..
            } => Some(&o.message),
            _ => None,
        };
        if let Some(m) = said.filter(|m| self.headers.teaches(m)) {
            self.headers.learn(m);
        }
        match &t.kind {
            TransmitKind::Head(head) => self.on_head(
                http,
                &ex,
                head.status,
                head.content,
                head.session_id.as_ref().map(|s| s.as_str()),
            ),
            TransmitKind::Json(m) => {
                if self.check_answer_origin(http, &ex, m) {
                    return;
                }
                self.check_listen(http, &ex, m);
                self.on_json(http, &ex, m)
            }
            TransmitKind::Event { id, message, .. } => {
                self.judge(assertions::m1_no_session_state(
                    http,
                    &ex,
                    None,
                    id.as_deref(),
                ));
                // Why a message was sent is the application's word (`Sent`)
                // where the monitor has it: a copy a fleet instance relays
                // from the store knows the message, not its cause.
                let cause = message.as_ref().map(|o| {
                    ex.session
                        .as_ref()
                        .and_then(|s| self.sent.get(&(s.clone(), o.key)))
                        .unwrap_or(&o.cause)
                        .clone()
                });
                let (key, msg) = match message {
                    Some(o) => (Some(o.key), Some(&o.message)),
                    None => (None, None),
                };
                if let Some(m) = msg {
                    if self.check_answer_origin(http, &ex, m) {
                        return;
                    }
                    self.check_listen(http, &ex, m);
                }
                if let Some(o) = message {
                    let of = o.session.as_str();
                    if self.judge(assertions::i1_own_sessions_message(
                        http, &ex, of, &o.message,
                    )) {
                        return;
                    }
                }
                self.on_event(http, &ex, id.as_deref(), key, msg, cause.as_ref());
            }
            TransmitKind::Comment => {
                self.judge(assertions::a4_response_in_order(http, &ex, part));
            }
            TransmitKind::End(reason) => self.on_end(http, &ex, *reason),
        }
    }

    /// I1 where no session id separates clients (the 2026-07-28 era): a
    /// response the application gave for the request that arrived on one
    /// exchange is written on that exchange's lineage, not on another one
    /// that carries a request under the same id (another client's, whose
    /// ids are its own). Whether it flagged.
    fn check_answer_origin(&mut self, http: HttpId, ex: &Exchange, m: &Message) -> bool {
        let id = match m {
            Message::Response { id, .. } | Message::Error { id: Some(id), .. } => id,
            _ => return false,
        };
        let Some((_, origin)) = self.answering.take_if(|(r, _)| r == id) else {
            return false;
        };
        let from = self.exchanges.get(&origin).map(|e| e.lineage);
        if from.is_none_or(|l| l == ex.lineage) {
            return false;
        }
        self.flag(
            "I1",
            Some(http),
            format!(
                "response to the request of exchange {} written on exchange {}, another caller's under the same id {id:?}",
                origin.0, http.0
            ),
        );
        true
    }

    fn on_head(
        &mut self,
        http: HttpId,
        ex: &Exchange,
        status: u16,
        content: Content,
        session_id: Option<&str>,
    ) {
        if self.judge(assertions::a4_response_in_order(
            http,
            ex,
            Part::Head(status),
        )) {
            return;
        }
        if matches!(ex.kind, Kind::GetResume(_)) && (200..300).contains(&status) {
            if let Some(l) = self.lineages.get_mut(&ex.lineage) {
                l.resumed = true;
            }
        }
        if let Some(e) = self.exchanges.get_mut(&http) {
            e.status = Some(status);
            e.content = Some(content);
            if e.session.is_none() && matches!(e.kind, Kind::Initialize(_)) {
                e.session = session_id.map(Text::from);
            }
        }
        self.judge(assertions::m1_no_session_state(http, ex, session_id, None));
        if let Some(sid) = session_id {
            self.judge(assertions::r21_session_id_visible(http, sid));
            if matches!(ex.kind, Kind::Initialize(_)) && (200..300).contains(&status) {
                let fresh = self.rare.sessions_issued.insert(sid.into());
                if fresh {
                    self.rare.owners.insert(sid.into(), ex.principal.clone());
                }
                self.judge(assertions::i1_session_issued_once(http, sid, fresh));
            }
        }
        self.check_foreign_answer(http, ex, status);
        let accepted = (200..300).contains(&status);
        self.judge(assertions::a1_accepted_without_a_body(
            http,
            ex,
            Part::Head(status),
        ));
        self.judge(assertions::r13_standalone_get_is_a_stream(
            http, ex, status, content,
        ));
        self.check_session_status(http, ex, status);
        if matches!(ex.kind, Kind::Delete) && accepted {
            if let Some(s) = &ex.session {
                self.rare.sessions_deleted.insert(s.clone());
            }
        }
    }

    /// The application broadcast `method`: owed to every acknowledged,
    /// open listen that subscribed to it (M3), news for every client
    /// listening for it (M4).
    fn on_broadcast(&mut self, method: &str, params: &Option<RawJson>) {
        let params = params.as_ref().map(RawJson::to_value);
        let label = listen::label(method, params.as_ref());
        let listens: Vec<HttpId> = self
            .exchanges
            .iter()
            .filter(|(_, e)| !e.closed && !e.ended)
            .filter(|(_, e)| {
                e.listen
                    .as_ref()
                    .and_then(|l| l.1.as_ref())
                    .is_some_and(|f| f.matches(method, params.as_ref()))
            })
            .map(|(h, _)| *h)
            .collect();
        self.owed.broadcast(&label, listens.into_iter());
        for side in self.clients.values_mut() {
            side.heard_broadcast(method, params.as_ref());
        }
    }

    /// M2: a listen's stream opens with its acknowledgement (naming the
    /// subscription); every notification after it names the subscription
    /// and is of a kind the acknowledgement agreed to.
    fn check_listen(&mut self, http: HttpId, ex: &Exchange, m: &Message) {
        use mcp_streamable::v2026::{ListenFilter, META_SUBSCRIPTION_ID};
        let Some(listen) = &ex.listen else {
            return;
        };
        let (id, agreed) = (&listen.0, &listen.1);
        let Message::Notification { method, params } = m else {
            // A refused listen (4xx with its error) never opened a stream.
            let accepted = ex.status.is_some_and(|s| (200..300).contains(&s));
            if agreed.is_none() && accepted {
                self.flag(
                    "M2",
                    Some(http),
                    format!("{} before the acknowledgement", describe(m)),
                );
            }
            let mut flags = Vec::new();
            self.owed.ended(http, &mut flags);
            self.raise(flags);
            return;
        };
        let params = params.as_ref().map(|p| p.to_value());
        let names = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|meta| meta.get(META_SUBSCRIPTION_ID))
            .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
        if names.as_ref() != Some(id) {
            self.flag(
                "M2",
                Some(http),
                format!("{method} on listen {id} does not name it"),
            );
            return;
        }
        match agreed {
            None if method == "notifications/subscriptions/acknowledged" => {
                let filter = params
                    .map(RawJson::from)
                    .and_then(|p| ListenFilter::from_params(Some(&p)))
                    .unwrap_or_default();
                if let Some(e) = self.exchanges.get_mut(&http) {
                    if let Some(l) = &mut e.listen {
                        l.1 = Some(filter);
                    }
                }
            }
            None => self.flag(
                "M2",
                Some(http),
                format!("{method} on listen {id} before its acknowledgement"),
            ),
            Some(filter) if !filter.matches(method, params.as_ref()) => self.flag(
                "M2",
                Some(http),
                format!("{method} on listen {id}, which did not subscribe to it"),
            ),
            Some(_) => self
                .owed
                .written(http, &listen::label(method, params.as_ref())),
        }
    }

    /// The core's account of a session's end. Ended by another principal's
    /// DELETE, it was changed on that principal's behalf, whatever the
    /// DELETE was answered (I2). Ended otherwise (its owner's DELETE, its
    /// application, an expiry), a foreign DELETE seen before it did not end
    /// it, and the owner's 404 after it is no sign that one did.
    fn on_session_ended(&mut self, session: &str, deleted_by: Option<HttpId>) {
        let s: Text = session.into();
        let foreign = deleted_by.and_then(|h| self.exchanges.get(&h).map(|e| e.foreign));
        if foreign == Some(true) {
            self.flag(
                "I2",
                deleted_by,
                format!("session {s} ended by another principal's DELETE"),
            );
        }
        if self.rare.foreign_deletes.contains(&s) {
            self.rare.foreign_deletes.remove(&s);
        }
        if !self.rare.sessions_ended.contains(&s) {
            self.rare.sessions_ended.insert(s);
        }
    }

    /// I2: a request naming a session another principal opened is answered
    /// as one naming no live session (a 4xx refusal: B6 says which), never
    /// served, so nothing of the session reaches that principal and nothing
    /// changes it on its behalf.
    fn check_foreign_answer(&mut self, http: HttpId, ex: &Exchange, status: u16) {
        if !ex.foreign {
            // The owner's own request: its session gone without a DELETE
            // of its own accepted, after another principal's DELETE, was
            // changed on that principal's behalf (whatever it was told).
            if let Some(s) = ex.session.as_ref().filter(|_| status == 404) {
                if self.rare.foreign_deletes.contains(s) && !self.rare.sessions_deleted.contains(s)
                {
                    self.flag(
                        "I2",
                        Some(http),
                        format!(
                            "session {s} gone (404 to its owner) after another principal's DELETE"
                        ),
                    );
                }
            }
            return;
        }
        if (400..500).contains(&status) {
            return;
        }
        let verb = match &ex.kind {
            Kind::GetResume(_) => "resumption (GET with Last-Event-ID)",
            Kind::GetPlain => "GET",
            Kind::Delete => "DELETE",
            _ => "POST",
        };
        let who = ex.principal.as_ref().map_or("anonymous", Principal::as_str);
        self.flag(
            "I2",
            Some(http),
            format!("{verb} by {who} on a session another principal opened answered {status}"),
        );
    }

    /// B6: missing id → 400, unknown or terminated → 404, never 401.
    fn check_session_status(&mut self, http: HttpId, ex: &Exchange, status: u16) {
        let needs_session =
            !ex.v2026 && !matches!(ex.kind, Kind::Initialize(_) | Kind::PostOther | Kind::Other);
        if !needs_session {
            return;
        }
        match &ex.session {
            None if status != 400 => {
                self.flag(
                    "B6",
                    Some(http),
                    format!("request without a session id answered {status}, not 400"),
                );
            }
            Some(s)
                if (!self.rare.sessions_issued.contains(s)
                    || self.rare.sessions_deleted.contains(s))
                    && status != 404 =>
            {
                self.flag(
                    "B6",
                    Some(http),
                    format!("unknown or terminated session answered {status}, not 404"),
                );
            }
            _ => {}
        }
    }

    fn on_json(&mut self, http: HttpId, ex: &Exchange, m: &Message) {
        self.judge(assertions::a4_response_in_order(http, ex, Part::Json));
        if let Some(e) = self.exchanges.get_mut(&http) {
            e.json_bodies += 1;
        }
        self.judge(assertions::a1_accepted_without_a_body(http, ex, Part::Json));
        self.judge(assertions::a2_json_is_the_response(http, ex, m));
    }

    fn on_event(
        &mut self,
        http: HttpId,
        ex: &Exchange,
        id: Option<&str>,
        key: Option<MsgKey>,
        message: Option<&Message>,
        cause: Option<&Cause>,
    ) {
        self.judge(assertions::a4_response_in_order(http, ex, Part::Event));
        self.judge(assertions::a1_accepted_without_a_body(
            http,
            ex,
            Part::Event,
        ));
        let superseded = ex.closed && key.is_some() && self.superseded(http, ex.lineage);
        self.judge(assertions::b4_not_on_a_superseded_connection(
            http, ex, superseded,
        ));
        let replayed = self.on_event_id(http, ex, id, key);
        if let (Some(k), Some(session)) = (key, ex.session.clone()) {
            let sk = (session, k);
            if !ex.closed {
                self.delivered.insert(sk.clone());
            }
            if !replayed {
                let writes = self.fresh_writes.entry(sk.clone()).or_default();
                writes.insert(ex.lineage);
                let streams = writes.len();
                let unrelated = self.sent.get(&sk) == Some(&Cause::Unrelated);
                self.judge(assertions::a5_written_on_one_stream(
                    http, k, streams, unrelated,
                ));
            }
        }
        let Some(message) = message else { return };
        if replayed {
            return; // judged when first written
        }
        self.check_related_on_get(http, ex, message, cause);
        self.check_causality(http, ex, key, message, cause);
        if let (Some(k), Some(Cause::Request(r)), Some(s)) = (key, cause, &ex.session) {
            self.excused(s, r, k);
        }
    }

    /// Message `key` of request `id`, sent before the request's
    /// cancellation, is written: its excuse has done its work. Keeping
    /// only the excuses still owed keeps states that differ in nothing
    /// else one.
    fn excused(&mut self, session: &Text, id: &RequestId, key: MsgKey) {
        // Looked up first: a change copies the shared record, and nearly
        // every message written has no excuse to drop.
        let at = (session.clone(), id.clone());
        if self
            .rare
            .cancelled
            .get(&at)
            .is_some_and(|b| b.contains(&key))
        {
            if let Some(before) = self.rare.cancelled.get_mut(&at) {
                before.remove(&key);
            }
        }
    }

    /// B8: a request or notification for a client request goes on that
    /// request's stream, never on a standalone GET (whose lineage carries
    /// no request). A response there is C1's.
    fn check_related_on_get(
        &mut self,
        http: HttpId,
        ex: &Exchange,
        message: &Message,
        cause: Option<&Cause>,
    ) {
        let Some(Cause::Request(r)) = cause else {
            return;
        };
        if message.is_response() {
            return;
        }
        let get = matches!(ex.kind, Kind::GetPlain | Kind::GetResume(_));
        let standalone = self
            .lineages
            .get(&ex.lineage)
            .is_some_and(|l| l.requests.is_empty());
        if get && standalone {
            self.flag(
                "B8",
                Some(http),
                format!("a message for request {r} written on a standalone GET"),
            );
        }
    }

    /// An event id written on exchange `http`: recorded where it is new
    /// to its session, else judged as written again (R32, B2, B3, B7).
    /// Whether this write is a legal replay.
    fn on_event_id(
        &mut self,
        http: HttpId,
        ex: &Exchange,
        id: Option<&str>,
        key: Option<MsgKey>,
    ) -> bool {
        let (Some(id), Some(session)) = (id, ex.session.clone()) else {
            return false;
        };
        let map_key = (session.clone(), Text::from(id));
        let Some(first) = self.event_ids.get(&map_key).cloned() else {
            let Some(lineage) = self.lineages.get_mut(&ex.lineage) else {
                return false;
            };
            lineage.ids.push(id.into());
            let position = lineage.ids.len() - 1;
            if let Some(e) = self.exchanges.get_mut(&http) {
                e.wrote_new_id = true;
            }
            self.event_ids.insert(
                map_key,
                EventRecord {
                    key,
                    lineage: ex.lineage,
                    position,
                },
            );
            return false;
        };
        let rewrite = self.rewrite(ex, &session, &first, key);
        self.judge(assertions::r32_event_id_names_one_message(
            http, id, &rewrite,
        ));
        self.judge(assertions::b2_replayed_after_the_cursor(http, id, &rewrite));
        self.judge(assertions::b3_replayed_from_its_stream(http, id, &rewrite));
        self.judge(assertions::b7_replay_before_new(http, id, &rewrite));
        rewrite.replays()
    }

    /// What writing again the event first recorded as `first` is, on `ex`.
    fn rewrite<'a>(
        &self,
        ex: &'a Exchange,
        session: &Text,
        first: &EventRecord,
        key: Option<MsgKey>,
    ) -> Rewrite<'a> {
        if first.key != key {
            return Rewrite::OtherMessage;
        }
        let Kind::GetResume(last) = &ex.kind else {
            return Rewrite::NotResumed;
        };
        let from = self.event_ids.get(&(session.clone(), last.as_str().into()));
        let last = last.as_str();
        match from {
            Some(from) if from.lineage != first.lineage => Rewrite::OtherStream { last },
            Some(from) if from.position >= first.position => Rewrite::NotAfter { last },
            Some(_) if ex.wrote_new_id => Rewrite::AfterNewId,
            Some(_) => Rewrite::Replay,
            None => Rewrite::UnknownCursor { last },
        }
    }

    /// Whether a newer exchange of the same lineage was answered and is still open.
    fn superseded(&self, http: HttpId, lineage: HttpId) -> bool {
        let Some(l) = self.lineages.get(&lineage) else {
            return false;
        };
        let Some(pos) = l.connections.iter().position(|h| *h == http) else {
            return false;
        };
        l.connections[pos + 1..].iter().any(|h| {
            self.exchanges.get(h).is_some_and(|e| {
                e.status.is_some_and(|s| (200..300).contains(&s)) && !e.closed && !e.ended
            })
        })
    }

    /// What a stream may carry, by the request it belongs to: a response
    /// only on its request's stream (C1), which it answers; otherwise only
    /// what its requests caused, while one is unanswered (A3). A request
    /// the server had a cancellation for is over for the messages the
    /// application handed over after it (`key`, the message's serial).
    fn check_causality(
        &mut self,
        http: HttpId,
        ex: &Exchange,
        key: Option<MsgKey>,
        message: &Message,
        cause: Option<&Cause>,
    ) {
        if message.is_response() {
            let Some(rid) = message.id().cloned() else {
                return;
            };
            let lineage = &self.lineages[&ex.lineage];
            if self.judge(assertions::c1_response_on_its_stream(http, lineage, &rid)) {
                return;
            }
            // A second copy on its own stream is a replay, judged by on_event_id.
            if let Some(l) = self.lineages.get_mut(&ex.lineage) {
                l.answered.insert(rid);
            }
            return;
        }
        let session = ex.session.clone().unwrap_or_default();
        let lineage = &self.lineages[&ex.lineage];
        let all_answered = lineage
            .requests
            .iter()
            .all(|r| lineage.answered.contains(r) || self.cancelled_for(&session, r, key));
        let found = assertions::a3_caused_by_the_streams_requests(
            http,
            lineage,
            all_answered,
            message,
            cause,
        );
        self.judge(found);
    }

    fn on_end(&mut self, http: HttpId, ex: &Exchange, reason: EndReason) {
        if let Some(e) = self.exchanges.get_mut(&http) {
            e.ended = true;
        }
        if reason == EndReason::SessionEnded {
            if let Some(s) = &ex.session {
                self.rare.sessions_ended.insert(s.clone());
            }
        }
        let replaced = reason == EndReason::Replaced;
        self.judge(assertions::b1_no_stream_replaced(http, ex, replaced));
        self.judge(assertions::a4_response_in_order(http, ex, Part::End));
        if reason == EndReason::Polling {
            self.check_polling_close(http, ex);
        }
    }

    /// B9: a request's stream closed for polling (the server ends the
    /// connection, the stream goes on) has given the client an event id,
    /// on this connection or an earlier one of the stream: a client
    /// resumes only from an id, so a stream closed before any leaves its
    /// request waiting for a response that can no longer reach it.
    fn check_polling_close(&mut self, http: HttpId, ex: &Exchange) {
        let Some(l) = self.lineages.get(&ex.lineage) else {
            return;
        };
        let open = l.requests.iter().any(|r| !l.answered.contains(r));
        if open && l.ids.is_empty() && !ex.closed {
            self.flag(
                "B9",
                Some(http),
                "a request's stream closed for polling before any event id reached the client: \
                 nothing to resume from"
                    .into(),
            );
        }
    }

    // ---- retiring a finished client (`monitor/retire.rs`) --------------

    /// Judges `part`'s end-of-run checks and forgets its records. The
    /// caller vouches that nothing of the part can change again; the
    /// records every session shares (which session ids were issued and
    /// deleted: I1 and B6 judge other clients' requests against them) are
    /// kept.
    pub fn retire(&mut self, part: RetiredPart<'_>) {
        let RetiredPart {
            client,
            sessions,
            owns,
            queued,
            deadline,
        } = part;
        let mine = |s: &Text| sessions.contains(s);
        // The part alone, through the same end-of-run checks as a whole
        // run (`finish`): its client side, its listens' debts, its
        // sessions' messages. The exchanges stay whole: the checks read
        // them by session and lineage.
        let mut alone = self.clone();
        alone.violations = Found::default();
        alone.retired = Shared::default();
        alone.clients.retain(|c, _| *c == client);
        alone.owed.retain(owns);
        alone.sent.retain(|(s, _), _| mine(s));
        alone.finish(queued);
        let mut flags: Vec<Flag> = alone
            .violations
            .0
            .into_iter()
            .map(|v| Flag::new(v.id, v.http, v.detail))
            .collect();
        // L4 is judged over the run's exchanges once it is over (the
        // checker asks `held_open`), and the part's leave with it here.
        let held: Vec<HttpId> = self.held_open().into_iter().filter(|h| owns(*h)).collect();
        flags.extend(assertions::l4_streams_held_open(&held));

        self.exchanges.retain(|h, _| !owns(*h));
        self.lineages.retain(|h, _| !owns(*h));
        self.event_ids.retain(|(s, _), _| !mine(s));
        self.sent.retain(|(s, _), _| !mine(s));
        self.delivered.retain(|(s, _)| !mine(s));
        self.fresh_writes.retain(|(s, _), _| !mine(s));
        Rare::forget(&mut self.rare, mine);
        self.clients.remove(&client);
        self.owed.retain(|h| !owns(h));
        self.retired.insert(client, Retired::new(flags, deadline));
    }

    /// Whether `client` was retired.
    pub fn is_retired(&self, client: usize) -> bool {
        self.retired.contains_key(&client)
    }

    /// The ids of the end-of-run violations the retired clients left, to be
    /// raised at quiescence.
    pub fn retired_flag_ids(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.retired
            .values()
            .flat_map(|r| r.flags().iter().map(|f| f.id))
    }

    /// Whether a retired client left a deadline behind: the run is then not
    /// over (see `Retired`).
    pub fn retired_deadline(&self) -> bool {
        self.retired.values().any(Retired::deadline)
    }

    /// The retired clients' end-of-run flags, for [`Monitor::finish`].
    fn retired_flags(&self) -> Vec<Flag> {
        self.retired
            .values()
            .flat_map(|r| r.flags().iter().cloned())
            .collect()
    }
}

fn part_of(k: &TransmitKind) -> Part {
    match k {
        TransmitKind::Head(head) => Part::Head(head.status),
        TransmitKind::Json(_) => Part::Json,
        TransmitKind::Event { .. } => Part::Event,
        TransmitKind::Comment => Part::Comment,
        TransmitKind::End(_) => Part::End,
    }
}

fn describe(m: &Message) -> String {
    match m.method() {
        Some(method) => method.to_owned(),
        None => "response".to_owned(),
    }
}

/// A violation a part of the monitor found, before the monitor stamps its step.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Flag {
    id: &'static str,
    http: Option<HttpId>,
    detail: String,
}

impl Flag {
    fn new(id: &'static str, http: Option<HttpId>, detail: String) -> Self {
        Flag { id, http, detail }
    }
}

/// A tap that judges every observation with a fresh [`Monitor`] and hands
/// each violation to `report` the moment it is found (a long-running server
/// never reaches the monitor's end-of-run checks, so these are all it gets).
pub fn watching(mut report: impl FnMut(&Violation) + Send + 'static) -> mcp_streamable::app::Tap {
    let mut monitor = Monitor::new();
    let mut reported = 0;
    Box::new(move |o: &Observation| {
        monitor.observe(o);
        for v in &monitor.violations()[reported..] {
            report(v);
        }
        reported = monitor.violations().len();
    })
}

/// L3's bound: resumptions of one request's stream in a row with no message
/// of it read. By default the client core's own (`resume_attempts_max`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct ResumesMax(u32);

impl Default for ResumesMax {
    fn default() -> Self {
        Self(mcp_streamable::client::ClientConfig::default().resume_attempts_max)
    }
}
