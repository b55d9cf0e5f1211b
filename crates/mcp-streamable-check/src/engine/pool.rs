//! The shared work of depth first: every worker explores its own stack, and
//! gives the bottom half of it (the shallowest states, the biggest subtrees)
//! to the pool when another worker is waiting. The search is over when every
//! worker waits on an empty pool, or when the run stops.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// A state to expand: fingerprint, state, depth.
pub(super) type Item<S> = (u64, S, u32);

struct Inner<S> {
    items: Vec<Item<S>>,
    /// Workers waiting in [`Pool::take`].
    idle: usize,
    /// Nothing left anywhere, or the run stopped.
    done: bool,
}

/// Work shared by `threads` depth-first workers.
pub(super) struct Pool<S> {
    inner: Mutex<Inner<S>>,
    wake: Condvar,
    waiting: AtomicUsize,
    threads: usize,
}

impl<S> Pool<S> {
    pub(super) fn new(items: Vec<Item<S>>, threads: usize) -> Self {
        Pool {
            inner: Mutex::new(Inner {
                items,
                idle: 0,
                done: false,
            }),
            wake: Condvar::new(),
            waiting: AtomicUsize::new(0),
            threads: threads.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<S>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next item for a worker whose own stack is empty; `None` when the
    /// search is over (`stopped` says whether the run was stopped).
    pub(super) fn take(&self, stopped: impl Fn() -> bool) -> Option<Item<S>> {
        let mut g = self.lock();
        loop {
            if g.done || stopped() {
                g.done = true;
                self.wake.notify_all();
                return None;
            }
            if let Some(item) = g.items.pop() {
                return Some(item);
            }
            g.idle += 1;
            if g.idle == self.threads {
                // Everyone waits and no one holds work: explored.
                g.done = true;
                self.wake.notify_all();
                return None;
            }
            self.waiting.fetch_add(1, Ordering::Relaxed);
            // A timeout, so a stop (a budget, a violation) is seen promptly.
            g = self
                .wake
                .wait_timeout(g, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            g.idle -= 1;
        }
    }

    /// Whether a worker waits for work.
    pub(super) fn hungry(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }

    /// Gives the bottom half of `stack` (its shallowest states) to the pool.
    pub(super) fn share(&self, stack: &mut Vec<Item<S>>) {
        let half = stack.len() / 2;
        if half == 0 {
            return;
        }
        self.lock().items.extend(stack.drain(..half));
        self.wake.notify_all();
    }

    /// Ends the search for every worker (the run stopped).
    pub(super) fn finish(&self) {
        self.lock().done = true;
        self.wake.notify_all();
    }
}
