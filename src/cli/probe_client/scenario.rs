//! The client prober's scenarios: each a server behaviour the core produces
//! (FIXED, or a server preset) on one tool call, with at most one scripted
//! fault at the front ([`Fault`]), and what a correct client does in it
//! ([`Expect`]).

use mcp_streamable::policy::{DetachedResponse, ServerPolicy};
use serde_json::{json, Value};

/// A scripted fault the front puts between the client and the server core.
/// Each is what a real server or the network does to a client at some
/// moment; none of them is a server behaviour the core would choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Everything reaches the server and comes back untouched.
    None,
    /// A GET that resumes (`Last-Event-ID`) is answered `200
    /// text/event-stream` and ended with no event: the first `times` of
    /// them, or every one (`None`).
    EmptyResume {
        /// How many resumptions are answered so.
        times: Option<u32>,
    },
    /// The call's POST is answered `200 application/json` with this body
    /// instead of reaching the server.
    JsonBody(&'static str),
    /// From the first resumption on, the session is gone: every request
    /// naming it is answered `404` (the server restarted or expired it
    /// while the call was in flight).
    SessionGone,
    /// A `server/discover` is refused as a 2025-era server refuses an
    /// unknown method without a session: this status, and a JSON-RPC error
    /// body when `code` is set.
    DiscoverRefused {
        /// HTTP status.
        status: u16,
        /// The JSON-RPC error code of the body, none for an empty body.
        code: Option<i64>,
    },
    /// The first time a list change is on its way down a
    /// `subscriptions/listen` stream, the connection is cut just before
    /// it: what came before reached the client, the change did not, and the
    /// stream ends without its `complete` result (the network, a restarting
    /// proxy or instance). Nothing of this era is resumable: only a new
    /// listen and a fresh list recover the change.
    CutListen,
}

/// What a correct client does in a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The call succeeds: the command exits 0.
    Completes,
    /// As [`Expect::Completes`], for a response sent on the standalone GET:
    /// a client that opens none is not judged (the response waits for the
    /// next GET, which is a resumption it is not written on).
    CompletesOnGet,
    /// The call ends, in success or failure, within the bound: never a hang
    /// and never a loop.
    Ends,
    /// The client answers the server's request (a POST carrying a JSON-RPC
    /// response) and the call succeeds.
    Answers,
    /// As [`Expect::Answers`], and the answer names the request's id `0`.
    AnswersIdZero,
    /// The server withdraws its request (`notifications/cancelled` on the
    /// call's stream) before the client's application answers it
    /// (`MCP_PROBE_ANSWER_DELAY_MS`): the client drops it instead of
    /// answering (C6), and the call succeeds. A client the withdrawal never
    /// reached, or that answered before it, is not judged.
    DropsWithdrawn,
    /// As [`Expect::Answers`], for a request sent on the standalone GET: a
    /// client that opens none is not judged (it cannot hear the request;
    /// the server breaks B8 by sending it there).
    AnswersOnGet,
    /// After a resumption that ended with no event, the client resumes again
    /// with the same `Last-Event-ID`, and the call succeeds.
    ResumesAgain,
    /// A client that asked `server/discover` and was refused falls back to
    /// `initialize`, and the call succeeds; a client that never asks is not
    /// tested.
    FallsBack,
    /// The client gives its call up (`MCP_PROBE_GIVE_UP_MS` after sending
    /// it), and the server never ends the call's streams: the client closes
    /// each (its POST, the resumption it polls with) within
    /// [`RELEASE_GRACE_MS`] of its deadline and resumes none later, rather
    /// than read or poll for as long as it stays connected
    /// (`MCP_PROBE_LINGER_MS`). A call whose every stream the server had
    /// ended before the deadline did not test the client.
    ///
    /// [`RELEASE_GRACE_MS`]: super::judge::RELEASE_GRACE_MS
    ReleasesGivenUp,
    /// After its listen was cut with a change in flight, the client listens
    /// again and, told by the new acknowledgement that it may have missed
    /// something, lists again; a client that never listened is not judged.
    Relists,
}

/// One adversarial scenario.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// Its name on the command line and in reports.
    pub name: &'static str,
    /// What the server does, in a line.
    pub what: &'static str,
    /// The server preset the core runs under.
    pub preset: &'static str,
    /// Where the preset's detached responses go instead, when the scenario
    /// plays a server behaviour no preset has.
    pub detached_response: Option<DetachedResponse>,
    /// The tool the client is asked to call (the fixtures' tool set).
    pub tool: &'static str,
    /// Its arguments, as JSON text.
    pub arguments: &'static str,
    /// The scripted fault at the front.
    pub fault: Fault,
    /// What a correct client does.
    pub expect: Expect,
    /// The number of each session's first request to the client (1 unless
    /// the scenario is about id `0`).
    pub first_request_number: i64,
    /// Whether the scenario is about the session era's mechanics (streams
    /// per POST, resumption, server requests): a client that made no session
    /// is not judged by it.
    pub session_era: bool,
    /// How many calls of the tool the client makes at once
    /// (`MCP_PROBE_CALLS`): a scenario about requests in flight together.
    pub calls: u32,
    /// How long the client's application takes to answer a server request,
    /// in ms (`MCP_PROBE_ANSWER_DELAY_MS`; 0: at once).
    pub answer_delay_ms: u64,
    /// Whether the client listens for tool-list changes before its call and
    /// ends only once it has learned of one (`MCP_PROBE_LISTEN=tools`): a
    /// 2026-07-28 client with `subscriptions/listen`; a session-era client
    /// hears changes on its GET, and is not judged by such a scenario.
    pub listen: bool,
    /// When not 0, the client's application gives each call up this many ms
    /// after sending it (`MCP_PROBE_GIVE_UP_MS`).
    pub give_up_ms: u64,
    /// How long a client that gave a call up stays connected before it
    /// closes and exits (`MCP_PROBE_LINGER_MS`).
    pub linger_ms: u64,
}

impl Fault {
    /// Whether the front plays a part (a scenario whose fault never fired
    /// did not test the client).
    pub fn is_scripted(self) -> bool {
        self != Fault::None
    }
}

impl Scenario {
    /// The server policy the core runs under.
    pub fn policy(&self) -> Option<ServerPolicy> {
        let mut policy = ServerPolicy::preset(self.preset)?;
        if let Some(d) = self.detached_response {
            policy.detached_response = d;
        }
        Some(policy)
    }

    /// The tool's arguments.
    pub fn arguments(&self) -> Value {
        serde_json::from_str(self.arguments).unwrap_or_else(|_| json!({}))
    }
}

/// What a scenario is unless it says otherwise: a plain call of
/// `test_simple_text` on FIXED, in the session era, nothing scripted.
const CALL: Scenario = Scenario {
    name: "",
    what: "",
    preset: "FIXED",
    detached_response: None,
    tool: "test_simple_text",
    arguments: "{}",
    first_request_number: 1,
    fault: Fault::None,
    expect: Expect::Completes,
    session_era: true,
    calls: 1,
    answer_delay_ms: 0,
    listen: false,
    give_up_ms: 0,
    linger_ms: 0,
};

/// Every scenario, in the order they run.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "baseline",
        what: "a plain call answered on its own stream (a client that fails here cannot be judged by the rest)",
        session_era: false,
        ..CALL
    },
    Scenario {
        name: "resumed-response",
        what: "the server closes the call's stream for polling; the response comes only on the resumed stream",
        tool: "test_reconnection",
        ..CALL
    },
    Scenario {
        name: "second-drop",
        what: "after a polling close, the first resumption ends before any new event: the client must resume again from the same id",
        tool: "test_reconnection",
        fault: Fault::EmptyResume { times: Some(1) },
        expect: Expect::ResumesAgain,
        ..CALL
    },
    Scenario {
        name: "empty-resume",
        what: "every resumption is answered 200 with an empty stream (rmcp #958): the client must give up, not loop",
        tool: "test_reconnection",
        fault: Fault::EmptyResume { times: None },
        expect: Expect::Ends,
        ..CALL
    },
    Scenario {
        name: "close-before-priming",
        what: "the call's stream is closed for polling before any event id (python-sdk PR #2934): the call must end, not hang",
        preset: "PYTHON_PR2934",
        tool: "test_reconnection",
        expect: Expect::Ends,
        ..CALL
    },
    Scenario {
        name: "response-on-get",
        what: "the response to a call whose stream was closed goes to the client's next GET, whatever it resumes (race C, csharp-sdk #1381)",
        preset: "CONFORMANCE_SSE_RETRY",
        tool: "test_reconnection",
        ..CALL
    },
    Scenario {
        name: "response-on-open-get",
        what: "the response to a call whose stream was closed goes to the standalone GET the client has open (race C: a client that waits for the call's own stream never takes it)",
        detached_response: Some(DetachedResponse::OpenGet),
        tool: "test_reconnection",
        expect: Expect::CompletesOnGet,
        ..CALL
    },
    Scenario {
        name: "session-gone",
        what: "the session is gone (404) when the client resumes its call: the call must fail or be made again, not hang (rmcp #912)",
        tool: "test_reconnection",
        fault: Fault::SessionGone,
        expect: Expect::Ends,
        ..CALL
    },
    Scenario {
        name: "session-gone-in-flight",
        what: "two calls in flight at once, both streams closed for polling; the session is gone (404) when the client resumes: each call must fail or be made again, none may hang",
        tool: "test_reconnection",
        fault: Fault::SessionGone,
        expect: Expect::Ends,
        calls: 2,
        ..CALL
    },
    Scenario {
        name: "malformed-json",
        what: "the call is answered 200 application/json with a body that does not parse (rmcp PR #1208): the call must fail",
        fault: Fault::JsonBody(r#"{"jsonrpc":"2.0","id":"#),
        session_era: false,
        expect: Expect::Ends,
        ..CALL
    },
    Scenario {
        name: "json-not-the-response",
        what: "the call is answered 200 application/json whose body is a notification, not its response (rmcp #980): the call must fail",
        fault: Fault::JsonBody(
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"not your response"}}"#,
        ),
        session_era: false,
        expect: Expect::Ends,
        ..CALL
    },
    Scenario {
        name: "request-on-post",
        what: "the server asks the client (elicitation) on the call's own stream while the client waits for it",
        tool: "test_elicitation",
        arguments: r#"{"message":"probe-client asks"}"#,
        expect: Expect::Answers,
        ..CALL
    },
    Scenario {
        name: "request-on-get",
        what: "the server asks the client for its call on the standalone GET (mcp-go #932): a client that reads its GET answers, one that does not waits for ever",
        preset: "MCP_GO_BEFORE_933",
        tool: "test_elicitation",
        arguments: r#"{"message":"probe-client asks"}"#,
        expect: Expect::AnswersOnGet,
        ..CALL
    },
    Scenario {
        name: "request-id-0",
        what: "the server's first request to the client (an elicitation on the call's stream) has id 0, as most SDKs number theirs (typescript-sdk #2654: id 0 read as absent)",
        tool: "test_elicitation",
        arguments: r#"{"message":"probe-client asks"}"#,
        first_request_number: 0,
        expect: Expect::AnswersIdZero,
        ..CALL
    },
    Scenario {
        name: "withdrawn-request",
        what: "the server asks the client (elicitation) for the call and withdraws the question 200 ms later (notifications/cancelled on the call's stream), before the client's application answers at 800 ms: the client must drop it, not answer",
        tool: "test_elicitation",
        arguments: r#"{"message":"probe-client asks","withdraw_after_ms":200,"answer_after_ms":1000}"#,
        expect: Expect::DropsWithdrawn,
        answer_delay_ms: 800,
        ..CALL
    },
    Scenario {
        name: "withdrawn-request-id-0",
        what: "as withdrawn-request, the question numbered 0 (typescript-sdk #2654: a cancellation of request 0 read as naming none, and ignored)",
        tool: "test_elicitation",
        arguments: r#"{"message":"probe-client asks","withdraw_after_ms":200,"answer_after_ms":1000}"#,
        first_request_number: 0,
        expect: Expect::DropsWithdrawn,
        answer_delay_ms: 800,
        ..CALL
    },
    Scenario {
        name: "given-up-call",
        what: "the client gives a slow call up 500 ms in and stays connected; the server, as TypeScript SDK servers do, never ends a cancelled call's POST: the client must close that stream itself (C3, L4)",
        preset: "TS_SDK_1_32",
        tool: "slow_progress",
        arguments: r#"{"steps":100,"step_ms":100}"#,
        expect: Expect::ReleasesGivenUp,
        session_era: false,
        give_up_ms: 500,
        linger_ms: 1800,
        ..CALL
    },
    Scenario {
        name: "given-up-while-polling",
        what: "the server closes a slow call's stream for polling at once; the client gives the call up 500 ms in, while it has the stream's resumption open, and stays connected; the server, as TypeScript SDK servers do, never ends a cancelled call's stream: the client must close the resumption and poll no more (C3, L4)",
        preset: "TS_SDK_1_32",
        tool: "slow_reconnection",
        arguments: r#"{"answer_after_ms":4000}"#,
        expect: Expect::ReleasesGivenUp,
        give_up_ms: 500,
        linger_ms: 1800,
        ..CALL
    },
    Scenario {
        name: "discover-refused-400",
        what: "server/discover refused 400 with -32000, as a 2025 TypeScript server refuses a request without a session: an auto client falls back",
        fault: Fault::DiscoverRefused {
            status: 400,
            code: Some(-32000),
        },
        session_era: false,
        expect: Expect::FallsBack,
        ..CALL
    },
    Scenario {
        name: "discover-refused-404",
        what: "server/discover refused 404 with -32001 (session not found): an auto client falls back",
        fault: Fault::DiscoverRefused {
            status: 404,
            code: Some(-32001),
        },
        session_era: false,
        expect: Expect::FallsBack,
        ..CALL
    },
    Scenario {
        name: "discover-refused-405",
        what: "server/discover refused 405 with no body: an auto client falls back",
        fault: Fault::DiscoverRefused {
            status: 405,
            code: None,
        },
        session_era: false,
        expect: Expect::FallsBack,
        ..CALL
    },
    Scenario {
        name: "listen-cut",
        what: "a 2026-07-28 listen for tool-list changes is cut while a change is on its way down it: the client must listen again and list again (M4), not wait for a change that is gone",
        tool: "notify",
        fault: Fault::CutListen,
        expect: Expect::Relists,
        session_era: false,
        listen: true,
        ..CALL
    },
];

/// The scenario named `name`.
pub fn named(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_names_a_preset_and_parses_its_arguments() {
        for (i, s) in SCENARIOS.iter().enumerate() {
            assert!(s.policy().is_some(), "{}", s.name);
            assert!(
                serde_json::from_str::<Value>(s.arguments).is_ok(),
                "{}",
                s.name
            );
            assert!(SCENARIOS[i + 1..].iter().all(|t| t.name != s.name));
        }
        assert_eq!(named("baseline").map(|s| s.tool), Some("test_simple_text"));
    }
}
