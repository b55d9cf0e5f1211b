//! M5: a 2026-07-28 request's `Mcp-*` headers agree with its body, on both
//! sides of the wire. A proxy in front of a server may route, rate-limit
//! or authorize on `Mcp-Method`, `Mcp-Name` and a tool's `Mcp-Param-*`
//! (SEP-2243) without reading the body; a request whose headers say one
//! thing and whose body another was acted on twice, differently. So a
//! client never sends one, and a server never serves one (it refuses it:
//! 400, -32020), nor one that repeats an `Mcp-*` header (which value did
//! the proxy read?).
//!
//! The rule is [`mcp_streamable::v2026::check_headers`], the one the server
//! core applies; the tools' custom headers are those the listings the
//! monitor saw declared (a tool it never saw listed is judged on the
//! standard headers alone).

use mcp_streamable::head::{Method, RequestHead};
use mcp_streamable::headers;
use mcp_streamable::ids::HttpId;
use mcp_streamable::jsonrpc::{Message, RawJson};
use mcp_streamable::tool_headers::{self, ToolHeaderTable};
use mcp_streamable::version::ProtocolVersion;
use std::collections::BTreeMap;

/// Bytes of custom headers the monitor remembers of listed tools.
const TOOL_HEADERS_BYTES_MAX: usize = 1 << 20;

/// What M5 keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct HeaderAgreement {
    /// The tools' custom headers, as the listings seen declared them.
    tools: ToolHeaderTable,
    /// Requests whose headers disagree with their body, by exchange, with
    /// why: the server must not serve them.
    disagreeing: BTreeMap<HttpId, String>,
}

impl HeaderAgreement {
    /// Why `message`, sent with `mcp_headers` (lower-case names, repeats
    /// kept), disagrees with them; `None` when they agree (or it is no
    /// request: a notification's headers are not defined).
    fn disagreement(&self, mcp_headers: &[(String, String)], message: &Message) -> Option<String> {
        if let Some(name) =
            tool_headers::repeated_mcp_header(mcp_headers.iter().map(|(n, _)| n.as_str()))
        {
            return Some(format!("{name} sent twice"));
        }
        let Message::Request { method, params, .. } = message else {
            return None;
        };
        let header = |name: &str| {
            mcp_headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let params = params.as_ref().map(RawJson::to_value);
        mcp_streamable::v2026::check_headers(header, method, params.as_ref(), &self.tools).err()
    }

    /// A 2026-07-28 POST reached the server: remember it when its headers
    /// disagree with its one message.
    pub(super) fn on_request(
        &mut self,
        http: HttpId,
        v2026: bool,
        mcp_headers: &[(String, String)],
        messages: &[Message],
    ) {
        let [message] = messages else {
            return;
        };
        if !v2026 {
            return;
        }
        if let Some(why) = self.disagreement(mcp_headers, message) {
            self.disagreeing.insert(http, why);
        }
    }

    /// Whether exchange `http`'s request disagreed with its headers (a
    /// look that copies nothing, before [`Self::on_head`]).
    pub(super) fn disagreed(&self, http: HttpId) -> bool {
        self.disagreeing.contains_key(&http)
    }

    /// The server answered exchange `http` with `status`: a success for a
    /// request whose headers disagree is M5's breach, returned as what to
    /// say.
    pub(super) fn on_head(&mut self, http: HttpId, status: u16) -> Option<String> {
        let why = self.disagreeing.remove(&http)?;
        (200..300).contains(&status).then(|| {
            format!("the server served ({status}) a request whose headers disagree with its body: {why}")
        })
    }

    /// A client sent a request: a 2026-07-28 POST whose headers disagree with
    /// its body is M5's breach, returned as what to say.
    pub(super) fn on_client_send(&self, head: &RequestHead, body: &[u8]) -> Option<String> {
        if head.method != Method::Post
            || head.header(headers::MCP_PROTOCOL_VERSION)
                != Some(ProtocolVersion::LATEST_V2026.as_str())
        {
            return None;
        }
        let [message] = &crate::monitor::body_messages(body)?[..] else {
            return None;
        };
        let why = self.disagreement(&head.mcp_headers(), message)?;
        Some(format!(
            "the client sent a request whose headers disagree with its body: {why}"
        ))
    }

    /// Whether `message` may teach the tools' custom headers: a result
    /// that lists tools with schemas, declaring some or re-listing tools
    /// known to (a look at the text, before anything is parsed or copied).
    pub(super) fn teaches(&self, message: &Message) -> bool {
        let Message::Response { result, .. } = message else {
            return false;
        };
        let text = result.as_str();
        text.contains("\"inputSchema\"")
            && (!self.tools.is_empty() || text.contains(tool_headers::ANNOTATION))
    }

    /// A message that [`Self::teaches`] crossed the wire: the tools it
    /// lists, learnt.
    pub(super) fn learn(&mut self, message: &Message) {
        let Message::Response { result, .. } = message else {
            return;
        };
        let value = result.to_value();
        for tool in tool_headers::tools_of(&value) {
            // An invalid annotation makes the tool no one's to call with
            // headers: forgotten, judged on the standard headers alone.
            let _ = self.tools.learn(tool, TOOL_HEADERS_BYTES_MAX);
        }
    }
}
