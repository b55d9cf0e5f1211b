//! A finished client taken out of the world whole (`World::retire_client`).

use super::servers::queued_in;
use super::world::World;
use crate::monitor::RetiredPart;
use mcp_streamable::ids::SessionId;
use mcp_streamable::shared::Shared;
use mcp_streamable::time::Instant;
use std::collections::BTreeSet;
use std::sync::Arc;

impl World {
    /// Takes client `c` out of the world: the monitor judges its part's
    /// end-of-run checks and keeps only their flags, the server forgets its
    /// sessions, and its core, clock, links and outcomes start over as if
    /// it had never run. Only sound where nothing of `c` can happen again
    /// (its script done, nothing of it open, armed, in flight or owed, no
    /// server timer within the run): the checker's partial-order reduction
    /// decides that (`check::ample`). End states of `c` that differ only in
    /// what no step can read any more then meet, and the clients after it
    /// run once instead of once per such end state.
    pub fn retire_client(&mut self, c: usize) {
        let sessions: Vec<SessionId> = self
            .session_owner
            .iter()
            .filter(|(_, owner)| **owner == c)
            .map(|(sid, _)| sid.clone())
            .collect();
        let texts: BTreeSet<Arc<str>> = sessions.iter().map(|s| Arc::from(s.as_str())).collect();
        let deadline = sessions
            .iter()
            .filter_map(|s| self.server.session(s))
            .any(|s| s.poll_timeout().is_some());
        let queued: Vec<_> = queued_in(&self.server)
            .into_iter()
            .filter(|(sid, _)| texts.contains(sid.as_str()))
            .collect();
        self.monitor.retire(RetiredPart {
            client: c,
            sessions: &texts,
            owns: &|h| Self::owner(h) == c,
            queued: &queued,
            deadline,
        });
        for sid in &sessions {
            self.server.forget_session(sid);
            self.session_owner.remove(sid);
        }
        self.links.retain(|h, _| Self::owner(*h) != c);
        self.by_server.retain(|_, h| Self::owner(*h) != c);
        self.outcomes.retain(|(owner, _), _| *owner != c);
        self.clients[c] = Shared::new(self.config.fresh_client(c));
        for clock in [self.client_clocks.get_mut(c), self.server_clocks.get_mut(c)]
            .into_iter()
            .flatten()
        {
            *clock = Instant::ZERO;
        }
    }
}
