//! What the monitor remembers of one client (C2–C5, and the client's half of
//! I1). Each client of a run has its own: request ids are per client, so two
//! clients that both send request `1` are two different requests.

use super::Flag;
use crate::client::{ClientEvent, ClientTransmit, ClientTransmitKind, Purpose};
use crate::headers;
use crate::ids::{HttpId, RequestId};
use crate::jsonrpc::Message;
use std::collections::{BTreeMap, BTreeSet};

/// One client's side of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct ClientSide {
    /// Requests this client sent (`initialize` included).
    sent: BTreeSet<RequestId>,
    /// Requests whose response reached the client (not when: the step a
    /// path took to get there decides nothing, and would split states).
    arrived: BTreeSet<RequestId>,
    /// Requests whose result the application got.
    returned: BTreeSet<RequestId>,
    /// Requests that failed for the application.
    failed: BTreeSet<RequestId>,
    /// Client exchanges still open, with the request they work for.
    open: BTreeMap<HttpId, Option<RequestId>>,
    /// The session id `initialize` returned, once the application has it.
    initialized: Option<Option<String>>,
    /// Listen requests this client sent: their end (`complete`) is theirs.
    listen_requests: BTreeSet<RequestId>,
    /// M4: the application's listens and the changes they have not heard.
    heard: super::listen::Heard,
}

impl ClientSide {
    /// The session this client's application holds, if any.
    pub(super) fn session(&self) -> Option<&str> {
        self.initialized.as_ref()?.as_deref()
    }

    /// The client core started or aborted an exchange.
    pub(super) fn on_transmit(&mut self, t: &ClientTransmit, flags: &mut Vec<Flag>) {
        match &t.kind {
            ClientTransmitKind::Send { head, .. } => {
                if let Purpose::Listen { request, .. } = &t.purpose {
                    self.listen_requests.insert(request.clone());
                }
                let request = t.purpose.request().cloned();
                if let Some(r) = &request {
                    self.sent.insert(r.clone());
                    if self.returned.contains(r) {
                        flags.push(Flag::new(
                            "C3",
                            Some(t.http),
                            format!("new exchange for {r} after the caller had its result"),
                        ));
                    }
                }
                if let Some(Some(_)) = &self.initialized {
                    let carries = head.header(headers::MCP_SESSION_ID).is_some();
                    if !carries && !matches!(t.purpose, Purpose::Initialize(_)) {
                        flags.push(Flag::new(
                            "C5",
                            Some(t.http),
                            "request sent without Mcp-Session-Id after initialize returned".into(),
                        ));
                    }
                }
                self.open.insert(t.http, request);
            }
            ClientTransmitKind::Abort => {
                self.open.remove(&t.http);
                if let Purpose::Listen { listen: l, .. } = t.purpose {
                    // The application stopped it (or the core ended it
                    // and said so): nothing more is owed to its view.
                    self.heard.ended(l);
                }
            }
        }
    }

    /// The client read `message` on exchange `http`.
    pub(super) fn on_received(&mut self, http: HttpId, message: &Message, flags: &mut Vec<Flag>) {
        let (true, Some(id)) = (message.is_response(), message.id()) else {
            return;
        };
        if self.listen_requests.contains(id) {
            return;
        }
        if !self.sent.contains(id) {
            flags.push(Flag::new(
                "I1",
                Some(http),
                format!("response to {id}, which this client never sent"),
            ));
            return;
        }
        self.arrived.insert(id.clone());
    }

    /// The client's exchange `http` is over.
    pub(super) fn on_closed(&mut self, http: HttpId) {
        self.open.remove(&http);
    }

    /// The client core told its application something.
    pub(super) fn on_event(&mut self, e: &ClientEvent, flags: &mut Vec<Flag>) {
        match e {
            ClientEvent::Initialized { id, session_id, .. } => {
                self.initialized = Some(session_id.as_ref().map(|s| s.to_string()));
                if !self.returned.insert(id.clone()) {
                    flags.push(Flag::new("C4", None, format!("{id} completed twice")));
                }
            }
            ClientEvent::Response { id, .. } if !self.returned.insert(id.clone()) => {
                flags.push(Flag::new("C4", None, format!("{id} completed twice")));
            }
            // The probe's answer reached the core, which decided on it.
            ClientEvent::FellBack { id, .. } => {
                self.returned.insert(id.clone());
            }
            ClientEvent::Failed { id, .. } => {
                if self.arrived.contains(id) && !self.returned.contains(id) {
                    flags.push(Flag::new(
                        "C2",
                        None,
                        format!("{id} failed although its response had arrived"),
                    ));
                }
                self.failed.insert(id.clone());
            }
            ClientEvent::SessionLost => {
                self.initialized = None;
            }
            ClientEvent::Notification { method, params } => {
                let params = params.as_ref().map(crate::jsonrpc::RawJson::to_value);
                self.heard.notified(method, params.as_ref());
            }
            ClientEvent::Listening { listen, agreed, .. } => self.heard.listening(*listen, agreed),
            ClientEvent::ListenEnded { listen, .. } => self.heard.ended(*listen),
            _ => {}
        }
    }

    /// The application broadcast `method` (M4).
    pub(super) fn heard_broadcast(&mut self, method: &str, params: Option<&serde_json::Value>) {
        self.heard.broadcast(method, params);
    }

    /// End-of-run checks: C2 (arrived, never returned), C3 (exchanges of
    /// finished requests still open) and M4 (a listen left stale).
    pub(super) fn finish(&self, flags: &mut Vec<Flag>) {
        self.heard.finish(flags);
        for id in &self.arrived {
            if !self.returned.contains(id) && !self.failed.contains(id) {
                flags.push(Flag::new(
                    "C2",
                    None,
                    format!("{id}: the response arrived but the caller never got it"),
                ));
            }
        }
        for (http, id) in &self.open {
            let Some(id) = id else { continue };
            if self.returned.contains(id) || self.failed.contains(id) {
                flags.push(Flag::new(
                    "C3",
                    Some(*http),
                    format!("exchange for {id} still running after it finished"),
                ));
            }
        }
    }
}
