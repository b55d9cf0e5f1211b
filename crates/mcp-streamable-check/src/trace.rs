//! Counterexamples as versioned JSON traces: the scenario, the presets, the
//! seed, every action by value with its time in ms, and the violation.
//! [`replay`] re-runs one on the cores and must reach the same violation; a
//! mismatch is a determinism bug.

use super::model::{Action, CheckModel, State};
use super::run::Counterexample;
use super::scenario::Scenario;
use crate::monitor::Observation;
use crate::sim::Naming;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The trace format version this crate writes and reads.
pub const TRACE_FORMAT: u32 = 1;

/// One step of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceStep {
    /// Simulated time when the action was taken, in ms from the start.
    pub at_ms: u64,
    /// The action, by value.
    pub action: Action,
}

/// What broke, at the end of the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceViolation {
    /// The invariant id.
    pub id: String,
    /// What the monitor said.
    pub detail: String,
}

/// A self-contained counterexample.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// [`TRACE_FORMAT`].
    pub format: u32,
    /// The scenario, embedded so a replay needs nothing else.
    pub scenario: Scenario,
    /// Server preset name.
    pub server: String,
    /// Client preset name.
    pub client: String,
    /// Invariant ids judged.
    pub judge: Vec<String>,
    /// The server's session-id seed.
    pub seed: u64,
    /// How the world's server named exchanges and sessions (absent in
    /// traces written before naming by exchange: by arrival).
    #[serde(default)]
    pub naming: Naming,
    /// Whether the steps are a path of the search under the partial-order
    /// reduction (a drops' reservation first, finished clients retired as
    /// they finish) rather than of the full search (absent: the full one).
    /// A replay runs the model the path was found on.
    #[serde(default)]
    pub reduced: bool,
    /// The actions.
    pub steps: Vec<TraceStep>,
    /// The violation reached.
    pub violation: TraceViolation,
}

impl Trace {
    /// The trace of a counterexample of `model`, found by the reduced
    /// search or not ([`crate::found_reduced`]).
    pub fn new(model: &CheckModel, cx: &Counterexample, reduced: bool) -> Self {
        Trace {
            format: TRACE_FORMAT,
            scenario: model.scenario.clone(),
            server: model.server_name.clone(),
            client: model.client_name.clone(),
            judge: model.judge.clone(),
            seed: model.pair_config().seed,
            naming: model.naming,
            reduced,
            steps: cx
                .steps
                .iter()
                .map(|(at_ms, action)| TraceStep {
                    at_ms: *at_ms,
                    action: action.clone(),
                })
                .collect(),
            violation: TraceViolation {
                id: cx.violation.id.to_owned(),
                detail: cx.violation.detail.clone(),
            },
        }
    }

    /// Reads a trace, naming the field at fault on error.
    pub fn load(file: &Path) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(file).map_err(|e| TraceError::Io {
            file: file.to_owned(),
            error: e.to_string(),
        })?;
        let de = &mut serde_json::Deserializer::from_str(&text);
        let trace: Trace =
            serde_path_to_error::deserialize(de).map_err(|e| TraceError::Schema {
                file: file.to_owned(),
                field: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        if trace.format != TRACE_FORMAT {
            return Err(TraceError::Schema {
                file: file.to_owned(),
                field: "format".into(),
                message: format!("expected {TRACE_FORMAT}, found {}", trace.format),
            });
        }
        // The recorded model obeys what a model file does (a trace is a file
        // anyone may hand over, and its steps name clients by index).
        if let Err(super::scenario::ScenarioError::Schema { field, message, .. }) =
            trace.scenario.validate(file)
        {
            return Err(TraceError::Schema {
                file: file.to_owned(),
                field: format!("scenario.{field}"),
                message,
            });
        }
        Ok(trace)
    }

    /// The model this trace ran on.
    pub fn model(&self) -> Result<CheckModel, TraceError> {
        let mut m = CheckModel::new(self.scenario.clone(), &self.server, &self.client).ok_or_else(
            || TraceError::UnknownPreset(format!("{} x {}", self.server, self.client)),
        )?;
        m.judge = self.judge.clone();
        // A replay takes the recorded steps one by one on the model they
        // were found on: a full search's path has no drops' reservation to
        // wait for (so its end is judged quiet as it was), a reduced
        // search's retires its finished clients where the search did (so
        // their clocks, set back to zero, show the times it recorded).
        Ok(m.with_naming(self.naming).with_reduction(self.reduced))
    }
}

/// A trace that cannot be replayed as recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("{file}: cannot read: {error}")]
    Io {
        /// The file.
        file: PathBuf,
        /// Why.
        error: String,
    },
    /// The JSON does not fit the trace format.
    #[error("{file}: field `{field}`: {message}")]
    Schema {
        /// The file.
        file: PathBuf,
        /// Path of the offending field.
        field: String,
        /// What was expected.
        message: String,
    },
    /// A preset name this build does not know.
    #[error("unknown presets {0}")]
    UnknownPreset(String),
    /// A step was not enabled where the trace took it (determinism bug).
    #[error(
        "step {step}: {action} is not enabled here; the cores did not retrace the recorded run"
    )]
    NotEnabled {
        /// Index of the step.
        step: usize,
        /// The action.
        action: String,
    },
    /// A step happened at another time than recorded (determinism bug).
    #[error("step {step}: recorded at {recorded} ms, replayed at {replayed} ms")]
    TimeMismatch {
        /// Index of the step.
        step: usize,
        /// Recorded time.
        recorded: u64,
        /// Replayed time.
        replayed: u64,
    },
    /// The end state breaks a different invariant, or none (determinism bug).
    #[error("recorded violation {recorded}, replay found {replayed}")]
    ViolationMismatch {
        /// Recorded id.
        recorded: String,
        /// Replayed id (or "none").
        replayed: String,
    },
}

/// One replayed step: the action and what it made happen.
#[derive(Clone, Debug)]
pub struct ReplayedStep {
    /// Time of the step, in ms.
    pub at_ms: u64,
    /// Time after the step (a tick moves it), in ms.
    pub after_ms: u64,
    /// The action.
    pub action: Action,
    /// Observations the step produced, in order.
    pub observations: Vec<Observation>,
}

/// A successful replay.
#[derive(Clone, Debug)]
pub struct Replay {
    /// Every step with its observations.
    pub steps: Vec<ReplayedStep>,
    /// The final state.
    pub last: State,
}

/// Re-runs `trace` on the cores, step by step, and confirms the violation.
pub fn replay(trace: &Trace) -> Result<Replay, TraceError> {
    let model = trace.model()?;
    let mut state = model.initial();
    state.world.log = Some(Vec::new());
    let mut steps = Vec::new();
    for (i, step) in trace.steps.iter().enumerate() {
        let now = state.world.latest_now().as_millis();
        if now != step.at_ms {
            return Err(TraceError::TimeMismatch {
                step: i,
                recorded: step.at_ms,
                replayed: now,
            });
        }
        let mut next = model
            .step(&state, &step.action)
            .ok_or_else(|| TraceError::NotEnabled {
                step: i,
                action: format!("{:?}", step.action),
            })?;
        let observations = next.world.log.replace(Vec::new()).unwrap_or_default();
        steps.push(ReplayedStep {
            at_ms: step.at_ms,
            after_ms: next.world.latest_now().as_millis(),
            action: step.action.clone(),
            observations,
        });
        state = next;
    }
    let got = model.violation(&state).map(|v| v.id.to_owned());
    if got.as_deref() != Some(trace.violation.id.as_str()) {
        return Err(TraceError::ViolationMismatch {
            recorded: trace.violation.id.clone(),
            replayed: got.unwrap_or_else(|| "none".into()),
        });
    }
    Ok(Replay { steps, last: state })
}
