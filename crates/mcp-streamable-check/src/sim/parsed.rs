//! JSON-RPC texts parsed once per thread: the world shows the monitor every
//! message on the wire as the peer would read it, and a model checker
//! delivers the same few texts again and again from states that differ
//! elsewhere (in `three_clients_calls`, 1,052,000 deliveries of response
//! items and requests; parsing them was 4.8% of a run).
//!
//! A pure function cached: the answer for a text is the parse of that text,
//! whoever asked first. Entries are found by the text's 64-bit hash and
//! kept only with the text itself, which a hit compares whole, so two texts
//! with one hash never share an answer. At [`TEXTS_MAX`] texts the table
//! starts over.

use crate::monitor;
use mcp_streamable::jsonrpc::{self, Message};
use mcp_streamable::shared::{fixed_keys, Identity};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault};

/// Texts kept per thread. A run sees a few hundred distinct ones; a text is
/// at most a message body, so the table stays within a few MB.
pub const TEXTS_MAX: usize = 4096;

struct Parsed {
    text: Box<[u8]>,
    /// `None`: not JSON-RPC (the monitor sees nothing of it).
    messages: Option<Vec<Message>>,
}

thread_local! {
    static TABLE: RefCell<HashMap<u64, Parsed, BuildHasherDefault<Identity>>> =
        RefCell::default();
}

/// [`monitor::body_messages`] of a POST body or response body, from the
/// table.
pub fn body_messages(bytes: &[u8]) -> Option<Vec<Message>> {
    cached(bytes, monitor::body_messages)
}

/// The message of one SSE `data` text; `None` when it is not JSON-RPC.
pub fn event_message(data: &str) -> Option<Message> {
    let one = cached(data.as_bytes(), |b| {
        let text = std::str::from_utf8(b).ok()?;
        jsonrpc::parse_message(text).ok().map(|m| vec![m])
    })?;
    one.into_iter().next()
}

fn cached(bytes: &[u8], parse: impl FnOnce(&[u8]) -> Option<Vec<Message>>) -> Option<Vec<Message>> {
    let key = BuildHasher::hash_one(&fixed_keys(), bytes);
    TABLE.with(|t| {
        if let Some(p) = t.borrow().get(&key).filter(|p| *p.text == *bytes) {
            return p.messages.clone();
        }
        let messages = parse(bytes);
        let mut t = t.borrow_mut();
        if t.len() >= TEXTS_MAX {
            t.clear();
        }
        // A text with another's hash is parsed each time, never kept.
        t.entry(key).or_insert_with(|| Parsed {
            text: bytes.into(),
            messages: messages.clone(),
        });
        messages
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_streamable::jsonrpc::Body;
    use mcp_streamable::version::ProtocolVersion;

    #[test]
    fn a_text_parses_the_same_from_the_table() {
        let body = br#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#;
        let fresh = jsonrpc::parse_body(body, ProtocolVersion::V2025_03_26)
            .map(Body::into_messages)
            .ok();
        assert_eq!(fresh.as_ref().map(Vec::len), Some(2));
        assert_eq!(body_messages(body), fresh);
        assert_eq!(body_messages(body), fresh, "again, from the table");
        assert_eq!(body_messages(b"not json"), None);
        assert_eq!(body_messages(b"not json"), None);
        let data = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
        assert_eq!(event_message(data), jsonrpc::parse_message(data).ok());
        assert!(event_message(data).is_some());
    }

    fn kept() -> usize {
        TABLE.with(|t| t.borrow().len())
    }

    fn request(i: usize) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"a"}}"#).into_bytes()
    }

    #[test]
    fn the_table_keeps_each_text_once_and_starts_over_at_its_bound() {
        TABLE.with(|t| t.borrow_mut().clear());
        for i in [1, 2, 3, 1, 2] {
            assert!(body_messages(&request(i)).is_some());
        }
        assert_eq!(kept(), 3, "three texts, each kept once");
        for i in 0..TEXTS_MAX + 10 {
            body_messages(&request(i));
        }
        assert!((1..=TEXTS_MAX).contains(&kept()), "{} kept", kept());
    }

    #[test]
    fn texts_that_share_a_hash_slot_get_their_own_answers() {
        // Two texts stored under one key: the second must not be answered
        // with the first's messages (the table compares the text).
        let a = br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#;
        let b = br#"{"jsonrpc":"2.0","id":2,"method":"b"}"#;
        let key = BuildHasher::hash_one(&fixed_keys(), &a[..]);
        let b_messages = body_messages(b);
        TABLE.with(|t| {
            t.borrow_mut().insert(
                key,
                Parsed {
                    text: b[..].into(),
                    messages: b_messages,
                },
            )
        });
        let got = body_messages(a).expect("parses");
        assert_eq!(
            got,
            jsonrpc::parse_body(a, ProtocolVersion::V2025_03_26)
                .unwrap()
                .into_messages()
        );
    }
}
