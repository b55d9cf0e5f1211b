//! Header names as constants, lower-case (HTTP header names are case-insensitive;
//! 2025-11-25 spells `MCP-Session-Id`, older versions `Mcp-Session-Id`).

/// The session id header (R19–R22).
pub const MCP_SESSION_ID: &str = "mcp-session-id";
/// The negotiated protocol version header (R29–R31).
pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The SSE resumption cursor (R34).
pub const LAST_EVENT_ID: &str = "last-event-id";
/// The request's JSON-RPC method (2026-07-28: every request).
pub const MCP_METHOD: &str = "mcp-method";
/// The tool or prompt name, or the resource URI (2026-07-28: `tools/call`,
/// `prompts/get`, `resources/read`).
pub const MCP_NAME: &str = "mcp-name";
/// Media types the client accepts (R2, R12).
pub const ACCEPT: &str = "accept";
/// Media type of a body.
pub const CONTENT_TYPE: &str = "content-type";
/// Browser origin, validated against DNS rebinding (R41, R42).
pub const ORIGIN: &str = "origin";
/// Target host, validated with the origin.
pub const HOST: &str = "host";
/// Methods allowed, on a 405.
pub const ALLOW: &str = "allow";
/// Length of a body.
pub const CONTENT_LENGTH: &str = "content-length";
/// Asks proxies not to buffer an SSE stream.
pub const X_ACCEL_BUFFERING: &str = "x-accel-buffering";
/// Cache directive sent on SSE streams.
pub const CACHE_CONTROL: &str = "cache-control";

/// `WWW-Authenticate`, on a refusal by authentication ([`crate::auth`]).
pub const WWW_AUTHENTICATE: &str = "www-authenticate";

/// `Authorization`: read by the shells' authentication hooks, never by the cores.
pub const AUTHORIZATION: &str = "authorization";

/// The request headers the cores read (every other one is no input of
/// theirs): the shells copy only these into a [`RequestHead`](crate::head::RequestHead).
pub const READ_ON_REQUESTS: [&str; 10] = [
    MCP_SESSION_ID,
    MCP_PROTOCOL_VERSION,
    LAST_EVENT_ID,
    MCP_METHOD,
    MCP_NAME,
    ACCEPT,
    CONTENT_TYPE,
    ORIGIN,
    HOST,
    CONTENT_LENGTH,
];

/// The constant for header `name` (any case) if the cores read it on
/// requests ([`READ_ON_REQUESTS`]).
pub fn read_on_requests(name: &str) -> Option<&'static str> {
    READ_ON_REQUESTS
        .into_iter()
        .find(|known| known.eq_ignore_ascii_case(name))
}

/// Header `name` as the cores keep it when they read it on requests: a
/// [`READ_ON_REQUESTS`] constant, or any other `Mcp-*` header lower-cased
/// (`Mcp-Param-*` carry a tool's arguments, SEP-2243, and a repeated
/// `Mcp-*` header is refused); `None` for a header that is no input of
/// theirs, which a shell need not copy.
pub fn kept_on_requests(name: &str) -> Option<std::borrow::Cow<'static, str>> {
    if let Some(known) = read_on_requests(name) {
        return Some(std::borrow::Cow::Borrowed(known));
    }
    is_mcp(name).then(|| std::borrow::Cow::Owned(name.to_ascii_lowercase()))
}

/// Whether header `name` is an `Mcp-*` header (any case).
pub fn is_mcp(name: &str) -> bool {
    name.len() > 4 && name.as_bytes()[..4].eq_ignore_ascii_case(b"mcp-")
}

/// `application/json`.
pub const MIME_JSON: &str = "application/json";
/// `text/event-stream`.
pub const MIME_SSE: &str = "text/event-stream";
