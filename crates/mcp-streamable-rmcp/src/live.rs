//! [`LiveSession`]: one session's [`Bridge`] behind a lock, with the
//! channels rmcp reads: an SSE stream per exchange, the handler's inbox.
//!
//! Every input is "lock, mutate, drain": the bridge is fed, then all it
//! has to say is moved out (events onto streams, messages into the inbox)
//! before the lock is released, so what one caller did is complete when the
//! next one looks. Nothing here decides anything about MCP.

use super::bridge::{Bridge, Output};
use super::manager::Table;
use super::stream::CoreStream;
use super::{convert, CoreError};
use mcp_streamable::ids::{HttpId, SessionId};
use mcp_streamable::time::Instant;
use mcp_streamable_hyper::sync::{Lock, Signal, StdLock};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::{mpsc, Notify};

/// What a [`LiveSession`] takes from whatever runs it: its locks, its
/// wake-ups and its clock. [`Tokio`] in the adapter; loom's stand-ins in
/// the loom model (`loom_model.rs`), so loom explores this file's own code.
pub(crate) trait Platform: Send + Sync + Sized + 'static {
    /// The session's lock.
    type SessionLock: Lock<State>;
    /// The manager's table's lock.
    type TableLock: Lock<Table<Self>>;
    /// The inbox's and the timer's wake-ups.
    type Signal: Signal;
    /// Where core time is measured from.
    type Clock: Copy + Send + Sync;
    /// Core time now.
    fn now(clock: Self::Clock) -> Instant;
    /// Completes at core time `at` (never, without a deadline).
    fn sleep_until(clock: Self::Clock, at: Option<Instant>) -> impl Future<Output = ()> + Send;
}

/// The adapter's platform: std locks, tokio's `Notify` and clock.
pub(crate) struct Tokio;

impl Platform for Tokio {
    type SessionLock = SessionMutex;
    type TableLock = StdLock<Table<Tokio>>;
    type Signal = Notify;
    type Clock = tokio::time::Instant;

    fn now(clock: Self::Clock) -> Instant {
        mcp_streamable_hyper::clock::now(clock)
    }

    fn sleep_until(clock: Self::Clock, at: Option<Instant>) -> impl Future<Output = ()> + Send {
        mcp_streamable_hyper::clock::sleep_until(clock, at)
    }
}

/// The session's std lock. A panic while holding it left a bridge
/// mid-change: nothing sound can be said of it, so the session reads as
/// ended.
pub(crate) struct SessionMutex(Mutex<State>);

impl Lock<State> for SessionMutex {
    fn new(value: State) -> Self {
        SessionMutex(Mutex::new(value))
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut state = self.0.lock().unwrap_or_else(|poisoned| {
            let mut s = poisoned.into_inner();
            s.ended = true;
            s
        });
        f(&mut state)
    }
}

/// One session, shared by rmcp's calls, its transport, its streams and the
/// timer task.
pub(crate) struct LiveSession<P: Platform = Tokio> {
    pub(super) id: SessionId,
    clock: P::Clock,
    state: P::SessionLock,
    /// A message waits in the inbox, or the session ended.
    inbox_ready: P::Signal,
    /// The next deadline changed, or the session ended.
    timer_changed: P::Signal,
    stream_queued_max: usize,
    inbox_max: usize,
    /// The manager's table: told of every change (admission's view of the
    /// session), and of the end (the session leaves it). Its lock is only
    /// ever taken inside the session's (or alone): session, then table.
    table: Weak<P::TableLock>,
}

/// What a session's lock guards.
pub(crate) struct State {
    bridge: Bridge<ClientJsonRpcMessage>,
    streams: BTreeMap<HttpId, mpsc::Sender<ServerSseMessage>>,
    inbox: VecDeque<ClientJsonRpcMessage>,
    ended: bool,
    deadline: Option<Instant>,
}

impl<P: Platform> LiveSession<P> {
    pub(crate) fn new(
        id: SessionId,
        bridge: Bridge<ClientJsonRpcMessage>,
        clock: P::Clock,
        stream_queued_max: usize,
        inbox_max: usize,
        table: Weak<P::TableLock>,
    ) -> Self {
        LiveSession {
            id,
            table,
            clock,
            state: P::SessionLock::new(State {
                bridge,
                streams: BTreeMap::new(),
                inbox: VecDeque::new(),
                ended: false,
                deadline: None,
            }),
            inbox_ready: P::Signal::new(),
            timer_changed: P::Signal::new(),
            stream_queued_max: stream_queued_max.max(1),
            inbox_max,
        }
    }

    /// Core time now.
    pub(super) fn now(&self) -> Instant {
        P::now(self.clock)
    }

    /// Whether the session ended.
    pub(crate) fn is_ended(&self) -> bool {
        self.state.with(|s| s.ended)
    }

    /// Whether the session serves a request from `caller` (see
    /// [`Bridge::serves`]).
    pub(crate) fn serves(&self, caller: Option<&mcp_streamable::principal::Principal>) -> bool {
        self.state.with(|s| s.bridge.serves(caller))
    }

    /// The next client message for the handler, in the order the core
    /// delivered them; `None` once the session ended and all are read.
    pub(crate) async fn recv(&self) -> Option<ClientJsonRpcMessage> {
        loop {
            let next = self.state.with(|s| match s.inbox.pop_front() {
                Some(m) => Some(Some(m)),
                None if s.ended => Some(None),
                None => None,
            });
            if let Some(next) = next {
                return next;
            }
            // A permit is kept if the notice came between the look and here.
            self.inbox_ready.notified().await;
        }
    }

    /// Feeds the bridge with `f`, then drains it.
    pub(super) fn with<T>(
        &self,
        f: impl FnOnce(&mut Bridge<ClientJsonRpcMessage>, Instant) -> T,
    ) -> T {
        let now = self.now();
        self.state.with(|state| {
            let out = f(&mut state.bridge, now);
            self.drain(state, now);
            out
        })
    }

    /// Opens a stream for the exchange `f` starts: its events' receiver.
    /// One that carries a client message needs room for it in the inbox
    /// (`inbox_max`).
    pub(crate) fn open_exchange(
        &self,
        carries_message: bool,
        f: impl FnOnce(&mut Bridge<ClientJsonRpcMessage>, Instant) -> Result<HttpId, CoreError>,
    ) -> Result<(mpsc::Receiver<ServerSseMessage>, HttpId), CoreError> {
        let now = self.now();
        self.state.with(|state| {
            if state.ended {
                return Err(CoreError::UnknownSession);
            }
            if carries_message {
                self.check_inbox(state)?;
            }
            let http = f(&mut state.bridge, now)?;
            // What the core replays at the open is written whatever the
            // bound (the core retains it already, within its `events_max`):
            // a reader that fell behind must be able to catch up by
            // resuming. `stream_queued_max` bounds what comes after.
            let replay = state.bridge.queued_events(http);
            let (tx, rx) = mpsc::channel(self.stream_queued_max + replay);
            state.streams.insert(http, tx);
            self.drain(state, now);
            Ok((rx, http))
        })
    }

    /// A message that opens no stream (a notification, a response).
    pub(super) fn accept(
        &self,
        f: impl FnOnce(&mut Bridge<ClientJsonRpcMessage>, Instant) -> Result<(), CoreError>,
    ) -> Result<(), CoreError> {
        let now = self.now();
        self.state.with(|state| {
            if state.ended {
                return Err(CoreError::UnknownSession);
            }
            self.check_inbox(state)?;
            let out = f(&mut state.bridge, now);
            self.drain(state, now);
            out
        })
    }

    fn check_inbox(&self, state: &State) -> Result<(), CoreError> {
        // The bridge's outputs were drained when the lock was last released:
        // the inbox is all that waits.
        if state.inbox.len() >= self.inbox_max {
            return Err(CoreError::HandlerBehind {
                max: self.inbox_max,
            });
        }
        Ok(())
    }

    /// rmcp dropped the stream of `http` (its client went away).
    pub(super) fn stream_dropped(&self, http: HttpId) {
        self.with(|b, now| b.handle_stream_dropped(http, now));
    }

    /// Moves everything the bridge has to say out, until it is quiet.
    fn drain(&self, state: &mut State, now: Instant) {
        while let Some(out) = state.bridge.poll_output() {
            match out {
                Output::Deliver { message, extra } => {
                    let message = match extra {
                        Some(original) => original,
                        None => match convert::to_client(&message) {
                            Ok(m) => m,
                            Err(e) => {
                                tracing::warn!(session = %self.id, "undeliverable: {e}");
                                continue;
                            }
                        },
                    };
                    state.inbox.push_back(message);
                    self.inbox_ready.notify_one();
                }
                Output::Event {
                    http,
                    id,
                    retry_ms,
                    message,
                } => {
                    let Some(tx) = state.streams.get(&http) else {
                        continue;
                    };
                    let sse = match convert::sse(id, retry_ms, message.as_ref()) {
                        Ok(sse) => sse,
                        Err(e) => {
                            tracing::warn!(session = %self.id, "unwritable event: {e}");
                            continue;
                        }
                    };
                    if tx.try_send(sse).is_err() {
                        // Full (a reader this slow is dropped; the stream
                        // stays resumable from its last event) or gone.
                        state.streams.remove(&http);
                        state.bridge.handle_stream_dropped(http, now);
                    }
                }
                Output::End { http, .. } => {
                    state.streams.remove(&http);
                }
                Output::SessionEnded => {
                    state.ended = true;
                    state.streams.clear();
                    self.inbox_ready.notify_one();
                }
            }
        }
        let deadline = state.bridge.poll_timeout();
        if deadline != state.deadline || state.ended {
            state.deadline = deadline;
            self.timer_changed.notify_one();
        }
        if let Some(table) = self.table.upgrade() {
            table.with(|table| {
                if state.ended {
                    table.forget(&self.id);
                } else {
                    table.report(&self.id, state.bridge.core().admission_state());
                }
            });
        }
    }
}

/// Fires the session's timers until it ends.
pub(crate) async fn run_timers<P: Platform>(session: Arc<LiveSession<P>>) {
    loop {
        let Some(deadline) = session
            .state
            .with(|s| (!s.ended).then(|| s.bridge.poll_timeout()))
        else {
            return;
        };
        tokio::select! {
            // Biased: no thread-local randomness (loom replays executions).
            biased;
            _ = session.timer_changed.notified() => {}
            _ = P::sleep_until(session.clock, deadline) => {
                session.with(|b, now| b.handle_timeout(now));
            }
        }
    }
}

impl LiveSession<Tokio> {
    /// [`LiveSession::open_exchange`], as the stream rmcp writes (dropping
    /// it closes the exchange).
    pub(super) fn open(
        self: &Arc<Self>,
        carries_message: bool,
        f: impl FnOnce(&mut Bridge<ClientJsonRpcMessage>, Instant) -> Result<HttpId, CoreError>,
    ) -> Result<CoreStream, CoreError> {
        let (rx, http) = self.open_exchange(carries_message, f)?;
        Ok(CoreStream::new(rx, Some((self.clone(), http))))
    }
}
