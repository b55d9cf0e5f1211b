//! A session that is a 2026-07-28 `subscriptions/listen` (2026-07-28): its
//! stream opens with `notifications/subscriptions/acknowledged`, then
//! carries every change notification it subscribed to, tagged with its
//! subscription id, until the client closes it or the server ends it with
//! the `complete` result.
//!
//! ```text
//!  listen ──(WithRegistration: one step)──────────────────────▶ Registered+Acked
//!     │ RegisterThenAck: Registered ──ListenStep──▶ Acked         ▲
//!     │ AckThenRegister: Acked ──ListenStep──▶ Registered ────────┘
//! ```
//!
//! Two things happen when a listen arrives: the server starts delivering
//! broadcasts to it ("registered") and it writes the acknowledgement. The
//! spec wants nothing on the stream before the acknowledgement (M2) and,
//! since the client lists right after it, nothing broadcast after it lost
//! (M3). Doing both in one step, as FIXED does, is the only order with
//! neither hole; [`ListenAck`] names the two that SDKs ship, with a
//! scheduling point between the steps ([`SchedulingPoint::ListenStep`])
//! that the checker explores.
//!
//! [`SchedulingPoint::ListenStep`]: crate::preset::SchedulingPoint::ListenStep

use crate::ids::{HttpId, RequestId};
use crate::jsonrpc::{Message, RawJson};
use crate::policy::ListenAck;
use crate::server::v2026::{ListenFilter, META_SUBSCRIPTION_ID};
use crate::server::Cause;

/// What a session that is a listen remembers, and the messages it writes:
/// the session says when, this says what.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Listen {
    /// The listen's request id: its subscription id.
    id: RequestId,
    /// What the server agreed to send it.
    filter: ListenFilter,
    /// Its stream.
    http: HttpId,
    /// Broadcasts reach it.
    registered: bool,
    /// Its acknowledgement was written.
    acked: bool,
}

/// The listen's step a [`ListenAck`] order left for later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// It now receives broadcasts.
    Registered,
    /// Its acknowledgement is due: [`Listen::acknowledgement`].
    Acknowledge,
}

impl Listen {
    /// Listen `id` on exchange `http`, agreed to `filter`, whose steps run
    /// in `order`: registered at once unless the acknowledgement comes
    /// first ([`ListenAck::AckThenRegister`]); not acknowledged yet.
    pub(super) fn new(id: RequestId, filter: ListenFilter, http: HttpId, order: ListenAck) -> Self {
        Listen {
            id,
            filter,
            http,
            registered: order != ListenAck::AckThenRegister,
            acked: false,
        }
    }

    /// Its stream's exchange.
    pub(super) fn http(&self) -> HttpId {
        self.http
    }

    /// Whether both steps have run.
    pub(super) fn started(&self) -> bool {
        self.registered && self.acked
    }

    /// Takes the step left: registering happens here, the acknowledgement
    /// is the caller's to write.
    pub(super) fn take_step(&mut self) -> Option<Step> {
        if !self.registered {
            self.registered = true;
            return Some(Step::Registered);
        }
        (!self.acked).then_some(Step::Acknowledge)
    }

    /// The acknowledgement, which opens the stream (M2), and the cause it
    /// goes under; the listen counts as acknowledged from here on.
    pub(super) fn acknowledgement(&mut self) -> (Message, Cause) {
        self.acked = true;
        let params = serde_json::json!({
            "_meta": {META_SUBSCRIPTION_ID: self.id},
            "notifications": self.filter.to_json(),
        });
        let ack = Message::notification(
            "notifications/subscriptions/acknowledged",
            Some(RawJson::from(params)),
        );
        (ack, Cause::Request(self.id.clone()))
    }

    /// Whether broadcasts of `method` (with `params`) reach it now.
    pub(super) fn receives(&self, method: &str, params: Option<&serde_json::Value>) -> bool {
        self.registered && self.filter.matches(method, params)
    }

    /// Notification `method` as this listen carries it: tagged with its
    /// subscription id in `_meta`.
    pub(super) fn tagged(
        &self,
        method: &str,
        params: Option<&serde_json::Value>,
    ) -> (Message, Cause) {
        let mut p = params.cloned().unwrap_or_else(|| serde_json::json!({}));
        if let Some(obj) = p.as_object_mut() {
            let meta = obj.entry("_meta").or_insert_with(|| serde_json::json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(
                    META_SUBSCRIPTION_ID.into(),
                    serde_json::to_value(&self.id).unwrap_or_default(),
                );
            }
        }
        let message = Message::notification(method, Some(RawJson::from(p)));
        (message, Cause::Request(self.id.clone()))
    }

    /// The `complete` result that ends it gracefully, naming the
    /// subscription, and the request it answers.
    pub(super) fn completion(&self) -> (RequestId, RawJson) {
        let result = serde_json::json!({"_meta": {META_SUBSCRIPTION_ID: self.id}});
        (self.id.clone(), RawJson::from(result))
    }
}
