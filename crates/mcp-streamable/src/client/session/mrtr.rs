//! The client's side of multi round-trip requests (MRTR, 2026-07-28
//! `basic/patterns/mrtr.mdx`): a `tools/call`, `prompts/get` or
//! `resources/read` answered with an `InputRequiredResult` is re-issued,
//! with the application's input, under a new JSON-RPC id. The application
//! keeps the one handle it got from `send_request` for all rounds.
//!
//! ```text
//!  send_request ──▶ InFlight(round r) ──InputRequiredResult──▶ AwaitingInput(r+1)
//!                     ▲     │ without inputRequests: retried at once   │
//!                     │     │                                          │ provide_input
//!                     └─────┴──────────────────────────────────────────┘
//!  InFlight ──any other answer──▶ Response / Failed, under the first id
//!  (more than input_rounds_max rounds: Failed with TooManyInputRounds)
//! ```
//!
//! The rules the client keeps: a retry carries a new id (each round is its
//! own request); `requestState` is echoed exactly as received and only on
//! that retry, never inspected; no `requestState` is sent when the server
//! sent none; input is asked of the application only when the server asked
//! (`inputRequests`), and only of kinds the client declared. A server that
//! breaks its side (`mrtr::check_asked`, the check the server makes too:
//! an `InputRequiredResult` on another method, with neither field, of an
//! undeclared kind, or more than `INPUT_REQUESTS_MAX` requests) fails the
//! request as `Malformed`.

use crate::jsonrpc::RawJson;
use serde_json::{Map, Value};

/// One request that may take several rounds, by its first id (the handle).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Rounds {
    /// The method.
    method: String,
    /// The parameters as the application gave them.
    params: Option<RawJson>,
    /// The state the server sent with its last `InputRequiredResult`.
    state: Option<String>,
    /// `InputRequiredResult`s received so far.
    round: u32,
    /// The request carrying the current round, `None` while the
    /// application gathers input.
    wire: Option<i64>,
}

impl Rounds {
    /// Request `n` of `method` with `params`, in its first round.
    pub(super) fn new(method: &str, params: Option<&RawJson>, n: i64) -> Self {
        Rounds {
            method: method.to_owned(),
            params: params.cloned(),
            state: None,
            round: 0,
            wire: Some(n),
        }
    }

    /// The method.
    pub(super) fn method(&self) -> &str {
        &self.method
    }

    /// The request carrying the current round, while one is in flight.
    pub(super) fn wire(&self) -> Option<i64> {
        self.wire
    }

    /// Whether it waits for the application's input.
    pub(super) fn is_awaiting(&self) -> bool {
        self.wire.is_none()
    }

    /// An `InputRequiredResult` with `state` ended the current round: the
    /// number of the round now asked for.
    pub(super) fn asked(&mut self, state: Option<String>) -> u32 {
        self.round += 1;
        self.state = state;
        self.wire = None;
        self.round
    }

    /// The next round's parameters: those first given, the application's
    /// input, and the server's state echoed verbatim (never the
    /// application's own copies of either).
    pub(super) fn next_params(&self, responses: Option<Map<String, Value>>) -> RawJson {
        let mut params = self
            .params
            .as_ref()
            .map(RawJson::to_value)
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::Object(Map::new()));
        if let Some(obj) = params.as_object_mut() {
            obj.remove("inputResponses");
            obj.remove("requestState");
            if let Some(responses) = responses {
                obj.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = &self.state {
                obj.insert("requestState".into(), Value::from(state.as_str()));
            }
        }
        RawJson::from(params)
    }

    /// Request `n` carries the next round.
    pub(super) fn sent(&mut self, n: i64) {
        self.wire = Some(n);
    }
}

#[cfg(test)]
mod tests {
    use crate::client::testing::{answer, sent, v2026, Sent};
    use crate::client::{ClientError, ClientEvent, ClientSession, ClientUsageError};
    use crate::ids::RequestId;
    use crate::jsonrpc::RawJson;
    use crate::time::Instant;
    use serde_json::{json, Value};

    const NOW: Instant = Instant::ZERO;

    fn declared() -> ClientSession {
        v2026(json!({"elicitation": {}, "sampling": {}}))
    }

    fn call(c: &mut ClientSession, tool: &str) -> (RequestId, Sent) {
        let params = json!({"name": tool, "arguments": {"x": 1}});
        let id = c
            .send_request("tools/call", Some(RawJson::from(params)), NOW)
            .unwrap();
        let mut s = sent(c);
        assert_eq!(s.len(), 1);
        (id, s.remove(0))
    }

    /// Answers `s` with `result` as its JSON-RPC result.
    fn reply(c: &mut ClientSession, s: &Sent, result: Value) {
        let body = json!({"jsonrpc": "2.0", "id": s.body["id"], "result": result});
        answer(c, s.http, 200, &body.to_string());
    }

    fn events(c: &mut ClientSession) -> Vec<ClientEvent> {
        std::iter::from_fn(|| c.poll_event()).collect()
    }

    fn ask_name(state: Option<&str>) -> Value {
        let mut r = json!({
            "resultType": "input_required",
            "inputRequests": {"login": {"method": "elicitation/create",
                "params": {"message": "who?", "requestedSchema": {"type": "object", "properties": {}}}}}
        });
        if let Some(s) = state {
            r["requestState"] = Value::from(s);
        }
        r
    }

    #[test]
    fn a_round_is_retried_under_a_new_id_with_the_input_and_the_state_verbatim() {
        let mut c = declared();
        let (id, first) = call(&mut c, "t");
        // A state with characters a careless client might re-encode.
        let state = "s1.ab+/==\u{e9}";
        reply(&mut c, &first, ask_name(Some(state)));
        let asked = events(&mut c);
        let [ClientEvent::InputRequired {
            id: asked_id,
            requests,
            round: 1,
        }] = &asked[..]
        else {
            panic!("{asked:?}");
        };
        assert_eq!(asked_id, &id);
        assert_eq!(requests.to_value()["login"]["method"], "elicitation/create");
        assert!(
            sent(&mut c).is_empty(),
            "nothing is sent before the application answers"
        );
        assert_eq!(c.awaiting_input().collect::<Vec<_>>(), vec![id.clone()]);
        let input = json!({"login": {"action": "accept", "content": {"name": "octocat"}}});
        c.provide_input(&id, RawJson::from(input.clone()), NOW)
            .unwrap();
        let retry = sent(&mut c).remove(0);
        assert_ne!(retry.body["id"], first.body["id"], "a new JSON-RPC id");
        assert_eq!(retry.name.as_deref(), Some("t"));
        let p = &retry.body["params"];
        assert_eq!(p["name"], "t");
        assert_eq!(p["arguments"], json!({"x": 1}));
        assert_eq!(p["inputResponses"], input);
        assert_eq!(p["requestState"], state);
        assert_eq!(
            p["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        reply(
            &mut c,
            &retry,
            json!({"content": [], "resultType": "complete"}),
        );
        let done = events(&mut c);
        assert!(
            matches!(&done[..], [ClientEvent::Response { id: r, result: Ok(_) }] if *r == id),
            "{done:?}"
        );
        assert_eq!(c.pending().count() + c.awaiting_input().count(), 0);
    }

    #[test]
    fn a_state_without_requests_is_retried_at_once_and_no_state_is_never_invented() {
        let mut c = declared();
        let (id, first) = call(&mut c, "t");
        reply(
            &mut c,
            &first,
            json!({"resultType": "input_required", "requestState": "k"}),
        );
        assert!(events(&mut c).is_empty(), "nothing to ask the application");
        let retry = sent(&mut c).remove(0);
        assert_eq!(retry.body["params"]["requestState"], "k");
        assert!(retry.body["params"].get("inputResponses").is_none());
        // The next round has requests and no state: the retry carries none.
        reply(&mut c, &retry, ask_name(None));
        assert_eq!(events(&mut c).len(), 1);
        c.provide_input(&id, RawJson::from(json!({})), NOW).unwrap();
        let third = sent(&mut c).remove(0);
        assert!(third.body["params"].get("requestState").is_none());
    }

    #[test]
    fn a_server_that_keeps_asking_is_stopped_at_input_rounds_max() {
        let mut c = declared();
        let max = c.config().input_rounds_max;
        let (id, mut s) = call(&mut c, "t");
        let mut sends = 1;
        loop {
            reply(
                &mut c,
                &s,
                json!({"resultType": "input_required", "requestState": "again"}),
            );
            match sent(&mut c).pop() {
                Some(next) => {
                    s = next;
                    sends += 1;
                }
                None => break,
            }
        }
        assert_eq!(sends, max + 1, "the first request and max retries");
        let e = events(&mut c);
        assert!(
            matches!(&e[..], [ClientEvent::Failed { id: f, error: ClientError::TooManyInputRounds(m) }] if *f == id && *m == max),
            "{e:?}"
        );
    }

    #[test]
    fn what_a_server_must_not_send_fails_the_request_as_malformed() {
        let cases = [
            (
                "tools/list",
                json!({"resultType": "input_required", "requestState": "k"}),
            ),
            ("tools/call", json!({"resultType": "input_required"})),
            (
                "tools/call",
                json!({"resultType": "input_required", "inputRequests": []}),
            ),
            (
                "tools/call",
                json!({"resultType": "input_required", "requestState": 7}),
            ),
            (
                "tools/call",
                json!({"resultType": "input_required",
                    "inputRequests": {"r": {"method": "roots/list"}}}),
            ),
            (
                "tools/call",
                json!({"resultType": "input_required",
                    "inputRequests": {"r": {"method": "tools/call"}}}),
            ),
        ];
        for (method, result) in cases {
            let mut c = declared();
            let params = RawJson::from(json!({"name": "t"}));
            let id = c.send_request(method, Some(params), NOW).unwrap();
            let s = sent(&mut c).remove(0);
            reply(&mut c, &s, result.clone());
            let e = events(&mut c);
            assert!(
                matches!(&e[..], [ClientEvent::Failed { id: f, error: ClientError::Malformed(_) }] if *f == id),
                "{method} {result}: {e:?}"
            );
            assert!(sent(&mut c).is_empty(), "{result}: no retry");
        }
        // Too many requests at once.
        let many: serde_json::Map<String, Value> = (0..=crate::mrtr::input::INPUT_REQUESTS_MAX)
            .map(|i| (format!("k{i}"), json!({"method": "sampling/createMessage"})))
            .collect();
        let mut c = declared();
        let (_, s) = call(&mut c, "t");
        reply(
            &mut c,
            &s,
            json!({"resultType": "input_required", "inputRequests": many}),
        );
        assert!(matches!(
            &events(&mut c)[..],
            [ClientEvent::Failed {
                error: ClientError::Malformed(_),
                ..
            }]
        ));
    }

    #[test]
    fn a_request_waiting_for_input_can_be_cancelled_and_then_takes_none() {
        let mut c = declared();
        let (id, s) = call(&mut c, "t");
        reply(&mut c, &s, ask_name(Some("k")));
        events(&mut c);
        assert_eq!(
            c.provide_input(&id, RawJson::from(json!([1])), NOW),
            Err(ClientUsageError::InputNotAMap)
        );
        c.cancel(&id, NOW).unwrap();
        assert!(matches!(
            &events(&mut c)[..],
            [ClientEvent::Failed {
                error: ClientError::Cancelled,
                ..
            }]
        ));
        assert!(sent(&mut c).is_empty(), "nothing was in flight");
        assert_eq!(
            c.provide_input(&id, RawJson::from(json!({})), NOW),
            Err(ClientUsageError::UnknownRequest(id.clone()))
        );
        // A retry in flight is cancelled by its handle, as the first round was.
        let (id, s) = call(&mut c, "t");
        reply(&mut c, &s, ask_name(Some("k")));
        events(&mut c);
        c.provide_input(&id, RawJson::from(json!({})), NOW).unwrap();
        sent(&mut c);
        c.cancel(&id, NOW).unwrap();
        assert!(matches!(
            &events(&mut c)[..],
            [ClientEvent::Failed { id: f, error: ClientError::Cancelled }] if *f == id
        ));
        assert_eq!(c.pending().count(), 0);
    }

    #[test]
    fn closing_fails_the_requests_waiting_for_input_and_only_once() {
        let mut c = declared();
        let (waiting, s) = call(&mut c, "t");
        reply(&mut c, &s, ask_name(Some("k")));
        let (flying, _) = call(&mut c, "u");
        events(&mut c);
        c.close(NOW);
        let mut failed: Vec<_> = events(&mut c)
            .into_iter()
            .filter_map(|e| match e {
                ClientEvent::Failed {
                    id,
                    error: ClientError::Closed,
                } => Some(id),
                _ => None,
            })
            .collect();
        failed.sort();
        let mut both = vec![waiting, flying];
        both.sort();
        assert_eq!(failed, both, "each outstanding request fails once");
        assert_eq!(c.awaiting_input().count(), 0);
    }

    #[test]
    fn a_client_that_answers_nothing_fails_instead_of_asking() {
        let mut c = {
            let mut config = crate::client::ClientConfig {
                era: crate::client::ClientEra::V2026,
                server_requests: crate::client::ServerRequests::Decline,
                ..Default::default()
            };
            config.pending_max = 4;
            ClientSession::new(config, crate::policy::ClientPolicy::FIXED)
        };
        let params = RawJson::from(json!({"capabilities": {"elicitation": {}}}));
        c.initialize(params, NOW).unwrap();
        let probe = sent(&mut c).remove(0);
        reply(
            &mut c,
            &probe,
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {}}),
        );
        events(&mut c);
        let (_, s) = call(&mut c, "t");
        reply(&mut c, &s, ask_name(None));
        assert!(matches!(
            &events(&mut c)[..],
            [ClientEvent::Failed {
                error: ClientError::InputDeclined,
                ..
            }]
        ));
    }

    #[test]
    fn requests_waiting_for_input_count_against_pending_max() {
        let mut c = declared();
        let max = c.config().pending_max;
        for _ in 0..max {
            let (_, s) = call(&mut c, "t");
            reply(&mut c, &s, ask_name(Some("k")));
        }
        assert_eq!(c.awaiting_input().count(), max);
        assert_eq!(
            c.send_request("tools/list", None, NOW),
            Err(ClientUsageError::TooManyRequests)
        );
    }

    #[test]
    fn the_session_era_knows_no_input_required_result() {
        let mut c = crate::client::testing::client(crate::client::ClientEra::V2025);
        c.initialize(RawJson::empty_object(), NOW).unwrap();
        let init = sent(&mut c).remove(0);
        reply(
            &mut c,
            &init,
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}),
        );
        events(&mut c);
        sent(&mut c);
        let (id, s) = call(&mut c, "t");
        reply(&mut c, &s, ask_name(Some("k")));
        assert!(matches!(
            &events(&mut c)[..],
            [ClientEvent::Response { id: r, result: Ok(_) }] if *r == id
        ));
    }
}
