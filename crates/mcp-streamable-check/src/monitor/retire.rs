//! A finished client's part of the monitor: judged once, then let go.
//!
//! A model checker that runs clients one at a time (`check::ample`) reaches
//! a point where a client is done for good: its script is over, nothing of
//! it is open, armed or in flight, and no step of the run can reach its
//! sessions again. What the monitor keeps of it from then on (its
//! exchanges, its sessions' event ids and messages, its client side) only
//! tells apart end states that behave the same, and the next client runs
//! once per such end state. [`Monitor::retire`](super::Monitor::retire) runs
//! that part's end-of-run checks now, keeps their flags (raised by
//! [`Monitor::finish`](super::Monitor::finish) at quiescence, as they would
//! have been) and forgets the rest.

use super::{Flag, Rare, Text};
use mcp_streamable::ids::{HttpId, MsgKey};
use mcp_streamable::shared::Shared;
use std::collections::BTreeSet;

/// What is kept of a retired client.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Retired {
    /// Its part's end-of-run flags, raised at quiescence.
    flags: Vec<Flag>,
    /// Whether one of its sessions still had a deadline (a held message's
    /// expiry past the time bound): a run with a deadline is not over, so
    /// the end-of-run checks do not apply to it, retired or not.
    deadline: bool,
}

/// The client being retired: which records are its.
pub struct RetiredPart<'a> {
    /// Its index.
    pub client: usize,
    /// The sessions it opened.
    pub sessions: &'a BTreeSet<Text>,
    /// Whether an exchange is one of its own.
    pub owns: &'a dyn Fn(HttpId) -> bool,
    /// What its sessions still hold for a stream (the end-of-run checks
    /// excuse those).
    pub queued: &'a [(String, MsgKey)],
    /// Whether one of its sessions still had a deadline.
    pub deadline: bool,
}

impl Retired {
    /// A retired client's end-of-run `flags`, and whether it left a deadline.
    pub(super) fn new(flags: Vec<Flag>, deadline: bool) -> Self {
        Retired { flags, deadline }
    }

    /// Its end-of-run flags.
    pub(super) fn flags(&self) -> &[Flag] {
        &self.flags
    }

    /// Whether one of its sessions still had a deadline.
    pub(super) fn deadline(&self) -> bool {
        self.deadline
    }
}

impl Rare {
    /// Forgets what was recorded of the sessions `mine` names (not whether
    /// they were issued or deleted: I1 and B6 judge ids for the whole
    /// run). The record is copied only when it holds something of theirs.
    pub(super) fn forget(rare: &mut Shared<Self>, mine: impl Fn(&Text) -> bool) {
        let holds = rare.cancelled.keys().any(|(s, _)| mine(s))
            || rare.dropped.iter().any(|(s, _)| mine(s))
            || rare.sessions_ended.iter().any(&mine)
            || rare.gets_per_session.keys().any(&mine);
        if !holds {
            return;
        }
        let rare = &mut **rare;
        rare.cancelled.retain(|(s, _), _| !mine(s));
        rare.dropped.retain(|(s, _)| !mine(s));
        rare.sessions_ended.retain(|s| !mine(s));
        rare.gets_per_session.retain(|s, _| !mine(s));
    }
}
