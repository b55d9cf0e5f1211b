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
use crate::ids::{HttpId, SessionId};
use crate::time::Instant;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tokio::sync::{mpsc, Notify};

/// One session, shared by rmcp's calls, its transport, its streams and the
/// timer task.
pub(crate) struct LiveSession {
    pub(super) id: SessionId,
    start: tokio::time::Instant,
    state: Mutex<State>,
    /// A message waits in the inbox, or the session ended.
    pub(super) inbox_ready: Notify,
    /// The next deadline changed, or the session ended.
    pub(super) timer_changed: Notify,
    stream_queued_max: usize,
    inbox_max: usize,
    /// The manager's table: told of every change (admission's view of the
    /// session), and of the end (the session leaves it).
    table: Weak<Mutex<Table>>,
}

pub(super) struct State {
    pub(super) bridge: Bridge<ClientJsonRpcMessage>,
    streams: BTreeMap<HttpId, mpsc::Sender<ServerSseMessage>>,
    pub(super) inbox: VecDeque<ClientJsonRpcMessage>,
    pub(super) ended: bool,
    deadline: Option<Instant>,
}

impl LiveSession {
    pub(super) fn new(
        id: SessionId,
        bridge: Bridge<ClientJsonRpcMessage>,
        start: tokio::time::Instant,
        stream_queued_max: usize,
        inbox_max: usize,
        table: Weak<Mutex<Table>>,
    ) -> Self {
        LiveSession {
            id,
            table,
            start,
            state: Mutex::new(State {
                bridge,
                streams: BTreeMap::new(),
                inbox: VecDeque::new(),
                ended: false,
                deadline: None,
            }),
            inbox_ready: Notify::new(),
            timer_changed: Notify::new(),
            stream_queued_max: stream_queued_max.max(1),
            inbox_max,
        }
    }

    /// Core time now.
    pub(super) fn now(&self) -> Instant {
        crate::http::clock::now(self.start)
    }

    pub(super) fn start(&self) -> tokio::time::Instant {
        self.start
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock left a bridge mid-change: nothing
        // sound can be said of it, so the session reads as ended.
        self.state.lock().unwrap_or_else(|poisoned| {
            let mut s = poisoned.into_inner();
            s.ended = true;
            s
        })
    }

    /// Feeds the bridge with `f`, then drains it.
    pub(super) fn with<T>(
        &self,
        f: impl FnOnce(&mut Bridge<ClientJsonRpcMessage>, Instant) -> T,
    ) -> T {
        let now = self.now();
        let mut state = self.lock();
        let out = f(&mut state.bridge, now);
        self.drain(&mut state, now);
        out
    }

    /// Opens a stream for the exchange `f` starts. One that carries a
    /// client message needs room for it in the inbox (`inbox_max`).
    pub(super) fn open(
        self: &Arc<Self>,
        carries_message: bool,
        f: impl FnOnce(&mut Bridge<ClientJsonRpcMessage>, Instant) -> Result<HttpId, CoreError>,
    ) -> Result<CoreStream, CoreError> {
        let now = self.now();
        let mut state = self.lock();
        if state.ended {
            return Err(CoreError::UnknownSession);
        }
        if carries_message {
            self.check_inbox(&state)?;
        }
        let http = f(&mut state.bridge, now)?;
        let (tx, rx) = mpsc::channel(self.stream_queued_max);
        state.streams.insert(http, tx);
        self.drain(&mut state, now);
        Ok(CoreStream::new(rx, Some((self.clone(), http))))
    }

    /// A message that opens no stream (a notification, a response).
    pub(super) fn accept(
        &self,
        f: impl FnOnce(&mut Bridge<ClientJsonRpcMessage>, Instant) -> Result<(), CoreError>,
    ) -> Result<(), CoreError> {
        let now = self.now();
        let mut state = self.lock();
        if state.ended {
            return Err(CoreError::UnknownSession);
        }
        self.check_inbox(&state)?;
        let out = f(&mut state.bridge, now);
        self.drain(&mut state, now);
        out
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
            let mut table = table.lock().unwrap_or_else(|p| p.into_inner());
            if state.ended {
                table.forget(&self.id);
            } else {
                table.report(&self.id, state.bridge.core().admission_state());
            }
        }
    }
}

/// Fires the session's timers until it ends.
pub(super) async fn run_timers(session: Arc<LiveSession>) {
    loop {
        let deadline = {
            let state = session.lock();
            if state.ended {
                return;
            }
            state.bridge.poll_timeout()
        };
        tokio::select! {
            _ = crate::http::clock::sleep_until(session.start(), deadline) => {
                session.with(|b, now| b.handle_timeout(now));
            }
            _ = session.timer_changed.notified() => {}
        }
    }
}
