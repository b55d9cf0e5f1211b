//! Round trips of the wire pieces besides SSE (which has its own file):
//! JSON-RPC messages, event ids under every scheme, session ids.

use mcp_streamable::ids::{EventId, RequestId, SessionId, StreamId};
use mcp_streamable::jsonrpc::{self, ErrorObject, Message, RawJson};
use mcp_streamable::policy::EventIdScheme;
use mcp_streamable::server::event_ids::EventIdCodec;
use mcp_streamable::version::ProtocolVersion;
use proptest::prelude::*;

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::Num),
        "[ -~]{0,12}".prop_map(RequestId::Str),
    ]
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[^\u{0}]{0,8}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn params() -> impl Strategy<Value = Option<RawJson>> {
    prop::option::of(json_value().prop_map(RawJson::from))
}

fn message() -> impl Strategy<Value = Message> {
    let method = "[a-z/_]{1,24}";
    prop_oneof![
        (request_id(), method, params()).prop_map(|(id, method, params)| Message::Request {
            id,
            method,
            params
        }),
        (method, params()).prop_map(|(method, params)| Message::Notification { method, params }),
        (request_id(), json_value()).prop_map(|(id, v)| Message::Response {
            id,
            result: RawJson::from(v)
        }),
        (
            prop::option::of(request_id()),
            any::<i64>(),
            "[ -~]{0,16}",
            params()
        )
            .prop_map(|(id, code, message, data)| {
                Message::Error {
                    id,
                    error: ErrorObject {
                        code,
                        message,
                        data,
                    },
                }
            }),
    ]
}

proptest! {
    #[test]
    fn jsonrpc_messages_round_trip(m in message()) {
        let text = m.to_json();
        let back = jsonrpc::parse_message(&text).expect("our own output parses");
        prop_assert_eq!(&back, &m);
        prop_assert_eq!(back.to_json(), text);
    }

    #[test]
    fn batches_round_trip_only_where_allowed(ms in prop::collection::vec(message(), 1..5)) {
        let text = format!("[{}]", ms.iter().map(Message::to_json).collect::<Vec<_>>().join(","));
        let b = jsonrpc::parse_body(text.as_bytes(), ProtocolVersion::V2025_03_26).expect("batch");
        prop_assert_eq!(b.messages(), &ms[..]);
        prop_assert!(jsonrpc::parse_body(text.as_bytes(), ProtocolVersion::V2025_06_18).is_err());
        prop_assert!(jsonrpc::parse_body(text.as_bytes(), ProtocolVersion::V2025_11_25).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_parser(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        for v in ProtocolVersion::ALL {
            let _ = jsonrpc::parse_body(&bytes, v);
        }
    }

    #[test]
    fn event_ids_round_trip_under_every_scheme(ns in any::<u32>(), stream in 0u32..1000, seq in 1u64..1_000_000) {
        let stream_scoped = EventIdCodec::new(EventIdScheme::StreamScoped, ns);
        let id = EventId { stream: StreamId(stream), seq };
        prop_assert_eq!(stream_scoped.parse(&stream_scoped.render(id)), Some(id));
        // Another session's namespace names nothing here.
        let other = EventIdCodec::new(EventIdScheme::StreamScoped, ns.wrapping_add(1));
        prop_assert_eq!(other.parse(&stream_scoped.render(id)), None);
        for scheme in [EventIdScheme::Rmcp016, EventIdScheme::Rmcp39] {
            let c = EventIdCodec::new(scheme, ns);
            prop_assert_eq!(c.parse(&c.render(id)), Some(id));
        }
    }

    #[test]
    fn session_ids_round_trip(bits in any::<u128>()) {
        let id = SessionId::from_bits(bits);
        prop_assert_eq!(id.as_str().parse::<SessionId>(), Ok(id.clone()));
        prop_assert!(id.as_str().bytes().all(|b| (0x21..=0x7e).contains(&b)));
        prop_assert_eq!(serde_json::from_str::<SessionId>(&serde_json::to_string(&id).unwrap()).unwrap(), id);
    }

    #[test]
    fn peer_session_ids_are_accepted_iff_visible_ascii(s in "[\\x00-\\x7f]{0,300}") {
        let ok = !s.is_empty() && s.len() <= SessionId::LEN_MAX && s.bytes().all(|b| (0x21..=0x7e).contains(&b));
        prop_assert_eq!(s.parse::<SessionId>().is_ok(), ok);
    }
}
