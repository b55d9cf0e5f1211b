//! The prober's HTTP: one request per connection, its body read in the
//! background and decoded as it arrives (SSE events or a JSON body), so a
//! probe can hold several streams open and look at them when it wants.
//! Dropping an [`Open`] closes its connection, which is how the prober
//! "loses" a stream.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use mcp_streamable::headers;
use mcp_streamable::sse::{SseDecoder, SseItem};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Connect and response-head timeout: a server that does not answer within
/// it "could not be tested" rather than hanging the prober.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// What [`Target::no_answer`] says when a request's head did not come
/// within [`HEAD_TIMEOUT`] (the server took the request and said nothing).
pub const NO_HEAD: &str = "no response head within";

/// Body bytes an [`Open`] keeps (a JSON answer is read no further; an SSE
/// stream is read on, its bytes past this not kept): the server under test
/// may be hostile, and evidence needs only the start.
pub const BODY_KEPT_MAX: usize = 1 << 20;

/// SSE events an [`Open`] keeps; later ones are counted, not kept (a
/// server may send events without end, and every rule looks at the first).
pub const EVENTS_KEPT_MAX: usize = 1024;

/// Chunks read ahead of the probe before the reader waits for it.
const CHUNKS_QUEUED_MAX: usize = 64;

/// Event kinds a [`Open::summary`] names before it says how many more.
const SUMMARY_EVENTS_MAX: usize = 16;

/// One SSE event as seen on the wire.
#[derive(Clone, Debug)]
pub struct Event {
    /// Its `id` field.
    pub id: Option<String>,
    /// The parsed `data`, `None` for an event without data (priming).
    pub message: Option<Value>,
}

enum Chunk {
    Item(SseItem),
    Raw(Bytes),
    /// A JSON body went past [`BODY_KEPT_MAX`] and was read no further.
    Over,
    End,
}

/// A request whose answer is being read.
pub struct Open {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`, lower case, parameters stripped.
    pub content_type: String,
    /// `Mcp-Session-Id` of the answer.
    pub session: Option<String>,
    /// SSE events so far, in order.
    pub events: Vec<Event>,
    /// The `retry` values seen.
    pub retries: Vec<u64>,
    /// Body bytes so far (a JSON answer's whole body once ended), at most
    /// [`BODY_KEPT_MAX`].
    pub body: Vec<u8>,
    /// Body bytes that arrived past [`BODY_KEPT_MAX`] and were not kept
    /// (a JSON body: at least one; it was read no further).
    pub body_over: usize,
    /// SSE events that arrived past [`EVENTS_KEPT_MAX`] and were not kept.
    pub events_over: usize,
    /// The server ended the body.
    pub ended: bool,
    rx: mpsc::Receiver<Chunk>,
    tasks: [JoinHandle<()>; 2],
}

impl Drop for Open {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Open {
    /// An answer whose head arrived: nothing of its body taken in yet.
    fn new(
        status: u16,
        content_type: String,
        session: Option<String>,
        rx: mpsc::Receiver<Chunk>,
        tasks: [JoinHandle<()>; 2],
    ) -> Open {
        Open {
            status,
            content_type,
            session,
            events: Vec::new(),
            retries: Vec::new(),
            body: Vec::new(),
            body_over: 0,
            events_over: 0,
            ended: false,
            rx,
            tasks,
        }
    }

    /// An ended SSE answer carrying `messages`, for the rules' unit tests.
    #[cfg(test)]
    pub fn canned(status: u16, messages: &[Value]) -> Open {
        let (_tx, rx) = mpsc::channel(1);
        let idle = || tokio::spawn(async {});
        let mut o = Open::new(
            status,
            headers::MIME_SSE.to_owned(),
            None,
            rx,
            [idle(), idle()],
        );
        for m in messages {
            o.take(Chunk::Item(SseItem::Message {
                id: None,
                event: None,
                data: m.to_string(),
            }));
        }
        o.ended = true;
        o
    }

    /// Takes in one chunk; whether anything kept changed (past the bounds
    /// nothing does, so a condition already false stays false).
    fn take(&mut self, c: Chunk) -> bool {
        let full = self.events.len() >= EVENTS_KEPT_MAX;
        match c {
            Chunk::Item(SseItem::Message { .. } | SseItem::NoMessage { .. }) if full => {
                self.events_over += 1;
                return false;
            }
            Chunk::Item(SseItem::Message { id, data, .. }) => self.events.push(Event {
                id,
                message: Some(serde_json::from_str(&data).unwrap_or(Value::String(data))),
            }),
            Chunk::Item(SseItem::NoMessage { id }) => self.events.push(Event { id, message: None }),
            Chunk::Item(SseItem::Retry(ms)) if self.retries.len() < EVENTS_KEPT_MAX => {
                self.retries.push(ms)
            }
            Chunk::Item(SseItem::Retry(_)) => return false,
            Chunk::Raw(b) => {
                let room = BODY_KEPT_MAX.saturating_sub(self.body.len());
                self.body.extend_from_slice(&b[..b.len().min(room)]);
                self.body_over += b.len().saturating_sub(room);
                return room > 0;
            }
            Chunk::Over => self.body_over = self.body_over.max(1),
            Chunk::End => self.ended = true,
        }
        true
    }

    /// Takes in what arrived for up to `window`, returning early once the body ends.
    pub async fn gather(&mut self, window: Duration) {
        let deadline = tokio::time::Instant::now() + window;
        while !self.ended {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(c)) => {
                    self.take(c);
                }
                Ok(None) => self.ended = true,
                Err(_) => return,
            }
        }
    }

    /// Takes in what arrived until `done` holds or `window` passes; whether it holds.
    pub async fn until(&mut self, window: Duration, done: impl Fn(&Open) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + window;
        let mut changed = true;
        while !(changed && done(self)) {
            if self.ended {
                return false;
            }
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(c)) => changed = self.take(c),
                Ok(None) => {
                    self.ended = true;
                    changed = true;
                }
                Err(_) => return false,
            }
        }
        true
    }

    /// Takes in whatever has already arrived, without waiting.
    pub fn poll(&mut self) {
        while let Ok(c) = self.rx.try_recv() {
            self.take(c);
        }
    }

    /// Every JSON-RPC message received: SSE data, or the JSON body (one
    /// object or a batch) once it ended.
    pub fn messages(&self) -> Vec<Value> {
        if self.content_type == headers::MIME_JSON {
            return match serde_json::from_slice::<Value>(&self.body) {
                Ok(Value::Array(v)) => v,
                Ok(v) => vec![v],
                Err(_) => Vec::new(),
            };
        }
        self.events
            .iter()
            .filter_map(|e| e.message.clone())
            .collect()
    }

    /// Whether the answer is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.content_type == headers::MIME_SSE
    }

    /// The last event id seen.
    pub fn last_id(&self) -> Option<String> {
        self.events.iter().rev().find_map(|e| e.id.clone())
    }

    /// A one-line summary for evidence.
    pub fn summary(&self) -> String {
        let mut s = format!("{}", self.status);
        if !self.content_type.is_empty() {
            s.push(' ');
            s.push_str(&self.content_type);
        }
        if self.is_sse() {
            let mut kinds: Vec<String> = self
                .events
                .iter()
                .take(SUMMARY_EVENTS_MAX)
                .map(describe_event)
                .collect();
            let more = self.events.len().saturating_sub(SUMMARY_EVENTS_MAX) + self.events_over;
            if more > 0 {
                kinds.push(format!("and {more} more"));
            }
            s.push_str(&format!(" [{}]", kinds.join(", ")));
        } else if self.body_over > 0 {
            s.push_str(&format!(
                " over {BODY_KEPT_MAX} body bytes (read no further)"
            ));
        } else if !self.body.is_empty() {
            s.push_str(&format!(" {} body bytes", self.body.len()));
        }
        if self.ended {
            s.push_str(" ended");
        }
        s
    }
}

fn describe_event(e: &Event) -> String {
    let what = match &e.message {
        None => "priming".to_owned(),
        Some(m) => describe(m),
    };
    match &e.id {
        Some(id) => format!("{id}:{what}"),
        None => what,
    }
}

/// The conformance suite's tool that reports progress before its result.
pub const PROGRESS_TOOL: &str = "test_tool_with_progress";

/// Whether `o` carries a result (not an error) for request `id`.
pub fn has_result(o: &Open, id: u64) -> bool {
    o.messages()
        .iter()
        .any(|m| is_response_to(m, id) && m.get("result").is_some())
}

/// The tool names a `tools/list` answer to `id` lists.
pub fn tool_names(o: &Open, id: u64) -> Vec<String> {
    o.messages()
        .iter()
        .filter(|m| is_response_to(m, id))
        .filter_map(|m| {
            m.pointer("/result/tools")
                .and_then(Value::as_array)
                .cloned()
        })
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// `method` for requests and notifications, `response#id` for responses.
pub fn describe(m: &Value) -> String {
    if let Some(method) = m.get("method").and_then(Value::as_str) {
        return method.trim_start_matches("notifications/").to_owned();
    }
    match m.get("id") {
        Some(id) => format!("response#{id}"),
        None => "?".to_owned(),
    }
}

/// Whether `m` is a response (result or error).
pub fn is_response(m: &Value) -> bool {
    m.get("method").is_none() && (m.get("result").is_some() || m.get("error").is_some())
}

/// Whether `m` is the response to request `id`.
pub fn is_response_to(m: &Value, id: u64) -> bool {
    is_response(m) && m.get("id").and_then(Value::as_u64) == Some(id)
}

/// Whether `m` is a `…/list_changed` notification: never related to a request.
pub fn is_list_changed(m: &Value) -> bool {
    m.get("method")
        .and_then(Value::as_str)
        .is_some_and(|s| s.starts_with("notifications/") && s.ends_with("list_changed"))
}

/// The server under test.
pub struct Target {
    /// Resolved address.
    pub addr: std::net::SocketAddr,
    /// `Host` to send.
    pub authority: String,
    /// Path of the MCP endpoint.
    pub path: String,
    /// Why the last request got no answer ([`Target::no_answer`]).
    pub failure: std::sync::Mutex<Option<String>>,
    /// The `Authorization` every request carries unless it names its own
    /// (`probe --bearer`): the principal the probe's sessions belong to.
    pub authorization: Option<String>,
}

impl Target {
    /// "no answer", with why when the last request failed for a reason
    /// (connection refused, a head that is not HTTP, a timeout).
    pub fn no_answer(&self) -> String {
        match self.failure.lock().unwrap().as_deref() {
            Some(why) => format!("no answer ({why})"),
            None => "no answer".to_owned(),
        }
    }

    fn failed<T>(&self, why: impl std::fmt::Display) -> Option<T> {
        *self.failure.lock().unwrap() = Some(why.to_string());
        None
    }

    /// Sends one request on its own connection; the body is read in the background.
    pub async fn open(
        &self,
        method: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> Option<Open> {
        let stream =
            match tokio::time::timeout(HEAD_TIMEOUT, tokio::net::TcpStream::connect(self.addr))
                .await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return self.failed(e),
                Err(_) => return self.failed("connect timed out"),
            };
        stream.set_nodelay(true).ok()?;
        let (mut sender, conn) =
            match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
                Ok(h) => h,
                Err(e) => return self.failed(e),
            };
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut b = hyper::Request::builder()
            .method(method)
            .uri(self.path.as_str())
            .header(headers::HOST, self.authority.as_str());
        for (n, v) in headers {
            b = b.header(n.as_str(), v.as_str());
        }
        let own = headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(headers::AUTHORIZATION));
        if let (Some(a), false) = (&self.authorization, own) {
            b = b.header(headers::AUTHORIZATION, a.as_str());
        }
        let req = b.body(Full::new(Bytes::from(body.to_owned()))).ok()?;
        let resp = match tokio::time::timeout(HEAD_TIMEOUT, sender.send_request(req)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                driver.abort();
                return self.failed(e);
            }
            Err(_) => {
                driver.abort();
                return self.failed(format!("{NO_HEAD} {HEAD_TIMEOUT:?}"));
            }
        };
        *self.failure.lock().unwrap() = None;
        let status = resp.status().as_u16();
        let header = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let session = header(headers::MCP_SESSION_ID);
        let content_type = header(headers::CONTENT_TYPE)
            .map(|c| {
                c.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .unwrap_or_default();
        let sse = content_type == headers::MIME_SSE;
        let (tx, rx) = mpsc::channel(CHUNKS_QUEUED_MAX);
        let mut body = resp.into_body();
        let reader = tokio::spawn(async move {
            let mut decoder = SseDecoder::new();
            let mut items = Vec::new();
            let mut read = 0usize;
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                read += data.len();
                if sse {
                    let _ = decoder.feed(&data, &mut items);
                    for i in items.drain(..) {
                        if tx.send(Chunk::Item(i)).await.is_err() {
                            return;
                        }
                    }
                } else if read > BODY_KEPT_MAX {
                    let _ = tx.send(Chunk::Over).await;
                    break;
                }
                let kept = read - data.len() < BODY_KEPT_MAX;
                if kept && tx.send(Chunk::Raw(data)).await.is_err() {
                    return;
                }
            }
            let _ = tx.send(Chunk::End).await;
        });
        Some(Open::new(
            status,
            content_type,
            session,
            rx,
            [driver, reader],
        ))
    }

    /// Sends one request and reads its answer for up to `window`.
    pub async fn send(
        &self,
        method: &str,
        headers: &[(String, String)],
        body: &str,
        window: Duration,
    ) -> Option<Open> {
        let mut o = self.open(method, headers, body).await?;
        o.gather(window).await;
        Some(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `Open` fed by hand: its reader is a channel the test holds.
    fn open(content_type: &str) -> (Open, mpsc::Sender<Chunk>) {
        let (tx, rx) = mpsc::channel(CHUNKS_QUEUED_MAX);
        let idle = || tokio::spawn(async {});
        let o = Open::new(200, content_type.to_owned(), None, rx, [idle(), idle()]);
        (o, tx)
    }

    fn event(n: usize) -> Chunk {
        Chunk::Item(SseItem::Message {
            id: Some(n.to_string()),
            event: None,
            data: format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"n":{n}}}}}"#
            ),
        })
    }

    #[tokio::test]
    async fn events_are_kept_to_the_bound_then_counted() {
        let (mut o, _tx) = open(headers::MIME_SSE);
        for n in 0..EVENTS_KEPT_MAX {
            assert!(o.take(event(n)), "event {n} is kept");
        }
        assert!(!o.take(event(EVENTS_KEPT_MAX)), "one past: counted");
        assert!(!o.take(Chunk::Item(SseItem::NoMessage { id: None })));
        assert_eq!((o.events.len(), o.events_over), (EVENTS_KEPT_MAX, 2));
        for _ in 0..EVENTS_KEPT_MAX {
            assert!(o.take(Chunk::Item(SseItem::Retry(5))));
        }
        assert!(!o.take(Chunk::Item(SseItem::Retry(5))));
        assert_eq!(o.retries.len(), EVENTS_KEPT_MAX);
        let summary = o.summary();
        assert!(
            summary.ends_with(&format!(
                "and {} more]",
                EVENTS_KEPT_MAX - SUMMARY_EVENTS_MAX + 2
            )),
            "{summary}"
        );
    }

    #[tokio::test]
    async fn a_summary_names_its_first_events_and_counts_the_rest() {
        let (mut o, _tx) = open(headers::MIME_SSE);
        for n in 0..SUMMARY_EVENTS_MAX {
            o.take(event(n));
        }
        assert!(!o.summary().contains("more"), "{}", o.summary());
        o.take(event(SUMMARY_EVENTS_MAX));
        assert!(o.summary().ends_with("and 1 more]"), "{}", o.summary());
    }

    #[tokio::test]
    async fn body_bytes_are_kept_to_the_bound_and_the_rest_counted() {
        let (mut o, _tx) = open(headers::MIME_JSON);
        assert!(o.take(Chunk::Raw(Bytes::from(vec![b'a'; BODY_KEPT_MAX - 1]))));
        assert!(!o.summary().contains("over"), "{}", o.summary());
        assert!(
            o.take(Chunk::Raw(Bytes::from_static(b"bc"))),
            "one byte of room"
        );
        assert_eq!((o.body.len(), o.body_over), (BODY_KEPT_MAX, 1));
        assert!(!o.take(Chunk::Raw(Bytes::from_static(b"d"))), "no room");
        assert_eq!(o.body_over, 2);
        assert!(o.summary().contains("read no further"), "{}", o.summary());
        let (mut cut, _tx) = open(headers::MIME_JSON);
        cut.take(Chunk::Over);
        assert!(cut.summary().contains("read no further"));
    }

    /// Past the bounds nothing kept changes, so a condition that was false
    /// is not judged again for every event a hostile server sends (it was,
    /// and with every event kept that was quadratic).
    #[tokio::test(start_paused = true)]
    async fn until_judges_again_only_when_something_kept_changed() {
        let judged = std::cell::Cell::new(0);
        let (mut o, tx) = open(headers::MIME_SSE);
        let sender = tx.clone();
        tokio::spawn(async move {
            for n in 0..EVENTS_KEPT_MAX + 10 {
                let _ = sender.send(event(n)).await;
            }
        });
        let held = o
            .until(Duration::from_secs(10), |o| {
                judged.set(judged.get() + 1);
                o.events_over == 10
            })
            .await;
        assert!(
            !held,
            "the ten past the bound changed nothing kept: not judged"
        );
        assert_eq!(
            judged.get(),
            EVENTS_KEPT_MAX + 1,
            "at the start and per kept event"
        );
        assert_eq!((o.events.len(), o.events_over), (EVENTS_KEPT_MAX, 10));
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn gather_takes_what_arrives_until_the_end() {
        let (mut o, tx) = open(headers::MIME_SSE);
        for n in 0..3 {
            tx.send(event(n)).await.unwrap();
        }
        tx.send(Chunk::End).await.unwrap();
        o.gather(Duration::from_secs(10)).await;
        assert_eq!((o.events.len(), o.ended), (3, true));
    }

    #[test]
    fn no_answer_says_why_when_it_knows() {
        let t = Target {
            addr: "127.0.0.1:9".parse().unwrap(),
            authority: "x".into(),
            path: "/mcp".into(),
            failure: Default::default(),
            authorization: None,
        };
        assert_eq!(t.no_answer(), "no answer");
        let _: Option<()> = t.failed("connect timed out");
        assert_eq!(t.no_answer(), "no answer (connect timed out)");
    }
}
