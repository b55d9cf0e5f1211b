//! HTTP request and response heads as the cores see them: parsed once at the
//! edge, shared by the server and client cores (which do not know each other).

use crate::headers;
use crate::ids::SessionId;
use crate::version::ProtocolVersion;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// HTTP method.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Method {
    /// Opens or resumes an SSE stream.
    Get,
    /// Carries one client message (or a 2025-03-26 batch).
    Post,
    /// Ends the session.
    Delete,
    /// Anything else (answered 405).
    Other(String),
}

impl Method {
    /// Parses a method token.
    pub fn parse(s: &str) -> Method {
        match s {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "DELETE" => Method::Delete,
            other => Method::Other(other.to_owned()),
        }
    }

    /// The method token, as a request line writes it.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Other(m) => m,
        }
    }
}

/// A request head: method and headers (names lower-case; those the cores
/// read are the [`headers`] constants, so naming them costs nothing).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RequestHead {
    /// The method.
    pub method: Method,
    /// Header name/value pairs; names are matched case-insensitively.
    pub headers: Vec<(Cow<'static, str>, String)>,
}

impl RequestHead {
    /// A head with no headers.
    pub fn new(method: Method) -> Self {
        RequestHead {
            method,
            headers: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn with(mut self, name: &str, value: &str) -> Self {
        let name = match headers::read_on_requests(name) {
            Some(known) => Cow::Borrowed(known),
            None => Cow::Owned(name.to_ascii_lowercase()),
        };
        self.headers.push((name, value.to_owned()));
        self
    }

    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Its `Mcp-*` headers, names lower-case, in their order, repeats kept.
    pub fn mcp_headers(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .filter(|(n, _)| headers::is_mcp(n))
            .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
            .collect()
    }

    /// A POST head as a conforming client sends it.
    pub fn post(session: Option<&SessionId>, version: Option<ProtocolVersion>) -> Self {
        let mut h = RequestHead::new(Method::Post)
            .with(headers::CONTENT_TYPE, headers::MIME_JSON)
            .with(headers::ACCEPT, "application/json, text/event-stream");
        if let Some(s) = session {
            h = h.with(headers::MCP_SESSION_ID, s.as_str());
        }
        if let Some(v) = version {
            h = h.with(headers::MCP_PROTOCOL_VERSION, v.as_str());
        }
        h
    }

    /// A GET head as a conforming client sends it.
    pub fn get(session: &SessionId, version: ProtocolVersion, last_event_id: Option<&str>) -> Self {
        let mut h = RequestHead::new(Method::Get)
            .with(headers::ACCEPT, headers::MIME_SSE)
            .with(headers::MCP_SESSION_ID, session.as_str())
            .with(headers::MCP_PROTOCOL_VERSION, version.as_str());
        if let Some(l) = last_event_id {
            h = h.with(headers::LAST_EVENT_ID, l);
        }
        h
    }

    /// A DELETE head.
    pub fn delete(session: &SessionId) -> Self {
        RequestHead::new(Method::Delete).with(headers::MCP_SESSION_ID, session.as_str())
    }
}

/// Body type of a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    /// No body.
    None,
    /// `application/json`.
    Json,
    /// `text/event-stream`.
    Sse,
}

/// A response head.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResponseHead {
    /// HTTP status.
    pub status: u16,
    /// Body type.
    pub content: Content,
    /// `Mcp-Session-Id` to send.
    pub session_id: Option<SessionId>,
    /// Send `Allow: GET, POST, DELETE` (on 405).
    pub allow: bool,
}

impl ResponseHead {
    /// The head as a client core reads it off the wire: the status, and of the
    /// headers (names in any case) the content type (parameters such as
    /// `charset` ignored; anything else has no body the core reads), the
    /// session id (an invalid one is no session id) and `allow`.
    pub fn from_wire<'a>(
        status: u16,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let mut head = ResponseHead::new(status, Content::None);
        for (name, value) in headers {
            if name.eq_ignore_ascii_case(headers::CONTENT_TYPE) {
                let media = value.split(';').next().unwrap_or("").trim();
                head.content = if media.eq_ignore_ascii_case(headers::MIME_SSE) {
                    Content::Sse
                } else if media.eq_ignore_ascii_case(headers::MIME_JSON) {
                    Content::Json
                } else {
                    Content::None
                };
            } else if name.eq_ignore_ascii_case(headers::MCP_SESSION_ID) {
                head.session_id = value.parse().ok();
            } else if name.eq_ignore_ascii_case(headers::ALLOW) {
                head.allow = true;
            }
        }
        head
    }

    /// A head with no session id.
    pub fn new(status: u16, content: Content) -> Self {
        ResponseHead {
            status,
            content,
            session_id: None,
            allow: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_wire_reads_content_type_session_and_allow_in_any_case() {
        let h = ResponseHead::from_wire(
            200,
            [
                ("Content-Type", "Text/Event-Stream; charset=utf-8"),
                ("MCP-Session-Id", "abc123"),
            ],
        );
        assert_eq!(h.content, Content::Sse);
        assert_eq!(h.session_id.as_ref().map(|s| s.as_str()), Some("abc123"));
        assert!(!h.allow);
        let h = ResponseHead::from_wire(
            405,
            [("content-type", "application/json"), ("allow", "GET")],
        );
        assert_eq!((h.status, h.content, h.allow), (405, Content::Json, true));
        let h = ResponseHead::from_wire(
            200,
            [
                ("content-type", "text/html"),
                ("mcp-session-id", "bad id\u{7f}"),
            ],
        );
        assert_eq!((h.content, h.session_id), (Content::None, None));
    }

    #[test]
    fn a_header_the_cores_read_is_named_by_its_constant() {
        let h = RequestHead::new(Method::Post)
            .with("Mcp-Session-Id", "abc")
            .with("X-Custom", "1");
        assert!(matches!(
            h.headers[0].0,
            Cow::Borrowed(headers::MCP_SESSION_ID)
        ));
        assert_eq!(h.headers[1].0, "x-custom", "any other name, lower-cased");
        assert_eq!(h.header("MCP-SESSION-ID"), Some("abc"));
        assert_eq!(h.header("x-custom"), Some("1"));
        for name in headers::READ_ON_REQUESTS {
            assert_eq!(
                headers::read_on_requests(&name.to_ascii_uppercase()),
                Some(name)
            );
        }
        assert_eq!(headers::read_on_requests("user-agent"), None);
    }
}
