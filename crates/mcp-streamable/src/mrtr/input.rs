//! `InputRequiredResult`: a server asking for input in the 2026-07-28 era
//! (`basic/patterns/mrtr.mdx`), with the spec's server rules as typed
//! errors, so an application cannot send what a client must not receive:
//! only on `tools/call`, `prompts/get` and `resources/read`; at least one of
//! `inputRequests` and `requestState`; keys unique (a map); and never an
//! input request of a kind the client did not declare (`elicitation`,
//! `sampling`, `roots` in its `_meta` capabilities). A request the server
//! cannot serve without such a capability is refused with -32021
//! ([`missing_capability`]; the core answers it with HTTP 400).

use crate::jsonrpc::{ErrorObject, RawJson, MISSING_CLIENT_CAPABILITY};
use crate::v2026::META_CLIENT_CAPABILITIES;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The requests that may be answered with an `InputRequiredResult`.
pub const METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// The longest a map of input requests may be: each is shown to a user or
/// sent to a model before the retry.
pub const INPUT_REQUESTS_MAX: usize = 16;

/// The kinds of input a server may ask for, each under a client capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum InputKind {
    /// `elicitation/create`: ask the user.
    Elicitation,
    /// `sampling/createMessage`: ask the client's model.
    Sampling,
    /// `roots/list`: ask for the client's roots.
    Roots,
}

impl InputKind {
    /// The request's method.
    pub const fn method(self) -> &'static str {
        match self {
            InputKind::Elicitation => "elicitation/create",
            InputKind::Sampling => "sampling/createMessage",
            InputKind::Roots => "roots/list",
        }
    }

    /// The client capability it needs.
    pub const fn capability(self) -> &'static str {
        match self {
            InputKind::Elicitation => "elicitation",
            InputKind::Sampling => "sampling",
            InputKind::Roots => "roots",
        }
    }

    /// The kind of a method, if it is one.
    pub fn of_method(method: &str) -> Option<InputKind> {
        [
            InputKind::Elicitation,
            InputKind::Sampling,
            InputKind::Roots,
        ]
        .into_iter()
        .find(|k| k.method() == method)
    }
}

/// Why an `InputRequiredResult` is not one the spec allows: a server
/// application's misuse (nothing was sent), or, read by a client, a
/// server's breach.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The spec allows an `InputRequiredResult` only on [`METHODS`].
    #[error("{0} may not be answered with InputRequiredResult")]
    NotForMethod(String),
    /// Neither input requests nor a state: the client would have nothing to do.
    #[error("an InputRequiredResult needs inputRequests or requestState")]
    Empty,
    /// More than [`INPUT_REQUESTS_MAX`] input requests.
    #[error("more than {INPUT_REQUESTS_MAX} input requests")]
    TooMany,
    /// The client did not declare the capability this input request needs.
    #[error("the client did not declare {}", .0.capability())]
    Undeclared(InputKind),
    /// An input request of no known kind, or `inputRequests` not a map
    /// (only a result read off the wire can be this).
    #[error("an input request of no known kind")]
    UnknownKind,
    /// `requestState` that is not a string (off the wire only).
    #[error("requestState is not a string")]
    StateNotAString,
}

impl InputError {
    /// The reason as a `ClientError::Malformed` carries it.
    pub const fn as_static(&self) -> &'static str {
        match self {
            InputError::NotForMethod(_) => {
                "an InputRequiredResult on a method that cannot take one"
            }
            InputError::Empty => {
                "an InputRequiredResult with neither inputRequests nor requestState"
            }
            InputError::TooMany => "more input requests than INPUT_REQUESTS_MAX",
            InputError::Undeclared(_) => "an input request of a kind the client did not declare",
            InputError::UnknownKind => "an input request of no known kind",
            InputError::StateNotAString => "requestState is not a string",
        }
    }
}

/// What a lawful `InputRequiredResult` asks: its input requests (none when
/// absent or empty) and its state.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// `inputRequests`, by the server's keys.
    pub requests: Option<Map<String, Value>>,
    /// `requestState`, to be echoed verbatim.
    pub state: Option<String>,
}

/// The spec's rules for an `InputRequiredResult` answering `method` from a
/// client with `capabilities`, checked once for both sides: the server
/// before it sends one ([`input_required`]), the client before it asks its
/// application.
pub fn check_asked(
    method: &str,
    capabilities: &ClientCapabilities,
    result: &Value,
) -> Result<Asked, InputError> {
    if !METHODS.contains(&method) {
        return Err(InputError::NotForMethod(method.to_owned()));
    }
    let state = match result.get("requestState") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(InputError::StateNotAString),
    };
    let requests = match result.get("inputRequests") {
        None => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => return Err(InputError::UnknownKind),
    };
    if requests.is_none() && state.is_none() {
        return Err(InputError::Empty);
    }
    let asked = requests.iter().flat_map(Map::values);
    if asked.clone().count() > INPUT_REQUESTS_MAX {
        return Err(InputError::TooMany);
    }
    for request in asked {
        let method = request.get("method").and_then(Value::as_str);
        let kind = method
            .and_then(InputKind::of_method)
            .ok_or(InputError::UnknownKind)?;
        if !capabilities.allows(kind) {
            return Err(InputError::Undeclared(kind));
        }
    }
    Ok(Asked { requests, state })
}

/// The capabilities a 2026-07-28 request's client declared (`_meta`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientCapabilities(Map<String, Value>);

impl ClientCapabilities {
    /// The capabilities in `params._meta` of a 2026-07-28 request (none if absent).
    pub fn of(params: Option<&Value>) -> Self {
        let meta = params.and_then(|p| p.get("_meta"));
        Self::declared(meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES)))
    }

    /// A client's own `capabilities` object (none if absent or not an object).
    pub fn declared(capabilities: Option<&Value>) -> Self {
        ClientCapabilities(
            capabilities
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        )
    }

    /// Whether the client declared what `kind` needs.
    pub fn allows(&self, kind: InputKind) -> bool {
        self.0.get(kind.capability()).is_some_and(Value::is_object)
    }
}

/// The input requests of one answer, by the server's key for each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequests(BTreeMap<String, (InputKind, Value)>);

impl InputRequests {
    /// No requests yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the request under `key`.
    pub fn ask(mut self, key: impl Into<String>, kind: InputKind, params: Value) -> Self {
        self.0.insert(key.into(), (kind, params));
        self
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn to_value(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(k, (kind, params))| {
                    (
                        k.clone(),
                        json!({"method": kind.method(), "params": params}),
                    )
                })
                .collect(),
        )
    }
}

/// The `InputRequiredResult` answering `method` from a client with
/// `capabilities`, or why it may not be sent.
pub fn input_required(
    method: &str,
    capabilities: &ClientCapabilities,
    requests: &InputRequests,
    request_state: Option<&str>,
) -> Result<RawJson, InputError> {
    let mut result = Map::new();
    result.insert("resultType".into(), Value::from("input_required"));
    if !requests.is_empty() {
        result.insert("inputRequests".into(), requests.to_value());
    }
    if let Some(s) = request_state {
        result.insert("requestState".into(), Value::from(s));
    }
    let result = Value::Object(result);
    check_asked(method, capabilities, &result)?;
    Ok(RawJson::new(&result))
}

/// Whether `result` is an `InputRequiredResult` (the client core and the
/// monitor decide it alike). Cheap for every other answer: no parse
/// unless the marker is in the text.
pub fn is_input_required(result: &RawJson) -> bool {
    result.as_str().contains("input_required")
        && result.to_value().get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The client's answers on a retry (`params.inputResponses`), by key; empty
/// if it sent none or not a map.
pub fn input_responses(params: Option<&Value>) -> Map<String, Value> {
    params
        .and_then(|p| p.get("inputResponses"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The state a retry echoes (`params.requestState`), if any.
pub fn request_state(params: Option<&Value>) -> Option<&str> {
    params
        .and_then(|p| p.get("requestState"))
        .and_then(Value::as_str)
}

/// -32021: the request needs client capabilities it did not declare
/// (`data.requiredCapabilities`, each an object, as `_meta` declares them).
pub fn missing_capability(kinds: &[InputKind]) -> ErrorObject {
    let required: Map<String, Value> = kinds
        .iter()
        .map(|k| (k.capability().to_owned(), json!({})))
        .collect();
    let names: Vec<&str> = kinds.iter().map(|k| k.capability()).collect();
    ErrorObject {
        code: MISSING_CLIENT_CAPABILITY,
        message: format!("missing client capability: {}", names.join(", ")),
        data: Some(RawJson::new(&json!({"requiredCapabilities": required}))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        ClientCapabilities::of(Some(&json!({"_meta": {META_CLIENT_CAPABILITIES: v}})))
    }

    #[test]
    fn the_spec_rules_are_errors_before_anything_is_sent() {
        let all = caps(json!({"elicitation": {}, "sampling": {}, "roots": {}}));
        let ask = InputRequests::new().ask("name", InputKind::Elicitation, json!({}));
        assert_eq!(
            input_required("tools/list", &all, &ask, None),
            Err(InputError::NotForMethod("tools/list".into()))
        );
        assert_eq!(
            input_required("tools/call", &all, &InputRequests::new(), None),
            Err(InputError::Empty)
        );
        assert_eq!(
            input_required("tools/call", &caps(json!({"sampling": {}})), &ask, None),
            Err(InputError::Undeclared(InputKind::Elicitation))
        );
        let many = (0..=INPUT_REQUESTS_MAX).fold(InputRequests::new(), |r, i| {
            r.ask(format!("k{i}"), InputKind::Roots, json!({}))
        });
        assert_eq!(
            input_required("tools/call", &all, &many, None),
            Err(InputError::TooMany)
        );
        let ok = input_required("prompts/get", &all, &ask, Some("s")).unwrap();
        assert_eq!(
            ok.to_value(),
            json!({"resultType": "input_required", "requestState": "s",
                   "inputRequests": {"name": {"method": "elicitation/create", "params": {}}}})
        );
        // A state alone is enough: the client retries at once.
        assert!(input_required(
            "resources/read",
            &caps(json!({})),
            &InputRequests::new(),
            Some("s")
        )
        .is_ok());
    }

    #[test]
    fn a_capability_is_declared_only_as_an_object() {
        let c = caps(json!({"sampling": {}, "elicitation": true}));
        assert!(c.allows(InputKind::Sampling));
        assert!(!c.allows(InputKind::Elicitation));
        assert!(!c.allows(InputKind::Roots));
        assert!(!ClientCapabilities::of(None).allows(InputKind::Sampling));
    }

    #[test]
    fn missing_capability_names_each_as_an_object() {
        let e = missing_capability(&[InputKind::Sampling]);
        assert_eq!(e.code, -32021);
        assert_eq!(
            e.data.unwrap().to_value(),
            json!({"requiredCapabilities": {"sampling": {}}})
        );
    }

    #[test]
    fn input_requests_up_to_the_bound_are_sent() {
        let all = caps(json!({"roots": {}}));
        assert!(InputRequests::new().is_empty());
        assert_eq!(InputRequests::new().len(), 0);
        let at = (0..INPUT_REQUESTS_MAX).fold(InputRequests::new(), |r, i| {
            r.ask(format!("k{i}"), InputKind::Roots, json!({}))
        });
        assert_eq!(at.len(), INPUT_REQUESTS_MAX);
        assert!(!at.is_empty());
        let sent = input_required("tools/call", &all, &at, None).unwrap();
        let asked = check_asked("tools/call", &all, &sent.to_value()).unwrap();
        assert_eq!(asked.requests.map(|m| m.len()), Some(INPUT_REQUESTS_MAX));
    }

    #[test]
    fn an_empty_input_requests_map_is_none_and_needs_a_state() {
        let none = caps(json!({}));
        let with_state =
            json!({"resultType": "input_required", "inputRequests": {}, "requestState": "s"});
        assert_eq!(
            check_asked("tools/call", &none, &with_state),
            Ok(Asked {
                requests: None,
                state: Some("s".into())
            })
        );
        let without = json!({"resultType": "input_required", "inputRequests": {}});
        assert_eq!(
            check_asked("tools/call", &none, &without),
            Err(InputError::Empty)
        );
    }

    #[test]
    fn only_its_result_type_makes_an_input_required_result() {
        let parse = |t: &str| RawJson::parse(t).unwrap();
        assert!(is_input_required(&parse(
            r#"{"resultType":"input_required","requestState":"s"}"#
        )));
        // The marker as text elsewhere is not one (the cheap test alone would say so).
        assert!(!is_input_required(&parse(
            r#"{"content":[{"type":"text","text":"input_required"}]}"#
        )));
        assert!(!is_input_required(&parse(r#"{"resultType":"complete"}"#)));
    }

    #[test]
    fn every_input_error_has_its_own_reason() {
        let errors = [
            InputError::NotForMethod("x".into()),
            InputError::Empty,
            InputError::TooMany,
            InputError::Undeclared(InputKind::Roots),
            InputError::UnknownKind,
            InputError::StateNotAString,
        ];
        let reasons: std::collections::BTreeSet<&str> =
            errors.iter().map(InputError::as_static).collect();
        assert_eq!(reasons.len(), errors.len());
        assert!(InputError::TooMany
            .as_static()
            .contains("INPUT_REQUESTS_MAX"));
        assert!(InputError::Empty.as_static().contains("requestState"));
    }

    #[test]
    fn a_retry_reads_back_as_sent() {
        let p = json!({"inputResponses": {"a": {"action": "accept"}}, "requestState": "xyz"});
        assert_eq!(input_responses(Some(&p))["a"]["action"], "accept");
        assert_eq!(request_state(Some(&p)), Some("xyz"));
        assert!(input_responses(Some(&json!({"inputResponses": null}))).is_empty());
        assert_eq!(request_state(None), None);
    }
}
