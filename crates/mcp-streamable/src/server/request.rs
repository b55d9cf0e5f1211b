//! The HTTP request head as the server core sees it, and the checks that need
//! nothing but the head (method, Origin/Host, Accept, Content-Type, version).

use crate::error::RequestError;
use crate::head::{Method, RequestHead};
use crate::headers;
use crate::version::ProtocolVersion;
use serde::{Deserialize, Serialize};

/// Which origins and hosts may talk to the server (R41–R43).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct AllowList {
    /// Allowed host names (without port); empty allows any.
    pub hosts: Vec<String>,
    /// Refuse a head without `Host` (400). HTTP/1.1 requires one (RFC 9112
    /// §3.2) and the HTTP/1.1 shells turn this on; off in the core's default,
    /// since a transport may carry the authority elsewhere or not at all.
    pub host_required: bool,
}

impl Default for AllowList {
    /// Loopback only.
    fn default() -> Self {
        AllowList {
            hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            host_required: false,
        }
    }
}

impl AllowList {
    /// Allows every host and origin.
    pub fn any() -> Self {
        AllowList {
            hosts: Vec::new(),
            host_required: false,
        }
    }

    fn allows_host(&self, host: &str) -> bool {
        if self.hosts.is_empty() {
            return true;
        }
        let name = strip_port(host);
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(name))
    }

    /// Checks `Origin` (when present) and `Host` (when present; required
    /// under `host_required`) against the allowed hosts. A repeated `Host`
    /// or `Origin` is [`check_singletons`]'s to refuse, which runs first:
    /// with two values, a check of one would let the other through.
    pub(crate) fn check(&self, head: &RequestHead) -> Result<(), RequestError> {
        if self.host_required && head.header(headers::HOST).is_none() {
            return Err(RequestError::BadHead("no Host header"));
        }
        if let Some(origin) = head.header(headers::ORIGIN) {
            let host = origin
                .split_once("://")
                .map(|(_, rest)| rest)
                .unwrap_or(origin)
                .split('/')
                .next()
                .unwrap_or("");
            if origin != "null" && !self.allows_host(host)
                || origin == "null" && !self.hosts.is_empty()
            {
                return Err(RequestError::ForbiddenOrigin(origin.to_owned()));
            }
        }
        if let Some(host) = head.header(headers::HOST) {
            if !self.allows_host(host) {
                return Err(RequestError::ForbiddenHost(host.to_owned()));
            }
        }
        Ok(())
    }
}

/// The headers a request may carry once at most, each with its refusal: a
/// second value is ambiguous (two session ids: which session? two
/// versions, two content types: which one was checked?), and a proxy in
/// front may have read the other one, so the head is refused (400) rather
/// than either being picked; for `Host` and `Origin`, the allow-list would
/// check one value and let the other through. `Content-Length` is the HTTP
/// layer's (RFC 9112 §6.3 lets equal repeats through).
const SINGLETONS: [(&str, &str); 8] = [
    (headers::HOST, "more than one Host header"),
    (headers::ORIGIN, "more than one Origin header"),
    (
        headers::MCP_SESSION_ID,
        "more than one Mcp-Session-Id header",
    ),
    (
        headers::MCP_PROTOCOL_VERSION,
        "more than one MCP-Protocol-Version header",
    ),
    (headers::LAST_EVENT_ID, "more than one Last-Event-ID header"),
    (headers::MCP_METHOD, "more than one Mcp-Method header"),
    (headers::MCP_NAME, "more than one Mcp-Name header"),
    (headers::CONTENT_TYPE, "more than one Content-Type header"),
];

/// Refuses a head that repeats a header the cores read as one value
/// (`SINGLETONS`), or any other `Mcp-*` header (`Mcp-Param-*`: a proxy may
/// have routed on the value the server did not check).
pub fn check_singletons(head: &RequestHead) -> Result<(), RequestError> {
    let mut seen = 0u8;
    for (name, _) in &head.headers {
        let Some(i) = SINGLETONS
            .iter()
            .position(|(single, _)| single.eq_ignore_ascii_case(name))
        else {
            continue;
        };
        if seen & (1 << i) != 0 {
            return Err(RequestError::BadHead(SINGLETONS[i].1));
        }
        seen |= 1 << i;
    }
    match crate::tool_headers::repeated_mcp_header(head.headers.iter().map(|(n, _)| &**n)) {
        Some(_) => Err(RequestError::BadHead("a repeated Mcp-* header")),
        None => Ok(()),
    }
}

/// Why a request body was not read whole; the shell reports it with
/// [`ServerEndpoint::handle_unread_body`](super::ServerEndpoint::handle_unread_body).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnreadBody {
    /// Declared (`Content-Length`) or found to be over `body_max`: 413.
    TooLarge,
    /// Malformed framing, or it ended before its `Content-Length`: 400.
    Unreadable,
    /// It did not arrive within the shell's body read timeout: 408.
    TimedOut,
}

/// How many body bytes a shell may read for `head` before giving up: the
/// bound, or [`UnreadBody::TooLarge`] at once when `Content-Length` already
/// says more (so nothing is read, and no `100 Continue` is sent).
pub fn body_limit(head: &RequestHead, body_max: usize) -> Result<usize, UnreadBody> {
    match head
        .header(headers::CONTENT_LENGTH)
        .map(|v| v.trim().parse::<u64>())
    {
        Some(Ok(n)) if n > body_max as u64 => Err(UnreadBody::TooLarge),
        Some(Err(_)) => Err(UnreadBody::Unreadable),
        _ => Ok(body_max),
    }
}

fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        // [::1]:8080 -> [::1]
        return match rest.find(']') {
            Some(i) => &host[..i + 2],
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Whether an `Accept` value admits `mime` (exact type, `type/*` or `*/*`).
pub fn accepts(accept: Option<&str>, mime: &str) -> bool {
    let Some(accept) = accept else { return false };
    let major = mime.split('/').next().unwrap_or("");
    accept.split(',').any(|part| {
        let t = part.split(';').next().unwrap_or("").trim();
        t.eq_ignore_ascii_case(mime)
            || t == "*/*"
            || t.strip_suffix("/*")
                .is_some_and(|m| m.eq_ignore_ascii_case(major))
    })
}

/// Checks `Accept` for the method (R2, R12).
pub fn check_accept(head: &RequestHead) -> Result<(), RequestError> {
    let accept = head.header(headers::ACCEPT);
    match head.method {
        Method::Post
            if !accepts(accept, headers::MIME_JSON) || !accepts(accept, headers::MIME_SSE) =>
        {
            Err(RequestError::NotAcceptable(
                "both application/json and text/event-stream",
            ))
        }
        Method::Get if !accepts(accept, headers::MIME_SSE) => {
            Err(RequestError::NotAcceptable("text/event-stream"))
        }
        _ => Ok(()),
    }
}

/// Checks a POST's `Content-Type`.
pub fn check_content_type(head: &RequestHead) -> Result<(), RequestError> {
    let ct = head.header(headers::CONTENT_TYPE).unwrap_or("");
    let mime = ct.split(';').next().unwrap_or("").trim();
    if mime.eq_ignore_ascii_case(headers::MIME_JSON) {
        Ok(())
    } else {
        Err(RequestError::UnsupportedMediaType)
    }
}

/// The `MCP-Protocol-Version` header, if present: must be a supported version (R31).
/// A refusal names no request: see [`protocol_version_of`].
pub fn protocol_version(head: &RequestHead) -> Result<Option<ProtocolVersion>, RequestError> {
    head.header(headers::MCP_PROTOCOL_VERSION)
        .map(|v| {
            v.parse()
                .map_err(|version| RequestError::BadProtocolVersion { version, id: None })
        })
        .transpose()
}

/// [`protocol_version`] of a request with this body: a refusal echoes the
/// request's id when the body names one (JSON-RPC allows `null` only when
/// the id cannot be known; the body is parsed only on that error path).
pub fn protocol_version_of(
    head: &RequestHead,
    body: &[u8],
) -> Result<Option<ProtocolVersion>, RequestError> {
    protocol_version(head).map_err(|e| match e {
        RequestError::BadProtocolVersion { version, .. } => {
            let id = match crate::jsonrpc::parse_body(body, ProtocolVersion::LATEST_V2026) {
                Ok(crate::jsonrpc::Body::Single(crate::jsonrpc::Message::Request {
                    id, ..
                })) => Some(id),
                _ => None,
            };
            RequestError::BadProtocolVersion { version, id }
        }
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_matching() {
        assert!(accepts(
            Some("application/json, text/event-stream"),
            "text/event-stream"
        ));
        assert!(accepts(Some("*/*"), "application/json"));
        assert!(accepts(Some("text/*;q=0.5"), "text/event-stream"));
        assert!(!accepts(Some("application/json"), "text/event-stream"));
        assert!(!accepts(None, "application/json"));
    }

    /// `body_max` at, below and past its edge; a `Content-Length` that is
    /// no number is unreadable; without one the shell may read `body_max`.
    #[test]
    fn body_limit_refuses_a_declared_length_past_the_bound_only() {
        let with = |v: &str| RequestHead::new(Method::Post).with("Content-Length", v);
        assert_eq!(body_limit(&with("99"), 100), Ok(100));
        assert_eq!(body_limit(&with("100"), 100), Ok(100), "exactly the bound");
        assert_eq!(body_limit(&with(" 101 "), 100), Err(UnreadBody::TooLarge));
        assert_eq!(body_limit(&with("0"), 100), Ok(100));
        assert_eq!(body_limit(&with("ten"), 100), Err(UnreadBody::Unreadable));
        assert_eq!(body_limit(&with("-1"), 100), Err(UnreadBody::Unreadable));
        assert_eq!(body_limit(&RequestHead::new(Method::Post), 100), Ok(100));
    }

    /// `Origin: null` (a sandboxed page, a file) names no host: refused when
    /// hosts are listed, allowed when every origin is. A `Host` whose
    /// "port" is not digits is a name, not a name and a port.
    #[test]
    fn a_null_origin_and_a_host_with_a_non_numeric_port() {
        let null = RequestHead::new(Method::Post).with("Origin", "null");
        assert!(matches!(
            AllowList::default().check(&null),
            Err(RequestError::ForbiddenOrigin(_))
        ));
        assert_eq!(AllowList::any().check(&null), Ok(()));
        let odd = RequestHead::new(Method::Post).with("Host", "localhost:evil");
        assert!(matches!(
            AllowList::default().check(&odd),
            Err(RequestError::ForbiddenHost(_))
        ));
        assert_eq!(strip_port("localhost:8080"), "localhost");
        assert_eq!(strip_port("localhost:evil"), "localhost:evil");
    }

    #[test]
    fn origin_and_host() {
        let allow = AllowList::default();
        let ok = RequestHead::new(Method::Post)
            .with("Origin", "http://localhost:3000")
            .with("Host", "127.0.0.1:8080");
        assert_eq!(allow.check(&ok), Ok(()));
        let evil = RequestHead::new(Method::Post).with("Origin", "http://evil.example.com");
        assert!(matches!(
            allow.check(&evil),
            Err(RequestError::ForbiddenOrigin(_))
        ));
        let evil_host = RequestHead::new(Method::Post).with("Host", "evil.example.com");
        assert!(matches!(
            allow.check(&evil_host),
            Err(RequestError::ForbiddenHost(_))
        ));
        let v6 = RequestHead::new(Method::Get).with("Host", "[::1]:9");
        assert_eq!(allow.check(&v6), Ok(()));
        let no_host = RequestHead::new(Method::Post);
        assert_eq!(
            allow.check(&no_host),
            Ok(()),
            "optional in the core's default"
        );
        let strict = AllowList {
            host_required: true,
            ..AllowList::default()
        };
        assert!(matches!(
            strict.check(&no_host),
            Err(RequestError::BadHead(_))
        ));
        assert_eq!(strict.check(&v6), Ok(()));
        assert_eq!(AllowList::any().check(&evil), Ok(()));
    }

    #[test]
    fn a_header_read_as_one_value_may_not_come_twice() {
        let once = RequestHead::new(Method::Post)
            .with("Mcp-Session-Id", "a")
            .with("MCP-Protocol-Version", "2025-11-25")
            .with("Content-Type", "application/json")
            .with("Accept", "application/json")
            .with("Accept", "text/event-stream");
        assert_eq!(check_singletons(&once), Ok(()), "Accept is a list");
        for (name, first, second) in [
            ("Mcp-Session-Id", "a", "b"),
            ("mcp-session-id", "a", "a"),
            ("MCP-Protocol-Version", "2025-11-25", "2025-03-26"),
            ("Last-Event-ID", "x", "y"),
            ("Mcp-Method", "tools/call", "ping"),
            ("Mcp-Name", "a", "b"),
            ("Content-Type", "application/json", "text/plain"),
            ("Host", "localhost", "evil.com"),
            ("Origin", "http://localhost", "http://evil.com"),
        ] {
            let twice = RequestHead::new(Method::Post)
                .with(name, first)
                .with("Accept", "application/json")
                .with(&name.to_ascii_uppercase(), second);
            match check_singletons(&twice) {
                Err(RequestError::BadHead(why)) => {
                    assert!(
                        why.to_ascii_lowercase()
                            .contains(&name.to_ascii_lowercase()),
                        "{why}"
                    )
                }
                other => panic!("{name} twice: {other:?}"),
            }
        }
        // Any other Mcp-* header too: a tool's Mcp-Param-*, one the cores
        // do not know.
        for name in ["Mcp-Param-Region", "Mcp-Future-Header"] {
            let twice = RequestHead::new(Method::Post)
                .with(name, "a")
                .with(&name.to_ascii_lowercase(), "a");
            assert_eq!(
                check_singletons(&twice),
                Err(RequestError::BadHead("a repeated Mcp-* header")),
                "{name}"
            );
        }
        let distinct = RequestHead::new(Method::Post)
            .with("Mcp-Param-Region", "a")
            .with("Mcp-Param-Zone", "a");
        assert_eq!(check_singletons(&distinct), Ok(()));
    }
}
