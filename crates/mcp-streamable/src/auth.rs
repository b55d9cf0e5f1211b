//! Authentication at the transport's edge: what every shell answers, decided
//! here once.
//!
//! MCP's authorization spec makes an HTTP server an OAuth 2.1 *resource
//! server*: it validates the bearer token a client sends, refuses a request
//! without a valid one with `401` and a `WWW-Authenticate: Bearer
//! resource_metadata="…"` challenge, and serves its OAuth 2.0 Protected
//! Resource Metadata (RFC 9728) at the well-known path that challenge names,
//! where the client finds its authorization server.
//!
//! The cores validate no token: that is the application's (a hook in the
//! shell: a JWT check, an introspection, a static table), which hands the
//! core the [`Principal`] it established. What is the same for every
//! application is here: the challenge ([`Challenge`]), the metadata document
//! and its paths ([`ResourceMetadata`]), their bytes ([`Write`]), and a
//! static bearer-token table ([`StaticTokens`]) for demonstrations and tests.
//!
//! ```text
//!  request ──hook──▶ Ok(principal) ──▶ the core (the principal binds the session)
//!                └─▶ Err(Refusal)  ──▶ 401/403 + WWW-Authenticate (Challenge::write)
//!  GET /.well-known/oauth-protected-resource[/path] ──▶ ResourceMetadata::write
//! ```

use crate::error::RequestError;
use crate::headers;
use crate::principal::Principal;
use crate::server::wire::{WireHead, Write};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The well-known path of OAuth 2.0 Protected Resource Metadata (RFC 9728 §3).
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// Why a request was refused by the application's authentication.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Refusal {
    /// No credential at all (RFC 6750 §3.1: the challenge carries no error
    /// code; the client starts its authorization flow).
    NoCredentials,
    /// A credential that is malformed, expired, revoked or not ours
    /// (`invalid_token`); the text says why, for the client's log.
    InvalidToken(String),
    /// A valid token without the scope the request needs
    /// (`insufficient_scope`, 403); the scopes to ask for.
    InsufficientScope(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NoCredentials => f.write_str("no credentials"),
            Refusal::InvalidToken(why) => f.write_str(why),
            Refusal::InsufficientScope(scope) => write!(f, "scope {scope:?} required"),
        }
    }
}

/// A refusal as the client is told it: the status, and the
/// `WWW-Authenticate` challenge naming where the resource's metadata is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Challenge {
    /// Why.
    pub refusal: Refusal,
    /// The URL of the resource's metadata ([`ResourceMetadata::url`]), if
    /// the server publishes it (MCP servers MUST).
    pub resource_metadata: Option<String>,
}

impl Challenge {
    /// 401, or 403 for a missing scope (RFC 6750 §3.1).
    pub fn status(&self) -> u16 {
        match self.refusal {
            Refusal::InsufficientScope(_) => 403,
            _ => 401,
        }
    }

    /// The `WWW-Authenticate` value: `Bearer`, then `resource_metadata`,
    /// `error`, `error_description` and `scope` as they apply, each a
    /// quoted string (quotes and backslashes escaped, control characters
    /// dropped, so nothing the application wrote can split the header).
    pub fn header_value(&self) -> String {
        let mut params: Vec<(&str, &str)> = Vec::new();
        if let Some(url) = &self.resource_metadata {
            params.push(("resource_metadata", url));
        }
        match &self.refusal {
            Refusal::NoCredentials => {}
            Refusal::InvalidToken(why) => {
                params.push(("error", "invalid_token"));
                params.push(("error_description", why));
            }
            Refusal::InsufficientScope(scope) => {
                params.push(("error", "insufficient_scope"));
                params.push(("scope", scope));
            }
        }
        let mut out = String::from("Bearer");
        for (i, (name, value)) in params.iter().enumerate() {
            out.push_str(if i == 0 { " " } else { ", " });
            out.push_str(name);
            out.push_str("=\"");
            for c in value.chars().filter(|c| !c.is_control()) {
                if c == '"' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        }
        out
    }

    /// The whole response: the status, the challenge, and the JSON-RPC
    /// error every refusal of this crate carries.
    pub fn write(&self) -> Write {
        let error = RequestError::Unauthenticated(Box::new(self.clone()));
        Write::refusal(&error)
    }
}

/// OAuth 2.0 Protected Resource Metadata (RFC 9728 §2) of one MCP endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceMetadata {
    /// The resource's identifier: the endpoint's canonical URL
    /// (`https://mcp.example.com/mcp`), what clients name as `resource`
    /// (RFC 8707) when they ask for a token.
    pub resource: String,
    /// The authorization servers that issue tokens for it.
    pub authorization_servers: Vec<String>,
    /// Scopes clients may ask for (left out of the document when empty).
    pub scopes_supported: Vec<String>,
    /// A name for people.
    pub resource_name: Option<String>,
}

impl ResourceMetadata {
    /// Metadata for `resource`, issued for by `authorization_servers`.
    pub fn new(resource: impl Into<String>, authorization_servers: Vec<String>) -> Self {
        ResourceMetadata {
            resource: resource.into(),
            authorization_servers,
            scopes_supported: Vec::new(),
            resource_name: None,
        }
    }

    /// `resource` split into its origin (`scheme://authority`) and path
    /// (`""` for none).
    fn split(&self) -> (&str, &str) {
        let r = self.resource.as_str();
        let after_scheme = r.find("://").map(|i| i + 3).unwrap_or(0);
        let path_at = r[after_scheme..]
            .find(['/', '?', '#'])
            .map(|i| after_scheme + i)
            .unwrap_or(r.len());
        let path = r[path_at..].split(['?', '#']).next().unwrap_or("");
        (&r[..path_at], path.trim_end_matches('/'))
    }

    /// Where the document is served (RFC 9728 §3.1: the well-known prefix
    /// inserted before the resource's path): `/.well-known/oauth-protected-resource/mcp`
    /// for `https://host/mcp`.
    pub fn path(&self) -> String {
        format!("{WELL_KNOWN}{}", self.split().1)
    }

    /// Whether a GET for `path` asks for this document: its own path, or
    /// the bare well-known path (which clients of the 2025-06-18 spec try
    /// first on a host serving one resource).
    pub fn is_requested_at(&self, path: &str) -> bool {
        path == self.path() || path == WELL_KNOWN
    }

    /// The document's absolute URL, what a challenge names.
    pub fn url(&self) -> String {
        format!("{}{}", self.split().0, self.path())
    }

    /// The JSON document.
    pub fn document(&self) -> Vec<u8> {
        let mut doc = serde_json::json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            doc["scopes_supported"] = serde_json::json!(self.scopes_supported);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = serde_json::json!(name);
        }
        doc.to_string().into_bytes()
    }

    /// The whole `200` response serving the document.
    pub fn write(&self) -> Write {
        Write::Whole {
            head: WireHead {
                status: 200,
                headers: vec![(headers::CONTENT_TYPE, Cow::Borrowed(headers::MIME_JSON))],
            },
            body: self.document(),
        }
    }

    /// A challenge for `refusal` that names this document.
    pub fn challenge(&self, refusal: Refusal) -> Challenge {
        Challenge {
            refusal,
            resource_metadata: Some(self.url()),
        }
    }
}

/// A fixed table of bearer tokens, each naming its principal: enough to try
/// the flow with any client configured with a token, and to test it. Not an
/// authorization server: tokens never expire, and nothing issues them.
/// Tokens are compared in constant time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StaticTokens {
    tokens: Vec<(Vec<u8>, Principal)>,
}

impl StaticTokens {
    /// An empty table (which refuses everything).
    pub fn new() -> Self {
        StaticTokens::default()
    }

    /// The table with `token` standing for `principal`.
    pub fn with(mut self, token: &str, principal: Principal) -> Self {
        self.tokens.push((token.as_bytes().to_vec(), principal));
        self
    }

    /// Parses `TOKEN=PRINCIPAL` (the command line's `--auth-token`).
    pub fn parse_entry(entry: &str) -> Result<(String, Principal), String> {
        match entry.split_once('=') {
            Some((token, principal)) if !token.is_empty() && !principal.is_empty() => {
                Ok((token.to_owned(), Principal::new(principal)))
            }
            _ => Err(format!("{entry:?} is not TOKEN=PRINCIPAL")),
        }
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The principal of an `Authorization` header's value
    /// (`Bearer <token>`, the scheme in any case), or why not.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Principal, Refusal> {
        let Some(value) = authorization else {
            return Err(Refusal::NoCredentials);
        };
        let token = match value.trim().split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
            _ => return Err(Refusal::InvalidToken("not a bearer token".into())),
        };
        let mut found = None;
        for (known, principal) in &self.tokens {
            // Every entry compared, each in constant time.
            if bool::from(subtle::ConstantTimeEq::ct_eq(
                known.as_slice(),
                token.as_bytes(),
            )) {
                found = Some(principal);
            }
        }
        found
            .cloned()
            .ok_or_else(|| Refusal::InvalidToken("unknown token".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> ResourceMetadata {
        ResourceMetadata::new(
            "https://mcp.example.com/mcp",
            vec!["https://auth.example.com".into()],
        )
    }

    #[test]
    fn metadata_lives_at_the_well_known_path_of_the_resource() {
        let m = meta();
        assert_eq!(m.path(), "/.well-known/oauth-protected-resource/mcp");
        assert_eq!(
            m.url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert!(m.is_requested_at("/.well-known/oauth-protected-resource/mcp"));
        assert!(m.is_requested_at(WELL_KNOWN));
        assert!(!m.is_requested_at("/mcp"));
        let root = ResourceMetadata::new("http://127.0.0.1:8080/", vec![]);
        assert_eq!(root.path(), WELL_KNOWN);
        assert_eq!(
            root.url(),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
        let doc: serde_json::Value = serde_json::from_slice(&m.document()).unwrap();
        assert_eq!(doc["resource"], "https://mcp.example.com/mcp");
        assert_eq!(doc["authorization_servers"][0], "https://auth.example.com");
        assert_eq!(doc["bearer_methods_supported"][0], "header");
        assert!(doc.get("scopes_supported").is_none());
    }

    #[test]
    fn a_challenge_names_the_metadata_and_cannot_split_the_header() {
        let c = meta().challenge(Refusal::NoCredentials);
        assert_eq!(c.status(), 401);
        assert_eq!(
            c.header_value(),
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
        );
        let bad = meta().challenge(Refusal::InvalidToken("bad \"x\"\r\nSet-Cookie: a".into()));
        let v = bad.header_value();
        assert!(v.contains("error=\"invalid_token\""));
        assert!(v.contains("error_description=\"bad \\\"x\\\"Set-Cookie: a\""));
        assert!(!v.contains('\n') && !v.contains('\r'));
        let scope = meta().challenge(Refusal::InsufficientScope("tools".into()));
        assert_eq!(scope.status(), 403);
        let Write::Whole { head, body } = bad.write() else {
            panic!("a refusal is whole");
        };
        assert_eq!(head.status, 401);
        assert_eq!(head.header("www-authenticate"), Some(v.as_str()));
        let m: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(m["error"]["code"], crate::jsonrpc::TRANSPORT_ERROR);
        assert_eq!(
            m["error"]["message"], "authentication failed: bad \"x\"\r\nSet-Cookie: a",
            "in the JSON body, escaped"
        );
    }

    #[test]
    fn static_tokens_name_their_principal_and_refuse_the_rest() {
        let t = StaticTokens::new()
            .with("s3cret", Principal::new("alice"))
            .with("other", Principal::new("bob"));
        assert_eq!(
            t.authenticate(Some("Bearer s3cret")),
            Ok(Principal::new("alice"))
        );
        assert_eq!(
            t.authenticate(Some("bearer other")),
            Ok(Principal::new("bob"))
        );
        assert_eq!(t.authenticate(None), Err(Refusal::NoCredentials));
        assert!(matches!(
            t.authenticate(Some("Bearer s3cre")),
            Err(Refusal::InvalidToken(_))
        ));
        assert!(matches!(
            t.authenticate(Some("Basic s3cret")),
            Err(Refusal::InvalidToken(_))
        ));
        assert_eq!(
            StaticTokens::parse_entry("tok=alice"),
            Ok(("tok".into(), Principal::new("alice")))
        );
        assert!(StaticTokens::parse_entry("tok").is_err());
        assert!(StaticTokens::parse_entry("=alice").is_err());
    }
}
