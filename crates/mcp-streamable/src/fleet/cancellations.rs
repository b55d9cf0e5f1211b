//! The fleet's cancellations channel: the client's `notifications/cancelled`
//! brought to the instance serving the request it names.
//!
//! A client cancels a call by posting `notifications/cancelled`, and the
//! balancer may send that POST to any instance. The call, and the requests
//! its handler sent the client, live on the instance that took the call's
//! POST, which nothing in the cancellation names. An instance given a
//! cancellation for a request it is not serving publishes it on the fleet's
//! **cancellations channel** ([`LogKey::cancellations`]); every instance
//! listens to that channel from before it serves its first request
//! ([`Instance::join_cancellations`](super::instance::Instance::join_cancellations)),
//! so the publication reaches whichever instance took the call, which takes
//! it as if it were posted there
//! ([`ServerSession::deliver_cancelled`](crate::server::ServerSession::deliver_cancelled):
//! a copy it does not concern ignores it).
//!
//! ```text
//!   client ──cancel──▶ instance R ──publish──▶ channel ──▶ every instance
//!                      (serves no               (no        but R: the copy
//!                       such call)               log)      serving the call
//!                                                          takes it
//! ```
//!
//! Publications only, never appended: a listener that joined before its
//! first request cannot have missed a cancellation for it (one that
//! overtakes its own call is ignored, as in one process), and there is no
//! per-call subscription or read to pay for. Cancellations are rare; each
//! instance looks each one up in its table of sessions.

use super::{Entry, InstanceId, LogKey, Record, StoreOp};
use crate::ids::SessionId;
use crate::jsonrpc::{Message, RawJson};
use serde::{Deserialize, Serialize};

/// The method of a cancellation.
pub const CANCELLED: &str = "notifications/cancelled";

/// One publication on the channel: who published it, for which session,
/// and the cancellation's `params` as the client posted them.
#[derive(Serialize, Deserialize)]
struct Published {
    from: u16,
    session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    params: Option<RawJson>,
}

/// The publication of `message`, posted to `session` on instance `from`,
/// if it is a cancellation.
pub fn publication(from: InstanceId, session: &SessionId, message: &Message) -> Option<StoreOp> {
    let Message::Notification { method, params } = message else {
        return None;
    };
    if method != CANCELLED {
        return None;
    }
    let published = Published {
        from: from.0,
        session: session.as_str().to_owned(),
        params: params.clone(),
    };
    let text = serde_json::to_string(&published).ok()?;
    Some(StoreOp::Publish {
        log: LogKey::cancellations(),
        entry: Entry {
            seq: 0,
            record: Record::Message(text.into()),
        },
    })
}

/// The cancellation another instance published (`entry`, as pushed to
/// instance `me`): its session and `params`. `None` for this instance's
/// own publications and for anything not ours to read.
pub fn taken(me: InstanceId, entry: &Entry) -> Option<(SessionId, Option<RawJson>)> {
    let Record::Message(text) = &entry.record else {
        return None;
    };
    let p: Published = serde_json::from_str(text.as_str()).ok()?;
    if p.from == me.0 {
        return None;
    }
    Some((p.session.parse().ok()?, p.params))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid() -> SessionId {
        SessionId::from_bits(3)
    }

    fn cancel(id: u64) -> Message {
        let params = RawJson::from(serde_json::json!({ "requestId": id, "reason": "r" }));
        Message::notification(CANCELLED, Some(params))
    }

    /// A cancellation published by one instance is taken by every other,
    /// with its session and params as posted; its publisher skips it.
    #[test]
    fn a_cancellation_reaches_every_other_instance_as_posted() {
        let Some(StoreOp::Publish { log, entry }) = publication(InstanceId(1), &sid(), &cancel(7))
        else {
            panic!("a publication");
        };
        assert_eq!(log, LogKey::cancellations());
        let (session, params) = taken(InstanceId(0), &entry).expect("taken elsewhere");
        assert_eq!(session, sid());
        assert_eq!(params.expect("params").to_value()["requestId"], 7);
        assert_eq!(taken(InstanceId(1), &entry), None, "not by its publisher");
    }

    /// Only cancellations are published, and only publications are read.
    #[test]
    fn only_cancellations_are_published_and_read() {
        let other = Message::notification("notifications/progress", None);
        assert_eq!(publication(InstanceId(0), &sid(), &other), None);
        let blank = Entry {
            seq: 0,
            record: Record::Blank,
        };
        assert_eq!(taken(InstanceId(0), &blank), None);
        let junk = Entry {
            seq: 0,
            record: Record::Message("{}".to_owned().into()),
        };
        assert_eq!(taken(InstanceId(0), &junk), None);
    }
}
