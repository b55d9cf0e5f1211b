//! [`ClientMemo`]: what a client core does with one input, computed once per
//! run and looked up after.
//!
//! A model checker steps the same core with the same input at the same time
//! again and again, from states that differ elsewhere (the server, the other
//! clients, the monitor): in `lifecycle_two_calls`, 99.3% of the response
//! items delivered to a client met a (core, item, clock) already seen. Each
//! time the world copied the core, stepped it, drained it, hashed the copy
//! and, two times in three, freed it with a successor already visited. The
//! memo keeps the drained core after the step, shared and hashed once, with
//! its outputs in order: a hit replaces all of that by a lookup, and the
//! world replays the outputs onto the network, the applications and the
//! monitor exactly as a drain would have handed them over.
//!
//! Cores are pure (`handle_*(input, now)`), so the core and its outputs
//! follow from the key: the core (by its cached 64-bit hash), the input, the
//! clock and the run's configuration (by a second 64-bit hash). A wrong hit
//! needs two different cores, or two different inputs, with equal 64-bit
//! hashes: a run has thousands of distinct cores and inputs where the
//! visited set, which takes the same kind of risk, has millions of states.

use super::net::Delivery;
use super::world::PairConfig;
use mcp_streamable::client::{ClientOutput, ClientSession};
use mcp_streamable::ids::HttpId;
use mcp_streamable::shared::{fixed_keys, Identity, Shared};
use mcp_streamable::time::Instant;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What reaches a client core in one step.
#[derive(Clone, Copy, Debug, Hash)]
pub enum ClientInput<'a> {
    /// A response item on exchange `http` (as the core names it).
    Item(HttpId, &'a Delivery),
    /// Its clock reached a deadline.
    Timeout,
}

/// A core after one input and the drain that followed it.
#[derive(Debug)]
pub struct Stepped {
    /// The core, drained (quiet).
    pub core: Shared<ClientSession>,
    /// What the drain handed over, in order.
    pub outputs: Vec<ClientOutput>,
}

/// Tables, one per thread slot: each worker of a run looks up and keeps its
/// own steps. One table shared by the workers was slower on two threads
/// than none at all (1.15x the CPU on `three_clients_calls`): every hit
/// counted a reference on the same few hundred cores from both cores of the
/// machine, and every state holding them did again; per thread, the
/// references a worker counts are its own.
const SLOTS: usize = 64;

/// This thread's table. Workers are numbered as they first step a world;
/// the workers of one run (or one breadth-first level) get consecutive
/// numbers, so different tables; a later level's thread takes up a table
/// that earlier threads filled, which costs nothing but is not needed.
fn slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
    }
    SLOT.with(|s| *s)
}

/// One thread slot's steps, and its own counts (counters shared by the
/// workers would be written from both CPUs at every lookup).
#[derive(Default)]
struct Table {
    steps: HashMap<(u64, u64), Arc<Stepped>, BuildHasherDefault<Identity>>,
    hits: u64,
    misses: u64,
}

/// The memo of one run (see the module docs). Shared by every world of the
/// run and by the run's threads: a handle, and clones of it are handles to
/// the same tables ([`World::localize`](super::World::localize) gives a
/// worker a handle of its own to count references on).
#[derive(Clone)]
pub struct ClientMemo {
    run: Arc<Tables>,
}

/// The tables and counts behind every handle of one run's memo.
struct Tables {
    tables: Vec<Mutex<Table>>,
    /// Steps kept in all tables (written only when one is kept).
    entries: AtomicUsize,
    entries_max: usize,
}

impl std::fmt::Debug for ClientMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientMemo")
            .field("entries", &self.run.entries.load(Ordering::Relaxed))
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}

impl Default for ClientMemo {
    fn default() -> Self {
        ClientMemo::new(ClientMemo::ENTRIES_MAX)
    }
}

impl ClientMemo {
    /// Entries kept by default: past them the memo computes without keeping.
    /// Runs need far fewer (310 for the 799,531 states of
    /// `three_clients_calls`, 16,279 for 10^6 states of
    /// `lifecycle_two_calls`); a core and its outputs take a few KB, so the
    /// bound keeps the memo within a few hundred MB, inside the run's
    /// memory budget, which counts it like any other memory.
    pub const ENTRIES_MAX: usize = 1 << 17;

    /// An empty memo that keeps at most `entries_max` steps (the default:
    /// [`ClientMemo::ENTRIES_MAX`]).
    pub fn new(entries_max: usize) -> Self {
        ClientMemo {
            run: Arc::new(Tables {
                tables: (0..SLOTS).map(|_| Mutex::default()).collect(),
                entries: AtomicUsize::new(0),
                entries_max,
            }),
        }
    }

    /// Steps found in the memo.
    pub fn hits(&self) -> u64 {
        self.sum(|t| t.hits)
    }

    /// Steps computed.
    pub fn misses(&self) -> u64 {
        self.sum(|t| t.misses)
    }

    fn sum(&self, count: impl Fn(&Table) -> u64) -> u64 {
        self.run
            .tables
            .iter()
            .map(|t| count(&t.lock().unwrap_or_else(|p| p.into_inner())))
            .sum()
    }

    /// Steps kept.
    pub fn len(&self) -> usize {
        self.run.entries.load(Ordering::Relaxed)
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `core` after `input` at `now`, drained: from the memo, or computed by
    /// `compute` (the same step on a copy of `core`) and kept while there is
    /// room.
    pub fn step(
        &self,
        core: &Shared<ClientSession>,
        config: &Shared<PairConfig>,
        input: ClientInput<'_>,
        now: Instant,
        compute: impl FnOnce() -> Stepped,
    ) -> Arc<Stepped> {
        // The configuration too (its hash is cached): a memo shared by
        // models that differ in a policy cannot mix their steps.
        let key = (Self::hash_of(core), Self::hash_of(&(config, input, now)));
        let table = &self.run.tables[slot()];
        let lock = || table.lock().unwrap_or_else(|p| p.into_inner());
        {
            let mut t = lock();
            if let Some(found) = t.steps.get(&key).cloned() {
                t.hits += 1;
                return found;
            }
            t.misses += 1;
        }
        // Computed unlocked: a table is this thread's alone in practice;
        // were two threads to share a slot, each step is still whole
        // under the lock, only slower.
        let stepped = Arc::new(compute());
        if self.run.entries.load(Ordering::Relaxed) < self.run.entries_max
            && lock().steps.insert(key, Arc::clone(&stepped)).is_none()
        {
            self.run.entries.fetch_add(1, Ordering::Relaxed);
        }
        stepped
    }

    fn hash_of<T: Hash>(v: &T) -> u64 {
        BuildHasher::hash_one(&fixed_keys(), v)
    }
}
