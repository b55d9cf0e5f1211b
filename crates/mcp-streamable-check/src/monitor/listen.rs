//! What the monitor judges of `subscriptions/listen` (2026-07-28) beyond
//! M2's shape of one stream: that nothing the application broadcast is
//! lost between the server and a listen (M3), and that a client ends a run
//! knowing every change it subscribed to (M4).
//!
//! Both are end-of-run checks against the application's broadcasts, seen
//! as [`Observation::Broadcast`](super::Observation::Broadcast) where they
//! originate (once per broadcast, before the core is handed it).

use super::Flag;
use mcp_streamable::client::ListenId;
use mcp_streamable::ids::HttpId;
use mcp_streamable::v2026::ListenFilter;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// How a change notification is told apart: its method, and for
/// `resources/updated` the URI.
pub(super) fn label(method: &str, params: Option<&Value>) -> String {
    match params.and_then(|p| p.get("uri")).and_then(Value::as_str) {
        Some(uri) if method == "notifications/resources/updated" => format!("{method} {uri}"),
        _ => method.to_owned(),
    }
}

/// M3, the server's side: for each acknowledged listen stream still open,
/// the broadcasts it subscribed to that were not yet written on it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Owed(BTreeMap<HttpId, Vec<String>>);

impl Owed {
    /// The application broadcast `label`; `listens` are the acknowledged,
    /// open listen streams that subscribed to it.
    pub(super) fn broadcast(&mut self, label: &str, listens: impl Iterator<Item = HttpId>) {
        for http in listens {
            self.0.entry(http).or_default().push(label.to_owned());
        }
    }

    /// `label` was written on listen stream `http`.
    pub(super) fn written(&mut self, http: HttpId, label: &str) {
        if let Some(owed) = self.0.get_mut(&http) {
            if let Some(i) = owed.iter().position(|l| l == label) {
                owed.remove(i);
            }
            if owed.is_empty() {
                self.0.remove(&http);
            }
        }
    }

    /// Keeps the debts of the listen streams `keep` names.
    pub(super) fn retain(&mut self, keep: impl Fn(HttpId) -> bool) {
        self.0.retain(|h, _| keep(*h));
    }

    /// The client closed `http`: what it did not get is its own loss.
    pub(super) fn closed(&mut self, http: HttpId) {
        self.0.remove(&http);
    }

    /// The server ended listen stream `http` (its `complete` result):
    /// ending it owing a broadcast lost that broadcast.
    pub(super) fn ended(&mut self, http: HttpId, flags: &mut Vec<Flag>) {
        if let Some(owed) = self.0.remove(&http) {
            for l in owed {
                flags.push(Flag::new(
                    "M3",
                    Some(http),
                    format!("listen ended without {l}, broadcast after its acknowledgement"),
                ));
            }
        }
    }

    /// End of run: every broadcast still owed was lost.
    pub(super) fn finish(&self, flags: &mut Vec<Flag>) {
        for (http, owed) in &self.0 {
            for l in owed {
                flags.push(Flag::new(
                    "M3",
                    Some(*http),
                    format!(
                        "{l}, broadcast after the listen's acknowledgement, never written on it"
                    ),
                ));
            }
        }
    }
}

/// M4, one client's side: its application's listens (from their
/// acknowledgement, as the application heard it) and the changes each has
/// not heard of since.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Heard {
    listens: BTreeMap<ListenId, ListenFilter>,
    stale: BTreeSet<(ListenId, String)>,
}

impl Heard {
    /// The application broadcast `method`: every listen of this client
    /// that subscribed to it has news it has not heard.
    pub(super) fn broadcast(&mut self, method: &str, params: Option<&Value>) {
        let l = label(method, params);
        for (id, filter) in &self.listens {
            if filter.matches(method, params) {
                self.stale.insert((*id, l.clone()));
            }
        }
    }

    /// The application heard notification `method`.
    pub(super) fn notified(&mut self, method: &str, params: Option<&Value>) {
        let l = label(method, params);
        self.stale.retain(|(_, s)| *s != l);
    }

    /// Listen `id` was acknowledged and the application told to list
    /// again: whatever it shows is current from here.
    pub(super) fn listening(&mut self, id: ListenId, agreed: &ListenFilter) {
        self.listens.insert(id, agreed.clone());
        self.stale.retain(|(l, _)| *l != id);
    }

    /// Listen `id` is over, and the application knows (it was told, or
    /// stopped it itself).
    pub(super) fn ended(&mut self, id: ListenId) {
        self.listens.remove(&id);
        self.stale.retain(|(l, _)| *l != id);
    }

    /// End of run: a listen that is still on, yet missed a change, leaves
    /// its application showing a stale list.
    pub(super) fn finish(&self, flags: &mut Vec<Flag>) {
        for (id, l) in &self.stale {
            flags.push(Flag::new(
                "M4",
                None,
                format!("{id} is still on, but its application never heard of {l}: a stale list"),
            ));
        }
    }
}
