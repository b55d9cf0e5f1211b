//! The fleet checker: the cores of `mcp_streamable::fleet` on several instances
//! sharing one store, explored by the same engine as the world models
//! ([`super::engine::Explorable`]). One model per file:
//! - [`relay`]: a stream written on some instances and read on another
//!   (F1–F3);
//! - [`sessions`]: requests of one session checked on any instance while
//!   one deletes it or it expires (F4);
//! - [`world`]: a client core through a balancer to whole instances, which
//!   may die, judged by the monitor and F5.

/// The fleet's own property ids (`docs/properties.md`): a fleet file's
/// `violates` names these or the monitor's ([`crate::monitor::PROPERTIES`]).
pub const PROPERTIES: [&str; 7] = ["F1", "F2", "F3", "F4", "F5", "F6", "F7"];

pub mod file;
pub mod relay;
pub mod sessions;
pub mod world;

pub use file::{FleetExpectation, FleetFile, FleetRun};
pub use relay::{RelayAction, RelayModel, RelayScenario, RelayState, RelayViolation};
pub use sessions::{
    SessionsAction, SessionsModel, SessionsScenario, SessionsState, SessionsViolation,
};
pub use world::{AppStep, WorldAction, WorldModel, WorldScenario, WorldState, WorldViolation};
