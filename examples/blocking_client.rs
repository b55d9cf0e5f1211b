//! An MCP client on `std::net` alone: a thread per HTTP exchange, no async
//! runtime. It initializes a session (or, in the 2026-07-28 era, discovers
//! the server), calls one tool, prints the answer and closes. Every MCP
//! decision (headers, request ids, the era and its fallback, which stream
//! carries what, resuming a broken stream with `Last-Event-ID`, timeouts,
//! when a request has failed) comes out of [`ClientSession`]; this file only
//! moves bytes and time, as `examples/blocking.rs` does for the server.
//!
//! ```sh
//! cargo run --release --example blocking_client -- --url http://127.0.0.1:3001/mcp \
//!     [--tool echo] [--args '{"text":"hi"}'] [--era v2025|v2026|auto]
//! ```
//!
//! The main thread owns the core: it hands each exchange the core starts to
//! a thread of its own, which connects, writes the request and reads the response
//! (a whole JSON body up to the core's `body_max`, or SSE events through
//! [`SseDecoder`]), and it waits on what those threads send back or on the
//! core's next deadline, whichever comes first. Exit code 0 when the tool
//! answered with a result, 1 when it answered with an error or failed.

// A transport is where the clock is read (the cores never do).
#![allow(clippy::disallowed_methods)]

use mcp_streamable::client::{
    ClientConfig, ClientEra, ClientEvent, ClientOutput, ClientSession, ClientTransmitKind,
    ServerRequests,
};
use mcp_streamable::head::{Content, Method, RequestHead, ResponseHead};
use mcp_streamable::ids::{HttpId, RequestId};
use mcp_streamable::jsonrpc::RawJson;
use mcp_streamable::policy::ClientPolicy;
use mcp_streamable::sse::{SseDecoder, SseError, SseItem};
use mcp_streamable::time::Instant;
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write as _};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Longest response head we read (status line and headers); a longer one
/// ends the exchange, which the core then treats as a broken connection.
const HEAD_BYTES_MAX: usize = 64 * 1024;
/// Longest chunk-size line of a chunked body.
const CHUNK_LINE_MAX: usize = 1024;
/// How long closing (the session's DELETE) may take before we leave anyway.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// What an exchange's thread hands back to the core.
enum Input {
    Head(HttpId, ResponseHead),
    Body(HttpId, Vec<u8>),
    Sse(HttpId, SseItem),
    /// Part of the answer was over this many bytes and was not read.
    TooLarge(HttpId, usize),
    Closed(HttpId),
}

/// An exchange's connection as its thread makes it: the core's abort
/// reaches it whenever it comes (before the connection is made included),
/// while the main thread never waits on a connect.
#[derive(Default)]
struct Line {
    stream: Option<TcpStream>,
    aborted: bool,
}

type Lines = BTreeMap<HttpId, Arc<Mutex<Line>>>;

/// Where the server is.
#[derive(Clone)]
struct Target {
    authority: String,
    path: String,
}

struct Args {
    target: Target,
    tool: String,
    arguments: serde_json::Value,
    era: ClientEra,
}

fn main() {
    let args = args();
    let start = std::time::Instant::now();
    let now = || Instant::from_millis(start.elapsed().as_millis() as u64);
    let config = ClientConfig {
        era: args.era,
        // Nobody here answers sampling or elicitation: the core declines them.
        server_requests: ServerRequests::Decline,
        ..ClientConfig::default()
    };
    let mut core = ClientSession::new(config, ClientPolicy::FIXED);
    let params = RawJson::from(serde_json::json!({
        "capabilities": {},
        "clientInfo": {"name": "blocking-client", "version": env!("CARGO_PKG_VERSION")}
    }));
    if let Err(e) = core.initialize(params, now()) {
        exit(&format!("initialize: {e}"));
    }
    let (inputs, rx) = channel();
    // Each open exchange's line, to shut it down when the core aborts it.
    let mut open = Lines::new();
    let mut call: Option<RequestId> = None;
    let mut answered: Option<bool> = None;
    let mut closing: Option<std::time::Instant> = None;
    loop {
        let events = drain(&mut core, &mut open, &args.target, &inputs);
        for event in &events {
            match event {
                ClientEvent::Initialized {
                    version,
                    session_id,
                    ..
                } => {
                    match session_id {
                        Some(sid) => println!("initialized: {version}, session {sid}"),
                        None => println!("initialized: {version}, no session"),
                    }
                    let params = RawJson::from(serde_json::json!({
                        "name": args.tool, "arguments": args.arguments
                    }));
                    match core.send_request("tools/call", Some(params), now()) {
                        Ok(id) => call = Some(id),
                        Err(e) => exit(&format!("tools/call: {e}")),
                    }
                }
                ClientEvent::Response { id, result } if Some(id) == call.as_ref() => {
                    match result {
                        Ok(r) => println!("result: {}", r.to_value()),
                        Err(e) => println!("error: {} {}", e.code, e.message),
                    }
                    answered = Some(result.is_ok());
                }
                ClientEvent::Failed { id, error } => {
                    println!("failed: {id:?}: {error}");
                    answered = Some(false);
                }
                ClientEvent::Notification { method, .. } => println!("notification: {method}"),
                ClientEvent::SessionLost => {
                    println!("session lost");
                    answered = answered.or(Some(false));
                }
                _ => {}
            }
        }
        if answered.is_some() && closing.is_none() {
            core.close(now());
            closing = Some(std::time::Instant::now());
            continue;
        }
        if !events.is_empty() {
            continue; // what the application did may have given the core work
        }
        if let Some(since) = closing {
            if open.is_empty() || since.elapsed() > CLOSE_WAIT {
                break;
            }
        }
        // Wait for an exchange's news or the core's next deadline.
        let wait = core
            .poll_timeout()
            .map(|(at, _)| at.saturating_duration_since(now()))
            .unwrap_or(Duration::from_millis(250));
        match rx.recv_timeout(wait) {
            Ok(input) => feed(&mut core, &mut open, input, now()),
            Err(RecvTimeoutError::Timeout) => core.handle_timeout(now()),
            Err(RecvTimeoutError::Disconnected) => unreachable!("we hold a sender"),
        }
    }
    std::process::exit(if answered == Some(true) { 0 } else { 1 });
}

/// The core's observed drain: requests onto connections of their own,
/// aborts to their sockets; the events, for the application.
fn drain(
    core: &mut ClientSession,
    open: &mut Lines,
    target: &Target,
    inputs: &Sender<Input>,
) -> Vec<ClientEvent> {
    let mut events = Vec::new();
    let body_max = core.config().body_max;
    core.drain_observed(0, &mut |_| {}, |_, out, _| match out {
        ClientOutput::Transmit(t) => match t.kind {
            ClientTransmitKind::Send { head, body } => {
                let (http, line) = (t.http, Arc::<Mutex<Line>>::default());
                open.insert(http, line.clone());
                let (target, inputs) = (target.clone(), inputs.clone());
                thread::spawn(move || {
                    // Whatever ends it (no connection included), the core hears it
                    // ended, as a broken exchange.
                    let _ = exchange(&line, &target, http, head, &body, body_max, &inputs);
                    let _ = inputs.send(Input::Closed(http));
                });
            }
            ClientTransmitKind::Abort => {
                if let Some(line) = open.remove(&t.http) {
                    let mut line = lock(&line);
                    line.aborted = true;
                    if let Some(s) = line.stream.take() {
                        let _ = s.shutdown(Shutdown::Both);
                    }
                }
            }
        },
        ClientOutput::Event(e) => events.push(e),
    });
    events
}

/// One input from an exchange's thread, for the core. News of an exchange
/// the core already aborted is dropped: it is over for the core.
fn feed(core: &mut ClientSession, open: &mut Lines, input: Input, now: Instant) {
    let http = match &input {
        Input::Head(h, _) | Input::Body(h, _) | Input::Sse(h, _) | Input::TooLarge(h, _) => *h,
        Input::Closed(h) => *h,
    };
    if !open.contains_key(&http) {
        return;
    }
    match input {
        Input::Head(h, head) => core.handle_response_head(h, head, now),
        Input::Body(h, body) => core.handle_body(h, &body, now),
        Input::Sse(h, item) => core.handle_sse_event(h, item, now),
        Input::TooLarge(h, max) => core.handle_too_large(h, max),
        Input::Closed(h) => {
            open.remove(&h);
            core.handle_http_closed(h, now);
        }
    }
}

/// Connects, writes one request and reads its response, handing each part
/// back.
fn exchange(
    line: &Mutex<Line>,
    target: &Target,
    http: HttpId,
    head: RequestHead,
    body: &[u8],
    body_max: usize,
    inputs: &Sender<Input>,
) -> io::Result<()> {
    let stream = TcpStream::connect(&target.authority)?;
    {
        let mut line = lock(line);
        if line.aborted {
            return Ok(()); // aborted while connecting
        }
        line.stream = Some(stream.try_clone()?);
    }
    let mut request = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        head.method.as_str(),
        target.path,
        target.authority
    );
    for (name, value) in &head.headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || head.method == Method::Post {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    let mut writer = stream.try_clone()?;
    writer.write_all(request.as_bytes())?;
    writer.write_all(body)?;
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader)?;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let chunked =
        header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let length = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
    let response = ResponseHead::from_wire(
        status,
        headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
    );
    let content = response.content;
    send(inputs, Input::Head(http, response))?;
    let mut body: Box<dyn Read> = if chunked {
        Box::new(Chunked {
            inner: reader,
            left: 0,
            done: false,
        })
    } else if let Some(n) = length {
        Box::new(reader.take(n))
    } else {
        Box::new(reader) // until the server closes
    };
    match content {
        Content::Sse => {
            let mut decoder = SseDecoder::new();
            let (mut buf, mut items) = (vec![0u8; 16 * 1024], Vec::new());
            loop {
                let n = body.read(&mut buf)?;
                if n == 0 {
                    return Ok(());
                }
                let over = decoder.feed(&buf[..n], &mut items).err();
                for item in items.drain(..) {
                    send(inputs, Input::Sse(http, item))?;
                }
                // An event over the decoder's bound was dropped: say so.
                if let Some(SseError::LineTooLong { max } | SseError::DataTooLong { max }) = over {
                    send(inputs, Input::TooLarge(http, max))?;
                }
            }
        }
        Content::Json | Content::None => {
            // One byte past the bound tells a body over it from one at it.
            let mut whole = Vec::new();
            body.take(body_max as u64 + 1).read_to_end(&mut whole)?;
            if whole.len() > body_max {
                send(inputs, Input::TooLarge(http, body_max))
            } else if whole.is_empty() {
                Ok(()) // says nothing the head did not
            } else {
                send(inputs, Input::Body(http, whole))
            }
        }
    }
}

fn lock(line: &Mutex<Line>) -> std::sync::MutexGuard<'_, Line> {
    line.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn send(inputs: &Sender<Input>, input: Input) -> io::Result<()> {
    inputs
        .send(input)
        .map_err(|_| io::Error::other("the client is gone"))
}

/// The status and headers of a response, at most `HEAD_BYTES_MAX` read.
fn read_head(reader: &mut impl BufRead) -> io::Result<(u16, Vec<(String, String)>)> {
    let mut budget = HEAD_BYTES_MAX;
    let status_line = read_line(reader, &mut budget)?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no status line"))?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader, &mut budget)?;
        if line.is_empty() {
            return Ok((status, headers));
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
}

/// One line without its CRLF, read no further than what is left of `budget`.
fn read_line(reader: &mut impl BufRead, budget: &mut usize) -> io::Result<String> {
    let mut line = Vec::new();
    let read = reader.take(*budget as u64).read_until(b'\n', &mut line)?;
    *budget -= read;
    if !line.ends_with(b"\n") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "line without end",
        ));
    }
    while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// A chunked body, its framing taken off.
struct Chunked<R> {
    inner: R,
    /// Bytes left in the current chunk.
    left: u64,
    done: bool,
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut budget = CHUNK_LINE_MAX;
            let line = read_line(&mut self.inner, &mut budget)?;
            let size = line.split(';').next().unwrap_or("").trim();
            self.left = u64::from_str_radix(size, 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            if self.left == 0 {
                // Trailers, then the end.
                while !read_line(&mut self.inner, &mut budget)?.is_empty() {}
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.left -= n as u64;
        if self.left == 0 {
            let mut budget = CHUNK_LINE_MAX;
            read_line(&mut self.inner, &mut budget)?; // the chunk's CRLF
        }
        Ok(n)
    }
}

fn args() -> Args {
    let mut url = "http://127.0.0.1:3001/mcp".to_owned();
    let mut tool = "echo".to_owned();
    let mut arguments = serde_json::json!({"text": "hello from std::net"});
    let mut era = ClientEra::V2025;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match (arg.as_str(), it.next()) {
            ("--url", Some(u)) => url = u,
            ("--tool", Some(t)) => tool = t,
            ("--args", Some(a)) => {
                arguments = serde_json::from_str(&a).unwrap_or_else(|e| exit(&format!("--args: {e}")))
            }
            ("--era", Some(e)) => {
                era = match e.as_str() {
                    "v2025" => ClientEra::V2025,
                    "v2026" => ClientEra::V2026,
                    "auto" => ClientEra::Auto,
                    _ => exit("--era v2025|v2026|auto"),
                }
            }
            _ => exit("usage: blocking_client [--url http://HOST:PORT/PATH] [--tool NAME] [--args JSON] [--era v2025|v2026|auto]"),
        }
    }
    let rest = url
        .strip_prefix("http://")
        .unwrap_or_else(|| exit("--url must be http://HOST:PORT/PATH"));
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Args {
        target: Target {
            authority: authority.to_owned(),
            path: path.to_owned(),
        },
        tool,
        arguments,
        era,
    }
}

fn exit(why: &str) -> ! {
    eprintln!("{why}");
    std::process::exit(2)
}
