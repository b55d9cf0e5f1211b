//! The client in the 2026-07-28 era: which era it speaks
//! ([`ClientEra`]), the `server/discover` probe and its fallback to
//! `initialize`, and every request dressed as that era asks (the standard
//! headers, the per-request `_meta`).
//!
//! ```text
//!  Fresh ──initialize (V2026, Auto)──▶ Discovering ──DiscoverResult naming 2026-07-28──▶ Ready (2026-07-28)
//!                                          │ Auto, and a refusal that is not a 2026-07-28 error
//!                                          └──▶ initialize ──▶ … the session era, as before
//! ```
//!
//! Fallback follows `basic/transports/streamable-http.mdx` ("Backward
//! Compatibility"): a 2026-07-28 error (-32020, -32021, -32022) means a 2026-07-28
//! server, so no fallback (-32022 whose `supported` names neither
//! 2026-07-28 nor a session-era version means a server this client cannot
//! speak to: fails; one that names a session-era version is answered with
//! `initialize`, where that version is negotiated); anything else (a 4xx
//! with another body or none, an error result, a broken probe) means a
//! session-era server: `initialize`.

use crate::client::ClientError;
use crate::head::RequestHead;
use crate::headers;
use crate::jsonrpc::{
    ErrorObject, Message, RawJson, HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::tool_headers::{InvalidAnnotation, ToolHeaderTable};
use crate::v2026::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use crate::version::ProtocolVersion;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which era a client speaks, named by the year of its first revision, so
/// that a later era takes a name of its own (`"v2025"`, `"v2026"`, `"auto"`
/// in JSON; `"legacy"` and `"modern"` are read as the first two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientEra {
    /// The session era: `initialize` and a session (2025-03-26 … 2025-11-25).
    #[default]
    #[serde(alias = "legacy")]
    V2025,
    /// `server/discover`, then every request on its own (2026-07-28); no fallback.
    #[serde(alias = "modern")]
    V2026,
    /// Probe with `server/discover`; fall back to `initialize` on a session-era answer.
    Auto,
}

/// The `_meta` key of the client's description of itself.
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// `msg` as a 2026-07-28 POST carries it: the standard headers
/// (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, a call's custom
/// headers from `tools`), and `_meta` with the version, the capabilities
/// and the client's description from `init` (what `initialize` was given).
pub(super) fn dress(
    msg: &Message,
    init: Option<&RawJson>,
    tools: &ToolHeaderTable,
) -> (RequestHead, Message) {
    let (method, params) = match msg {
        Message::Request { method, params, .. } | Message::Notification { method, params } => {
            (method.clone(), params.as_ref().map(RawJson::to_value))
        }
        _ => (String::new(), None),
    };
    let mut p = params.unwrap_or_else(|| serde_json::json!({}));
    let init = init.map(RawJson::to_value);
    if let Some(obj) = p.as_object_mut() {
        let meta = obj.entry("_meta").or_insert_with(|| serde_json::json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                META_PROTOCOL_VERSION.into(),
                ProtocolVersion::LATEST_V2026.as_str().into(),
            );
            let caps = init
                .as_ref()
                .and_then(|i| i.get("capabilities").cloned())
                .unwrap_or_else(|| serde_json::json!({}));
            meta.insert(META_CLIENT_CAPABILITIES.into(), caps);
            if let Some(info) = init.as_ref().and_then(|i| i.get("clientInfo").cloned()) {
                meta.insert(META_CLIENT_INFO.into(), info);
            }
        }
    }
    let mut head = RequestHead::post(None, Some(ProtocolVersion::LATEST_V2026))
        .with(headers::MCP_METHOD, &method);
    let field = crate::v2026::name_field(&method);
    if let Some(name) = field.and_then(|f| p.get(f)).and_then(Value::as_str) {
        head = head.with(headers::MCP_NAME, &encode_value(name));
        if method == "tools/call" {
            for (header, value) in tools.headers_for(name, p.get("arguments")) {
                head = head.with(&header, &value);
            }
        }
    }
    let body = match msg {
        Message::Request { id, .. } => Message::Request {
            id: id.clone(),
            method,
            params: Some(RawJson::from(p)),
        },
        _ => Message::Notification {
            method,
            params: Some(RawJson::from(p)),
        },
    };
    (head, body)
}

/// A 2026-07-28 `tools/list` result, each tool's custom headers (SEP-2243)
/// learnt into `tools` (at most `bytes_max`) for its calls, and each tool
/// with an invalid annotation left out: the result (as it came when
/// nothing is left out) and the tools left out, with why.
pub(super) fn learn_tools(
    listing: RawJson,
    tools: &mut ToolHeaderTable,
    bytes_max: usize,
) -> (RawJson, Vec<(String, InvalidAnnotation)>) {
    let annotated = listing.as_str().contains(crate::tool_headers::ANNOTATION);
    if !annotated && tools.is_empty() {
        return (listing, Vec::new());
    }
    let mut v = listing.to_value();
    let Some(offered) = v.get_mut("tools").and_then(Value::as_array_mut) else {
        return (listing, Vec::new());
    };
    let mut rejected = Vec::new();
    offered.retain(|tool| match tools.learn(tool, bytes_max) {
        Ok(()) => true,
        Err(why) => {
            rejected.push(why);
            false
        }
    });
    if rejected.is_empty() {
        (listing, rejected)
    } else {
        (RawJson::from(v), rejected)
    }
}

/// Whether a `server/discover` result names 2026-07-28 among its
/// `supportedVersions`: a server of the era.
pub(super) fn speaks_v2026(result: &RawJson) -> bool {
    result
        .to_value()
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| {
            v.iter()
                .any(|s| s == ProtocolVersion::LATEST_V2026.as_str())
        })
}

/// What a client of `era` does after its probe failed with `error`
/// (the module docs; `repeated`: it has probed once more already).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterProbe {
    /// Probe once more, under a new id: the server names the version sent
    /// as one it supports (a version negotiated out of band, a server that
    /// restarted), as rmcp and the reference client do.
    Again,
    /// `initialize`, as the session era's, under a new id.
    FallBack,
    /// The caller hears the probe's failure.
    Fail,
}

/// See [`AfterProbe`]. A probe the caller ended itself (the client closed,
/// the call cancelled) fails whatever the era: falling back would send an
/// `initialize` nobody waits for any more, left without an outcome.
pub(super) fn after_probe(error: &ClientError, era: ClientEra, repeated: bool) -> AfterProbe {
    if matches!(error, ClientError::Closed | ClientError::Cancelled) {
        return AfterProbe::Fail;
    }
    let refusal = match error {
        ClientError::Status { error: Some(e), .. } => Some(e),
        _ => None,
    };
    if refusal.is_some_and(offers_v2026) && !repeated {
        return AfterProbe::Again;
    }
    let v2026_server = refusal.is_some_and(|e| {
        [
            HEADER_MISMATCH,
            MISSING_CLIENT_CAPABILITY,
            UNSUPPORTED_PROTOCOL_VERSION,
        ]
        .contains(&e.code)
            && !offers_session_era(e)
    });
    match era {
        ClientEra::Auto if !v2026_server => AfterProbe::FallBack,
        _ => AfterProbe::Fail,
    }
}

/// Whether a -32022 refusal's `supported` names 2026-07-28.
fn offers_v2026(e: &ErrorObject) -> bool {
    supported(e).any(|v| v == ProtocolVersion::LATEST_V2026)
}

/// The versions a -32022 refusal's `supported` names that this client knows.
fn supported(e: &ErrorObject) -> impl Iterator<Item = ProtocolVersion> {
    let listed = (e.code == UNSUPPORTED_PROTOCOL_VERSION)
        .then(|| e.data.as_ref().map(RawJson::to_value))
        .flatten()
        .and_then(|d| d.get("supported")?.as_array().cloned())
        .unwrap_or_default();
    listed
        .into_iter()
        .filter_map(|v| v.as_str()?.parse::<ProtocolVersion>().ok())
}

/// Whether a -32022 refusal's `supported` names a session-era version this
/// client speaks: the server then wants `initialize`, which `Auto` falls
/// back to (and negotiates the version there), as rmcp's `Auto` retries
/// with a supported version.
fn offers_session_era(e: &ErrorObject) -> bool {
    supported(e).any(|v| ProtocolVersion::SESSION_ERA.contains(&v))
}

pub use crate::v2026::encode_value;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;

    use crate::client::testing::{answer, probe, sent};
    use crate::client::ClientEvent;

    #[test]
    fn eras_are_written_by_year_and_read_by_their_older_names_too() {
        for (era, name) in [
            (ClientEra::V2025, "v2025"),
            (ClientEra::V2026, "v2026"),
            (ClientEra::Auto, "auto"),
        ] {
            let json = serde_json::to_string(&era).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<ClientEra>(&json).unwrap(), era);
        }
        let read = |s: &str| serde_json::from_str::<ClientEra>(s).unwrap();
        assert_eq!(read("\"legacy\""), ClientEra::V2025);
        assert_eq!(read("\"modern\""), ClientEra::V2026);
        assert!(serde_json::from_str::<ClientEra>("\"2026\"").is_err());
    }

    /// SEP-2243 in the client core: a 2026-07-28 listing's tool with an invalid
    /// annotation is left out of the result the application gets (and it
    /// is told which and why); a call of a listed tool mirrors its
    /// annotated arguments as `Mcp-Param-*`, encoded, a null one omitted,
    /// and the server's rule agrees.
    #[test]
    fn a_listing_teaches_custom_headers_and_drops_invalid_tools() {
        use crate::client::testing::v2026;
        let mut c = v2026(serde_json::json!({}));
        let list = c.send_request("tools/list", None, Instant::ZERO).unwrap();
        let http = sent(&mut c)[0].http;
        let listing = serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "good", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"},
                "v": {"type": "boolean", "x-mcp-header": "V"},
                "q": {"type": "string"}}}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {
                "score": {"type": "number", "x-mcp-header": "Score"}}}},
            {"name": "plain", "inputSchema": {"type": "object"}}
        ]}});
        answer(&mut c, http, 200, &listing.to_string());
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(&events[0], ClientEvent::ToolRejected { name, reason: crate::tool_headers::InvalidAnnotation::NotPrimitive { .. } } if name == "bad"),
            "{events:?}"
        );
        let ClientEvent::Response { id, result: Ok(r) } = &events[1] else {
            panic!("{events:?}");
        };
        assert_eq!(*id, list);
        let names: Vec<String> = r.to_value()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["good", "plain"]);
        let args = serde_json::json!({"name": "good", "arguments": {
            "region": " eu ", "n": 7, "v": null, "q": "not mirrored"}});
        c.send_request("tools/call", Some(RawJson::from(args)), Instant::ZERO)
            .unwrap();
        let call = sent(&mut c).remove(0);
        assert_eq!(
            call.params,
            [
                ("mcp-param-n".to_owned(), "7".to_owned()),
                (
                    "mcp-param-region".to_owned(),
                    "=?base64?IGV1IA==?=".to_owned()
                ),
            ]
        );
        // What a server checks it by agrees.
        let body = call.body["params"].clone();
        let (table, _) = crate::tool_headers::ToolHeaderTable::from_list(&listing["result"]);
        let header = |n: &str| {
            call.params
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
                .or_else(|| (n == "mcp-method").then_some("tools/call"))
                .or_else(|| (n == "mcp-name").then_some("good"))
        };
        assert_eq!(
            crate::v2026::check_headers(header, "tools/call", Some(&body), &table),
            Ok(())
        );
    }

    /// An `Auto` client closed while its probe is out: the caller hears
    /// its `initialize` failed, and no session-era `initialize` follows
    /// (one would be left pending for ever: L2 in 2 steps on a random
    /// model, `initialize` then `close`).
    #[test]
    fn a_probe_ended_by_its_caller_does_not_fall_back() {
        let (mut c, _http) = probe(ClientEra::Auto);
        c.close(Instant::ZERO);
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(
                &events[..],
                [ClientEvent::Failed {
                    error: ClientError::Closed,
                    ..
                }]
            ),
            "{events:?}"
        );
        assert!(c.pending().next().is_none(), "nothing left waiting");
        let (mut c, _http) = probe(ClientEra::Auto);
        c.cancel(&crate::ids::RequestId::Num(1), Instant::ZERO)
            .expect("the probe is pending");
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(&events[..], [ClientEvent::Failed { .. }]),
            "{events:?}"
        );
        assert!(c.pending().next().is_none(), "no initialize after a cancel");
    }

    #[test]
    fn a_v2026_refusal_of_the_probe_is_no_reason_to_fall_back() {
        let (mut c, http) = probe(ClientEra::Auto);
        let refusal = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2027-01-01"],"requested":"2026-07-28"}}}"#;
        answer(&mut c, http, 400, refusal);
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(&events[..], [ClientEvent::Failed { .. }]),
            "{events:?}"
        );
        assert!(
            sent(&mut c).is_empty(),
            "no initialize: the server is 2026-07-28"
        );
        // A session-era refusal does make Auto fall back.
        let (mut c, http) = probe(ClientEra::Auto);
        answer(
            &mut c,
            http,
            400,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"use initialize"}}"#,
        );
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(&events[..], [ClientEvent::FellBack { .. }]),
            "{events:?}"
        );
        assert_eq!(sent(&mut c).len(), 1, "initialize follows");
    }

    #[test]
    fn an_unsupported_version_naming_a_session_era_one_is_answered_with_initialize() {
        let refusal = |supported: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":-32022,"message":"unsupported","data":{{"supported":{supported},"requested":"2026-07-28"}}}}}}"#
            )
        };
        let (mut c, http) = probe(ClientEra::Auto);
        answer(
            &mut c,
            http,
            400,
            &refusal(r#"["2025-06-18","2027-01-01"]"#),
        );
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(&events[..], [ClientEvent::FellBack { .. }]),
            "{events:?}"
        );
        let s = sent(&mut c);
        assert_eq!(s.len(), 1, "initialize follows");
        assert_eq!(s[0].body["method"], "initialize");
        // `V2026` does not fall back, whatever the server supports.
        let (mut c, http) = probe(ClientEra::V2026);
        answer(&mut c, http, 400, &refusal(r#"["2025-06-18"]"#));
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(&events[..], [ClientEvent::Failed { .. }]),
            "{events:?}"
        );
        assert!(sent(&mut c).is_empty());
    }

    #[test]
    fn an_unsupported_version_naming_2026_07_28_is_probed_once_more() {
        let refusal = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}"#;
        for era in [ClientEra::V2026, ClientEra::Auto] {
            let (mut c, http) = probe(era);
            answer(&mut c, http, 400, refusal);
            let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
            assert!(
                matches!(&events[..], [ClientEvent::FellBack { .. }]),
                "{era:?}: {events:?}"
            );
            let again = sent(&mut c);
            assert_eq!(again.len(), 1);
            assert_eq!(again[0].method.as_deref(), Some("server/discover"));
            assert_eq!(again[0].body["id"], 2, "a new id");
            // Only once: the same refusal again fails the caller.
            answer(&mut c, again[0].http, 400, refusal);
            let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
            assert!(
                matches!(&events[..], [ClientEvent::Failed { .. }]),
                "{era:?}: {events:?}"
            );
            assert!(sent(&mut c).is_empty());
        }
    }

    #[test]
    fn a_discover_result_without_2026_07_28_is_not_v2026() {
        let result = r#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2027-01-01"],"capabilities":{}}}"#;
        let (mut c, http) = probe(ClientEra::V2026);
        answer(&mut c, http, 200, result);
        assert!(!c.is_ready() && !c.is_v2026());
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(&events[..], [ClientEvent::Failed { .. }]),
            "{events:?}"
        );
        let ok = r#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25","2026-07-28"],"capabilities":{}}}"#;
        let (mut c, http) = probe(ClientEra::V2026);
        answer(&mut c, http, 200, ok);
        assert!(c.is_ready() && c.is_v2026());
    }

    #[test]
    fn mcp_name_for_each_method_that_has_one() {
        let ok = r#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}"#;
        let (mut c, http) = probe(ClientEra::V2026);
        answer(&mut c, http, 200, ok);
        let now = Instant::ZERO;
        let params = |v: serde_json::Value| Some(RawJson::from(v));
        c.send_request(
            "resources/read",
            params(serde_json::json!({"uri": "file:///a b"})),
            now,
        )
        .unwrap();
        c.send_request("prompts/get", params(serde_json::json!({"name": "p"})), now)
            .unwrap();
        c.send_request("tools/list", None, now).unwrap();
        let names: Vec<_> = sent(&mut c)
            .into_iter()
            .map(|s| (s.method, s.name))
            .collect();
        assert_eq!(
            names,
            [
                (Some("resources/read".into()), Some("file:///a b".into())),
                (Some("prompts/get".into()), Some("p".into())),
                (Some("tools/list".into()), None),
            ]
        );
    }

    #[test]
    fn names_round_trip_through_the_servers_decoder() {
        for name in ["echo", " padded ", "héllo", "=?base64?x?=", "tab\there"] {
            let sent = encode_value(name);
            assert_eq!(
                crate::v2026::decode_value(&sent).as_deref(),
                Some(name),
                "{name:?} sent as {sent:?}"
            );
        }
        assert_eq!(encode_value("echo"), "echo");
        assert!(encode_value("héllo").starts_with("=?base64?"));
        // A blank at either edge alone is encoded; half a sentinel is not one.
        for edge in [" x", "x "] {
            assert!(encode_value(edge).starts_with("=?base64?"), "{edge:?}");
        }
        for literal in ["=?base64?x", "x?="] {
            assert_eq!(encode_value(literal), literal);
        }
    }
}
