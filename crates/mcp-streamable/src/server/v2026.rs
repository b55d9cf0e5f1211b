//! The 2026-07-28 era at the door: which era a POST belongs to,
//! and the checks every 2026-07-28 request passes before anything runs.
//!
//! One endpoint serves both eras, chosen per request (the spec's "dual-era
//! server"): `initialize` selects the session era (unless it carries the
//! 2026-07-28 `_meta` version: then it is a 2026-07-28 request for a method this
//! era does not have, 404); a request whose `MCP-Protocol-Version` names a
//! 2026-07-28 version, or whose `_meta` carries
//! `io.modelcontextprotocol/protocolVersion`, is 2026-07-28 and stands alone.
//! Everything else is the session era, as before.
//!
//! A 2026-07-28 request must then agree with itself (`basic/transports/
//! streamable-http.mdx`, "Server Validation"): the version header and the
//! body's `_meta` version, `Mcp-Method` and the method, `Mcp-Name` and the
//! tool or prompt name or resource URI (Base64-decoded when sent as
//! `=?base64?…?=`), and for a tool that declares custom headers (SEP-2243,
//! [`crate::tool_headers`]) each `Mcp-Param-*` and its argument. Any
//! disagreement, a missing header or one with control characters is 400
//! with -32020; a missing required `_meta` field
//! is 400 with -32602; a method the era does not have is 404 with -32601.

use crate::error::RequestError;
use crate::head::RequestHead;
use crate::jsonrpc::{Body, Message, ParseError, RawJson};
use crate::tool_headers::ToolHeaderTable;
pub use crate::v2026::{
    meta, name_field, ListenFilter, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION,
    META_SERVER_INFO, META_SUBSCRIPTION_ID, METHODS,
};
use crate::version::ProtocolVersion;

/// Whether a POST is 2026-07-28: its version header says so, or its body
/// carries the 2026-07-28 `_meta` version (then the checks decide whether the
/// two agree). `initialize` is 2026-07-28 only with the 2026-07-28 `_meta`.
pub fn is_v2026(header: Option<ProtocolVersion>, body: &[u8]) -> bool {
    // Cheap looks first, so a body is parsed here only when it might change
    // the answer (the checks parse it anyway). An `initialize` is 2026-07-28
    // only with the 2026-07-28 `_meta` (a method this era does not have: 404);
    // offering 2026-07-28 in its params or header alone is the session era.
    if header.is_some_and(ProtocolVersion::is_v2026) {
        return !mentions(body, b"\"initialize\"")
            || !parses_as(body, |m| {
                m.is_initialize() && meta(m, META_PROTOCOL_VERSION).is_none()
            });
    }
    mentions(body, META_PROTOCOL_VERSION.as_bytes())
        && parses_as(body, |m| meta(m, META_PROTOCOL_VERSION).is_some())
}

/// Whether `needle` occurs in `body`: candidates by their first byte, then
/// the rest compared. (Comparing every window called `memcmp` once a byte:
/// 3.5% of a `tools/call` through the driver, `benches/core.rs`.)
fn mentions(body: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let mut from = 0;
    while let Some(i) = body[from..].iter().position(|&b| b == first) {
        let after = from + i + 1;
        if body[after..].starts_with(rest) {
            return true;
        }
        from = after;
    }
    false
}

/// Whether `body` is one message for which `test` holds.
fn parses_as(body: &[u8], test: impl Fn(&Message) -> bool) -> bool {
    matches!(
        crate::jsonrpc::parse_body(body, ProtocolVersion::LATEST_V2026),
        Ok(Body::Single(m)) if test(&m)
    )
}

/// A 2026-07-28 POST, checked: the one message it carries.
pub fn check(
    head: &RequestHead,
    header: Option<ProtocolVersion>,
    body: &[u8],
    tool_headers: &ToolHeaderTable,
) -> Result<Message, RequestError> {
    let message = match crate::jsonrpc::parse_body(body, ProtocolVersion::LATEST_V2026)? {
        Body::Single(m) => m,
        Body::Batch(_) => {
            return Err(ParseError::BatchNotAllowed(ProtocolVersion::LATEST_V2026).into());
        }
    };
    let id = match &message {
        Message::Request { id, .. } => Some(id.clone()),
        Message::Notification { .. } => None,
        // "The client MUST NOT send JSON-RPC responses."
        _ => {
            return Err(ParseError::Invalid("a 2026-07-28 client sends no responses".into()).into())
        }
    };
    let mismatch = |what: String| RequestError::HeaderMismatch {
        what,
        id: id.clone(),
    };
    let header = header.ok_or_else(|| mismatch("MCP-Protocol-Version header missing".into()))?;
    match meta(&message, META_PROTOCOL_VERSION) {
        Some(serde_json::Value::String(v)) if v == header.as_str() => {}
        Some(v) => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version {header} but _meta says {v}"
            )))
        }
        // A required `_meta` field missing is invalid params
        // (`basic/index.mdx`), not a disagreement.
        None => {
            return Err(RequestError::MissingMeta {
                field: META_PROTOCOL_VERSION,
                id,
            })
        }
    }
    let Message::Request { method, params, .. } = &message else {
        return Ok(message); // a notification: its headers are not defined
    };
    if meta(&message, META_CLIENT_CAPABILITIES).is_none() {
        return Err(RequestError::MissingMeta {
            field: META_CLIENT_CAPABILITIES,
            id,
        });
    }
    let params = params.as_ref().map(RawJson::to_value);
    crate::v2026::check_headers(
        |name| head.header(name),
        method,
        params.as_ref(),
        tool_headers,
    )
    .map_err(mismatch)?;
    if !METHODS.contains(&method.as_str()) {
        return Err(RequestError::UnknownMethod {
            method: method.clone(),
            id,
        });
    }
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v2026::decode_value as decode;

    /// The byte search against the plain definition (some window equals the
    /// needle), on the cases a first-byte skip can get wrong: a needle at the
    /// start and at the very end, a first byte that recurs inside the needle
    /// and before it, a prefix cut off by the end, an empty needle or body.
    #[test]
    fn mentions_finds_exactly_the_windows() {
        let plain = |b: &[u8], n: &[u8]| n.is_empty() || b.windows(n.len()).any(|w| w == n);
        let needle: &[u8] = b"\"initialize\"";
        let bodies: [&[u8]; 9] = [
            b"\"initialize\" first",
            b"last: \"initialize\"",
            b"\"\"\"initialize\"",
            b"\"init\"initialize\"",
            b"\"initialize",
            b"\"initializ\"",
            b"",
            b"\"",
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
        ];
        for body in bodies {
            for n in [needle, b"i", b"\"\"", b""] {
                assert_eq!(
                    mentions(body, n),
                    plain(body, n),
                    "{:?} in {:?}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(body)
                );
            }
        }
        assert!(mentions(bodies[8], needle));
        assert!(!mentions(bodies[4], needle));
    }

    #[test]
    fn mcp_name_sentinels() {
        assert_eq!(decode("=?base64?aMOpbGxv?=").as_deref(), Some("héllo"));
        assert_eq!(decode("plain").as_deref(), Some("plain"));
        // Markers are exact and lowercase: anything else is a literal value.
        assert_eq!(
            decode("=?BASE64?aGk=?=").as_deref(),
            Some("=?BASE64?aGk=?=")
        );
        assert_eq!(decode("=?base64?aGk=").as_deref(), Some("=?base64?aGk="));
        assert_eq!(decode("=?base64?a*k=?="), None);
    }

    #[test]
    fn era_by_header_or_meta_initialize_only_with_meta() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let session_era = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        let mentions = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"io.modelcontextprotocol/protocolVersion"}}}"#;
        let v2026 = Some(ProtocolVersion::LATEST_V2026);
        let old = Some(ProtocolVersion::LATEST);
        assert!(is_v2026(v2026, session_era));
        assert!(is_v2026(None, call));
        assert!(is_v2026(old, call), "the checks then find the disagreement");
        assert!(!is_v2026(old, session_era));
        assert!(!is_v2026(None, session_era));
        assert!(!is_v2026(v2026, init), "rmcp 3.9's Initialize mode");
        let init_meta = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(is_v2026(v2026, init_meta), "conformance 0.2.0-alpha.12");
        assert!(is_v2026(None, init_meta));
        assert!(
            !is_v2026(None, mentions),
            "the key in an argument is not _meta"
        );
    }
}

#[cfg(test)]
mod listen_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_read_agree_and_match() {
        let params = crate::jsonrpc::RawJson::from(json!({"notifications": {
            "toolsListChanged": true, "promptsListChanged": false,
            "resourceSubscriptions": ["file:///a", "file:///b"]}}));
        let asked = ListenFilter::from_params(Some(&params)).unwrap();
        assert!(asked.tools && !asked.prompts && !asked.resources);
        let can = ListenFilter {
            tools: true,
            prompts: true,
            resources: false,
            resource_uris: vec!["file:///a".into()],
        };
        let agreed = asked.agreed(&can);
        assert_eq!(
            agreed.to_json(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]})
        );
        assert_eq!(asked.agreed(&ListenFilter::all()).resource_uris.len(), 2);
        assert!(agreed.matches("notifications/tools/list_changed", None));
        assert!(!agreed.matches("notifications/prompts/list_changed", None));
        assert!(!agreed.matches("notifications/progress", None));
        let all = ListenFilter::all();
        for kind in ["tools", "prompts", "resources"] {
            let method = format!("notifications/{kind}/list_changed");
            assert!(all.matches(&method, None), "{method}");
            assert!(!ListenFilter::default().matches(&method, None), "{method}");
        }
        let updated = |uri: &str| json!({"uri": uri});
        assert!(agreed.matches(
            "notifications/resources/updated",
            Some(&updated("file:///a"))
        ));
        assert!(agreed.matches(
            "notifications/resources/updated",
            Some(&updated("file:///a/x"))
        ));
        assert!(!agreed.matches(
            "notifications/resources/updated",
            Some(&updated("file:///ab"))
        ));
        assert!(!agreed.matches(
            "notifications/resources/updated",
            Some(&updated("file:///b"))
        ));
        assert!(!agreed.matches("notifications/resources/updated", None));
        assert_eq!(ListenFilter::from_params(None), None);
    }
}
