//! Deterministic, in-memory drivers for the cores: the network of HTTP
//! exchanges between client cores and the server endpoint ([`World`], and
//! [`Pair`] with one client).
//!
//! Nothing here does I/O or reads a clock: tests, property tests and the model
//! checker choose every delivery, drop and tick.

mod canonical;
mod net;
mod world;

pub use net::{deliveries, Delivery, Link};
pub use world::{Pair, PairConfig, World, HTTP_ID_STRIDE};
