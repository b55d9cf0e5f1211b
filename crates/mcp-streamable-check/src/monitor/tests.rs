//! Unit tests of the monitor's own surface: what a checker compares and
//! hashes it by, and the getters a run's report reads.

use super::{Monitor, Observation};
use mcp_streamable::head::ResponseHead;
use mcp_streamable::ids::{HttpId, MsgKey, SessionId};
use mcp_streamable::jsonrpc::parse_message;
use mcp_streamable::server::{Cause, Content, EndReason, Method, Transmit, TransmitKind};
use mcp_streamable::shared::fixed_keys;
use serde_json::json;
use std::hash::{BuildHasher, Hash, Hasher};

/// A response to request `id` that client `client` never sent: I1.
fn stray(client: usize, id: u64, http: u64) -> Observation {
    Observation::ClientReceived {
        client,
        http: HttpId(http),
        message: parse_message(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)).unwrap(),
    }
}

/// A session-era POST of `body` on session `s` as exchange `http`.
fn posted(http: u64, body: &str) -> Observation {
    Observation::Request {
        http: HttpId(http),
        method: Method::Post,
        session: Some("s".into()),
        last_event_id: None,
        messages: vec![parse_message(body).unwrap()],
        v2026: false,
        mcp_headers: Vec::new(),
        principal: None,
    }
}

fn post(http: u64) -> Observation {
    posted(http, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
}

fn fed(observations: &[Observation]) -> Monitor {
    let mut m = Monitor::new();
    for o in observations {
        m.observe(o);
    }
    m
}

fn hash(f: impl FnOnce(&mut dyn Hasher)) -> u64 {
    let mut h = fixed_keys().build_hasher();
    f(&mut h);
    h.finish()
}

fn whole(m: &Monitor) -> u64 {
    hash(|mut h| m.hash(&mut h))
}

fn shared(m: &Monitor) -> u64 {
    hash(|mut h| m.hash_shared(&mut h))
}

fn client(m: &Monitor, c: usize) -> u64 {
    hash(|mut h| m.hash_client(c, &mut h))
}

#[test]
fn the_same_violations_found_after_more_steps_are_the_same_state() {
    let short = fed(&[stray(0, 7, 1)]);
    let long = fed(&[
        post(5),
        Observation::Closed { http: HttpId(5) },
        stray(0, 7, 1),
    ]);
    assert_eq!(short.steps(), 1);
    assert_eq!(long.steps(), 3);
    // Not equal as wholes (the closed exchange differs), but their
    // violations compare and hash alike whatever step found them.
    assert_eq!(short.violations.clone(), long.violations.clone());
    let key = |m: &Monitor| hash(|mut h| m.violations.hash(&mut h));
    assert_eq!(key(&short), key(&long));
    let again = fed(&[stray(0, 7, 1)]);
    assert_eq!(short, again);
    assert_eq!(whole(&short), whole(&again));
    assert_eq!(shared(&short), shared(&again));
}

#[test]
fn different_violations_are_different_states() {
    let a = fed(&[stray(0, 7, 1)]);
    let b = fed(&[stray(0, 8, 1)]);
    let none = Monitor::new();
    assert_eq!(a.first_violation().map(|v| v.id), Some("I1"));
    assert_eq!(none.first_violation(), None);
    assert_ne!(a.violations, b.violations, "the detail names the id");
    assert_ne!(a.violations, none.violations);
    assert_ne!(a, b);
    assert_ne!(shared(&a), shared(&b));
    assert_ne!(shared(&a), shared(&none));
}

#[test]
fn the_shared_part_and_each_client_part_hash_what_differs() {
    // Client 1 sent a request client 0 did not: only client 1's part differs.
    let transmit = |client| {
        let mut c = mcp_streamable::ClientSession::new(
            mcp_streamable::ClientConfig::default(),
            mcp_streamable::ClientPolicy::FIXED,
        );
        c.initialize(
            mcp_streamable::jsonrpc::RawJson::empty_object(),
            mcp_streamable::time::Instant::ZERO,
        )
        .unwrap();
        Observation::ClientTransmit {
            client,
            transmit: c.poll_transmit().unwrap(),
        }
    };
    let zero = fed(&[transmit(0)]);
    let one = fed(&[transmit(1)]);
    assert_eq!(shared(&zero), shared(&one));
    assert_ne!(client(&zero, 0), client(&one, 0));
    assert_ne!(client(&zero, 1), client(&one, 1));
    assert_eq!(
        client(&zero, 0),
        client(&one, 1),
        "the same part, another index"
    );
    // A server-side difference is in the shared part.
    let served = fed(&[transmit(0), post(5)]);
    assert_ne!(shared(&zero), shared(&served));
    assert_eq!(client(&zero, 0), client(&served, 0));
}

#[test]
fn unanswered_lists_exchanges_with_no_head_not_ended_and_not_closed() {
    let head = |http| {
        Observation::Transmit(Transmit {
            http: HttpId(http),
            kind: TransmitKind::Head(ResponseHead::new(200, Content::Sse)),
        })
    };
    let end = |http| {
        Observation::Transmit(Transmit {
            http: HttpId(http),
            kind: TransmitKind::End(EndReason::Complete),
        })
    };
    let m = fed(&[
        post(1),
        post(2),
        head(2),
        post(3),
        Observation::Closed { http: HttpId(3) },
        post(4),
        end(4),
        post(5),
    ]);
    assert_eq!(m.unanswered(), [HttpId(1), HttpId(5)]);
}

fn get(http: u64, last_event_id: Option<&str>) -> Observation {
    Observation::Request {
        http: HttpId(http),
        method: Method::Get,
        session: Some("s".into()),
        last_event_id: last_event_id.map(str::to_owned),
        messages: Vec::new(),
        v2026: false,
        mcp_headers: Vec::new(),
        principal: None,
    }
}

fn head(http: u64, status: u16, content: Content) -> Observation {
    Observation::Transmit(Transmit {
        http: HttpId(http),
        kind: TransmitKind::Head(ResponseHead::new(status, content)),
    })
}

fn end(http: u64, reason: EndReason) -> Observation {
    Observation::Transmit(Transmit {
        http: HttpId(http),
        kind: TransmitKind::End(reason),
    })
}

fn sent(cause: Cause) -> Observation {
    Observation::Sent {
        session: "s".into(),
        key: MsgKey(1),
        cause,
        origin: None,
    }
}

/// A 200 head on `http` naming session `session`.
fn naming(http: u64, content: Content, session: &str) -> Observation {
    let mut head = ResponseHead::new(200, content);
    head.session_id = Some(session.parse::<SessionId>().unwrap());
    Observation::Transmit(Transmit {
        http: HttpId(http),
        kind: TransmitKind::Head(head),
    })
}

/// A monitor (`gets_max` when given) that saw session `s` issued.
fn issued(gets_max: Option<usize>) -> Monitor {
    let mut m = gets_max.map_or_else(Monitor::new, Monitor::with_gets_max);
    let init = parse_message(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#);
    m.observe(&Observation::Request {
        http: HttpId(100),
        method: Method::Post,
        session: None,
        last_event_id: None,
        messages: vec![init.unwrap()],
        v2026: false,
        mcp_headers: Vec::new(),
        principal: None,
    });
    m.observe(&naming(100, Content::Json, "s"));
    m
}

/// What `finish` finds when the message of [`sent`] is still queued (or
/// not) after session `s` was issued and `observations`.
fn finished(observations: &[Observation], queued: bool) -> Vec<&'static str> {
    let mut m = issued(None);
    for o in observations {
        m.observe(o);
    }
    let queue = [("s".to_owned(), MsgKey(1))];
    m.finish(if queued { &queue } else { &[] });
    m.violations().iter().map(|v| v.id).collect()
}

#[test]
fn b4_is_a_message_queued_while_a_live_standalone_get_of_its_session_is_open() {
    let live = [
        get(1, None),
        head(1, 200, Content::Sse),
        sent(Cause::Unrelated),
    ];
    assert_eq!(finished(&live, true), ["B4"]);
    let resumed = [
        get(1, Some("e1")),
        head(1, 200, Content::Sse),
        sent(Cause::Unrelated),
    ];
    assert_eq!(finished(&resumed, true), ["B4"], "a resumed GET is one too");
    // Not live: closed, ended, or refused; or the message is a request's.
    let closed = [
        get(1, None),
        head(1, 200, Content::Sse),
        Observation::Closed { http: HttpId(1) },
        sent(Cause::Unrelated),
    ];
    assert_eq!(finished(&closed, true), [] as [&str; 0]);
    let ended = [
        get(1, None),
        head(1, 200, Content::Sse),
        end(1, EndReason::Complete),
        sent(Cause::Unrelated),
    ];
    assert_eq!(finished(&ended, true), [] as [&str; 0]);
    let refused = [
        get(1, None),
        head(1, 409, Content::Json),
        sent(Cause::Unrelated),
    ];
    assert!(!finished(&refused, true).contains(&"B4"));
    let related = [
        get(1, None),
        head(1, 200, Content::Sse),
        sent(Cause::Request(mcp_streamable::ids::RequestId::Num(1))),
    ];
    assert_eq!(finished(&related, true), [] as [&str; 0]);
    // A POST's stream is no standalone GET.
    let post_stream = [post(1), head(1, 200, Content::Sse), sent(Cause::Unrelated)];
    assert_eq!(finished(&post_stream, true), [] as [&str; 0]);
}

/// B4's drop half: an unrelated message dropped for want of a stream
/// while a standalone GET of its session is open (its `200` out, not ended,
/// not closed). A drop for another reason (room, the handshake, the session's
/// end), a request's message, or a GET no longer open is no breach.
#[test]
fn b4_is_also_a_message_dropped_for_want_of_a_stream_beside_an_open_get() {
    use mcp_streamable::server::DropReason;
    let dropped = |reason| Observation::Dropped {
        session: "s".into(),
        key: MsgKey(1),
        reason,
    };
    let open = |tail: Vec<Observation>| {
        let mut obs = vec![get(1, None), head(1, 200, Content::Sse)];
        obs.extend(tail);
        finished(&obs, false)
    };
    let unrelated = || sent(Cause::Unrelated);
    assert_eq!(
        open(vec![unrelated(), dropped(DropReason::NoStream)]),
        ["B4"]
    );
    for reason in [
        DropReason::HeldFull,
        DropReason::BeforeInitialized,
        DropReason::SessionEnded,
    ] {
        assert_eq!(
            open(vec![unrelated(), dropped(reason)]),
            [] as [&str; 0],
            "{reason:?}"
        );
    }
    let related = sent(Cause::Request(mcp_streamable::ids::RequestId::Num(1)));
    assert!(!open(vec![related, dropped(DropReason::NoStream)]).contains(&"B4"));
    let closed = Observation::Closed { http: HttpId(1) };
    assert_eq!(
        open(vec![closed, unrelated(), dropped(DropReason::NoStream)]),
        [] as [&str; 0],
        "the client no longer reads the GET"
    );
    let no_get = [unrelated(), dropped(DropReason::NoStream)];
    assert_eq!(finished(&no_get, false), [] as [&str; 0]);
}

#[test]
fn a5_is_a_message_neither_queued_nor_written_nor_dropped_while_its_session_lives() {
    assert_eq!(finished(&[sent(Cause::Unrelated)], false), ["A5"]);
    assert_eq!(finished(&[sent(Cause::Unrelated)], true), [] as [&str; 0]);
    // Queued under another key, or another session's same key: still lost.
    for other in [("s", MsgKey(2)), ("t", MsgKey(1))] {
        let mut m = issued(None);
        m.observe(&sent(Cause::Unrelated));
        m.finish(&[(other.0.to_owned(), other.1)]);
        let ids: Vec<_> = m.violations().iter().map(|v| v.id).collect();
        assert_eq!(ids, ["A5"], "{other:?}");
    }
    let dropped = [
        sent(Cause::Unrelated),
        Observation::Dropped {
            session: "s".into(),
            key: MsgKey(1),
            reason: mcp_streamable::server::DropReason::NoStream,
        },
    ];
    assert_eq!(finished(&dropped, false), [] as [&str; 0]);
    let ended = [
        get(1, None),
        head(1, 200, Content::Sse),
        sent(Cause::Unrelated),
        end(1, EndReason::SessionEnded),
    ];
    assert_eq!(
        finished(&ended, false),
        [] as [&str; 0],
        "its session ended"
    );
}

#[test]
fn b5_bounds_a_sessions_gets_only_in_runs_without_faults() {
    // What is flagged after each of three GETs, with a bound of `max`.
    let gets = |max: usize, fault: bool| {
        let mut m = issued(Some(max));
        if fault {
            m.observe(&Observation::Fault);
        }
        (1..=3)
            .map(|http| {
                m.observe(&get(http, None));
                m.observe(&Observation::Closed { http: HttpId(http) });
                ids(&m).len()
            })
            .collect::<Vec<_>>()
    };
    // At the bound, nothing; past it, B5 for each GET more.
    assert_eq!(gets(1, false), [0, 1, 2]);
    assert_eq!(gets(2, false), [0, 0, 1]);
    assert_eq!(gets(1, true), [0, 0, 0]);
    let mut m = issued(Some(1));
    m.observe(&get(1, None));
    m.observe(&get(2, None));
    assert_eq!(ids(&m), ["B5"]);
}

#[test]
fn a_notification_on_a_cancelled_requests_stream_is_a3() {
    let progress = |key| event(1, None, key, Some(1), PROGRESS);
    let cancel = |method: &str| {
        posted(
            2,
            &format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"requestId":1}}}}"#),
        )
    };
    let run = |notice: Option<&str>| {
        let mut m = issued(None);
        m.observe(&post(1));
        m.observe(&head(1, 200, Content::Sse));
        m.observe(&progress(1));
        if let Some(method) = notice {
            m.observe(&cancel(method));
        }
        m.observe(&progress(2));
        m.violations().iter().map(|v| v.id).collect::<Vec<_>>()
    };
    assert_eq!(run(None), [] as [&str; 0]);
    assert_eq!(run(Some("notifications/progress")), [] as [&str; 0]);
    assert_eq!(run(Some("notifications/cancelled")), ["A3"]);
}

/// A cancellation that reaches the server before its request names
/// nothing there yet (the receiver may ignore it): the request is served
/// as any other, its progress is no A3, and its stream left open is no L4
/// either. After the request, the same cancellation makes the request over:
/// a stream still open for it is held for nothing (L4).
#[test]
fn a_cancellation_counts_only_once_its_request_reached_the_server() {
    let progress = |key| event(1, None, key, Some(1), PROGRESS);
    let cancel = posted(
        2,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
    );
    let run = |cancel_first: bool| {
        let mut m = issued(None);
        if cancel_first {
            m.observe(&cancel);
        }
        m.observe(&post(1));
        m.observe(&head(1, 200, Content::Sse));
        m.observe(&progress(1));
        if !cancel_first {
            m.observe(&cancel);
        }
        (ids(&m), m.held_open())
    };
    assert_eq!(run(true), (vec![], vec![]), "a cancellation of nothing yet");
    assert_eq!(run(false), (vec![], vec![HttpId(1)]), "held for nothing");
}

/// A cancelled request's message counts by when the application handed
/// it over, not when it was first written: one sent before the server had
/// the cancellation and first written after it (kept in the stream's log
/// while no connection was attached, then handed to a resumption) is the
/// resumption doing its work; one sent after it is A3. A message the
/// monitor saw no `Sent` for is judged by when it was written.
#[test]
fn a_cancelled_requests_message_counts_by_when_it_was_sent() {
    let sent_for_1 = |key| Observation::Sent {
        session: "s".into(),
        key: MsgKey(key),
        cause: Cause::Request(mcp_streamable::ids::RequestId::Num(1)),
        origin: None,
    };
    let cancel = posted(
        2,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
    );
    let run = |sent_before: Option<bool>| {
        let mut m = issued(None);
        m.observe(&post(1));
        m.observe(&head(1, 200, Content::Sse));
        if sent_before == Some(true) {
            m.observe(&sent_for_1(7));
        }
        m.observe(&cancel);
        if sent_before == Some(false) {
            m.observe(&sent_for_1(7));
        }
        m.observe(&event(1, None, 7, Some(1), PROGRESS));
        ids(&m)
    };
    assert_eq!(
        run(Some(true)),
        [] as [&str; 0],
        "sent before, written after"
    );
    assert_eq!(run(Some(false)), ["A3"], "sent after the cancellation");
    assert_eq!(run(None), ["A3"], "no Sent seen: judged on the wire");
}

fn ids(m: &Monitor) -> Vec<&'static str> {
    m.violations().iter().map(|v| v.id).collect()
}

#[test]
fn anything_but_the_end_written_after_the_end_is_a4() {
    let mut m = issued(None);
    m.observe(&post(1));
    m.observe(&head(1, 200, Content::Sse));
    m.observe(&end(1, EndReason::Complete));
    assert_eq!(ids(&m), [] as [&str; 0]);
    m.observe(&Observation::Transmit(Transmit {
        http: HttpId(1),
        kind: TransmitKind::Comment,
    }));
    assert_eq!(ids(&m), ["A4"]);
}

#[test]
fn a_notification_post_answered_200_is_a1_and_202_is_not() {
    let notification = |http| {
        posted(
            http,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
    };
    let mut m = issued(None);
    m.observe(&notification(1));
    m.observe(&head(1, 202, Content::None));
    assert_eq!(ids(&m), [] as [&str; 0]);
    m.observe(&notification(2));
    m.observe(&head(2, 200, Content::Json));
    assert_eq!(ids(&m), ["A1"]);
}

#[test]
fn only_an_initialize_takes_its_session_from_the_answers_head() {
    // A request sent without a session, answered with a session id it
    // did not ask for, is still of no session: what it carries is not
    // judged against that id.
    let mut m = issued(None);
    let list = parse_message(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
    m.observe(&Observation::Request {
        http: HttpId(1),
        method: Method::Post,
        session: None,
        last_event_id: None,
        messages: vec![list],
        v2026: true,
        mcp_headers: Vec::new(),
        principal: None,
    });
    m.observe(&naming(1, Content::Sse, "t"));
    m.observe(&event(
        1,
        None,
        1,
        Some(1),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
    ));
    // M1 for the session id on a 2026-07-28 answer; no I1.
    assert_eq!(ids(&m), ["M1"], "{:?}", m.violations());
}

#[test]
fn a_standalone_get_accepted_without_an_event_stream_is_r13() {
    let mut m = issued(None);
    m.observe(&get(1, None));
    m.observe(&head(1, 200, Content::Sse));
    m.observe(&get(2, None));
    m.observe(&head(2, 405, Content::None));
    assert_eq!(ids(&m), [] as [&str; 0]);
    m.observe(&get(3, None));
    m.observe(&head(3, 200, Content::Json));
    assert_eq!(ids(&m), ["R13"]);
}

#[test]
fn a_session_never_issued_or_deleted_must_be_answered_404_b6() {
    let of = |session: &str, http| Observation::Request {
        http: HttpId(http),
        method: Method::Get,
        session: Some(session.into()),
        last_event_id: None,
        messages: Vec::new(),
        v2026: false,
        mcp_headers: Vec::new(),
        principal: None,
    };
    let mut m = issued(None);
    m.observe(&of("unknown", 1));
    m.observe(&head(1, 404, Content::None));
    m.observe(&of("s", 2));
    m.observe(&head(2, 200, Content::Sse));
    assert_eq!(ids(&m), [] as [&str; 0]);
    m.observe(&of("unknown", 3));
    m.observe(&head(3, 200, Content::Sse));
    assert_eq!(ids(&m), ["B6"]);
    // Deleted: from then on only 404.
    m.observe(&Observation::Request {
        http: HttpId(4),
        method: Method::Delete,
        session: Some("s".into()),
        last_event_id: None,
        messages: Vec::new(),
        v2026: false,
        mcp_headers: Vec::new(),
        principal: None,
    });
    m.observe(&head(4, 200, Content::None));
    m.observe(&of("s", 5));
    m.observe(&head(5, 200, Content::Sse));
    assert_eq!(ids(&m), ["B6", "B6"]);
}

#[test]
fn a_json_body_must_follow_the_head_and_be_the_one_response_of_its_request() {
    let json = |http, body: &str| {
        Observation::Transmit(Transmit {
            http: HttpId(http),
            kind: TransmitKind::Json(parse_message(body).unwrap()),
        })
    };
    let ok = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    let mut m = issued(None);
    m.observe(&post(1));
    m.observe(&head(1, 200, Content::Json));
    m.observe(&json(1, ok));
    assert_eq!(ids(&m), [] as [&str; 0], "the response, once");
    m.observe(&json(1, ok));
    assert_eq!(ids(&m), ["A2"], "a second message in one body");
    let mut m = issued(None);
    m.observe(&post(1));
    m.observe(&head(1, 200, Content::Json));
    m.observe(&json(1, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#));
    assert_eq!(ids(&m), ["A2"], "another request's response");
    let mut m = issued(None);
    m.observe(&post(1));
    m.observe(&head(1, 200, Content::Json));
    m.observe(&json(
        1,
        r#"{"jsonrpc":"2.0","method":"notifications/message"}"#,
    ));
    assert_eq!(ids(&m), ["A2"], "not a response");
    // A refusal's error body is not judged as the response.
    let mut m = issued(None);
    m.observe(&post(1));
    m.observe(&head(1, 400, Content::Json));
    m.observe(&json(
        1,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#,
    ));
    assert_eq!(ids(&m), [] as [&str; 0]);
    let mut m = issued(None);
    m.observe(&post(1));
    m.observe(&json(1, ok));
    assert_eq!(ids(&m), ["A4"], "a body before the head");
    let mut m = issued(None);
    m.observe(&posted(
        1,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    ));
    m.observe(&head(1, 202, Content::None));
    m.observe(&json(1, ok));
    assert_eq!(ids(&m), ["A1"], "a 202 with a body");
}

/// An SSE event on `http` with event id `id` carrying message `key` of
/// session `s`, caused by request `cause` (`None`: unrelated).
fn event(http: u64, id: Option<&str>, key: u64, cause: Option<i64>, body: &str) -> Observation {
    Observation::Transmit(Transmit {
        http: HttpId(http),
        kind: TransmitKind::Event {
            id: id.map(str::to_owned),
            retry_ms: None,
            message: Some(std::sync::Arc::new(mcp_streamable::server::Outgoing {
                session: "s".parse().unwrap(),
                key: MsgKey(key),
                cause: cause.map_or(Cause::Unrelated, |r| {
                    Cause::Request(mcp_streamable::ids::RequestId::Num(r))
                }),
                message: parse_message(body).unwrap(),
            })),
        },
    })
}

const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;

#[test]
fn a_notification_of_another_request_on_a_requests_stream_is_a3_and_says_what() {
    let mut m = issued(None);
    m.observe(&post(1));
    m.observe(&head(1, 200, Content::Sse));
    m.observe(&event(1, None, 1, Some(1), PROGRESS));
    assert_eq!(ids(&m), [] as [&str; 0]);
    m.observe(&event(1, None, 2, Some(2), PROGRESS));
    assert_eq!(ids(&m), ["A3"]);
    assert!(m.violations()[0]
        .detail
        .starts_with("notifications/progress on the stream"));
    m.observe(&end(1, EndReason::Complete));
    m.observe(&Observation::Transmit(Transmit {
        http: HttpId(1),
        kind: TransmitKind::Comment,
    }));
    assert_eq!(
        m.violations()[1].detail,
        "\"comment\" written after the response ended"
    );
}

#[test]
fn a_resumption_that_replays_another_streams_event_is_b3() {
    let list = |http, id| {
        posted(
            http,
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#),
        )
    };
    let mut m = issued(None);
    m.observe(&list(1, 1));
    m.observe(&head(1, 200, Content::Sse));
    m.observe(&event(1, Some("a1"), 1, Some(1), PROGRESS));
    m.observe(&list(2, 2));
    m.observe(&head(2, 200, Content::Sse));
    m.observe(&event(2, Some("b1"), 2, Some(2), PROGRESS));
    m.observe(&Observation::Closed { http: HttpId(1) });
    m.observe(&get(3, Some("a1")));
    m.observe(&head(3, 200, Content::Sse));
    assert_eq!(ids(&m), [] as [&str; 0]);
    m.observe(&event(3, Some("b1"), 2, Some(2), PROGRESS));
    // (and A3: request 2's notification is not this stream's)
    assert_eq!(ids(&m).first(), Some(&"B3"), "{:?}", m.violations());
}

#[test]
fn writing_on_a_closed_connection_once_its_stream_was_resumed_elsewhere_is_b4() {
    // The resumption is open and accepted: B4. Refused, closed or ended: not.
    for (status, then, b4) in [
        (200, None, true),
        (404, None, false),
        (200, Some(Observation::Closed { http: HttpId(2) }), false),
        (200, Some(end(2, EndReason::Complete)), false),
    ] {
        let mut m = issued(None);
        m.observe(&post(1));
        m.observe(&head(1, 200, Content::Sse));
        m.observe(&event(1, Some("e1"), 1, Some(1), PROGRESS));
        m.observe(&Observation::Closed { http: HttpId(1) });
        m.observe(&get(2, Some("e1")));
        m.observe(&head(2, status, Content::Sse));
        if let Some(o) = &then {
            m.observe(o);
        }
        m.observe(&event(1, Some("e2"), 2, Some(1), PROGRESS));
        assert_eq!(
            ids(&m).contains(&"B4"),
            b4,
            "{status} {then:?}: {:?}",
            m.violations()
        );
    }
}

/// A priming event (an id, no message) on `http`.
fn priming(http: u64, id: &str) -> Observation {
    Observation::Transmit(Transmit {
        http: HttpId(http),
        kind: TransmitKind::Event {
            id: Some(id.to_owned()),
            retry_ms: Some(500),
            message: None,
        },
    })
}

#[test]
fn a_new_id_before_the_replay_on_a_resumed_connection_is_b7() {
    // e2 went out on a connection already dead; the client resumes from e1.
    // Priming (e3, new) then the replay of e2: a client that reads e3 and
    // loses the connection again resumes past e2 (B7). Replay then priming,
    // or a replay alone: not.
    for (priming_first, replays, b7) in [
        (true, true, true),
        (false, true, false),
        (true, false, false),
    ] {
        let mut m = issued(None);
        m.observe(&post(1));
        m.observe(&head(1, 200, Content::Sse));
        m.observe(&event(1, Some("e1"), 1, Some(1), PROGRESS));
        m.observe(&Observation::Closed { http: HttpId(1) });
        m.observe(&event(1, Some("e2"), 2, Some(1), PROGRESS));
        m.observe(&get(2, Some("e1")));
        m.observe(&head(2, 200, Content::Sse));
        if priming_first {
            m.observe(&priming(2, "e3"));
        }
        if replays {
            m.observe(&event(2, Some("e2"), 2, Some(1), PROGRESS));
        }
        if !priming_first {
            m.observe(&priming(2, "e3"));
        }
        assert_eq!(
            ids(&m).contains(&"B7"),
            b7,
            "priming first {priming_first}, replays {replays}: {:?}",
            m.violations()
        );
    }
}

const ELICIT: &str = r#"{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{}}"#;

#[test]
fn a_question_for_a_call_on_the_standalone_get_is_b8_on_the_calls_stream_not() {
    // Request 1 is a call on POST 1; GET 2 is the standalone stream. The
    // question for request 1 on the GET: B8; on the call's stream, or an
    // unrelated message on the GET: not.
    for (on_get, caused, b8) in [
        (true, true, true),
        (false, true, false),
        (true, false, false),
    ] {
        let mut m = issued(None);
        m.observe(&post(1));
        m.observe(&head(1, 200, Content::Sse));
        m.observe(&get(2, None));
        m.observe(&head(2, 200, Content::Sse));
        let http = if on_get { 2 } else { 1 };
        let cause = caused.then_some(1);
        m.observe(&event(http, Some("x1"), 1, cause, ELICIT));
        assert_eq!(
            ids(&m).contains(&"B8"),
            b8,
            "on the GET {on_get}, caused {caused}: {:?}",
            m.violations()
        );
    }
}

fn client_event(client: usize, event: mcp_streamable::client::ClientEvent) -> Observation {
    Observation::ClientEvent { client, event }
}

#[test]
fn a_question_the_application_was_asked_is_settled_one_it_never_heard_is_c2() {
    use mcp_streamable::client::{ClientEvent, ClientTransmit, ClientTransmitKind, Purpose};
    use mcp_streamable::ids::RequestId;
    let run = |asked: bool| {
        let mut m = Monitor::new();
        m.observe(&Observation::ClientTransmit {
            client: 0,
            transmit: ClientTransmit {
                http: HttpId(1),
                purpose: Purpose::Request(RequestId::Num(1)),
                kind: ClientTransmitKind::Send {
                    head: mcp_streamable::head::RequestHead::post(None, None),
                    body: Vec::new(),
                },
            },
        });
        m.observe(&Observation::ClientReceived {
            client: 0,
            http: HttpId(1),
            message: parse_message(
                r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            )
            .unwrap(),
        });
        m.observe(&Observation::ClientClosed {
            client: 0,
            http: HttpId(1),
        });
        if asked {
            let event = ClientEvent::InputRequired {
                id: RequestId::Num(1),
                requests: mcp_streamable::jsonrpc::RawJson::empty_object(),
                round: 1,
            };
            m.observe(&client_event(0, event));
        }
        m.finish(&[]);
        ids(&m)
    };
    assert_eq!(run(true), [] as [&str; 0]);
    assert_eq!(run(false), ["C2"]);
}

#[test]
fn a_session_its_client_lost_may_be_another_clients_without_i1() {
    use mcp_streamable::client::ClientEvent;
    let initialized = || ClientEvent::Initialized {
        id: mcp_streamable::ids::RequestId::Num(1),
        session_id: Some("x".parse().unwrap()),
        version: mcp_streamable::version::ProtocolVersion::V2025_06_18,
        result: mcp_streamable::jsonrpc::RawJson::empty_object(),
    };
    let run = |lost: bool| {
        let mut m = Monitor::new();
        m.observe(&client_event(0, initialized()));
        if lost {
            m.observe(&client_event(0, ClientEvent::SessionLost));
        }
        m.observe(&client_event(1, initialized()));
        ids(&m)
    };
    assert_eq!(run(true), [] as [&str; 0]);
    assert_eq!(run(false), ["I1"]);
}

#[test]
fn a_new_round_of_a_request_whose_caller_has_its_result_is_c3() {
    use mcp_streamable::client::{ClientEvent, ClientTransmit, ClientTransmitKind, Purpose};
    use mcp_streamable::ids::RequestId;
    let send = |http, purpose| Observation::ClientTransmit {
        client: 0,
        transmit: ClientTransmit {
            http: HttpId(http),
            purpose,
            kind: ClientTransmitKind::Send {
                head: mcp_streamable::head::RequestHead::post(None, None),
                body: Vec::new(),
            },
        },
    };
    let run = |returned: bool| {
        let mut m = Monitor::new();
        m.observe(&send(1, Purpose::Request(RequestId::Num(1))));
        if returned {
            let result = Ok(mcp_streamable::jsonrpc::RawJson::empty_object());
            let event = ClientEvent::Response {
                id: RequestId::Num(1),
                result,
            };
            m.observe(&client_event(0, event));
        }
        let round = Purpose::Round {
            handle: RequestId::Num(1),
            request: RequestId::Num(2),
        };
        m.observe(&send(2, round));
        ids(&m)
    };
    assert_eq!(run(false), [] as [&str; 0]);
    assert_eq!(run(true), ["C3"]);
}

#[test]
fn a_change_is_told_apart_by_its_method_and_for_a_resource_update_its_uri() {
    use super::listen::label;
    let uri = json!({"uri": "file:///a"});
    assert_eq!(
        label("notifications/resources/updated", Some(&uri)),
        "notifications/resources/updated file:///a"
    );
    assert_eq!(
        label("notifications/resources/updated", None),
        "notifications/resources/updated"
    );
    assert_eq!(
        label("notifications/tools/list_changed", Some(&uri)),
        "notifications/tools/list_changed"
    );
}

/// A request on session `s` by `who`, as exchange `http`.
fn by(who: Option<&str>, http: u64, method: Method, body: Option<&str>) -> Observation {
    Observation::Request {
        http: HttpId(http),
        method,
        session: Some("s".into()),
        last_event_id: None,
        messages: body
            .map(|b| vec![parse_message(b).unwrap()])
            .unwrap_or_default(),
        v2026: false,
        mcp_headers: Vec::new(),
        principal: who.map(mcp_streamable::principal::Principal::new),
    }
}

/// The server's head on `http`, naming `session`.
fn head_of(http: u64, status: u16, session: Option<&str>) -> Observation {
    let mut h = ResponseHead::new(status, Content::Json);
    h.session_id = session.map(|s| s.parse::<SessionId>().unwrap());
    Observation::Transmit(Transmit {
        http: HttpId(http),
        kind: TransmitKind::Head(h),
    })
}

/// Session `s` opened by alice on exchange 1.
fn opened_by_alice() -> Vec<Observation> {
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
    let mut o = by(Some("alice"), 1, Method::Post, Some(init));
    if let Observation::Request { session, .. } = &mut o {
        *session = None;
    }
    vec![o, head_of(1, 200, Some("s"))]
}

fn i2(m: &Monitor) -> Vec<String> {
    m.violations()
        .iter()
        .filter(|v| v.id == "I2")
        .map(|v| v.detail.clone())
        .collect()
}

#[test]
fn i2_flags_a_session_served_to_another_principal() {
    let call = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}"#;
    for (method, body, verb) in [
        (Method::Post, Some(call), "POST"),
        (Method::Get, None, "GET"),
        (Method::Delete, None, "DELETE"),
    ] {
        for who in [Some("bob"), None] {
            let mut obs = opened_by_alice();
            obs.push(by(who, 2, method.clone(), body));
            obs.push(head_of(2, 200, None));
            let found = i2(&fed(&obs));
            assert_eq!(found.len(), 1, "{verb} by {who:?}: {found:?}");
            assert!(found[0].starts_with(verb), "{found:?}");
        }
    }
}

#[test]
fn i2_holds_for_refusals_and_for_the_owner() {
    let mut obs = opened_by_alice();
    obs.push(by(Some("bob"), 2, Method::Get, None));
    obs.push(head_of(2, 404, None));
    obs.push(by(Some("alice"), 3, Method::Get, None));
    obs.push(head_of(3, 200, None));
    // A refusal of another kind (an rmcp-style 401) is no service either.
    obs.push(by(Some("bob"), 4, Method::Delete, None));
    obs.push(head_of(4, 401, None));
    assert!(i2(&fed(&obs)).is_empty());
    // Without an owner on record (the monitor missed the initialize) there
    // is nothing to judge against.
    let m = fed(&[by(Some("bob"), 2, Method::Get, None), head_of(2, 200, None)]);
    assert!(i2(&m).is_empty());
}

#[test]
fn i2_flags_a_session_lost_to_another_principals_delete() {
    let mut obs = opened_by_alice();
    obs.push(by(Some("bob"), 2, Method::Delete, None));
    obs.push(head_of(2, 404, None));
    obs.push(by(Some("alice"), 3, Method::Get, None));
    obs.push(head_of(3, 404, None));
    let found = i2(&fed(&obs));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("after another principal's DELETE"));
    // Her own DELETE first: her session is gone by her hand.
    let mut obs = opened_by_alice();
    obs.push(by(Some("bob"), 2, Method::Delete, None));
    obs.push(head_of(2, 404, None));
    obs.push(by(Some("alice"), 3, Method::Delete, None));
    obs.push(head_of(3, 200, None));
    obs.push(by(Some("alice"), 4, Method::Get, None));
    obs.push(head_of(4, 404, None));
    assert!(i2(&fed(&obs)).is_empty());
}

/// The core's account of a session's end says why it ended: by another
/// principal's DELETE is I2 whatever that DELETE was answered; ended for its
/// own reasons, before the stranger's DELETE or after it, the owner's 404
/// is that end's, not the stranger's doing.
#[test]
fn i2_judges_a_sessions_end_by_its_cause() {
    let ended = |deleted_by: Option<u64>| Observation::SessionEnded {
        session: "s".into(),
        deleted_by: deleted_by.map(HttpId),
    };
    let owner_told_gone = [
        by(Some("alice"), 3, Method::Get, None),
        head_of(3, 404, None),
    ];
    // Ended by the stranger's DELETE, though it was answered 404.
    let mut obs = opened_by_alice();
    obs.push(by(Some("bob"), 2, Method::Delete, None));
    obs.push(ended(Some(2)));
    obs.push(head_of(2, 404, None));
    let found = i2(&fed(&obs));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("ended by another principal's DELETE"),
        "{found:?}"
    );
    // Ended by its owner's DELETE: hers to end.
    let mut obs = opened_by_alice();
    obs.push(by(Some("alice"), 2, Method::Delete, None));
    obs.push(ended(Some(2)));
    obs.push(head_of(2, 200, None));
    obs.extend(owner_told_gone.clone());
    assert!(i2(&fed(&obs)).is_empty());
    // Ended by the server, then a stranger's DELETE, refused.
    let mut obs = opened_by_alice();
    obs.push(ended(None));
    obs.push(by(Some("bob"), 2, Method::Delete, None));
    obs.push(head_of(2, 404, None));
    obs.extend(owner_told_gone.clone());
    assert!(i2(&fed(&obs)).is_empty(), "ended before the DELETE");
    // A stranger's DELETE, refused, then the server ends the session.
    let mut obs = opened_by_alice();
    obs.push(by(Some("bob"), 2, Method::Delete, None));
    obs.push(head_of(2, 404, None));
    obs.push(ended(None));
    obs.extend(owner_told_gone);
    assert!(i2(&fed(&obs)).is_empty(), "ended after the DELETE");
}

#[test]
fn a_request_stream_closed_for_polling_before_any_event_id_is_b9() {
    // POST 1 carries request 1 on an SSE stream the server closes for
    // polling. Without an id on the wire first the client cannot resume:
    // B9. After a priming event, after a message with an id, or once the
    // request is answered: not.
    const ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    for (before, b9) in [
        (None, true),
        (Some("priming"), false),
        (Some("progress"), false),
        (Some("unnumbered progress"), true),
        (Some("answer"), false),
    ] {
        let mut m = issued(None);
        m.observe(&post(1));
        m.observe(&head(1, 200, Content::Sse));
        match before {
            Some("priming") => m.observe(&priming(1, "p1")),
            Some("progress") => m.observe(&event(1, Some("p1"), 1, Some(1), PROGRESS)),
            Some("unnumbered progress") => m.observe(&event(1, None, 1, Some(1), PROGRESS)),
            Some("answer") => m.observe(&event(1, None, 1, Some(1), ANSWER)),
            _ => {}
        }
        m.observe(&end(1, EndReason::Polling));
        assert_eq!(
            ids(&m).contains(&"B9"),
            b9,
            "{before:?} first: {:?}",
            m.violations()
        );
    }
}

/// A 2026-07-28 POST of `body` with these `Mcp-*` headers, as exchange `http`.
fn v2026_post(http: u64, body: &str, mcp: &[(&str, &str)]) -> Observation {
    Observation::Request {
        http: HttpId(http),
        method: Method::Post,
        session: None,
        last_event_id: None,
        messages: vec![parse_message(body).unwrap()],
        v2026: true,
        mcp_headers: mcp
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), (*v).to_owned()))
            .collect(),
        principal: None,
    }
}

/// M5's breaches, server side: a request whose `Mcp-Method`, `Mcp-Name`
/// or a listed tool's `Mcp-Param-*` disagrees with its body, or that
/// repeats an `Mcp-*` header, served; and its non-breaches: the same
/// refused (400), agreeing headers served.
#[test]
fn a_request_served_whose_headers_disagree_with_its_body_is_m5() {
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu"}}}"#;
    let listing = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}}"#;
    let agreeing = [
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "t"),
        ("Mcp-Param-Region", "eu"),
    ];
    let cases: [(&str, &[(&str, &str)]); 5] = [
        (
            "the method",
            &[
                ("Mcp-Method", "tools/list"),
                ("Mcp-Name", "t"),
                ("Mcp-Param-Region", "eu"),
            ],
        ),
        (
            "the name",
            &[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "u"),
                ("Mcp-Param-Region", "eu"),
            ],
        ),
        (
            "a parameter",
            &[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "t"),
                ("Mcp-Param-Region", "us"),
            ],
        ),
        (
            "a parameter missing",
            &[("Mcp-Method", "tools/call"), ("Mcp-Name", "t")],
        ),
        (
            "a repeat",
            &[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "t"),
                ("Mcp-Param-Region", "eu"),
                ("mcp-param-region", "us"),
            ],
        ),
    ];
    for (what, headers) in cases {
        for (status, breach) in [(200, true), (400, false)] {
            let mut m = Monitor::new();
            m.observe(&v2026_post(
                1,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                &[("Mcp-Method", "tools/list")],
            ));
            m.observe(&head(1, 200, Content::Json));
            m.observe(&Observation::Transmit(Transmit {
                http: HttpId(1),
                kind: TransmitKind::Json(parse_message(listing).unwrap()),
            }));
            m.observe(&v2026_post(2, call, headers));
            m.observe(&head(2, status, Content::Json));
            let expect: &[&str] = if breach { &["M5"] } else { &[] };
            assert_eq!(ids(&m), expect, "{what}, {status}: {:?}", m.violations());
        }
    }
    // Agreeing headers, served: nothing.
    let mut m = Monitor::new();
    m.observe(&Observation::Transmit(Transmit {
        http: HttpId(1),
        kind: TransmitKind::Json(parse_message(listing).unwrap()),
    }));
    m.observe(&v2026_post(2, call, &agreeing));
    m.observe(&head(2, 200, Content::Json));
    assert_eq!(ids(&m), [] as [&str; 0]);
    // A tool never seen listed is judged on the standard headers alone.
    let mut m = Monitor::new();
    m.observe(&v2026_post(2, call, &agreeing[..2]));
    m.observe(&head(2, 200, Content::Json));
    assert_eq!(ids(&m), [] as [&str; 0]);
}

/// M5's breach, client side: a client sends a 2026-07-28 request whose headers
/// disagree with its body (after a listing it read declared the tool's
/// custom header); the same request with agreeing headers is no breach.
#[test]
fn a_client_that_sends_headers_disagreeing_with_its_body_is_m5() {
    use mcp_streamable::client::{ClientTransmit, ClientTransmitKind, Purpose};
    use mcp_streamable::head::RequestHead;
    use mcp_streamable::version::ProtocolVersion;
    let listing = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}}}]}}"#;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"n":7}}}"#;
    let send = |n: Option<&str>| {
        let mut head = RequestHead::post(None, Some(ProtocolVersion::LATEST_V2026))
            .with("Mcp-Method", "tools/call")
            .with("Mcp-Name", "t");
        if let Some(n) = n {
            head = head.with("Mcp-Param-N", n);
        }
        Observation::ClientTransmit {
            client: 0,
            transmit: ClientTransmit {
                http: HttpId(2),
                purpose: Purpose::Request(mcp_streamable::ids::RequestId::Num(2)),
                kind: ClientTransmitKind::Send {
                    head,
                    body: call.as_bytes().to_vec(),
                },
            },
        }
    };
    for (n, expect) in [
        (Some("7"), &[] as &[&str]),
        (Some("8"), &["M5"]),
        (None, &["M5"]),
    ] {
        let mut m = Monitor::new();
        m.observe(&Observation::ClientReceived {
            client: 0,
            http: HttpId(1),
            message: parse_message(listing).unwrap(),
        });
        m.observe(&send(n));
        // (The listing answers a request this monitor never saw sent: I1,
        // not this test's.)
        let m5: Vec<&str> = ids(&m).into_iter().filter(|id| *id == "M5").collect();
        assert_eq!(m5, expect, "{n:?}: {:?}", m.violations());
    }
}

/// B10's breach: an unrelated message dropped when sent, with no
/// standalone GET open yet and none refused; not a breach once the
/// session's client was refused a GET (405: nothing will take it), nor for
/// any other reason a message is dropped.
#[test]
fn an_unrelated_message_dropped_before_the_get_could_open_is_b10() {
    use mcp_streamable::server::DropReason;
    let dropped = |reason| Observation::Dropped {
        session: "s".into(),
        key: MsgKey(1),
        reason,
    };
    let unrelated = || sent(Cause::Unrelated);
    let mut m = issued(None);
    m.observe(&unrelated());
    m.observe(&dropped(DropReason::Unheld));
    assert_eq!(ids(&m), ["B10"]);
    let mut m = issued(None);
    for o in [
        get(1, None),
        head(1, 405, Content::None),
        unrelated(),
        dropped(DropReason::Unheld),
    ] {
        m.observe(&o);
    }
    assert_eq!(ids(&m), [] as [&str; 0], "the client was refused a GET");
    for reason in [
        DropReason::NoStream,
        DropReason::HeldFull,
        DropReason::BeforeInitialized,
    ] {
        let mut m = issued(None);
        m.observe(&unrelated());
        m.observe(&dropped(reason));
        assert!(!ids(&m).contains(&"B10"), "{reason:?}");
    }
}

/// I1 without sessions: two 2026-07-28 requests under one id on exchanges
/// 1 and 2; the application answers the one of exchange 1. Written on
/// exchange 1 it holds; on exchange 2 (the other caller's) it is I1, as
/// JSON and as an event alike. An answer whose origin the harness does not
/// name is not judged so.
#[test]
fn an_answer_written_on_another_callers_exchange_under_the_same_id_is_i1() {
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}"#;
    let ok = parse_message(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#).unwrap();
    let answered = |origin: Option<u64>| Observation::Sent {
        session: "shared".into(),
        key: MsgKey(9),
        cause: Cause::Request(mcp_streamable::ids::RequestId::Num(2)),
        origin: origin.map(HttpId),
    };
    let run = |origin: Option<u64>, on: u64, sse: bool| {
        let mut m = Monitor::new();
        m.observe(&v2026_post(1, call, &[]));
        m.observe(&v2026_post(2, call, &[]));
        let content = if sse { Content::Sse } else { Content::Json };
        m.observe(&head(on, 200, content));
        m.observe(&answered(origin));
        let kind = if sse {
            TransmitKind::Event {
                id: None,
                message: Some(std::sync::Arc::new(mcp_streamable::server::Outgoing {
                    key: MsgKey(9),
                    session: SessionId::from_bits(3),
                    message: ok.clone(),
                    cause: Cause::Request(mcp_streamable::ids::RequestId::Num(2)),
                })),
                retry_ms: None,
            }
        } else {
            TransmitKind::Json(ok.clone())
        };
        m.observe(&Observation::Transmit(Transmit {
            http: HttpId(on),
            kind,
        }));
        ids(&m)
    };
    for sse in [false, true] {
        assert_eq!(run(Some(1), 1, sse), [] as [&str; 0], "its own exchange");
        assert_eq!(run(Some(1), 2, sse), ["I1"], "the other caller's exchange");
        assert_eq!(run(None, 2, sse), [] as [&str; 0], "no origin named");
    }
}
