//! Deterministic, in-memory drivers for the cores: the network of HTTP
//! exchanges between a client core and the server endpoint, and [`Pair`].
//!
//! Nothing here does I/O or reads a clock: tests, property tests and the model
//! checker choose every delivery, drop and tick.

mod net;
mod pair;

pub use net::{Delivery, Link};
pub use pair::{Pair, PairConfig};
