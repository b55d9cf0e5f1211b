//! What the store keeps, spelled as text: a session's record, and one
//! message of a stream's log.
//!
//! The store treats both as opaque strings (Redis values and stream
//! fields); only instances read them, so their form is this module's alone.
//! Both are short, line-free and cheap to read back: a session's record is
//! read on every request (`SessionGate`), a message on every delivery by a
//! follower.

use crate::ids::MsgKey;
use crate::jsonrpc::Message;
use crate::principal::Principal;
use crate::shared::Shared;
use crate::version::ProtocolVersion;

/// What an instance needs to serve a session another instance opened.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionRecord {
    /// The version negotiated by `initialize`.
    pub version: ProtocolVersion,
    /// The namespace of its event ids, so every instance spells and reads
    /// them alike.
    pub namespace: u32,
    /// Who opened it: every instance serves it to that principal only.
    pub principal: Option<Principal>,
}

impl SessionRecord {
    /// `<version> <namespace in hex>`, then ` <principal as a JSON string>`
    /// when it has one: `2025-11-25 0000002a`, `2025-11-25 0000002a "alice"`.
    pub fn encode(&self) -> Shared<String> {
        let mut text = format!("{} {:08x}", self.version, self.namespace);
        if let Some(p) = &self.principal {
            text.push(' ');
            text.push_str(&serde_json::to_string(p).unwrap_or_default());
        }
        Shared::new(text)
    }

    /// The record back from its text; `None` if it is not one (a store
    /// written by something else: the session is treated as unknown).
    pub fn decode(text: &str) -> Option<SessionRecord> {
        let mut parts = text.splitn(3, ' ');
        let version = parts.next()?.parse().ok()?;
        let namespace = u32::from_str_radix(parts.next()?, 16).ok()?;
        let principal = match parts.next() {
            None => None,
            Some(json) => Some(serde_json::from_str(json).ok()?),
        };
        Some(SessionRecord {
            version,
            namespace,
            principal,
        })
    }
}

/// One message of a stream's log: `<key> <JSON>`. The key is the message's
/// serial number in its session, which the monitor follows end to end.
pub fn encode_message(key: MsgKey, message: &Message) -> Shared<String> {
    Shared::new(format!("{} {}", key.0, message.to_json()))
}

/// A log message back; `None` if the text is not one.
pub fn decode_message(text: &str) -> Option<(MsgKey, Message)> {
    let (key, json) = text.split_once(' ')?;
    let key = MsgKey(key.parse().ok()?);
    let message = serde_json::from_str::<Message>(json).ok()?;
    Some((key, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::RequestId;

    #[test]
    fn a_session_record_round_trips_and_garbage_is_no_record() {
        let r = SessionRecord {
            version: ProtocolVersion::LATEST,
            namespace: 0xdead_beef,
            principal: None,
        };
        assert_eq!(SessionRecord::decode(&r.encode()), Some(r.clone()));
        let owned = SessionRecord {
            principal: Some(Principal::new("alice smith \"a\"\n")),
            ..r
        };
        assert_eq!(SessionRecord::decode(&owned.encode()), Some(owned));
        for bad in [
            "",
            "2025-11-25",
            "1999-01-01 00000001",
            "2025-11-25 xyz",
            "2025-11-25 00000001 alice",
        ] {
            assert_eq!(SessionRecord::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_message_round_trips_with_its_key() {
        let m = Message::notification("notifications/progress", None);
        let text = encode_message(MsgKey(7), &m);
        assert_eq!(decode_message(&text), Some((MsgKey(7), m)));
        let r = Message::Response {
            id: RequestId::Num(3),
            result: serde_json::json!({"a": "b c"}).into(),
        };
        assert_eq!(
            decode_message(&encode_message(MsgKey(1), &r)),
            Some((MsgKey(1), r))
        );
        assert_eq!(decode_message("x {}"), None);
        assert_eq!(decode_message("1 not json"), None);
    }
}
