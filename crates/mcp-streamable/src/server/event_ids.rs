//! How SSE event ids are spelled under each [`EventIdScheme`], and how a
//! `Last-Event-ID` is read back.

use crate::ids::{EventId, StreamId};
use crate::policy::EventIdScheme;

/// The one common stream of the rmcp schemes (`Common` channel); FIXED never
/// uses stream 0.
pub const COMMON: StreamId = StreamId(0);

const HEX: &[u8; 16] = b"0123456789abcdef";

/// What a stream opening sends as its priming event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priming {
    /// No priming event.
    None,
    /// An event with the next sequence number of the stream, then `retry`.
    NextSeq,
    /// An event whose id is the literal `0`, taking no sequence number (rmcp),
    /// so it collides with index 0 of the common stream.
    LiteralZero,
}

/// Spells and reads event ids for one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventIdCodec {
    scheme: EventIdScheme,
    namespace: u32,
}

impl EventIdCodec {
    /// A codec; `namespace` makes FIXED ids differ between sessions, so an id
    /// from another session names nothing here.
    pub fn new(scheme: EventIdScheme, namespace: u32) -> Self {
        EventIdCodec { scheme, namespace }
    }

    /// The namespace that keeps this session's ids apart from others'.
    pub fn namespace(&self) -> u32 {
        self.namespace
    }

    /// The wire form of `id`.
    pub fn render(&self, id: EventId) -> String {
        match self.scheme {
            // `{namespace:08x}-{stream}-{seq}`, spelled by hand: one per
            // event written, and `format!`'s padding machinery was 3% of a
            // `tools/call` through the driver (`benches/core.rs`).
            EventIdScheme::StreamScoped => {
                let mut out = Vec::with_capacity(8 + 1 + 10 + 1 + 20);
                for shift in (0..8).rev() {
                    let digit = (self.namespace >> (shift * 4)) & 0xf;
                    out.push(HEX.get(digit as usize).copied().unwrap_or(b'0'));
                }
                out.push(b'-');
                crate::sse::push_decimal(&mut out, u64::from(id.stream.0));
                out.push(b'-');
                crate::sse::push_decimal(&mut out, id.seq);
                // ASCII by construction.
                String::from_utf8(out).unwrap_or_default()
            }
            EventIdScheme::Rmcp016 | EventIdScheme::Rmcp39 => {
                let index = id.seq.saturating_sub(1);
                if id.stream == COMMON {
                    format!("{index}")
                } else {
                    format!("{index}/{}", id.stream.0)
                }
            }
        }
    }

    /// The id a priming event carries when it takes no sequence number.
    pub fn literal_zero() -> &'static str {
        "0"
    }

    /// Reads a `Last-Event-ID`; `None` when it is malformed or from another
    /// session's namespace.
    pub fn parse(&self, text: &str) -> Option<EventId> {
        match self.scheme {
            EventIdScheme::StreamScoped => {
                let mut parts = text.split('-');
                let ns = u32::from_str_radix(parts.next()?, 16).ok()?;
                let stream = parts.next()?.parse().ok()?;
                let seq = parts.next()?.parse().ok()?;
                if parts.next().is_some() || ns != self.namespace || seq == 0 {
                    return None;
                }
                Some(EventId {
                    stream: StreamId(stream),
                    seq,
                })
            }
            EventIdScheme::Rmcp016 | EventIdScheme::Rmcp39 => {
                let (index, stream) = match text.split_once('/') {
                    Some((i, s)) => (i.parse::<u64>().ok()?, StreamId(s.parse().ok()?)),
                    None => (text.parse::<u64>().ok()?, COMMON),
                };
                Some(EventId {
                    stream,
                    seq: index.checked_add(1)?,
                })
            }
        }
    }

    /// The priming rule for a stream opened by a POST (`standalone == false`)
    /// or a GET; `version_primes` says whether the negotiated version has priming.
    pub fn priming(&self, standalone: bool, version_primes: bool) -> Priming {
        match (self.scheme, standalone) {
            (EventIdScheme::StreamScoped, _) if version_primes => Priming::NextSeq,
            (EventIdScheme::StreamScoped, _) => Priming::None,
            (EventIdScheme::Rmcp016, false) => Priming::LiteralZero,
            (EventIdScheme::Rmcp016, true) => Priming::None,
            (EventIdScheme::Rmcp39, false) => Priming::NextSeq,
            (EventIdScheme::Rmcp39, true) => Priming::LiteralZero,
        }
    }

    /// Whether the `initialize` response goes out without an id, so the
    /// stream's last id is its literal priming `0` (rmcp v0.16).
    pub fn initialize_unnumbered(&self) -> bool {
        self.scheme == EventIdScheme::Rmcp016
    }

    /// Whether all standalone GETs share the one [`COMMON`] stream.
    pub fn single_common_stream(&self) -> bool {
        !matches!(self.scheme, EventIdScheme::StreamScoped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-spelled id is `format!`'s `{:08x}-{}-{}`, at the edges of
    /// every field (zero, one digit, all digits).
    #[test]
    fn stream_scoped_ids_are_spelled_as_format_spells_them() {
        for ns in [0, 0xa, 0xabc, 0x0f0f_0f0f, u32::MAX] {
            let c = EventIdCodec::new(EventIdScheme::StreamScoped, ns);
            for stream in [0, 1, 9, 10, 1 << 20, u32::MAX] {
                for seq in [0, 1, 9, 10, 99, 100, 12_345, u64::MAX] {
                    let id = EventId {
                        stream: StreamId(stream),
                        seq,
                    };
                    assert_eq!(c.render(id), format!("{ns:08x}-{stream}-{seq}"));
                }
            }
        }
    }

    #[test]
    fn stream_scoped_round_trip_and_namespace() {
        let c = EventIdCodec::new(EventIdScheme::StreamScoped, 0xabc);
        let id = EventId {
            stream: StreamId(3),
            seq: 9,
        };
        let text = c.render(id);
        assert_eq!(c.parse(&text), Some(id));
        let other = EventIdCodec::new(EventIdScheme::StreamScoped, 0xabd);
        assert_eq!(other.parse(&text), None);
        assert_eq!(c.parse("garbage"), None);
        assert_eq!(c.parse("00000abc-3-0"), None);
    }

    #[test]
    fn rmcp_ids_collide_by_design() {
        let c = EventIdCodec::new(EventIdScheme::Rmcp016, 0);
        // The literal priming id reads back as common index 0.
        assert_eq!(
            c.parse(EventIdCodec::literal_zero()),
            Some(EventId {
                stream: COMMON,
                seq: 1
            })
        );
        let id = EventId {
            stream: StreamId(4),
            seq: 2,
        };
        assert_eq!(c.render(id), "1/4");
        assert_eq!(c.parse("1/4"), Some(id));
    }
}
