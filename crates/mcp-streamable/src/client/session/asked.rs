//! The server's requests the application holds: handed to it as
//! [`ClientEvent::ServerRequest`](crate::client::ClientEvent::ServerRequest),
//! not yet answered, not withdrawn. `respond` answers only these, so a
//! request the server cancelled is never answered (the receiver of a
//! cancellation "SHOULD NOT send a response", `basic/utilities/cancellation.mdx`).
//!
//! ```text
//!  ServerRequest ──▶ held ──respond──▶ answered (POSTed)
//!                     └──notifications/cancelled, obeyed──▶ withdrawn (ServerRequestCancelled)
//! ```

use crate::ids::RequestId;
use crate::policy::ServerCancels;
use std::collections::BTreeSet;

/// The held requests, at most `max` (`ClientConfig::asked_max`). A
/// cancellation of a request not held (answered already, or not come yet,
/// on another stream) is ignored, as the spec lets a receiver do with a
/// request it does not know; remembering it would cost a record per
/// cancellation for as long as the session lives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Asked {
    held: BTreeSet<RequestId>,
}

impl Asked {
    /// The server asked `id`; whether the application may have it (not
    /// when `max` are held already, nor when `id` is held: a second request
    /// under one id could not be told apart when answered).
    pub(super) fn hand_out(&mut self, id: &RequestId, max: usize) -> bool {
        if self.held.len() >= max || self.held.contains(id) {
            return false;
        }
        self.held.insert(id.clone());
        true
    }

    /// The application answers `id`; whether it was held (else nothing is
    /// sent).
    pub(super) fn answer(&mut self, id: &RequestId) -> bool {
        self.held.remove(id)
    }

    /// The server cancelled `id`; whether it is withdrawn from the
    /// application (held, and a cancellation `cancels` obeys).
    pub(super) fn cancel(&mut self, id: &RequestId, cancels: ServerCancels) -> bool {
        cancels.obeys(id) && self.held.remove(id)
    }

    /// The session ended: nothing it asked can be answered.
    pub(super) fn clear(&mut self) {
        self.held.clear();
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
    fn past_the_bound_nothing_more_is_held() {
        let mut a = Asked::default();
        assert!(a.hand_out(&RequestId::Num(1), 1));
        assert!(!a.hand_out(&RequestId::Num(2), 1));
        assert!(a.answer(&RequestId::Num(1)));
        assert!(a.hand_out(&RequestId::Num(2), 1), "room again");
    }
}
