//! Identifiers on the wire and inside the cores.
//!
//! Each is parsed once at the edge and stays typed inside (the cores never
//! re-parse their own strings).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One HTTP exchange (request + response). The side that starts the exchange
/// mints it: the client core for its requests, the server endpoint when it
/// accepts one, so traces are self-contained.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct HttpId(pub u64);

impl fmt::Display for HttpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "h{}", self.0)
    }
}

/// One logical SSE stream of a session: a POST's response stream or a
/// standalone GET stream. It outlives the HTTP connections that carry it
/// (polling, resumption).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct StreamId(pub u32);

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// The serial number the server core gives every message the application
/// emits, carried on every transmit of that message so observers can tell a
/// replay from a duplicate.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct MsgKey(pub u64);

impl fmt::Display for MsgKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m{}", self.0)
    }
}

/// An SSE event position: which stream, and the event's sequence number in
/// it. Sequence numbers are per stream and never reused, priming events
/// included, so a priming id can never collide with a message id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EventId {
    /// The stream the event belongs to.
    pub stream: StreamId,
    /// Position in that stream, starting at 1.
    pub seq: u64,
}

/// A JSON-RPC request id: a string or an integer, never null (R45).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Num(i64),
    /// A string id.
    Str(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Num(n) => write!(f, "{n}"),
            RequestId::Str(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Num(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::Str(s.to_owned())
    }
}

/// A session id: 1 to [`SessionId::LEN_MAX`] visible ASCII characters
/// (0x21–0x7E, R21). Shared text: every event, stream and record of a
/// session names it, and a clone is a reference count, not a copy.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(std::sync::Arc<str>);

/// A session id that is empty, too long or not visible ASCII.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid session id: {reason}")]
pub struct InvalidSessionId {
    /// What is wrong with it.
    pub reason: &'static str,
}

impl SessionId {
    /// Longest id accepted from a peer.
    pub const LEN_MAX: usize = 256;

    /// Builds the id minted from 128 random bits: 32 lower-case hex digits.
    pub fn from_bits(bits: u128) -> Self {
        SessionId(format!("{bits:032x}").into())
    }

    /// The id as sent in `Mcp-Session-Id`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for SessionId {
    type Err = InvalidSessionId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Err(InvalidSessionId { reason: "empty" });
        }
        if s.len() > Self::LEN_MAX {
            return Err(InvalidSessionId {
                reason: "longer than 256 bytes",
            });
        }
        if !s.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return Err(InvalidSessionId {
                reason: "not visible ASCII (0x21-0x7E)",
            });
        }
        Ok(SessionId(s.into()))
    }
}

impl TryFrom<String> for SessionId {
    type Error = InvalidSessionId;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> String {
        id.0.to_string()
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_session_ids_are_visible_ascii_and_128_bits() {
        let id = SessionId::from_bits(u128::MAX - 5);
        assert_eq!(id.as_str().len(), 32);
        assert_eq!(id.as_str().parse::<SessionId>(), Ok(id.clone()));
        let zero = SessionId::from_bits(0);
        assert_eq!(zero.as_str(), "00000000000000000000000000000000");
    }

    #[test]
    fn peer_session_ids_are_validated() {
        assert!("".parse::<SessionId>().is_err());
        assert!("a b".parse::<SessionId>().is_err());
        assert!("caf\u{e9}".parse::<SessionId>().is_err());
        assert!("x".repeat(257).parse::<SessionId>().is_err());
        assert!("!~".parse::<SessionId>().is_ok());
    }

    #[test]
    fn request_ids_serialize_as_json_scalars() {
        assert_eq!(serde_json::to_string(&RequestId::Num(3)).unwrap(), "3");
        assert_eq!(
            serde_json::to_string(&RequestId::from("a")).unwrap(),
            "\"a\""
        );
        assert!(serde_json::from_str::<RequestId>("null").is_err());
    }
}
