//! The world hashed in parts: what the clients share (the server, time, the
//! monitor's server side), and each client's own part (its core, its
//! exchanges named as its core names them, its outcomes, its monitor side).
//! A client's part never says which client it is, so the checker's symmetry
//! reduction can sort the parts of clients that run the same script: two
//! worlds that differ only by which of those clients is which then share a
//! fingerprint. Every field is named in the destructuring patterns below, so
//! a new field cannot silently go unhashed.

use super::world::World;
use mcp_streamable::ids::RequestId;
use std::hash::{Hash, Hasher};

impl World {
    /// Hashes everything that is not one client's own.
    pub fn hash_shared<H: Hasher>(&self, h: &mut H) {
        let World {
            clients,
            server,
            now,
            client_clocks: _, // each client's, in its part
            server_clocks: _, // each client's part's, in its part
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
    pub fn hash_client<H: Hasher>(&self, c: usize, h: &mut H) {
        self.clients[c].hash(h);
        self.client_clocks.get(c).hash(h);
        self.server_clocks.get(c).hash(h);
        hash_run(h, self.links_of(c), |(ch, link), h| {
            Self::local(*ch).hash(h);
            link.hash(h);
        });
        let carried = self
            .by_server
            .iter()
            .filter(|(_, ch)| Self::owner(**ch) == c);
        hash_run(h, carried, |(sh, ch), h| {
            sh.hash(h);
            Self::local(*ch).hash(h);
        });
        // The client's outcomes are one run of the map, which is ordered
        // by client first (`Num(i64::MIN)` is the least request id).
        let least = |c: usize| (c, RequestId::Num(i64::MIN));
        hash_run(
            h,
            self.outcomes.range(least(c)..least(c + 1)),
            |((_, id), done), h| {
                id.hash(h);
                done.hash(h);
            },
        );
        self.list_changes_heard.get(&c).hash(h);
        self.monitor.hash_client(c, h);
    }
}

/// Hashes each entry of a list with `each`, then how many there were: one
/// walk (each entry's hash is self-delimiting, so the length after them
/// splits lists as well as one before).
fn hash_run<H: Hasher, T>(
    h: &mut H,
    entries: impl Iterator<Item = T>,
    mut each: impl FnMut(T, &mut H),
) {
    let mut n = 0usize;
    for entry in entries {
        each(entry, h);
        n += 1;
    }
    n.hash(h);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{Link, PairConfig};
    use mcp_streamable::head::RequestHead;
    use mcp_streamable::ids::HttpId;
    use mcp_streamable::shared::{fixed_keys, Shared};
    use std::hash::BuildHasher;

    fn part(w: &World, c: usize) -> u64 {
        let mut h = fixed_keys().build_hasher();
        w.hash_client(c, &mut h);
        h.finish()
    }

    fn rest(w: &World) -> u64 {
        let mut h = fixed_keys().build_hasher();
        w.hash_shared(&mut h);
        h.finish()
    }

    /// What client `c` holds in each of the world's maps changes client
    /// `c`'s part and nothing else, and the same thing held by the other
    /// client gives the other client the same part (the symmetry reduction
    /// relies on both).
    fn own_and_anonymous(w: &World, give: impl Fn(&mut World, usize)) {
        let (fresh, others) = (part(w, 0), rest(w));
        let mut mine = [w.clone(), w.clone()];
        for (c, world) in mine.iter_mut().enumerate() {
            give(world, c);
            assert_ne!(part(world, c), fresh, "client {c}'s part unchanged");
            assert_eq!(part(world, 1 - c), fresh, "the other client's part changed");
            assert_eq!(rest(world), others, "the shared part changed");
        }
        assert_eq!(
            part(&mine[0], 0),
            part(&mine[1], 1),
            "a part names its client"
        );
    }

    #[test]
    fn a_clients_exchanges_carried_ids_and_outcomes_are_its_part_alone() {
        let w = World::with(PairConfig {
            clients: 2,
            ..PairConfig::default()
        });
        assert_eq!(part(&w, 0), part(&w, 1), "two fresh clients differ");
        let link = Shared::new(Link::new(RequestHead::post(None, None), Vec::new()));
        let ch = |c: usize| World::world_http(c, HttpId(1));
        own_and_anonymous(&w, |w, c| {
            w.links.insert(ch(c), link.clone());
        });
        own_and_anonymous(&w, |w, c| {
            w.by_server.insert(HttpId(7), ch(c));
        });
        own_and_anonymous(&w, |w, c| {
            w.outcomes.insert((c, RequestId::Num(1)), false);
        });
        // Whether the application got its outcome is part of it too.
        let mut done = w.clone();
        done.outcomes.insert((1, RequestId::Num(1)), true);
        let mut pending = w.clone();
        pending.outcomes.insert((1, RequestId::Num(1)), false);
        assert_ne!(part(&done, 1), part(&pending, 1));
    }
}
