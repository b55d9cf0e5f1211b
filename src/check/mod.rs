//! Exhaustive model checking of the cores (stateright), the scenarios of
//! `models/`, counterexample traces, and their pictures.

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
pub use run::{run, run_search, Counterexample, Outcome, Search};
pub use scenario::{
    ClientStep, Expectation, NotifyReach, Scenario, ScenarioError, ServerStep, Verdict,
};
pub use symmetry::Symmetry;
pub use trace::{replay, Replay, Trace, TraceError};
