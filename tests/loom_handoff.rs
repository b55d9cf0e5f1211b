//! loom over the server shell's park/route handoff, with the shell's own
//! [`Mailbox`](mcp_streamable_hyper::sync::Mailbox): a connection task routes a
//! request to a session's task while that task parks itself because it is
//! idle. The request must be taken exactly once: by the task, or, refused as
//! closed, by the woken session. `close_if_empty` (what the shell does)
//! passes; checking emptiness and then closing in two steps (what the shell
//! did before, with tokio's `try_recv` then `close`) loses it, and loom
//! finds the interleaving.
//!
//! The inline owner (`crates/mcp-streamable-hyper/src/owner.rs`): a request that finds its session
//! parked takes it on the connection task (the table says `Running` with a
//! fresh mailbox), is served there, and the new owner then drains and parks
//! as any owner does, so a session may pass from owner to owner many times.
//! Every request is taken exactly once, by one owner at a time; an inline
//! owner that parks straight after its own request, without the atomic
//! `close_if_empty`, loses what queued meanwhile, and loom finds it.
//!
//! The shell reuses a parked owner's mailbox: whoever wakes the session
//! reopens it under the slot's lock (no fresh mailbox, channel or task per
//! wake). A sender still holding the mailbox from before the park then
//! reaches the new owner, as one that routes again would: the same model
//! with the reopened mailbox holds too.

mod loom_support;

use loom::sync::Arc;
use loom::thread;
use loom_support::{explore, LoomLock, LoomMailbox};
use mcp_streamable_hyper::sync::{Lock, SendError};

enum Slot {
    Running(Arc<LoomMailbox<u32>>),
    Parked,
}

/// Sends a request to `target`: queued (true), or refused as closed (false:
/// route again).
fn delivered(target: &LoomMailbox<u32>) -> bool {
    match target.send(7) {
        Ok(()) => true,
        Err(SendError::Closed(_)) => false,
        Err(SendError::Full(_)) => panic!("full"),
    }
}

/// One owner that parks when idle, two senders; `atomic` picks the park.
fn handoff(atomic: bool) {
    let mailbox = Arc::new(LoomMailbox::new(4));
    let table = Arc::new(LoomLock::new(Slot::Running(mailbox.clone())));
    let woken: Arc<LoomLock<Option<Arc<LoomMailbox<u32>>>>> = Arc::new(LoomLock::new(None));

    let senders: Vec<_> = (0..2)
        .map(|_| {
            let (t, w) = (table.clone(), woken.clone());
            thread::spawn(move || {
                for _ in 0..3 {
                    // route(): the running task's mailbox, or wake the parked session.
                    let target = t.with(|slot| match slot {
                        Slot::Running(m) => m.clone(),
                        Slot::Parked => {
                            let fresh = Arc::new(LoomMailbox::new(4));
                            *slot = Slot::Running(fresh.clone());
                            w.with(|w| *w = Some(fresh.clone()));
                            fresh
                        }
                    });
                    if delivered(&target) {
                        return;
                    }
                }
                panic!("routed three times without delivering");
            })
        })
        .collect();

    // The owner: take what is queued, then park under the table lock.
    let mut taken = 0;
    loop {
        while mailbox.try_recv().is_some() {
            taken += 1;
        }
        let parked = table.with(|slot| {
            let closed = if atomic {
                mailbox.close_if_empty()
            } else if mailbox.is_empty() {
                mailbox.close();
                true
            } else {
                false
            };
            if closed {
                *slot = Slot::Parked;
            }
            closed
        });
        if parked {
            break;
        }
    }
    for s in senders {
        s.join().unwrap();
    }
    // The woken session's task drains its fresh mailbox.
    if let Some(fresh) = woken.with(|w| w.take()) {
        while fresh.try_recv().is_some() {
            taken += 1;
        }
    }
    assert_eq!(taken, 2, "a request was lost or taken twice");
}

/// Whoever owns the session: takes what is queued, then parks under the
/// table lock once `close_if_empty` says nothing is (or, `careless`, parks
/// without looking).
fn own(
    mailbox: &LoomMailbox<u32>,
    table: &LoomLock<Slot>,
    owners: &loom::sync::atomic::AtomicUsize,
    taken: &loom::sync::atomic::AtomicUsize,
    careless: bool,
) {
    use loom::sync::atomic::Ordering::SeqCst;
    loop {
        while mailbox.try_recv().is_some() {
            taken.fetch_add(1, SeqCst);
        }
        let parked = table.with(|slot| {
            let closed = if careless {
                mailbox.close();
                true
            } else {
                mailbox.close_if_empty()
            };
            if closed {
                *slot = Slot::Parked;
                owners.fetch_sub(1, SeqCst);
            }
            closed
        });
        if parked {
            return;
        }
    }
}

/// One owner that parks when idle; two senders, each serving its request
/// inline when it finds the session parked. `careless`: inline owners park
/// without the atomic check.
fn inline_handoff(careless: bool) {
    inline_handoff_with(careless, false)
}

/// [`inline_handoff`]; `reopen`: a woken owner reopens the session's one
/// mailbox instead of making a fresh one (what the shell does).
fn inline_handoff_with(careless: bool, reopen: bool) {
    use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let mailbox = Arc::new(LoomMailbox::new(4));
    let table = Arc::new(LoomLock::new(Slot::Running(mailbox.clone())));
    let owners = Arc::new(AtomicUsize::new(1));
    let taken = Arc::new(AtomicUsize::new(0));

    let senders: Vec<_> = (0..2)
        .map(|_| {
            let (t, o, k) = (table.clone(), owners.clone(), taken.clone());
            let m = mailbox.clone();
            thread::spawn(move || {
                for _ in 0..3 {
                    // target(): the running owner's mailbox, or the session itself.
                    let (target, owning) = t.with(|slot| match slot {
                        Slot::Running(m) => (m.clone(), false),
                        Slot::Parked => {
                            let mailbox = if reopen {
                                m.reopen();
                                m.clone()
                            } else {
                                Arc::new(LoomMailbox::new(4))
                            };
                            *slot = Slot::Running(mailbox.clone());
                            assert_eq!(o.fetch_add(1, SeqCst), 0, "two owners at once");
                            (mailbox, true)
                        }
                    });
                    if owning {
                        // serve_inline(): its own request, then as any owner.
                        k.fetch_add(1, SeqCst);
                        own(&target, &t, &o, &k, careless);
                        return;
                    }
                    if delivered(&target) {
                        return;
                    }
                }
                panic!("routed three times without delivering");
            })
        })
        .collect();

    own(&mailbox, &table, &owners, &taken, false);
    for s in senders {
        s.join().unwrap();
    }
    assert_eq!(taken.load(SeqCst), 2, "a request was lost or taken twice");
    assert_eq!(owners.load(SeqCst), 0, "the session was left owned");
}

/// Explores `model` (preemption bound 3): no failure, over at least 500 executions.
fn holds(name: &str, model: fn()) {
    let e = explore(3, model);
    println!("{name}: {e:?}");
    assert!(e.failure.is_none(), "{e:?}");
    assert!(e.executions >= 500, "explored {} executions", e.executions);
}

/// Explores `model`: loom finds the lost request.
fn loses_a_request(name: &str, model: fn()) {
    let e = explore(3, model);
    println!("{name}: {e:?}");
    let failure = e.failure.expect("loom finds the lost request");
    assert!(failure.contains("lost or taken twice"), "{failure}");
}

#[test]
fn an_inline_owner_parks_without_losing_a_request() {
    holds("inline handoff, close_if_empty", || inline_handoff(false));
}

#[test]
fn a_woken_owner_reopening_the_mailbox_loses_no_request() {
    holds("inline handoff, reopened mailbox", || {
        inline_handoff_with(false, true)
    });
}

#[test]
fn a_reopened_mailbox_with_a_careless_park_loses_a_request_and_loom_finds_it() {
    loses_a_request("inline handoff, reopened mailbox, careless park", || {
        inline_handoff_with(true, true)
    });
}

#[test]
fn an_inline_owner_parking_without_the_check_loses_a_request_and_loom_finds_it() {
    loses_a_request("inline handoff, careless park", || inline_handoff(true));
}

#[test]
fn close_if_empty_never_loses_a_request() {
    holds("handoff, close_if_empty", || handoff(true));
}

#[test]
fn check_then_close_loses_a_request_and_loom_finds_it() {
    loses_a_request("handoff, check then close", || handoff(false));
}
