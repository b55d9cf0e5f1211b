//! Fleet model files (`models/fleet/*.json`): a relay or sessions scenario
//! and the verdict each design must get, run by `mcp-streamable check`
//! beside the world models (`docs/models.md`, "Fleet models").

use super::relay::{RelayModel, RelayScenario};
use super::sessions::{SessionsModel, SessionsScenario};
use super::world::{AppStep, WorldModel, WorldScenario};
use crate::engine::{explore, Explorable, Limits};
use crate::scenario::{check_script, unknown_property, ClientStep, ScenarioError, Verdict};
use crate::sim::StoreTiming;
use mcp_streamable::fleet::{
    Answers, BroadcastDelivery, Cancellations, Handover, Relay, ResumedGet, SessionRefresh,
    Unrelated,
};
use mcp_streamable::policy::ServerPolicy;
use serde::Deserialize;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One fleet model file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetFile {
    /// Its name (the file stem by convention).
    pub name: String,
    /// What it shows.
    pub description: String,
    /// The model and its scenario.
    #[serde(flatten)]
    pub model: FleetKind,
    /// The deepest path explored.
    pub depth: usize,
    /// Expected verdicts, one per design.
    pub expect: Vec<FleetExpectation>,
}

/// Which fleet model a file describes.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FleetKind {
    /// A stream written on some instances and followed on another.
    Relay(RelaySpec),
    /// Requests of a session checked on any instance, a DELETE, an expiry.
    Sessions(SessionsSpec),
    /// A client core through a balancer to whole instances that may die.
    World(WorldSpec),
}

/// The world scenario of a file (see [`WorldScenario`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldSpec {
    /// How many instances.
    pub instances: u16,
    /// The client's script.
    pub client: Vec<ClientStep>,
    /// The application's script.
    #[serde(default)]
    pub app: Vec<AppStep>,
    /// Whether the client keeps a standalone GET open.
    #[serde(default)]
    pub background_get: bool,
    /// Whether the client speaks 2026-07-28 (no session; `listen`);
    /// `"modern"` is read as this too.
    #[serde(default, alias = "modern")]
    pub v2026: bool,
    /// A second client, authenticated as another principal, that learns
    /// the client's session id and last event id and tries every verb on
    /// the session at any moment (I2: each lands on any instance).
    #[serde(default)]
    pub attacker: bool,
    /// Connection cuts the network may inject.
    #[serde(default)]
    pub drops: u8,
    /// Instances that may die.
    #[serde(default)]
    pub kills: u8,
    /// Simulated time explored, in ms.
    pub time_ms: u64,
    /// Which of the store's connections are served at once (fewer
    /// orders; the relay and sessions models explore the store's delays
    /// in full). Default: every op, reply and push queued.
    #[serde(default)]
    pub store: StoreTiming,
}

/// The relay scenario of a file (see [`RelayScenario`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelaySpec {
    /// Messages each writer appends (one writer per instance).
    pub writers: Vec<usize>,
    /// Whether writer 0 ends the stream after its messages.
    pub end: bool,
    /// Entries already in the log.
    #[serde(default)]
    pub stored: usize,
    /// The client's cursor (at most `stored`).
    #[serde(default)]
    pub cursor: u64,
    /// Entries a follower keeps ahead of its cursor.
    #[serde(default = "default_pending_max")]
    pub pending_max: usize,
}

fn default_pending_max() -> usize {
    8
}

/// The sessions scenario of a file (see [`SessionsScenario`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsSpec {
    /// Requests of the session, each on either instance.
    pub requests: usize,
    /// Whether one instance deletes the session.
    pub delete: bool,
    /// Whether the session may expire.
    pub expiry: bool,
}

/// One expected verdict of a fleet file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetExpectation {
    /// The design: a `Relay` value for relay files (`ordered`,
    /// `replay_then_subscribe`, …), a `SessionRefresh` value for sessions
    /// files (`atomic`, `load_then_store`), a `Relay`, `Handover`, `ResumedGet`,
    /// `Unrelated`, `Answers` or `Cancellations` value for world files
    /// (`abandon`, `follow_log`, `keep_local`, `local_only`, `where_landed`,
    /// …).
    pub design: String,
    /// `"holds"` or `{"violates": ["F1", …]}`.
    pub verdict: Verdict,
    /// For `holds`: the least number of distinct states to visit.
    #[serde(default)]
    pub min_states: Option<usize>,
}

/// The outcome of one design of one file.
#[derive(Clone, Debug)]
pub struct FleetRun {
    /// The design.
    pub design: String,
    /// The violated property's id, if any.
    pub violated: Option<&'static str>,
    /// The counterexample's steps (`Debug` of each action), if any.
    pub steps: Vec<String>,
    /// Distinct states.
    pub states: usize,
    /// Deepest path.
    pub depth: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// Whether the search covered everything within the bounds.
    pub exhaustive: bool,
    /// The search met this depth bound with actions enabled and found
    /// nothing: it holds within that depth ([`crate::Limit::DepthBound`]).
    pub within_depth: Option<usize>,
}

impl FleetRun {
    /// Whether the run gave what `e` expects (`None`: bounded, undecided).
    /// Holding within the depth bound meets a `holds` expectation; the
    /// verdict line says which.
    pub fn as_expected(&self, e: &FleetExpectation) -> Option<bool> {
        match (self.violated, &e.verdict) {
            (None, _) if !self.exhaustive && self.within_depth.is_none() => None,
            (None, Verdict::Holds) => Some(self.states >= e.min_states.unwrap_or(1)),
            (None, Verdict::Violates(_)) => Some(false),
            (Some(id), Verdict::Violates(ids)) => Some(ids.iter().any(|i| i == id)),
            (Some(_), Verdict::Holds) => Some(false),
        }
    }
}

fn schema(file: &Path, field: String, message: String) -> ScenarioError {
    ScenarioError::Schema {
        file: file.to_owned(),
        field,
        message,
    }
}

impl FleetFile {
    /// Parses a file, naming the field at fault on error.
    pub fn parse(file: &Path, text: &str) -> Result<FleetFile, ScenarioError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let f: FleetFile = serde_path_to_error::deserialize(de)
            .map_err(|e| schema(file, e.path().to_string(), e.inner().to_string()))?;
        crate::scenario::check_name(&f.name).map_err(|m| schema(file, "name".into(), m))?;
        for (i, e) in f.expect.iter().enumerate() {
            let ids = match &e.verdict {
                Verdict::Violates(ids) => ids.as_slice(),
                Verdict::Holds => &[],
            };
            if let Some(id) = unknown_property(ids, &super::PROPERTIES) {
                return Err(schema(
                    file,
                    format!("expect[{i}].verdict.violates"),
                    format!("unknown property id {id:?}"),
                ));
            }
            if f.design_ok(&e.design).is_none() {
                return Err(schema(
                    file,
                    format!("expect[{i}].design"),
                    format!("unknown design {:?} for this model", e.design),
                ));
            }
        }
        if let FleetKind::World(w) = &f.model {
            check_script(&w.client, w.v2026, "\"v2026\": true")
                .map_err(|m| schema(file, "world.client".into(), m))?;
        }
        if let FleetKind::Relay(r) = &f.model {
            if r.writers.is_empty() || r.cursor > r.stored as u64 {
                return Err(schema(
                    file,
                    "relay".into(),
                    "expected at least one writer and cursor <= stored".into(),
                ));
            }
        }
        Ok(f)
    }

    /// Every `*.json` of a directory, sorted by name; none if it is missing.
    pub fn load_dir(dir: &Path) -> Result<Vec<(PathBuf, FleetFile)>, ScenarioError> {
        let Ok(files) = crate::scenario::json_files(dir) else {
            return Ok(Vec::new());
        };
        files
            .into_iter()
            .map(|f| {
                let text = std::fs::read_to_string(&f).map_err(|error| ScenarioError::Io {
                    file: f.clone(),
                    error,
                })?;
                Self::parse(&f, &text).map(|s| (f, s))
            })
            .collect()
    }

    fn design_ok(&self, design: &str) -> Option<()> {
        let quoted = format!("{design:?}");
        match self.model {
            FleetKind::Relay(_) => serde_json::from_str::<Relay>(&quoted).ok().map(|_| ()),
            FleetKind::Sessions(_) => serde_json::from_str::<SessionRefresh>(&quoted)
                .ok()
                .map(|_| ()),
            FleetKind::World(_) => world_design(design).map(|_| ()),
        }
    }

    /// Explores the model under `e`'s design within `limits`.
    pub fn run(&self, e: &FleetExpectation, limits: Limits) -> FleetRun {
        let quoted = format!("{:?}", e.design);
        match &self.model {
            FleetKind::Relay(r) => {
                let relay: Relay = serde_json::from_str(&quoted).unwrap_or_default();
                let sc = RelayScenario {
                    relay,
                    writers: r.writers.clone(),
                    end: r.end,
                    stored: r.stored,
                    cursor: r.cursor,
                    pending_max: r.pending_max,
                    entries_per_log_max: 64,
                    depth: self.depth,
                };
                run_one(&RelayModel::new(sc), &e.design, limits, |v| v.id())
            }
            FleetKind::Sessions(s) => {
                let refresh: SessionRefresh = serde_json::from_str(&quoted).unwrap_or_default();
                let sc = SessionsScenario {
                    refresh,
                    requests: s.requests,
                    delete: s.delete,
                    expiry: s.expiry,
                    ttl_ms: 1_000,
                    depth: self.depth,
                };
                run_one(&SessionsModel::new(sc), &e.design, limits, |v| v.id())
            }
            FleetKind::World(w) => {
                let d = world_design(&e.design).unwrap_or_default();
                let sc = WorldScenario {
                    server: d.server,
                    relay: d.relay,
                    handover: d.handover,
                    resumed: d.resumed,
                    unrelated: d.unrelated,
                    answers: d.answers,
                    cancellations: d.cancellations,
                    broadcast: d.broadcast,
                    instances: w.instances,
                    client: w.client.clone(),
                    app: w.app.clone(),
                    background_get: w.background_get,
                    v2026: w.v2026,
                    attacker: w.attacker,
                    drops: w.drops,
                    kills: w.kills,
                    time_ms: w.time_ms,
                    store: w.store,
                    depth: self.depth,
                };
                run_one(&WorldModel::new(sc), &e.design, limits, |v| v.id())
            }
        }
    }
}

/// A world model's design: FIXED in every knob but the one it names.
#[derive(Clone, Copy, Debug, Default)]
struct WorldDesign {
    /// The instances' endpoint policy.
    server: ServerPolicy,
    relay: Relay,
    handover: Handover,
    resumed: ResumedGet,
    unrelated: Unrelated,
    answers: Answers,
    cancellations: Cancellations,
    broadcast: BroadcastDelivery,
}

/// A world file's design: a [`Relay`], [`Handover`], [`ResumedGet`],
/// [`Unrelated`], [`Answers`], [`Cancellations`] or [`BroadcastDelivery`]
/// value, or a server
/// preset's name (the instances' endpoints under it), every other knob as
/// FIXED.
fn world_design(design: &str) -> Option<WorldDesign> {
    let quoted = format!("{design:?}");
    let fixed = WorldDesign::default();
    if let Some(server) = ServerPolicy::preset(design) {
        return Some(WorldDesign { server, ..fixed });
    }
    if let Ok(relay) = serde_json::from_str::<Relay>(&quoted) {
        return Some(WorldDesign { relay, ..fixed });
    }
    if let Ok(handover) = serde_json::from_str::<Handover>(&quoted) {
        return Some(WorldDesign { handover, ..fixed });
    }
    if let Ok(resumed) = serde_json::from_str::<ResumedGet>(&quoted) {
        return Some(WorldDesign { resumed, ..fixed });
    }
    if let Ok(unrelated) = serde_json::from_str::<Unrelated>(&quoted) {
        return Some(WorldDesign { unrelated, ..fixed });
    }
    if let Ok(answers) = serde_json::from_str::<Answers>(&quoted) {
        return Some(WorldDesign { answers, ..fixed });
    }
    if let Ok(cancellations) = serde_json::from_str::<Cancellations>(&quoted) {
        return Some(WorldDesign {
            cancellations,
            ..fixed
        });
    }
    let broadcast = serde_json::from_str::<BroadcastDelivery>(&quoted).ok()?;
    Some(WorldDesign { broadcast, ..fixed })
}

fn run_one<M: Explorable>(
    model: &M,
    design: &str,
    limits: Limits,
    id: impl Fn(&M::Violation) -> &'static str,
) -> FleetRun
where
    M::Action: Debug,
{
    let o = explore(model, limits, |_| {});
    let (violated, steps) = match &o.counterexample {
        Some(c) => (
            Some(id(&c.violation)),
            c.steps.iter().map(|(_, a)| format!("{a:?}")).collect(),
        ),
        None => (None, Vec::new()),
    };
    FleetRun {
        design: design.to_owned(),
        violated,
        steps,
        states: o.states,
        depth: o.depth,
        elapsed: o.elapsed,
        exhaustive: o.exhaustive(),
        within_depth: o.holds_within_depth(),
    }
}
