//! Protocol versions and what each one enables on this transport.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A protocol version this crate speaks.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub enum ProtocolVersion {
    /// The first Streamable HTTP revision: batches allowed, no version header.
    #[serde(rename = "2025-03-26")]
    V2025_03_26,
    /// Batches removed; `MCP-Protocol-Version` header required.
    #[serde(rename = "2025-06-18")]
    V2025_06_18,
    /// Priming events, `retry`, polling, stream-scoped event ids.
    #[default]
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// The 2026-07-28 era: no sessions, no `initialize`, no GET stream, no
    /// resumption; every request carries its version in a header and in
    /// `_meta`; `server/discover`, `subscriptions/listen`, MRTR.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every version, oldest first.
    pub const ALL: [ProtocolVersion; 4] = [
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The versions of the session era (`initialize`, `Mcp-Session-Id`).
    pub const SESSION_ERA: [ProtocolVersion; 3] = [
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
    ];

    /// The newest session-era version: what `initialize` offers and a
    /// server falls back to.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The newest version of the 2026-07-28 era (no sessions).
    pub const LATEST_V2026: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The version assumed when the header is absent (R30).
    pub const ASSUMED_WITHOUT_HEADER: ProtocolVersion = ProtocolVersion::V2025_03_26;

    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether this version is of the 2026-07-28 era (no sessions: each request
    /// stands alone).
    pub const fn is_v2026(self) -> bool {
        matches!(self, ProtocolVersion::V2026_07_28)
    }

    /// JSON-RPC batches are accepted (R48: only 2025-03-26).
    pub const fn accepts_batches(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
    }

    /// The server primes SSE streams and announces `retry`, and may close a
    /// connection after an id-bearing event (R36–R39).
    pub const fn has_priming(self) -> bool {
        matches!(self, ProtocolVersion::V2025_11_25)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version string this crate does not speak.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unsupported protocol version {0:?}")]
pub struct UnsupportedVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnsupportedVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::ALL
            .into_iter()
            .find(|v| v.as_str() == s.trim())
            .ok_or_else(|| UnsupportedVersion(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_unknown() {
        for v in ProtocolVersion::ALL {
            assert_eq!(v.as_str().parse::<ProtocolVersion>(), Ok(v));
        }
        assert!("2027-01-01".parse::<ProtocolVersion>().is_err());
        assert!("".parse::<ProtocolVersion>().is_err());
    }

    #[test]
    fn features_by_version() {
        assert!(ProtocolVersion::V2025_03_26.accepts_batches());
        assert!(!ProtocolVersion::V2025_06_18.accepts_batches());
        assert!(!ProtocolVersion::V2025_06_18.has_priming());
        assert!(ProtocolVersion::V2025_11_25.has_priming());
    }
}
