//! The world's server side, behind one seam: a single [`ServerEndpoint`], or
//! a fleet of instances sharing a store ([`super::fleet::Fleet`]). The world
//! drives whichever it has through [`Servers`] only, so the clients, the
//! network between them and the server side, and the monitor are written
//! once for both.
//!
//! Exchange ids the world sees are the server side's own: a fleet names
//! instance `i`'s exchange `h` `i * SERVER_HTTP_STRIDE + h`, so the monitor
//! judges the fleet as the one server its clients believe they talk to.

use crate::monitor::Observation;
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::{HttpId, MsgKey, RequestId, SessionId};
use mcp_streamable::principal::Caller;
use mcp_streamable::server::{RequestHead, ServerEndpoint, ServerOutput, ServerSession};
use mcp_streamable::time::Instant;
use std::fmt::Debug;
use std::hash::Hash;

/// Instance `i`'s exchange `h` is the world's `i * SERVER_HTTP_STRIDE + h`.
pub const SERVER_HTTP_STRIDE: u64 = 1_000_000;

/// What handles one output while the server side drains: the server side
/// itself (to tell it an exchange is over), the output, the observer.
pub type OutputHandler<'a, S> = dyn FnMut(&mut S, ServerOutput, &mut dyn FnMut(&Observation)) + 'a;

/// A server side the world can drive (see the module docs).
pub trait Servers: Clone + Debug + PartialEq + Eq + Hash {
    /// A request from `caller` reaches server `at` (the balancer's choice);
    /// the id of its exchange.
    fn handle_request(
        &mut self,
        at: usize,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> HttpId;

    /// [`Self::handle_request`] under [`Naming::ByExchange`]: the exchange
    /// is named `ch` (the world's id of the client exchange carrying it),
    /// and what the request mints is drawn from `ids`. A server side that
    /// names by its own ranges (a fleet) ignores both.
    ///
    /// [`Naming::ByExchange`]: super::Naming::ByExchange
    #[allow(clippy::too_many_arguments)]
    fn handle_request_named(
        &mut self,
        at: usize,
        ch: HttpId,
        ids: IdSource,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> HttpId {
        let _ = (ch, ids);
        self.handle_request(at, head, body, caller, now)
    }

    /// Exchange `http` is over for the client.
    fn handle_http_closed(&mut self, http: HttpId, now: Instant);

    /// Whether [`Self::handle_http_closed`] of `http` would change anything
    /// (an exchange the server already ended and forgot would not). When
    /// unsure, `true`.
    fn minds_http_closed(&self, http: HttpId) -> bool {
        let _ = http;
        true
    }

    /// Time has reached `now`.
    fn handle_timeout(&mut self, now: Instant);

    /// The next deadline of any server.
    fn poll_timeout(&self) -> Option<Instant>;

    /// Whether the timers left are housekeeping only (a fleet's heartbeats):
    /// none of them would change what a client sees, so a run whose clients
    /// are quiet too is over.
    fn is_idle(&self) -> bool;

    /// Session `sid` on server `at`, for its application.
    fn session_mut(&mut self, at: usize, sid: &SessionId) -> Option<&mut ServerSession>;

    /// The server whose application holds request `id` of `sid` (the one
    /// the request landed on).
    fn holder(&self, sid: &SessionId, id: &RequestId) -> usize;

    /// The session with the smallest id on any server. Ids are drawn at
    /// random, so with several sessions this is a pick fixed by the seed,
    /// not the first one minted (`docs/reduction.md`, "Where the order of
    /// ids decides"); worlds of one session are what it is for.
    fn first_session(&self) -> Option<SessionId>;

    /// Sessions of the session era server `at` knows, in id order.
    fn named_sessions(&self, at: usize) -> Vec<SessionId>;

    /// The server exchange carrying 2026-07-28 request `id` of `sid` now,
    /// when the server side can say (one endpoint): where its answer must
    /// go. Session-era requests name none (`PendingRequest`).
    fn request_exchange(&self, sid: &SessionId, id: &RequestId) -> Option<HttpId> {
        let _ = (sid, id);
        None
    }

    /// The session exchange `http` (a server id) belongs to, when the
    /// server side can say (one endpoint; a fleet's world does not ask).
    fn route(&self, http: HttpId) -> Option<SessionId> {
        let _ = http;
        None
    }

    /// Messages the servers still hold for a stream, by session (the
    /// monitor's end-of-run check tells held from lost).
    fn queued(&self) -> Vec<(String, MsgKey)>;

    /// The requests the servers' live sessions sent their clients and
    /// still await answers to (L1 and F6 judge them once nothing more can
    /// happen).
    fn awaited_answers(&self) -> Vec<RequestId>;

    /// Whether a live session `sid` awaits the client's answer to a request
    /// it sent for client request `call`, on any server.
    fn awaits_answers_for(&self, sid: &SessionId, call: &RequestId) -> bool;

    /// Gives every part it shares by a reference count a copy of its own
    /// ([`World::localize`](super::World::localize)). Nothing it means
    /// changes; a server side with nothing shared does nothing.
    fn localize(&mut self) {}

    /// Whether a [`Self::drain`] may find anything. When not, the world
    /// leaves the server side untouched (shared with the states it came
    /// from, its hash kept). When unsure, `true`.
    fn has_output(&self) -> bool {
        true
    }

    /// Drains every server until quiet, each output shown to `observe`
    /// before `handle` gets it. Whether anything came out.
    fn drain(
        &mut self,
        now: Instant,
        observe: &mut dyn FnMut(&Observation),
        handle: &mut OutputHandler<'_, Self>,
    ) -> bool;
}

impl Servers for ServerEndpoint {
    fn localize(&mut self) {
        ServerEndpoint::localize(self)
    }

    fn handle_request(
        &mut self,
        _at: usize,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> HttpId {
        ServerEndpoint::handle_request_from(self, head, body, caller, now).http
    }

    fn handle_request_named(
        &mut self,
        _at: usize,
        ch: HttpId,
        ids: IdSource,
        head: &RequestHead,
        body: &[u8],
        caller: &Caller,
        now: Instant,
    ) -> HttpId {
        // The endpoint's own counter and source are never drawn from, so
        // they stay as they were: nothing in the state says which came first.
        let own = self.replace_ids(ids);
        let http = self.handle_reserved(ch, head, body, caller, now).http;
        self.replace_ids(own);
        http
    }

    fn handle_http_closed(&mut self, http: HttpId, now: Instant) {
        ServerEndpoint::handle_http_closed(self, http, now);
    }

    fn minds_http_closed(&self, http: HttpId) -> bool {
        ServerEndpoint::route(self, http).is_some()
    }

    fn handle_timeout(&mut self, now: Instant) {
        ServerEndpoint::handle_timeout(self, now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        ServerEndpoint::poll_timeout(self).map(|(t, _)| t)
    }

    fn is_idle(&self) -> bool {
        ServerEndpoint::poll_timeout(self).is_none()
    }

    fn session_mut(&mut self, _at: usize, sid: &SessionId) -> Option<&mut ServerSession> {
        ServerEndpoint::session_mut(self, sid)
    }

    fn holder(&self, _sid: &SessionId, _id: &RequestId) -> usize {
        0
    }

    fn first_session(&self) -> Option<SessionId> {
        self.session_ids().next().cloned()
    }

    fn named_sessions(&self, _at: usize) -> Vec<SessionId> {
        self.named_session_ids().cloned().collect()
    }

    fn route(&self, http: HttpId) -> Option<SessionId> {
        ServerEndpoint::route(self, http).cloned()
    }

    fn queued(&self) -> Vec<(String, MsgKey)> {
        queued_in(self)
    }

    fn awaited_answers(&self) -> Vec<RequestId> {
        awaited_in(self).collect()
    }

    fn awaits_answers_for(&self, sid: &SessionId, call: &RequestId) -> bool {
        awaits_in(self, sid, call)
    }

    fn has_output(&self) -> bool {
        ServerEndpoint::has_output(self)
    }

    fn request_exchange(&self, sid: &SessionId, id: &RequestId) -> Option<HttpId> {
        self.session(sid)
            .filter(|s| s.version().is_v2026())
            .and_then(|s| s.request_exchange(id))
    }

    fn drain(
        &mut self,
        _now: Instant,
        observe: &mut dyn FnMut(&Observation),
        handle: &mut OutputHandler<'_, Self>,
    ) -> bool {
        self.drain_observed(observe, |ep, out, observe| handle(ep, out, observe))
    }
}

/// What an endpoint's sessions still hold for a stream.
/// The requests `ep`'s live sessions sent their clients and still await
/// answers to, in session order (a 2026-07-28 request's own session sends none).
pub(crate) fn awaited_in(ep: &ServerEndpoint) -> impl Iterator<Item = RequestId> + '_ {
    ep.session_ids()
        .filter_map(|sid| ep.session(sid))
        .filter(|s| !s.is_ended())
        .flat_map(|s| s.awaited_answers().cloned())
}

pub(crate) fn awaits_in(ep: &ServerEndpoint, sid: &SessionId, call: &RequestId) -> bool {
    ep.session(sid)
        .is_some_and(|s| !s.is_ended() && s.awaits_answers_for(call))
}

pub(crate) fn queued_in(ep: &ServerEndpoint) -> Vec<(String, MsgKey)> {
    ep.session_ids()
        .filter_map(|sid| ep.session(sid))
        .flat_map(|s| {
            let sid = s.id().to_string();
            s.queued_keys().into_iter().map(move |k| (sid.clone(), k))
        })
        .collect()
}
