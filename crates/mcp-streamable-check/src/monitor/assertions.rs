//! One function per property the monitor judges from what a server writes:
//! each reads the facts the hub keeps (an exchange, its lineage, what an
//! event id names) and says whether its property broke, and how. The hub
//! (`monitor/mod.rs`) keeps the records and decides when each is asked;
//! nothing here changes a record. Properties judged where their records
//! are kept stay with them: the client side (`monitor/client.rs`), listens
//! (`monitor/listen.rs`), headers (`monitor/headers.rs`).

use super::{describe, Exchange, Flag, Kind, Lineage};
use mcp_streamable::ids::{HttpId, MsgKey, RequestId};
use mcp_streamable::jsonrpc::Message;
use mcp_streamable::server::{Cause, Content};

/// A part of a response, in the order the wire shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Head(u16),
    Json,
    Event,
    Comment,
    End,
}

fn accepted(status: u16) -> bool {
    (200..300).contains(&status)
}

fn ok_status(ex: &Exchange) -> bool {
    ex.status.is_some_and(accepted)
}

/// L4, every stream ends: whether exchange `ex`, at the end of a run, is
/// held open for nothing: neither side ended it, it is not a listen (whose
/// stream lives as long as the client listens), and every request of its
/// stream (`lineage`: the POST's, for a resumption too) is over, answered
/// on it or `cancelled` by the client. The server keeps a writer and the
/// client a connection for a stream that has nothing left to carry.
pub(super) fn l4_held_for_nothing(
    ex: &Exchange,
    lineage: &Lineage,
    cancelled: impl Fn(&RequestId) -> bool,
) -> bool {
    !ex.ended
        && !ex.closed
        && ex.listen.is_none()
        && matches!(ex.kind, Kind::PostRequests(_) | Kind::GetResume(_))
        && !lineage.requests.is_empty()
        && lineage
            .requests
            .iter()
            .all(|r| lineage.answered.contains(r) || cancelled(r))
}

/// L4 over a finished run (or a retired client's finished part): the
/// exchanges [`l4_held_for_nothing`] holds, named.
pub(super) fn l4_streams_held_open(held: &[HttpId]) -> Option<Flag> {
    (!held.is_empty()).then(|| {
        Flag::new(
            "L4",
            held.first().copied(),
            format!(
                "nothing more can happen, and exchanges {held:?} are open at both ends with every request they carried over"
            ),
        )
    })
}

/// A4, one response per exchange: one head, first; nothing after the end.
pub(super) fn a4_response_in_order(http: HttpId, ex: &Exchange, part: Part) -> Option<Flag> {
    let detail = match part {
        _ if ex.ended && part != Part::End => {
            let what = match part {
                Part::Head(_) => "head",
                Part::Json => "JSON body",
                Part::Event => "SSE event",
                Part::Comment => "comment",
                Part::End => "end",
            };
            format!("{what:?} written after the response ended")
        }
        Part::Head(status) if ex.status.is_some() => {
            format!("second head ({status}) on one response")
        }
        Part::Json if ex.status.is_none() => "body before the head".into(),
        Part::Event if ex.status.is_none() => "SSE event before the head".into(),
        Part::Comment if ex.status.is_none() => "comment before the head".into(),
        Part::End if ex.status.is_none() => "response ended without a head".into(),
        _ => return None,
    };
    Some(Flag::new("A4", Some(http), detail))
}

/// A1, a POST of notifications and responses only is answered `202` with
/// no body: not another success status, no JSON, no event stream.
pub(super) fn a1_accepted_without_a_body(http: HttpId, ex: &Exchange, part: Part) -> Option<Flag> {
    if !matches!(ex.kind, Kind::PostAccepted) {
        return None;
    }
    let detail = match part {
        Part::Head(status) if accepted(status) && status != 202 => {
            format!("notification/response POST answered {status}, not 202")
        }
        Part::Json if ok_status(ex) => "202 response with a body".into(),
        Part::Event if ok_status(ex) => "notification/response POST carries SSE events".into(),
        _ => return None,
    };
    Some(Flag::new("A1", Some(http), detail))
}

/// A2, a JSON answer is the response to the request it answers, alone.
pub(super) fn a2_json_is_the_response(http: HttpId, ex: &Exchange, m: &Message) -> Option<Flag> {
    let ids = match &ex.kind {
        Kind::Initialize(id) => vec![id.clone()],
        Kind::PostRequests(ids) => ids.clone(),
        _ => return None,
    };
    if !ok_status(ex) {
        return None;
    }
    let detail = if ex.json_bodies >= 1 {
        "second JSON message in one application/json body".into()
    } else if !m.is_response() || !m.id().is_some_and(|id| ids.contains(id)) {
        format!("JSON body is not the response to {ids:?}: {}", m.to_json())
    } else {
        return None;
    };
    Some(Flag::new("A2", Some(http), detail))
}

/// M1, the 2026-07-28 era keeps no session state on the wire: no
/// `Mcp-Session-Id` on an answer, no event id on a stream.
pub(super) fn m1_no_session_state(
    http: HttpId,
    ex: &Exchange,
    session_id: Option<&str>,
    event_id: Option<&str>,
) -> Option<Flag> {
    if !ex.v2026 {
        return None;
    }
    let detail = match (session_id, event_id) {
        (Some(sid), _) => format!("2026-07-28 answer carries Mcp-Session-Id {sid:?}"),
        (None, Some(id)) => {
            format!("2026-07-28 stream event carries id {id:?}: nothing is resumable")
        }
        (None, None) => return None,
    };
    Some(Flag::new("M1", Some(http), detail))
}

/// R21, a session id is visible ASCII, never empty.
pub(super) fn r21_session_id_visible(http: HttpId, sid: &str) -> Option<Flag> {
    let visible = !sid.is_empty() && sid.bytes().all(|b| (0x21..=0x7e).contains(&b));
    (!visible).then(|| {
        Flag::new(
            "R21",
            Some(http),
            format!("session id {sid:?} is not visible ASCII"),
        )
    })
}

/// R13, a standalone GET that is accepted is an event stream.
pub(super) fn r13_standalone_get_is_a_stream(
    http: HttpId,
    ex: &Exchange,
    status: u16,
    content: Content,
) -> Option<Flag> {
    let wrong = matches!(ex.kind, Kind::GetPlain) && accepted(status) && content != Content::Sse;
    wrong.then(|| {
        Flag::new(
            "R13",
            Some(http),
            format!("standalone GET answered {status} without text/event-stream"),
        )
    })
}

/// I1, sessions are isolated: a session id is issued to one `initialize`.
pub(super) fn i1_session_issued_once(http: HttpId, sid: &str, fresh: bool) -> Option<Flag> {
    (!fresh).then(|| {
        Flag::new(
            "I1",
            Some(http),
            format!("session id {sid:?} issued to a second initialize"),
        )
    })
}

/// I1, sessions are isolated: a message of one session is never written
/// on another session's stream.
pub(super) fn i1_own_sessions_message(
    http: HttpId,
    ex: &Exchange,
    of: &str,
    message: &Message,
) -> Option<Flag> {
    let other = ex.session.as_deref().is_some_and(|s| s != of);
    other.then(|| {
        Flag::new(
            "I1",
            Some(http),
            format!(
                "{} of another session written on this session's stream",
                describe(message)
            ),
        )
    })
}

/// B1, a GET never ends another live stream of its session.
pub(super) fn b1_no_stream_replaced(http: HttpId, ex: &Exchange, replaced: bool) -> Option<Flag> {
    (replaced && !ex.closed).then(|| {
        Flag::new(
            "B1",
            Some(http),
            "a GET ended another live stream of the session".into(),
        )
    })
}

/// B4, a message goes where the client reads it: not on a dead connection
/// whose stream the client resumed elsewhere.
pub(super) fn b4_not_on_a_superseded_connection(
    http: HttpId,
    ex: &Exchange,
    superseded: bool,
) -> Option<Flag> {
    (ex.closed && superseded).then(|| {
        Flag::new(
            "B4",
            Some(http),
            "message written to a dead connection although the client resumed its stream elsewhere"
                .into(),
        )
    })
}

/// What an event id written again is, against what it first named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Rewrite<'a> {
    /// It named another message.
    OtherMessage,
    /// On a stream that resumed nothing.
    NotResumed,
    /// Replayed by a resumption from `last`, of another stream.
    OtherStream { last: &'a str },
    /// Replayed by a resumption from `last`, not strictly after it.
    NotAfter { last: &'a str },
    /// Replayed by a resumption from `last`, which names nothing known.
    UnknownCursor { last: &'a str },
    /// Replayed in order, after an id new to its stream on this connection.
    AfterNewId,
    /// Replayed in order.
    Replay,
}

impl Rewrite<'_> {
    /// Whether the write is a legal replay (judged when first written).
    pub(super) fn replays(&self) -> bool {
        matches!(self, Rewrite::Replay | Rewrite::AfterNewId)
    }
}

/// R32, an event id names one message.
pub(super) fn r32_event_id_names_one_message(
    http: HttpId,
    id: &str,
    r: &Rewrite<'_>,
) -> Option<Flag> {
    (*r == Rewrite::OtherMessage).then(|| {
        Flag::new(
            "R32",
            Some(http),
            format!("event id {id:?} reused for a different message"),
        )
    })
}

/// B2, an event is written again only by a resumption from before it.
pub(super) fn b2_replayed_after_the_cursor(
    http: HttpId,
    id: &str,
    r: &Rewrite<'_>,
) -> Option<Flag> {
    let detail = match r {
        Rewrite::NotResumed => {
            format!("event {id:?} written again on a stream that resumed nothing")
        }
        Rewrite::NotAfter { last } => {
            format!("resuming from {last:?} re-sent {id:?}, not strictly after it")
        }
        _ => return None,
    };
    Some(Flag::new("B2", Some(http), detail))
}

/// B3, a resumption replays only the stream its cursor names.
pub(super) fn b3_replayed_from_its_stream(http: HttpId, id: &str, r: &Rewrite<'_>) -> Option<Flag> {
    let detail = match r {
        Rewrite::OtherStream { last } => {
            format!("resuming from {last:?} replayed {id:?} of another stream")
        }
        Rewrite::UnknownCursor { last } => {
            format!("resuming from unknown {last:?} replayed {id:?}")
        }
        _ => return None,
    };
    Some(Flag::new("B3", Some(http), detail))
}

/// B7, on one connection the replay comes before anything new.
pub(super) fn b7_replay_before_new(http: HttpId, id: &str, r: &Rewrite<'_>) -> Option<Flag> {
    (*r == Rewrite::AfterNewId).then(|| {
        Flag::new(
            "B7",
            Some(http),
            format!("replayed {id:?} after an id new to its stream on the same connection"),
        )
    })
}

/// C1, a response goes on its own request's stream.
pub(super) fn c1_response_on_its_stream(
    http: HttpId,
    lineage: &Lineage,
    rid: &RequestId,
) -> Option<Flag> {
    (!lineage.requests.contains(rid)).then(|| {
        Flag::new(
            "C1",
            Some(http),
            format!("response to {rid} on a stream that is not its request's"),
        )
    })
}

/// A3, a request's stream carries only what its requests caused, and
/// nothing once they are all answered (or cancelled).
pub(super) fn a3_caused_by_the_streams_requests(
    http: HttpId,
    lineage: &Lineage,
    all_answered: bool,
    message: &Message,
    cause: Option<&Cause>,
) -> Option<Flag> {
    let requests = &lineage.requests;
    if requests.is_empty() {
        return None; // standalone stream: unrelated messages belong here
    }
    let detail = if all_answered {
        format!("{} after the stream's last response", describe(message))
    } else {
        match cause {
            Some(Cause::Request(r)) if requests.contains(r) => return None,
            Some(_) => format!(
                "{} on the stream of {requests:?} is not caused by it",
                describe(message)
            ),
            None => return None,
        }
    };
    Some(Flag::new("A3", Some(http), detail))
}

/// B5, with no fault, a session opens at most `max` GETs.
pub(super) fn b5_gets_bounded(http: HttpId, n: usize, max: Option<usize>) -> Option<Flag> {
    let max = max.filter(|m| n > *m)?;
    Some(Flag::new(
        "B5",
        Some(http),
        format!("{n} GETs on one session with no fault (bound {max})"),
    ))
}

/// A5, an unrelated message is written on one stream only (a second
/// stream's copy is one the client may read twice or, cut, never).
pub(super) fn a5_written_on_one_stream(
    http: HttpId,
    k: MsgKey,
    streams: usize,
    unrelated: bool,
) -> Option<Flag> {
    (streams > 1 && unrelated).then(|| {
        Flag::new(
            "A5",
            Some(http),
            format!("{k} written on two different streams"),
        )
    })
}

/// A5 at the end of a run, an unrelated message is not lost: written on a
/// live connection, or on a stream whose resumption brought it.
pub(super) fn a5_not_lost(k: MsgKey, written: bool, on_a_resumed_stream: bool) -> Option<Flag> {
    let detail = if !written {
        format!("{k} was dequeued and lost: never written, never dropped by policy")
    } else if on_a_resumed_stream {
        format!("{k} was written on a stream the client resumed, yet never delivered")
    } else {
        return None;
    };
    Some(Flag::new("A5", None, detail))
}

/// B4 at the end of a run, nothing unrelated stays queued while its
/// session has a standalone GET open.
pub(super) fn b4_not_held_beside_a_get(k: MsgKey, get_open: bool) -> Option<Flag> {
    get_open.then(|| {
        Flag::new(
            "B4",
            None,
            format!("{k} still queued while a standalone GET is open"),
        )
    })
}
