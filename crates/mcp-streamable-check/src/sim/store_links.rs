//! [`StoreLinks`]: the connections between instances and a [`MemoryStore`],
//! as the checker's fleet models see them: each instance has two (commands;
//! subscriptions), each a FIFO both ways, and nothing orders one connection
//! against another. The caller chooses which connection's head op the store
//! executes next and which instance takes the head of which incoming queue;
//! written once for the relay model and the fleet world.

use mcp_streamable::fleet::store::{MemoryStore, Output};
use mcp_streamable::fleet::{Conn, InstanceId, StoreOp};
use mcp_streamable::time::Instant;
use std::collections::{BTreeMap, VecDeque};

/// One connection of one instance: `(instance, connection)`.
pub type ConnKey = (u16, Conn);

/// Ops on their way to the store, and its outputs on their way back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct StoreLinks {
    to_store: BTreeMap<ConnKey, VecDeque<StoreOp>>,
    from_store: BTreeMap<ConnKey, VecDeque<Output>>,
}

impl StoreLinks {
    /// Connections with an op for the store to execute, in order.
    pub fn executable(&self) -> impl Iterator<Item = ConnKey> + '_ {
        self.to_store.keys().copied()
    }

    /// Connections with something for their instance to take, in order.
    pub fn receivable(&self) -> impl Iterator<Item = ConnKey> + '_ {
        self.from_store.keys().copied()
    }

    /// Instance `instance` sends `op` (on the connection it names).
    pub fn send(&mut self, instance: u16, op: StoreOp) {
        self.to_store
            .entry((instance, op.conn()))
            .or_default()
            .push_back(op);
    }

    /// The store executes the next op of `conn`; its outputs are moved to
    /// their connections (see [`Self::collect`]). Whether there was one.
    pub fn execute(
        &mut self,
        store: &mut MemoryStore,
        conn: ConnKey,
        now: Instant,
        live: impl Fn(u16) -> bool,
    ) -> bool {
        let Some(op) = self.to_store.get_mut(&conn).and_then(VecDeque::pop_front) else {
            return false;
        };
        store.handle_op(InstanceId(conn.0), op, now);
        self.collect(store, live);
        true
    }

    /// The next thing the store sent on `conn`, taken.
    pub fn take(&mut self, conn: ConnKey) -> Option<Output> {
        let out = self.from_store.get_mut(&conn)?.pop_front();
        self.from_store.retain(|_, q| !q.is_empty());
        out
    }

    /// The store's outputs moved to their connections (those for an
    /// instance that is not `live` are lost); empty queues dropped.
    pub fn collect(&mut self, store: &mut MemoryStore, live: impl Fn(u16) -> bool) {
        while let Some((to, out)) = store.poll_output() {
            if live(to.0) {
                self.from_store
                    .entry((to.0, out.conn()))
                    .or_default()
                    .push_back(out);
            }
        }
        self.to_store.retain(|_, q| !q.is_empty());
        self.from_store.retain(|_, q| !q.is_empty());
    }

    /// Instance `instance` is gone: what it had not sent and what had not
    /// reached it are lost.
    pub fn forget(&mut self, instance: u16) {
        self.to_store.retain(|(x, _), _| *x != instance);
        self.from_store.retain(|(x, _), _| *x != instance);
    }
}
