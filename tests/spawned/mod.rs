//! A server a test starts as a process of its own (our binary, a built
//! example) on a free loopback port: its URL is read from the first line it
//! prints (`… http://HOST:PORT/PATH …`); it is killed when dropped.
#![allow(dead_code)]

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

/// The running server.
pub struct Spawned {
    child: Child,
    /// The URL it printed.
    pub url: String,
}

impl Spawned {
    /// Runs `command` and waits for the line that names its URL.
    pub fn start(mut command: Command) -> Self {
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no serving URL in: {line}"))
            .to_owned();
        Spawned { child, url }
    }

    /// The address of its URL.
    pub fn addr(&self) -> SocketAddr {
        self.url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {}", self.url))
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// A built example (`cargo test` builds them beside the test binaries).
pub fn example(name: &str) -> Command {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        bin.exists(),
        "{} (cargo test builds the examples)",
        bin.display()
    );
    Command::new(bin)
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
