//! [`Liveness`]: this instance's heartbeat, and the watch on the instances
//! whose streams it follows.
//!
//! An instance that dies (SIGKILL, a lost machine) takes its in-flight
//! handlers with it; they are not run again elsewhere (tools are not
//! idempotent). Its calls must still complete: a client resumed elsewhere
//! would otherwise wait for an end that never comes. So every instance keeps
//! a heartbeat in the store (`StoreOp::Beat`, a key with a TTL, renewed
//! every `beat_ms`), and an instance following streams another one writes
//! asks, every `beat_ms`, whether that writer's heartbeat is current
//! (`StoreOp::Alive`). A writer found dead is reported
//! ([`Liveness::poll_dead`]); the instance then completes the writer's
//! streams it follows (`StoreOp::Complete`: what `fleet::completion` finds owed,
//! error responses and the end, unless the log has ended).
//!
//! ```text
//!   watched writer ──every beat_ms──▶ Alive? ──alive──▶ (again later)
//!                                        └──gone──▶ poll_dead → complete its streams
//! ```

use super::record::{decode_message, encode_message};
use super::{Entry, InstanceId, Record, ResumedGet, StoreOp};
use crate::ids::{MsgKey, RequestId};
use crate::jsonrpc::{ErrorObject, Message, INTERNAL_ERROR};
use crate::time::Instant;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// This instance's heartbeat and its watch on writers (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Liveness {
    me: InstanceId,
    beat_ms: u64,
    ttl_ms: u64,
    next_beat: Instant,
    /// Writers followed here: when each is next asked about.
    watched: BTreeMap<InstanceId, Instant>,
    /// Writers asked about, the answer not in yet.
    asking: BTreeSet<InstanceId>,
    ops: VecDeque<StoreOp>,
    dead: VecDeque<InstanceId>,
}

impl Liveness {
    /// Instance `me`, beating every `beat_ms` a heartbeat that lasts
    /// `ttl_ms` (longer, so one late beat does not kill it); the first beat
    /// at the first [`Self::handle_timeout`].
    pub fn new(me: InstanceId, beat_ms: u64, ttl_ms: u64) -> Self {
        Liveness {
            me,
            beat_ms: beat_ms.max(1),
            ttl_ms: ttl_ms.max(beat_ms.max(1)),
            next_beat: Instant::ZERO,
            watched: BTreeMap::new(),
            asking: BTreeSet::new(),
            ops: VecDeque::new(),
            dead: VecDeque::new(),
        }
    }

    /// Whether `instance` is watched.
    pub fn is_watched(&self, instance: InstanceId) -> bool {
        self.watched.contains_key(&instance)
    }

    /// Whether any writer is watched (or being asked about).
    pub fn is_watching(&self) -> bool {
        !self.watched.is_empty() || !self.asking.is_empty()
    }

    /// The writers whose streams are followed here now: new ones are first
    /// asked about `beat_ms` from `now`; the others are no longer watched.
    pub fn watch(&mut self, writers: impl IntoIterator<Item = InstanceId>, now: Instant) {
        let writers: BTreeSet<InstanceId> = writers.into_iter().filter(|&w| w != self.me).collect();
        self.watched.retain(|w, _| writers.contains(w));
        let first = later(now, self.beat_ms);
        for w in writers {
            self.watched.entry(w).or_insert(first);
        }
    }

    /// Time has reached `now`: beat if due, ask about the writers due.
    pub fn handle_timeout(&mut self, now: Instant) {
        if now >= self.next_beat {
            self.ops.push_back(StoreOp::Beat {
                instance: self.me,
                ttl_ms: self.ttl_ms,
            });
            self.next_beat = later(now, self.beat_ms);
        }
        for (&w, at) in self.watched.iter_mut() {
            if *at <= now && !self.asking.contains(&w) {
                self.asking.insert(w);
                self.ops.push_back(StoreOp::Alive { instance: w });
                *at = later(now, self.beat_ms);
            }
        }
    }

    /// The store's answer about `instance`.
    pub fn handle_alive(&mut self, instance: InstanceId, alive: bool) {
        self.asking.remove(&instance);
        if !alive && self.watched.remove(&instance).is_some() {
            self.dead.push_back(instance);
        }
    }

    /// When [`Self::handle_timeout`] is next needed.
    pub fn poll_timeout(&self) -> Instant {
        self.watched
            .values()
            .copied()
            .fold(self.next_beat, std::cmp::min)
    }

    /// The next op for the store (beats and questions; only `Alive` has a
    /// reply).
    pub fn poll_op(&mut self) -> Option<StoreOp> {
        self.ops.pop_front()
    }

    /// The next writer found dead.
    pub fn poll_dead(&mut self) -> Option<InstanceId> {
        self.dead.pop_front()
    }
}

/// What completes a dead writer's stream whose log holds `entries` (from
/// its first): a POST stream's, an error for every request it answers that
/// no entry answered, then the end; a standalone stream's, its release
/// (under [`ResumedGet::ContinueWhereResumed`]: whoever follows it goes on
/// as the session's GET). `None` if it is over already, or its first entry
/// is gone (trimmed: what it was cannot be told).
pub(crate) fn completion(entries: &[Entry], resumed: ResumedGet) -> Option<Vec<Record>> {
    if entries.iter().any(|e| e.record.is_final()) {
        return None;
    }
    let first = entries.first().filter(|e| e.seq == 1)?;
    let Record::Opened(ids) = &first.record else {
        return match resumed {
            ResumedGet::ContinueWhereResumed => Some(vec![Record::Released]),
            ResumedGet::FollowLog => None,
        };
    };
    let mut owed: Vec<RequestId> = serde_json::from_str(ids).ok()?;
    for e in entries {
        let Record::Message(text) = &e.record else {
            continue;
        };
        match decode_message(text) {
            Some((_, Message::Response { id, .. }))
            | Some((_, Message::Error { id: Some(id), .. })) => owed.retain(|o| *o != id),
            _ => {}
        }
    }
    let mut records: Vec<Record> = owed
        .into_iter()
        .map(|id| {
            let error =
                ErrorObject::new(INTERNAL_ERROR, "the instance serving this request stopped");
            let message = Message::Error {
                id: Some(id),
                error,
            };
            Record::Message(encode_message(MsgKey(0), &message))
        })
        .collect();
    records.push(Record::End);
    Some(records)
}

fn later(now: Instant, ms: u64) -> Instant {
    Instant::from_millis(now.as_millis().saturating_add(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(l: &mut Liveness) -> Vec<StoreOp> {
        std::iter::from_fn(|| l.poll_op()).collect()
    }

    #[test]
    fn beats_every_period_and_asks_about_watched_writers_only() {
        let mut l = Liveness::new(InstanceId(0), 1000, 3000);
        l.handle_timeout(Instant::ZERO);
        assert_eq!(
            ops(&mut l),
            [StoreOp::Beat {
                instance: InstanceId(0),
                ttl_ms: 3000
            }]
        );
        assert_eq!(l.poll_timeout(), Instant::from_millis(1000));
        l.watch([InstanceId(0), InstanceId(2)], Instant::from_millis(500));
        assert!(!l.is_watched(InstanceId(0)), "not itself");
        assert!(l.is_watched(InstanceId(2)));
        l.handle_timeout(Instant::from_millis(1000));
        assert_eq!(ops(&mut l).len(), 1, "a beat; instance 2 not due yet");
        l.handle_timeout(Instant::from_millis(1500));
        assert_eq!(
            ops(&mut l),
            [StoreOp::Alive {
                instance: InstanceId(2)
            }]
        );
        l.handle_timeout(Instant::from_millis(2600));
        let asked = ops(&mut l);
        assert!(
            !asked.contains(&StoreOp::Alive {
                instance: InstanceId(2)
            }),
            "one question out at a time: {asked:?}"
        );
        l.handle_alive(InstanceId(2), true);
        assert_eq!(l.poll_dead(), None);
        l.handle_timeout(Instant::from_millis(3600));
        assert!(ops(&mut l).contains(&StoreOp::Alive {
            instance: InstanceId(2)
        }));
        l.handle_alive(InstanceId(2), false);
        assert_eq!(l.poll_dead(), Some(InstanceId(2)));
        assert!(!l.is_watched(InstanceId(2)));
        l.handle_alive(InstanceId(2), false);
        assert_eq!(l.poll_dead(), None, "reported once");
    }

    #[test]
    fn a_writer_no_longer_followed_is_not_asked_about() {
        let mut l = Liveness::new(InstanceId(1), 1000, 3000);
        l.watch([InstanceId(0)], Instant::ZERO);
        l.watch([], Instant::from_millis(10));
        l.handle_timeout(Instant::from_millis(5000));
        assert!(ops(&mut l)
            .iter()
            .all(|op| matches!(op, StoreOp::Beat { .. })));
    }

    #[test]
    fn a_dead_writers_standalone_stream_is_released_and_a_post_stream_completed() {
        let e = |seq, record| Entry { seq, record };
        let message = Record::Message(encode_message(
            MsgKey(1),
            &Message::notification("notifications/message", None),
        ));
        let standalone = [e(1, Record::Blank), e(2, message.clone())];
        assert_eq!(
            completion(&standalone, ResumedGet::ContinueWhereResumed),
            Some(vec![Record::Released])
        );
        assert_eq!(completion(&standalone, ResumedGet::FollowLog), None);
        let released = [e(1, Record::Blank), e(2, Record::Released)];
        assert_eq!(
            completion(&released, ResumedGet::ContinueWhereResumed),
            None,
            "released once"
        );
        let trimmed = [e(2, message)];
        assert_eq!(
            completion(&trimmed, ResumedGet::ContinueWhereResumed),
            None,
            "what a trimmed log was cannot be told"
        );
        let post = [e(
            1,
            Record::Opened(crate::shared::Shared::new("[7]".into())),
        )];
        let done = completion(&post, ResumedGet::ContinueWhereResumed).unwrap();
        assert_eq!(done.len(), 2, "an error for request 7, then the end");
        assert_eq!(done.last(), Some(&Record::End));
        // A batch's stream, one of its two requests answered in the log:
        // only the other is owed.
        let answered = Message::Response {
            id: RequestId::Num(7),
            result: serde_json::json!({}).into(),
        };
        let batch = [
            e(
                1,
                Record::Opened(crate::shared::Shared::new("[7,8]".into())),
            ),
            e(2, Record::Message(encode_message(MsgKey(2), &answered))),
        ];
        let done = completion(&batch, ResumedGet::ContinueWhereResumed).unwrap();
        let owed: Vec<RequestId> = done
            .iter()
            .filter_map(|r| match r {
                Record::Message(text) => match decode_message(text) {
                    Some((_, Message::Error { id: Some(id), .. })) => Some(id),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert_eq!(owed, [RequestId::Num(8)]);
    }
}
