//! Deterministic, in-memory drivers for the cores: the network of HTTP
//! exchanges between client cores and the server side ([`World`], and
//! [`Pair`] with one client), which is one endpoint or a fleet of
//! instances sharing a store ([`Fleet`]).
//!
//! Nothing here does I/O or reads a clock: tests, property tests and the model
//! checker choose every delivery, drop and tick.

mod canonical;
mod clocks;
mod fleet;
mod localize;
mod memo;
mod naming;
mod net;
mod parsed;
mod retire;
mod servers;
mod store_links;
mod world;

pub use clocks::Clocks;
pub use fleet::{Fleet, StoreTiming};
pub use memo::{ClientInput, ClientMemo, Stepped};
pub use naming::Naming;
pub use net::{deliveries, Delivery, Link};
pub use servers::{OutputHandler, Servers, SERVER_HTTP_STRIDE};
pub use store_links::{ConnKey, StoreLinks};
pub use world::{principal_of, Pair, PairConfig, World, FORGED_BASE, HTTP_ID_STRIDE, LIST_CHANGED};
