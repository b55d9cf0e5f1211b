//! A finished client's part of the monitor: judged once, then let go.
//!
//! A model checker that runs clients one at a time (`check::ample`) reaches
//! a point where a client is done for good: its script is over, nothing of
//! it is open, armed or in flight, and no step of the run can reach its
//! sessions again. What the monitor keeps of it from then on (its
//! exchanges, its sessions' event ids and messages, its client side) only
//! tells apart end states that behave the same, and the next client runs
//! once per such end state. [`Monitor::retire`] runs that part's end-of-run
//! checks now, keeps their flags (raised by [`Monitor::finish`] at
//! quiescence, as they would have been) and forgets the rest.

use super::{Flag, Found, Monitor, Rare, Text};
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

impl Monitor {
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
        let flags = alone
            .violations
            .0
            .into_iter()
            .map(|v| Flag::new(v.id, v.http, v.detail))
            .collect();

        self.exchanges.retain(|h, _| !owns(*h));
        self.lineages.retain(|h, _| !owns(*h));
        self.event_ids.retain(|(s, _), _| !mine(s));
        self.sent.retain(|(s, _), _| !mine(s));
        self.delivered.retain(|(s, _)| !mine(s));
        self.fresh_writes.retain(|(s, _), _| !mine(s));
        Rare::forget(&mut self.rare, mine);
        self.clients.remove(&client);
        self.owed.retain(|h| !owns(h));
        self.retired.insert(client, Retired { flags, deadline });
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
            .flat_map(|r| r.flags.iter().map(|f| f.id))
    }

    /// Whether a retired client left a deadline behind: the run is then not
    /// over (see `Retired`).
    pub fn retired_deadline(&self) -> bool {
        self.retired.values().any(|r| r.deadline)
    }

    /// The retired clients' end-of-run flags, for [`Monitor::finish`].
    pub(super) fn retired_flags(&self) -> Vec<Flag> {
        self.retired
            .values()
            .flat_map(|r| r.flags.iter().cloned())
            .collect()
    }
}

impl Rare {
    /// Forgets what was recorded of the sessions `mine` names (not whether
    /// they were issued or deleted: I1 and B6 judge ids for the whole
    /// run). The record is copied only when it holds something of theirs.
    fn forget(rare: &mut Shared<Self>, mine: impl Fn(&Text) -> bool) {
        let holds = rare.cancelled.iter().any(|(s, _)| mine(s))
            || rare.dropped.iter().any(|(s, _)| mine(s))
            || rare.sessions_ended.iter().any(&mine)
            || rare.gets_per_session.keys().any(&mine);
        if !holds {
            return;
        }
        let rare = &mut **rare;
        rare.cancelled.retain(|(s, _)| !mine(s));
        rare.dropped.retain(|(s, _)| !mine(s));
        rare.sessions_ended.retain(|s| !mine(s));
        rare.gets_per_session.retain(|s, _| !mine(s));
    }
}
