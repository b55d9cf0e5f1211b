//! The sessions model: requests of one session land on either of two
//! instances (the balancer's choice), each checking its requests with the
//! store through its [`SessionGate`]; instance 1 deletes the session at any
//! point; the session may expire at any point.
//! Every order in which the store executes the instances' ops is explored.
//!
//! Property (`docs/properties.md`):
//! - **F4, an ended session stays ended**: once the store has deleted the
//!   session (a DELETE that found it) or the session has expired, no request
//!   of it is admitted again on any instance.

use crate::engine::Explorable;
use mcp_streamable::fleet::gate::{SessionGate, Verdict};
use mcp_streamable::fleet::store::{MemoryStore, Output};
use mcp_streamable::fleet::{InstanceId, SessionRefresh, StoreOp, StoreReply};
use mcp_streamable::ids::SessionId;
use mcp_streamable::shared::fixed_keys;
use mcp_streamable::time::Instant;
use std::collections::{BTreeMap, VecDeque};

/// One sessions scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionsScenario {
    /// How the instances' gates refresh the session.
    pub refresh: SessionRefresh,
    /// Requests of the session, each reaching either instance.
    pub requests: usize,
    /// Whether instance 1 deletes the session.
    pub delete: bool,
    /// Whether the session may expire (time jumps to its expiry once).
    pub expiry: bool,
    /// The session's time to live, refreshed per request.
    pub ttl_ms: u64,
    /// The deepest path explored.
    pub depth: usize,
}

impl SessionsScenario {
    /// `requests` requests racing a DELETE on another instance.
    pub fn delete_elsewhere(refresh: SessionRefresh, requests: usize) -> Self {
        SessionsScenario {
            refresh,
            requests,
            delete: true,
            expiry: false,
            ttl_ms: 1_000,
            depth: 64,
        }
    }

    /// `requests` requests racing the session's expiry.
    pub fn expiry(refresh: SessionRefresh, requests: usize) -> Self {
        SessionsScenario {
            refresh,
            requests,
            delete: false,
            expiry: true,
            ttl_ms: 1_000,
            depth: 64,
        }
    }
}

/// What a sessions run can break.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionsViolation {
    /// F4: the store told an instance the session exists after it ended.
    Resurrected,
}

impl SessionsViolation {
    /// The property's id.
    pub fn id(&self) -> &'static str {
        "F4"
    }
}

/// A step of the sessions model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SessionsAction {
    /// The next request reaches `instance`.
    Request {
        /// Where the balancer sends it.
        instance: u16,
    },
    /// The DELETE reaches instance 1.
    Delete,
    /// The store executes the next op of `instance`.
    Execute {
        /// The sender.
        instance: u16,
    },
    /// `instance` takes the store's next reply.
    Receive {
        /// The receiver.
        instance: u16,
    },
    /// Time reaches the session's expiry.
    Expire,
}

/// A whole state of the sessions model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionsState {
    store: MemoryStore,
    gates: Vec<SessionGate>,
    to_store: BTreeMap<u16, VecDeque<StoreOp>>,
    from_store: BTreeMap<u16, VecDeque<StoreReply>>,
    requests_left: usize,
    delete_left: bool,
    expiry_left: bool,
    now: Instant,
    /// The session was deleted or expired.
    ended: bool,
    /// The store answered "it exists" after that.
    resurrected: bool,
    /// Verdicts, in order: admitted or not.
    admitted: Vec<bool>,
}

impl SessionsState {
    /// The verdicts in the order they were given (`true`: admitted).
    pub fn admitted(&self) -> &[bool] {
        &self.admitted
    }
}

/// The sessions model of one scenario.
#[derive(Clone, Debug)]
pub struct SessionsModel {
    /// The scenario.
    pub scenario: SessionsScenario,
    session: SessionId,
}

impl SessionsModel {
    /// The model of `scenario`.
    pub fn new(scenario: SessionsScenario) -> Self {
        SessionsModel {
            scenario,
            session: SessionId::from_bits(0x5e55),
        }
    }

    fn settle(&self, s: &mut SessionsState) {
        for (i, g) in s.gates.iter_mut().enumerate() {
            while let Some(op) = g.poll_op() {
                s.to_store.entry(i as u16).or_default().push_back(op);
            }
            while let Some((_, v)) = g.poll_verdict() {
                s.admitted.push(matches!(v, Verdict::Admitted { .. }));
            }
            while g.poll_deleted().is_some() {}
        }
        while let Some((to, out)) = s.store.poll_output() {
            if let Output::Reply(r) = out {
                match &r {
                    StoreReply::Session {
                        record: Some(_), ..
                    } if s.ended => s.resurrected = true,
                    StoreReply::Deleted { existed: true, .. } => s.ended = true,
                    _ => {}
                }
                s.from_store.entry(to.0).or_default().push_back(r);
            }
        }
        s.to_store.retain(|_, q| !q.is_empty());
        s.from_store.retain(|_, q| !q.is_empty());
    }
}

impl Explorable for SessionsModel {
    type State = SessionsState;
    type Action = SessionsAction;
    type Violation = SessionsViolation;

    fn initial(&self) -> SessionsState {
        let sc = &self.scenario;
        let mut store = MemoryStore::new(16);
        let put = StoreOp::PutSession {
            session: self.session.clone(),
            record: "version 2025-11-25".to_string().into(),
            ttl_ms: sc.ttl_ms,
        };
        store.handle_op(InstanceId(0), put, Instant::ZERO);
        while store.poll_output().is_some() {}
        SessionsState {
            store,
            gates: (0..2)
                .map(|_| SessionGate::new(sc.refresh, sc.ttl_ms))
                .collect(),
            to_store: BTreeMap::new(),
            from_store: BTreeMap::new(),
            requests_left: sc.requests,
            delete_left: sc.delete,
            expiry_left: sc.expiry,
            now: Instant::ZERO,
            ended: false,
            resurrected: false,
            admitted: Vec::new(),
        }
    }

    fn enabled(&self, s: &SessionsState, out: &mut Vec<SessionsAction>) {
        if s.requests_left > 0 {
            for instance in 0..s.gates.len() as u16 {
                out.push(SessionsAction::Request { instance });
            }
        }
        if s.delete_left {
            out.push(SessionsAction::Delete);
        }
        for &instance in s.to_store.keys() {
            out.push(SessionsAction::Execute { instance });
        }
        for &instance in s.from_store.keys() {
            out.push(SessionsAction::Receive { instance });
        }
        if s.expiry_left && s.store.session_expires_at(&self.session, s.now).is_some() {
            out.push(SessionsAction::Expire);
        }
    }

    fn step(&self, s: &SessionsState, a: &SessionsAction) -> Option<SessionsState> {
        let mut n = s.clone();
        match a {
            SessionsAction::Request { instance } => {
                n.requests_left = n.requests_left.checked_sub(1)?;
                let tag = (self.scenario.requests - n.requests_left) as u64;
                // Whether the store counts an adoption changes no verdict
                // of F4; not counting keeps equal situations equal.
                n.gates
                    .get_mut(*instance as usize)?
                    .check(tag, self.session.clone(), false);
            }
            SessionsAction::Delete => {
                if !std::mem::take(&mut n.delete_left) {
                    return None;
                }
                n.gates[1].delete(0, self.session.clone());
            }
            SessionsAction::Execute { instance } => {
                let op = n.to_store.get_mut(instance)?.pop_front()?;
                n.store.handle_op(InstanceId(*instance), op, n.now);
            }
            SessionsAction::Receive { instance } => {
                let reply = n.from_store.get_mut(instance)?.pop_front()?;
                n.gates.get_mut(*instance as usize)?.handle_reply(reply);
            }
            SessionsAction::Expire => {
                n.now = n.store.session_expires_at(&self.session, n.now)?;
                n.expiry_left = false;
                n.ended = true;
            }
        }
        self.settle(&mut n);
        Some(n)
    }

    fn fingerprint(&self, s: &SessionsState) -> u64 {
        fixed_keys().hash_one(s)
    }

    fn violation(&self, s: &SessionsState) -> Option<SessionsViolation> {
        s.resurrected.then_some(SessionsViolation::Resurrected)
    }

    fn depth_bound(&self) -> usize {
        self.scenario.depth
    }

    fn time_of(&self, s: &SessionsState) -> u64 {
        s.now.as_millis()
    }
}
