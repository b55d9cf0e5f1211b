//! loom over the adapter's cross-task protocol, running `live.rs`'s own
//! code ([`LiveSession`], [`run_timers`]) and the manager's [`Table`] with
//! loom's locks and a loom stand-in for tokio's `Notify`.
//!
//! What crosses tasks in an rmcp server on our core:
//! - rmcp's calls (a client's POSTs, its DELETE) feed the bridge under the
//!   session's lock and push what it delivers into the inbox, signalling
//!   `inbox_ready`; the service's task reads the inbox ([`LiveSession::recv`]):
//!   look under the lock, then wait for the signal;
//! - every drain signals `timer_changed` when the next deadline changed or
//!   the session ended; the timer task ([`run_timers`]) looks under the
//!   lock, then waits for that signal or its deadline;
//! - every drain reports to the manager's table inside the session's lock
//!   (session, then table); the manager reads the table alone.
//!
//! One model: the handler's task (answering a `ping`), a client (a `ping`
//! on its own stream, then a notification), a DELETE found through the
//! table as the manager finds it, and the timer task. Every accepted client
//! message reaches the handler once, in order; the handler's read ends;
//! the timer task ends; the session leaves the table; no deadlock.
//!
//! The stand-in keeps a permit when nobody waits, as `Notify::notify_one`
//! does. With one that wakes only a waiter already waiting (a condition
//! variable), loom finds the lost wake-up: a reader that looked, found the
//! inbox empty, and waits after the notice went by.
//!
//! Time stands still in the model (deadlines are in the future and never
//! come): what is checked is that the timer task hears of every change and
//! of the end, not the timers themselves (the core's own tests do those).
//! The SSE channels are tokio's `mpsc` (its own synchronisation is not
//! explored, only when the adapter writes and drops them).

#[path = "../../../tests/loom_support/mod.rs"]
mod loom_support;

use super::bridge::Bridge;
use super::live::{run_timers, LiveSession, Platform, State};
use super::manager::Table;
use super::{convert, CoreConfig, CoreError};
use loom_support::{explore, LoomLock};
use mcp_streamable::id_source::IdSource;
use mcp_streamable::jsonrpc::Message;
use mcp_streamable::time::Instant;
use mcp_streamable_hyper::sync::{Lock, Signal};
use rmcp::model::ClientJsonRpcMessage;
use std::future::Future;
use std::sync::Arc;
use std::task::{Poll, Waker};

/// A permit and the one task waiting for it.
#[derive(Default)]
struct Permit {
    ready: bool,
    waiter: Option<Waker>,
}

/// tokio's `Notify` as the adapter uses it, on a loom lock. `KEEPS`: a
/// notice given while nobody waits is kept (`notify_one`); without it, it
/// is lost (a condition variable).
struct LoomSignal<const KEEPS: bool>(loom::sync::Mutex<Permit>);

impl<const KEEPS: bool> Signal for LoomSignal<KEEPS> {
    fn new() -> Self {
        LoomSignal(loom::sync::Mutex::new(Permit::default()))
    }

    fn notify_one(&self) {
        let mut p = self.0.lock().unwrap();
        match p.waiter.take() {
            Some(w) => {
                p.ready = true;
                w.wake();
            }
            None => p.ready |= KEEPS,
        }
    }

    fn notified(&self) -> impl Future<Output = ()> + Send + '_ {
        std::future::poll_fn(move |cx| {
            let mut p = self.0.lock().unwrap();
            if std::mem::take(&mut p.ready) {
                Poll::Ready(())
            } else {
                p.waiter = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

/// The adapter under loom.
struct Loom<const KEEPS: bool>;

impl<const KEEPS: bool> Platform for Loom<KEEPS> {
    type SessionLock = LoomLock<State>;
    type TableLock = LoomLock<Table<Self>>;
    type Signal = LoomSignal<KEEPS>;
    type Clock = ();

    fn now(_: ()) -> Instant {
        Instant::ZERO
    }

    fn sleep_until(_: (), at: Option<Instant>) -> impl Future<Output = ()> + Send {
        let due = at.is_some_and(|at| at <= Instant::ZERO);
        async move {
            if !due {
                std::future::pending::<()>().await
            }
        }
    }
}

fn client(json: &str) -> (Message, ClientJsonRpcMessage) {
    let rmcp: ClientJsonRpcMessage = serde_json::from_str(json).unwrap();
    (convert::from_client(&rmcp).unwrap(), rmcp)
}

fn method(m: &ClientJsonRpcMessage) -> String {
    convert::from_client(m)
        .unwrap()
        .method()
        .unwrap_or("")
        .to_string()
}

/// The model; `KEEPS` picks the signal's semantics; `timers`: whether the
/// session has a deadline (its idle timeout) or none at all (then only the
/// end, not a changed deadline, can wake the timer task).
fn session_model<const KEEPS: bool>(timers: bool) {
    let table = Arc::new(LoomLock::<Table<Loom<KEEPS>>>::new(Table::new(
        IdSource::from_key([7; 32]),
    )));
    let mut config = CoreConfig::default();
    if !timers {
        config.session.idle_timeout_ms = None;
        config.session.init_timeout_ms = None;
    }
    let session = table
        .with(|t| {
            t.admit(&config, Instant::ZERO, |id, core| {
                LiveSession::new(id, Bridge::new(core), (), 4, 8, Arc::downgrade(&table))
            })
        })
        .unwrap()
        .session;

    // initialize, answered, before the tasks race.
    let (init, rmcp_init) = client(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"loom","version":"0"}}}"#,
    );
    session
        .open_exchange(true, |b, now| {
            b.handle_initialize(init, rmcp_init, now)
                .map_err(CoreError::Refused)
        })
        .unwrap();
    let first = loom::future::block_on(session.recv()).unwrap();
    assert_eq!(method(&first), "initialize");
    let answer = mcp_streamable::jsonrpc::parse_message(
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"loom","version":"0"}}}"#,
    )
    .unwrap();
    session.with(|b, now| b.send(answer, None, now)).unwrap();

    let timer = {
        let session = session.clone();
        loom::thread::spawn(move || loom::future::block_on(run_timers(session)))
    };
    let poster = {
        let session = session.clone();
        loom::thread::spawn(move || {
            let mut accepted = Vec::new();
            let (ping, rmcp_ping) = client(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
            let stream = session.open_exchange(true, |b, now| {
                b.handle_request(ping, rmcp_ping, now)
                    .map_err(CoreError::Refused)
            });
            if stream.is_ok() {
                accepted.push("ping");
            }
            let (note, rmcp_note) =
                client(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
            let sent = session.accept(|b, now| {
                b.handle_message(note, rmcp_note, now)
                    .map_err(CoreError::Refused)
            });
            if sent.is_ok() {
                accepted.push("notifications/roots/list_changed");
            }
            (accepted, stream.ok())
        })
    };
    let deleter = {
        let (table, id) = (table.clone(), session.id.clone());
        loom::thread::spawn(move || {
            // As the manager's close_session: found in the table (alone),
            // then fed under the session's lock (which then takes the table's).
            let found = table.with(|t| t.get(id.as_str())).expect("in the table");
            found.with(|b, now| b.handle_delete(now));
        })
    };

    // The handler's task: read until the end, answering the ping.
    let mut read = Vec::new();
    loom::future::block_on(async {
        while let Some(m) = session.recv().await {
            let name = method(&m);
            if name == "ping" {
                let pong = mcp_streamable::jsonrpc::parse_message(
                    r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
                )
                .unwrap();
                // Refused once the session ended: nothing to answer on.
                let _ = session.with(|b, now| b.send(pong, None, now));
            }
            read.push(name);
        }
    });

    deleter.join().unwrap();
    let (accepted, stream) = poster.join().unwrap();
    timer.join().unwrap();
    assert_eq!(
        read, accepted,
        "the handler read what was accepted, once each, in order"
    );
    assert!(session.is_ended());
    assert_eq!(
        table.with(|t| t.len()),
        0,
        "the ended session left the table"
    );
    if let Some((mut rx, _)) = stream {
        // The ping's stream has its priming event and its answer, or ended
        // without one (the session ended first); no other message.
        while let Ok(event) = rx.try_recv() {
            if let Some(m) = event.message {
                assert!(serde_json::to_string(&*m).unwrap().contains(r#""id":2"#));
            }
        }
    }
}

#[test]
fn the_adapter_loses_no_wake_up_and_ends_every_task() {
    for timers in [true, false] {
        let e = explore(2, move || session_model::<true>(timers));
        println!("rmcp adapter, notify_one, timers {timers}: {e:?}");
        assert!(e.failure.is_none(), "{e:?}");
        assert!(
            e.executions >= 10_000,
            "explored {} executions",
            e.executions
        );
    }
}

#[test]
fn a_wake_up_without_a_permit_deadlocks_and_loom_finds_it() {
    let e = explore(2, || session_model::<false>(true));
    println!("rmcp adapter, forgetful signal: {e:?}");
    let failure = e.failure.expect("loom finds the lost wake-up");
    assert!(failure.contains("deadlock"), "{failure}");
}
