//! The server's bytes: what an HTTP server writes, ready to write.
//!
//! The endpoint speaks in [`Transmit`]s (a head, a JSON body, an SSE event, a
//! comment, an end), which the monitor and the checker judge. A shell needs
//! bytes: a status, header lines and body bytes, and to know whether the body
//! is whole (write it with `Content-Length`) or a stream (chunked, flushed as
//! it comes), and when the exchange is over. [`Wire`] turns the transmits of
//! one drain into exactly that, so the shell decides nothing:
//!
//! ```text
//!   a drain's transmits, per exchange        what the shell writes
//!   Head .. End                          →   Whole  (status, headers, body; done)
//!   Head ..                              →   Open   (status, headers, first bytes; more follow)
//!   ..                                   →   More   (bytes)
//!   .. End                               →   Last   (bytes, then end the body; done)
//! ```
//!
//! The endpoint always puts a head first and exactly once, so a drain that
//! holds an exchange's head opens it and one that does not continues it.

use super::{Transmit, TransmitKind};
use crate::error::RequestError;
use crate::head::{Content, ResponseHead};
use crate::headers;
use crate::ids::HttpId;
use crate::release::Release;
use crate::sse;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The text of the keep-alive comment (`: keep-alive`).
const KEEP_ALIVE: &str = " keep-alive";

/// A response head as it goes on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireHead {
    /// The status code.
    pub status: u16,
    /// Header lines (names lower-case), in the order to write them; the
    /// constant values borrowed, so only a session id costs an allocation.
    pub headers: Vec<(&'static str, Cow<'static, str>)>,
}

impl WireHead {
    /// The status line and headers for `head`: the content type, and on SSE
    /// streams `cache-control: no-cache` and `x-accel-buffering: no` (a
    /// buffering proxy would hold every event back); the session id; `allow`
    /// on a 405.
    pub fn of(head: &ResponseHead) -> WireHead {
        let mut lines = Vec::with_capacity(4);
        match head.content {
            Content::Json => lines.push((headers::CONTENT_TYPE, headers::MIME_JSON.into())),
            Content::Sse => {
                lines.push((headers::CONTENT_TYPE, headers::MIME_SSE.into()));
                lines.push((headers::CACHE_CONTROL, "no-cache".into()));
                lines.push((headers::X_ACCEL_BUFFERING, "no".into()));
            }
            Content::None => {}
        }
        if let Some(sid) = &head.session_id {
            lines.push((headers::MCP_SESSION_ID, sid.as_str().to_owned().into()));
        }
        if head.allow {
            lines.push((headers::ALLOW, "GET, POST, DELETE".into()));
        }
        WireHead {
            status: head.status,
            headers: lines,
        }
    }

    /// The value of header `name`, if set.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref())
    }
}

/// What to write on one exchange (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// The whole response: write it with `Content-Length`. The exchange is over.
    Whole {
        /// Status and headers.
        head: WireHead,
        /// The body (empty for a 202).
        body: Vec<u8>,
    },
    /// The head of a streamed body and its first bytes (maybe none); more follows.
    Open {
        /// Status and headers.
        head: WireHead,
        /// The first bytes.
        body: Vec<u8>,
    },
    /// More bytes of an open stream.
    More(Vec<u8>),
    /// The last bytes of an open stream (maybe none); then end the body. The
    /// exchange is over.
    Last(Vec<u8>),
}

impl Write {
    /// Whether the exchange is over once this is written.
    pub fn ends(&self) -> bool {
        matches!(self, Write::Whole { .. } | Write::Last(_))
    }

    /// The body bytes this write carries.
    pub fn body(&self) -> &[u8] {
        match self {
            Write::Whole { body, .. } | Write::Open { body, .. } => body,
            Write::More(b) | Write::Last(b) => b,
        }
    }

    /// The head, if this write starts the response.
    pub fn head(&self) -> Option<&WireHead> {
        match self {
            Write::Whole { head, .. } | Write::Open { head, .. } => Some(head),
            Write::More(_) | Write::Last(_) => None,
        }
    }

    /// The whole answer to a request the driver refuses before any endpoint
    /// sees it (`RequestError::Overloaded`: its queue of requests is full):
    /// the same status and JSON-RPC error body as the endpoint's own refusals.
    pub fn refusal(error: &RequestError) -> Write {
        let mut head = WireHead::of(&error.response_head());
        if let RequestError::Unauthenticated(challenge) = error {
            head.headers
                .push((headers::WWW_AUTHENTICATE, challenge.header_value().into()));
        }
        Write::Whole {
            head,
            body: error.message().to_json().into_bytes(),
        }
    }
}

/// Appends the bytes of one body item: a JSON body, an SSE event (a priming
/// event has an id and empty data), or a keep-alive comment.
pub fn encode(item: &TransmitKind, out: &mut Vec<u8>) {
    match item {
        TransmitKind::Json(m) => out.extend_from_slice(m.to_json().as_bytes()),
        TransmitKind::Event {
            id,
            retry_ms,
            message,
        } => {
            let data = message.as_ref().map(|o| o.message.to_json());
            sse::encode_event(out, id.as_deref(), *retry_ms, data.as_deref());
        }
        TransmitKind::Comment => sse::encode_comment(out, KEEP_ALIVE),
        TransmitKind::Head(_) | TransmitKind::End(_) => {}
    }
}

/// One exchange's part of a drain, being put together.
#[derive(Default)]
struct Pending {
    head: Option<ResponseHead>,
    body: Vec<u8>,
    ended: bool,
}

/// Turns the transmits of one drain into [`Write`]s, one per exchange, in
/// exchange order (see the module docs). Mutate with [`Wire::push`], then
/// drain [`Wire::poll_write`] before the next drain.
#[derive(Default)]
pub struct Wire {
    pending: BTreeMap<HttpId, Pending>,
}

impl Wire {
    /// An empty wire.
    pub fn new() -> Self {
        Wire::default()
    }

    /// Takes one transmit of the current drain.
    pub fn push(&mut self, t: &Transmit) {
        let p = self.pending.entry(t.http).or_default();
        match &t.kind {
            TransmitKind::Head(h) => p.head = Some(h.clone()),
            TransmitKind::End(_) => p.ended = true,
            item => encode(item, &mut p.body),
        }
    }

    /// Gives back the memory of the emptied map (`crate::release`: its root
    /// node holds eleven pending writes).
    pub fn release_if_idle(&mut self) {
        self.pending.release_if_empty();
    }

    /// The next exchange's write, once the drain is complete.
    pub fn poll_write(&mut self) -> Option<(HttpId, Write)> {
        let (http, p) = self.pending.pop_first()?;
        let write = match (p.head, p.ended) {
            (Some(head), true) => Write::Whole {
                head: WireHead::of(&head),
                body: p.body,
            },
            (Some(head), false) => Write::Open {
                head: WireHead::of(&head),
                body: p.body,
            },
            (None, true) => Write::Last(p.body),
            (None, false) => Write::More(p.body),
        };
        Some((http, write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::SessionId;
    use crate::jsonrpc::{Message, RawJson};
    use crate::server::EndReason;

    fn t(http: u64, kind: TransmitKind) -> Transmit {
        Transmit {
            http: HttpId(http),
            kind,
        }
    }

    fn result(id: i64) -> Message {
        Message::Response {
            id: crate::ids::RequestId::Num(id),
            result: RawJson::empty_object(),
        }
    }

    #[test]
    fn head_and_end_in_one_drain_is_whole_else_open_more_last() {
        let mut head = ResponseHead::new(200, Content::Sse);
        head.session_id = Some("abc".parse::<SessionId>().unwrap());
        let mut w = Wire::new();
        w.push(&t(
            1,
            TransmitKind::Head(ResponseHead::new(200, Content::Json)),
        ));
        w.push(&t(1, TransmitKind::Json(result(1))));
        w.push(&t(1, TransmitKind::End(EndReason::Complete)));
        w.push(&t(2, TransmitKind::Head(head)));
        w.push(&t(2, TransmitKind::Comment));
        let (h1, w1) = w.poll_write().unwrap();
        assert_eq!(h1, HttpId(1));
        assert!(w1.ends());
        assert_eq!(w1.body(), br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert_eq!(
            w1.head().unwrap().header("content-type"),
            Some("application/json")
        );
        let (h2, w2) = w.poll_write().unwrap();
        assert_eq!(h2, HttpId(2));
        assert!(matches!(&w2, Write::Open { .. }) && !w2.ends());
        assert_eq!(w2.body(), b": keep-alive\n\n");
        let h = w2.head().unwrap();
        assert_eq!(h.header("content-type"), Some("text/event-stream"));
        assert_eq!(h.header("cache-control"), Some("no-cache"));
        assert_eq!(h.header("x-accel-buffering"), Some("no"));
        assert_eq!(h.header("mcp-session-id"), Some("abc"));
        assert_eq!(w.poll_write(), None);
        w.push(&t(2, TransmitKind::Comment));
        assert_eq!(
            w.poll_write(),
            Some((HttpId(2), Write::More(b": keep-alive\n\n".to_vec())))
        );
        w.push(&t(2, TransmitKind::End(EndReason::Polling)));
        assert_eq!(w.poll_write(), Some((HttpId(2), Write::Last(Vec::new()))));
    }

    #[test]
    fn events_are_framed_with_id_retry_and_data() {
        let mut out = Vec::new();
        encode(
            &TransmitKind::Event {
                id: Some("s1-0".into()),
                retry_ms: Some(1000),
                message: None,
            },
            &mut out,
        );
        assert_eq!(out, b"id: s1-0\nretry: 1000\ndata: \n\n");
    }

    #[test]
    fn allow_on_405_and_refusals_carry_the_json_rpc_error() {
        let mut head = ResponseHead::new(405, Content::Json);
        head.allow = true;
        assert_eq!(
            WireHead::of(&head).header("allow"),
            Some("GET, POST, DELETE")
        );
        let w = Write::refusal(&RequestError::Overloaded);
        let head = w.head().unwrap();
        assert_eq!((head.status, w.ends()), (503, true));
        let body: serde_json::Value = serde_json::from_slice(w.body()).unwrap();
        assert_eq!(body["error"]["code"], -32000);
        assert!(body["id"].is_null());
    }
}
