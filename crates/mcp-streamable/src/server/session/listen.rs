//! A session that is a modern `subscriptions/listen` (2026-07-28): its
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

use super::ServerSession;
use crate::ids::{HttpId, MsgKey, RequestId};
use crate::jsonrpc::{Message, RawJson};
use crate::policy::ListenAck;
use crate::server::modern::{ListenFilter, META_SUBSCRIPTION_ID};
use crate::server::Cause;
use crate::time::Instant;

/// What a session that is a listen remembers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Listen {
    /// The listen's request id: its subscription id.
    pub(crate) id: RequestId,
    /// What the server agreed to send it.
    pub(crate) filter: ListenFilter,
    /// Its stream.
    http: HttpId,
    /// Broadcasts reach it.
    registered: bool,
    /// Its acknowledgement was written.
    acked: bool,
}

impl ServerSession {
    /// A modern `subscriptions/listen` (request `id`), already agreed to
    /// `filter`. The request is the core's own: the stream opens and the
    /// application never hears of it. Under [`ListenAck::WithRegistration`]
    /// the acknowledgement is written in the same step as the listen starts
    /// receiving broadcasts; the other orders leave one step for later.
    pub fn handle_listen(
        &mut self,
        http: HttpId,
        id: RequestId,
        filter: ListenFilter,
        now: Instant,
    ) {
        self.open_post_stream(http, &[(id.clone(), 0)]);
        self.modern_method = Some("subscriptions/listen".into());
        let order = self.policy.listen_ack;
        self.listen = Some(Box::new(Listen {
            id,
            filter,
            http,
            registered: order != ListenAck::AckThenRegister,
            acked: false,
        }));
        if order != ListenAck::RegisterThenAck {
            self.acknowledge(now);
        }
        self.update_timers(now);
    }

    /// The listen's pending step (the acknowledgement or the registration,
    /// by [`ListenAck`]) runs; whether there was one.
    pub(super) fn handle_listen_step(&mut self, http: HttpId, now: Instant) -> bool {
        let Some(l) = self.listen.as_deref_mut().filter(|l| l.http == http) else {
            return false;
        };
        if !l.registered {
            l.registered = true;
            return true;
        }
        if !l.acked {
            self.acknowledge(now);
            return true;
        }
        false
    }

    /// The listen's stream, while a step of it is pending.
    pub(super) fn listen_step_pending(&self) -> Option<HttpId> {
        let l = self.listen.as_deref()?;
        let started = l.registered && l.acked;
        (!started && !self.is_ended()).then_some(l.http)
    }

    fn acknowledge(&mut self, now: Instant) {
        let Some(l) = self.listen.as_deref_mut() else {
            return;
        };
        l.acked = true;
        let params = serde_json::json!({
            "_meta": {META_SUBSCRIPTION_ID: l.id},
            "notifications": l.filter.to_json(),
        });
        let cause = Cause::Request(l.id.clone());
        let ack = Message::notification(
            "notifications/subscriptions/acknowledged",
            Some(RawJson::from(params)),
        );
        let _ = self.send(ack, cause, now);
    }

    /// Whether this session is a listen that receives broadcasts of
    /// `method` (with `params`) now.
    pub fn listens_to(&self, method: &str, params: Option<&serde_json::Value>) -> bool {
        self.listen
            .as_ref()
            .is_some_and(|l| !self.is_ended() && l.registered && l.filter.matches(method, params))
    }

    /// Writes notification `method` on this listen's stream, tagged with its
    /// subscription id; `None` unless the listen receives it now.
    pub fn notify_listener(
        &mut self,
        method: &str,
        params: Option<&serde_json::Value>,
        now: Instant,
    ) -> Option<(MsgKey, Cause)> {
        if !self.listens_to(method, params) {
            return None;
        }
        let id = self.listen.as_ref()?.id.clone();
        let mut p = params.cloned().unwrap_or_else(|| serde_json::json!({}));
        if let Some(obj) = p.as_object_mut() {
            let meta = obj.entry("_meta").or_insert_with(|| serde_json::json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(
                    META_SUBSCRIPTION_ID.into(),
                    serde_json::to_value(&id).unwrap_or_default(),
                );
            }
        }
        let cause = Cause::Request(id);
        let message = Message::notification(method, Some(RawJson::from(p)));
        let key = self.send(message, cause.clone(), now).ok()?;
        Some((key, cause))
    }

    /// Ends this listen gracefully: the `complete` result naming the
    /// subscription, then the end of the stream.
    pub fn end_listen(&mut self, now: Instant) -> Option<MsgKey> {
        let id = self.listen.as_ref()?.id.clone();
        let result = serde_json::json!({"_meta": {META_SUBSCRIPTION_ID: id}});
        self.respond(&id, Ok(RawJson::from(result)), now).ok()
    }
}
