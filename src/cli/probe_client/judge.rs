//! From what reached the server and how the client's command ended, the
//! scenario's verdict.

use super::front::{Record, Seen, StreamEnd};
use super::scenario::{Expect, Fault, Scenario};
use serde::Serialize;

/// How the client's command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code (`None`: killed by a signal of its own).
    Exited(Option<i32>),
    /// It was still running at the bound and was killed.
    TimedOut,
}

/// A scenario's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The client did what a correct client does.
    Holds,
    /// It did something a correct client does not.
    Violates,
    /// It was still waiting at the bound, with no traffic at the end.
    Hangs,
    /// It was still sending requests at the bound without progress.
    Loops,
    /// The scenario does not apply to it (it never took the path).
    NotApplicable,
}

impl Verdict {
    /// A finding: what a correct client never shows.
    pub fn is_finding(self) -> bool {
        matches!(self, Self::Violates | Self::Hangs | Self::Loops)
    }

    /// Its word in reports.
    pub fn word(self) -> &'static str {
        match self {
            Self::Holds => "holds",
            Self::Violates => "violates",
            Self::Hangs => "hangs",
            Self::Loops => "loops",
            Self::NotApplicable => "n/a",
        }
    }
}

/// Requests within the last part of the bound that make a timed-out client
/// a looping one rather than a hanging one.
pub const LOOP_REQUESTS_MIN: usize = 3;

/// A verdict and the evidence for it.
pub fn judge(s: &Scenario, rec: &Record, ending: &Ending, bound_ms: u64) -> (Verdict, String) {
    let listened = rec
        .seen
        .iter()
        .any(|r| r.method == "GET" && r.last_event_id.is_none());
    if s.expect == Expect::CompletesOnGet && !listened {
        return (
            Verdict::NotApplicable,
            "the client opens no standalone GET, so the response sent there waits for one".into(),
        );
    }
    if s.expect == Expect::AnswersOnGet && !listened {
        return (
            Verdict::NotApplicable,
            "the client opens no standalone GET, so the question sent there cannot reach it (the server's fault, B8)".into(),
        );
    }
    if s.listen && !rec.seen.iter().any(|r| r.calls("subscriptions/listen")) {
        return (
            Verdict::NotApplicable,
            "the client never sent subscriptions/listen (a session-era client hears list changes on its GET)".into(),
        );
    }
    let code = match ending {
        Ending::Exited(code) => code,
        Ending::TimedOut => {
            return match lost_resumption(s, rec).or_else(|| lost_change(s, rec)) {
                Some(lost) => (
                    Verdict::Violates,
                    format!("{lost}; still waiting at {bound_ms} ms, killed"),
                ),
                None => stuck(rec, bound_ms),
            }
        }
    };
    let ok = *code == Some(0);
    let exit = match code {
        Some(c) => format!("exit {c}"),
        None => "killed by a signal".into(),
    };
    let resumes: Vec<_> = rec.seen.iter().filter(|r| r.is_resume()).collect();
    if s.session_era && !rec.seen.iter().any(|r| r.calls("initialize")) {
        return (
            Verdict::NotApplicable,
            format!("the client made no session (2026-07-28 has none of this) ({exit})"),
        );
    }
    if s.fault.is_scripted() && !rec.seen.iter().any(|r| r.faulted) {
        return (
            Verdict::NotApplicable,
            format!("the client never took the path the fault is on ({exit})"),
        );
    }
    if let Some(few) = calls_apart(s, rec) {
        return (Verdict::NotApplicable, format!("{few} ({exit})"));
    }
    match s.expect {
        Expect::Completes | Expect::CompletesOnGet if ok => {
            (Verdict::Holds, "the call succeeded".into())
        }
        Expect::Completes | Expect::CompletesOnGet => {
            (Verdict::Violates, format!("the call failed ({exit})"))
        }
        Expect::Ends => (
            Verdict::Holds,
            format!(
                "the call ended ({exit}) after {} request(s), {} resumption(s)",
                rec.seen.len(),
                resumes.len()
            ),
        ),
        Expect::Answers | Expect::AnswersOnGet | Expect::AnswersIdZero => {
            let answers: Vec<&str> = rec
                .seen
                .iter()
                .flat_map(|r| &r.rpc)
                .filter_map(|m| match m {
                    super::front::Rpc::Answer { id } => Some(id.as_str()),
                    _ => None,
                })
                .collect();
            if s.expect == Expect::AnswersIdZero && !answers.is_empty() && !answers.contains(&"0") {
                return (
                    Verdict::Violates,
                    format!(
                        "answered the server's request 0 as {} ({exit})",
                        answers.join(", ")
                    ),
                );
            }
            let answered = !answers.is_empty();
            match (answered, ok) {
                (true, true) => (
                    Verdict::Holds,
                    format!(
                        "answered the server's request {}; the call succeeded",
                        answers.join(", ")
                    ),
                ),
                (false, _) => (
                    Verdict::Violates,
                    format!("never answered the server's request ({exit})"),
                ),
                (true, false) => (
                    Verdict::Violates,
                    format!("answered the server's request but the call failed ({exit})"),
                ),
            }
        }
        Expect::DropsWithdrawn => withdrawn(rec, ok, &exit),
        Expect::ReleasesGivenUp => released(s, rec, &exit),
        Expect::ResumesAgain => {
            let Some(at) = rec.seen.iter().position(|r| r.faulted && r.is_resume()) else {
                return (
                    Verdict::NotApplicable,
                    format!("the client never resumed ({exit})"),
                );
            };
            let first = rec.seen[at].last_event_id.clone().unwrap_or_default();
            let later: Vec<_> = rec.seen[at + 1..]
                .iter()
                .filter(|r| r.is_resume())
                .filter_map(|r| r.last_event_id.as_deref())
                .collect();
            match (later.contains(&first.as_str()), ok) {
                (true, true) => (
                    Verdict::Holds,
                    format!("resumed again from {first} and the call succeeded"),
                ),
                (true, false) => (
                    Verdict::Violates,
                    format!("resumed again from {first} but the call failed ({exit})"),
                ),
                (false, _) if later.is_empty() => (
                    Verdict::Violates,
                    format!("never resumed again after an empty resumption from {first} ({exit})"),
                ),
                (false, _) => (
                    Verdict::Violates,
                    format!(
                        "after an empty resumption from {first}, resumed only from {} ({exit})",
                        later.join(", ")
                    ),
                ),
            }
        }
        Expect::FallsBack => {
            let Some(asked) = rec.seen.iter().position(|r| r.calls("server/discover")) else {
                return (
                    Verdict::NotApplicable,
                    format!("the client never sent server/discover ({exit})"),
                );
            };
            let fell_back = rec.seen[asked..].iter().any(|r| r.calls("initialize"));
            let refused = match s.fault {
                Fault::DiscoverRefused { status, .. } => status,
                _ => 0,
            };
            match (fell_back, ok) {
                (true, true) => (
                    Verdict::Holds,
                    format!("fell back to initialize after {refused}; the call succeeded"),
                ),
                (true, false) => (
                    Verdict::Violates,
                    format!("fell back to initialize after {refused} but the call failed ({exit})"),
                ),
                (false, _) => (
                    Verdict::Violates,
                    format!("gave up on a server/discover refused {refused} without trying initialize ({exit})"),
                ),
            }
        }
        Expect::Relists => match (lost_change(s, rec), ok) {
            (None, true) => (
                Verdict::Holds,
                "after its listen was cut with a change in flight, it listened again and listed again".into(),
            ),
            (None, false) => (
                Verdict::Violates,
                format!("listened and listed again after the cut, but failed ({exit})"),
            ),
            (Some(lost), _) => (Verdict::Violates, format!("{lost} ({exit})")),
        },
    }
}

/// How long after its own deadline a client may take to close the streams
/// of a call it gave up (its POST, a resumption): the cancellation's own
/// round trip, with room for a slow machine.
pub const RELEASE_GRACE_MS: u64 = 1000;

/// A stream closed this close to the client's end closed with it.
const EXIT_CLOSE_MS: u64 = 200;

/// A call given up by the client (`MCP_PROBE_GIVE_UP_MS` after it was
/// sent) whose streams the server never ends: the client must close each of
/// them itself soon after (its POST, a resumption it had open) and resume
/// none later, not read or poll for as long as it lives (C3; both ends
/// holding a stream break L4). A call whose every stream the server had
/// ended before the deadline (answered, or the client stopped polling on
/// its own) did not test the client.
fn released(s: &Scenario, rec: &Record, exit: &str) -> (Verdict, String) {
    let Some(call) = rec
        .seen
        .iter()
        .find(|r| r.method == "POST" && r.calls("tools/call"))
    else {
        return (
            Verdict::NotApplicable,
            format!("the client never called ({exit})"),
        );
    };
    let deadline = call.at_ms + s.give_up_ms;
    let cancelled = rec
        .seen
        .iter()
        .find(|r| r.calls("notifications/cancelled"))
        .map_or("sent no notifications/cancelled".to_owned(), |r| {
            format!("cancelled it at {} ms", r.at_ms)
        });
    let of_the_call: Vec<&Seen> = rec.seen.iter().filter(|r| r.of_the_call).collect();
    // When each of the call's exchanges ended; one still open when the
    // record was taken closed with the client.
    let ended = |r: &Seen| {
        r.end
            .or(rec.client_ended_ms.map(|at| (StreamEnd::Closed, at)))
    };
    let open_at_deadline = of_the_call
        .iter()
        .any(|r| !matches!(ended(r), Some((StreamEnd::Ended, at)) if at <= deadline));
    if !open_at_deadline {
        return (
            Verdict::NotApplicable,
            format!("the server had ended every stream of the call by the client's deadline at {deadline} ms ({exit})"),
        );
    }
    let what = |r: &Seen| match r.method.as_str() {
        "POST" => "its POST".to_owned(),
        _ => format!("its stream's resumption (GET at {} ms)", r.at_ms),
    };
    let late = deadline + RELEASE_GRACE_MS;
    if let Some(r) = of_the_call.iter().find(|r| r.at_ms > late) {
        return (
            Verdict::Violates,
            format!(
                "gave the call up at {deadline} ms ({cancelled}) and resumed its stream at {} ms (C3) ({exit})",
                r.at_ms
            ),
        );
    }
    let held = of_the_call
        .iter()
        .map(|r| (*r, ended(r)))
        .max_by_key(|(_, end)| end.map_or(u64::MAX, |(_, at)| at));
    match held {
        Some((r, Some((_, at)))) if at > late => (
            Verdict::Violates,
            format!(
                "gave the call up at {deadline} ms ({cancelled}) and kept reading {} for {} ms more, until {} (C3, L4) ({exit})",
                what(r),
                at - deadline,
                match rec.client_ended_ms {
                    Some(exited) if at + EXIT_CLOSE_MS >= exited => "it exited",
                    _ => "it closed it",
                }
            ),
        ),
        Some((r, None)) => (
            Verdict::Violates,
            format!(
                "gave the call up at {deadline} ms ({cancelled}) and never closed {} (C3, L4) ({exit})",
                what(r)
            ),
        ),
        _ => {
            let (r, end) = held.unwrap_or((call, call.end));
            let (how, at) = end.unwrap_or((StreamEnd::Closed, deadline));
            (
                Verdict::Holds,
                format!(
                    "gave the call up at {deadline} ms ({cancelled}); {} {} {} ms later ({exit})",
                    what(r),
                    match how {
                        StreamEnd::Closed => "closed",
                        StreamEnd::Ended => "ended by the server",
                    },
                    at.saturating_sub(deadline)
                ),
            )
        }
    }
}

/// In a scenario that cuts a listen before a change, how the client lost
/// the change: it never listened again, or listened again and never listed
/// (M4: only a fresh list recovers a change sent while no stream was open).
fn lost_change(s: &Scenario, rec: &Record) -> Option<String> {
    if s.expect != Expect::Relists {
        return None;
    }
    let after = &rec.seen[rec.cut_after?.min(rec.seen.len())..];
    let Some(again) = after.iter().position(|r| r.calls("subscriptions/listen")) else {
        return Some(
            "its listen was cut with a list change in flight and it never listened again: the change is lost".into(),
        );
    };
    if after[again..].iter().any(|r| r.calls("tools/list")) {
        return None;
    }
    Some(
        "its listen was cut with a list change in flight; it listened again but never listed again, so the change is lost (M4)".into(),
    )
}

/// In a scenario about calls in flight together, why the client's calls
/// were not: fewer of them reached the server before the fault than it was
/// asked to make at once.
fn calls_apart(s: &Scenario, rec: &Record) -> Option<String> {
    if s.calls < 2 {
        return None;
    }
    let before = rec
        .seen
        .iter()
        .position(|r| r.faulted)
        .unwrap_or(rec.seen.len());
    let made = rec.seen[..before]
        .iter()
        .filter(|r| r.calls("tools/call"))
        .count();
    (made < s.calls as usize).then(|| {
        format!(
            "{made} of the {} calls asked for at once were in flight when the fault came (MCP_PROBE_CALLS not honoured)",
            s.calls
        )
    })
}

/// In a scenario that ends a resumption with no event, how the client lost
/// its place: its next GET named no event or another one.
fn lost_resumption(s: &Scenario, rec: &Record) -> Option<String> {
    if s.expect != Expect::ResumesAgain {
        return None;
    }
    let at = rec.seen.iter().position(|r| r.faulted && r.is_resume())?;
    let first = rec.seen[at].last_event_id.as_deref()?;
    let next = rec.seen[at + 1..].iter().find(|r| r.method == "GET")?;
    match next.last_event_id.as_deref() {
        Some(id) if id == first => None,
        Some(id) => Some(format!(
            "after an empty resumption from {first}, its next GET resumed from {id}"
        )),
        None => Some(format!(
            "after an empty resumption from {first}, its next GET named no event (a fresh stream: what the call's stream held is lost)"
        )),
    }
}

/// A client still running at the bound: looping when it was still repeating
/// one request (the same method and `Last-Event-ID`) in the last quarter of
/// the bound, backing off or not (the gaps are the evidence), else hanging.
fn stuck(rec: &Record, bound_ms: u64) -> (Verdict, String) {
    let late = bound_ms - bound_ms / 4;
    let total = rec.seen.len() as u64 + rec.unrecorded;
    let key = |r: &Seen| (r.method.clone(), r.last_event_id.clone());
    if let Some(last) = rec
        .seen
        .last()
        .filter(|r| r.at_ms >= late || rec.unrecorded > 0)
    {
        let repeats: Vec<u64> = rec
            .seen
            .iter()
            .filter(|r| key(r) == key(last))
            .map(|r| r.at_ms)
            .collect();
        if repeats.len() >= LOOP_REQUESTS_MIN {
            let gaps: Vec<String> = repeats
                .windows(2)
                .map(|w| (w[1] - w[0]).to_string())
                .collect();
            let shown = if gaps.len() > 8 {
                format!(
                    "{}, …, {}",
                    gaps[..4].join(", "),
                    gaps[gaps.len() - 3..].join(", ")
                )
            } else {
                gaps.join(", ")
            };
            let what = match &last.last_event_id {
                Some(id) => format!("{} resuming from {id}", last.method),
                None => last.method.clone(),
            };
            return (
                Verdict::Loops,
                format!(
                    "{} x {what} (gaps {shown} ms), {total} requests in all; still running at {bound_ms} ms, killed",
                    repeats.len()
                ),
            );
        }
    }
    let last = rec.seen.last().map_or_else(
        || "nothing reached the server".into(),
        |r| format!("the last request: {}", r.line()),
    );
    (
        Verdict::Hangs,
        format!("still waiting at {bound_ms} ms after {total} request(s); {last}; killed"),
    )
}

/// [`Expect::DropsWithdrawn`]: whether the client answered a server
/// request after its withdrawal had passed down to it. An answer that
/// reached the front before the withdrawal crossed it (the spec allows
/// that race) is not judged, nor a client the withdrawal never reached.
fn withdrawn(rec: &Record, ok: bool, exit: &str) -> (Verdict, String) {
    let Some((id, at)) = rec.withdrawn.first() else {
        return (
            Verdict::NotApplicable,
            format!("the server's withdrawal never passed down to the client ({exit})"),
        );
    };
    let answers: Vec<u64> = rec
        .seen
        .iter()
        .filter(|r| {
            r.rpc
                .iter()
                .any(|m| matches!(m, super::front::Rpc::Answer { id: a } if a == id))
        })
        .map(|r| r.at_ms)
        .collect();
    if let Some(late) = answers.iter().find(|t| **t > *at) {
        return (
            Verdict::Violates,
            format!(
                "answered the server's request {id} at {late} ms, after the server withdrew it at {at} ms ({exit})"
            ),
        );
    }
    if let Some(early) = answers.first() {
        return (
            Verdict::NotApplicable,
            format!(
                "answered request {id} at {early} ms, before its withdrawal at {at} ms (the application did not wait MCP_PROBE_ANSWER_DELAY_MS) ({exit})"
            ),
        );
    }
    match ok {
        true => (
            Verdict::Holds,
            format!("dropped the server's request {id}, withdrawn at {at} ms; the call succeeded"),
        ),
        false => (
            Verdict::Violates,
            format!("dropped the withdrawn request {id} but the call failed ({exit})"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::front::Rpc;
    use super::super::scenario::named;
    use super::*;

    fn seen(at_ms: u64, method: &str, last: Option<&str>, rpc: Vec<Rpc>) -> Seen {
        Seen {
            at_ms,
            method: method.into(),
            session: Some("s".into()),
            last_event_id: last.map(Into::into),
            rpc,
            status: 200,
            faulted: false,
            of_the_call: false,
            end: None,
        }
    }

    fn record(seen: Vec<Seen>) -> Record {
        Record::of(seen)
    }

    /// A given-up call's POST closed by the client soon after its deadline
    /// holds; read on until the client exits (or never closed) violates; a
    /// call the server answered before the deadline, or none at all, is
    /// not judged.
    #[test]
    fn a_given_up_calls_post_held_past_the_grace_violates() {
        let s = named("given-up-call").unwrap();
        let rpc = |method: &str, id: Option<&str>| Rpc::Call {
            method: method.into(),
            id: id.map(Into::into),
        };
        let init = seen(0, "POST", None, vec![rpc("initialize", Some("1"))]);
        let call = |end| Seen {
            end,
            of_the_call: true,
            ..seen(10, "POST", None, vec![rpc("tools/call", Some("2"))])
        };
        let cancel = seen(
            510,
            "POST",
            None,
            vec![rpc("notifications/cancelled", None)],
        );
        let run = |seen: Vec<Seen>, exited: u64| {
            let mut r = record(seen);
            r.client_ended_ms = Some(exited);
            judge(s, &r, &Ending::Exited(Some(0)), 5000)
        };
        let deadline = 10 + s.give_up_ms;
        let closed = |at| Some((StreamEnd::Closed, at));
        let (v, why) = run(
            vec![init.clone(), call(closed(deadline + 3)), cancel.clone()],
            2400,
        );
        assert_eq!(v, Verdict::Holds, "{why}");
        assert!(why.contains("cancelled it at 510 ms"), "{why}");
        let (v, why) = run(vec![init.clone(), call(closed(2390)), cancel.clone()], 2400);
        assert_eq!(v, Verdict::Violates, "{why}");
        assert!(why.contains("until it exited"), "{why}");
        let late = deadline + RELEASE_GRACE_MS + 1;
        let (v, why) = run(vec![init.clone(), call(closed(late))], 2400);
        assert_eq!(v, Verdict::Violates, "{why}");
        assert!(why.contains("until it closed it"), "{why}");
        assert!(why.contains("sent no notifications/cancelled"), "{why}");
        // Still open when the record was taken: it closed with the client.
        let (v, why) = run(vec![init.clone(), call(None)], 2400);
        assert_eq!(v, Verdict::Violates, "{why}");
        let mut never = record(vec![init.clone(), call(None)]);
        never.client_ended_ms = None;
        let (v, why) = judge(s, &never, &Ending::Exited(Some(0)), 5000);
        assert_eq!(v, Verdict::Violates, "{why}");
        assert!(why.contains("never closed"), "{why}");
        let answered = Some((StreamEnd::Ended, deadline - 100));
        assert_eq!(
            run(vec![init.clone(), call(answered)], 900).0,
            Verdict::NotApplicable
        );
        let ended_late = Some((StreamEnd::Ended, deadline + 10));
        assert_eq!(
            run(vec![init.clone(), call(ended_late)], 900).0,
            Verdict::Holds
        );
        assert_eq!(run(vec![init.clone()], 900).0, Verdict::NotApplicable);
        // Polling: the POST ended by the server at once, the resumption
        // open at the deadline is the client's to close.
        let polled = call(Some((StreamEnd::Ended, 20)));
        let resume = |at, end| Seen {
            end,
            of_the_call: true,
            ..seen(at, "GET", Some("e-1"), vec![])
        };
        let (v, why) = run(vec![init.clone(), polled.clone(), resume(220, None)], 2400);
        assert_eq!(v, Verdict::Violates, "{why}");
        assert!(
            why.contains("its stream's resumption (GET at 220 ms)"),
            "{why}"
        );
        let (v, why) = run(
            vec![
                init.clone(),
                polled.clone(),
                resume(220, closed(deadline + 4)),
            ],
            2400,
        );
        assert_eq!(v, Verdict::Holds, "{why}");
        // A resumption begun well after the deadline polls for nothing.
        let again = resume(late + 1, closed(late + 2));
        let (v, why) = run(vec![init.clone(), polled.clone(), again], 2400);
        assert_eq!(v, Verdict::Violates, "{why}");
        assert!(why.contains("resumed its stream"), "{why}");
        // Every stream of the call over before the deadline: not tested.
        let done = resume(220, Some((StreamEnd::Ended, 300)));
        assert_eq!(run(vec![init, polled, done], 900).0, Verdict::NotApplicable);
    }

    /// A withdrawn request answered after the withdrawal passed violates;
    /// answered before it (the race the spec allows) or never reached, it
    /// is not judged; dropped, with the call done, it holds.
    #[test]
    fn an_answer_after_the_withdrawal_violates() {
        let s = named("withdrawn-request-id-0").unwrap();
        let call = |at| {
            let rpc = vec![Rpc::Call {
                method: "initialize".into(),
                id: Some("1".into()),
            }];
            seen(at, "POST", None, rpc)
        };
        let answer = |at| seen(at, "POST", None, vec![Rpc::Answer { id: "0".into() }]);
        let run = |seen: Vec<Seen>, withdrawn: Option<u64>, code| {
            let mut r = record(seen);
            r.withdrawn = withdrawn
                .map(|at| ("0".to_owned(), at))
                .into_iter()
                .collect();
            judge(s, &r, &Ending::Exited(Some(code)), 5000).0
        };
        let at = Some(300);
        assert_eq!(run(vec![call(0), answer(900)], at, 0), Verdict::Violates);
        assert_eq!(
            run(vec![call(0), answer(250)], at, 0),
            Verdict::NotApplicable
        );
        assert_eq!(run(vec![call(0)], None, 0), Verdict::NotApplicable);
        assert_eq!(run(vec![call(0)], at, 0), Verdict::Holds);
        assert_eq!(run(vec![call(0)], at, 1), Verdict::Violates);
        let other = seen(900, "POST", None, vec![Rpc::Answer { id: "1".into() }]);
        assert_eq!(
            run(vec![call(0), other], at, 0),
            Verdict::Holds,
            "another request's answer"
        );
    }

    #[test]
    fn a_client_still_running_hangs_or_loops_by_its_late_traffic() {
        let s = named("empty-resume").unwrap();
        let quiet = record(vec![seen(10, "POST", None, vec![])]);
        assert_eq!(judge(s, &quiet, &Ending::TimedOut, 8000).0, Verdict::Hangs);
        let busy = record(
            (0..40)
                .map(|i| seen(i * 200, "GET", Some("7"), vec![]))
                .collect(),
        );
        let (v, why) = judge(s, &busy, &Ending::TimedOut, 8000);
        assert_eq!(v, Verdict::Loops);
        assert!(why.contains("40 x GET resuming from 7"), "{why}");
        let backing_off = record(
            [0, 400, 1200, 2800, 6000]
                .into_iter()
                .map(|t| seen(t, "GET", Some("7"), vec![]))
                .collect(),
        );
        let (v, why) = judge(s, &backing_off, &Ending::TimedOut, 8000);
        assert_eq!(v, Verdict::Loops);
        assert!(why.contains("gaps 400, 800, 1600, 3200 ms"), "{why}");
        let gave_up_early = record(
            [0, 400, 1200]
                .into_iter()
                .map(|t| seen(t, "GET", Some("7"), vec![]))
                .collect(),
        );
        assert_eq!(
            judge(s, &gave_up_early, &Ending::TimedOut, 8000).0,
            Verdict::Hangs
        );
        let mut ended = busy;
        ended.seen[0].rpc.push(Rpc::Call {
            method: "initialize".into(),
            id: Some("1".into()),
        });
        ended.seen[1].faulted = true;
        assert_eq!(
            judge(s, &ended, &Ending::Exited(Some(1)), 8000).0,
            Verdict::Holds
        );
        ended.seen[1].faulted = false;
        assert_eq!(
            judge(s, &ended, &Ending::Exited(Some(1)), 8000).0,
            Verdict::NotApplicable,
            "the fault never fired"
        );
    }

    #[test]
    fn a_second_resumption_must_name_the_first_ones_id() {
        let s = named("second-drop").unwrap();
        let init = || {
            seen(
                0,
                "POST",
                None,
                vec![Rpc::Call {
                    method: "initialize".into(),
                    id: Some("1".into()),
                }],
            )
        };
        let empty = |id: &str| Seen {
            faulted: true,
            ..seen(10, "GET", Some(id), vec![])
        };
        let again = record(vec![init(), empty("5"), seen(50, "GET", Some("5"), vec![])]);
        assert_eq!(
            judge(s, &again, &Ending::Exited(Some(0)), 8000).0,
            Verdict::Holds
        );
        let lost = record(vec![init(), empty("5"), seen(50, "GET", Some("0"), vec![])]);
        assert_eq!(
            judge(s, &lost, &Ending::Exited(Some(0)), 8000).0,
            Verdict::Violates
        );
        let fresh = record(vec![init(), empty("5"), seen(60, "GET", None, vec![])]);
        let (v, why) = judge(s, &fresh, &Ending::TimedOut, 8000);
        assert_eq!(v, Verdict::Violates, "{why}");
        assert!(why.contains("named no event"), "{why}");
        let gave_up = record(vec![init(), empty("5")]);
        assert_eq!(
            judge(s, &gave_up, &Ending::Exited(Some(1)), 8000).0,
            Verdict::Violates
        );
        let never = record(vec![init()]);
        assert_eq!(
            judge(s, &never, &Ending::Exited(Some(0)), 8000).0,
            Verdict::NotApplicable
        );
    }

    #[test]
    fn a_refused_discover_must_be_followed_by_initialize() {
        let s = named("discover-refused-404").unwrap();
        let call = |m: &str| Rpc::Call {
            method: m.into(),
            id: Some("1".into()),
        };
        let session_era = record(vec![seen(0, "POST", None, vec![call("initialize")])]);
        assert_eq!(
            judge(s, &session_era, &Ending::Exited(Some(0)), 8000).0,
            Verdict::NotApplicable
        );
        let refused = || Seen {
            faulted: true,
            ..seen(0, "POST", None, vec![call("server/discover")])
        };
        let fell = record(vec![
            refused(),
            seen(5, "POST", None, vec![call("initialize")]),
        ]);
        assert_eq!(
            judge(s, &fell, &Ending::Exited(Some(0)), 8000).0,
            Verdict::Holds
        );
        let stuck = record(vec![refused()]);
        assert_eq!(
            judge(s, &stuck, &Ending::Exited(Some(1)), 8000).0,
            Verdict::Violates
        );
    }

    #[test]
    fn an_unanswered_server_request_is_a_violation() {
        let s = named("request-on-post").unwrap();
        let init = Rpc::Call {
            method: "initialize".into(),
            id: Some("1".into()),
        };
        let none = record(vec![seen(0, "POST", None, vec![init.clone()])]);
        assert_eq!(
            judge(s, &none, &Ending::Exited(Some(0)), 8000).0,
            Verdict::Violates
        );
        let answered = record(vec![
            seen(0, "POST", None, vec![init.clone()]),
            seen(9, "POST", None, vec![Rpc::Answer { id: "1".into() }]),
        ]);
        assert_eq!(
            judge(s, &answered, &Ending::Exited(Some(0)), 8000).0,
            Verdict::Holds
        );
        let on_get = named("request-on-get").unwrap();
        assert_eq!(
            judge(on_get, &none, &Ending::TimedOut, 8000).0,
            Verdict::NotApplicable,
            "no GET: the question cannot reach the client"
        );
        let listening = record(vec![
            seen(0, "POST", None, vec![init.clone()]),
            seen(5, "GET", None, vec![]),
        ]);
        assert_eq!(
            judge(on_get, &listening, &Ending::TimedOut, 8000).0,
            Verdict::Hangs
        );
        let v2026 = record(vec![seen(0, "POST", None, vec![])]);
        assert_eq!(
            judge(s, &v2026, &Ending::Exited(Some(0)), 8000).0,
            Verdict::NotApplicable
        );
    }

    fn call(method: &str, id: &str) -> Rpc {
        Rpc::Call {
            method: method.into(),
            id: Some(id.into()),
        }
    }

    #[test]
    fn a_cut_listen_must_be_listened_and_listed_again() {
        let s = named("listen-cut").unwrap();
        let post = |at: u64, m: &str| seen(at, "POST", None, vec![call(m, "1")]);
        let cut = || Seen {
            faulted: true,
            ..post(5, "subscriptions/listen")
        };
        let never = record(vec![post(0, "server/discover"), post(5, "tools/call")]);
        assert_eq!(
            judge(s, &never, &Ending::Exited(Some(0)), 8000).0,
            Verdict::NotApplicable,
            "a client that never listens is not judged"
        );
        let with_cut = |after: Vec<Seen>| {
            let mut r = record([vec![post(0, "server/discover"), cut()], after].concat());
            r.cut_after = Some(2);
            r
        };
        let recovered = with_cut(vec![
            post(20, "subscriptions/listen"),
            post(30, "tools/list"),
        ]);
        assert_eq!(
            judge(s, &recovered, &Ending::Exited(Some(0)), 8000).0,
            Verdict::Holds
        );
        let (v, why) = judge(s, &with_cut(vec![]), &Ending::TimedOut, 8000);
        assert_eq!(v, Verdict::Violates);
        assert!(why.contains("never listened again"), "{why}");
        let listed_first = with_cut(vec![
            post(20, "tools/list"),
            post(30, "subscriptions/listen"),
        ]);
        let (v, why) = judge(s, &listed_first, &Ending::TimedOut, 8000);
        assert_eq!(
            v,
            Verdict::Violates,
            "a list before the new listen can miss the change"
        );
        assert!(why.contains("never listed again"), "{why}");
        let (v, _) = judge(s, &recovered, &Ending::Exited(Some(1)), 8000);
        assert_eq!(v, Verdict::Violates);
        let mut uncut = with_cut(vec![]);
        uncut.seen[1].faulted = false;
        uncut.cut_after = None;
        assert_eq!(
            judge(s, &uncut, &Ending::Exited(Some(0)), 8000).0,
            Verdict::NotApplicable,
            "no change ever passed the listen"
        );
    }

    #[test]
    fn calls_in_flight_together_must_all_have_reached_the_server() {
        let s = named("session-gone-in-flight").unwrap();
        let post = |at: u64, m: &str, id: &str| seen(at, "POST", None, vec![call(m, id)]);
        let gone = Seen {
            faulted: true,
            status: 404,
            ..seen(40, "GET", Some("9"), vec![])
        };
        let one = record(vec![
            post(0, "initialize", "0"),
            post(10, "tools/call", "1"),
            gone.clone(),
        ]);
        let (v, why) = judge(s, &one, &Ending::Exited(Some(1)), 8000);
        assert_eq!(v, Verdict::NotApplicable);
        assert!(why.contains("1 of the 2 calls"), "{why}");
        let two = record(vec![
            post(0, "initialize", "0"),
            post(10, "tools/call", "1"),
            post(11, "tools/call", "2"),
            gone,
        ]);
        assert_eq!(
            judge(s, &two, &Ending::Exited(Some(1)), 8000).0,
            Verdict::Holds
        );
        assert_eq!(judge(s, &two, &Ending::TimedOut, 8000).0, Verdict::Hangs);
    }
}
