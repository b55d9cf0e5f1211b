//! Who is calling: the identity a transport authenticated, as the server
//! core sees it.
//!
//! The core does no authentication. A shell (or the application's hook in
//! it) checks whatever credential the request carries and hands the core
//! the [`Principal`] it established, in a [`Caller`]. A session records the
//! principal of its `initialize`; a request naming the session from anyone
//! else is answered exactly as a request naming no live session (404), so a
//! session id learned by another client is neither a key nor an oracle
//! (python-sdk CVE-2026-52869, the session hijacks of 2026).
//!
//! A principal is the *subject*, never the credential: a refreshed OAuth
//! token of the same subject is the same principal and keeps its session
//! (binding to the token bytes ended every session at each refresh,
//! toolhive #5306).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

/// An authenticated identity: opaque to the core, compared for equality
/// only (a subject claim, a client id, an account name).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Principal(Arc<str>);

impl Serialize for Principal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Principal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Principal::new)
    }
}

impl Principal {
    /// The principal named `name`.
    pub fn new(name: impl AsRef<str>) -> Self {
        Principal(Arc::from(name.as_ref()))
    }

    /// Its name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Principal({:?})", &*self.0)
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Principal {
    fn from(name: &str) -> Self {
        Principal::new(name)
    }
}

/// Who sent one request, as far as the transport knows: the peer's address
/// (admission's per-peer quota) and the authenticated principal, if any.
/// `Caller::default()` is an anonymous request from an unknown address.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Caller {
    /// The peer's address.
    pub peer: Option<IpAddr>,
    /// The principal the transport authenticated; `None` when it does no
    /// authentication (or the request carried no credential and the
    /// application lets such requests through).
    pub principal: Option<Principal>,
}

impl Caller {
    /// A request from `peer`, unauthenticated.
    pub fn from_peer(peer: Option<IpAddr>) -> Self {
        Caller {
            peer,
            principal: None,
        }
    }

    /// The same caller, authenticated as `principal`.
    pub fn with_principal(mut self, principal: Option<Principal>) -> Self {
        self.principal = principal;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_compare_by_name_and_serialize_as_a_string() {
        let a = Principal::new("alice");
        assert_eq!(a, Principal::from("alice"));
        assert_ne!(a, Principal::new("bob"));
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"alice\"");
        let back: Principal = serde_json::from_str("\"alice\"").unwrap();
        assert_eq!(back, a);
        assert_eq!(a.to_string(), "alice");
    }

    #[test]
    fn a_caller_keeps_its_peer_when_authenticated() {
        let peer = Some(IpAddr::from([127, 0, 0, 1]));
        let c = Caller::from_peer(peer).with_principal(Some("alice".into()));
        assert_eq!(c.peer, peer);
        assert_eq!(c.principal, Some(Principal::new("alice")));
        assert_eq!(Caller::default().principal, None);
    }
}
