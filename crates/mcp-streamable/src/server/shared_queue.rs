//! mcp-go's competing consumers ([`SessionQueue::SharedCompeting`]) as explicit
//! scheduling points.
//!
//! In mcp-go v0.44.1 every POST starts a listener goroutine that `select`s on
//! the session channel, its own `done` and its context; Go picks uniformly
//! among ready cases. Which goroutine runs next is not the core's to decide,
//! so it is an input: the driver calls [`ServerSession::handle_listener_wake`]
//! or [`ServerSession::handle_handler_step`] and the checker explores every
//! order. Under FIXED both are no-ops returning `false`.
//!
//! [`SessionQueue::SharedCompeting`]: crate::policy::SessionQueue::SharedCompeting

use super::session::{HandlerStep, Listener, Role, ServerSession};
use super::{Content, EndReason, TransmitKind};
use crate::ids::HttpId;
use crate::time::Instant;

impl ServerSession {
    /// The listener of exchange `http` wakes and takes the head of the session
    /// queue, if any. Returns whether anything happened.
    pub fn handle_listener_wake(&mut self, http: HttpId, _now: Instant) -> bool {
        let Some(ex) = self.exchanges.get(&http).copied() else {
            return false;
        };
        if ex.listener != Listener::Live {
            return false;
        }
        let done = match ex.role {
            Role::Post { stream } => self.streams.get(&stream).is_none_or(|s| s.finished),
            Role::Accepted { step } => step == HandlerStep::Finished,
            Role::Get { .. } => ex.ended,
            Role::Shadow => true,
        };
        let Some(out) = self.shared.pop_front() else {
            // Nothing to take: a finished exchange's listener now exits.
            if done {
                self.retire_listener(http);
                return true;
            }
            return false;
        };
        if done {
            // Dequeued, then dropped: `done` was already closed (A5), or the
            // write fails after the handler returned (A4). Lost either way.
            return true;
        }
        match ex.role {
            Role::Post { stream } | Role::Get { stream } => self.write_to_stream(stream, out),
            Role::Accepted { step } => {
                if step == HandlerStep::Running {
                    // The listener commits SSE before the handler writes 202 (race A, 8a).
                    self.head(http, 200, Content::Sse);
                }
                // 8b: after the 202 head, the bytes go into the 202's body.
                self.tx(
                    http,
                    TransmitKind::Event {
                        id: None,
                        retry_ms: None,
                        message: Some(out),
                    },
                );
            }
            Role::Shadow => {}
        }
        true
    }

    /// The handler of notification POST `http` takes its next step: write the
    /// 202 head, then return (net/http ends the response). Returns whether
    /// anything happened.
    pub fn handle_handler_step(&mut self, http: HttpId, _now: Instant) -> bool {
        let Some(ex) = self.exchanges.get(&http).copied() else {
            return false;
        };
        let Role::Accepted { step } = ex.role else {
            return false;
        };
        let next = match step {
            HandlerStep::Running => {
                self.head(http, 202, Content::None);
                HandlerStep::HeadWritten
            }
            HandlerStep::HeadWritten => {
                self.end(http, EndReason::Complete);
                HandlerStep::Finished
            }
            HandlerStep::Finished => return false,
        };
        if let Some(e) = self.exchanges.get_mut(&http) {
            e.role = Role::Accepted { step: next };
        }
        true
    }

    /// Exchanges with a scheduling point the driver may fire now.
    pub fn scheduling_points(&self) -> Vec<(HttpId, SchedulingPoint)> {
        let mut points = Vec::new();
        for (http, ex) in &self.exchanges {
            if let Role::Accepted { step } = ex.role {
                if step != HandlerStep::Finished {
                    points.push((*http, SchedulingPoint::HandlerStep));
                }
            }
            if ex.listener == Listener::Live {
                points.push((*http, SchedulingPoint::ListenerWake));
            }
        }
        if let Some(http) = self.listen_step_pending() {
            points.push((http, SchedulingPoint::ListenStep));
        }
        points
    }

    fn retire_listener(&mut self, http: HttpId) {
        let remove = match self.exchanges.get_mut(&http) {
            Some(e) => {
                e.listener = Listener::None;
                e.ended
            }
            None => false,
        };
        if remove {
            self.exchanges.remove(&http);
        }
    }
}

/// A scheduling point a driver may fire.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SchedulingPoint {
    /// [`ServerSession::handle_listener_wake`].
    ListenerWake,
    /// [`ServerSession::handle_handler_step`].
    HandlerStep,
    /// [`ServerSession::handle_listen_step`]: the half of a listen's start
    /// that its [`ListenAck`](crate::policy::ListenAck) leaves for later.
    ListenStep,
}
