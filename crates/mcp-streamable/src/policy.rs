//! Every decision where implementations differ, as one enum per decision.
//!
//! `#[default]` is always the FIXED behaviour. Each knob is read in exactly one
//! `match` in the cores (grep for its type name). Presets are `const` structs
//! of knobs that reproduce real SDKs, pre-fix and post-fix, so that the same
//! checkers that verify FIXED can demonstrate each real race; their docs cite
//! the code they reproduce (see `docs/presets.md` and the shared `races.md`).

use serde::{Deserialize, Serialize};

/// How messages the application emits reach the session's streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionQueue {
    /// Causal routing: a message for request R goes on R's stream; an unrelated
    /// one on exactly one live standalone stream, or is held (bounded) until one
    /// attaches. Notification and response POSTs get no listener at all.
    #[default]
    Causal,
    /// mcp-go v0.44.1 (`server/streamable_http.go` handlePost/handleGet, `server/session.go`):
    /// one session channel read by competing consumers: every POST's listener
    /// (notification POSTs included, whose 202 path is not fenced), the request
    /// handler's drain before its response, and the GET reader. Which consumer
    /// wins is a scheduling point ([`crate::preset::Scheduled`]).
    SharedCompeting {
        /// The channel's capacity: a send past it is dropped silently (a
        /// non-blocking send on a full Go channel; mcp-go makes the
        /// session's channel with room for 100).
        capacity: u16,
    },
}

/// What happens to unrelated messages emitted before `notifications/initialized`
/// (for example by a session-registration hook).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreInitNotifications {
    /// Held until the client sends `notifications/initialized` (R49), then routed as usual.
    #[default]
    Hold,
    /// Routed at once (mcp-go: the hook's `list_changed` enters the session queue
    /// while nothing reads it).
    Send,
    /// Dropped by explicit policy (toolhive #4075: the hook sets capabilities
    /// directly and sends nothing).
    Suppress,
}

/// What a standalone GET does to the session's other standalone streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StandaloneAttach {
    /// Every plain GET opens its own stream; all coexist (R17); no GET ends
    /// another; a resume takes over only the stream it names.
    #[default]
    Coexist,
    /// rmcp v0.16.0 (`session/local.rs` `resume`): one common channel; every GET
    /// replaces its sender, so the previous GET's stream ends (race B).
    ReplaceCommon,
    /// rmcp 3.9 (PR #660/#682, `resume_or_shadow_common`): while the common
    /// channel looks alive, a new GET becomes a shadow stream that is never
    /// written and never promoted; liveness is learnt only when the HTTP body is
    /// dropped (`handle_http_closed`).
    ShadowCommon,
}

/// Where replay starts for `Last-Event-ID: n`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayStart {
    /// Strictly after the named event (R35).
    #[default]
    AfterNamed,
    /// At the named event, re-sending it (rmcp `CachedTx::sync` skips
    /// `index - front.index` entries).
    AtNamed,
}

/// How SSE event ids are spelled, and so what a `Last-Event-ID` can name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventIdScheme {
    /// `<session-namespace>-<stream>-<seq>`: unique in the session, names its
    /// stream (R32, R33); priming events take their own sequence number.
    #[default]
    StreamScoped,
    /// rmcp v0.16.0: common events `<idx>`, POST-stream events `<idx>/<stream>`,
    /// and every POST stream primed with the literal id `0`, which collides with
    /// the first common event.
    Rmcp016,
    /// rmcp 3.9: POST streams primed with `0/<stream>` (index 0 of that stream);
    /// standalone GETs primed with the literal `0`, colliding with common index 0.
    Rmcp39,
}

/// Status for a missing or unknown session id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionErrorStatus {
    /// 400 for a missing id (R23), 404 for an unknown or terminated one (R24).
    #[default]
    Spec,
    /// 401 for both (rmcp v0.16.0 `tower.rs`; sent VS Code into OAuth).
    Unauthorized,
}

/// The answer to a GET whose `Last-Event-ID` names a POST stream whose response
/// was already sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishedStreamResume {
    /// Replay what follows the named event, then end; if nothing follows,
    /// `204 No Content`, which tells an EventSource-style reader to stop (WHATWG).
    #[default]
    ReplayThenEnd,
    /// `500` (rmcp v0.16.0: the request-wise channel is gone, `ChannelClosed`).
    ServerError,
    /// `200`, an empty stream, then end (rmcp 3.9 after #799): an
    /// EventSource-style reader reconnects again.
    EmptyStream,
}

/// Where a response goes when its POST stream has no connection attached
/// (the client closed it, or the server closed it for polling).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetachedResponse {
    /// Kept in that stream's replay buffer for the client's resumption (R35).
    #[default]
    BufferForResume,
    /// Sent on whatever GET arrives next, `Last-Event-ID` ignored (the
    /// conformance `sse-retry` mock, `src/scenarios/client/sse-retry.ts`, v0.1.13;
    /// race C's server side).
    NextGet,
    /// Sent on the session's open standalone GET if it has one (else on the
    /// next GET, as [`DetachedResponse::NextGet`]); a resumption is served
    /// as FIXED serves it, without the response. A client that completes a
    /// request on first arrival has its answer; one that waits for the
    /// request's own stream (csharp-sdk before PR #1381) does not, and its
    /// resumption of that stream, over, ends without it: race C on the
    /// background GET. No SDK server is known to do it on
    /// purpose; `probe-client`'s `response-on-open-get` plays it.
    OpenGet,
}

/// How a reader on one instance follows a stream's log written on another
/// (`fleet::follow`, `docs/fleets.md`): the order of its subscription, its
/// read of what is stored, and what it forwards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relay {
    /// Subscribe, wait for the store's confirmation, then read after the
    /// cursor; publications that arrive first wait for the read; every entry
    /// is delivered once, in number order; a publication that skips a number
    /// makes it read again (another writer appended in between).
    #[default]
    Ordered,
    /// Read what is stored, send it, then subscribe and forward every
    /// publication: what is appended between the read and the subscription is
    /// never sent (a gap), and what was read can be published again (twice).
    ReplayThenSubscribe,
    /// Subscribe, then replay what is stored, forwarding publications as they
    /// come: an entry stored before the read and published after the
    /// subscription is sent twice (the TypeScript SDK before PR #2335:
    /// "store, replay, then send").
    SubscribeThenReplay,
    /// Subscribe and read at once, deduplicating: without waiting for the
    /// subscription to be in effect, a read that runs before it misses what is
    /// published in between, and nothing comes to fill the hole when that was
    /// the last entry (the stream's end).
    ConcurrentDeduplicated,
}

/// What becomes of the streams of a fleet instance that died
/// (`fleet::liveness`, `docs/fleets.md`): the calls in flight on it are
/// lost with it either way; the question is whether their callers hear.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Handover {
    /// An instance that follows one of its streams finds its heartbeat
    /// gone and completes the stream: `-32603` for every request it still
    /// owed, then the end (once, whichever instance does it first).
    #[default]
    CompleteWithError,
    /// Nobody completes them (an event store that replays only, as every
    /// SDK's is): a client that resumed such a stream elsewhere waits for
    /// an answer that never comes, until its own deadline.
    Abandon,
}

/// Where, in a fleet, an instance puts an unrelated message (one answering
/// no request: a list change, a log message) of a session whose standalone
/// GET it does not hold (`fleet::mailbox`, `docs/fleets.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unrelated {
    /// In the session's mailbox in the store, which every instance holding
    /// a GET of the session claims from: each message reaches one GET, once.
    #[default]
    Mailbox,
    /// Held where it was emitted until a GET of the session attaches there,
    /// as in one process (and as the SDKs' shared event stores leave it): a
    /// GET held by another instance never gets it.
    KeepLocal,
}

/// What an instance of a fleet does with the client's answer to a request
/// another instance sent (`fleet::mailbox`, `docs/fleets.md`): the client
/// posts it wherever the balancer sends it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answers {
    /// Appended to the asking instance's answers log for the session, which
    /// it claims from while it awaits answers: the request gets it once.
    #[default]
    Forward,
    /// Given to the local copy only, which asked nothing and counts it late
    /// (as one process would, and as the SDKs' shared event stores leave
    /// it): the instance that asked waits for ever.
    LocalOnly,
}

/// What an instance of a fleet does with the client's
/// `notifications/cancelled` for a request it is not serving
/// (`fleet::instance`, `docs/fleets.md`): the client posts it wherever the
/// balancer sends it, and the call it names, with the requests its handler
/// sent the client, may be on another instance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cancellations {
    /// Published on the fleet's cancellations channel, which every instance
    /// listens to from before it serves: the instance running the call
    /// takes it, the call stops there, and its questions fail.
    #[default]
    ToTheCall,
    /// Given to the local copy only, as one process would (and as the SDKs'
    /// shared event stores leave it): the call runs on elsewhere, and a
    /// question it asked waits for an answer the client will never send.
    WhereLanded,
}

/// How a fleet delivers the application's broadcast (a list changed) to
/// its sessions (`fleet::broadcast`, `docs/fleets.md`): a session may have
/// copies on several instances, and its GET or listen may be on any of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BroadcastDelivery {
    /// Published to every instance; each claims, in the store, every
    /// session-era copy it holds before notifying it, so one copy per
    /// session delivers; 2026-07-28 listens are notified where they are.
    #[default]
    Claimed,
    /// Published to every instance; each notifies every copy it holds, as
    /// a fan-out with no claim would: a session with copies on two
    /// instances hears it twice.
    EveryCopy,
    /// Notified to the sessions of the instance that made it only, as one
    /// process does (and as every SDK leaves a fleet): a session or listen
    /// held elsewhere never hears it.
    InstanceOnly,
}

/// What becomes, in a fleet, of a standalone GET stream whose connection is
/// gone (`fleet::instance`, `docs/fleets.md`): its client resumes it with
/// `Last-Event-ID` on whichever instance the balancer picks, and unrelated
/// messages the session holds meanwhile wait in its mailbox for an instance
/// with the session's GET.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumedGet {
    /// The instance that wrote the stream logs that it let go of it
    /// (`Record::Released`: once its GET is gone there, or once it is found
    /// dead); a resumption anywhere replays the log up to that and goes on,
    /// on the same connection, as the session's standalone GET where it
    /// landed, which takes from the mailbox.
    #[default]
    ContinueWhereResumed,
    /// The stream stays its writer's: a resumption on another instance
    /// follows its log for ever and is not the session's GET there, so what
    /// the mailbox holds reaches no one while that connection lasts.
    FollowLog,
}

/// How an instance of a fleet checks, on each request, that the session
/// still exists in the shared store and keeps it alive (`fleet::gate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionRefresh {
    /// Read the record and push its expiry in one step (`GETEX … PX`): a
    /// session deleted or expired is gone for every instance at once.
    #[default]
    Atomic,
    /// Load the record, then write it back with a new time to live (a
    /// session store with `load` and `store` only, as rmcp's `SessionStore`
    /// is used): a DELETE or an expiry between the two is undone, and the
    /// session answers again.
    LoadThenStore,
}

/// When a standalone GET's stream starts taking the session's unrelated
/// messages, relative to the `200` its client sees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GetRegistration {
    /// In the same step as its head: once the client has the `200`, every
    /// unrelated message reaches the stream (or its resumption).
    #[default]
    WithHead,
    /// The head goes out first and the stream is wired to the session at a
    /// later scheduling point
    /// ([`SchedulingPoint::RegisterGet`](crate::preset::SchedulingPoint::RegisterGet));
    /// an unrelated message emitted in between finds no stream and is
    /// dropped, although the client already reads the GET.
    /// csharp-sdk before PR #1212 (fixes #1211, 2026-01-30): the GET's
    /// headers were flushed before `HandleGetRequestAsync` set
    /// `_getHttpRequestStarted`, and a `SendNotificationAsync` in between was
    /// "silently dropped". rust-mcp-sdk before PR #197 (2026-07-15): the
    /// SSE `200` was returned before the stream's transport was wired
    /// (`transport_ready` is the fix), and a sampling or elicitation request
    /// sent in that window was lost.
    AfterHead,
}

/// How a POST answered in JSON when alone (`ResponseMode::JsonWhenAlone`,
/// and every 2026-07-28 answer) is framed when something is
/// written for its request before the response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonAnswer {
    /// SSE from the first write on: the progress, then the response, last.
    #[default]
    SseOnceAnythingPrecedes,
    /// The first message written becomes the JSON body and the exchange
    /// ends; the handler is cancelled, its response lost. rmcp's stateless
    /// JSON mode (#980, fixed by PR #990, regressed by #973, fixed again by
    /// PR #1005 for 3.0.0): a tool reporting progress answered with its
    /// `notifications/progress` as the HTTP body.
    FirstMessage,
}

/// Where a request the application sends the client while serving one of
/// the client's requests (an `elicitation/create`, a `sampling/createMessage`
/// for a `tools/call`) goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelatedRequests {
    /// On the stream of the request it is for (its POST's, or a resumption
    /// of it): a client reads that stream while it waits for the answer.
    #[default]
    OnItsRequestStream,
    /// On the standalone GET, like an unrelated message. mark3labs/mcp-go
    /// before PR #933 (issue #932): `RequestElicitation` always queued
    /// `elicitation/create` on the session's GET, also inside a
    /// `tools/call`; a client that dispatches what its GET brings only once
    /// its POST is answered (Codex Desktop) waits for the call while the
    /// call waits for it.
    OnStandaloneGet,
}

/// How a GET resuming the standalone stream (its `Last-Event-ID` names one
/// of that stream's events) is served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StandaloneResume {
    /// What followed the named event is replayed, and the GET carries the
    /// standalone stream from then on: every later unrelated message.
    #[default]
    Replay,
    /// The TypeScript SDK v1's example `InMemoryEventStore` (issues #943,
    /// #2560; PRs #1984, #2044; copied by servers such as mcp-proxy, fixed
    /// there in PR #80): event ids are `${streamId}_…` and the stream is
    /// read back as `split('_')[0]`, which for the standalone stream
    /// `_GET_stream` is `''`. Nothing is replayed, and the GET is
    /// registered under that key, which the session never writes: a `200`
    /// and an open, kept-alive stream that carries none of the session's
    /// messages, while they wait for a standalone stream that never comes.
    LostKey,
}

/// When a POST's event stream starts going out: its priming event (the id
/// a client resumes from) and what is written for its requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestWriter {
    /// With its head: the priming event goes out at once, and every message
    /// as it is written. A stream closed for polling has always given the
    /// client an id to resume from.
    #[default]
    WithHead,
    /// A writer task of its own that starts later (a scheduling point,
    /// [`SchedulingPoint::StartWriter`](crate::preset::SchedulingPoint::StartWriter)):
    /// until it runs, the priming event and the messages are stored (they
    /// have ids) but none is on the wire, and a close for polling in that
    /// window discards the writer: the client gets a stream with no event,
    /// has nothing to resume from, and its request never completes.
    /// python-sdk PR #2934 (2.0 line, June 2026; its review finding stayed
    /// open): the per-request stream was buffered (16 messages) and the
    /// priming event put on the wire only by the lazily started
    /// `_run_sse_writer`, so a tool that called `ctx.close_sse_stream()`
    /// before the writer ran left an SSE response with zero events, and
    /// `call_tool()` hung.
    Lazy,
}

/// Which session a GET's `Last-Event-ID` is looked up in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeLookup {
    /// The session the GET names, only: an id of another session's is
    /// unknown there (`400`), whoever sends it.
    #[default]
    NamedSession,
    /// Every session's events: when the named session has no such event,
    /// the first session that has takes the GET as a resumption of its
    /// stream, and replays and writes its messages on an exchange of
    /// another session. agentfront/frontmcp before PR #529
    /// (GHSA-84j6-jc92-77jm, September 2026, "scope SSE event replay to its
    /// own session"): an event store looked up by event id alone replayed
    /// a victim session's backlog to an attacker's GET that named its own
    /// session and a guessed `Last-Event-ID`; mcp_dart #137 the same.
    AnySession,
}

/// What keeps the 2026-07-28 era's requests apart: they name no session,
/// so nothing but the server's own bookkeeping says which exchange a
/// response belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatelessRequests {
    /// Each request in a session of its own, which no one can name and
    /// which ends with its exchange: two clients' requests never meet, even
    /// under the same JSON-RPC id.
    #[default]
    OwnSession,
    /// One transport for every request, its in-flight requests keyed by
    /// their JSON-RPC id alone: a second request under an id in flight
    /// takes the first one's place, so the first one's response is written
    /// on the second one's exchange and the first exchange is never
    /// answered. The TypeScript SDK before 1.26.0 (CVE-2026-25536,
    /// GHSA-345p-7cg4-v4c7): one stateless `StreamableHTTPServerTransport`
    /// reused across requests, whose `_requestToStreamMapping` two clients
    /// with the same id overwrote ("Response A routed to Client B's HTTP
    /// connection", indexnetwork PR #940); vercel mcp-handler before 1.1.0
    /// (GHSA-w2fm-25vw-vh7f) the same.
    SharedTransport,
}

/// What becomes of a message the application sends unrelated to any
/// request (a notification, a request such as `roots/list`) while the
/// session has no standalone stream attached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamlessUnrelated {
    /// Held for the standalone GET the client may still open (bounded by
    /// `held_ttl_ms`, `held_max`, `held_bytes_max`), written on it when it
    /// comes: the window between the handshake and the client's GET is
    /// one every client goes through.
    #[default]
    Hold,
    /// Dropped when sent (`DropReason::Unheld`); a request fails to the
    /// application at once with -32603 "Stream unavailable". java-sdk
    /// 2.0.x (`HttpServletStreamableServerTransportProvider`, issue #1114,
    /// wontfix: a `roots/list` sent right after `initialize`, before the
    /// client's GET, fails); its maintainers say the C#, TS and Python
    /// SDKs have the same window and buffer nothing either.
    Drop,
}

/// Whose requests a session serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionBinding {
    /// The principal that opened it (its `initialize`'s
    /// [`Caller::principal`](crate::principal::Caller::principal)), and
    /// only that one: a request naming the session from another principal,
    /// or from none when it has one, is answered as one naming no live
    /// session (404), whatever its verb. A session opened without a
    /// principal serves only requests without one.
    #[default]
    Principal,
    /// Anyone who names its id. python-sdk before 1.27.2 (CVE-2026-52869,
    /// GHSA-jpw9-pfvf-9f58; PRs #2690, #2719): with bearer authentication
    /// on, `Mcp-Session-Id` alone chose the session, so another
    /// authenticated client that learned the id could post into it, read
    /// its GET stream (resuming from an event id it learned) and delete it;
    /// gateways shipped the same (GHSA-f6c5-f2ph-7x7p, mailpouch PR #264),
    /// and rmcp's `SessionManager` carries no caller at all.
    IdOnly,
}

impl SessionBinding {
    /// Whether a session opened by `owner` serves a request from `caller`.
    pub fn serves(
        self,
        owner: Option<&crate::principal::Principal>,
        caller: Option<&crate::principal::Principal>,
    ) -> bool {
        match self {
            SessionBinding::Principal => owner == caller,
            SessionBinding::IdOnly => true,
        }
    }
}

/// What becomes of the stream of a request the client cancels
/// (`notifications/cancelled`, session era) while it waits for its answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelledCall {
    /// The request is settled on its stream as an answer would settle it:
    /// a stream that carried nothing else ends, and with it the POST and
    /// the connection it held (the spec's receiver "frees associated
    /// resources"; the application's late answer is dropped).
    #[default]
    Ends,
    /// The answer is dropped and nothing else settles the request, so its
    /// stream stays open, without an end, for as long as the client keeps
    /// reading it. The TypeScript SDK 1.x and 2.x server (`Protocol`'s
    /// `_onrequest` returns without sending once the handler's
    /// `AbortController` is aborted, and the transport ends a POST's stream
    /// only once every request on it is answered; mcp-ts-core #401 against
    /// `@modelcontextprotocol/server` 2.0.0; `probe`'s A4 on 1.32.2 and
    /// 2.4.0).
    LeftOpen,
}

/// All server knobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerPolicy {
    /// See [`SessionQueue`].
    pub session_queue: SessionQueue,
    /// See [`PreInitNotifications`].
    pub pre_init_notifications: PreInitNotifications,
    /// See [`StandaloneAttach`].
    pub standalone_attach: StandaloneAttach,
    /// See [`ReplayStart`].
    pub replay_start: ReplayStart,
    /// See [`EventIdScheme`].
    pub event_ids: EventIdScheme,
    /// See [`SessionErrorStatus`].
    pub session_errors: SessionErrorStatus,
    /// See [`FinishedStreamResume`].
    pub finished_stream_resume: FinishedStreamResume,
    /// See [`DetachedResponse`].
    pub detached_response: DetachedResponse,
    /// See [`ListenAck`].
    pub listen_ack: ListenAck,
    /// See [`GetRegistration`].
    pub get_registration: GetRegistration,
    /// See [`JsonAnswer`].
    pub json_answer: JsonAnswer,
    /// See [`SessionBinding`].
    pub session_binding: SessionBinding,
    /// See [`StandaloneResume`].
    pub standalone_resume: StandaloneResume,
    /// See [`RelatedRequests`].
    pub related_requests: RelatedRequests,
    /// See [`RequestWriter`].
    pub request_writer: RequestWriter,
    /// See [`ResumeLookup`].
    pub resume_lookup: ResumeLookup,
    /// See [`StreamlessUnrelated`].
    pub streamless_unrelated: StreamlessUnrelated,
    /// See [`StatelessRequests`].
    pub stateless_requests: StatelessRequests,
    /// See [`CancelledCall`].
    pub cancelled_call: CancelledCall,
}

impl ServerPolicy {
    /// Ours: causal routing, coexisting GETs, strict replay, spec statuses.
    pub const FIXED: ServerPolicy = ServerPolicy {
        session_queue: SessionQueue::Causal,
        pre_init_notifications: PreInitNotifications::Hold,
        standalone_attach: StandaloneAttach::Coexist,
        replay_start: ReplayStart::AfterNamed,
        event_ids: EventIdScheme::StreamScoped,
        session_errors: SessionErrorStatus::Spec,
        finished_stream_resume: FinishedStreamResume::ReplayThenEnd,
        detached_response: DetachedResponse::BufferForResume,
        listen_ack: ListenAck::WithRegistration,
        get_registration: GetRegistration::WithHead,
        json_answer: JsonAnswer::SseOnceAnythingPrecedes,
        session_binding: SessionBinding::Principal,
        standalone_resume: StandaloneResume::Replay,
        related_requests: RelatedRequests::OnItsRequestStream,
        request_writer: RequestWriter::WithHead,
        resume_lookup: ResumeLookup::NamedSession,
        streamless_unrelated: StreamlessUnrelated::Hold,
        stateless_requests: StatelessRequests::OwnSession,
        cancelled_call: CancelledCall::Ends,
    };

    /// Whether this policy has scheduling points the driver must choose
    /// ([`crate::preset::Scheduled`]).
    pub fn has_scheduling_points(&self) -> bool {
        matches!(self.session_queue, SessionQueue::SharedCompeting { .. })
            || self.listen_ack != ListenAck::WithRegistration
            || self.get_registration != GetRegistration::WithHead
            || self.request_writer != RequestWriter::WithHead
    }
}

impl ServerPolicy {
    /// mcp-go v0.44.1 (mark3labs/mcp-go 6bea1d45, `server/streamable_http.go`,
    /// `server/session.go`) as pinned by toolhive before PR #4075: one session
    /// queue with competing per-POST listeners, registration-hook notifications
    /// through it, the 202 path not fenced. Race A.
    pub const MCP_GO_0_44: ServerPolicy = ServerPolicy {
        session_queue: SessionQueue::SharedCompeting { capacity: 100 },
        pre_init_notifications: PreInitNotifications::Send,
        ..ServerPolicy::FIXED
    };

    /// toolhive PR #4075 (4bc341cf9, `pkg/vmcp/server/server.go`): the hook sets
    /// capabilities directly, so registration sends nothing; the shared queue
    /// and its competing listeners remain (any later notify replays race A).
    pub const TOOLHIVE_4075: ServerPolicy = ServerPolicy {
        pre_init_notifications: PreInitNotifications::Suppress,
        ..ServerPolicy::MCP_GO_0_44
    };

    /// rmcp v0.16.0 (modelcontextprotocol/rust-sdk 3df4c5bf,
    /// `streamable_http_server/session/local.rs`, `tower.rs`): every GET replaces
    /// the common sender, inclusive replay, POST priming id `0` colliding with the
    /// first common id, 500 on resuming a finished POST stream, 401 for missing or
    /// unknown sessions. Race B.
    pub const RMCP_0_16: ServerPolicy = ServerPolicy {
        standalone_attach: StandaloneAttach::ReplaceCommon,
        replay_start: ReplayStart::AtNamed,
        event_ids: EventIdScheme::Rmcp016,
        session_errors: SessionErrorStatus::Unauthorized,
        finished_stream_resume: FinishedStreamResume::ServerError,
        ..ServerPolicy::FIXED
    };

    /// rmcp 3.9.0 (PR #660 = #682, merged 332fcbfb; #799 3e56d527): shadow
    /// streams never promoted, liveness known only when the body is dropped,
    /// inclusive replay, GET priming `0` colliding with common index 0, an empty
    /// stream for a finished POST stream. Race B's remaining holes.
    ///
    /// In the 2026-07-28 era its listens are acknowledged before the
    /// application registers them (`service/server.rs`
    /// `SubscriptionContext::establish`): [`ListenAck::AckThenRegister`].
    pub const RMCP_3_9: ServerPolicy = ServerPolicy {
        standalone_attach: StandaloneAttach::ShadowCommon,
        replay_start: ReplayStart::AtNamed,
        event_ids: EventIdScheme::Rmcp39,
        session_errors: SessionErrorStatus::Spec,
        finished_stream_resume: FinishedStreamResume::EmptyStream,
        listen_ack: ListenAck::AckThenRegister,
        ..ServerPolicy::FIXED
    };

    /// go-sdk v1.7.0 (modelcontextprotocol/go-sdk, `mcp/server.go`
    /// `subscriptionsListen`): a listen joins the subscription maps before
    /// its acknowledgement is written, with nothing in between to hold a
    /// change notification back ([`ListenAck::RegisterThenAck`]; ruby-sdk
    /// fixed the same in PR #532). Only its 2026-07-28 listens are
    /// modelled; the rest is FIXED.
    pub const GO_SDK_1_7: ServerPolicy = ServerPolicy {
        listen_ack: ListenAck::RegisterThenAck,
        ..ServerPolicy::FIXED
    };

    /// csharp-sdk before PR #1212 (modelcontextprotocol/csharp-sdk, fixes
    /// #1211, `StreamableHttpHandler.HandleGetRequestAsync`): the standalone
    /// GET's headers are flushed before the session records that its GET
    /// started, so a notification sent in between is dropped while the
    /// client already reads the stream ([`GetRegistration::AfterHead`];
    /// rust-mcp-sdk before PR #197 had the same window). Only that window is
    /// modelled; the rest is FIXED.
    pub const CSHARP_BEFORE_1212: ServerPolicy = ServerPolicy {
        get_registration: GetRegistration::AfterHead,
        ..ServerPolicy::FIXED
    };

    /// rmcp's stateless JSON mode from 0.17.0 (its `json_response` option)
    /// through 2.2.0, the last release before 3.0.0-beta.1
    /// (modelcontextprotocol/rust-sdk #980; PR #990 fixed it, #973 brought
    /// it back on the direct path during 3.0's development, PR #1005 fixed
    /// that before any beta was published): the first outbound message
    /// became the HTTP body, so a tool that reports progress answered with
    /// the progress notification and its result was lost
    /// ([`JsonAnswer::FirstMessage`]). Only that framing is modelled; the
    /// rest is FIXED. Named for the last release with the bug; every
    /// published 3.x release is fixed.
    pub const RMCP_2_2: ServerPolicy = ServerPolicy {
        json_answer: JsonAnswer::FirstMessage,
        ..ServerPolicy::FIXED
    };

    /// python-sdk `mcp` 1.27.1 and earlier (CVE-2026-52869, fixed in
    /// 1.27.2 by PRs #2690 and #2719): sessions routed by `Mcp-Session-Id`
    /// alone, whoever authenticated the request ([`SessionBinding::IdOnly`]).
    /// Only that routing is modelled; the rest is FIXED.
    pub const PYTHON_1_27_1: ServerPolicy = ServerPolicy {
        session_binding: SessionBinding::IdOnly,
        ..ServerPolicy::FIXED
    };

    /// A TypeScript SDK v1 server (`@modelcontextprotocol/sdk` 1.x,
    /// `StreamableHTTPServerTransport`) with the SDK's example
    /// `InMemoryEventStore`, as many servers copied it: a resumption of the
    /// standalone stream replays nothing and its GET never carries the
    /// session's messages again ([`StandaloneResume::LostKey`]). Only the
    /// store is modelled; the rest is FIXED.
    pub const TS_EXAMPLE_EVENT_STORE: ServerPolicy = ServerPolicy {
        standalone_resume: StandaloneResume::LostKey,
        ..ServerPolicy::FIXED
    };

    /// mark3labs/mcp-go before PR #933 (issue #932, July 2026): a request to
    /// the client made while serving a `tools/call` goes on the standalone
    /// GET ([`RelatedRequests::OnStandaloneGet`]). Only that routing is
    /// modelled; the rest is FIXED.
    pub const MCP_GO_BEFORE_933: ServerPolicy = ServerPolicy {
        related_requests: RelatedRequests::OnStandaloneGet,
        ..ServerPolicy::FIXED
    };

    /// python-sdk with PR #2934 (the `mcp` 2.0 line, June 2026): a POST's
    /// event stream, priming event included, goes out only once its lazily
    /// started writer runs, and a close for polling before then leaves the
    /// client a stream with no event id ([`RequestWriter::Lazy`]). Only
    /// that writer is modelled; the rest is FIXED.
    pub const PYTHON_PR2934: ServerPolicy = ServerPolicy {
        request_writer: RequestWriter::Lazy,
        ..ServerPolicy::FIXED
    };

    /// agentfront/frontmcp before PR #529 (GHSA-84j6-jc92-77jm): a
    /// `Last-Event-ID` the named session does not know is looked up in
    /// every session, and the session that has it serves the GET
    /// ([`ResumeLookup::AnySession`]). Only that lookup is modelled; the
    /// rest is FIXED (sessions bound to their principal included: the GET
    /// names the attacker's own session).
    pub const FRONTMCP_BEFORE_529: ServerPolicy = ServerPolicy {
        resume_lookup: ResumeLookup::AnySession,
        ..ServerPolicy::FIXED
    };

    /// java-sdk 2.0.x (modelcontextprotocol/java-sdk #1114, wontfix; PR
    /// #1115's bounded retry closed): a message unrelated to any request,
    /// sent while the client's standalone GET is not open yet, is dropped,
    /// and a request fails at once with -32603 "Stream unavailable"
    /// ([`StreamlessUnrelated::Drop`]). Only that is modelled; the rest is
    /// FIXED.
    pub const JAVA_SDK_2_0: ServerPolicy = ServerPolicy {
        streamless_unrelated: StreamlessUnrelated::Drop,
        ..ServerPolicy::FIXED
    };

    /// The TypeScript SDK before 1.26.0 (`@modelcontextprotocol/sdk`,
    /// CVE-2026-25536 / GHSA-345p-7cg4-v4c7) with one stateless
    /// `StreamableHTTPServerTransport` reused across requests, as servers
    /// wrote it until 1.26.0 refused to connect a connected server: the
    /// requests of every client in one map keyed by JSON-RPC id, so two
    /// clients with the same id get each other's responses
    /// ([`StatelessRequests::SharedTransport`]). Its stateless requests are
    /// those of the 2026-07-28 era here. Only that transport is modelled;
    /// the rest is FIXED.
    pub const TS_SDK_1_25_SHARED: ServerPolicy = ServerPolicy {
        stateless_requests: StatelessRequests::SharedTransport,
        ..ServerPolicy::FIXED
    };

    /// The TypeScript SDK server, 1.32.2 (`@modelcontextprotocol/sdk`,
    /// `StreamableHTTPServerTransport`) and 2.4.0
    /// (`@modelcontextprotocol/server`, its session-era transport), as
    /// `probe` found them (`docs/compatibility.md`): a call the client
    /// cancels is never answered and its POST never ends
    /// ([`CancelledCall::LeftOpen`], A4 over the wire; mcp-ts-core #401),
    /// and nothing is kept for a standalone GET not open yet
    /// ([`StreamlessUnrelated::Drop`], B10 over the wire: java-sdk #1114's
    /// window, which its maintainers say the TS SDK shares). Its Origin
    /// check (R42) is the shell's, not the session's.
    pub const TS_SDK_1_32: ServerPolicy = ServerPolicy {
        cancelled_call: CancelledCall::LeftOpen,
        streamless_unrelated: StreamlessUnrelated::Drop,
        ..ServerPolicy::FIXED
    };

    /// The conformance suite's `sse-retry` mock (@modelcontextprotocol/conformance
    /// 0.1.13, `src/scenarios/client/sse-retry.ts`, a1b8aaae): a pending tool
    /// response goes on whatever GET arrives, `Last-Event-ID` ignored. Race C's
    /// server side.
    pub const CONFORMANCE_SSE_RETRY: ServerPolicy = ServerPolicy {
        detached_response: DetachedResponse::NextGet,
        ..ServerPolicy::FIXED
    };
}

/// A named server preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NamedServerPolicy {
    /// The preset's name, as used on the command line and in `models/`.
    pub name: &'static str,
    /// The knobs.
    pub policy: ServerPolicy,
}

impl ServerPolicy {
    /// Every preset's name, FIXED first (what an unknown name is told).
    pub fn preset_names() -> Vec<&'static str> {
        Self::presets().iter().map(|p| p.name).collect()
    }

    /// Every preset, FIXED first.
    pub fn presets() -> &'static [NamedServerPolicy] {
        &[
            NamedServerPolicy {
                name: "FIXED",
                policy: ServerPolicy::FIXED,
            },
            NamedServerPolicy {
                name: "MCP_GO_0_44",
                policy: ServerPolicy::MCP_GO_0_44,
            },
            NamedServerPolicy {
                name: "TOOLHIVE_4075",
                policy: ServerPolicy::TOOLHIVE_4075,
            },
            NamedServerPolicy {
                name: "RMCP_0_16",
                policy: ServerPolicy::RMCP_0_16,
            },
            NamedServerPolicy {
                name: "RMCP_3_9",
                policy: ServerPolicy::RMCP_3_9,
            },
            NamedServerPolicy {
                name: "GO_SDK_1_7",
                policy: ServerPolicy::GO_SDK_1_7,
            },
            NamedServerPolicy {
                name: "CSHARP_BEFORE_1212",
                policy: ServerPolicy::CSHARP_BEFORE_1212,
            },
            NamedServerPolicy {
                name: "RMCP_2_2",
                policy: ServerPolicy::RMCP_2_2,
            },
            NamedServerPolicy {
                name: "PYTHON_1_27_1",
                policy: ServerPolicy::PYTHON_1_27_1,
            },
            NamedServerPolicy {
                name: "TS_EXAMPLE_EVENT_STORE",
                policy: ServerPolicy::TS_EXAMPLE_EVENT_STORE,
            },
            NamedServerPolicy {
                name: "MCP_GO_BEFORE_933",
                policy: ServerPolicy::MCP_GO_BEFORE_933,
            },
            NamedServerPolicy {
                name: "PYTHON_PR2934",
                policy: ServerPolicy::PYTHON_PR2934,
            },
            NamedServerPolicy {
                name: "FRONTMCP_BEFORE_529",
                policy: ServerPolicy::FRONTMCP_BEFORE_529,
            },
            NamedServerPolicy {
                name: "JAVA_SDK_2_0",
                policy: ServerPolicy::JAVA_SDK_2_0,
            },
            NamedServerPolicy {
                name: "TS_SDK_1_25_SHARED",
                policy: ServerPolicy::TS_SDK_1_25_SHARED,
            },
            NamedServerPolicy {
                name: "TS_SDK_1_32",
                policy: ServerPolicy::TS_SDK_1_32,
            },
            NamedServerPolicy {
                name: "CONFORMANCE_SSE_RETRY",
                policy: ServerPolicy::CONFORMANCE_SSE_RETRY,
            },
        ]
    }

    /// The preset called `name` (case-insensitive).
    pub fn preset(name: &str) -> Option<ServerPolicy> {
        Self::presets()
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .map(|p| p.policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_fixed_and_presets_are_distinct() {
        assert_eq!(ServerPolicy::default(), ServerPolicy::FIXED);
        let all = ServerPolicy::presets();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a.policy, b.policy, "{} == {}", a.name, b.name);
            }
        }
        assert_eq!(ServerPolicy::preset("fixed"), Some(ServerPolicy::FIXED));
        assert_eq!(ServerPolicy::preset("nope"), None);
    }
}

/// When the caller of a request learns its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletionGate {
    /// As soon as the response arrives, on whichever stream: the pending map is
    /// the single source of truth.
    #[default]
    FirstArrival,
    /// Only after the foreground exchange returns, i.e. once the request's own
    /// stream (or its resumption) has brought the response (csharp-sdk
    /// `McpSessionHandler.SendRequestAsync` awaits `SendToRelatedTransportAsync`
    /// before `WaitAsync`, base c57f917d). A response that arrived elsewhere
    /// leaves the caller hanging (race C).
    AfterForegroundReturns,
}

/// What happens to the exchanges still working for a request once it completes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForegroundAfterCompletion {
    /// Aborted at once; no further resumption is scheduled (C3).
    #[default]
    Abort,
    /// Left running: the foreground keeps reading or polling with `Last-Event-ID`
    /// (csharp-sdk PR #1381 head 0619fb4e: `WhenAny(sendTask, tcs.Task)` and
    /// the send task observed only for faults).
    KeepRunning,
}

/// How many times a request's stream is resumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeBound {
    /// Bounded attempts without progress and a bounded time window.
    #[default]
    Bounded,
    /// Every end of stream that carried an event id resets the attempt count
    /// (csharp-sdk `StreamableHttpClientSessionTransport`: EOF with an id sets
    /// `attempt = 0`): unbounded polling.
    ResetOnEventId,
    /// Every resumption the server answered `200` with an event stream
    /// resets the attempt count when it ends, whatever it carried: a
    /// server that answers each resumption with an empty stream is resumed
    /// every `retry` for ever (L3). The Python SDK client (`mcp` 2.3.0,
    /// `_handle_reconnection`) and rmcp 3.9.0's, as `probe-client` found
    /// them (`empty-resume`).
    ResetOnCleanEnd,
}

impl ResumeBound {
    /// Whether a connection of a request's stream that ended (carrying
    /// `messages` message events, an event id or not, a clean `200` event
    /// stream or not) starts the count of attempts anew.
    pub fn made_progress(self, messages: u32, had_id: bool, clean: bool) -> bool {
        match self {
            Self::Bounded => messages > 0,
            Self::ResetOnEventId => had_id,
            Self::ResetOnCleanEnd => clean,
        }
    }

    /// Whether resuming also stops after `resume_window_ms` without
    /// progress.
    pub fn windowed(self) -> bool {
        self == Self::Bounded
    }
}

/// When `initialize`'s side effects (session id, version, background GET) are committed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionCommit {
    /// The moment the `InitializeResult` is parsed, before the caller hears of it (C5).
    #[default]
    OnParse,
    /// After the foreground's post-processing, a scheduling point
    /// ([`SchedulingPoint::ForegroundStep`](crate::preset::SchedulingPoint::ForegroundStep)) that the caller can overtake: its next send
    /// goes out without `Mcp-Session-Id` (the PR #1381 hole, seen as 400s).
    AfterForegroundStep,
}

/// Which ended SSE streams the client reconnects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReconnectStreams {
    /// Only the background GET and streams of requests still pending.
    #[default]
    Unfinished,
    /// Every ended stream, finished POST streams included, with the last id it
    /// saw, EventSource-style (the Cursor behaviour behind race B, rust-sdk #659).
    EveryEnd,
}

/// Whether the client opens a standalone GET after initialize.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundGet {
    /// Opened once the session is committed; a 405 disables it. Never on
    /// the last free connection of the transport's pool
    /// ([`ClientConfig::connections_max`](crate::client::ClientConfig::connections_max)):
    /// a GET the server holds open keeps its connection for good, so it
    /// waits until one is left over for requests, and a pool of one
    /// connection has no standalone GET.
    #[default]
    On,
    /// Opened with `notifications/initialized`, whatever the pool: on a
    /// pool of one connection, a server that holds the GET open leaves the
    /// requests queued behind it for ever. csharp-sdk #1637 (June 2026,
    /// closed with an opt-out): the client opened the standalone GET right
    /// after the `initialize` response, beside the `notifications/initialized`
    /// POST, and "the parallel POST queues behind the GET on the connection
    /// pool and never sends" ("Initialization timed out").
    IgnoringPool,
    /// Never opened.
    Off,
}

/// In which order a server starts a `subscriptions/listen` (2026-07-28):
/// delivering broadcasts to it, and writing its acknowledgement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListenAck {
    /// Both in one step: nothing precedes the acknowledgement, nothing
    /// broadcast after it is missed (Python `mcp` 2.3.0 and TS 2.4.0 do the
    /// same: subscribe, then enqueue the ack, in one uninterrupted run).
    #[default]
    WithRegistration,
    /// Registered first, acknowledged at a later scheduling point with no
    /// guard between: a broadcast in between is written before the
    /// acknowledgement (M2). go-sdk v1.7.0 (`mcp/server.go`
    /// `subscriptionsListen`), C# v2.2.0 stateful, ruby-sdk before PR #532.
    RegisterThenAck,
    /// Acknowledged first, registered at a later scheduling point: a
    /// broadcast in between is lost although the client already listed
    /// (M3). rmcp 3.9.0: `SubscriptionContext::establish` sends the ack,
    /// then hands the sink to the application's `listen`, which registers it.
    AckThenRegister,
}

/// What the client does when a `subscriptions/listen` stream (2026-07-28)
/// breaks. Nothing in this era is resumable: a change sent while no stream
/// was open is lost, and only a fresh list recovers it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relisten {
    /// Listen again, and announce the new acknowledgement
    /// (`ClientEvent::Listening { resumed: true }`): the application lists
    /// again and ends with the current list (M4).
    #[default]
    AndRelist,
    /// Never listen again: the application hears `ListenEnded` and decides
    /// (Python `mcp` 2.3.0 `SubscriptionLost`, rmcp 3.9.0
    /// `SubscriptionEnd::Abrupt`, TS 2.4.0 `closed` = `'remote'`).
    Never,
    /// The end of the stream goes unnoticed: no event, no re-listen; the
    /// application believes it is listening and never hears another
    /// change (M4). go-sdk v1.7.0 sends `subscriptions/listen` fire and
    /// forget (`callSubscriptionsListen`, issue #1171).
    Unnoticed,
}

/// Whether a `subscriptions/listen` stream (2026-07-28) may take the
/// transport's last free connection
/// ([`ClientConfig::connections_max`](crate::client::ClientConfig::connections_max)).
/// A server holds a listen open for as long as it lasts, and so does its
/// connection: the mechanism of csharp-sdk #1637 (R20, the standalone GET
/// of the session era, [`BackgroundGet`]) in the era that replaced that GET.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListenPool {
    /// Never: a listen that would leave the pool no connection for
    /// requests is refused at once
    /// ([`ClientUsageError::NoSpareConnection`](crate::client::ClientUsageError::NoSpareConnection)),
    /// so a pool of `n` connections holds at most `n - 1` listens and a
    /// pool of one none. The application hears why and may listen again
    /// once another listen ended; its requests never wait behind a stream
    /// that does not end.
    #[default]
    LeavesOne,
    /// Whatever the pool: on a pool of one connection the listen takes it,
    /// and every request after it waits, unsent, until its own deadline
    /// (L2). A client that does not know its transport's pool does this.
    IgnoringPool,
}

/// What the client does when its answer to a server's request finds no
/// connection in the transport's pool
/// ([`ClientConfig::connections_max`](crate::client::ClientConfig::connections_max))
/// because streams the server holds open take them all. The server may be
/// waiting for that answer before it ends any of them: its question came
/// on one (a tool awaiting its elicitation), and the answer queued behind
/// it is never sent until someone's deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerRoom {
    /// A stream gives up its connection to the answer: the standalone GET
    /// (opened again, from its last event id, once a connection is spare),
    /// else a request's stream the server can resume (it has an event id),
    /// resumed from that id as if it had ended on its own (after the
    /// server's `retry`, within `resume_attempts_max`). The pool grants
    /// connections in the order exchanges were opened, so the answer goes
    /// first and the resumption after it; no message is lost, since the
    /// server replays what the stream missed.
    #[default]
    YieldStream,
    /// The answer waits for a connection whatever holds them: on a pool of
    /// one, a call whose tool asks the client a question and awaits the
    /// answer waits until a deadline (L2, `models/answer_behind_its_question.json`).
    Wait,
}

/// What the client does with a request whose `200` answer was a whole
/// body (`application/json`) without its response: not JSON-RPC at all,
/// `{}`, or another message (a progress notification that a server made
/// the body, rmcp #980).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonWithoutResponse {
    /// The request fails at once (`ClientError::Malformed`, saying what
    /// the body held instead): a whole answer is over, and no stream will
    /// carry the response.
    #[default]
    Fail,
    /// The request is left waiting for a response on a stream, which no
    /// stream will carry: its caller waits for its own deadline (L2).
    /// rmcp's client: from 0.17.0 (PR #687) to 3.3.0 an unparseable body
    /// was taken as "accepted" (fixed for requests by PR #1208 in 3.4.0);
    /// in every version to 3.9.0 a body that is another message is
    /// dispatched and the request forgotten while its caller's responder
    /// waits. rmcp sets no request deadline by default.
    Wait,
    /// As [`JsonWithoutResponse::Wait`] when the body parsed as JSON-RPC
    /// messages and none was the response (they are dispatched, the request
    /// waits); a body that is not JSON-RPC fails the request. The TypeScript
    /// SDK 1.32.2 and 2.4.0, Python `mcp` 2.3.0 and rmcp 3.9.0 clients, as
    /// `probe-client` found them (`json-not-the-response` against
    /// `malformed-json`).
    WaitAfterMessages,
}

impl JsonWithoutResponse {
    /// Whether a request whose `200` JSON answer ended without its response
    /// is left waiting; `parsed`: the body was JSON-RPC messages.
    pub fn waits(self, parsed: bool) -> bool {
        match self {
            Self::Fail => false,
            Self::Wait => true,
            Self::WaitAfterMessages => parsed,
        }
    }
}

/// What the client does with its requests in flight when it learns its
/// session is gone (a `404` to a request naming it, R25).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionLoss {
    /// Each fails to its caller at once (`ClientError::SessionLost`), and
    /// the application hears the session is gone.
    #[default]
    FailPending,
    /// Every stream is aborted, the one that would carry an in-flight
    /// request's response included, and the requests are left pending,
    /// their deadlines with them: each caller waits for ever (L2). rmcp
    /// 1.2.0 to 2.1.x, whose transparent re-initialization after a `404`
    /// ran `streams.abort_all()` and never completed the responders (rmcp
    /// #912, fixed by PR #914 in 2.2.0). The re-initialization itself is not
    /// modelled: the orphaned requests hang either way.
    OrphanInFlight,
}

/// Which event id a request's stream resumes from once a connection of it
/// ended without the response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeCursor {
    /// The last id seen on any connection of the stream (R34): a
    /// resumption that ends before any new event resumes from the same id
    /// again.
    #[default]
    Stream,
    /// The last id seen on the connection that just ended, none if it
    /// carried no event: a resumption that ends before any new event loses
    /// the stream's place (the TypeScript SDK 1.x and 2.x client:
    /// `_handleSseStream` keeps `lastEventId` per connection and reconnects
    /// with it, so its next GET names no event and is a fresh standalone
    /// stream that cannot carry the response). With
    /// [`LostStream::Leave`] the request then waits for ever (L2); the
    /// fresh GET itself is not modelled.
    Connection,
}

impl ResumeCursor {
    /// The cursor a request's stream keeps once a connection of it ended:
    /// `kept` is the stream's, `ended` the connection's own last id.
    pub fn after_end(self, kept: &mut Option<String>, ended: Option<&str>) {
        match self {
            Self::Stream => {}
            Self::Connection => *kept = ended.map(str::to_owned),
        }
    }
}

/// Which of the server's `notifications/cancelled` the client obeys: the
/// request it names, handed to the application and not yet answered, is
/// withdrawn from it ([`ClientEvent::ServerRequestCancelled`]) and never
/// answered (`basic/utilities/cancellation.mdx`: the receiver SHOULD stop
/// processing and not send a response).
///
/// [`ClientEvent::ServerRequestCancelled`]: crate::client::ClientEvent::ServerRequestCancelled
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerCancels {
    /// Every one, whatever the id.
    #[default]
    Obeyed,
    /// Every one but a cancellation of request id `0`, which reads as "no
    /// id" and is ignored: the application's handler runs on and answers a
    /// request the server withdrew. The TypeScript SDK before 2.1.0
    /// (typescript-sdk #2654, "Treat request id `0` as a real id":
    /// `Protocol`'s truthiness checks on `requestId`), where `0` is the
    /// first id of every peer, so the first request the server sends.
    IdZeroIgnored,
}

impl ServerCancels {
    /// Whether a cancellation naming `id` is obeyed.
    pub fn obeys(self, id: &crate::ids::RequestId) -> bool {
        match self {
            Self::Obeyed => true,
            Self::IdZeroIgnored => *id != crate::ids::RequestId::Num(0),
        }
    }
}

/// When the client hands the application a request the server sent on the
/// standalone GET (an elicitation, a sampling request, `roots/list`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StandaloneRequests {
    /// As it arrives, whatever the client is waiting for.
    #[default]
    OnArrival,
    /// Only once none of the client's own requests is in flight: a request
    /// the server sends on the GET while it serves a call, for that call
    /// (mcp-go before PR #933), waits for the call, which waits for its
    /// answer (mcp-go #932: Codex Desktop "not dispatched while the client
    /// was waiting for the `tools/call` POST response. This creates a
    /// circular wait"). A request on the call's own stream is handed out
    /// at once either way.
    AfterCalls,
}

impl StandaloneRequests {
    /// Whether a request the server sent on the standalone GET is held back
    /// while the client has `in_flight` requests of its own.
    pub fn holds_back(self, in_flight: usize) -> bool {
        self == Self::AfterCalls && in_flight > 0
    }
}

/// What the client does with a request whose stream ended without the
/// response and with nothing to resume from (no event id), or whose
/// resumptions are exhausted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LostStream {
    /// The request fails at once (`ClientError::StreamLost`,
    /// `ClientError::ResumeExhausted`) and the server is told it was
    /// cancelled.
    #[default]
    Fail,
    /// The request is left pending with no stream: its caller waits for its
    /// own deadline (L2). The TypeScript SDK 1.x and 2.x client: a POST
    /// stream that ends with no priming event is not reconnectable, and a
    /// reconnection that fails `maxRetries` times is reported to `onerror`,
    /// the request's promise left as it is (60 s `DEFAULT_REQUEST_TIMEOUT_MSEC`).
    Leave,
}

impl LostStream {
    /// Whether a request with no stream left is failed to its caller.
    pub fn fails(self) -> bool {
        self == Self::Fail
    }
}

/// What the client does with the stream of a request it gives up and tells
/// the server of with `notifications/cancelled` (its caller cancelled it, or
/// its deadline passed; session era: the 2026-07-28 era cancels by closing
/// the stream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelledStream {
    /// Aborted with the request: its connection is free at once, whatever
    /// the server does with the stream.
    #[default]
    Abort,
    /// Read on until the server ends it (what arrives is dropped), holding
    /// its connection meanwhile. The TypeScript SDK 1.x and 2.x client:
    /// `Protocol.request`'s cancel (an aborted signal, or the request's
    /// timeout) sends `notifications/cancelled` and rejects the promise,
    /// and the POST's `fetch` (whose signal is the transport's, not the
    /// request's) is read by `_handleSseStream` until it is done. Against
    /// a server that never ends a cancelled call's stream
    /// ([`CancelledCall::LeftOpen`]) each cancellation keeps a connection
    /// for good (L4; C3 on the client's side), out of a pool a browser
    /// holds to six per host.
    ReadToEnd,
}

/// All client knobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientPolicy {
    /// See [`CompletionGate`].
    pub completion_gate: CompletionGate,
    /// See [`ForegroundAfterCompletion`].
    pub foreground_after_completion: ForegroundAfterCompletion,
    /// See [`ResumeBound`].
    pub resume_bound: ResumeBound,
    /// See [`SessionCommit`].
    pub session_commit: SessionCommit,
    /// See [`ReconnectStreams`].
    pub reconnect_streams: ReconnectStreams,
    /// See [`BackgroundGet`].
    pub background_get: BackgroundGet,
    /// See [`Relisten`].
    pub relisten: Relisten,
    /// See [`ListenPool`].
    pub listen_pool: ListenPool,
    /// See [`AnswerRoom`].
    pub answer_room: AnswerRoom,
    /// See [`SessionLoss`].
    pub session_loss: SessionLoss,
    /// See [`JsonWithoutResponse`].
    pub json_without_response: JsonWithoutResponse,
    /// See [`ResumeCursor`].
    pub resume_cursor: ResumeCursor,
    /// See [`LostStream`].
    pub lost_stream: LostStream,
    /// See [`ServerCancels`].
    pub server_cancels: ServerCancels,
    /// See [`StandaloneRequests`].
    pub standalone_requests: StandaloneRequests,
    /// See [`CancelledStream`].
    pub cancelled_stream: CancelledStream,
}

impl ClientPolicy {
    /// Ours: one pending map, completion on first arrival, abort the rest,
    /// bounded resumption, commit on parse.
    pub const FIXED: ClientPolicy = ClientPolicy {
        completion_gate: CompletionGate::FirstArrival,
        foreground_after_completion: ForegroundAfterCompletion::Abort,
        resume_bound: ResumeBound::Bounded,
        session_commit: SessionCommit::OnParse,
        reconnect_streams: ReconnectStreams::Unfinished,
        background_get: BackgroundGet::On,
        relisten: Relisten::AndRelist,
        listen_pool: ListenPool::LeavesOne,
        answer_room: AnswerRoom::YieldStream,
        session_loss: SessionLoss::FailPending,
        json_without_response: JsonWithoutResponse::Fail,
        resume_cursor: ResumeCursor::Stream,
        lost_stream: LostStream::Fail,
        server_cancels: ServerCancels::Obeyed,
        standalone_requests: StandaloneRequests::OnArrival,
        cancelled_stream: CancelledStream::Abort,
    };

    /// Whether this policy has scheduling points the driver must choose.
    pub fn has_scheduling_points(&self) -> bool {
        self.session_commit == SessionCommit::AfterForegroundStep
    }
}

impl ClientPolicy {
    /// csharp-sdk at c57f917d (`McpSessionHandler.cs`,
    /// `StreamableHttpClientSessionTransport.cs`): the caller completes only
    /// after the foreground send returns; the foreground's GET retry loop resets
    /// on every id. Race C, the hang.
    pub const CSHARP_BASELINE: ClientPolicy = ClientPolicy {
        completion_gate: CompletionGate::AfterForegroundReturns,
        resume_bound: ResumeBound::ResetOnEventId,
        ..ClientPolicy::FIXED
    };

    /// csharp-sdk PR #1381 (head 0619fb4e): completes on whichever comes first,
    /// but leaves the foreground running or polling (C3) and lets initialize's
    /// response complete before its session id is committed (C5).
    pub const CSHARP_PR1381: ClientPolicy = ClientPolicy {
        foreground_after_completion: ForegroundAfterCompletion::KeepRunning,
        resume_bound: ResumeBound::ResetOnEventId,
        session_commit: SessionCommit::AfterForegroundStep,
        ..ClientPolicy::FIXED
    };

    /// csharp-sdk's client as issue #1637 reports it (June 2026, closed
    /// with an opt-out, `HttpClientTransportOptions`): the standalone GET
    /// opened beside the `notifications/initialized` POST whatever the
    /// connection pool ([`BackgroundGet::IgnoringPool`]), so on a pool of
    /// one a server that holds the GET open leaves every later request
    /// queued behind it. Only that is modelled; the rest is FIXED.
    pub const CSHARP_1637: ClientPolicy = ClientPolicy {
        background_get: BackgroundGet::IgnoringPool,
        ..ClientPolicy::FIXED
    };

    /// Codex Desktop's client as mark3labs/mcp-go #932 reports it (July
    /// 2026): a server request read on the standalone GET is dispatched
    /// only once the client's POST is answered
    /// ([`StandaloneRequests::AfterCalls`]). Against a server that puts a
    /// call's elicitation on the GET (mcp-go before PR #933) the call and
    /// the elicitation wait for each other (L1, L2) until a deadline ends
    /// one. Only that is modelled; the rest is FIXED.
    pub const CODEX_DESKTOP_2026_07: ClientPolicy = ClientPolicy {
        standalone_requests: StandaloneRequests::AfterCalls,
        ..ClientPolicy::FIXED
    };

    /// An EventSource-style reader that reconnects every ended stream with the
    /// last id it saw, finished POST streams included (rust-sdk issue #659, the
    /// Cursor behaviour that fed race B).
    pub const EVENTSOURCE_RECONNECT: ClientPolicy = ClientPolicy {
        reconnect_streams: ReconnectStreams::EveryEnd,
        ..ClientPolicy::FIXED
    };

    /// go-sdk v1.7.0's client (`mcp/transport.go` `callSubscriptionsListen`,
    /// issue #1171): `subscriptions/listen` is sent and never awaited, so
    /// the end of its stream goes unnoticed ([`Relisten::Unnoticed`]).
    pub const GO_SDK_1_7: ClientPolicy = ClientPolicy {
        relisten: Relisten::Unnoticed,
        ..ClientPolicy::FIXED
    };

    /// rmcp 1.7.0's client (rust-sdk issue #912; re-initialization after a
    /// `404` since PR #743, 1.2.0, fixed by PR #914 in 2.2.0): the session
    /// lost, every stream is aborted and the requests in flight are never
    /// completed ([`SessionLoss::OrphanInFlight`]).
    pub const RMCP_1_7: ClientPolicy = ClientPolicy {
        session_loss: SessionLoss::OrphanInFlight,
        ..ClientPolicy::FIXED
    };

    /// rmcp 3.3.0's client (`streamable_http_client.rs` `post_message`;
    /// rust-sdk PR #1208, fixed for unparseable bodies in 3.4.0): a `200`
    /// JSON answer to a request that is not its response leaves the
    /// request waiting for ever ([`JsonWithoutResponse::Wait`]). A body that
    /// is another JSON-RPC message (the checker's only kind) still does so
    /// in 3.9.0.
    pub const RMCP_3_3: ClientPolicy = ClientPolicy {
        json_without_response: JsonWithoutResponse::Wait,
        ..ClientPolicy::FIXED
    };

    /// The TypeScript SDK 1.32.2 client (`client/streamableHttp.ts`), the
    /// same in 2.4.0 (`@modelcontextprotocol/client`), as `probe-client`
    /// found it (`docs/client-compatibility.md`): its resumption cursor is
    /// the ended connection's ([`ResumeCursor::Connection`]), a stream it
    /// cannot resume leaves the request pending ([`LostStream::Leave`]),
    /// a `404` to a resumption reports an error and completes nothing
    /// ([`SessionLoss::OrphanInFlight`]), and a `200` JSON body that is
    /// another message is dispatched while the request waits
    /// ([`JsonWithoutResponse::WaitAfterMessages`]). Like 2.0.x it reads a
    /// cancellation of request `0` as naming none
    /// ([`ServerCancels::IdZeroIgnored`], typescript-sdk #2654, never fixed
    /// on 1.x: `probe-client`'s `withdrawn-request-id-0`). A request it
    /// gives up (cancelled, or past its deadline) keeps its POST's stream,
    /// read to its end ([`CancelledStream::ReadToEnd`]; `probe-client`'s
    /// `given-up-call`).
    pub const TS_SDK_1_32: ClientPolicy = ClientPolicy {
        resume_cursor: ResumeCursor::Connection,
        lost_stream: LostStream::Leave,
        session_loss: SessionLoss::OrphanInFlight,
        json_without_response: JsonWithoutResponse::WaitAfterMessages,
        server_cancels: ServerCancels::IdZeroIgnored,
        cancelled_stream: CancelledStream::ReadToEnd,
        ..ClientPolicy::FIXED
    };

    /// The TypeScript SDK 2.4.0 client (`@modelcontextprotocol/client`)
    /// hearing list changes the documented way, `ClientOptions.listChanged`,
    /// as `probe-client` found it (`listen-cut`): on a 2026-07-28
    /// connection the SDK opens the subscription itself, and when its stream
    /// is lost it only resolves the subscription's `closed` with
    /// `'remote'`: it never listens again and never calls `onChanged`, so
    /// the application believes it is listening and hears no change again
    /// ([`Relisten::Unnoticed`], M4). Its session-era transport is 1.32.2's
    /// ([`ClientPolicy::TS_SDK_1_32`]), with typescript-sdk #2654 fixed
    /// (since 2.1.0): a cancellation of request `0` is obeyed.
    pub const TS_SDK_2_4: ClientPolicy = ClientPolicy {
        relisten: Relisten::Unnoticed,
        server_cancels: ServerCancels::Obeyed,
        ..ClientPolicy::TS_SDK_1_32
    };

    /// The TypeScript SDK 2.0.x client (`@modelcontextprotocol/client`
    /// before 2.1.0, typescript-sdk #2654): a server's cancellation of its
    /// request `0` is ignored ([`ServerCancels::IdZeroIgnored`]), so the
    /// application answers a request the server withdrew (C6). Its
    /// transport is 2.4.0's ([`ClientPolicy::TS_SDK_2_4`]).
    pub const TS_SDK_2_0: ClientPolicy = ClientPolicy {
        server_cancels: ServerCancels::IdZeroIgnored,
        ..ClientPolicy::TS_SDK_2_4
    };

    /// The Python SDK client (`mcp` 2.3.0, `client/streamable_http.py`),
    /// as `probe-client` found it: a resumption that ends cleanly without
    /// the response starts the attempt count anew
    /// ([`ResumeBound::ResetOnCleanEnd`]: empty resumptions without end),
    /// and a `200` JSON body that is another message leaves the request
    /// waiting ([`JsonWithoutResponse::WaitAfterMessages`]). A lost listen
    /// is the application's to renew (`SubscriptionLost`:
    /// [`Relisten::Never`]). A request given up in the session era (its
    /// `read_timeout_seconds`, or its caller cancelled) keeps its POST,
    /// whose task runs on under a scope of its own and reads the stream to
    /// its end ([`CancelledStream::ReadToEnd`]; `probe-client`'s
    /// `given-up-call`); the 2026-07-28 transport cancels that scope.
    pub const PYTHON_2_3: ClientPolicy = ClientPolicy {
        resume_bound: ResumeBound::ResetOnCleanEnd,
        json_without_response: JsonWithoutResponse::WaitAfterMessages,
        relisten: Relisten::Never,
        cancelled_stream: CancelledStream::ReadToEnd,
        ..ClientPolicy::FIXED
    };

    /// rmcp 3.9.0's client, as `probe-client` found it: empty resumptions
    /// without end ([`ResumeBound::ResetOnCleanEnd`]), a `404` to a
    /// resumption that completes nothing (rmcp retries the `404` with a
    /// doubling delay and no limit, `classify_reconnect_error`; modelled
    /// as [`SessionLoss::OrphanInFlight`]: the request waits either way),
    /// and the wait on a JSON body that is another message
    /// ([`JsonWithoutResponse::WaitAfterMessages`]; an unparseable body
    /// fails since 3.4.0). A lost listen is the application's to renew
    /// (`SubscriptionEnd::Abrupt`: [`Relisten::Never`]).
    pub const RMCP_3_9: ClientPolicy = ClientPolicy {
        resume_bound: ResumeBound::ResetOnCleanEnd,
        session_loss: SessionLoss::OrphanInFlight,
        json_without_response: JsonWithoutResponse::WaitAfterMessages,
        relisten: Relisten::Never,
        ..ClientPolicy::FIXED
    };
}

/// A named client preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NamedClientPolicy {
    /// The preset's name.
    pub name: &'static str,
    /// The knobs.
    pub policy: ClientPolicy,
}

impl ClientPolicy {
    /// Every preset's name, FIXED first (what an unknown name is told).
    pub fn preset_names() -> Vec<&'static str> {
        Self::presets().iter().map(|p| p.name).collect()
    }

    /// Every preset, FIXED first.
    pub fn presets() -> &'static [NamedClientPolicy] {
        &[
            NamedClientPolicy {
                name: "FIXED",
                policy: ClientPolicy::FIXED,
            },
            NamedClientPolicy {
                name: "CSHARP_BASELINE",
                policy: ClientPolicy::CSHARP_BASELINE,
            },
            NamedClientPolicy {
                name: "CSHARP_PR1381",
                policy: ClientPolicy::CSHARP_PR1381,
            },
            NamedClientPolicy {
                name: "CSHARP_1637",
                policy: ClientPolicy::CSHARP_1637,
            },
            NamedClientPolicy {
                name: "CODEX_DESKTOP_2026_07",
                policy: ClientPolicy::CODEX_DESKTOP_2026_07,
            },
            NamedClientPolicy {
                name: "EVENTSOURCE_RECONNECT",
                policy: ClientPolicy::EVENTSOURCE_RECONNECT,
            },
            NamedClientPolicy {
                name: "GO_SDK_1_7",
                policy: ClientPolicy::GO_SDK_1_7,
            },
            NamedClientPolicy {
                name: "RMCP_1_7",
                policy: ClientPolicy::RMCP_1_7,
            },
            NamedClientPolicy {
                name: "RMCP_3_3",
                policy: ClientPolicy::RMCP_3_3,
            },
            NamedClientPolicy {
                name: "TS_SDK_1_32",
                policy: ClientPolicy::TS_SDK_1_32,
            },
            NamedClientPolicy {
                name: "TS_SDK_2_4",
                policy: ClientPolicy::TS_SDK_2_4,
            },
            NamedClientPolicy {
                name: "TS_SDK_2_0",
                policy: ClientPolicy::TS_SDK_2_0,
            },
            NamedClientPolicy {
                name: "PYTHON_2_3",
                policy: ClientPolicy::PYTHON_2_3,
            },
            NamedClientPolicy {
                name: "RMCP_3_9",
                policy: ClientPolicy::RMCP_3_9,
            },
        ]
    }

    /// The preset called `name` (case-insensitive).
    pub fn preset(name: &str) -> Option<ClientPolicy> {
        Self::presets()
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .map(|p| p.policy)
    }
}
