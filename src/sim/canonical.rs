//! The world hashed in parts: what the clients share (the server, time, the
//! monitor's server side), and each client's own part (its core, its
//! exchanges named as its core names them, its outcomes, its monitor side).
//! A client's part never says which client it is, so the checker's symmetry
//! reduction can sort the parts of clients that run the same script: two
//! worlds that differ only by which of those clients is which then share a
//! fingerprint. Every field is named in the destructuring patterns below, so
//! a new field cannot silently go unhashed.

use super::world::World;
use crate::ids::RequestId;
use std::hash::{Hash, Hasher};

impl World {
    /// Hashes everything that is not one client's own.
    pub fn hash_shared<H: Hasher>(&self, h: &mut H) {
        let World {
            clients,
            server,
            now,
            client_clocks: _, // each client's, in its part
            links: _,
            by_server: _,
            session_owner: _, // follows from the history
            client_events,
            outcomes: _,
            server_pending,
            list_changes_heard: _,
            monitor,
            log,
            memo: _,   // a cache of the run's
            config: _, // fixed for a whole run
        } = self;
        clients.len().hash(h);
        server.hash(h);
        now.hash(h);
        client_events.hash(h);
        server_pending.hash(h);
        monitor.hash_shared(h);
        log.hash(h);
    }

    /// Hashes client `c`'s own part, with nothing in it that names `c`.
    /// Each list is hashed in one walk, its length after its entries (each
    /// entry's hash is self-delimiting, so the split is still unambiguous).
    pub fn hash_client<H: Hasher>(&self, c: usize, h: &mut H) {
        self.clients[c].hash(h);
        self.client_clocks.get(c).hash(h);
        let mut n = 0usize;
        for (ch, link) in self.links_of(c) {
            Self::local(*ch).hash(h);
            link.hash(h);
            n += 1;
        }
        n.hash(h);
        n = 0;
        for (sh, ch) in self.by_server.iter() {
            if Self::owner(*ch) == c {
                sh.hash(h);
                Self::local(*ch).hash(h);
                n += 1;
            }
        }
        n.hash(h);
        n = 0;
        // The client's outcomes are one run of the map, which is ordered
        // by client first (`Num(i64::MIN)` is the least request id).
        let least = |c: usize| (c, RequestId::Num(i64::MIN));
        for ((_, id), done) in self.outcomes.range(least(c)..least(c + 1)) {
            id.hash(h);
            done.hash(h);
            n += 1;
        }
        n.hash(h);
        self.list_changes_heard.get(&c).hash(h);
        self.monitor.hash_client(c, h);
    }
}
