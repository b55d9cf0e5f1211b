//! The shells' shared handles, written once and generic over their lock, so
//! the loom models (`tests/loom_*.rs`) run the very code the hyper shells run,
//! with loom's primitives in place of std's.
//!
//! A [`Mailbox`] is how a connection task hands a request to the task that
//! owns a session's core (and how a client's streams reach its driver). Its
//! one subtle operation is [`Mailbox::close_if_empty`]: a session's task
//! parks only if nothing is queued, decided under the same lock that
//! [`Mailbox::send`] takes, so a request is either in the queue the owner
//! drains or refused with [`SendError::Closed`] (and the sender routes it
//! again). Checking emptiness and closing in two steps loses a request sent
//! in between; `tests/loom_handoff.rs` shows loom finding exactly that.

use mcp_streamable::release::Release;
use std::collections::VecDeque;

/// A mutual-exclusion lock, as the shells need it: run a closure on the
/// guarded value. std's in the shells, loom's in the loom models.
pub trait Lock<T>: Send + Sync {
    /// A lock around `value`.
    fn new(value: T) -> Self;
    /// Runs `f` with the value locked.
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
}

/// [`Lock`] over `std::sync::Mutex`. A poisoned lock is used anyway: every
/// critical section leaves the value consistent before anything can panic.
#[derive(Debug, Default)]
pub struct StdLock<T>(std::sync::Mutex<T>);

impl<T: Send> Lock<T> for StdLock<T> {
    fn new(value: T) -> Self {
        StdLock(std::sync::Mutex::new(value))
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = match self.0.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }
}

/// A wake-up that keeps one permit while nobody waits, as tokio's
/// `Notify::notify_one` does: a waiter that looked under the lock, found
/// nothing and is about to wait still sees a notice given in between, so
/// "look under the lock, then wait" loses no wake-up. A notice that wakes
/// only those already waiting (a condition variable, `notify_waiters`) does
/// lose it; the loom model of the rmcp adapter shows loom finding that.
pub trait Signal: Send + Sync {
    /// A signal with no permit.
    fn new() -> Self;
    /// Wakes the waiter, or keeps a permit for the next one.
    fn notify_one(&self);
    /// Completes once a permit is there (taking it).
    fn notified(&self) -> impl std::future::Future<Output = ()> + Send + '_;
}

impl Signal for tokio::sync::Notify {
    fn new() -> Self {
        tokio::sync::Notify::new()
    }

    fn notify_one(&self) {
        tokio::sync::Notify::notify_one(self)
    }

    fn notified(&self) -> impl std::future::Future<Output = ()> + Send + '_ {
        tokio::sync::Notify::notified(self)
    }
}

/// Why [`Mailbox::send`] gave the message back.
#[derive(Debug, PartialEq, Eq)]
pub enum SendError<T> {
    /// The owner closed the mailbox (it parked or ended): route again.
    Closed(T),
    /// `queued_max` messages are waiting: the owner is overloaded.
    Full(T),
}

/// What a [`Mailbox`]'s lock guards.
#[derive(Debug)]
pub struct MailboxState<T> {
    queue: VecDeque<T>,
    closed: bool,
}

/// A bounded many-producer, one-consumer queue whose consumer can close it
/// atomically with respect to senders. It does not wake anyone: the shell
/// pairs it with its own wake-up (tokio's `Notify`), the loom models spin.
#[derive(Debug)]
pub struct Mailbox<T, L: Lock<MailboxState<T>> = StdLock<MailboxState<T>>> {
    state: L,
    queued_max: usize,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T, L: Lock<MailboxState<T>>> Mailbox<T, L> {
    /// An open mailbox holding at most `queued_max` messages.
    pub fn new(queued_max: usize) -> Self {
        Mailbox {
            state: L::new(MailboxState {
                queue: VecDeque::new(),
                closed: false,
            }),
            queued_max,
            _t: std::marker::PhantomData,
        }
    }

    /// Queues `m`, unless the mailbox is closed or full.
    pub fn send(&self, m: T) -> Result<(), SendError<T>> {
        self.state.with(|s| {
            if s.closed {
                Err(SendError::Closed(m))
            } else if s.queue.len() >= self.queued_max {
                Err(SendError::Full(m))
            } else {
                s.queue.push_back(m);
                Ok(())
            }
        })
    }

    /// The oldest queued message, if any (also after closing: nothing queued
    /// is ever dropped by the mailbox).
    pub fn try_recv(&self) -> Option<T> {
        self.state.with(|s| {
            let m = s.queue.pop_front();
            // An idle session keeps no queue memory.
            s.queue.release_if_empty();
            m
        })
    }

    /// Closes the mailbox if nothing is queued; whether it did. Senders then
    /// get [`SendError::Closed`].
    pub fn close_if_empty(&self) -> bool {
        self.state.with(|s| {
            if s.queue.is_empty() {
                s.closed = true;
            }
            s.closed
        })
    }

    /// Opens a closed mailbox again, for the session's next owner (a parked
    /// session woken): a sender that still holds it then reaches the new
    /// owner, as one that routes again would. Only whoever takes ownership
    /// calls it, under the lock that says who owns the session.
    pub fn reopen(&self) {
        self.state.with(|s| s.closed = false);
    }

    /// Closes the mailbox whatever is queued (the owner is ending); what is
    /// queued can still be taken with [`Mailbox::try_recv`].
    pub fn close(&self) {
        self.state.with(|s| s.closed = true);
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.state.with(|s| s.queue.is_empty())
    }

    /// Whether the mailbox is closed.
    pub fn is_closed(&self) -> bool {
        self.state.with(|s| s.closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closes_only_when_empty_and_keeps_what_is_queued() {
        let m: Mailbox<u32> = Mailbox::new(2);
        assert_eq!(m.send(1), Ok(()));
        assert_eq!(m.send(2), Ok(()));
        assert_eq!(m.send(3), Err(SendError::Full(3)));
        assert!(!m.close_if_empty());
        assert_eq!(m.try_recv(), Some(1));
        assert_eq!(m.try_recv(), Some(2));
        assert!(m.close_if_empty());
        assert_eq!(m.send(4), Err(SendError::Closed(4)));
        assert_eq!(m.try_recv(), None);
        m.reopen();
        assert!(!m.is_closed());
        assert_eq!(m.send(5), Ok(()));
        assert_eq!(m.try_recv(), Some(5));
    }
}
