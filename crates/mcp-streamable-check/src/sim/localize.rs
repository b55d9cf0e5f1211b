//! A world made one worker's own. The checker's depth-first workers hand
//! states to each other; a state keeps sharing its parts (by reference
//! counts) with the states of the worker that made it, and every clone and
//! drop of either changes those counts: the cache line of each count moves
//! between the two CPUs at every step (the run's configuration and memo at
//! every clone, the cores of clients that have not moved yet, the
//! monitor's records that change a few times along a run). A worker that
//! takes a state from another gives it copies of its own first, once; every
//! state it makes from there counts on its own copies
//! (docs/performance.md, "No reference count written from both CPUs").

use super::memo::ClientMemo;
use super::servers::Servers;
use super::world::World;
use mcp_streamable::shared::Shared;
use std::sync::Arc;

impl<S: Servers> World<S> {
    /// Gives this world copies of its own of every part it shares by a
    /// reference count ([`Shared::localize`]), and a handle of its own to
    /// the run's memo. A checker's worker calls it on a state it took from
    /// another worker: the states it makes from there count references on
    /// its copies only, where before every clone and drop of a state
    /// changed counts that the other worker's states changed too (the run's
    /// configuration and memo at every step, the cores of clients that
    /// have not moved yet). Nothing a world means changes.
    pub fn localize(&mut self) {
        let World {
            clients,
            server,
            now: _,
            client_clocks: _,
            server_clocks: _,
            links,
            by_server,
            session_owner,
            client_events: _,
            outcomes,
            server_pending,
            list_changes_heard: _,
            monitor,
            log: _,
            memo,
            config,
        } = self;
        clients.iter_mut().for_each(Shared::localize);
        server.localize_with(S::localize);
        monitor.localize();
        links.values_mut().for_each(Shared::localize);
        by_server.localize();
        session_owner.localize();
        outcomes.localize();
        server_pending.localize();
        config.localize();
        if let Some(m) = memo.0.as_mut() {
            *m = Arc::new(ClientMemo::clone(m));
        }
    }
}
