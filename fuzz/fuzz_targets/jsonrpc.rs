//! JSON-RPC body parsing: arbitrary bytes under every protocol version, and a
//! serialize/re-parse round trip for every message that parsed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_streamable::jsonrpc::{parse_body, parse_message, Body};
use mcp_streamable::version::ProtocolVersion;

fuzz_target!(|data: &[u8]| {
    for v in ProtocolVersion::ALL {
        let Ok(body) = parse_body(data, v) else {
            continue;
        };
        if let Body::Batch(ms) = &body {
            assert!(v.accepts_batches(), "batch accepted under {v}");
            assert!(!ms.is_empty(), "empty batch accepted under {v}");
        }
        for m in body.messages() {
            let json = m.to_json();
            let back = parse_message(&json).unwrap_or_else(|e| {
                panic!("re-parse of to_json output failed: {e}\n  message: {m:?}\n  json: {json}")
            });
            assert_eq!(&back, m, "round trip changed the message\n  json: {json}");
            // The serialized form is a fixed point.
            assert_eq!(
                back.to_json(),
                json,
                "to_json is not stable across a round trip"
            );
        }
    }
});
