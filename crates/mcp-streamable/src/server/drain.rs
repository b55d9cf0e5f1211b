//! The observed drain, written once: what every loop around a
//! [`ServerEndpoint`] does after each input (the [`ServerDriver`], the test
//! harness, the fuzz targets, the checker's world, the benchmarks).
//!
//! The core's contract is "after any input, poll until `None`". Doing that by
//! hand in each loop is how loops drift apart: one forgets to show a dropped
//! message to the monitor, another stops before an application's immediate
//! answer came out. Here the order is fixed (events, then transmits, again
//! until neither has anything), every transmit and every dropped message is
//! shown to the observer before anyone acts on it, and whoever handles an
//! output (given the observer too) may feed the core again: the loop goes on until it is quiet.
//!
//! [`ServerDriver`]: super::ServerDriver

use super::{ServerEndpoint, ServerEvent, Transmit};
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

impl ServerEndpoint {
    /// Drains the core until it is quiet: events first (so an application
    /// answering at once has its answer out in the same drain as the head
    /// it belongs to), then transmits, each shown to `observe` before
    /// `handle` gets it (with the observer, for what it observes itself). Returns whether anything came out.
    pub fn drain_observed(
        &mut self,
        observe: &mut dyn FnMut(&Observation),
        mut handle: impl FnMut(&mut ServerEndpoint, ServerOutput, &mut dyn FnMut(&Observation)),
    ) -> bool {
        let mut any = false;
        loop {
            let mut progressed = false;
            while let Some((session, event)) = self.poll_event() {
                progressed = true;
                observe_dropped(&session, &event, observe);
                handle(self, ServerOutput::Event(session, event), observe);
            }
            while let Some(t) = self.poll_transmit() {
                progressed = true;
                // Observed by reference, then moved on: no copy of the body.
                let o = Observation::Transmit(t);
                observe(&o);
                if let Observation::Transmit(t) = o {
                    handle(self, ServerOutput::Transmit(t), observe);
                }
            }
            if !progressed {
                return any;
            }
            any = true;
        }
    }
}

/// Shows a message the core dropped on purpose (by announced policy) to
/// the observer, before anyone acts on the event: every drain does, so A5
/// never mistakes a policy drop for a loss.
pub fn observe_dropped(
    session: &SessionId,
    event: &ServerEvent,
    observe: &mut dyn FnMut(&Observation),
) {
    if let ServerEvent::Dropped { key, reason } = event {
        observe(&Observation::Dropped {
            session: session.to_string(),
            key: *key,
            reason: *reason,
        });
    }
}

/// Where a broadcast handed to [`ServerEndpoint::broadcast_observed`] comes from.
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

impl ServerEndpoint {
    /// [`ServerEndpoint::broadcast`], observed, written once for every loop
    /// that broadcasts (the driver, the application's `Cx`, the checker's
    /// world): the broadcast itself when it originates here, then each
    /// message it sent. Returns how many got it.
    pub fn broadcast_observed(
        &mut self,
        method: &str,
        params: Option<crate::jsonrpc::RawJson>,
        now: crate::time::Instant,
        origin: BroadcastOrigin,
        observe: &mut dyn FnMut(&Observation),
    ) -> usize {
        if origin == BroadcastOrigin::Here {
            observe(&Observation::Broadcast {
                method: method.to_owned(),
                params: params.clone(),
            });
        }
        let sent = self.broadcast(method, params, now);
        for (session, key, cause) in &sent {
            observe(&Observation::Sent {
                session: session.to_string(),
                key: *key,
                cause: cause.clone(),
                origin: None,
            });
        }
        sent.len()
    }
}
