//! The `mcp-streamable` cores under judgement: the invariant [`monitor`]
//! (every property of `docs/properties.md`, judged from observations any
//! harness produces), the simulated world ([`sim`]: client cores and the
//! server side over an in-memory network), and the model checker (our
//! explorer beside stateright's, the scenarios of `models/`, counterexample
//! traces and their pictures).
//!
//! Entry points: [`Scenario`] (a model file), [`run`] (every preset pair of
//! a scenario, with its verdict), [`replay`] (a trace on the cores again),
//! and [`monitor::Monitor`] for a harness of your own.

#![forbid(unsafe_code)]

pub mod monitor;
pub mod sim;

mod ample;
pub mod diagram;
pub mod engine;
pub mod fleet;
pub mod memory;
mod model;
mod run;
pub mod scenario;
mod script;
mod sleep;
mod symmetry;
pub mod trace;

pub use ample::Ample;
pub use diagram::Diagram;
pub use engine::{Interrupt, Limit, Limits, Order, Progress};
pub use model::{Action, CheckModel, State};
pub use run::{found_reduced, run, run_search, Counterexample, Outcome, Search, AUTO_FRONTIER_MAX};
pub use scenario::{
    ClientStep, Expectation, NotifyReach, Scenario, ScenarioError, ServerStep, Verdict,
};
pub use symmetry::Symmetry;
pub use trace::{replay, Replay, Trace, TraceError};
