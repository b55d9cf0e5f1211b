//! An MCP server that accepts JWT bearer tokens: the shell's `Authenticate`
//! hook validates each token with `jsonwebtoken` (signature, expiry,
//! audience, issuer) and hands the core its subject as the principal, so each
//! session serves only the subject that opened it, whatever token of that
//! subject comes next. A request without a valid token is refused 401 with a
//! challenge naming the resource's metadata (RFC 9728), which the server
//! publishes at its well-known path.
//!
//! ```sh
//! cargo run --release --example auth_jwt -- --addr 127.0.0.1:3003 --secret s3cret
//! ```
//!
//! It prints its URL and a token for the subject `alice` (HS256, one hour),
//! to try with any client that sends `Authorization: Bearer …`. A real
//! deployment verifies its authorization server's tokens (RS256 and a JWKS
//! instead of a shared secret); only the hook changes.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use mcp_streamable_hyper::auth::{Auth, Principal, Refusal, ResourceMetadata};
use mcp_streamable_hyper::{EverythingApp, Server, ServerOptions};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// The issuer the tokens must name (a real one is the authorization server's URL).
const ISSUER: &str = "https://auth.example.com";

/// What the hook reads of a token.
#[derive(Serialize, Deserialize)]
struct Claims {
    sub: String,
    aud: String,
    iss: String,
    exp: u64,
}

/// The hook: `Authorization: Bearer <JWT>` checked against `key`, for
/// `resource` (the token's audience); the principal is the subject.
fn jwt_hook(
    key: DecodingKey,
    resource: String,
) -> impl Fn(&hyper::http::request::Parts) -> Result<Option<Principal>, Refusal> + Send + Sync {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.set_audience(&[resource]);
    validation.set_issuer(&[ISSUER]);
    move |parts| {
        let value = parts
            .headers
            .get(hyper::header::AUTHORIZATION)
            .ok_or(Refusal::NoCredentials)?;
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| Refusal::InvalidToken("not a bearer token".into()))?;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| Refusal::InvalidToken(e.to_string()))?;
        Ok(Some(Principal::new(data.claims.sub)))
    }
}

/// A token for `sub`, valid for an hour (what an authorization server would issue).
// An example process, not a core: it reads the wall clock to date its token.
#[allow(clippy::disallowed_methods)]
fn mint(secret: &[u8], sub: &str, resource: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() + 3600)
        .unwrap_or(0);
    let claims = Claims {
        sub: sub.into(),
        aud: resource.into(),
        iss: ISSUER.into(),
        exp,
    };
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret),
    )
    .expect("an HS256 token")
}

#[tokio::main]
async fn main() {
    let (addr, secret) = args();
    let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
    let local = listener.local_addr().expect("address");
    let resource = format!("http://{local}/mcp");
    let hook = jwt_hook(
        DecodingKey::from_secret(secret.as_bytes()),
        resource.clone(),
    );
    let options = ServerOptions {
        auth: Auth::with(hook)
            .metadata(ResourceMetadata::new(resource.clone(), vec![ISSUER.into()])),
        ..ServerOptions::default()
    };
    let server = Server::serve(listener, options, EverythingApp::default, None);
    // One line: a test reads the URL off it and closes the pipe.
    let token = mint(secret.as_bytes(), "alice", &resource);
    println!("serving {resource} (a token for alice, one hour: {token})");
    let _ = tokio::signal::ctrl_c().await;
    server.shutdown().await;
}

fn args() -> (SocketAddr, String) {
    let mut addr: SocketAddr = "127.0.0.1:3003".parse().expect("address");
    let mut secret = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--addr" => {
                addr = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--addr HOST:PORT")
            }
            "--secret" => secret = it.next(),
            other => panic!("unknown argument {other:?} (--addr HOST:PORT --secret S)"),
        }
    }
    (
        addr,
        secret.expect("--secret S: the key the tokens are signed with"),
    )
}
