//! What the loom models share: loom's lock behind our [`Lock`] trait, so the
//! shells' [`Mailbox`] runs unchanged under loom; an exploration runner that
//! counts executions; and a child-process runner for models whose expected
//! outcome is a deadlock (loom aborts the process on one).

#![allow(dead_code)]

use mcp_streamable_hyper::sync::{Lock, Mailbox, MailboxState};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// [`Lock`] over `loom::sync::Mutex`.
pub struct LoomLock<T>(loom::sync::Mutex<T>);

impl<T: Send> Lock<T> for LoomLock<T> {
    fn new(value: T) -> Self {
        LoomLock(loom::sync::Mutex::new(value))
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.lock().unwrap())
    }
}

/// The shells' mailbox with loom's lock.
pub type LoomMailbox<T> = Mailbox<T, LoomLock<MailboxState<T>>>;

/// What one exploration did.
#[derive(Debug)]
pub struct Explored {
    /// Executions loom ran (each a complete interleaving).
    pub executions: usize,
    /// The first failure's message, if an execution failed.
    pub failure: Option<String>,
    /// Wall time.
    pub seconds: f64,
}

/// Explores every interleaving of `f` within `preemptions`.
#[allow(clippy::disallowed_methods)] // wall time only for the printed figures
pub fn explore(preemptions: usize, f: impl Fn() + Sync + Send + 'static) -> Explored {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let start = std::time::Instant::now();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(preemptions);
        b.check(move || {
            c.fetch_add(1, Ordering::Relaxed);
            f();
        });
    }));
    let failure = result.err().map(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())
    });
    Explored {
        executions: count.load(Ordering::Relaxed),
        failure,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// Runs the ignored test `name` of this test binary in a child process (loom
/// aborts the process on a deadlock); its exit success and its stderr.
pub fn in_child(name: &str) -> (bool, String) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MCP_STREAMABLE_LOOM_CHILD", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

/// Whether this process is such a child (the ignored tests refuse to run otherwise).
pub fn is_child() -> bool {
    std::env::var_os("MCP_STREAMABLE_LOOM_CHILD").is_some()
}
