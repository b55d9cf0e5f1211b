//! Our own explorer of a [`CheckModel`], built for models at real size.
//!
//! stateright's breadth-first checker keeps every frontier state together
//! with the whole path of action indices that reached it, and it cannot be
//! stopped from outside: a big model grows until the kernel's OOM killer ends
//! the process without a word. This explorer keeps, per visited state, only a
//! 64-bit fingerprint and where it came from (parent fingerprint, action
//! index, the shallowest depth met: 16 bytes), and checks its budget all
//! the time:
//!
//! - **Breadth first** while the frontier fits, level by level, `threads`
//!   workers sharing one sharded visited set: counterexamples are shortest.
//! - **Depth first from there on** once the run's own growth of the
//!   resident size passes half the memory budget, or the resident size three
//!   quarters of it ([`frontier_outgrew`]; or from the start, `depth_first`): each worker explores
//!   its own stack and gives the shallow half of it to a worker that has run
//!   dry (`engine::pool`), against the same visited set. The outcome says so. Depth
//!   first keeps the shallowest depth at which it met each state, and
//!   expands a state again when it meets it shallower (as SPIN's
//!   depth-bounded search does): a state first met deep, where the depth
//!   bound cut its continuations, is explored again from a shorter path, so
//!   every state within the bound is reached.
//! - **Within depth D** when the search met the depth bound with actions
//!   still enabled ([`Limit::DepthBound`]): every state within the bound
//!   was explored, paths past it were not; never a bare "holds".
//! - **Bounded** when the state or memory budget is reached, or the run is
//!   interrupted ([`Interrupt`]): it stops cleanly and the outcome names the
//!   limit; it is never a "holds".
//!
//! A counterexample is rebuilt from the fingerprints: from the initial state,
//! replay the recorded action index of each step, checking each fingerprint.
//! Every generated state is judged, also at the depth bound.

pub mod bitstate;
mod pool;

use super::memory;
use super::model::{Action, CheckModel, State};
use super::run::{Counterexample, Outcome};
use crate::monitor::Violation;
use pool::{Item, Pool};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// The budget of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Worker threads.
    pub threads: usize,
    /// Stop (bounded) after this many distinct states.
    pub states_max: Option<usize>,
    /// Stop (bounded) when the process's resident size passes this many
    /// bytes; breadth first gives way to depth first at half of it.
    pub memory_max: Option<u64>,
    /// Breadth first gives way to depth first when the run's growth of the
    /// resident size passes this many bytes ([`frontier_outgrew`]); `None`:
    /// half of `memory_max`.
    pub bfs_memory_max: Option<u64>,
    /// Depth first from the start (least memory; counterexamples not shortest).
    pub depth_first: bool,
    /// Set from outside (the CLI's Ctrl-C handler) to stop the run: it then
    /// ends like a budget, as bounded ([`Limit::Interrupted`]).
    pub interrupt: Option<Interrupt>,
}

/// A flag that stops runs from outside, such as a signal handler: a run that
/// sees it set stops within about a quarter second and reports what it
/// explored as bounded, instead of dying with no verdict.
#[derive(Clone, Copy, Debug)]
pub struct Interrupt(&'static AtomicBool);

impl Interrupt {
    /// Watches `flag` (a `static`, or leaked: a signal handler outlives any run).
    pub fn new(flag: &'static AtomicBool) -> Self {
        Interrupt(flag)
    }

    /// Whether the flag is set.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Two interrupts are equal when they watch the same flag.
impl PartialEq for Interrupt {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Interrupt {}

impl Limits {
    /// `threads` workers, no state budget, the default memory budget
    /// ([`memory::default_budget_bytes`]).
    pub fn new(threads: usize) -> Self {
        Limits {
            threads: threads.max(1),
            states_max: None,
            memory_max: memory::default_budget_bytes(),
            bfs_memory_max: None,
            depth_first: false,
            interrupt: None,
        }
    }
}

/// What the explorer needs of a model: states, the actions enabled in one,
/// their successors, a fingerprint, a judge and a depth bound. [`CheckModel`]
/// (the world of clients and one server) is one; `check::fleet`'s relay
/// model (instances sharing a store) is another, explored by the same code.
pub trait Explorable: Sync {
    /// A whole state of the model.
    type State: Clone + Send + 'static;
    /// One step a state can take.
    type Action: Clone + Send;
    /// What a judged state can break.
    type Violation;
    /// The initial state.
    fn initial(&self) -> Self::State;
    /// The actions enabled in `s`, in a deterministic order.
    fn enabled(&self, s: &Self::State, out: &mut Vec<Self::Action>);
    /// The successor of `s` by `a`; `None` when `a` turns out to do nothing.
    fn step(&self, s: &Self::State, a: &Self::Action) -> Option<Self::State>;
    /// The same, made from `s` itself (the last action tried on a state:
    /// no copy of it, and what it alone held changes in place).
    fn step_owned(&self, s: Self::State, a: &Self::Action) -> Option<Self::State> {
        self.step(&s, a)
    }
    /// A 64-bit fingerprint; equal states have equal fingerprints.
    fn fingerprint(&self, s: &Self::State) -> u64;
    /// What `s` breaks, if anything.
    fn violation(&self, s: &Self::State) -> Option<Self::Violation>;
    /// The deepest path explored (the initial state is depth 1).
    fn depth_bound(&self) -> usize;
    /// The simulated time of `s` in ms, for counterexamples.
    fn time_of(&self, s: &Self::State) -> u64;
    /// Makes `s`, which another worker made, the taking worker's own: what
    /// it shares by reference counts, copied (see
    /// [`World::localize`](crate::sim::World::localize)). Nothing the state
    /// means may change.
    fn localize(&self, _s: &mut Self::State) {}
}

impl Explorable for CheckModel {
    type State = State;
    type Action = Action;
    type Violation = Violation;
    fn initial(&self) -> State {
        CheckModel::initial(self)
    }
    fn enabled(&self, s: &State, out: &mut Vec<Action>) {
        CheckModel::enabled(self, s, out)
    }
    fn step(&self, s: &State, a: &Action) -> Option<State> {
        CheckModel::step(self, s, a)
    }
    fn step_owned(&self, s: State, a: &Action) -> Option<State> {
        CheckModel::step_owned(self, s, a)
    }
    fn fingerprint(&self, s: &State) -> u64 {
        CheckModel::fingerprint(self, s)
    }
    fn violation(&self, s: &State) -> Option<Violation> {
        CheckModel::violation(self, s)
    }
    fn depth_bound(&self) -> usize {
        self.scenario.bounds.depth
    }
    fn localize(&self, s: &mut State) {
        s.world.localize();
    }
    fn time_of(&self, s: &State) -> u64 {
        s.world.latest_now().as_millis()
    }
}

/// The budget a run reached before it could exhaust its bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// `states_max` distinct states.
    States(usize),
    /// The memory budget, in bytes.
    Memory(u64),
    /// The search met the model's depth bound with actions still enabled:
    /// every state within the bound was explored (breadth first level by
    /// level; depth first expanding again a state met by a shorter path),
    /// but what lies past the bound was not. A verdict of its own, "holds
    /// within depth D", never a bare "holds".
    DepthBound {
        /// The depth bound.
        depth: usize,
    },
    /// Random walks (`Search::Simulation`) ran out their time: they find
    /// bugs and prove nothing.
    Walks,
    /// [`Limits::interrupt`] was set (Ctrl-C).
    Interrupted,
    /// A bit-state search ([`bitstate`]) ran to its end: states that shared
    /// their bits with another were not explored, so it proves nothing; its
    /// coverage says how much it may have missed.
    BitState(bitstate::Coverage),
}

/// How the state space was searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Breadth first throughout: a counterexample is a shortest one.
    Bfs,
    /// Depth first throughout (asked for).
    Dfs,
    /// Breadth first up to this depth, then depth first (the frontier no
    /// longer fit in half the memory budget): a counterexample may be longer
    /// than the shortest.
    BfsThenDfs {
        /// The depth at which the search changed.
        depth: usize,
    },
    /// Breadth first under the partial-order reduction, which found a
    /// counterexample; the search without it, for a shortest one, stopped
    /// at its budget after this many states. The counterexample may be
    /// longer than the shortest.
    ReducedBfs {
        /// States the search without the reduction visited.
        unreduced_states: usize,
    },
}

/// A snapshot for a progress line.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Distinct states so far.
    pub states: usize,
    /// Deepest state so far (the initial state is depth 1).
    pub depth: usize,
    /// Resident size, when known.
    pub rss: Option<u64>,
    /// Wall time so far.
    pub elapsed: Duration,
    /// The search order so far.
    pub order: Order,
}

/// Where a visited state came from.
#[derive(Clone, Copy, Debug)]
struct Entry {
    parent: u64,
    action: u32,
    /// The shallowest depth at which the state was met (the initial state
    /// is 0) in the low 31 bits; `parent` and `action` are the path that
    /// met it there. The top bit ([`CUT`]) marks a state an exact pass
    /// left unexpanded at that depth, the depth bound's, with actions
    /// enabled. A bit of the depth's word, not a field: the visited set
    /// holds tens of millions of entries, and a field would add a third to
    /// each.
    depth: u32,
}

/// [`Entry::depth`]'s mark of a state cut at the depth bound.
const CUT: u32 = 1 << 31;

impl Entry {
    fn depth(&self) -> u32 {
        self.depth & !CUT
    }

    /// Whether the state was left cut at its depth: an exact pass that met
    /// it again shallower wrote a new entry without the mark.
    fn cut(&self) -> bool {
        self.depth & CUT != 0
    }
}

/// What [`Seen::visit`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Visit {
    /// A state never met: count it, judge it, expand it.
    New,
    /// A state met before, deeper: its entry now records this shorter
    /// path; expand it again (depth first), but it is neither counted nor
    /// judged twice.
    Shallower,
    /// Met before at this depth or shallower.
    Known,
}

const ROOT_ACTION: u32 = u32::MAX;
const SHARDS: usize = 64;

type Shard = HashMap<u64, Entry, BuildHasherDefault<mcp_streamable::shared::Identity>>;

/// A value on cache lines of its own (128 bytes: two lines, as adjacent
/// lines are fetched in pairs): what one worker writes all the time does
/// not evict what the other workers read or write beside it.
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The visited set, sharded by fingerprint so workers rarely contend. The
/// shard is chosen by bits the shard's table does not use: its buckets
/// take the low bits and its one-byte tags the top seven, and a shard
/// chosen by top bits left each table's tags one bit to tell keys apart.
struct Seen {
    shards: Vec<Padded<Mutex<Shard>>>,
}

impl Seen {
    fn new() -> Self {
        Seen {
            shards: (0..SHARDS)
                .map(|_| Padded(Mutex::new(Shard::default())))
                .collect(),
        }
    }

    fn shard(&self, fp: u64) -> std::sync::MutexGuard<'_, Shard> {
        let i = (fp >> 32) as usize % SHARDS;
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `fp`, met at `entry.depth` by `entry`'s path. Breadth first
    /// meets every state first at its shallowest depth, so for it a state
    /// is `New` or `Known`; depth first may meet one again shallower.
    /// `Shallower` only when `shallower` is asked for: else a state met
    /// again is `Known` whatever the depth, and its entry stays.
    fn visit(&self, fp: u64, entry: Entry, shallower: bool) -> Visit {
        let mut shard = self.shard(fp);
        match shard.entry(fp) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(entry);
                Visit::New
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                if shallower && entry.depth() < o.get().depth() {
                    // Depths only fall along a chain of parents (each
                    // entry is one deeper than its parent was when it was
                    // written, and a parent's depth can only fall since),
                    // so the recorded paths stay free of cycles.
                    o.insert(entry);
                    Visit::Shallower
                } else {
                    Visit::Known
                }
            }
        }
    }

    fn get(&self, fp: u64) -> Option<Entry> {
        self.shard(fp).get(&fp).copied()
    }

    /// Marks `fp`, met at `depth`, as cut there ([`Entry::cut`]); not where
    /// another worker has met it shallower since.
    fn mark_cut(&self, fp: u64, depth: u32) {
        if let Some(e) = self.shard(fp).get_mut(&fp).filter(|e| e.depth() == depth) {
            e.depth |= CUT;
        }
    }

    /// After an exact pass, what the entries' final depths say: the
    /// deepest (the initial state is 0), and whether any state is still
    /// cut at the depth bound (a state first met at the bound, its actions
    /// unexplored, and met shallower later, is no longer cut: it was
    /// expanded again from there).
    fn final_depths(&self, depth_bound: u32) -> (u32, bool) {
        let mut deepest = 0;
        let mut cut = false;
        for shard in &self.shards {
            let shard = shard.lock().unwrap_or_else(|p| p.into_inner());
            for e in shard.values() {
                deepest = deepest.max(e.depth());
                cut |= e.cut() && e.depth() + 1 >= depth_bound;
            }
        }
        (deepest, cut)
    }
}

const RUNNING: u8 = 0;
const FOUND: u8 = 1;
const STATES: u8 = 2;
const MEMORY: u8 = 3;
const INTERRUPTED: u8 = 4;

/// What every worker of one run shares.
struct Explorer<'m, M: Explorable> {
    model: &'m M,
    seen: Seen,
    /// Counted by every worker at every new state: apart from the flags
    /// below, which every worker reads at every step.
    states: Padded<AtomicUsize>,
    max_depth: Padded<AtomicUsize>,
    /// `RUNNING` until a violation or a budget stops the run.
    stop: AtomicU8,
    /// Breadth first gave way to depth first.
    dfs: AtomicBool,
    /// The search met the depth bound with actions enabled.
    cut: AtomicBool,
    found: Mutex<Option<(u64, u32)>>,
    depth_bound: u32,
    states_max: usize,
    /// Expand again a state met by a shorter path ([`explore`]).
    exact: bool,
}

impl<M: Explorable> Explorer<'_, M> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) != RUNNING
    }

    /// The successors of `(fp, s)` at depth `d` that are new, judged; each
    /// goes to `sink`. Returns false once the run stops.
    fn expand(
        &self,
        fp: u64,
        s: M::State,
        d: u32,
        mut sink: impl FnMut(u64, M::State, u32),
    ) -> bool {
        let mut actions: Vec<M::Action> = Vec::new();
        if d + 1 >= self.depth_bound {
            // stateright's convention: depth D is generated, not expanded.
            // An exact pass marks every state it cuts: one met shallower
            // later is expanded again, so only the marks left at the end
            // say whether the bound cut the search.
            if self.exact || !self.cut.load(Ordering::Relaxed) {
                self.model.enabled(&s, &mut actions);
                if !actions.is_empty() {
                    self.cut.store(true, Ordering::Relaxed);
                    if self.exact {
                        self.seen.mark_cut(fp, d);
                    }
                }
            }
            return !self.stopped();
        }
        self.model.enabled(&s, &mut actions);
        let mut parent = Some(s);
        let last = actions.len().saturating_sub(1);
        for (i, a) in actions.iter().enumerate() {
            if self.stopped() {
                return false;
            }
            let n = if i == last {
                parent.take().and_then(|s| self.model.step_owned(s, a))
            } else {
                parent.as_ref().and_then(|s| self.model.step(s, a))
            };
            let Some(n) = n else {
                continue;
            };
            let nfp = self.model.fingerprint(&n);
            let entry = Entry {
                parent: fp,
                action: i as u32,
                depth: d + 1,
            };
            match self.seen.visit(nfp, entry, self.exact) {
                Visit::New => {}
                Visit::Known => continue,
                Visit::Shallower => {
                    sink(nfp, n, d + 1);
                    continue;
                }
            }
            let count = self.states.fetch_add(1, Ordering::Relaxed) + 1;
            // Written only when deeper: depth first mostly is not.
            if d as usize + 2 > self.max_depth.load(Ordering::Relaxed) {
                self.max_depth.fetch_max(d as usize + 2, Ordering::Relaxed);
            }
            if self.model.violation(&n).is_some() {
                let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
                if found.is_none() {
                    *found = Some((nfp, d + 1));
                }
                self.stop.store(FOUND, Ordering::Relaxed);
                return false;
            }
            if count >= self.states_max {
                let _ = self.stop.compare_exchange(
                    RUNNING,
                    STATES,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                return false;
            }
            sink(nfp, n, d + 1);
        }
        true
    }

    /// One depth-first worker: its own stack, fed from and shared with
    /// `pool`, against the shared visited set. A state taken from the pool
    /// is localized (a few dozen times a run), and every state the worker
    /// makes from it is its own. Breadth first does not: there every state
    /// may pass between workers, and a copy of each would cost more than
    /// the counts it spares.
    fn dfs_worker(&self, pool: &Pool<M::State>) {
        let mut stack: Vec<Item<M::State>> = Vec::new();
        loop {
            let Some((fp, s, d)) = stack.pop().or_else(|| {
                let mut taken = pool.take(|| self.stopped())?;
                self.model.localize(&mut taken.1);
                Some(taken)
            }) else {
                return;
            };
            let base = stack.len();
            if !self.expand(fp, s, d, |nfp, n, nd| stack.push((nfp, n, nd))) {
                pool.finish();
                return;
            }
            // The first enabled action first: a model lists the steps that
            // move its scripts and messages before its drops and its
            // clocks' steps, so paths that go straight to a state are
            // walked before the ones that wait or fault on the way. States
            // are then met at or near their shallowest depth, and an exact
            // pass expands a quarter as many again (`lifecycle` cut at
            // depth 26: 95,014 re-expansions against 427,143 last action
            // first).
            stack[base..].reverse();
            if stack.len() > 1 && pool.hungry() {
                pool.share(&mut stack);
            }
        }
    }
}

/// Explores `model` within its bounds and `limits`, calling `progress` about
/// every quarter second from the calling thread (which only watches).
///
/// A search that went depth first, met the depth bound with actions
/// enabled and found nothing runs again from the start expanding every
/// state met again by a shorter path (`Visit::Shallower`): only then is
/// every state within the bound explored (breadth first meets each state
/// first at its shallowest depth, and needs no second run). The first run
/// does without (re-expansions cost 1.8 times the time on
/// `two_clients_asked`, whose depth first is not cut): a run that is not
/// cut expanded every state it met in full, so it needs none.
///
/// The second run judges the cut by the depths its states ended at
/// (`Seen::final_depths`): a state first met at the bound and later by a
/// shorter path was expanded from there, and where no state ended at the
/// bound with actions enabled the model holds outright, as breadth first
/// would say (`lifecycle_two_calls` at depth 34: every state within depth
/// 31).
pub fn explore<M: Explorable>(
    model: &M,
    limits: Limits,
    mut progress: impl FnMut(&Progress),
) -> Outcome<M::Action, M::Violation> {
    let first = explore_pass(model, limits, &mut progress, false);
    let cut = matches!(first.limit, Some(Limit::DepthBound { .. }));
    if !cut || first.counterexample.is_some() || first.order == Order::Bfs {
        return first;
    }
    let exact = explore_pass(model, limits, &mut progress, true);
    Outcome {
        elapsed: first.elapsed + exact.elapsed,
        rss_peak: first.rss_peak.max(exact.rss_peak),
        ..exact
    }
}

/// One search; `exact`: states met again by a shorter path are expanded
/// again ([`explore`]).
#[allow(clippy::disallowed_methods)] // wall time and RSS are report figures, never model inputs
fn explore_pass<M: Explorable>(
    model: &M,
    limits: Limits,
    mut progress: impl FnMut(&Progress),
    exact: bool,
) -> Outcome<M::Action, M::Violation> {
    let start = Instant::now();
    let init = model.initial();
    let init_fp = model.fingerprint(&init);
    let shared = Explorer {
        model,
        seen: Seen::new(),
        states: Padded(AtomicUsize::new(1)),
        max_depth: Padded(AtomicUsize::new(1)),
        stop: AtomicU8::new(RUNNING),
        dfs: AtomicBool::new(limits.depth_first),
        cut: AtomicBool::new(false),
        found: Mutex::new(None),
        depth_bound: model.depth_bound().min((CUT - 1) as usize) as u32,
        exact,
        states_max: limits.states_max.unwrap_or(usize::MAX),
    };
    shared.seen.visit(
        init_fp,
        Entry {
            parent: init_fp,
            action: ROOT_ACTION,
            depth: 0,
        },
        exact,
    );
    let mut gauge = Gauge::new(memory::rss_bytes(), &limits);
    let interrupted = || limits.interrupt.is_some_and(|i| i.is_set());
    if model.violation(&init).is_some() {
        *shared.found.lock().unwrap_or_else(|p| p.into_inner()) = Some((init_fp, 0));
        shared.stop.store(FOUND, Ordering::Relaxed);
    } else if interrupted() {
        shared.stop.store(INTERRUPTED, Ordering::Relaxed);
    }
    let threads = limits.threads.max(1);
    // The calling thread watches while `threads` workers run: progress,
    // memory, the switch to depth first.
    // An interrupt stops a running search (a found violation or a budget
    // already stopped it, and keeps its own reason).
    let note_interrupt = || {
        if interrupted() {
            let _ = shared.stop.compare_exchange(
                RUNNING,
                INTERRUPTED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    };
    let mut watch = |gauge: &mut Gauge, done: &AtomicUsize, depth: u32| {
        let mut nap = Duration::from_millis(2);
        while done.load(Ordering::Relaxed) < threads {
            // Woken early by the last worker to end (`unpark`): a run does
            // not wait out the rest of a quarter-second nap.
            std::thread::park_timeout(nap);
            nap = (nap * 2).min(Duration::from_millis(250));
            note_interrupt();
            let rss = memory::rss_bytes();
            if gauge.read(rss, depth, &shared.dfs) {
                let _ = shared.stop.compare_exchange(
                    RUNNING,
                    MEMORY,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            if start.elapsed() > Duration::from_millis(500) {
                progress(&Progress {
                    states: shared.states.load(Ordering::Relaxed),
                    depth: shared.max_depth.load(Ordering::Relaxed),
                    rss,
                    elapsed: start.elapsed(),
                    order: gauge.order(),
                });
            }
        }
    };
    // Breadth first, level by level, until done or switched.
    let mut level: Vec<Chunk<M::State>> = vec![vec![(init_fp, init, 0)]];
    let mut left: Vec<Item<M::State>> = Vec::new();
    // What the search leaves behind: freed at its end, or on a thread of
    // its own after an interrupt (below).
    let mut graveyard: Vec<Box<dyn Send>> = Vec::new();
    let mut depth = 0u32;
    // The workers are spawned once, at the first level of more than one
    // chunk, and run every level after it, each between two barriers: a
    // worker keeps its thread for the whole search, so the client memo's
    // table it fills is the one it reads (a table per thread), and a level
    // does not pay for spawning threads. A worker spawned for each level
    // would take a new thread, and read the cores other threads' tables
    // hold (`docs/performance.md`, "Breadth first against stateright's").
    let work: Mutex<Vec<Chunk<M::State>>> = Mutex::new(Vec::new());
    let next: Mutex<Vec<Chunk<M::State>>> = Mutex::new(Vec::new());
    let unexpanded: Mutex<Vec<Item<M::State>>> = Mutex::new(Vec::new());
    let done = AtomicUsize::new(0);
    let quit = AtomicBool::new(false);
    let panicked: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
    let begin = Barrier::new(threads + 1);
    let end = Barrier::new(threads + 1);
    let watcher = std::thread::current();
    std::thread::scope(|scope| {
        let mut spawned = false;
        while !level.is_empty() && !shared.stopped() && !shared.dfs.load(Ordering::Relaxed) {
            // A reading as each level starts, however short it is: a level
            // can end before the watcher's first nap, and a process already
            // past the frontier's share of memory turns depth first at once.
            if gauge.read(memory::rss_bytes(), depth, &shared.dfs) {
                let _ = shared.stop.compare_exchange(
                    RUNNING,
                    MEMORY,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            if shared.stopped() || shared.dfs.load(Ordering::Relaxed) {
                break;
            }
            // A level of one chunk is work for one worker: it is expanded
            // here, where waking the workers and their watcher would cost
            // more than its states (a model's first and last levels, and
            // small models whole). An interrupt is seen as the next level
            // starts.
            let alone = level.len() == 1;
            *work.lock().unwrap_or_else(|p| p.into_inner()) = std::mem::take(&mut level);
            if alone {
                worker(&shared, &work, &next, &unexpanded);
                note_interrupt();
            } else {
                if !spawned {
                    spawned = true;
                    for _ in 0..threads {
                        scope.spawn(|| loop {
                            begin.wait();
                            if quit.load(Ordering::Relaxed) {
                                break;
                            }
                            // A worker that panics stops the run and
                            // still meets the barrier; the caller panics
                            // with its payload once the workers are gone.
                            let run = std::panic::AssertUnwindSafe(|| {
                                worker(&shared, &work, &next, &unexpanded)
                            });
                            if let Err(payload) = std::panic::catch_unwind(run) {
                                shared.stop.store(FOUND, Ordering::Relaxed);
                                *panicked.lock().unwrap_or_else(|p| p.into_inner()) = Some(payload);
                            }
                            done.fetch_add(1, Ordering::Relaxed);
                            watcher.unpark();
                            end.wait();
                        });
                    }
                }
                done.store(0, Ordering::Relaxed);
                begin.wait();
                watch(&mut gauge, &done, depth);
                end.wait();
            }
            // What a stopped level did not reach (none when it ran to its end).
            graveyard.push(Box::new(take_all(&work)));
            left.extend(take_all(&unexpanded));
            level = take_all(&next);
            depth += 1;
        }
        if spawned {
            quit.store(true, Ordering::Relaxed);
            begin.wait();
        }
    });
    if let Some(payload) = panicked.into_inner().unwrap_or_else(|p| p.into_inner()) {
        std::panic::resume_unwind(payload);
    }
    // Depth first from whatever breadth first left, all workers sharing it.
    if shared.dfs.load(Ordering::Relaxed) && !shared.stopped() {
        left.extend(std::mem::take(&mut level).into_iter().flatten());
        let pool = Pool::new(std::mem::take(&mut left), threads);
        let done = AtomicUsize::new(0);
        let watcher = std::thread::current();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    shared.dfs_worker(&pool);
                    done.fetch_add(1, Ordering::Relaxed);
                    watcher.unpark();
                });
            }
            watch(&mut gauge, &done, depth);
        });
        graveyard.push(Box::new(pool));
    }
    let stop = shared.stop.load(Ordering::Relaxed);
    let mut deepest = shared.max_depth.load(Ordering::Relaxed);
    if exact && stop == RUNNING {
        // States first met deep and later shallower were counted where
        // they were first met: the entries hold where they ended.
        let (d, cut) = shared.seen.final_depths(shared.depth_bound);
        deepest = d as usize + 1;
        shared.cut.store(cut, Ordering::Relaxed);
    }
    let limit = match stop {
        STATES => Some(Limit::States(shared.states_max)),
        MEMORY => limits.memory_max.map(Limit::Memory),
        INTERRUPTED => Some(Limit::Interrupted),
        _ if shared.cut.load(Ordering::Relaxed) => Some(Limit::DepthBound {
            depth: shared.depth_bound as usize,
        }),
        _ => None,
    };
    let found = *shared.found.lock().unwrap_or_else(|p| p.into_inner());
    let counterexample = found.map(|(fp, _)| {
        // The path is replayed on the cores: failing here means two states
        // shared a fingerprint (or a core is not deterministic), and a
        // silent "holds" would be worse than stopping.
        rebuild(model, &shared.seen, fp).unwrap_or_else(|| {
            panic!("checker: the path to a violating state does not replay (fingerprint collision or nondeterminism)")
        })
    });
    let outcome = Outcome {
        states: shared.states.load(Ordering::Relaxed),
        depth: deepest,
        elapsed: start.elapsed(),
        counterexample,
        limit,
        order: gauge.order(),
        rss_peak: gauge.peak.max(memory::rss_bytes()),
    };
    if outcome.limit == Some(Limit::Interrupted) {
        // Freeing millions of states takes seconds, and an interrupt asks
        // for the verdict now: the tables and what the search had not
        // reached are freed on a thread of their own while the caller
        // reports (and, from a signal, exits). Any other stop frees them
        // here, before the next run reads its memory.
        let Explorer { seen, .. } = shared;
        graveyard.push(Box::new((seen, level, left)));
        let _ = std::thread::Builder::new().spawn(move || drop(graveyard));
    }
    outcome
}

/// Whether breadth first must give way to depth first, from a reading of
/// the resident size `rss`: the run's own growth (over `floor`, the lowest
/// reading since the run began) passed `bfs_max`, or `rss` passed three
/// quarters of the hard budget `memory_max`.
///
/// Growth, not the resident size itself: memory that an earlier run of the
/// same process freed, and that the allocator has not yet given back, is no
/// frontier of this one (a `check` of several models otherwise saw the last
/// model's memory in the first milliseconds of the next and turned depth
/// first at depth 1, losing shortest counterexamples for a reason that
/// depends on the order of the models). Three quarters of the hard budget
/// as well: when the allocator reuses that memory instead of giving it back,
/// growth counts late, and depth first must still get its turn before the
/// hard stop.
pub fn frontier_outgrew(
    rss: Option<u64>,
    floor: Option<u64>,
    bfs_max: Option<u64>,
    memory_max: Option<u64>,
) -> bool {
    let Some(rss) = rss else {
        return false;
    };
    let grown = rss.saturating_sub(floor.unwrap_or(0));
    bfs_max.is_some_and(|max| grown >= max) || memory_max.is_some_and(|max| rss >= max / 4 * 3)
}

/// What the watching thread knows of memory, reading by reading, and the
/// decisions it takes from it: the run's peak and floor, the hard stop, and
/// the depth at which breadth first gave way to depth first (which the
/// outcome reports, so that a counterexample is called shortest only when
/// it is).
struct Gauge {
    peak: Option<u64>,
    /// The lowest reading of this run: what the run grew from.
    floor: Option<u64>,
    bfs_max: Option<u64>,
    memory_max: Option<u64>,
    /// The first depth explored depth first; `Some(0)`: from the start.
    switched_at: Option<usize>,
}

impl Gauge {
    fn new(rss: Option<u64>, limits: &Limits) -> Self {
        Gauge {
            peak: rss,
            floor: rss,
            bfs_max: limits.bfs_memory_max.or(limits.memory_max.map(|m| m / 2)),
            memory_max: limits.memory_max,
            switched_at: limits.depth_first.then_some(0),
        }
    }

    /// Takes one reading while breadth first explores level `depth`: turns
    /// the search depth first (`dfs`) when the frontier outgrew its share,
    /// noting where if this reading is the one that turned it. Whether the
    /// hard budget is reached.
    fn read(&mut self, rss: Option<u64>, depth: u32, dfs: &AtomicBool) -> bool {
        self.peak = self.peak.max(rss);
        self.floor = match (self.floor, rss) {
            (Some(f), Some(r)) => Some(f.min(r)),
            (f, r) => f.or(r),
        };
        if frontier_outgrew(rss, self.floor, self.bfs_max, self.memory_max)
            && !dfs.swap(true, Ordering::Relaxed)
        {
            self.switched_at = Some(depth as usize + 1);
        }
        matches!((rss, self.memory_max), (Some(r), Some(max)) if r >= max)
    }

    fn order(&self) -> Order {
        match self.switched_at {
            Some(0) => Order::Dfs,
            Some(depth) => Order::BfsThenDfs { depth },
            None => Order::Bfs,
        }
    }
}

/// One worker of a breadth-first level: takes chunks of the level and puts
/// new states into `next`, in chunks of its own; once the search has turned
/// depth first, it puts what it has not expanded into `unexpanded` instead
/// (the depth-first workers take it from there).
///
/// A level is kept in chunks, never in one vector: a state is moved into a
/// chunk once and out once. One vector per level grew by doubling (a level
/// is hundreds of MB of states), each growth a fresh mapping that the
/// kernel zeroed and faulted in, and every state was copied into it again.
fn worker<M: Explorable>(
    shared: &Explorer<'_, M>,
    work: &Mutex<Vec<Chunk<M::State>>>,
    next: &Mutex<Vec<Chunk<M::State>>>,
    unexpanded: &Mutex<Vec<Item<M::State>>>,
) {
    let take = || work.lock().unwrap_or_else(|p| p.into_inner()).pop();
    let hand_on = |local: &mut Chunk<M::State>| {
        if !local.is_empty() {
            let full = std::mem::replace(local, Vec::with_capacity(CHUNK));
            next.lock().unwrap_or_else(|p| p.into_inner()).push(full);
        }
    };
    let mut local = Vec::with_capacity(CHUNK);
    while let Some(mut chunk) = take() {
        while let Some((fp, s, d)) = chunk.pop() {
            if shared.stopped() {
                return;
            }
            if shared.dfs.load(Ordering::Relaxed) {
                let mut u = unexpanded.lock().unwrap_or_else(|p| p.into_inner());
                u.push((fp, s, d));
                u.append(&mut chunk);
                break;
            }
            shared.expand(fp, s, d, |nfp, n, nd| local.push((nfp, n, nd)));
            if local.len() >= CHUNK {
                hand_on(&mut local);
            }
        }
    }
    hand_on(&mut local);
}

/// What `m` holds, leaving it empty.
fn take_all<T>(m: &Mutex<Vec<T>>) -> Vec<T> {
    std::mem::take(&mut *m.lock().unwrap_or_else(|p| p.into_inner()))
}

/// States a breadth-first worker takes or hands on at once.
const CHUNK: usize = 64;

/// Part of a breadth-first level.
type Chunk<S> = Vec<Item<S>>;

/// The path from the initial state to `target`, replayed on the model.
///
/// Each step first tries the recorded action index. With the symmetry
/// reduction, the state replayed may be a swap of the one that was expanded
/// (they share a fingerprint), so the index can name another client's
/// action; then the step takes the enabled action whose successor has the
/// recorded fingerprint (one does, by the symmetry).
fn rebuild<M: Explorable>(
    model: &M,
    seen: &Seen,
    target: u64,
) -> Option<Counterexample<M::Action, M::Violation>> {
    let mut path = Vec::new();
    let mut fp = target;
    loop {
        let e = seen.get(fp)?;
        if e.action == ROOT_ACTION {
            break;
        }
        path.push((e.action as usize, fp));
        fp = e.parent;
        if path.len() > 1 << 20 {
            return None; // a cycle of parents: a fingerprint collision
        }
    }
    path.reverse();
    let mut s = model.initial();
    let mut steps = Vec::with_capacity(path.len());
    for (i, want) in path {
        let mut actions = Vec::new();
        model.enabled(&s, &mut actions);
        let recorded = actions.get(i).and_then(|a| {
            let n = model.step(&s, a)?;
            (model.fingerprint(&n) == want).then(|| (a.clone(), n))
        });
        let (a, n) = match recorded {
            Some(found) => found,
            None => actions.iter().find_map(|a| {
                let n = model.step(&s, a)?;
                (model.fingerprint(&n) == want).then(|| (a.clone(), n))
            })?,
        };
        steps.push((model.time_of(&s), a));
        s = n;
    }
    let violation = model.violation(&s)?;
    Some(Counterexample { steps, violation })
}

#[cfg(test)]
mod tests {
    use super::{explore, frontier_outgrew, Explorable, Gauge, Limit, Limits, Order};
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A graph of numbered states: `edges[s]` are the successors of `s`
    /// in action order; state `bad` breaks the property; a step from
    /// `panics_from` panics, as a core with a bug would.
    struct Graph {
        edges: Vec<Vec<u8>>,
        bad: u8,
        depth_bound: usize,
        panics_from: Option<u8>,
    }

    impl Explorable for Graph {
        type State = u8;
        type Action = u8;
        type Violation = &'static str;
        fn initial(&self) -> u8 {
            0
        }
        fn enabled(&self, s: &u8, out: &mut Vec<u8>) {
            out.extend(&self.edges[usize::from(*s)]);
        }
        fn step(&self, s: &u8, a: &u8) -> Option<u8> {
            assert_ne!(Some(*s), self.panics_from, "a core panicked");
            Some(*a)
        }
        fn fingerprint(&self, s: &u8) -> u64 {
            u64::from(*s) + 1
        }
        fn violation(&self, s: &u8) -> Option<&'static str> {
            (*s == self.bad).then_some("bad")
        }
        fn depth_bound(&self) -> usize {
            self.depth_bound
        }
        fn time_of(&self, _: &u8) -> u64 {
            0
        }
    }

    #[test]
    fn a_worker_that_panics_ends_the_search_with_its_panic() {
        // 0 -> 1..=200 (a level of four chunks, run by the workers), each
        // -> 201; the step from 150 panics. The workers wait for each other
        // between levels: the panic must reach the caller, not leave the
        // others waiting for ever.
        let mut edges = vec![(1..=200).collect::<Vec<u8>>()];
        edges.extend((1..=200).map(|_| vec![201]));
        edges.push(vec![]);
        let g = Graph {
            edges,
            bad: 255,
            depth_bound: 10,
            panics_from: Some(150),
        };
        for threads in [1, 2] {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                explore(&g, Limits::new(threads), |_| {})
            }));
            let payload = run.expect_err("the panic reaches the caller");
            let text = payload
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_default();
            assert!(text.contains("a core panicked"), "{text}");
        }
        // Without the panic, the same graph is searched whole.
        let g = Graph {
            panics_from: None,
            ..g
        };
        let out = explore(&g, Limits::new(2), |_| {});
        assert!(out.exhaustive());
        assert_eq!(out.states, 202);
    }

    #[test]
    fn depth_first_explores_again_a_state_met_shallower_and_finds_what_lies_behind_it() {
        // 0 -> a (1) -> b (2) -> x (4), and 0 -> c (3) -> x; x -> bad (5).
        // States are recorded as they are generated. In one of the two
        // orders of 0's successors depth first generates x deep first (0,
        // a, b, x: depth 3), where the bound (4: depth 3 is generated, not
        // expanded) cuts x -> bad; it then generates x again at depth 2
        // (0, c, x) and must expand it there: bad lies at depth 3, within
        // the bound. A search that visits a state once misses it.
        for first in [vec![1, 3], vec![3, 1]] {
            let g = Graph {
                edges: vec![first.clone(), vec![2], vec![4], vec![4], vec![5], vec![]],
                bad: 5,
                depth_bound: 4,
                panics_from: None,
            };
            for threads in [1, 2] {
                let limits = Limits {
                    depth_first: true,
                    ..Limits::new(threads)
                };
                let dfs = explore(&g, limits, |_| {});
                let c = dfs.counterexample.expect("bad lies within the bound");
                assert_eq!(c.violation, "bad");
                // The path recorded is the shorter one: 0 -> c -> x -> bad.
                let path: Vec<u8> = c.steps.iter().map(|s| s.1).collect();
                assert_eq!(path, [3, 4, 5], "successors {first:?}");
            }
            // Without the violation: every state within the bound, each
            // counted once, the same as breadth first.
            let g = Graph { bad: 9, ..g };
            let dfs = explore(
                &g,
                Limits {
                    depth_first: true,
                    ..Limits::new(1)
                },
                |_| {},
            );
            let bfs = explore(&g, Limits::new(1), |_| {});
            assert!(dfs.counterexample.is_none() && bfs.counterexample.is_none());
            assert_eq!((dfs.states, bfs.states), (6, 6), "successors {first:?}");
            // x, cut where it was first met, ended at depth 2 and was
            // expanded there: nothing ended at the bound with actions
            // enabled, so both searches hold outright.
            assert_eq!((dfs.limit, bfs.limit), (None, None), "successors {first:?}");
            assert_eq!((dfs.depth, bfs.depth), (4, 4), "successors {first:?}");
        }
    }

    #[test]
    fn a_state_that_ends_at_the_depth_bound_with_actions_enabled_cuts_the_search() {
        // The graph above with 5 -> 6: 5 ends at depth 3, where the bound
        // (4) cuts its action. Both searches hold within the bound only,
        // in both orders of 0's successors and on one and two threads.
        for first in [vec![1, 3], vec![3, 1]] {
            let g = Graph {
                edges: vec![
                    first.clone(),
                    vec![2],
                    vec![4],
                    vec![4],
                    vec![5],
                    vec![6],
                    vec![],
                ],
                bad: 9,
                depth_bound: 4,
                panics_from: None,
            };
            for threads in [1, 2] {
                let dfs = explore(
                    &g,
                    Limits {
                        depth_first: true,
                        ..Limits::new(threads)
                    },
                    |_| {},
                );
                let bfs = explore(&g, Limits::new(threads), |_| {});
                let cut = Some(Limit::DepthBound { depth: 4 });
                assert_eq!((dfs.limit, bfs.limit), (cut, cut), "successors {first:?}");
                assert_eq!((dfs.states, bfs.states), (6, 6), "successors {first:?}");
            }
        }
    }

    #[test]
    fn depth_first_walks_the_first_action_first() {
        // 0 -> 1 and 0 -> 2, both -> 3 -> 4 (bad). Expanding 0 generates 1
        // and 2; the one walked next generates 3 and is its recorded
        // parent. First action first, that is 1. A single worker makes the
        // order visible.
        let g = Graph {
            edges: vec![vec![1, 2], vec![3], vec![3], vec![4], vec![]],
            bad: 4,
            depth_bound: 10,
            panics_from: None,
        };
        let limits = Limits {
            depth_first: true,
            ..Limits::new(1)
        };
        let dfs = explore(&g, limits, |_| {});
        let c = dfs.counterexample.expect("4 is bad");
        let path: Vec<u8> = c.steps.iter().map(|s| s.1).collect();
        assert_eq!(path, [1, 3, 4]);
    }

    #[test]
    fn the_reading_that_turns_the_search_depth_first_records_its_depth() {
        let limits = Limits {
            bfs_memory_max: Some(100 * MB),
            memory_max: Some(4000 * MB),
            ..Limits::new(1)
        };
        let dfs = AtomicBool::new(false);
        let mut gauge = Gauge::new(Some(50 * MB), &limits);
        assert!(!gauge.read(Some(60 * MB), 2, &dfs));
        assert_eq!(
            (gauge.order(), dfs.load(Ordering::Relaxed)),
            (Order::Bfs, false)
        );
        // Level 3 outgrew its share: depth first from level 4 on.
        assert!(!gauge.read(Some(200 * MB), 3, &dfs));
        assert!(dfs.load(Ordering::Relaxed));
        assert_eq!(gauge.order(), Order::BfsThenDfs { depth: 4 });
        // Later readings (the depth-first phase) keep where it turned.
        assert!(!gauge.read(Some(300 * MB), 4, &dfs));
        assert_eq!(gauge.order(), Order::BfsThenDfs { depth: 4 });
        // The hard budget stops the run; the peak is the highest reading.
        assert!(gauge.read(Some(4000 * MB), 4, &dfs));
        assert_eq!((gauge.peak, gauge.floor), (Some(4000 * MB), Some(50 * MB)));
        // Depth first asked for: it stays depth first from the start.
        let dfs = AtomicBool::new(true);
        let mut gauge = Gauge::new(
            Some(50 * MB),
            &Limits {
                depth_first: true,
                ..limits
            },
        );
        assert!(!gauge.read(Some(900 * MB), 5, &dfs));
        assert_eq!(gauge.order(), Order::Dfs);
    }

    const MB: u64 = 1 << 20;

    #[test]
    fn breadth_first_gives_way_to_the_runs_growth_not_to_memory_it_found() {
        let bfs = Some(100 * MB);
        // 700 MB resident from the start (an earlier run's, not yet given
        // back): no growth, no switch.
        assert!(!frontier_outgrew(Some(700 * MB), Some(700 * MB), bfs, None));
        // It grew by the budget from its floor.
        assert!(frontier_outgrew(Some(800 * MB), Some(700 * MB), bfs, None));
        assert!(!frontier_outgrew(Some(799 * MB), Some(700 * MB), bfs, None));
        // The floor fell when that memory went back: growth counts from there.
        assert!(frontier_outgrew(Some(150 * MB), Some(50 * MB), bfs, None));
        // Three quarters of the hard budget switch whatever the growth.
        let hard = Some(1000 * MB);
        assert!(frontier_outgrew(Some(750 * MB), Some(700 * MB), bfs, hard));
        assert!(!frontier_outgrew(Some(740 * MB), Some(700 * MB), bfs, hard));
        // Nothing known, nothing decided.
        assert!(!frontier_outgrew(None, Some(0), bfs, hard));
        assert!(!frontier_outgrew(Some(u64::MAX), None, None, None));
    }
}
