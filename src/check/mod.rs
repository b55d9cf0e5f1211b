//! Exhaustive model checking of the cores (stateright), the scenarios of
//! `models/`, counterexample traces, and their pictures.

mod model;
mod run;
pub mod scenario;

pub use model::{Action, CheckModel, State};
pub use run::{run, Counterexample, Outcome};
pub use scenario::{ClientStep, Expectation, Scenario, ScenarioError, ServerStep, Verdict};
