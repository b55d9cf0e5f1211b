//! Authentication at the shell's edge: the application's hook from a
//! request's head to its [`Principal`], the `401` that refuses one, and the
//! resource's metadata (RFC 9728), the flow MCP's authorization spec asks of
//! a resource server. What every answer says is the core's
//! ([`mcp_streamable::auth`]); this module only asks the hook and writes.
//!
//! Three ways to tell the shell who is calling, checked in this order:
//! 1. an [`Authenticate`] hook in [`ServerOptions::auth`](crate::ServerOptions::auth)
//!    (a closure, [`StaticTokens`], a JWT check of your own;
//!    `examples/auth_jwt.rs`);
//! 2. else a [`Principal`] in the request's extensions, put there by a
//!    tower layer in front of the mounted [`McpService`](crate::McpService)
//!    (your own middleware, or a gateway's);
//! 3. else nobody: the request is anonymous, and so are the sessions it opens.

use crate::body::ResponseBody;
use crate::server::response;
use bytes::Bytes;
use hyper::http::request::Parts;
pub use mcp_streamable::auth::{Challenge, Refusal, ResourceMetadata, StaticTokens};
use mcp_streamable::headers;
pub use mcp_streamable::principal::Principal;
use mcp_streamable::server::wire::Write;
use std::fmt;
use std::sync::Arc;

/// The application's authentication: who sent a request, from its head (the
/// `Authorization` header, a client certificate in the extensions, …), or
/// why it is refused. `Ok(None)` lets an anonymous request through.
///
/// Return the *subject* the credential stands for, not the credential: a
/// refreshed token of the same subject must keep its sessions.
pub trait Authenticate: Send + Sync + 'static {
    /// Who sent the request whose head is `parts`.
    fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Refusal>;
}

impl<F> Authenticate for F
where
    F: Fn(&Parts) -> Result<Option<Principal>, Refusal> + Send + Sync + 'static,
{
    fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Refusal> {
        self(parts)
    }
}

/// A fixed table of bearer tokens (`serve --auth-token TOKEN=PRINCIPAL`):
/// a request without one of them is refused.
impl Authenticate for StaticTokens {
    fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Refusal> {
        let mut values = parts.headers.get_all(headers::AUTHORIZATION).iter();
        let first = values.next();
        if values.next().is_some() {
            return Err(Refusal::InvalidToken(
                "more than one Authorization header".into(),
            ));
        }
        let value = first.map(|v| v.to_str().unwrap_or(""));
        StaticTokens::authenticate(self, value).map(Some)
    }
}

/// The shell's authentication settings: the hook (none by default) and the
/// metadata the `401`s point to.
#[derive(Clone, Default)]
pub struct Auth {
    hook: Option<Arc<dyn Authenticate>>,
    metadata: Option<Arc<ResourceMetadata>>,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("hook", &self.hook.as_ref().map(|_| "…"))
            .field("metadata", &self.metadata)
            .finish()
    }
}

impl Auth {
    /// Every request through by `hook`.
    pub fn with(hook: impl Authenticate) -> Self {
        Auth {
            hook: Some(Arc::new(hook)),
            metadata: None,
        }
    }

    /// The same, its refusals naming `metadata`, which the accept loop
    /// serves at its well-known path ([`ResourceMetadata::path`]; mount
    /// [`Auth::metadata_response`] yourself behind a router of your own).
    pub fn metadata(mut self, metadata: ResourceMetadata) -> Self {
        self.metadata = Some(Arc::new(metadata));
        self
    }

    /// Whether a hook is set.
    pub fn is_on(&self) -> bool {
        self.hook.is_some()
    }

    /// Who sent the request whose head is `parts`, or the refusal to answer
    /// with.
    pub fn principal(&self, parts: &Parts) -> Result<Option<Principal>, Box<Challenge>> {
        let Some(hook) = &self.hook else {
            return Ok(parts.extensions.get::<Principal>().cloned());
        };
        hook.authenticate(parts).map_err(|refusal| {
            Box::new(Challenge {
                refusal,
                resource_metadata: self.metadata.as_ref().map(|m| m.url()),
            })
        })
    }

    /// The response to a request for the metadata (a GET of its
    /// well-known path), if that is what `method` and `path` ask (and
    /// metadata is set).
    pub fn metadata_response(
        &self,
        method: &hyper::Method,
        path: &str,
    ) -> Option<hyper::Response<ResponseBody>> {
        let m = self.metadata.as_ref()?;
        if method != hyper::Method::GET || !m.is_requested_at(path) {
            return None;
        }
        Some(whole(m.write()))
    }
}

/// The refusal for `challenge`, as hyper writes it.
pub(crate) fn refused(challenge: &Challenge) -> hyper::Response<ResponseBody> {
    whole(challenge.write())
}

fn whole(w: Write) -> hyper::Response<ResponseBody> {
    let Write::Whole { head, body } = w else {
        unreachable!("the core writes a refusal and a document whole")
    };
    response(head, ResponseBody::full(Bytes::from(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(auth: &[&str]) -> Parts {
        let mut b = hyper::Request::post("/mcp");
        for a in auth {
            b = b.header("authorization", *a);
        }
        b.body(()).expect("request").into_parts().0
    }

    #[test]
    fn the_hook_decides_and_its_refusal_names_the_metadata() {
        let auth = Auth::with(StaticTokens::new().with("t", Principal::new("alice"))).metadata(
            ResourceMetadata::new("http://127.0.0.1:9/mcp", vec!["http://as".into()]),
        );
        assert_eq!(
            auth.principal(&parts(&["Bearer t"])).ok(),
            Some(Some(Principal::new("alice")))
        );
        let c = auth.principal(&parts(&[])).expect_err("refused");
        assert_eq!(c.refusal, Refusal::NoCredentials);
        let r = refused(&c);
        assert_eq!(r.status(), 401);
        assert_eq!(
            r.headers()["www-authenticate"],
            "Bearer resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\""
        );
        let two = auth.principal(&parts(&["Bearer t", "Bearer t"]));
        assert!(matches!(two, Err(c) if matches!(c.refusal, Refusal::InvalidToken(_))));
    }

    #[test]
    fn without_a_hook_a_principal_in_the_extensions_is_taken() {
        let auth = Auth::default();
        assert_eq!(auth.principal(&parts(&["Bearer t"])).ok(), Some(None));
        let mut p = parts(&[]);
        p.extensions.insert(Principal::new("from-a-layer"));
        assert_eq!(
            auth.principal(&p).ok(),
            Some(Some(Principal::new("from-a-layer")))
        );
    }

    #[test]
    fn the_metadata_is_served_at_its_path_only() {
        let auth = Auth::default().metadata(ResourceMetadata::new(
            "http://127.0.0.1:9/mcp",
            vec!["http://as".into()],
        ));
        let get = hyper::Method::GET;
        let r = auth
            .metadata_response(&get, "/.well-known/oauth-protected-resource/mcp")
            .expect("served");
        assert_eq!(r.status(), 200);
        assert!(auth.metadata_response(&get, "/mcp").is_none());
        assert!(auth
            .metadata_response(
                &hyper::Method::POST,
                "/.well-known/oauth-protected-resource"
            )
            .is_none());
        assert!(auth
            .metadata_response(&get, "/.well-known/oauth-protected-resource")
            .is_some());
    }
}
