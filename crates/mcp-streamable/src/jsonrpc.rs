//! JSON-RPC 2.0 messages, parsed once at the edge.
//!
//! Parameters, results and error data stay raw JSON text ([`RawJson`]): the
//! transport never needs their tree, and text is `Hash + Eq`, which the model
//! checker needs to fingerprint whole worlds.

use crate::ids::RequestId;
use crate::version::ProtocolVersion;
use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use std::fmt;

/// The notification that withdraws a request (`basic/utilities/cancellation.mdx`).
pub const CANCELLED: &str = "notifications/cancelled";

/// The request a `notifications/cancelled` names (its `requestId`), with
/// its `reason` if it gives one.
pub fn cancelled_request(params: Option<&RawJson>) -> Option<(RequestId, Option<String>)> {
    let params = params?.to_value();
    let id = serde_json::from_value(params.get("requestId")?.clone()).ok()?;
    let reason = params
        .get("reason")
        .and_then(|r| r.as_str())
        .map(str::to_owned);
    Some((id, reason))
}

/// Parse error: the body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid JSON-RPC message.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Generic transport-level error (server-defined range), used with an HTTP error status.
pub const TRANSPORT_ERROR: i64 = -32000;
/// A request given up because the request it was sent for was cancelled
/// (in JSON-RPC's reserved range: the code LSP gives a cancelled request).
pub const REQUEST_CANCELLED: i64 = -32800;
/// A request given up at its deadline, unanswered (the code the TypeScript
/// and Python SDKs give a request that timed out).
pub const REQUEST_TIMEOUT: i64 = -32001;
/// 2026-07-28: a standard header missing or disagreeing with the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability it did not declare.
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the protocol version is not supported (data: `supported`, `requested`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A compact JSON value kept as text, shared: a message replayed from an
/// event log, held for a late stream or copied by a checker shares its
/// parameters and results rather than copying them.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RawJson(std::sync::Arc<str>);

impl RawJson {
    /// Wraps text that the caller guarantees is one valid JSON value.
    fn from_trusted(text: String) -> Self {
        RawJson(text.into())
    }

    /// Serializes any value.
    pub fn new<T: Serialize>(value: &T) -> Self {
        RawJson(
            serde_json::to_string(value)
                .unwrap_or_else(|_| "null".to_owned())
                .into(),
        )
    }

    /// Parses text, checking it is one JSON value.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        let raw: Box<RawValue> = serde_json::from_str(text)?;
        Ok(RawJson(raw.get().into()))
    }

    /// `{}`.
    pub fn empty_object() -> Self {
        RawJson("{}".into())
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value as a tree.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<serde_json::Value> for RawJson {
    fn from(v: serde_json::Value) -> Self {
        // `to_string` through `Display` writes by way of a formatter: slower.
        RawJson::from_trusted(serde_json::to_string(&v).unwrap_or_else(|_| "null".to_owned()))
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw: Box<RawValue> = Deserialize::deserialize(d)?;
        Ok(RawJson::from_trusted(raw.get().to_owned()))
    }
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional details.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_raw"
    )]
    pub data: Option<RawJson>,
}

impl ErrorObject {
    /// An error with no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// One JSON-RPC message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Message {
    /// A request: expects exactly one response with the same id.
    Request {
        /// The id.
        id: RequestId,
        /// The method.
        method: String,
        /// The parameters.
        params: Option<RawJson>,
    },
    /// A notification: no id, no response (R46).
    Notification {
        /// The method.
        method: String,
        /// The parameters.
        params: Option<RawJson>,
    },
    /// A successful response.
    Response {
        /// The id of the request answered.
        id: RequestId,
        /// The result.
        result: RawJson,
    },
    /// An error response; `id` is `None` only when the request's id was unreadable (R47).
    Error {
        /// The id of the request answered.
        id: Option<RequestId>,
        /// The error.
        error: ErrorObject,
    },
}

impl Message {
    /// About how many bytes this message takes as JSON: its raw values, method,
    /// id and error text plus a fixed allowance for the envelope. O(1); what
    /// the cores' `*_bytes_max` bounds count.
    pub fn approx_len(&self) -> usize {
        const ENVELOPE: usize = 40;
        let raw = |r: &Option<RawJson>| r.as_ref().map_or(0, |r| r.0.len());
        let id = |id: &RequestId| match id {
            RequestId::Num(_) => 20,
            RequestId::Str(s) => s.len() + 2,
        };
        ENVELOPE
            + match self {
                Message::Request {
                    id: i,
                    method,
                    params,
                } => id(i) + method.len() + raw(params),
                Message::Notification { method, params } => method.len() + raw(params),
                Message::Response { id: i, result } => id(i) + result.0.len(),
                Message::Error { id: i, error } => {
                    i.as_ref().map_or(4, id) + error.message.len() + raw(&error.data) + 20
                }
            }
    }

    /// A request.
    pub fn request(id: impl Into<RequestId>, method: &str, params: Option<RawJson>) -> Self {
        Message::Request {
            id: id.into(),
            method: method.to_owned(),
            params,
        }
    }

    /// A notification.
    pub fn notification(method: &str, params: Option<RawJson>) -> Self {
        Message::Notification {
            method: method.to_owned(),
            params,
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Message::Request { id, .. } | Message::Response { id, .. } => Some(id),
            Message::Error { id, .. } => id.as_ref(),
            Message::Notification { .. } => None,
        }
    }

    /// Whether this answers a request (result or error).
    pub fn is_response(&self) -> bool {
        matches!(self, Message::Response { .. } | Message::Error { .. })
    }

    /// Whether this is a request.
    pub fn is_request(&self) -> bool {
        matches!(self, Message::Request { .. })
    }

    /// Whether this is the `initialize` request.
    pub fn is_initialize(&self) -> bool {
        matches!(self, Message::Request { method, .. } if method == "initialize")
    }

    /// The `progressToken` of a `notifications/progress`, or of a request's `_meta`.
    pub fn progress_token(&self) -> Option<serde_json::Value> {
        let (params, in_meta) = match self {
            Message::Notification { method, params } if method == "notifications/progress" => {
                (params.as_ref()?, false)
            }
            Message::Request { params, .. } => (params.as_ref()?, true),
            _ => return None,
        };
        let v = params.to_value();
        let token = if in_meta {
            v.get("_meta")?.get("progressToken")?
        } else {
            v.get("progressToken")?
        };
        Some(token.clone())
    }

    /// Serializes to compact JSON: the bytes of its [`Serialize`] form (a
    /// test holds them equal), written directly. Parameters and results are
    /// already JSON text ([`RawJson`] is valid by construction), so they are
    /// copied in, not re-validated as serde's raw values are on every write
    /// (2% of a `tools/call`'s CPU in the HTTP server: docs/performance.md).
    pub fn to_json(&self) -> String {
        let raw = |r: &RawJson| r.as_str().len();
        let len = match self {
            Message::Request { method, params, .. } | Message::Notification { method, params } => {
                method.len() + params.as_ref().map_or(0, raw)
            }
            Message::Response { result, .. } => raw(result),
            Message::Error { error, .. } => {
                error.message.len() + error.data.as_ref().map_or(0, raw)
            }
        };
        let mut out = String::with_capacity(len + 64);
        out.push_str("{\"jsonrpc\":\"2.0\"");
        match self {
            Message::Request { id, method, params } => {
                push_id(&mut out, Some(id));
                push_entry(&mut out, "method", &json_string(method));
                if let Some(p) = params {
                    push_entry(&mut out, "params", p.as_str());
                }
            }
            Message::Notification { method, params } => {
                push_entry(&mut out, "method", &json_string(method));
                if let Some(p) = params {
                    push_entry(&mut out, "params", p.as_str());
                }
            }
            Message::Response { id, result } => {
                push_id(&mut out, Some(id));
                push_entry(&mut out, "result", result.as_str());
            }
            Message::Error { id, error } => {
                push_id(&mut out, id.as_ref());
                let error = serde_json::to_string(error).unwrap_or_default();
                push_entry(&mut out, "error", &error);
            }
        }
        out.push('}');
        out
    }
}

/// Appends `,"key":value` (`value` already JSON text).
fn push_entry(out: &mut String, key: &str, value: &str) {
    out.push_str(",\"");
    out.push_str(key);
    out.push_str("\":");
    out.push_str(value);
}

/// Appends `,"id":…` (`null` when unreadable).
fn push_id(out: &mut String, id: Option<&RequestId>) {
    match id {
        Some(RequestId::Num(n)) => push_entry(out, "id", &n.to_string()),
        Some(RequestId::Str(s)) => push_entry(out, "id", &json_string(s)),
        None => push_entry(out, "id", "null"),
    }
}

/// A string as JSON text, escaped as serde_json escapes it.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Message::Request { id, method, params } => {
                m.serialize_entry("id", id)?;
                m.serialize_entry("method", method)?;
                if let Some(p) = params {
                    m.serialize_entry("params", p)?;
                }
            }
            Message::Notification { method, params } => {
                m.serialize_entry("method", method)?;
                if let Some(p) = params {
                    m.serialize_entry("params", p)?;
                }
            }
            Message::Response { id, result } => {
                m.serialize_entry("id", id)?;
                m.serialize_entry("result", result)?;
            }
            Message::Error { id, error } => {
                m.serialize_entry("id", id)?;
                m.serialize_entry("error", error)?;
            }
        }
        m.end()
    }
}

/// The fields of any JSON-RPC object, before classification.
#[derive(Deserialize)]
struct WireMessage {
    jsonrpc: Option<String>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Box<RawValue>>,
    method: Option<String>,
    #[serde(default, deserialize_with = "present_raw")]
    params: Option<RawJson>,
    #[serde(default, deserialize_with = "present_raw")]
    result: Option<RawJson>,
    error: Option<ErrorObject>,
}

/// Keeps a present `null` as the JSON value `null` (a response's result may
/// be null), where serde would read it as absent.
fn present_raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RawJson>, D::Error> {
    RawJson::deserialize(d).map(Some)
}

/// Keeps `"id": null` distinguishable from an absent id.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

fn parse_id(raw: &RawValue) -> Result<RequestId, &'static str> {
    let text = raw.get();
    if text == "null" {
        return Err("id must not be null");
    }
    if text.starts_with('"') {
        return serde_json::from_str::<String>(text)
            .map(RequestId::Str)
            .map_err(|_| "id string is invalid");
    }
    serde_json::from_str::<i64>(text)
        .map(RequestId::Num)
        .map_err(|_| "id must be a string or an integer")
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireMessage::deserialize(d)?;
        classify(w).map_err(D::Error::custom)
    }
}

fn classify(w: WireMessage) -> Result<Message, &'static str> {
    if w.jsonrpc.as_deref() != Some("2.0") {
        return Err("jsonrpc must be \"2.0\"");
    }
    let id = w.id.as_deref().map(parse_id).transpose();
    match (w.method, w.result, w.error) {
        (Some(method), None, None) => match w.id {
            None => Ok(Message::Notification {
                method,
                params: w.params,
            }),
            Some(_) => Ok(Message::Request {
                id: id?.ok_or("id missing")?,
                method,
                params: w.params,
            }),
        },
        (None, Some(result), None) => Ok(Message::Response {
            id: id?.ok_or("response without id")?,
            result,
        }),
        (None, None, Some(error)) => {
            // An error may carry a null id when the request's id was unreadable (R47).
            let id = match w.id.as_deref() {
                Some(raw) if raw.get() == "null" => None,
                Some(raw) => Some(parse_id(raw)?),
                None => None,
            };
            Ok(Message::Error { id, error })
        }
        _ => Err("exactly one of method, result or error is required"),
    }
}

/// Why a POST body is not a JSON-RPC message the server can take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The body is not JSON (-32700).
    #[error("parse error: {0}")]
    NotJson(String),
    /// JSON, but not a JSON-RPC 2.0 message (-32600).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// A batch, which this protocol version does not accept (-32600, R48).
    #[error("batches are not accepted in protocol version {0}")]
    BatchNotAllowed(ProtocolVersion),
    /// An empty batch (-32600).
    #[error("invalid request: empty batch")]
    EmptyBatch,
    /// The body is not UTF-8 (-32700, R45).
    #[error("parse error: body is not UTF-8")]
    NotUtf8,
}

impl ParseError {
    /// The JSON-RPC error code for this failure.
    pub fn code(&self) -> i64 {
        match self {
            ParseError::NotJson(_) | ParseError::NotUtf8 => PARSE_ERROR,
            ParseError::Invalid(_) | ParseError::BatchNotAllowed(_) | ParseError::EmptyBatch => {
                INVALID_REQUEST
            }
        }
    }

    /// The error object to send back.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(self.code(), self.to_string())
    }
}

/// A parsed POST body.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Body {
    /// One message.
    Single(Message),
    /// Several messages (2025-03-26 only).
    Batch(Vec<Message>),
}

impl Body {
    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        match self {
            Body::Single(m) => std::slice::from_ref(m),
            Body::Batch(ms) => ms,
        }
    }

    /// Takes the messages.
    pub fn into_messages(self) -> Vec<Message> {
        match self {
            Body::Single(m) => vec![m],
            Body::Batch(ms) => ms,
        }
    }
}

/// Parses a POST body. Batches are accepted only when `version` allows them
/// (2025-03-26, R48); whether `initialize` may be batched is the caller's rule.
pub fn parse_body(bytes: &[u8], version: ProtocolVersion) -> Result<Body, ParseError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ParseError::NotUtf8)?;
    let first = text.bytes().find(|b| !b.is_ascii_whitespace());
    if first != Some(b'[') {
        return parse_one(text).map(Body::Single);
    }
    let items: Vec<Box<RawValue>> =
        serde_json::from_str(text).map_err(|e| ParseError::NotJson(e.to_string()))?;
    if !version.accepts_batches() {
        return Err(ParseError::BatchNotAllowed(version));
    }
    if items.is_empty() {
        return Err(ParseError::EmptyBatch);
    }
    let msgs = items
        .iter()
        .map(|raw| parse_one(raw.get()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Body::Batch(msgs))
}

/// Parses exactly one message.
pub fn parse_message(text: &str) -> Result<Message, ParseError> {
    parse_one(text)
}

fn parse_one(text: &str) -> Result<Message, ParseError> {
    let w: WireMessage = match serde_json::from_str(text) {
        Ok(w) => w,
        Err(e) if e.is_syntax() || e.is_eof() => return Err(ParseError::NotJson(e.to_string())),
        Err(e) => return Err(ParseError::Invalid(e.to_string())),
    };
    classify(w).map_err(|e| ParseError::Invalid(e.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of message, its variable parts `s` (ids, method, error
    /// text) and `n` (a JSON string value) bytes long.
    fn every_kind(s: usize, n: usize) -> Vec<Message> {
        let text = |n: usize| RawJson::from(serde_json::json!("x".repeat(n)));
        let id = || RequestId::Str("i".repeat(s));
        vec![
            Message::Request {
                id: id(),
                method: "m".repeat(s),
                params: Some(text(n)),
            },
            Message::Notification {
                method: "m".repeat(s),
                params: Some(text(n)),
            },
            Message::Response {
                id: id(),
                result: text(n),
            },
            Message::Error {
                id: Some(id()),
                error: ErrorObject {
                    code: -32000,
                    message: "e".repeat(s),
                    data: Some(text(n)),
                },
            },
        ]
    }

    #[test]
    fn only_progress_notifications_and_requests_carry_a_progress_token() {
        let params = || Some(RawJson::from(serde_json::json!({"progressToken": 7})));
        let progress = Message::notification("notifications/progress", params());
        assert_eq!(progress.progress_token(), Some(serde_json::json!(7)));
        let other = Message::notification("notifications/message", params());
        assert_eq!(other.progress_token(), None, "not a progress notification");
    }

    /// `approx_len` is what the byte budgets count: it must grow byte for
    /// byte with what a message carries, and stay near its JSON length.
    #[test]
    fn approx_len_grows_with_the_json_and_stays_near_it() {
        for (small, big) in every_kind(3, 10).into_iter().zip(every_kind(53, 1010)) {
            let (a, j) = (small.approx_len(), small.to_json().len());
            let (big_a, big_j) = (big.approx_len(), big.to_json().len());
            assert_eq!(big_a - a, big_j - j, "grows as the JSON: {big:?}");
            assert!(a.abs_diff(j) <= 16, "{a} for {j} bytes: {small:?}");
        }
    }

    /// `to_json` writes the message directly; its [`Serialize`] form is the
    /// reference, byte for byte: every kind, numeric and string ids that need
    /// escaping, an unreadable id, parameters kept as the peer wrote them
    /// (spaces, escapes, non-ASCII), a null result, errors with and without data.
    #[test]
    fn to_json_is_the_serialize_form_byte_for_byte() {
        let raw = |t: &str| RawJson::parse(t).unwrap();
        let mut all = every_kind(0, 0);
        all.extend(every_kind(7, 40));
        for id in [
            RequestId::Num(-9_007_199_254_740_993),
            RequestId::Num(0),
            RequestId::Str("quote\"back\\slash\u{7}ctl é".into()),
        ] {
            all.push(Message::Request {
                id: id.clone(),
                method: "tools/\"call\"\n".into(),
                params: Some(raw(r#"{ "a" : [1, 2.5e3, "\u00e9\n"], "b": null }"#)),
            });
            all.push(Message::Request {
                id: id.clone(),
                method: "ping".into(),
                params: None,
            });
            all.push(Message::Response {
                id: id.clone(),
                result: raw("null"),
            });
            all.push(Message::Error {
                id: Some(id),
                error: ErrorObject {
                    code: INVALID_PARAMS,
                    message: "bad \"x\" ü".into(),
                    data: None,
                },
            });
        }
        all.push(Message::Notification {
            method: "notifications/initialized".into(),
            params: None,
        });
        all.push(Message::Error {
            id: None,
            error: ErrorObject {
                code: PARSE_ERROR,
                message: "Parse error".into(),
                data: Some(raw(r#"{"line": 1}"#)),
            },
        });
        for m in &all {
            assert_eq!(m.to_json(), serde_json::to_string(m).unwrap(), "{m:?}");
            assert_eq!(&parse_message(&m.to_json()).unwrap(), m, "round trip");
        }
    }

    fn p(s: &str) -> Result<Message, ParseError> {
        parse_message(s)
    }

    #[test]
    fn classifies_each_kind() {
        assert!(matches!(
            p(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Message::Request {
                id: RequestId::Num(1),
                ..
            })
        ));
        assert!(matches!(
            p(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            p(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Message::Response { .. })
        ));
        assert!(matches!(
            p(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#),
            Ok(Message::Error { id: None, .. })
        ));
        // A null result is a result.
        assert!(matches!(
            p(r#"{"jsonrpc":"2.0","id":1,"result":null}"#),
            Ok(Message::Response { .. })
        ));
    }

    #[test]
    fn typed_errors() {
        assert_eq!(p("{").unwrap_err().code(), PARSE_ERROR);
        assert_eq!(p("not json").unwrap_err().code(), PARSE_ERROR);
        assert_eq!(p("{}").unwrap_err().code(), INVALID_REQUEST);
        assert_eq!(p("42").unwrap_err().code(), INVALID_REQUEST);
        assert_eq!(
            p(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#)
                .unwrap_err()
                .code(),
            INVALID_REQUEST
        );
        assert_eq!(
            p(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#)
                .unwrap_err()
                .code(),
            INVALID_REQUEST
        );
        assert_eq!(
            p(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#)
                .unwrap_err()
                .code(),
            INVALID_REQUEST
        );
        assert_eq!(
            p(r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}"#)
                .unwrap_err()
                .code(),
            INVALID_REQUEST
        );
        assert_eq!(
            parse_body(&[0xff, 0xfe], ProtocolVersion::LATEST)
                .unwrap_err()
                .code(),
            PARSE_ERROR
        );
    }

    #[test]
    fn batches_only_in_2025_03_26() {
        let b = br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]"#;
        let ok = parse_body(b, ProtocolVersion::V2025_03_26).unwrap();
        assert_eq!(ok.messages().len(), 2);
        assert_eq!(
            parse_body(b, ProtocolVersion::V2025_06_18),
            Err(ParseError::BatchNotAllowed(ProtocolVersion::V2025_06_18))
        );
        assert_eq!(
            parse_body(b"[]", ProtocolVersion::V2025_03_26),
            Err(ParseError::EmptyBatch)
        );
    }

    #[test]
    fn progress_tokens() {
        let n = p(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#).unwrap();
        assert_eq!(n.progress_token(), Some(serde_json::json!(7)));
        let r = p(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}}"#).unwrap();
        assert_eq!(r.progress_token(), Some(serde_json::json!("t")));
    }
}
