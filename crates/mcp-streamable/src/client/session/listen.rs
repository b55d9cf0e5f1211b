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

use crate::client::ClientError;
use crate::ids::{HttpId, RequestId};
use crate::jsonrpc::{Message, RawJson};
use crate::v2026::ListenFilter;

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

/// What a message on a listen's stream is to the listen.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Heard {
    /// The acknowledgement: what the server agreed to send, and whether an
    /// earlier stream of the listen was acknowledged too (then the
    /// application lists again).
    Acknowledged {
        /// The filter the server agreed to.
        agreed: ListenFilter,
        /// Whether this listens again after a break.
        resumed: bool,
    },
    /// A second acknowledgement: dropped, counted as a duplicate.
    Duplicate,
    /// A notification the listen carries, for the application.
    Notification {
        /// Its method.
        method: String,
        /// Its parameters.
        params: Option<RawJson>,
    },
    /// The end: `complete`, a `notifications/cancelled` naming the listen
    /// (cancellation.mdx), or the listen's own error.
    Ended(Option<ClientError>),
    /// Anything else, or a notification before the acknowledgement (M2:
    /// a server that breaks this is not believed): counted as a stranger.
    Stranger,
}

impl Listen {
    /// A listen for `filter`, no stream open yet.
    pub(super) fn new(filter: ListenFilter) -> Self {
        Listen {
            filter,
            request: None,
            http: None,
            acked: false,
            ever_acked: false,
            failures: 0,
        }
    }

    /// What it asks the server for, as `subscriptions/listen`'s
    /// `notifications`.
    pub(super) fn filter_json(&self) -> serde_json::Value {
        self.filter.to_json()
    }

    /// Whether its current stream is acknowledged.
    pub(super) fn is_acked(&self) -> bool {
        self.acked
    }

    /// The request of its current stream.
    pub(super) fn request(&self) -> Option<i64> {
        self.request
    }

    /// Its current stream's exchange, while one is open.
    pub(super) fn http(&self) -> Option<HttpId> {
        self.http
    }

    /// Request `n` on exchange `http` listens for it now.
    pub(super) fn opened(&mut self, n: i64, http: HttpId) {
        self.request = Some(n);
        self.http = Some(http);
        self.acked = false;
    }

    /// Reads message `m` of its current stream.
    pub(super) fn read(&mut self, m: Message) -> Heard {
        let current = |id: &RequestId| Some(id.clone()) == self.request.map(RequestId::Num);
        match m {
            Message::Notification { method, params } if method == ACKNOWLEDGED => {
                if self.acked {
                    return Heard::Duplicate;
                }
                let resumed = self.ever_acked;
                self.acked = true;
                self.ever_acked = true;
                self.failures = 0;
                let agreed = ListenFilter::from_params(params.as_ref()).unwrap_or_default();
                Heard::Acknowledged { agreed, resumed }
            }
            Message::Notification { method, params }
                if method == CANCELLED && names_request(params.as_ref(), self.request) =>
            {
                Heard::Ended(None)
            }
            Message::Notification { .. } if !self.acked => Heard::Stranger,
            Message::Notification { method, params } => Heard::Notification { method, params },
            Message::Response { id, .. } if current(&id) => Heard::Ended(None),
            Message::Error {
                id: Some(id),
                error,
            } if current(&id) => Heard::Ended(Some(ClientError::Status {
                status: 200,
                error: Some(error),
            })),
            _ => Heard::Stranger,
        }
    }

    /// Its current stream is over: how many of its streams in a row ended
    /// without an acknowledgement, this one counted.
    pub(super) fn stream_ended(&mut self) -> u32 {
        self.http = None;
        self.request = None;
        if !std::mem::take(&mut self.acked) {
            self.failures += 1;
        }
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use crate::client::testing::{answer, sent, v2026};
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
        let mut c = v2026(serde_json::json!({}));
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
        let mut c = v2026(serde_json::json!({}));
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
        let mut c = v2026(serde_json::json!({}));
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
        let mut c = v2026(serde_json::json!({}));
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

    /// A listen whose stream broke waits for its re-listen; closing the
    /// client then ends it, and the application is told, as it is of a
    /// listen whose stream is open.
    #[test]
    fn a_listen_waiting_to_listen_again_ends_with_the_client() {
        let now = Instant::ZERO;
        let mut c = v2026(serde_json::json!({}));
        let (waiting, http, n) = opened(&mut c);
        c.handle_sse_event(http, message(ack(n)), now);
        c.handle_http_closed(http, now);
        let (open, http, n) = opened(&mut c);
        c.handle_sse_event(http, message(ack(n)), now);
        events(&mut c);
        c.close(now);
        let mut ended: Vec<ListenId> = events(&mut c)
            .into_iter()
            .filter_map(|e| match e {
                ClientEvent::ListenEnded {
                    listen,
                    error: Some(ClientError::Closed),
                } => Some(listen),
                _ => None,
            })
            .collect();
        ended.sort();
        assert_eq!(ended, [waiting, open]);
        assert!(c.listens().next().is_none());
        assert!(c.poll_timeout().is_none(), "no re-listen after the close");
    }

    #[test]
    fn a_listen_answered_whole_instead_of_with_a_stream_ends_as_malformed() {
        let now = Instant::ZERO;
        let mut c = v2026(serde_json::json!({}));
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
        let mut c = v2026(serde_json::json!({}));
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
