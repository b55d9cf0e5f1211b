//! The client's `subscriptions/listen` streams (2026-07-28): one state
//! machine per listen, kept going across broken streams.
//!
//! ```text
//!  listen ──▶ Opening ──acknowledged──▶ Live ──complete / an error──▶ Ended
//!               ▲  │                     │
//!               │  └──stream breaks──┐   └──stream breaks──┐
//!               └──── after retry ◀── Waiting ◀────────────┘
//!                     (relisten_failures_max in a row without an ack: Ended)
//! ```
//!
//! Nothing in this era is resumable: a notification sent while no stream
//! was open is gone. So every acknowledgement is announced to the
//! application as [`ClientEvent::Listening`]: "list what you show of these
//! kinds now", and after a break, "again" (`resumed`): the list it fetches
//! then is the current one, and every later change arrives on the new
//! stream. A client that does not notice the end keeps a stale list and
//! hears nothing more (`Relisten::Unnoticed`, go-sdk v1.7.0, caught as M4
//! by the monitor).

use super::{ClientSession, Role};
use crate::client::{ClientError, ClientEvent, ClientTimer, ClientUsageError, ListenId};
use crate::ids::{HttpId, RequestId};
use crate::jsonrpc::{Message, RawJson};
use crate::policy::Relisten;
use crate::time::Instant;
use crate::v2026::ListenFilter;
use std::time::Duration;

/// The notification that opens every listen stream.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// The notification a server may end a listen with (cancellation.mdx).
const CANCELLED: &str = "notifications/cancelled";

/// Whether a `notifications/cancelled`'s `requestId` is request `n`.
fn names_request(params: Option<&RawJson>, n: Option<i64>) -> bool {
    let id = params.map(RawJson::to_value);
    let id = id.as_ref().and_then(|p| p.get("requestId"));
    matches!((id.and_then(serde_json::Value::as_i64), n), (Some(a), Some(b)) if a == b)
}

/// One listen the application asked for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Listen {
    /// What the application asked for.
    filter: ListenFilter,
    /// The current `subscriptions/listen` request, while one is open.
    request: Option<i64>,
    /// Its exchange.
    http: Option<HttpId>,
    /// The current request was acknowledged.
    acked: bool,
    /// Whether any stream of this listen was ever acknowledged.
    ever_acked: bool,
    /// Re-listens in a row without an acknowledgement.
    failures: u32,
}

impl ClientSession {
    /// Listens for the change notifications `filter` names (modern era
    /// only). The stream's acknowledgement arrives as
    /// [`ClientEvent::Listening`], notifications as
    /// [`ClientEvent::Notification`]; a broken stream is listened again
    /// (by [`Relisten`]), an ended one is [`ClientEvent::ListenEnded`].
    pub fn listen(
        &mut self,
        filter: ListenFilter,
        now: Instant,
    ) -> Result<ListenId, ClientUsageError> {
        if !self.is_ready() {
            return Err(ClientUsageError::NotReady);
        }
        if !self.is_modern() {
            return Err(ClientUsageError::SessionEra);
        }
        if self.listens.len() >= self.config.listens_max {
            return Err(ClientUsageError::TooManyRequests);
        }
        let l = ListenId(self.next_listen);
        self.next_listen += 1;
        self.listens.insert(
            l,
            Listen {
                filter,
                request: None,
                http: None,
                acked: false,
                ever_acked: false,
                failures: 0,
            },
        );
        self.open_listen(l, now);
        Ok(l)
    }

    /// Stops listening: the stream is closed (the era's cancellation),
    /// [`ClientEvent::ListenEnded`] says `Cancelled` (as `cancel` ends a
    /// request with `Failed`), and nothing more is heard of `l`. The event
    /// is what tells an observer the listen is over even when no stream
    /// was open to close (a re-listen was waiting).
    pub fn unlisten(&mut self, l: ListenId) -> Result<(), ClientUsageError> {
        if !self.listens.contains_key(&l) {
            return Err(ClientUsageError::UnknownListen(l));
        }
        self.end_listen(l, Some(ClientError::Cancelled));
        Ok(())
    }

    /// The listens the application asked for and has not stopped.
    pub fn listens(&self) -> impl Iterator<Item = ListenId> + '_ {
        self.listens.keys().copied()
    }

    /// Whether listen `l`'s current stream is acknowledged.
    pub fn is_listening(&self, l: ListenId) -> bool {
        self.listens.get(&l).is_some_and(|x| x.acked)
    }

    /// The request id of listen `l`'s current stream (its subscription id).
    pub fn listen_request(&self, l: ListenId) -> Option<RequestId> {
        self.listens
            .get(&l)
            .and_then(|x| x.request)
            .map(RequestId::Num)
    }

    /// POSTs `subscriptions/listen` for `l` under a new request id.
    fn open_listen(&mut self, l: ListenId, _now: Instant) {
        let Some(filter) = self.listens.get(&l).map(|x| x.filter.to_json()) else {
            return;
        };
        let n = self.mint_id();
        let params = serde_json::json!({ "notifications": filter });
        let msg = Message::request(n, "subscriptions/listen", Some(RawJson::from(params)));
        let http = self.send_modern(Role::Listen(l.0, n), &msg);
        if let Some(x) = self.listens.get_mut(&l) {
            x.request = Some(n);
            x.http = Some(http);
            x.acked = false;
        }
    }

    /// A message on listen `l`'s stream: the acknowledgement, a
    /// notification, or the end (`complete`, or an error).
    pub(super) fn listen_message(&mut self, l: ListenId, http: HttpId, m: Message) {
        let Some(x) = self.listens.get_mut(&l) else {
            return;
        };
        if x.http != Some(http) {
            return;
        }
        match m {
            Message::Notification { method, params } if method == ACKNOWLEDGED => {
                if x.acked {
                    self.duplicates += 1;
                    return;
                }
                let resumed = x.ever_acked;
                x.acked = true;
                x.ever_acked = true;
                x.failures = 0;
                let agreed = ListenFilter::from_params(params.as_ref()).unwrap_or_default();
                self.events.push_back(ClientEvent::Listening {
                    listen: l,
                    agreed,
                    resumed,
                });
            }
            // cancellation.mdx: a server tearing a subscription down sends
            // `notifications/cancelled` naming the listen; it ends here, as
            // a `complete` would (subscriptions.mdx's way of saying it).
            Message::Notification { method, params }
                if method == CANCELLED && names_request(params.as_ref(), x.request) =>
            {
                self.end_listen(l, None);
            }
            Message::Notification { method, params } => {
                if !x.acked {
                    // Nothing may precede the acknowledgement (M2): a
                    // server that breaks this is not believed.
                    self.strangers += 1;
                    return;
                }
                self.events
                    .push_back(ClientEvent::Notification { method, params });
            }
            Message::Response { id, .. } if Some(id.clone()) == x.request.map(RequestId::Num) => {
                self.end_listen(l, None);
            }
            Message::Error {
                id: Some(id),
                error,
            } if Some(id.clone()) == x.request.map(RequestId::Num) => {
                let error = ClientError::Status {
                    status: 200,
                    error: Some(error),
                };
                self.end_listen(l, Some(error));
            }
            _ => self.strangers += 1,
        }
    }

    /// Listen `l`'s exchange is over. A refusal ends it; a stream that
    /// broke is listened again after `retry_default_ms`, unless
    /// `relisten_failures_max` listens in a row were never acknowledged.
    pub(super) fn listen_stream_ended(
        &mut self,
        l: ListenId,
        http: HttpId,
        ex: &super::Exchange,
        now: Instant,
    ) {
        let Some(x) = self.listens.get_mut(&l) else {
            return;
        };
        if x.http != Some(http) {
            return;
        }
        x.http = None;
        x.request = None;
        if !std::mem::take(&mut x.acked) {
            x.failures += 1;
        }
        let failures = x.failures;
        if let Some(error) = ex.refusal("a listen answered without a stream") {
            self.end_listen(l, Some(error));
            return;
        }
        match self.policy.relisten {
            Relisten::Unnoticed => return,
            Relisten::Never => {
                self.end_listen(l, Some(ClientError::StreamLost));
                return;
            }
            Relisten::AndRelist if failures > self.config.relisten_failures_max => {
                self.end_listen(l, Some(ClientError::StreamLost));
                return;
            }
            Relisten::AndRelist => {}
        }
        let at = now + Duration::from_millis(self.config.retry_default_ms);
        self.timers.set(ClientTimer::Relisten(l.0), at);
    }

    /// The re-listen timer of `l` fired.
    pub(super) fn relisten(&mut self, l: ListenId, now: Instant) {
        if self.listens.get(&l).is_some_and(|x| x.http.is_none()) && self.is_modern() {
            self.open_listen(l, now);
        }
    }

    /// Listen `l` is over; the application hears why (`None`: the server
    /// ended it gracefully).
    fn end_listen(&mut self, l: ListenId, error: Option<ClientError>) {
        let Some(x) = self.listens.remove(&l) else {
            return;
        };
        self.timers.stop(ClientTimer::Relisten(l.0));
        if let Some(http) = x.http {
            self.abort(http);
        }
        self.events
            .push_back(ClientEvent::ListenEnded { listen: l, error });
    }

    /// The exchange's listen, if it is one.
    pub(super) fn listen_of(&self, http: HttpId) -> Option<ListenId> {
        match self.exchanges.get(&http)?.role {
            Role::Listen(l, _) => Some(ListenId(l)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::client::testing::{answer, modern, sent};
    use crate::client::{ClientError, ClientEvent, ClientSession, ClientUsageError, ListenId};
    use crate::head::ResponseHead;
    use crate::ids::{HttpId, RequestId};
    use crate::sse::SseItem;
    use crate::time::Instant;
    use crate::v2026::ListenFilter;

    fn message(data: serde_json::Value) -> SseItem {
        SseItem::Message {
            id: None,
            event: None,
            data: data.to_string(),
        }
    }

    fn tools() -> ListenFilter {
        ListenFilter {
            tools: true,
            ..ListenFilter::default()
        }
    }

    fn ack(n: i64) -> serde_json::Value {
        serde_json::json!({"jsonrpc": "2.0", "method": super::ACKNOWLEDGED,
            "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": n}}})
    }

    /// A listen whose stream is open (not yet acknowledged): the listen,
    /// its exchange and its request id.
    fn opened(c: &mut ClientSession) -> (ListenId, HttpId, i64) {
        let now = Instant::ZERO;
        let l = c.listen(tools(), now).unwrap();
        let s = sent(c).remove(0);
        let n = s.body["id"].as_i64().unwrap();
        let head = ResponseHead::from_wire(200, [("content-type", "text/event-stream")]);
        c.handle_response_head(s.http, head, now);
        (l, s.http, n)
    }

    fn events(c: &mut ClientSession) -> Vec<ClientEvent> {
        std::iter::from_fn(|| c.poll_event()).collect()
    }

    #[test]
    fn each_listen_has_its_own_id_request_and_state_until_it_is_stopped() {
        let now = Instant::ZERO;
        let mut c = modern(serde_json::json!({}));
        let (a, ha, na) = opened(&mut c);
        let (b, hb, nb) = opened(&mut c);
        assert_ne!(a, b);
        assert_ne!(ha, hb);
        assert_eq!(c.listens().collect::<Vec<_>>(), [a, b]);
        assert_eq!(c.listen_request(a), Some(RequestId::Num(na)));
        assert_eq!(c.listen_request(b), Some(RequestId::Num(nb)));
        assert!(!c.is_listening(a), "not before its acknowledgement");
        c.handle_sse_event(ha, message(ack(na)), now);
        assert!(c.is_listening(a) && !c.is_listening(b));
        assert_eq!(format!("{a}"), format!("listen#{}", a.0));
        c.unlisten(b).unwrap();
        assert_eq!(c.listens().collect::<Vec<_>>(), [a]);
        assert_eq!(c.listen_request(b), None);
        assert!(matches!(
            c.unlisten(b),
            Err(ClientUsageError::UnknownListen(x)) if x == b
        ));
        assert!(matches!(
            events(&mut c).last(),
            Some(ClientEvent::ListenEnded { listen, error: Some(ClientError::Cancelled) }) if *listen == b
        ));
    }

    #[test]
    fn a_second_acknowledgement_and_anything_before_the_first_are_dropped_and_counted() {
        let now = Instant::ZERO;
        let mut c = modern(serde_json::json!({}));
        let (l, http, n) = opened(&mut c);
        let change = serde_json::json!({"jsonrpc": "2.0",
            "method": "notifications/tools/list_changed"});
        c.handle_sse_event(http, message(change.clone()), now);
        assert_eq!(c.strangers_dropped(), 1, "a notification before the ack");
        c.handle_sse_event(http, message(ack(n)), now);
        c.handle_sse_event(http, message(ack(n)), now);
        assert_eq!(c.duplicates_dropped(), 1);
        c.handle_sse_event(http, message(change), now);
        // A response or an error to some other request is nobody's here.
        let other = serde_json::json!({"jsonrpc": "2.0", "id": n + 1, "result": {}});
        c.handle_sse_event(http, message(other), now);
        let other = serde_json::json!({"jsonrpc": "2.0", "id": n + 1,
            "error": {"code": -32603, "message": "x"}});
        c.handle_sse_event(http, message(other), now);
        assert_eq!(c.strangers_dropped(), 3);
        assert!(c.is_listening(l));
        let kinds: Vec<_> = events(&mut c)
            .into_iter()
            .map(|e| match e {
                ClientEvent::Listening { resumed, .. } => format!("listening {resumed}"),
                ClientEvent::Notification { method, .. } => method,
                e => format!("{e:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            ["listening false", "notifications/tools/list_changed"]
        );
    }

    #[test]
    fn the_listens_own_error_ends_it_with_that_error() {
        let now = Instant::ZERO;
        let mut c = modern(serde_json::json!({}));
        let (l, http, n) = opened(&mut c);
        c.handle_sse_event(http, message(ack(n)), now);
        let error = serde_json::json!({"jsonrpc": "2.0", "id": n,
            "error": {"code": -32603, "message": "gone"}});
        c.handle_sse_event(http, message(error), now);
        assert!(c.listens().next().is_none());
        assert!(matches!(
            events(&mut c).last(),
            Some(ClientEvent::ListenEnded {
                listen,
                error: Some(ClientError::Status { status: 200, error: Some(_) })
            }) if *listen == l
        ));
    }

    #[test]
    fn a_broken_stream_is_listened_again_and_the_new_ack_says_resumed() {
        let mut now = Instant::ZERO;
        let mut c = modern(serde_json::json!({}));
        let (l, http, n) = opened(&mut c);
        c.handle_sse_event(http, message(ack(n)), now);
        // The end of some other exchange is not this listen's.
        c.handle_http_closed(HttpId(http.0 + 1000), now);
        assert!(c.is_listening(l));
        c.handle_http_closed(http, now);
        assert!(!c.is_listening(l));
        assert_eq!(c.listen_request(l), None);
        let (at, _) = c.poll_timeout().expect("a re-listen is scheduled");
        now = at;
        c.handle_timeout(now);
        let again = sent(&mut c).remove(0);
        let m = again.body["id"].as_i64().unwrap();
        assert_ne!(m, n);
        assert_eq!(c.listen_request(l), Some(RequestId::Num(m)));
        let head = ResponseHead::from_wire(200, [("content-type", "text/event-stream")]);
        c.handle_response_head(again.http, head, now);
        c.handle_sse_event(again.http, message(ack(m)), now);
        assert!(matches!(
            events(&mut c).last(),
            Some(ClientEvent::Listening { resumed: true, listen, .. }) if *listen == l
        ));
    }

    #[test]
    fn a_listen_answered_whole_instead_of_with_a_stream_ends_as_malformed() {
        let now = Instant::ZERO;
        let mut c = modern(serde_json::json!({}));
        let l = c.listen(tools(), now).unwrap();
        let s = sent(&mut c).remove(0);
        answer(&mut c, s.http, 200, "{}");
        assert!(matches!(
            events(&mut c).last(),
            Some(ClientEvent::ListenEnded {
                listen,
                error: Some(ClientError::Malformed("a listen answered without a stream"))
            }) if *listen == l
        ));
        assert_eq!(c.poll_timeout(), None, "not listened again");
    }

    #[test]
    fn a_server_cancelling_the_listen_ends_it_and_nothing_is_listened_again() {
        let now = Instant::ZERO;
        let mut c = modern(serde_json::json!({}));
        let (l, http, n) = opened(&mut c);
        c.handle_sse_event(http, message(ack(n)), now);
        // Another request's cancellation is not this listen's end.
        let other = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": n + 100}});
        c.handle_sse_event(http, message(other), now);
        assert!(c.is_listening(l));
        let cancelled = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": n, "reason": "shutting down"}});
        c.handle_sse_event(http, message(cancelled), now);
        c.handle_http_closed(http, now);
        let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(events.last(), Some(ClientEvent::ListenEnded { listen, error: None }) if *listen == l),
            "{events:?}"
        );
        assert_eq!(c.listens().collect::<Vec<ListenId>>(), []);
        assert_eq!(c.poll_timeout(), None, "no re-listen is scheduled");
    }
}
