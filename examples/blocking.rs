//! An MCP server on `std::net` alone: a thread per connection, no async
//! runtime. It serves the reference tool set (the conformance suite's) at
//! `/mcp`, with the FIXED policy, and shows the whole embedding of the core:
//! every MCP decision (statuses, headers, bytes, whole body or stream, when an
//! exchange is over) comes out of [`ServerDriver`]; this file only moves bytes
//! and time.
//!
//! ```sh
//! cargo run --release --example blocking -- --addr 127.0.0.1:3001 [--monitor]
//! ```
//!
//! One driver serves every session, behind one mutex: a connection thread
//! locks it to hand in a request, then writes what the driver gives its
//! exchange, from a channel, without the lock. A timer thread hands in time.
//! With `--monitor` the monitor watches every observation and each violation
//! is printed the moment it is found.

// A transport is where the clock is read (the cores never do).
#![allow(clippy::disallowed_methods)]

use mcp_streamable::app::Tap;
use mcp_streamable::head::{Method, RequestHead};
use mcp_streamable::ids::HttpId;
use mcp_streamable::policy::ServerPolicy;
use mcp_streamable::server::wire::{WireHead, Write};
use mcp_streamable::server::{EndpointConfig, ServerDriver, ServerEndpoint, UnreadBody};
use mcp_streamable::time::Instant;
use mcp_streamable_check::monitor;
use mcp_streamable_hyper::EverythingApp;
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Longest request head we read: a longer one (a header line without end
/// included: a line is read at most this far) closes the connection.
const HEAD_BYTES_MAX: usize = 64 * 1024;
/// Connections served at once, each on its own thread; newcomers wait in
/// the kernel's backlog until one closes.
const CONNECTIONS_MAX: usize = 256;
/// How long a connection may take to send a whole request head (or stay
/// idle between keep-alive requests), and a body, before it is closed: a
/// silent client does not keep its thread.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a waiting stream checks that its peer is still there, and the
/// timer thread looks for a new, earlier deadline.
const TICK: Duration = Duration::from_millis(50);

/// The driver and, for each exchange it is answering, where its writes go.
struct State {
    driver: ServerDriver<EverythingApp>,
    outboxes: BTreeMap<HttpId, Sender<Write>>,
}

struct Server {
    state: Mutex<State>,
    start: std::time::Instant,
}

impl Server {
    fn now(&self) -> Instant {
        Instant::from_millis(self.start.elapsed().as_millis() as u64)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl State {
    /// Hands every ready write to its exchange's connection thread.
    fn flush(&mut self) {
        while let Some((http, write)) = self.driver.poll_write() {
            let ends = write.ends();
            if let Some(outbox) = self.outboxes.get(&http) {
                let _ = outbox.send(write);
            }
            if ends {
                self.outboxes.remove(&http);
            }
        }
    }
}

fn main() {
    let mut addr: SocketAddr = "127.0.0.1:3001".parse().expect("an address");
    let mut monitor = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => match args.next().map(|a| a.parse()) {
                Some(Ok(a)) => addr = a,
                _ => exit("--addr HOST:PORT"),
            },
            "--monitor" => monitor = true,
            _ => exit("usage: blocking [--addr HOST:PORT] [--monitor]"),
        }
    }
    let listener = TcpListener::bind(addr).unwrap_or_else(|e| exit(&format!("{addr}: {e}")));
    // The tools whose arguments a 2026-07-28 call mirrors as Mcp-Param-*
    // headers (SEP-2243), as the application lists them: checked at the door.
    let config = EndpointConfig {
        tool_headers: mcp_streamable_hyper::everything::tool_headers(),
        ..EndpointConfig::default()
    };
    let ep = ServerEndpoint::new(config, ServerPolicy::FIXED);
    let seed = std::process::id().into();
    let driver =
        ServerDriver::new(ep, EverythingApp::default(), seed).with_tap(monitor.then(watch));
    let server = Arc::new(Server {
        state: Mutex::new(State {
            driver,
            outboxes: BTreeMap::new(),
        }),
        start: std::time::Instant::now(),
    });
    let timers = server.clone();
    thread::spawn(move || keep_time(&timers));
    println!(
        "blocking example serving http://{}/mcp",
        listener.local_addr().unwrap_or(addr)
    );
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming().flatten() {
        while open.load(Ordering::Acquire) >= CONNECTIONS_MAX {
            thread::sleep(TICK);
        }
        open.fetch_add(1, Ordering::AcqRel);
        let (server, open) = (server.clone(), open.clone());
        thread::spawn(move || {
            let _ = serve_connection(&server, stream);
            open.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

fn exit(why: &str) -> ! {
    eprintln!("{why}");
    std::process::exit(2)
}

/// A monitor judging every observation; each violation printed when found.
fn watch() -> Arc<Mutex<Tap>> {
    Arc::new(Mutex::new(monitor::watching(|v| {
        println!("monitor violation {} {:?}: {}", v.id, v.http, v.detail)
    })))
}

/// Hands the driver time whenever it asked for it.
fn keep_time(server: &Server) {
    loop {
        let due = server.lock().driver.poll_timeout();
        let now = server.now();
        match due {
            Some(at) if at <= now => {
                let mut state = server.lock();
                state.driver.handle_timeout(now);
                state.flush();
            }
            Some(at) => {
                thread::sleep(TICK.min(Duration::from_millis(at.as_millis() - now.as_millis())))
            }
            None => thread::sleep(TICK),
        }
    }
}

/// Requests on one connection, one after the other (HTTP/1.1 keep-alive).
fn serve_connection(server: &Server, stream: TcpStream) -> io::Result<()> {
    let peer = stream.peer_addr().ok().map(|a| a.ip());
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let Some((path, head, body)) = read_request(&mut reader)? else {
            return Ok(());
        };
        if path.split('?').next() != Some("/mcp") {
            out.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")?;
            continue;
        }
        // A body left unread (too large, chunked) leaves the connection
        // unusable after the answer, as does a client that asks to close.
        let last = body.is_err()
            || head
                .header("connection")
                .is_some_and(|c| c.eq_ignore_ascii_case("close"));
        let (tx, rx) = channel();
        let http = {
            let mut state = server.lock();
            let now = server.now();
            let body = body.as_deref().map_err(|why| *why);
            let caller = mcp_streamable::principal::Caller::from_peer(peer);
            let http = state.driver.handle_request(&head, body, &caller, now);
            state.outboxes.insert(http, tx);
            state.flush();
            http
        };
        if !answer(server, http, &rx, &mut out)? || last {
            return Ok(());
        }
    }
}

/// Writes exchange `http`'s answer as the driver gives it. `Ok(false)`: the
/// connection cannot go on (the peer left mid-stream).
fn answer(
    server: &Server,
    http: HttpId,
    rx: &Receiver<Write>,
    out: &mut TcpStream,
) -> io::Result<bool> {
    let mut streaming = false;
    loop {
        let write = match rx.recv_timeout(TICK) {
            Ok(w) => w,
            Err(RecvTimeoutError::Timeout) if peer_gone(out) => return closed(server, http),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return closed(server, http),
        };
        let sent = match &write {
            Write::Whole { head, body } => {
                write_head(out, head, Some(body.len())).and_then(|()| out.write_all(body))
            }
            Write::Open { head, body } => {
                streaming = true;
                write_head(out, head, None).and_then(|()| write_chunk(out, body))
            }
            Write::More(body) => write_chunk(out, body),
            Write::Last(body) => write_chunk(out, body).and_then(|()| out.write_all(b"0\r\n\r\n")),
        };
        if sent.and_then(|()| out.flush()).is_err() {
            return closed(server, http);
        }
        if write.ends() {
            return Ok(true);
        }
        debug_assert!(streaming, "only a stream has more than one write");
    }
}

/// The peer went away before its answer ended: tell the driver.
fn closed(server: &Server, http: HttpId) -> io::Result<bool> {
    let mut state = server.lock();
    state.outboxes.remove(&http);
    let now = server.now();
    state.driver.handle_http_closed(http, now);
    state.flush();
    Ok(false)
}

/// Whether the peer closed its side (a read would return end of file).
fn peer_gone(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let gone = match stream.peek(&mut [0u8; 1]) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    };
    gone || stream.set_nonblocking(false).is_err()
}

fn write_head(out: &mut TcpStream, head: &WireHead, length: Option<usize>) -> io::Result<()> {
    let mut text = format!("HTTP/1.1 {} {}\r\n", head.status, reason(head.status));
    for (name, value) in &head.headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    match length {
        Some(n) => text.push_str(&format!("content-length: {n}\r\n\r\n")),
        None => text.push_str("transfer-encoding: chunked\r\n\r\n"),
    }
    out.write_all(text.as_bytes())
}

fn write_chunk(out: &mut TcpStream, bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    out.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
    out.write_all(bytes)?;
    out.write_all(b"\r\n")
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// One line, of at most `max` bytes plus one (a longer one is cut there,
/// and the caller sees it did not end).
fn read_line(
    reader: &mut BufReader<TcpStream>,
    line: &mut String,
    max: usize,
) -> io::Result<usize> {
    reader.by_ref().take(max as u64 + 1).read_line(line)
}

/// The next request: its path, its head as the core reads it, and its body
/// (`Content-Length` framing; a body the core would refuse is not read).
/// `None` at a clean end of the connection.
#[allow(clippy::type_complexity)]
fn read_request(
    reader: &mut BufReader<TcpStream>,
) -> io::Result<Option<(String, RequestHead, Result<Vec<u8>, UnreadBody>)>> {
    let mut line = String::new();
    if read_line(reader, &mut line, HEAD_BYTES_MAX)? == 0 {
        return Ok(None);
    }
    if !line.ends_with('\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "request line too long",
        ));
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "bad request line",
        ));
    };
    let mut head = RequestHead::new(Method::parse(method));
    let path = path.to_owned();
    let mut read = line.len();
    loop {
        line.clear();
        read += read_line(reader, &mut line, HEAD_BYTES_MAX.saturating_sub(read))?;
        if read > HEAD_BYTES_MAX || !line.ends_with('\n') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "head too large or cut short",
            ));
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        if let Some((name, value)) = l.split_once(':') {
            head = head.with(name.trim(), value.trim());
        }
    }
    let body = match mcp_streamable::server::body_limit(&head, EndpointConfig::default().body_max) {
        Err(why) => Err(why),
        Ok(_) if head.header("transfer-encoding").is_some() => Err(UnreadBody::Unreadable),
        Ok(_) => {
            let length = head
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body)?;
            Ok(body)
        }
    };
    Ok(Some((path, head, body)))
}
