//! Bodies being read, counted against the session they name.
//!
//! A session bounds the bytes of the requests it holds in flight
//! ([`SessionConfig::in_flight_bytes_max`]), but a transport reads a
//! request's body before the session sees it: a client that opens many
//! POSTs at once has all of their bodies in the server's memory before the
//! first reaches its session and is refused. [`Uploads`] is the shell's
//! count of those bodies, by the session id a request names and who sends
//! it, so that reading a body is admitted by the same budget: one body
//! alone is always read (as one request alone is always taken), and past
//! the budget the next is refused with 429 before a byte of it is read.
//!
//! The key is the pair (session id, principal), not the id alone: a
//! request from another principal naming a session it did not open counts
//! against its own pair, so a stolen id cannot spend its owner's budget.
//! The id is taken as named, whether or not such a session lives: an
//! unknown id's bodies are bounded the same way, and the count says
//! nothing about which ids are live.
//!
//! [`SessionConfig::in_flight_bytes_max`]: super::SessionConfig::in_flight_bytes_max

use crate::error::RequestError;
use crate::head::RequestHead;
use crate::headers;
use crate::ids::SessionId;
use crate::principal::Principal;
use std::collections::BTreeMap;

/// Who reads bodies for a session: the id a request names, and its sender.
type Key = (SessionId, Option<Principal>);

/// The bodies being read, in bytes, by (session id, principal). Its
/// entries are those with a body being read: at most one per request a
/// transport reads at once.
#[derive(Debug, Default)]
pub struct Uploads {
    reading: BTreeMap<Key, usize>,
}

/// One body being read, admitted by [`Uploads::begin`]: hand it back to
/// [`Uploads::end`] once the session has taken the request or refused it
/// (or the read failed).
#[derive(Debug, PartialEq, Eq)]
#[must_use = "an upload not ended keeps its bytes counted"]
pub struct Upload {
    key: Key,
    bytes: usize,
}

impl Upload {
    /// The bytes it counts.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// What reading `head`'s body may take: its `Content-Length`, or `body_max`
/// when it declares none (or one past `body_max`, which is refused unread).
pub fn upload_len(head: &RequestHead, body_max: usize) -> usize {
    head.header(headers::CONTENT_LENGTH)
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(body_max, |n| n.min(body_max))
}

impl Uploads {
    /// None being read.
    pub fn new() -> Self {
        Uploads::default()
    }

    // ----- getters -----

    /// Bytes being read for `sid` from `principal`.
    pub fn reading(&self, sid: &SessionId, principal: Option<&Principal>) -> usize {
        self.reading
            .get(&(sid.clone(), principal.cloned()))
            .copied()
            .unwrap_or(0)
    }

    /// The (session, principal) pairs with a body being read.
    pub fn len(&self) -> usize {
        self.reading.len()
    }

    /// Whether no body is being read.
    pub fn is_empty(&self) -> bool {
        self.reading.is_empty()
    }

    // ----- commands -----

    /// Begins reading a body of up to `bytes` (its `Content-Length`, or the
    /// endpoint's `body_max` when it declares none) for the session `sid`
    /// names, sent by `principal`. Refused with
    /// [`RequestError::InFlightBytesLimit`] (429) when other bodies of the
    /// pair are being read and together they would pass `max`.
    pub fn begin(
        &mut self,
        sid: &SessionId,
        principal: Option<&Principal>,
        bytes: usize,
        max: usize,
    ) -> Result<Upload, RequestError> {
        let key = (sid.clone(), principal.cloned());
        let reading = self.reading.entry(key.clone()).or_insert(0);
        if *reading > 0 && reading.saturating_add(bytes) > max {
            return Err(RequestError::InFlightBytesLimit { max });
        }
        *reading += bytes;
        Ok(Upload { key, bytes })
    }

    /// The body of `upload` is read and its request taken or refused.
    pub fn end(&mut self, upload: Upload) {
        if let Some(reading) = self.reading.get_mut(&upload.key) {
            *reading = reading.saturating_sub(upload.bytes);
            if *reading == 0 {
                self.reading.remove(&upload.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(n: u128) -> SessionId {
        SessionId::from_bits(n)
    }

    #[test]
    fn one_body_alone_is_always_read_and_the_next_is_refused_past_the_budget() {
        let mut u = Uploads::new();
        let big = u.begin(&sid(1), None, 10, 4).expect("alone: read");
        assert_eq!(u.reading(&sid(1), None), 10);
        assert_eq!(
            u.begin(&sid(1), None, 1, 4),
            Err(RequestError::InFlightBytesLimit { max: 4 })
        );
        u.end(big);
        assert!(u.is_empty(), "nothing left counted");
        let a = u.begin(&sid(1), None, 2, 4).unwrap();
        let b = u.begin(&sid(1), None, 2, 4).expect("within the budget");
        assert!(u.begin(&sid(1), None, 1, 4).is_err());
        u.end(a);
        u.end(b);
        assert_eq!(u.len(), 0);
    }

    #[test]
    fn another_principal_or_session_has_its_own_count() {
        let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
        let mut u = Uploads::new();
        let _a = u.begin(&sid(1), Some(&alice), 4, 4).unwrap();
        // Bob naming alice's session spends his own budget, not hers.
        let _b = u.begin(&sid(1), Some(&bob), 4, 4).unwrap();
        assert!(u.begin(&sid(1), Some(&bob), 1, 4).is_err());
        let _c = u.begin(&sid(2), Some(&alice), 4, 4).unwrap();
        let _d = u.begin(&sid(1), None, 4, 4).unwrap();
        assert_eq!(u.reading(&sid(1), Some(&alice)), 4);
        assert_eq!(u.len(), 4);
        assert!(u.begin(&sid(1), Some(&alice), 1, 4).is_err());
    }
}
