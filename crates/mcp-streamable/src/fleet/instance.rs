//! [`Instance`]: one server instance of a fleet, a [`ServerEndpoint`] with
//! the store between it and the other instances.
//!
//! Any request of a session may land on any instance. So:
//!
//! - a request naming a session waits here (at most `parked_max`, then 503)
//!   for the store's word on it ([`SessionGate`]): unknown, deleted or
//!   expired, it gets the endpoint's 404 (a local copy of the session ends
//!   first); alive, the session is taken up from its record if this
//!   instance does not hold it ([`ServerEndpoint::adopt_session`]), and the
//!   request goes to the endpoint as it came;
//! - an `initialize` answered has its session's record stored before the
//!   head carrying the new id goes out, since the client's next request may
//!   go to another instance;
//! - a DELETE is checked, then deleted in the store, then answered by the
//!   endpoint;
//! - every SSE stream this instance numbers is written to its log
//!   ([`StreamLogs`]); stream ids are unique in the fleet (this instance's
//!   range: [`SessionConfig::stream_id_base`](crate::server::SessionConfig::stream_id_base)),
//!   so a `Last-Event-ID` names its log anywhere;
//! - a GET resuming a stream of another instance is served here from that
//!   stream's log by a [`Follower`]: what was written after the client's
//!   cursor, then what is written from now on, each event once, in order,
//!   until the stream's end.
//!
//! Inputs: [`Instance::handle_request`], [`Instance::handle_http_closed`],
//! [`Instance::handle_reply`] and [`Instance::handle_push`] (the store's
//! two connections), [`Instance::handle_timeout`]. Outputs:
//! [`Instance::poll_transmit`] (HTTP), [`Instance::poll_op`] (the store),
//! [`Instance::poll_event`] (the application). Application commands go
//! through [`Instance::session_mut`].

use super::broadcast::Broadcasts;
use super::cancellations;
use super::follow::{Follower, Phase};
use super::gate::{SessionGate, Verdict};
use super::liveness::{completion, Liveness};
use super::mailbox::Claimer;
use super::publish::Publisher;
use super::record::{decode_message, encode_message, SessionRecord};
use super::subscriptions::Subscriptions;
use super::writer::StreamLogs;
use super::{
    Answers, BroadcastDelivery, Cancellations, Entry, Handover, InstanceId, LogKey, Push, Record,
    Relay, ResumedGet, SessionRefresh, StoreOp, StoreReply, Unrelated,
};
use crate::error::RequestError;
use crate::head::{Content, Method, RequestHead, ResponseHead};
use crate::headers;
use crate::id_source::IdSource;
use crate::ids::{EventId, HttpId, MsgKey, RequestId, SessionId, StreamId};
use crate::jsonrpc::{parse_body, Message, RawJson};
use crate::policy::{EventIdScheme, ServerPolicy};
use crate::preset::{Scheduled, SchedulingPoint};
use crate::principal::Caller;
use crate::server::event_ids::EventIdCodec;
use crate::server::{
    request, v2026, Cause, Dispatched, DropReason, EndReason, EndpointConfig, Outgoing,
    ServerEndpoint, ServerEvent, ServerSession, Transmit, TransmitKind, UnreadBody, STREAM_ID_SPAN,
};
use crate::time::Instant;
use crate::version::ProtocolVersion;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// Instance ids a fleet may use: `0 .. INSTANCES_MAX`, each with its own
/// range of stream ids.
pub const INSTANCES_MAX: u16 = (u32::MAX / STREAM_ID_SPAN + 1) as u16;

/// How one instance takes part in its fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InstanceConfig {
    /// This instance (unique in the fleet, below [`INSTANCES_MAX`]).
    pub id: InstanceId,
    /// A session lives this long in the store past its last request.
    pub session_ttl_ms: u64,
    /// Requests waiting for the store at once; past it, 503.
    pub parked_max: usize,
    /// Entries a follower keeps ahead of a missing one
    /// ([`Follower::new`]'s `pending_max`).
    pub follower_pending_max: usize,
    /// How followers subscribe and read ([`Relay::Ordered`]: FIXED).
    pub relay: Relay,
    /// How a request's check refreshes its session
    /// ([`SessionRefresh::Atomic`]: FIXED).
    pub refresh: SessionRefresh,
    /// Mailbox entries taken per claim ([`Claimer::new`]).
    pub claim_max: usize,
    /// GETs served here from other instances' streams at once; past it,
    /// 503. One session keeps at most its `streams_max` of them here: a
    /// newer one ends its oldest (`TakenOver`), so one client cannot take
    /// the instance's share.
    pub relayed_max: usize,
    /// This instance's heartbeat is renewed this often, and a writer whose
    /// streams are followed here is asked about this often ([`Liveness`]).
    pub beat_ms: u64,
    /// A heartbeat lasts this long: an instance silent for longer is dead,
    /// and the calls of its streams followed elsewhere are completed with
    /// an error.
    pub beat_ttl_ms: u64,
    /// Whether a dead writer's streams followed here are completed.
    pub handover: Handover,
    /// What a standalone GET resumed here from a stream whose connection
    /// is gone becomes ([`ResumedGet::ContinueWhereResumed`]: FIXED).
    pub resumed: ResumedGet,
    /// Where an unrelated message of a session whose GET is not here goes
    /// ([`Unrelated::Mailbox`]: FIXED).
    pub unrelated: Unrelated,
    /// What becomes of an answer posted here to a request another instance
    /// sent ([`Answers::Forward`]: FIXED).
    pub answers: Answers,
    /// What becomes of the client's cancellation posted here for a request
    /// this instance is not serving ([`Cancellations::ToTheCall`]: FIXED).
    pub cancellations: Cancellations,
    /// Broadcasts waiting for the store's word on their deliveries at
    /// once ([`Broadcasts`]); past it the oldest is given up (counted in
    /// [`Instance::broadcasts_dropped`]).
    pub broadcasts_pending_max: usize,
    /// How long the store keeps a broadcast's claim on a session: longer
    /// than a broadcast takes to reach every instance.
    pub delivery_claim_ttl_ms: u64,
    /// How a broadcast reaches the fleet's sessions
    /// ([`BroadcastDelivery::Claimed`]: FIXED).
    pub broadcast: BroadcastDelivery,
}

impl Default for InstanceConfig {
    fn default() -> Self {
        InstanceConfig {
            id: InstanceId(0),
            session_ttl_ms: 30 * 60 * 1000,
            parked_max: 1024,
            follower_pending_max: 64,
            relay: Relay::Ordered,
            refresh: SessionRefresh::Atomic,
            claim_max: 16,
            relayed_max: 4096,
            beat_ms: 1000,
            beat_ttl_ms: 3000,
            handover: Handover::CompleteWithError,
            resumed: ResumedGet::ContinueWhereResumed,
            unrelated: Unrelated::Mailbox,
            answers: Answers::Forward,
            cancellations: Cancellations::ToTheCall,
            broadcasts_pending_max: 64,
            delivery_claim_ttl_ms: 5 * 60 * 1000,
            broadcast: BroadcastDelivery::Claimed,
        }
    }
}

/// A fleet setting this crate cannot serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FleetConfigError {
    /// The instance id is [`INSTANCES_MAX`] or more.
    InstanceId(u16),
    /// Event ids must name their stream and session
    /// ([`EventIdScheme::StreamScoped`]); the rmcp schemes' common stream
    /// would be every instance's at once.
    EventIds(EventIdScheme),
}

impl std::fmt::Display for FleetConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FleetConfigError::InstanceId(id) => {
                write!(f, "instance id {id} is not below {INSTANCES_MAX}")
            }
            FleetConfigError::EventIds(s) => {
                write!(f, "a fleet needs stream-scoped event ids, not {s:?}")
            }
        }
    }
}

impl std::error::Error for FleetConfigError {}

/// A request waiting for the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Parked {
    req: HeldRequest,
    session: SessionId,
}

/// A request kept whole until it can be taken up: before the instance is
/// ready ([`Instance::is_ready`]), or, [`Parked`], until the store has
/// answered for its session.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct HeldRequest {
    head: RequestHead,
    body: Vec<u8>,
    caller: Caller,
}

impl HeldRequest {
    fn new(head: &RequestHead, body: &[u8], caller: &Caller) -> Self {
        HeldRequest {
            head: head.clone(),
            body: body.to_vec(),
            caller: caller.clone(),
        }
    }
}

/// A GET served here from the log of a stream this endpoint does not
/// keep, or whose GET is gone.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Relayed {
    session: SessionId,
    stream: StreamId,
    codec: EventIdCodec,
    follower: Follower,
    head_sent: bool,
    /// The GET as it came, to go on as the session's GET here if the log
    /// is released ([`Record::Released`]).
    head: RequestHead,
    caller: Caller,
    /// Its writer was found dead and its log completed (or left as it is,
    /// under [`Handover::Abandon`] or [`ResumedGet::FollowLog`]): the
    /// writer is not asked about again for it.
    writer_dead: bool,
}

/// What a relayed GET does after its follower's latest entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Relaying {
    /// Goes on following.
    Following,
    /// Over (ended, refused, or its log lost).
    Over,
    /// Its log was released: it goes on as the session's GET here.
    Released,
}

/// A relayed GET gone on as the session's GET here after its head went
/// out: the endpoint's head for it is not sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Continued {
    /// The endpoint's head is still to come.
    AwaitingHead,
    /// The endpoint refused it (an error response): its head and body are
    /// not sent; its end ends the stream, and the client resumes.
    Refused,
}

/// Who a reply on the command connection answers (replies come in op order).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Waiter {
    Gate,
    Log(LogKey),
    Follower(HttpId),
    /// An append to a session's mailbox or an instance's answers.
    Append(LogKey),
    /// A claim from a session's mailbox or this instance's answers.
    Claim(LogKey),
    /// Whether a writer's heartbeat is current.
    Alive,
    /// A dead writer's log read whole, to complete it.
    Completing(LogKey),
    /// The completion of a dead writer's log.
    Completed(LogKey),
    /// A claim on a broadcast's delivery to a session.
    Delivery,
}

/// Who follows a subscribed log here.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Subscriber {
    /// A GET relayed from another instance's stream.
    Relayed(HttpId),
    /// A session's mailbox, claimed from while its GET is attached here;
    /// or this instance's answers for a session, claimed from while the
    /// session awaits answers to requests sent from here.
    Claimer(LogKey),
    /// A session's control channel, listened to while the copy that
    /// answered `initialize` here waits for `notifications/initialized`.
    Control(SessionId),
    /// The fleet's broadcast channel, once the instance has joined.
    Broadcasts,
    /// The fleet's cancellations channel, once the instance has joined.
    Cancellations,
}

/// An `initialize` answered here, withheld until its session's record is
/// stored and its control channel listened to (the client's next request,
/// `notifications/initialized` included, may land on any instance).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Creating {
    session: SessionId,
    stored: bool,
    listening: bool,
}

/// One instance of a fleet (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Instance {
    config: InstanceConfig,
    endpoint: ServerEndpoint,
    gate: SessionGate,
    parked: BTreeMap<HttpId, Parked>,
    /// Requests held until the instance is ready, in arrival order (exchange
    /// ids grow); they count against `parked_max` with `parked`.
    early: BTreeMap<HttpId, HeldRequest>,
    relayed: BTreeMap<HttpId, Relayed>,
    subscriptions: Subscriptions<Subscriber>,
    logs: StreamLogs,
    /// Mailboxes of sessions with a GET attached here, and this instance's
    /// answers for sessions awaiting them: claimed from.
    claimers: BTreeMap<LogKey, Claimer>,
    /// Appends on their way: what sessions with no GET here held, to their
    /// mailboxes; answers posted here to other instances' requests, to
    /// those instances' answers logs.
    outboxes: BTreeMap<LogKey, Publisher>,
    /// `initialize` exchanges whose session's record is being stored; what
    /// they transmit waits in `withheld` till then.
    creating: BTreeMap<HttpId, Creating>,
    withheld: BTreeMap<HttpId, Vec<Transmit>>,
    /// Sessions changed since their logs were last synced.
    touched: BTreeSet<SessionId>,
    /// The log of the stream each SSE exchange of the endpoint carries (by
    /// its last event), to log the stream's end.
    tapped: BTreeMap<HttpId, LogKey>,
    waiters: VecDeque<Waiter>,
    ops: VecDeque<StoreOp>,
    out: VecDeque<Transmit>,
    /// This instance's heartbeat and the watch on the writers it follows.
    liveness: Liveness,
    /// Logs of dead writers being completed here.
    completing: BTreeSet<LogKey>,
    /// Whether this instance listens to the fleet's cancellations channel
    /// (and so publishes there the cancellations it does not serve).
    cancellations_joined: bool,
    /// Relayed GETs gone on as the session's GET here (see [`Continued`]).
    continued: BTreeMap<HttpId, Continued>,
    /// The fleet's broadcasts, made here and elsewhere.
    broadcasts: Broadcasts,
}

impl Instance {
    /// Instance `config.id` of a fleet: an endpoint with `endpoint`'s
    /// settings (its streams numbered in this instance's range), `policy`,
    /// ids from `ids`.
    pub fn new(
        config: InstanceConfig,
        mut endpoint: EndpointConfig,
        policy: ServerPolicy,
        ids: IdSource,
    ) -> Result<Self, FleetConfigError> {
        if config.id.0 >= INSTANCES_MAX {
            return Err(FleetConfigError::InstanceId(config.id.0));
        }
        if policy.event_ids != EventIdScheme::StreamScoped {
            return Err(FleetConfigError::EventIds(policy.event_ids));
        }
        endpoint.session.stream_id_base = u32::from(config.id.0) * STREAM_ID_SPAN;
        Ok(Instance {
            gate: SessionGate::new(config.refresh, config.session_ttl_ms),
            config,
            endpoint: ServerEndpoint::with_ids(endpoint, policy, ids),
            parked: BTreeMap::new(),
            early: BTreeMap::new(),
            relayed: BTreeMap::new(),
            subscriptions: Subscriptions::default(),
            logs: StreamLogs::default(),
            claimers: BTreeMap::new(),
            outboxes: BTreeMap::new(),
            creating: BTreeMap::new(),
            withheld: BTreeMap::new(),
            touched: BTreeSet::new(),
            tapped: BTreeMap::new(),
            waiters: VecDeque::new(),
            ops: VecDeque::new(),
            out: VecDeque::new(),
            liveness: Liveness::new(config.id, config.beat_ms, config.beat_ttl_ms),
            completing: BTreeSet::new(),
            continued: BTreeMap::new(),
            cancellations_joined: false,
            broadcasts: Broadcasts::new(
                config.id,
                config.broadcasts_pending_max,
                config.delivery_claim_ttl_ms,
            ),
        })
    }

    // ---- getters -------------------------------------------------------

    /// This instance's settings.
    pub fn config(&self) -> &InstanceConfig {
        &self.config
    }

    /// The endpoint, read-only.
    pub fn endpoint(&self) -> &ServerEndpoint {
        &self.endpoint
    }

    /// Requests waiting for the store.
    pub fn parked_len(&self) -> usize {
        self.parked.len()
    }

    /// Requests held until the instance is ready ([`Self::is_ready`]).
    pub fn early_len(&self) -> usize {
        self.early.len()
    }

    /// GETs served here from other instances' streams.
    pub fn relayed_len(&self) -> usize {
        self.relayed.len()
    }

    /// Logs subscribed here.
    pub fn subscriptions_len(&self) -> usize {
        self.subscriptions.len()
    }

    /// Logs this instance writes.
    pub fn logs(&self) -> &StreamLogs {
        &self.logs
    }

    /// Whether stream `id` is numbered by this instance.
    pub fn owns(&self, id: StreamId) -> bool {
        numbered_by(self.config.id, id)
    }

    // ---- inputs --------------------------------------------------------

    /// One HTTP request, head and whole body; the exchange id every
    /// transmit for it names.
    pub fn handle_request(
        &mut self,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> HttpId {
        let http = self.endpoint.reserve_http();
        if self.is_ready() {
            self.take_request(http, head, body, caller, now);
        } else if self.parked.len() + self.early.len() >= self.config.parked_max {
            self.endpoint.refuse(http, &RequestError::Overloaded);
        } else {
            self.early
                .insert(http, HeldRequest::new(head, body, caller));
        }
        self.settle(now);
        http
    }

    /// Request `http` taken up: to the endpoint at once if it names no
    /// session, held for the store's word on its session otherwise.
    fn take_request(
        &mut self,
        http: HttpId,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) {
        match self.session_named(head, body) {
            None => {
                let d = self.dispatch(http, head, body, caller, now);
                let opened = head.method == Method::Post
                    && d.outcome.is_ok()
                    && head.header(headers::MCP_SESSION_ID).is_none();
                if let Some(sid) = d.session.filter(|_| opened) {
                    self.open(http, sid);
                }
            }
            Some(_) if self.parked.len() >= self.config.parked_max => {
                self.endpoint.refuse(http, &RequestError::Overloaded);
            }
            Some(session) => {
                let held = self
                    .endpoint
                    .session(&session)
                    .is_some_and(|s| !s.is_ended());
                self.gate.check(http.0, session.clone(), !held);
                let parked = Parked {
                    req: HeldRequest::new(head, body, caller),
                    session,
                };
                self.parked.insert(http, parked);
            }
        }
    }

    /// The requests that came before the instance was ready, taken up in
    /// the order they came, once it is.
    fn take_early(&mut self, now: Instant) {
        if !self.is_ready() {
            return;
        }
        for (http, r) in std::mem::take(&mut self.early) {
            self.take_request(http, &r.head, &r.body, &r.caller, now);
        }
    }

    /// A request whose body could not be read (too large, unreadable, too
    /// slow): refused at once, as by the endpoint alone.
    pub fn handle_unread_body(
        &mut self,
        head: &RequestHead,
        why: UnreadBody,
        now: Instant,
    ) -> HttpId {
        let d = self.endpoint.handle_unread_body(head, why, now);
        self.settle(now);
        d.http
    }

    /// Exchange `http` is over (answered, or the client went away).
    pub fn handle_http_closed(&mut self, http: HttpId, now: Instant) {
        self.parked.remove(&http);
        self.early.remove(&http);
        self.creating.remove(&http);
        self.withheld.remove(&http);
        self.tapped.remove(&http);
        self.continued.remove(&http);
        if let Some(mut r) = self.relayed.remove(&http) {
            r.follower.close();
            self.take_follower_ops(http, &mut r);
        } else {
            if let Some(sid) = self.endpoint.route(http) {
                self.touched.insert(sid.clone());
            }
            self.endpoint.handle_http_closed(http, now);
        }
        self.settle(now);
    }

    /// A reply on the store's command connection.
    pub fn handle_reply(&mut self, reply: StoreReply, now: Instant) {
        match self.waiters.pop_front() {
            Some(Waiter::Gate) => {
                self.gate.handle_reply(reply);
                self.decide(now);
            }
            Some(Waiter::Log(log)) => self.logs.handle_reply(&log, reply),
            Some(Waiter::Follower(http)) => {
                if let Some(r) = self.relayed.get_mut(&http) {
                    r.follower.handle_reply(reply);
                }
            }
            Some(Waiter::Append(log)) => {
                if let StoreReply::Appended { evicted, .. } = &reply {
                    self.report_evicted(&log, evicted);
                }
                if let Some(p) = self.outboxes.get_mut(&log) {
                    p.handle_reply(reply);
                }
            }
            Some(Waiter::Claim(log)) => {
                if let Some(c) = self.claimers.get_mut(&log) {
                    c.handle_reply(reply);
                }
            }

            Some(Waiter::Alive) => {
                if let StoreReply::Alive { instance, alive } = reply {
                    self.liveness.handle_alive(instance, alive);
                }
            }
            Some(Waiter::Completing(log)) => self.complete(log, reply),
            Some(Waiter::Delivery) => {
                if let StoreReply::Delivery { session, id, won } = reply {
                    self.deliver_broadcast(&session, id, won, now);
                }
            }
            Some(Waiter::Completed(log)) => {
                self.completing.remove(&log);
                if let StoreReply::Completed { log, appended } = reply {
                    for entry in appended {
                        let log = log.clone();
                        self.ops.push_back(StoreOp::Publish { log, entry });
                    }
                }
            }
            None => {}
        }
        self.settle(now);
    }

    /// Something on the store's subscriber connection.
    pub fn handle_push(&mut self, push: Push, now: Instant) {
        match &push {
            Push::Subscribed { log } => {
                self.subscriptions.handle_subscribed(log);
                self.take_early(now);
            }
            Push::Published { log, .. } => {
                let followers: Vec<Subscriber> =
                    self.subscriptions.followers(log).cloned().collect();
                for who in followers {
                    self.hand_push(who, push.clone(), now);
                }
            }
        }
        self.settle(now);
    }

    /// A push for one follower of its log.
    fn hand_push(&mut self, who: Subscriber, push: Push, now: Instant) {
        match who {
            Subscriber::Relayed(http) => {
                if let Some(r) = self.relayed.get_mut(&http) {
                    r.follower.handle_push(push);
                }
            }
            Subscriber::Claimer(log) => {
                if let Some(c) = self.claimers.get_mut(&log) {
                    c.handle_push(&push);
                }
            }
            Subscriber::Cancellations => {
                if let Push::Published { entry, .. } = push {
                    self.take_cancelled(&entry, now);
                }
            }
            Subscriber::Broadcasts => {
                if let Push::Published { entry, .. } = push {
                    if let Some((id, method, params)) = self.broadcasts.handle_published(&entry) {
                        self.take_broadcast(id, &method, params, now);
                    }
                }
            }
            Subscriber::Control(sid) => match push {
                Push::Subscribed { .. } => self.listening(&sid),
                Push::Published { .. } => {
                    if let Some(s) = self.endpoint.session_mut(&sid) {
                        s.confirm_initialized(now);
                        self.touched.insert(sid);
                    }
                }
            },
        }
    }

    /// Time has reached `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        // Which session a timer was for is the endpoint's to know: when
        // one was due, every session is synced; a heartbeat alone syncs none.
        let due = self.endpoint.poll_timeout().is_some_and(|(t, _)| t <= now);
        self.endpoint.handle_timeout(now);
        self.liveness.handle_timeout(now);
        if due {
            self.touched
                .extend(self.endpoint.named_session_ids().cloned());
        }
        self.settle(now);
    }

    // ---- commands ------------------------------------------------------

    /// A session, for the application's commands (`respond`, `notify`, …);
    /// what they produce surfaces through the `poll_*` methods once the
    /// instance is next given an input or [`Self::flush`] is called.
    pub fn session_mut(&mut self, id: &SessionId) -> Option<&mut ServerSession> {
        self.touched.insert(id.clone());
        self.endpoint.session_mut(id)
    }

    /// The endpoint, for an application's turn on `sid` (a
    /// [`Cx`](crate::app::Cx)): the session is synced at the next
    /// [`Self::flush`].
    pub(crate) fn endpoint_for_app(&mut self, sid: &SessionId) -> &mut ServerEndpoint {
        self.touched.insert(sid.clone());
        &mut self.endpoint
    }

    /// Whether the instance takes requests up: the store has confirmed its
    /// subscription to each of the fleet's channels it joined (broadcasts,
    /// cancellations). Until then a request waits (counted against
    /// `parked_max`): a session whose copy here got a request before the
    /// subscription took effect would miss a broadcast, or a cancellation
    /// of that request, published meanwhile by another instance, which the
    /// store never sends to a subscriber that was not there yet. (Found by
    /// the fleet world with a broadcast step.) A shell's readiness probe
    /// reports this.
    pub fn is_ready(&self) -> bool {
        let joined = |yes: bool, log: LogKey| !yes || self.subscriptions.is_confirmed(&log);
        joined(self.broadcasts.is_joined(), LogKey::broadcasts())
            && joined(self.cancellations_joined, LogKey::cancellations())
    }

    /// Takes part in the fleet's broadcasts from now on: subscribes to the
    /// broadcast channel, and [`Self::broadcast`] reaches every instance's
    /// sessions ([`super::broadcast`]). Without it, a broadcast reaches the
    /// sessions held here only. Returns whether it joined now (`false`:
    /// it had already; nothing changes).
    pub fn join_broadcasts(&mut self) -> bool {
        if self.broadcasts.is_joined() {
            return false;
        }
        self.broadcasts.join(self.endpoint.fork_entropy());
        self.subscriptions
            .subscribe(Subscriber::Broadcasts, LogKey::broadcasts());
        while let Some(op) = self.subscriptions.poll_op() {
            self.ops.push_back(op);
        }
        true
    }

    /// Listens to the fleet's cancellations channel from now on
    /// ([`super::cancellations`]): a cancellation posted here for a request
    /// another instance serves is published there, and one published by
    /// another instance for a request served here is taken here. Requests
    /// wait until the subscription is in effect ([`Self::is_ready`]), so
    /// none is served here before a cancellation of it can arrive. Without
    /// it, a cancellation reaches the copy it is posted to only. Returns
    /// whether it joined now.
    pub fn join_cancellations(&mut self) -> bool {
        if std::mem::replace(&mut self.cancellations_joined, true) {
            return false;
        }
        self.subscriptions
            .subscribe(Subscriber::Cancellations, LogKey::cancellations());
        while let Some(op) = self.subscriptions.poll_op() {
            self.ops.push_back(op);
        }
        true
    }

    /// A broadcast by the application (a list changed): to every session
    /// of the fleet, each once, if this instance joined the fleet's
    /// broadcasts; to the sessions held here otherwise. Returns how many
    /// got it here at once (2026-07-28 listens, and every session unjoined);
    /// the session-era sessions of a joined instance get it once their
    /// claims come back.
    pub fn broadcast(&mut self, method: &str, params: Option<RawJson>, now: Instant) -> usize {
        let publication = match self.config.broadcast {
            BroadcastDelivery::Claimed | BroadcastDelivery::EveryCopy => {
                self.broadcasts.publish(method, params.clone())
            }
            BroadcastDelivery::InstanceOnly => None,
        };
        let Some((id, publication)) = publication else {
            let sent = self.endpoint.broadcast(method, params, now);
            self.touch_all();
            self.settle(now);
            return sent.len();
        };
        self.ops.push_back(publication);
        let sent = self.take_broadcast(id, method, params, now);
        self.settle(now);
        sent
    }

    /// Deliveries given up because more than
    /// [`InstanceConfig::broadcasts_pending_max`] broadcasts waited for
    /// their claims at once.
    pub fn broadcasts_dropped(&self) -> u64 {
        self.broadcasts.dropped()
    }

    /// Every session here is synced at the next [`Self::flush`] (after a
    /// broadcast, which may have reached any of them).
    pub fn touch_all(&mut self) {
        self.touched
            .extend(self.endpoint.named_session_ids().cloned());
    }

    /// The applications' secret ([`ServerEndpoint::set_app_secret`]): one
    /// for the whole fleet.
    pub fn set_app_secret(&mut self, key: [u8; 32]) {
        self.endpoint.set_app_secret(key);
    }

    /// Moves what the application's commands produced to the outputs.
    pub fn flush(&mut self, now: Instant) {
        self.settle(now);
    }

    // ---- outputs -------------------------------------------------------

    /// The next HTTP output.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// The next op for the store; [`StoreOp::conn`] says which connection.
    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.ops.pop_front()
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<(SessionId, ServerEvent)> {
        self.endpoint.poll_event()
    }

    /// Whether this instance watches another's liveness or completes a
    /// dead writer's stream: its timers then matter to a client; a
    /// heartbeat alone does not.
    pub fn is_watching(&self) -> bool {
        self.liveness.is_watching() || !self.completing.is_empty()
    }

    /// The next deadline (the endpoint's timers, the heartbeat, the watch
    /// on writers).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let fleet = self.liveness.poll_timeout();
        Some(match self.endpoint.poll_timeout() {
            Some((t, _)) => t.min(fleet),
            None => fleet,
        })
    }

    // ---- internals -----------------------------------------------------

    /// The session a request must be checked for: the one it names, unless
    /// it is a 2026-07-28 request (whose session header means nothing) or the
    /// id is malformed (the endpoint answers that itself).
    fn session_named(&self, head: &RequestHead, body: &[u8]) -> Option<SessionId> {
        let text = head.header(headers::MCP_SESSION_ID)?;
        let version = request::protocol_version_of(head, body).ok().flatten();
        if version.is_some_and(|v| v.is_v2026())
            || (head.method == Method::Post && v2026::is_v2026(version, body))
        {
            return None;
        }
        text.parse().ok()
    }

    fn dispatch(
        &mut self,
        http: HttpId,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> Dispatched {
        let d = self.endpoint.handle_reserved(http, head, body, caller, now);
        self.touched.extend(d.session.clone());
        d
    }

    /// `initialize` on `http` opened `sid`: store its record; the answer
    /// waits for that.
    fn open(&mut self, http: HttpId, sid: SessionId) {
        let Some(s) = self.endpoint.session(&sid) else {
            return;
        };
        if s.version().is_v2026() {
            return;
        }
        let record = SessionRecord {
            version: s.version(),
            namespace: s.namespace(),
            principal: s.principal().cloned(),
        };
        let creating = Creating {
            session: sid.clone(),
            stored: false,
            listening: false,
        };
        self.creating.insert(http, creating);
        self.gate.create(http.0, sid.clone(), record.encode());
        let log = LogKey::control(sid.clone());
        self.subscriptions.subscribe(Subscriber::Control(sid), log);
    }

    /// What the gate decided.
    fn decide(&mut self, now: Instant) {
        while let Some(tag) = self.gate.poll_created() {
            let http = HttpId(tag);
            if let Some(c) = self.creating.get_mut(&http) {
                c.stored = true;
            }
            self.release(http);
        }
        while let Some((tag, verdict)) = self.gate.poll_verdict() {
            let http = HttpId(tag);
            let Some(p) = self.parked.remove(&http) else {
                continue; // the client went away meanwhile
            };
            let record = match verdict {
                Verdict::Admitted { record, adoption } => {
                    SessionRecord::decode(&record).map(|r| (r, adoption))
                }
                Verdict::Unknown => None,
            };
            match record {
                Some((record, adoption)) => self.admitted(http, p, record, adoption, now),
                None => {
                    self.end_local(&p.session, now);
                    self.dispatch(http, &p.req.head, &p.req.body, &p.req.caller, now);
                }
            }
        }
        while let Some((tag, existed)) = self.gate.poll_deleted() {
            let http = HttpId(tag);
            let Some(p) = self.parked.remove(&http) else {
                continue;
            };
            if !existed {
                self.end_local(&p.session, now);
            }
            self.dispatch(http, &p.req.head, &p.req.body, &p.req.caller, now);
            self.end_relayed(&p.session);
        }
    }

    /// The `initialize` answer on `http` goes out once its record is stored
    /// and its control channel listened to.
    fn release(&mut self, http: HttpId) {
        if !self
            .creating
            .get(&http)
            .is_some_and(|c| c.stored && c.listening)
        {
            return;
        }
        self.creating.remove(&http);
        if let Some(held) = self.withheld.remove(&http) {
            self.out.extend(held);
        }
    }

    /// The control channel of `sid` is listened to (or given up): the
    /// `initialize` answers waiting for it may go.
    fn listening(&mut self, sid: &SessionId) {
        let waiting: Vec<HttpId> = self
            .creating
            .iter_mut()
            .filter(|(_, c)| &c.session == sid)
            .map(|(h, c)| {
                c.listening = true;
                *h
            })
            .collect();
        for http in waiting {
            self.release(http);
        }
    }

    /// The store knows the session: take it up if need be, then serve.
    fn admitted(
        &mut self,
        http: HttpId,
        p: Parked,
        record: SessionRecord,
        adoption: u32,
        now: Instant,
    ) {
        let sid = p.session.clone();
        let binding = self.endpoint.policy().session_binding;
        if !binding.serves(record.principal.as_ref(), p.req.caller.principal.as_ref()) {
            // Another principal's session: this caller is answered as for
            // one the store does not know, before anything is done for it
            // (no adoption, no answers forwarded, no relay, no delete): the
            // endpoint, which holds no copy or one bound to its owner,
            // answers 404.
            self.dispatch(http, &p.req.head, &p.req.body, &p.req.caller, now);
            return;
        }
        if let Err(e) = self.endpoint.adopt_session(
            sid.clone(),
            record.version,
            record.namespace,
            adoption,
            record.principal.clone(),
            now,
        ) {
            self.endpoint.refuse(http, &e);
            return;
        }
        self.touched.insert(sid.clone());
        if posted_method(&p.req.head, &p.req.body) == Some("notifications/initialized") {
            // Whichever instance answered `initialize` may be waiting.
            self.ops.push_back(StoreOp::Publish {
                log: LogKey::control(sid.clone()),
                entry: Entry {
                    seq: 0,
                    record: Record::Blank,
                },
            });
        }
        if past_handshake(&p.req.head, &p.req.body) {
            if let Some(s) = self.endpoint.session_mut(&sid) {
                s.confirm_initialized(now);
            }
        }
        if p.req.head.method == Method::Post {
            self.forward_answers(&sid, record.version, &p.req.body);
            self.forward_cancellations(&sid, record.version, &p.req.body);
        }
        if p.req.head.method == Method::Delete {
            self.gate.delete(http.0, sid);
            self.parked.insert(http, p);
            return;
        }
        if let Some(cursor) = self.foreign_cursor(&p) {
            self.relay(http, &p, cursor, record);
            return;
        }
        self.dispatch(http, &p.req.head, &p.req.body, &p.req.caller, now);
    }

    /// A GET's `Last-Event-ID` naming a stream to be served from its log:
    /// one of another instance that this endpoint does not keep, or (under
    /// [`ResumedGet::ContinueWhereResumed`]) a standalone stream of this
    /// one whose GET is gone, which its log says it released.
    fn foreign_cursor(&self, p: &Parked) -> Option<EventId> {
        if p.req.head.method != Method::Get {
            return None;
        }
        let text = p.req.head.header(headers::LAST_EVENT_ID)?;
        let session = self.endpoint.session(&p.session)?;
        let cursor = session.parse_event_id(text)?;
        if LogKey::is_reserved(cursor.stream) {
            // No instance numbers a stream there (a mailbox, a control
            // channel, an instance's answers): the endpoint refuses it as
            // naming nothing.
            return None;
        }
        let kept = session.streams().find(|s| s.id == cursor.stream);
        let released = self.config.resumed == ResumedGet::ContinueWhereResumed
            && kept.is_some_and(|s| s.is_standalone() && s.attached.is_none());
        let foreign = !self.owns(cursor.stream) && kept.is_none();
        (foreign || released).then_some(cursor)
    }

    /// Serves GET `http` from the log of another instance's stream.
    fn relay(&mut self, http: HttpId, p: &Parked, cursor: EventId, record: SessionRecord) {
        if self.relayed.len() >= self.config.relayed_max {
            self.endpoint.refuse(http, &RequestError::Overloaded);
            return;
        }
        let mine: Vec<HttpId> = self
            .relayed
            .iter()
            .filter(|(_, r)| r.session == p.session)
            .map(|(h, _)| *h)
            .collect();
        let streams_max = self.endpoint.config().session.streams_max;
        let excess = (mine.len() + 1).saturating_sub(streams_max.max(1));
        for old in mine.into_iter().take(excess) {
            self.end_one_relayed(old, EndReason::TakenOver);
        }
        let log = LogKey {
            session: p.session.clone(),
            stream: cursor.stream,
        };
        let mut follower = Follower::new(
            log,
            cursor.seq,
            self.config.relay,
            self.config.follower_pending_max,
        );
        follower.start();
        let r = Relayed {
            session: p.session.clone(),
            stream: cursor.stream,
            codec: EventIdCodec::new(EventIdScheme::StreamScoped, record.namespace),
            follower,
            head_sent: false,
            head: p.req.head.clone(),
            caller: p.req.caller.clone(),
            writer_dead: false,
        };
        self.relayed.insert(http, r);
    }

    /// The store says the session is gone: end this instance's copy.
    fn end_local(&mut self, sid: &SessionId, now: Instant) {
        if self.endpoint.session(sid).is_some() {
            self.endpoint.evict(sid, now);
            self.touched.insert(sid.clone());
        }
        self.end_relayed(sid);
    }

    /// Ends the GETs relayed here for `sid` (the session is over).
    fn end_relayed(&mut self, sid: &SessionId) {
        let ended: Vec<HttpId> = self
            .relayed
            .iter()
            .filter(|(_, r)| &r.session == sid)
            .map(|(h, _)| *h)
            .collect();
        for http in ended {
            self.end_one_relayed(http, EndReason::SessionEnded);
        }
    }

    /// Ends one relayed GET: before its head, as an unknown session would
    /// be (`SessionEnded`) or as overloaded; after it, with `reason`.
    fn end_one_relayed(&mut self, http: HttpId, reason: EndReason) {
        let Some(mut r) = self.relayed.remove(&http) else {
            return;
        };
        if r.head_sent {
            self.push(http, TransmitKind::End(reason));
        } else if reason == EndReason::SessionEnded {
            let e = RequestError::UnknownSession {
                unauthorized: false,
            };
            self.endpoint.refuse(http, &e);
        } else {
            self.endpoint.refuse(http, &RequestError::Overloaded);
        }
        r.follower.close();
        self.take_follower_ops(http, &mut r);
    }

    /// Mutate, then drain: logs synced, transmits and ops moved out, until
    /// nothing moves.
    fn settle(&mut self, now: Instant) {
        self.decide(now);
        self.pump_relayed(now);
        self.take_claimed(now);
        while let Some(t) = self.endpoint.poll_transmit() {
            self.tap(&t);
            let Some(t) = self.continued_transmit(t) else {
                continue;
            };
            match self.withheld.get_mut(&t.http) {
                Some(held) => held.push(t),
                None if self.creating.contains_key(&t.http) => {
                    self.withheld.insert(t.http, vec![t]);
                }
                None => self.out.push_back(t),
            }
        }
        for sid in std::mem::take(&mut self.touched) {
            match self.endpoint.session(&sid) {
                Some(s) if !s.is_ended() && !s.version().is_v2026() => {
                    let id = self.config.id;
                    let ready = s.is_initialized();
                    let resumed = self.config.resumed;
                    self.logs.sync(s, |stream| numbered_by(id, stream), resumed);
                    self.sync_mailbox(&sid);
                    self.sync_answers(&sid);
                    if ready {
                        self.stop_listening(&sid);
                    }
                }
                _ => {
                    self.logs.forget(&sid);
                    let me = self.config.id;
                    for log in [
                        LogKey::mailbox(sid.clone()),
                        LogKey::answers(sid.clone(), me),
                    ] {
                        if let Some(c) = self.claimers.get_mut(&log) {
                            c.close();
                        }
                    }
                    self.stop_listening(&sid);
                }
            }
        }
        while let Some(op) = self.gate.poll_op() {
            self.send(Waiter::Gate, op);
        }
        while let Some((log, op)) = self.logs.poll_op() {
            self.send(Waiter::Log(log), op);
        }
        self.mailbox_ops();
        self.watch_writers(now);
    }

    /// The writers of the streams relayed here are watched; those found
    /// dead have the streams followed here completed.
    fn watch_writers(&mut self, now: Instant) {
        let writers: BTreeSet<InstanceId> = match self.config.handover {
            Handover::CompleteWithError => self
                .relayed
                .values()
                .filter(|r| !r.writer_dead)
                .map(|r| writer_of(r.stream))
                .collect(),
            Handover::Abandon => BTreeSet::new(),
        };
        self.liveness.watch(writers, now);
        while let Some(dead) = self.liveness.poll_dead() {
            let mut logs = BTreeSet::new();
            for r in self.relayed.values_mut() {
                if writer_of(r.stream) == dead && !r.writer_dead {
                    r.writer_dead = true;
                    logs.insert(LogKey {
                        session: r.session.clone(),
                        stream: r.stream,
                    });
                }
            }
            for log in logs {
                if self.completing.insert(log.clone()) {
                    let read = StoreOp::Read {
                        log: log.clone(),
                        after: 0,
                    };
                    self.send(Waiter::Completing(log), read);
                }
            }
        }
        while let Some(op) = self.liveness.poll_op() {
            self.send(Waiter::Alive, op);
        }
    }

    /// A dead writer's log, read whole: what completes it (a POST stream's:
    /// an error for every request it still owed, then the end; a standalone
    /// stream's: its release), appended unless it ended meanwhile. One
    /// already over, or one whose opening was trimmed, is left as it is.
    fn complete(&mut self, log: LogKey, reply: StoreReply) {
        let StoreReply::Read { entries, .. } = reply else {
            self.completing.remove(&log);
            return;
        };
        match completion(&entries, self.config.resumed) {
            Some(records) => self.send(
                Waiter::Completed(log.clone()),
                StoreOp::Complete { log, records },
            ),
            None => {
                self.completing.remove(&log);
            }
        }
    }

    /// The copy of `sid` here is ready or gone: its control channel is not
    /// listened to any more (an answer still waiting for it goes).
    /// Broadcast `id`, made here or elsewhere, for the sessions held here:
    /// 2026-07-28 listens notified at once, session-era copies claimed first.
    /// Returns how many were notified at once.
    fn take_broadcast(
        &mut self,
        id: u64,
        method: &str,
        params: Option<RawJson>,
        now: Instant,
    ) -> usize {
        let value = params.as_ref().map(RawJson::to_value);
        let (listens, copies): (Vec<SessionId>, Vec<SessionId>) = self
            .endpoint
            .broadcast_targets(method, value.as_ref())
            .into_iter()
            .partition(|sid| self.endpoint.is_v2026(sid));
        let mut sent = 0;
        for sid in &listens {
            let got =
                self.endpoint
                    .notify_of_broadcast(sid, method, params.clone(), value.as_ref(), now);
            sent += usize::from(got.is_some());
        }
        match self.config.broadcast {
            BroadcastDelivery::Claimed | BroadcastDelivery::InstanceOnly => {
                for op in self.broadcasts.claim(id, method, params, &copies) {
                    self.send(Waiter::Delivery, op);
                }
            }
            BroadcastDelivery::EveryCopy => {
                for sid in &copies {
                    self.notify_copy(sid, method, params.clone(), value.as_ref(), now);
                }
            }
        }
        sent
    }

    /// The store's word on a claim of broadcast `id` for `sid`: taken here,
    /// the copy here is notified (its GET here, or its mailbox).
    fn deliver_broadcast(&mut self, sid: &SessionId, id: u64, won: bool, now: Instant) {
        let Some((method, params)) = self.broadcasts.handle_delivery(id, won) else {
            return;
        };
        let value = params.as_ref().map(RawJson::to_value);
        self.notify_copy(sid, &method, params, value.as_ref(), now);
    }

    /// The copy of `sid` here is notified of a broadcast (its GET here, or
    /// its mailbox), and synced at the next flush if it took it.
    fn notify_copy(
        &mut self,
        sid: &SessionId,
        method: &str,
        params: Option<RawJson>,
        value: Option<&serde_json::Value>,
        now: Instant,
    ) {
        if self
            .endpoint
            .notify_of_broadcast(sid, method, params, value, now)
            .is_some()
        {
            self.touched.insert(sid.clone());
        }
    }

    fn stop_listening(&mut self, sid: &SessionId) {
        let log = LogKey::control(sid.clone());
        let me = Subscriber::Control(sid.clone());
        if self.subscriptions.followers(&log).any(|w| *w == me) {
            self.subscriptions.unsubscribe(&me, &log);
            self.listening(sid);
        }
    }

    /// Appends `records` to `sid`'s mailbox, in order.
    fn append_to_mailbox(&mut self, sid: &SessionId, records: impl IntoIterator<Item = Record>) {
        self.append_to(LogKey::mailbox(sid.clone()), records);
    }

    /// Appends `records` to `log`, in order, each published once numbered.
    fn append_to(&mut self, log: LogKey, records: impl IntoIterator<Item = Record>) {
        let mut records = records.into_iter().peekable();
        if records.peek().is_none() {
            return;
        }
        let outbox = self
            .outboxes
            .entry(log.clone())
            .or_insert_with(|| Publisher::new(log));
        for record in records {
            outbox.append(record);
        }
    }

    /// What claims brought: a mailbox's entries each on the session's GET
    /// here, or held (and so handed back to the mailbox) if the GET went
    /// meanwhile; answers to the session, as if posted here.
    fn take_claimed(&mut self, now: Instant) {
        let logs: Vec<LogKey> = self.claimers.keys().cloned().collect();
        for log in logs {
            let Some(c) = self.claimers.get_mut(&log) else {
                continue;
            };
            let entries: Vec<_> = std::iter::from_fn(|| c.poll_entry()).collect();
            if entries.is_empty() {
                continue;
            }
            let sid = log.session.clone();
            if log.is_answers() {
                self.take_answers(&sid, entries);
                continue;
            }
            let Some(s) = self.endpoint.session_mut(&sid).filter(|s| !s.is_ended()) else {
                // This copy ended (its idle timer, say) while the session
                // may live on elsewhere: back to the mailbox, in order.
                self.append_to_mailbox(&sid, entries.into_iter().map(|e| e.record));
                continue;
            };
            for e in entries {
                let Record::Message(text) = e.record else {
                    continue;
                };
                let Some((key, message)) = decode_message(&text) else {
                    continue; // not ours to read
                };
                let out = Outgoing {
                    session: sid.clone(),
                    key,
                    cause: Cause::Unrelated,
                    message,
                };
                s.deliver_handed(Arc::new(out), now);
            }
            self.touched.insert(sid);
        }
    }

    /// Answers claimed from this instance's log for `sid`: each to the
    /// session as if posted here (one to nothing outstanding, an answer
    /// forwarded twice or to a copy that ended, is late and dropped).
    fn take_answers(&mut self, sid: &SessionId, entries: Vec<Entry>) {
        let Some(s) = self.endpoint.session_mut(sid).filter(|s| !s.is_ended()) else {
            return;
        };
        for e in entries {
            let Record::Message(text) = e.record else {
                continue;
            };
            match decode_message(&text) {
                Some((_, Message::Response { id, result })) => s.deliver_answer(id, Ok(result)),
                Some((
                    _,
                    Message::Error {
                        id: Some(id),
                        error,
                    },
                )) => s.deliver_answer(id, Err(error)),
                _ => {} // not ours to read
            }
        }
        self.touched.insert(sid.clone());
    }

    /// A live session's mailbox: what it holds for want of a GET is
    /// appended to it; while a GET is attached here, it is claimed from.
    fn sync_mailbox(&mut self, sid: &SessionId) {
        if self.config.unrelated == Unrelated::KeepLocal {
            return;
        }
        let Some(s) = self.endpoint.session_mut(sid) else {
            return;
        };
        let log = LogKey::mailbox(sid.clone());
        if s.has_attached_get() {
            self.open_claimer(log);
            return;
        }
        let handed = s.hand_off_held();
        let records = handed
            .iter()
            .map(|out| Record::Message(encode_message(out.key, &out.message)));
        self.append_to(log.clone(), records);
        if let Some(c) = self.claimers.get_mut(&log) {
            c.close();
        }
    }

    /// Mailbox entries an append here trimmed before any instance took
    /// them: each a drop of its message (`DropReason::MailboxFull`), told to
    /// the application through this copy of the session. (An answers log
    /// trimmed so is not reported: its asker waits on.)
    fn report_evicted(&mut self, log: &LogKey, evicted: &[Entry]) {
        if !log.is_mailbox() || evicted.is_empty() {
            return;
        }
        let Some(s) = self.endpoint.session_mut(&log.session) else {
            return;
        };
        for e in evicted {
            if let Record::Message(text) = &e.record {
                if let Some((key, _)) = decode_message(text) {
                    s.report_dropped(key, DropReason::MailboxFull);
                }
            }
        }
        self.touched.insert(log.session.clone());
    }

    /// A live session's answers here: claimed from while it awaits answers
    /// to requests it sent the client from here (the client may post them
    /// to any instance, which forwards them: [`Self::forward_answers`]).
    fn sync_answers(&mut self, sid: &SessionId) {
        let Some(s) = self.endpoint.session(sid) else {
            return;
        };
        let log = LogKey::answers(sid.clone(), self.config.id);
        if s.awaits_answers() {
            self.open_claimer(log);
        } else if let Some(c) = self.claimers.get_mut(&log) {
            c.close();
        }
    }

    fn open_claimer(&mut self, log: LogKey) {
        let max = self.config.claim_max;
        self.claimers
            .entry(log.clone())
            .or_insert_with(|| Claimer::new(log, max))
            .open();
    }

    /// The answers in a POST to `sid` (a response or a batch with some)
    /// to requests another instance sent: appended to that instance's
    /// answers log, which it claims from while it awaits them. The POST
    /// goes on to the endpoint as it came (answers to nothing of its own
    /// are counted late there).
    fn forward_answers(&mut self, sid: &SessionId, version: ProtocolVersion, body: &[u8]) {
        if self.config.answers == Answers::LocalOnly {
            return;
        }
        let Ok(parsed) = parse_body(body, version) else {
            return;
        };
        for message in parsed.into_messages() {
            let id = match &message {
                Message::Response { id, .. } => id,
                Message::Error { id: Some(id), .. } => id,
                _ => continue,
            };
            let Some(asker) = asked_by(id).filter(|&i| i != self.config.id) else {
                continue;
            };
            let record = Record::Message(encode_message(MsgKey(0), &message));
            self.append_to(LogKey::answers(sid.clone(), asker), [record]);
        }
    }

    /// The cancellations in a POST to `sid` for requests the copy here is
    /// not serving: published on the fleet's cancellations channel, which
    /// the instance serving the request listens to. The POST goes on to
    /// the endpoint as it came (a cancellation of nothing here is ignored
    /// there).
    fn forward_cancellations(&mut self, sid: &SessionId, version: ProtocolVersion, body: &[u8]) {
        if !self.cancellations_joined || self.config.cancellations == Cancellations::WhereLanded {
            return;
        }
        let Ok(parsed) = parse_body(body, version) else {
            return;
        };
        let me = self.config.id;
        for message in parsed.into_messages() {
            let Message::Notification { params, .. } = &message else {
                continue;
            };
            let served = crate::server::cancelled_id(params.as_ref())
                .zip(self.endpoint.session(sid))
                .is_some_and(|(id, s)| s.is_serving(&id));
            if let Some(op) = cancellations::publication(me, sid, &message).filter(|_| !served) {
                self.ops.push_back(op);
            }
        }
    }

    /// A cancellation another instance published: to its session's copy
    /// here as if posted here, if it concerns that copy.
    fn take_cancelled(&mut self, entry: &Entry, now: Instant) {
        let Some((sid, params)) = cancellations::taken(self.config.id, entry) else {
            return;
        };
        if let Some(s) = self.endpoint.session_mut(&sid) {
            if s.deliver_cancelled(params, now) {
                self.touched.insert(sid);
            }
        }
    }

    /// The claimers' and outboxes' ops out; forgets those with nothing left
    /// to do.
    fn mailbox_ops(&mut self) {
        let mut sub = Vec::new();
        for (log, c) in &mut self.claimers {
            while let Some(op) = c.poll_op() {
                sub.push((log.clone(), op));
            }
        }
        for (key, op) in sub {
            match op {
                StoreOp::Subscribe { log } => {
                    self.subscriptions.subscribe(Subscriber::Claimer(key), log)
                }
                StoreOp::Unsubscribe { log } => self
                    .subscriptions
                    .unsubscribe(&Subscriber::Claimer(key), &log),
                op => self.send(Waiter::Claim(key), op),
            }
        }
        let mut appends = Vec::new();
        for (log, p) in &mut self.outboxes {
            while let Some(op) = p.poll_op() {
                appends.push((log.clone(), op));
            }
        }
        for (log, op) in appends {
            self.send(Waiter::Append(log), op);
        }
        self.claimers.retain(|_, c| !c.is_done());
        self.outboxes.retain(|_, p| p.awaiting_len() > 0);
        // A mailbox is one subscriber of its log: confirmed by the store only.
        while let Some(op) = self.subscriptions.poll_op() {
            self.ops.push_back(op);
        }
    }

    /// Logs what an endpoint transmit shows of this instance's streams:
    /// an event (numbered by its stream) and a POST stream's end.
    fn tap(&mut self, t: &Transmit) {
        match &t.kind {
            TransmitKind::Event {
                id: Some(text),
                message,
                ..
            } => {
                let Some(sid) = self.endpoint.route(t.http) else {
                    return;
                };
                let Some(s) = self.endpoint.session(sid) else {
                    return;
                };
                let Some(eid) = s.parse_event_id(text) else {
                    return;
                };
                if s.version().is_v2026() || !self.owns(eid.stream) {
                    return;
                }
                let log = LogKey {
                    session: sid.clone(),
                    stream: eid.stream,
                };
                let stream = s.streams().find(|st| st.id == eid.stream);
                self.logs
                    .record_event(&log, eid.seq, message.as_deref(), stream);
                self.tapped.insert(t.http, log);
            }
            TransmitKind::End(reason) => {
                let Some(log) = self.tapped.remove(&t.http) else {
                    return;
                };
                let standalone = self
                    .endpoint
                    .session(&log.session)
                    .and_then(|s| s.streams().find(|st| st.id == log.stream))
                    .is_some_and(|st| st.is_standalone());
                if *reason == EndReason::Complete && !standalone {
                    self.logs.record_end(&log);
                }
            }
            _ => {}
        }
    }

    /// The relayed GETs' ops and entries, until no confirmation is left.
    fn pump_relayed(&mut self, now: Instant) {
        loop {
            while let Some((who, push)) = self.subscriptions.poll_confirmation() {
                self.hand_push(who, push, now);
            }
            let https: Vec<HttpId> = self.relayed.keys().copied().collect();
            for http in https {
                let Some(mut r) = self.relayed.remove(&http) else {
                    continue;
                };
                self.take_follower_ops(http, &mut r);
                match self.write_relayed(http, &mut r) {
                    Relaying::Following => {
                        self.relayed.insert(http, r);
                    }
                    Relaying::Over => self.take_follower_ops(http, &mut r),
                    Relaying::Released => self.continue_here(http, r, now),
                }
            }
            while let Some(op) = self.subscriptions.poll_op() {
                self.ops.push_back(op);
            }
            if !self.subscriptions.has_confirmations() {
                return;
            }
        }
    }

    /// A follower's ops: subscriptions through the table, reads to the store.
    fn take_follower_ops(&mut self, http: HttpId, r: &mut Relayed) {
        while let Some(op) = r.follower.poll_op() {
            match op {
                StoreOp::Subscribe { log } => {
                    self.subscriptions.subscribe(Subscriber::Relayed(http), log)
                }
                StoreOp::Unsubscribe { log } => self
                    .subscriptions
                    .unsubscribe(&Subscriber::Relayed(http), &log),
                op => self.send(Waiter::Follower(http), op),
            }
        }
        while let Some(op) = self.subscriptions.poll_op() {
            self.ops.push_back(op);
        }
    }

    /// Writes what a relayed GET's follower delivered; says what becomes
    /// of it.
    fn write_relayed(&mut self, http: HttpId, r: &mut Relayed) -> Relaying {
        while let Some(entry) = r.follower.poll_entry() {
            let message = match entry.record {
                // Not an event: the client's cursor stays before it.
                Record::Released => return Relaying::Released,
                Record::End => {
                    self.relayed_head(http, r);
                    self.push(http, TransmitKind::End(EndReason::Complete));
                    return Relaying::Over;
                }
                Record::Blank | Record::Opened(_) => None,
                Record::Message(text) => match decode_message(&text) {
                    Some((key, message)) => Some(Arc::new(Outgoing {
                        session: r.session.clone(),
                        key,
                        // The writer routed it; here it is only written.
                        cause: Cause::Unrelated,
                        message,
                    })),
                    // Not ours to read: the stream cannot go on whole.
                    None => {
                        self.relayed_head(http, r);
                        self.push(http, TransmitKind::End(EndReason::Polling));
                        return Relaying::Over;
                    }
                },
            };
            self.relayed_head(http, r);
            let id = Some(r.codec.render(EventId {
                stream: r.stream,
                seq: entry.seq,
            }));
            let kind = TransmitKind::Event {
                id,
                retry_ms: None,
                message,
            };
            self.push(http, kind);
        }
        match r.follower.phase() {
            Phase::Lost if r.head_sent => {
                // Trimmed from the store while being followed: the client
                // resumes and is told its cursor names nothing now.
                self.push(http, TransmitKind::End(EndReason::Polling));
                Relaying::Over
            }
            Phase::Lost => {
                // The client's `Last-Event-ID`, named in the error.
                let named = r.head.header(headers::LAST_EVENT_ID).unwrap_or("");
                let e = RequestError::UnknownEventId(named.to_owned());
                self.endpoint.refuse(http, &e);
                Relaying::Over
            }
            Phase::Ended => Relaying::Over,
            Phase::Live => {
                self.relayed_head(http, r);
                Relaying::Following
            }
            Phase::Idle | Phase::Subscribing | Phase::Reading => Relaying::Following,
        }
    }

    /// A relayed GET whose log was released goes on as the session's
    /// standalone GET here, on the same connection: the endpoint takes it
    /// as a new GET (its priming event moves the client's cursor to the new
    /// stream), and takes from the session's mailbox from now on. If the
    /// head went out already, the endpoint's is not sent again.
    fn continue_here(&mut self, http: HttpId, mut r: Relayed, now: Instant) {
        r.follower.close();
        self.take_follower_ops(http, &mut r);
        let mut head = r.head;
        head.headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case(headers::LAST_EVENT_ID));
        if r.head_sent {
            self.continued.insert(http, Continued::AwaitingHead);
        }
        self.dispatch(http, &head, &[], &r.caller, now);
    }

    /// An endpoint transmit for a relayed GET gone on here
    /// ([`Self::continue_here`]): what of it the client gets.
    fn continued_transmit(&mut self, t: Transmit) -> Option<Transmit> {
        let Some(&state) = self.continued.get(&t.http) else {
            return Some(t);
        };
        match (&t.kind, state) {
            (TransmitKind::Head(head), Continued::AwaitingHead) => {
                if head.status == 200 {
                    self.continued.remove(&t.http);
                } else {
                    self.continued.insert(t.http, Continued::Refused);
                }
                None
            }
            (TransmitKind::End(_), Continued::Refused) => {
                self.continued.remove(&t.http);
                Some(Transmit {
                    http: t.http,
                    kind: TransmitKind::End(EndReason::Polling),
                })
            }
            (_, Continued::Refused) => None,
            (_, Continued::AwaitingHead) => Some(t),
        }
    }

    /// The head of a relayed GET, once its first read is in.
    fn relayed_head(&mut self, http: HttpId, r: &mut Relayed) {
        if r.head_sent {
            return;
        }
        r.head_sent = true;
        let mut head = ResponseHead::new(200, Content::Sse);
        head.session_id = Some(r.session.clone());
        self.push(http, TransmitKind::Head(head));
    }

    fn push(&mut self, http: HttpId, kind: TransmitKind) {
        self.out.push_back(Transmit { http, kind });
    }

    /// An op to the store; `who` gets its reply, if it has one.
    fn send(&mut self, who: Waiter, op: StoreOp) {
        if expects_reply(&op) {
            self.waiters.push_back(who);
        }
        self.ops.push_back(op);
    }
}

/// The instance that sent the request with id `id` to the client (each
/// numbers its requests in its own range:
/// [`request_id_base`](crate::server::request_id_base)).
fn asked_by(id: &RequestId) -> Option<InstanceId> {
    let RequestId::Num(n) = id else {
        return None;
    };
    let instance = u16::try_from(*n >> 32).ok()?;
    (*n > 0 && instance < INSTANCES_MAX).then_some(InstanceId(instance))
}

/// The instance that numbers stream `id`.
fn writer_of(id: StreamId) -> InstanceId {
    InstanceId((id.0 / STREAM_ID_SPAN) as u16)
}

/// Whether `instance` numbers stream `id` (its range of stream ids).
fn numbered_by(instance: InstanceId, id: StreamId) -> bool {
    writer_of(id) == instance
}

/// Whether a request shows that the client completed the handshake: any
/// but a POST of `ping` (allowed before `notifications/initialized`) or of
/// that notification itself (which the session handles).
fn past_handshake(head: &RequestHead, body: &[u8]) -> bool {
    if head.method != Method::Post {
        return true;
    }
    // A batch, a response or an unreadable body: the session decides.
    posted_method(head, body).is_some_and(|m| m != "ping" && m != "notifications/initialized")
}

/// The method of a POST of one request or notification.
fn posted_method<'a>(head: &RequestHead, body: &'a [u8]) -> Option<&'a str> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    if head.method != Method::Post {
        return None;
    }
    serde_json::from_slice::<Probe<'a>>(body).ok()?.method
}

/// Whether the store answers `op` on the command connection.
fn expects_reply(op: &StoreOp) -> bool {
    !matches!(
        op,
        StoreOp::Publish { .. }
            | StoreOp::Subscribe { .. }
            | StoreOp::Unsubscribe { .. }
            | StoreOp::Beat { .. }
    )
}

/// The endpoint's scheduling points (a preset's; none under FIXED): a
/// session a point changes is synced at the next [`Instance::flush`], as
/// after an application's turn.
impl Scheduled for Instance {
    fn scheduling_points(&self) -> Vec<(HttpId, SchedulingPoint)> {
        self.endpoint.scheduling_points()
    }

    fn handle_scheduling_point(
        &mut self,
        http: HttpId,
        point: SchedulingPoint,
        now: Instant,
    ) -> bool {
        let Some(sid) = self.endpoint.session_of_point(http, point) else {
            return false;
        };
        self.touched.insert(sid);
        self.endpoint.handle_scheduling_point(http, point, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request id names the instance that asked in its upper 32 bits; ids
    /// no instance mints (zero, negative, past the last instance, strings)
    /// name none, so their answers are handled where they land.
    #[test]
    fn asked_by_reads_the_instance_from_ids_instances_mint_and_only_those() {
        let top = i64::from(INSTANCES_MAX - 1);
        for (n, want) in [
            (1, Some(0)),
            ((3 << 32) + 7, Some(3)),
            (top << 32, Some(INSTANCES_MAX - 1)),
            (0, None),
            (-1, None),
            (i64::from(INSTANCES_MAX) << 32, None),
            ((i64::from(INSTANCES_MAX) << 32) + 1, None),
        ] {
            assert_eq!(asked_by(&RequestId::Num(n)), want.map(InstanceId), "{n}");
        }
        assert_eq!(asked_by(&RequestId::Str("1".into())), None);
    }

    /// Instances with entropy of their own share the one secret set for
    /// the fleet: state an application seals on one opens on another.
    #[test]
    fn the_fleet_secret_is_every_instance_applications_secret() {
        let sid = SessionId::from_bits(1);
        let key = [7u8; 32];
        let mut secrets = Vec::new();
        for i in 0..2u16 {
            let config = InstanceConfig {
                id: InstanceId(i),
                ..InstanceConfig::default()
            };
            let mut inst = Instance::new(
                config,
                crate::server::EndpointConfig::default(),
                ServerPolicy::FIXED,
                IdSource::reproducible(u64::from(i) + 1),
            )
            .expect("a fleet setting");
            let own = inst.endpoint_for_app(&sid).app_secret();
            assert_ne!(own, key);
            inst.set_app_secret(key);
            secrets.push(inst.endpoint_for_app(&sid).app_secret());
        }
        assert_eq!(secrets, [key, key]);
    }
}
