//! How the server side names what a world's requests open.
//!
//! A server numbers its exchanges and draws its session ids (and the
//! event-id namespaces drawn with them) in the order requests arrive. In a
//! world of several clients that order is one of the things the checker
//! explores: client 0's `initialize` then client 1's, or the other way
//! round. The cores behave alike either way (they compare ids, never order
//! them in a way a property can see: `docs/reduction.md`, "Where the order
//! of ids decides"), yet the two states differ by every id, so the checker
//! keeps both and every state after them. [`Naming::ByExchange`] names each
//! exchange after the client exchange that carried it, and draws what the
//! request mints from a source seeded by that exchange: two orders of
//! arrival then end in one state.

use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::HttpId;
use serde::{Deserialize, Serialize};

/// How the server side names the exchanges and sessions of a world's
/// requests (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Naming {
    /// In arrival order, from the server's own counter and id source: what
    /// a real server does, and what traces written before `ByExchange`
    /// replay with.
    #[default]
    Arrival,
    /// After the carrying exchange: the server's exchange id is the world's
    /// id of the client exchange, and its session ids and namespaces come
    /// from [`Naming::source_for`] that exchange. One endpoint only; a
    /// fleet's instances name by their own ranges either way.
    ByExchange,
}

impl Naming {
    /// The id source a request carried by world exchange `ch` draws from,
    /// under `seed`: distinct exchanges, unrelated sources.
    pub fn source_for(seed: u64, ch: HttpId) -> IdSource {
        IdSource::reproducible(seed ^ ch.0.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
}
