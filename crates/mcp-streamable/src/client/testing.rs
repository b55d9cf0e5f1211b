//! Test helpers of the client core's unit tests: a client in each era,
//! what it sends, and a server's answer played back to it.

use super::{ClientConfig, ClientEra, ClientSession, ClientTransmitKind};
use crate::head::ResponseHead;
use crate::ids::HttpId;
use crate::jsonrpc::RawJson;
use crate::policy::ClientPolicy;
use crate::time::Instant;
use serde_json::Value;

/// A client of `era` with every other setting at its default.
pub fn client(era: ClientEra) -> ClientSession {
    let config = ClientConfig {
        era,
        ..ClientConfig::default()
    };
    ClientSession::new(config, ClientPolicy::FIXED)
}

/// One request the client sent: its exchange, headers and body.
pub struct Sent {
    pub http: HttpId,
    pub method: Option<String>,
    pub name: Option<String>,
    /// Its `Mcp-Param-*` headers, in order.
    pub params: Vec<(String, String)>,
    pub body: Value,
}

/// Every request the client sends now.
pub fn sent(c: &mut ClientSession) -> Vec<Sent> {
    std::iter::from_fn(|| c.poll_transmit())
        .filter_map(|t| match t.kind {
            ClientTransmitKind::Send { head, body } => Some(Sent {
                http: t.http,
                method: head.header("mcp-method").map(str::to_owned),
                name: head.header("mcp-name").map(str::to_owned),
                params: head
                    .headers
                    .iter()
                    .filter(|(n, _)| n.starts_with(crate::tool_headers::HEADER_PREFIX))
                    .map(|(n, v)| (n.to_string(), v.clone()))
                    .collect(),
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            }),
            ClientTransmitKind::Abort => None,
        })
        .collect()
}

/// Answers exchange `http` with `status` and a JSON `body`, then ends it.
pub fn answer(c: &mut ClientSession, http: HttpId, status: u16, body: &str) {
    let now = Instant::ZERO;
    let head = ResponseHead::from_wire(status, [("content-type", "application/json")]);
    c.handle_response_head(http, head, now);
    c.handle_body(http, body.as_bytes(), now);
    c.handle_http_closed(http, now);
}

/// A client of `era` that sent its `server/discover` probe, and the probe's exchange.
pub fn probe(era: ClientEra) -> (ClientSession, HttpId) {
    probe_with(era, RawJson::empty_object())
}

/// As [`probe`], with `initialize`'s parameters (capabilities, clientInfo).
pub fn probe_with(era: ClientEra, params: RawJson) -> (ClientSession, HttpId) {
    let mut c = client(era);
    c.initialize(params, Instant::ZERO).unwrap();
    let s = sent(&mut c);
    assert_eq!(s[0].method.as_deref(), Some("server/discover"));
    (c, s[0].http)
}

/// A 2026-07-28 client ready to send, declaring `capabilities`.
pub fn v2026(capabilities: Value) -> ClientSession {
    let params = RawJson::from(serde_json::json!({ "capabilities": capabilities }));
    let (mut c, http) = probe_with(ClientEra::V2026, params);
    let ok = r#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}"#;
    answer(&mut c, http, 200, ok);
    assert!(c.is_ready() && c.is_v2026());
    while c.poll_event().is_some() {}
    c
}
