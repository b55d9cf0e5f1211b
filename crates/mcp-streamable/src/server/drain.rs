//! The observed drain's outputs: what every loop around a
//! [`ServerEndpoint`](super::ServerEndpoint) does after each input (the
//! [`ServerDriver`], the test harness, the fuzz targets, the checker's
//! world, the benchmarks) goes through
//! [`ServerEndpoint::drain_observed`](super::ServerEndpoint::drain_observed)
//! and [`ServerEndpoint::broadcast_observed`](super::ServerEndpoint::broadcast_observed),
//! written once.
//!
//! The core's contract is "after any input, poll until `None`". Doing that by
//! hand in each loop is how loops drift apart: one forgets to show a dropped
//! message to the monitor, another stops before an application's immediate
//! answer came out. There the order is fixed (events, then transmits, again
//! until neither has anything), every transmit and every dropped message is
//! shown to the observer before anyone acts on it, and whoever handles an
//! output (given the observer too) may feed the core again: the loop goes on
//! until it is quiet.
//!
//! [`ServerDriver`]: super::ServerDriver

use super::{ServerEvent, Transmit};
use crate::ids::SessionId;
use crate::observe::Observation;

/// One output of the server core.
#[derive(Debug)]
pub enum ServerOutput {
    /// Something for the application of `session`.
    Event(SessionId, ServerEvent),
    /// Something for the wire.
    Transmit(Transmit),
}

/// Shows what the core did with messages on its own to the observer,
/// before anyone acts on the event: every drain does. A message dropped on
/// purpose (by announced policy), so that A5 never mistakes a policy drop
/// for a loss; a notice the core sent itself, as the message's `Sent`, so
/// that A3 tells a notice sent before a call's cancellation from one sent
/// after it; the session's end, with the DELETE that caused it if one did,
/// so that I2 tells a session another principal deleted from one that ended
/// for its own reasons.
pub fn observe_own(
    session: &SessionId,
    event: &ServerEvent,
    observe: &mut dyn FnMut(&Observation),
) {
    match event {
        ServerEvent::Dropped { key, reason } => observe(&Observation::Dropped {
            session: session.to_string(),
            key: *key,
            reason: *reason,
        }),
        ServerEvent::Withdrawn { key, cause, .. } => observe(&Observation::Sent {
            session: session.to_string(),
            key: *key,
            cause: cause.clone(),
            origin: None,
        }),
        ServerEvent::SessionEnded { deleted_by } => observe(&Observation::SessionEnded {
            session: session.to_string(),
            deleted_by: *deleted_by,
        }),
        _ => {}
    }
}

/// Where a broadcast handed to
/// [`ServerEndpoint::broadcast_observed`](super::ServerEndpoint::broadcast_observed) comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BroadcastOrigin {
    /// The application made it here: the observer sees
    /// [`Observation::Broadcast`] first (once per broadcast, M3 and M4
    /// judge against it).
    Here,
    /// Another endpoint made it and was observed there (a transport's
    /// fan-out): only what it sends here is shown.
    Elsewhere,
}
