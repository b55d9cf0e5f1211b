//! One model file of `models/`: a scenario, its bounds, and the verdict
//! expected for each server preset x client preset (see `docs/models.md`).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A step of a client's script, run in order when enabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientStep {
    /// `initialize` (enabled when the client has no live session).
    Initialize,
    /// A `tools/call` (enabled once the client is ready).
    Call,
    /// A client notification.
    Notify,
    /// Cancel the oldest request still pending.
    Cancel,
    /// The application answers the oldest request of the server it holds
    /// (`ClientSession::asked`: asked, not answered, not withdrawn by the
    /// server); enabled once it holds one. For an application that answers
    /// later than it is asked: with `settings.clients_answer` false,
    /// nothing else answers.
    Answer,
    /// DELETE the session.
    Close,
    /// Listen for tool list changes (`subscriptions/listen`, 2026-07-28;
    /// enabled once a 2026-07-28 client is ready).
    Listen,
    /// Turn attacker: with the session id of another client (the first
    /// other client with a session) and the last event id written on that
    /// session, try every verb on it under this client's own principal: a
    /// `tools/call` POST, a GET resuming from that event, a DELETE (I2);
    /// and a GET naming its own session that resumes from that event (I1).
    /// Enabled once another client has a session. A model with this step
    /// has its clients authenticate, each as a principal of its own.
    Hijack,
}

/// A step of the server application's script, run in order when enabled.
/// (Answers to requests are not scripted: any pending request may be answered
/// at any time, and the checker explores every order.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerStep {
    /// An unrelated notification (`notifications/tools/list_changed`).
    Notify,
    /// The registration hook's notification, right after `initialize` was answered
    /// (`notifications/resources/list_changed`).
    HookNotify,
    /// Progress for the oldest pending `tools/call`.
    Progress,
    /// A server-to-client request caused by the oldest pending `tools/call`.
    AskClient,
    /// Close the connection of the oldest pending `tools/call` for polling.
    CloseConnection,
    /// End the session of the oldest pending `tools/call` on the server's
    /// side (expired, restarted, deleted elsewhere): its streams end and
    /// the session is answered `404` from then on.
    EndSession,
    /// The tool list changed, for everyone: `ServerEndpoint::broadcast` of
    /// `notifications/tools/list_changed` (session-era sessions and listens
    /// alike). Enabled at any time.
    Broadcast,
}

/// Limits of the exploration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounds {
    /// Connection drops the network may inject.
    #[serde(default)]
    pub drops: u8,
    /// Whether a drop may go unnoticed by the server until later.
    #[serde(default)]
    pub silent_drops: bool,
    /// Longest path explored.
    pub depth: usize,
    /// Simulated time horizon, in ms.
    pub time_ms: u64,
    /// B5: GETs one session may see in a run without faults.
    #[serde(default)]
    pub gets_max: Option<usize>,
    /// Reconnections of one EventSource-style reader.
    #[serde(default = "default_reader_reconnects")]
    pub reader_reconnects: u32,
    /// Resumptions of one request without progress.
    #[serde(default = "default_resume_attempts")]
    pub resume_attempts: u32,
}

fn default_reader_reconnects() -> u32 {
    3
}

fn default_resume_attempts() -> u32 {
    2
}

/// Settings of the cores in this scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// SSE `retry` the server announces, in ms.
    #[serde(default = "default_retry")]
    pub retry_ms: u64,
    /// Request deadline of the clients, in ms.
    #[serde(default = "default_timeout")]
    pub request_timeout_ms: u64,
    /// Whether clients open the background GET.
    #[serde(default = "default_true")]
    pub background_get: bool,
    /// Events kept per stream for replay.
    #[serde(default = "default_events_max")]
    pub events_max: usize,
    /// The era each client speaks, by index: `v2025` (the default for
    /// clients not listed), `v2026` (2026-07-28) or `auto`.
    #[serde(default)]
    pub eras: Vec<mcp_streamable::client::ClientEra>,
    /// `auto` (the default: a clock per component where the checker's
    /// partial-order reduction can act, one clock elsewhere), `global` (one
    /// clock) or `per_component` (a clock per client and one for the
    /// server: what lets the reduction fold a client's steps against the
    /// others', `docs/reduction.md`).
    #[serde(default)]
    pub clocks: crate::sim::Clocks,
    /// How the application's `notify` reaches the sessions: `auto` (the
    /// default: `per_session` where the clocks are per component, `atomic`
    /// elsewhere), `atomic` (all at once) or `per_session` (each client's
    /// sessions at a time of their own, as a server whose broadcast loop
    /// runs beside its requests: every atomic order is among them). The
    /// reduction needs `per_session` when the server's script has `notify`.
    #[serde(default)]
    pub notify: NotifyReach,
    /// Whether the clients' applications answer the server's requests
    /// (`true`, the default). `false` is a client that never does (one
    /// that ignores an elicitation): what L1 must then report.
    #[serde(default = "default_true")]
    pub clients_answer: bool,
    /// How long the server waits for the client's answer to a request of
    /// its application, in ms (`null`: for ever). A deadline is what ends
    /// a question whose answer the network lost (L1).
    #[serde(default = "default_outbound_timeout")]
    pub outbound_timeout_ms: Option<u64>,
    /// How session-era POSTs are answered: `sse` (the default) or
    /// `json_when_alone` (JSON when the response is all there is).
    /// 2026-07-28 answers are always the latter.
    #[serde(default)]
    pub response_mode: mcp_streamable::server::ResponseMode,
    /// Connections each client's transport keeps to the server at once
    /// (`null`, the default: as many as asked). An exchange the pool has
    /// no room for waits until the client is done with an older one
    /// (`ClientConfig::connections_max`, which the client is told too).
    #[serde(default)]
    pub connections_max: Option<usize>,
    /// The number of the server's first request to a client in a session
    /// (1, the default; 0 as most SDKs number theirs:
    /// `SessionConfig::first_request_number`).
    #[serde(default = "default_first_request")]
    pub first_request_number: i64,
    /// Whether the application answers a call only once every request it
    /// sent the client for that call has ended (answered, failed, given
    /// up): a tool that awaits its elicitation. `false` (the default): the
    /// application may answer a call at any moment.
    #[serde(default)]
    pub calls_await_questions: bool,
}

fn default_first_request() -> i64 {
    1
}

fn default_outbound_timeout() -> Option<u64> {
    Some(2_000)
}

/// How a `notify` step reaches the sessions ([`Settings::notify`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyReach {
    /// A model's default: `PerSession` where the clocks are per component
    /// (the reduction needs it), `Atomic` elsewhere
    /// ([`crate::CheckModel::new`] decides; a world never sees it).
    #[default]
    Auto,
    /// Every session of the session era at once, in one step.
    Atomic,
    /// The step only says "notify everyone"; each client's sessions get it
    /// in a step of their own, later ([`super::Action::NotifySession`]).
    PerSession,
}

fn default_retry() -> u64 {
    500
}

fn default_timeout() -> u64 {
    4_000
}

fn default_true() -> bool {
    true
}

fn default_events_max() -> usize {
    8
}

impl Settings {
    /// Client `c`'s era: the one `eras` names, the session era past its end.
    pub fn era(&self, c: usize) -> mcp_streamable::client::ClientEra {
        self.eras.get(c).copied().unwrap_or_default()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            retry_ms: default_retry(),
            request_timeout_ms: default_timeout(),
            background_get: true,
            events_max: default_events_max(),
            eras: Vec::new(),
            clocks: crate::sim::Clocks::Auto,
            notify: NotifyReach::Auto,
            clients_answer: true,
            outbound_timeout_ms: default_outbound_timeout(),
            response_mode: mcp_streamable::server::ResponseMode::Sse,
            connections_max: None,
            first_request_number: default_first_request(),
            calls_await_questions: false,
        }
    }
}

/// The verdict a preset pair must get.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No violation within the bounds.
    Holds,
    /// A counterexample breaking one of these invariants.
    Violates(Vec<String>),
}

/// One expected verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// Server preset name (see `ServerPolicy::presets`).
    pub server: String,
    /// Client preset name (see `ClientPolicy::presets`).
    pub client: String,
    /// `"holds"` or `{"violates": ["B1", …]}`.
    pub verdict: Verdict,
    /// For `holds`: the least number of distinct states the exploration must
    /// visit, so a vacuous pass fails.
    #[serde(default)]
    pub min_states: Option<usize>,
    /// Invariant ids judged for this pair (overrides the scenario's `invariants`).
    #[serde(default)]
    pub judge: Vec<String>,
}

/// One scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name (the file stem by convention).
    pub name: String,
    /// What it shows.
    pub description: String,
    /// The script of each client (one entry per client).
    pub clients: Vec<Vec<ClientStep>>,
    /// The server application's script.
    #[serde(default)]
    pub server: Vec<ServerStep>,
    /// The invariant ids this scenario judges (empty: all).
    #[serde(default)]
    pub invariants: Vec<String>,
    /// Exploration limits.
    pub bounds: Bounds,
    /// Core settings.
    #[serde(default)]
    pub settings: Settings,
    /// Expected verdicts.
    pub expect: Vec<Expectation>,
}

/// A model file that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read: {error}")]
    Io {
        /// The file.
        file: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The JSON does not fit the schema.
    #[error("{file}: field `{field}`: {message}")]
    Schema {
        /// The file.
        file: PathBuf,
        /// Path of the offending field (`bounds.depth`, `expect[2].server`, …).
        field: String,
        /// What was expected.
        message: String,
    },
}

impl Scenario {
    /// Whether a client turns attacker (`hijack`): the world's clients
    /// then authenticate, and one client's requests reach another's session.
    pub fn has_attacker(&self) -> bool {
        self.clients
            .iter()
            .any(|script| script.contains(&ClientStep::Hijack))
    }

    /// Parses a scenario, naming the field at fault on error.
    pub fn parse(file: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let scenario: Scenario =
            serde_path_to_error::deserialize(de).map_err(|e| ScenarioError::Schema {
                file: file.to_owned(),
                field: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        scenario.validate(file)?;
        Ok(scenario)
    }

    /// Reads and parses a file.
    pub fn load(file: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(file).map_err(|error| ScenarioError::Io {
            file: file.to_owned(),
            error,
        })?;
        Self::parse(file, &text)
    }

    /// Every `*.json` of a directory, sorted by name.
    pub fn load_dir(dir: &Path) -> Result<Vec<(PathBuf, Scenario)>, ScenarioError> {
        json_files(dir)
            .map_err(|error| ScenarioError::Io {
                file: dir.to_owned(),
                error,
            })?
            .into_iter()
            .map(|f| Self::load(&f).map(|s| (f, s)))
            .collect()
    }

    pub(crate) fn validate(&self, file: &Path) -> Result<(), ScenarioError> {
        let err = |field: String, message: String| ScenarioError::Schema {
            file: file.to_owned(),
            field,
            message,
        };
        check_name(&self.name).map_err(|m| err("name".into(), m))?;
        let known = |field: String, ids: &[String]| match unknown_property(ids, &[]) {
            Some(id) => Err(err(
                field,
                format!(
                    "unknown property id {id:?}; expected one of {:?}",
                    crate::monitor::PROPERTIES
                ),
            )),
            None => Ok(()),
        };
        known("invariants".into(), &self.invariants)?;
        if self.clients.is_empty() || self.clients.len() > 3 {
            return Err(err(
                "clients".into(),
                "expected 1 to 3 client scripts".into(),
            ));
        }
        for (c, script) in self.clients.iter().enumerate() {
            let era = self.settings.era(c);
            let may_listen = era != mcp_streamable::client::ClientEra::V2025;
            let needs = "a client of era \"v2026\" or \"auto\" (settings.eras)";
            check_script(script, may_listen, needs).map_err(|m| err(format!("clients[{c}]"), m))?;
        }
        if self.settings.eras.len() > self.clients.len() {
            return Err(err(
                "settings.eras".into(),
                format!(
                    "{} eras for {} clients",
                    self.settings.eras.len(),
                    self.clients.len()
                ),
            ));
        }
        for (i, e) in self.expect.iter().enumerate() {
            if mcp_streamable::policy::ServerPolicy::preset(&e.server).is_none() {
                let names = mcp_streamable::policy::ServerPolicy::preset_names();
                return Err(err(
                    format!("expect[{i}].server"),
                    format!(
                        "unknown server preset {:?}; expected one of {names:?}",
                        e.server
                    ),
                ));
            }
            if mcp_streamable::policy::ClientPolicy::preset(&e.client).is_none() {
                let names = mcp_streamable::policy::ClientPolicy::preset_names();
                return Err(err(
                    format!("expect[{i}].client"),
                    format!(
                        "unknown client preset {:?}; expected one of {names:?}",
                        e.client
                    ),
                ));
            }
            known(format!("expect[{i}].judge"), &e.judge)?;
            if let Verdict::Violates(ids) = &e.verdict {
                if ids.is_empty() {
                    return Err(err(
                        format!("expect[{i}].verdict.violates"),
                        "expected at least one invariant id".into(),
                    ));
                }
                known(format!("expect[{i}].verdict.violates"), ids)?;
            }
        }
        if self.bounds.depth == 0 {
            return Err(err(
                "bounds.depth".into(),
                "expected a depth of at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// A client script whose steps can all run: a step that never can leaves
/// the script unfinished, and a run that does nothing "holds". Every script
/// opens with `initialize` (nothing else runs before a client has a session
/// or a discovered server), and only a client that may speak 2026-07-28
/// (`may_listen`; else the file is told what `listen` needs) listens.
/// Model files and fleet world files alike.
pub(crate) fn check_script(
    script: &[ClientStep],
    may_listen: bool,
    listen_needs: &str,
) -> Result<(), String> {
    if script.first() != Some(&ClientStep::Initialize) {
        return Err("expected a script that starts with \"initialize\"".into());
    }
    if !may_listen && script.contains(&ClientStep::Listen) {
        return Err(format!("\"listen\" needs {listen_needs}"));
    }
    Ok(())
}

/// The first of `ids` that names no property the monitor judges, nor one
/// of `also` (a fleet's own): a model naming it would judge nothing.
pub(crate) fn unknown_property<'a>(ids: &'a [String], also: &[&str]) -> Option<&'a String> {
    ids.iter().find(|id| {
        let id = id.as_str();
        !crate::monitor::PROPERTIES.contains(&id) && !also.contains(&id)
    })
}

/// A model's name names the files of its traces and pictures
/// (`target/check/NAME.SERVER.CLIENT.svg`), so it is one plain file-name
/// part: 1 to 128 ASCII letters, digits, `-`, `_` or `.`, not starting with
/// `.` (a name with `/` or `..` would write wherever the model says).
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() > 128 || name.starts_with('.') || !name.chars().all(plain) {
        return Err(format!(
            "{name:?} is not a plain name: use 1 to 128 letters, digits, '-', '_' or '.', \
             not starting with '.'"
        ));
    }
    Ok(())
}

/// Every `*.json` file of `dir`, sorted by name (model files, world and fleet).
pub(crate) fn json_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_the_field() {
        let f = Path::new("models/x.json");
        let e = Scenario::parse(f, r#"{"name":"x"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("models/x.json"), "{e}");
        assert!(
            e.contains("description") || e.contains("missing field"),
            "{e}"
        );
        let bad_depth = r#"{"name":"x","description":"d","clients":[["initialize"]],
            "bounds":{"depth":"deep","time_ms":1},"expect":[]}"#;
        let e = Scenario::parse(f, bad_depth).unwrap_err().to_string();
        assert!(e.contains("bounds.depth"), "{e}");
        let bad_preset = r#"{"name":"x","description":"d","clients":[["initialize"]],
            "bounds":{"depth":3,"time_ms":1},"expect":[{"server":"NOPE","client":"FIXED","verdict":"holds"}]}"#;
        let e = Scenario::parse(f, bad_preset).unwrap_err().to_string();
        assert!(e.contains("expect[0].server") && e.contains("NOPE"), "{e}");
        let bad_step = r#"{"name":"x","description":"d","clients":[["dance"]],
            "bounds":{"depth":3,"time_ms":1},"expect":[]}"#;
        let e = Scenario::parse(f, bad_step).unwrap_err().to_string();
        assert!(e.contains("clients[0][0]"), "{e}");
    }

    /// A change to a model's JSON.
    type Edit = fn(&mut serde_json::Value);

    /// A valid model with `edit` applied to its JSON.
    fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> Result<Scenario, ScenarioError> {
        let mut v = serde_json::json!({"name": "x", "description": "d",
            "clients": [["initialize"]], "invariants": ["B1"],
            "bounds": {"depth": 3, "time_ms": 1},
            "expect": [{"server": "FIXED", "client": "FIXED", "verdict": "holds", "judge": ["B4"]},
                       {"server": "RMCP_0_16", "client": "FIXED", "verdict": {"violates": ["B1"]}}]});
        edit(&mut v);
        Scenario::parse(Path::new("m.json"), &v.to_string())
    }

    #[test]
    fn a_property_id_that_names_nothing_is_refused_not_judged_as_holding() {
        assert!(edited(|_| {}).is_ok(), "the control");
        for (field, edit) in [
            (
                "invariants",
                (|v| v["invariants"][0] = "B99".into()) as fn(&mut serde_json::Value),
            ),
            ("expect[0].judge", |v| {
                v["expect"][0]["judge"][0] = "c2".into()
            }),
            ("expect[1].verdict.violates", |v| {
                v["expect"][1]["verdict"]["violates"][0] = "ZZ9".into()
            }),
        ] {
            let e = edited(edit).unwrap_err().to_string();
            assert!(
                e.contains(field) && e.contains("unknown property id"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_script_with_a_step_that_can_never_run_is_refused() {
        let cases: [(&str, Edit); 4] = [
            ("clients[0]", |v| {
                v["clients"][0] = serde_json::json!(["call"])
            }),
            ("clients[1]", |v| v["clients"][1] = serde_json::json!([])),
            ("clients[0]", |v| {
                v["clients"][0] = serde_json::json!(["initialize", "listen"])
            }),
            ("settings.eras", |v| {
                v["settings"] = serde_json::json!({"eras": ["v2026", "v2025", "auto"]})
            }),
        ];
        for (field, edit) in cases {
            let e = edited(|v| {
                v["clients"] = serde_json::json!([["initialize"], ["initialize"]]);
                edit(v)
            })
            .unwrap_err()
            .to_string();
            assert!(e.contains(&format!("field `{field}`")), "{e}");
        }
        let listens = edited(|v| {
            v["clients"][0] = serde_json::json!(["initialize", "listen"]);
            v["settings"] = serde_json::json!({"eras": ["auto"]});
        });
        assert!(listens.is_ok(), "an auto client may listen");
    }

    #[test]
    fn a_name_that_is_not_one_plain_file_name_part_is_refused() {
        let longest = "n".repeat(128);
        for name in ["lifecycle", "two_clients.v2", "A-1", &longest] {
            assert!(edited(|v| v["name"] = name.into()).is_ok(), "{name}");
        }
        let long = "n".repeat(129);
        for name in [
            "",
            "../../etc/x",
            "a/b",
            ".hidden",
            "a\\b",
            "a b",
            "ü",
            &long,
        ] {
            let e = edited(|v| v["name"] = name.into()).unwrap_err().to_string();
            assert!(e.contains("field `name`"), "{name:?}: {e}");
        }
    }
}
