//! What the core adds to a 2026-07-28 answer, so an application
//! written for either era answers correctly in this one: every result says
//! `resultType` (`"complete"` unless the application said otherwise, e.g.
//! `"input_required"` for MRTR); the cacheable results carry caching hints
//! (by default none: `ttlMs` 0, `cacheScope` `"private"`); `server/discover`
//! lists the versions this core speaks. Whatever the application set is
//! kept. And an error's HTTP status follows the spec: 404 for -32601, 400
//! for -32020, -32021 and -32022.

use crate::jsonrpc::{
    Message, RawJson, HEADER_MISMATCH, METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::version::ProtocolVersion;
use serde_json::Value;

/// Results that must carry caching hints (`server/utilities/caching.mdx`).
const CACHEABLE: [&str; 6] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// `result` of `method`, completed (see the module docs).
pub fn complete(method: &str, result: RawJson) -> RawJson {
    let mut v = result.to_value();
    let Some(obj) = v.as_object_mut() else {
        return result;
    };
    let kind = obj
        .entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    let complete = kind == "complete";
    if complete && CACHEABLE.contains(&method) {
        obj.entry("ttlMs").or_insert_with(|| Value::from(0));
        obj.entry("cacheScope")
            .or_insert_with(|| Value::from("private"));
    }
    if method == "server/discover" {
        obj.entry("supportedVersions").or_insert_with(|| {
            ProtocolVersion::ALL
                .iter()
                .rev()
                .map(|v| Value::from(v.as_str()))
                .collect()
        });
    }
    RawJson::from(v)
}

/// The status of a whole (JSON) 2026-07-28 answer.
pub fn status(message: &Message) -> u16 {
    match message {
        Message::Error { error, .. } => match error.code {
            METHOD_NOT_FOUND => 404,
            HEADER_MISMATCH | MISSING_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION => 400,
            _ => 200,
        },
        _ => 200,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::ErrorObject;
    use serde_json::json;

    fn completed(method: &str, v: Value) -> Value {
        complete(method, RawJson::from(v)).to_value()
    }

    #[test]
    fn every_result_says_its_type_and_keeps_the_applications() {
        assert_eq!(
            completed("tools/call", json!({"content": []})),
            json!({"content": [], "resultType": "complete"})
        );
        let mrtr = json!({"resultType": "input_required", "requestState": "s"});
        assert_eq!(completed("tools/call", mrtr.clone()), mrtr);
    }

    #[test]
    fn cacheable_results_get_hints_unless_they_have_them() {
        assert_eq!(
            completed("tools/list", json!({"tools": []})),
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        let own = json!({"tools": [], "ttlMs": 60000, "cacheScope": "public"});
        assert_eq!(completed("tools/list", own)["ttlMs"], 60000);
        let d = completed("server/discover", json!({"capabilities": {}}));
        assert_eq!(
            d["supportedVersions"],
            json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
        );
        assert_eq!(d["cacheScope"], "private");
    }

    #[test]
    fn statuses_of_v2026_errors() {
        let err = |code| Message::Error {
            id: None,
            error: ErrorObject::new(code, "x"),
        };
        assert_eq!(status(&err(-32601)), 404);
        for code in [-32020, -32021, -32022] {
            assert_eq!(status(&err(code)), 400);
        }
        assert_eq!(status(&err(-32602)), 200);
    }
}
