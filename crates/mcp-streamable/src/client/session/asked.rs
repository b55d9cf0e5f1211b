//! The server's requests the application holds: handed to it as
//! [`ClientEvent::ServerRequest`](crate::client::ClientEvent::ServerRequest),
//! not yet answered, not withdrawn. `respond` answers only these, so a
//! request the server cancelled is never answered (the receiver of a
//! cancellation "SHOULD NOT send a response", `basic/utilities/cancellation.mdx`).
//!
//! A request held back from the application
//! ([`StandaloneRequests::AfterCalls`](crate::policy::StandaloneRequests::AfterCalls))
//! is held here too, and waits to be handed out:
//!
//! ```text
//!  arrived ──▶ waiting ──the client's own requests all ended──┐
//!     │          └──notifications/cancelled, obeyed──▶ dropped │ (never seen)
//!     └──────────────────────────────────────────────────────┴──▶ ServerRequest ──▶ held
//!  held ──respond──▶ answered (POSTed)
//!    └──notifications/cancelled, obeyed──▶ withdrawn (ServerRequestCancelled)
//! ```

use crate::ids::RequestId;
use crate::jsonrpc::RawJson;
use crate::policy::ServerCancels;
use std::collections::{BTreeSet, VecDeque};

/// A server request not handed to the application yet: id, method, params.
pub(super) type Waiting = (RequestId, String, Option<RawJson>);

/// The held requests, at most `max` (`ClientConfig::asked_max`). A
/// cancellation of a request not held (answered already, or not come yet,
/// on another stream) is ignored, as the spec lets a receiver do with a
/// request it does not know; remembering it would cost a record per
/// cancellation for as long as the session lives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Asked {
    /// Handed to the application.
    held: BTreeSet<RequestId>,
    /// Taken, not handed out yet, oldest first (empty unless the policy
    /// holds requests back).
    waiting: VecDeque<Waiting>,
}

impl Asked {
    /// The server asked `id`; whether the application may have it (not
    /// when `max` are taken already, held or waiting, nor when `id` is: a
    /// second request under one id could not be told apart when answered).
    pub(super) fn hand_out(&mut self, id: &RequestId, max: usize) -> bool {
        if self.held.len() + self.waiting.len() >= max
            || self.held.contains(id)
            || self.is_waiting(id)
        {
            return false;
        }
        self.held.insert(id.clone());
        true
    }

    /// A request [`hand_out`](Self::hand_out) took, kept from the
    /// application until [`release`](Self::release).
    pub(super) fn wait(&mut self, request: Waiting) {
        self.held.remove(&request.0);
        self.waiting.push_back(request);
    }

    /// The requests kept waiting, oldest first, handed to the application now.
    pub(super) fn release(&mut self) -> impl Iterator<Item = Waiting> + '_ {
        self.held
            .extend(self.waiting.iter().map(|(id, _, _)| id.clone()));
        self.waiting.drain(..)
    }

    /// The application answers `id`; whether it was held (else nothing is
    /// sent).
    pub(super) fn answer(&mut self, id: &RequestId) -> bool {
        self.held.remove(id)
    }

    /// The server cancelled `id`; whether it is withdrawn from the
    /// application (held, and a cancellation `cancels` obeys). One still
    /// waiting is dropped unseen.
    pub(super) fn cancel(&mut self, id: &RequestId, cancels: ServerCancels) -> bool {
        if !cancels.obeys(id) {
            return false;
        }
        self.waiting.retain(|(w, _, _)| w != id);
        self.held.remove(id)
    }

    /// The client closes: what waits is never handed out.
    pub(super) fn drop_waiting(&mut self) {
        self.waiting.clear();
    }

    /// The session ended: nothing it asked can be answered.
    pub(super) fn clear(&mut self) {
        self.held.clear();
        self.waiting.clear();
    }

    fn is_waiting(&self, id: &RequestId) -> bool {
        self.waiting.iter().any(|(w, _, _)| w == id)
    }

    /// The held requests, oldest id first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &RequestId> {
        self.held.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::Asked;
    use crate::ids::RequestId;
    use crate::policy::ServerCancels;

    const OBEYED: ServerCancels = ServerCancels::Obeyed;

    #[test]
    fn a_cancelled_request_is_withdrawn_and_cannot_be_answered() {
        let mut a = Asked::default();
        let zero = RequestId::Num(0);
        assert!(a.hand_out(&zero, 4));
        assert!(!a.hand_out(&zero, 4), "one id held once");
        assert!(a.cancel(&zero, OBEYED));
        assert!(!a.answer(&zero), "withdrawn: no answer");
        assert!(!a.cancel(&zero, OBEYED), "once");
    }

    #[test]
    fn id_zero_ignored_keeps_request_zero_only() {
        let mut a = Asked::default();
        let (zero, one) = (RequestId::Num(0), RequestId::Num(1));
        let ignored = ServerCancels::IdZeroIgnored;
        assert!(a.hand_out(&zero, 4) && a.hand_out(&one, 4));
        assert!(!a.cancel(&zero, ignored));
        assert!(a.cancel(&one, ignored));
        assert!(a.answer(&zero), "still held: answered after its cancel");
    }

    #[test]
    fn a_waiting_request_is_answered_only_once_released_and_dropped_unseen_when_cancelled() {
        let mut a = Asked::default();
        let (one, two) = (RequestId::Num(1), RequestId::Num(2));
        for id in [&one, &two] {
            assert!(a.hand_out(id, 2));
            a.wait((id.clone(), "elicitation/create".into(), None));
        }
        assert!(
            !a.hand_out(&RequestId::Num(3), 2),
            "the bound counts waiting ones"
        );
        assert!(!a.answer(&one), "not handed out yet");
        assert!(!a.cancel(&two, OBEYED), "never seen: nothing to withdraw");
        let released: Vec<RequestId> = a.release().map(|(id, _, _)| id).collect();
        assert_eq!(
            released,
            std::slice::from_ref(&one),
            "the withdrawn one is gone"
        );
        assert!(a.answer(&one));
        assert_eq!(a.iter().count(), 0);
    }

    #[test]
    fn past_the_bound_nothing_more_is_held() {
        let mut a = Asked::default();
        assert!(a.hand_out(&RequestId::Num(1), 1));
        assert!(!a.hand_out(&RequestId::Num(2), 1));
        assert!(a.answer(&RequestId::Num(1)));
        assert!(a.hand_out(&RequestId::Num(2), 1), "room again");
    }
}
