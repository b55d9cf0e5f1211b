//! [`Observation`]: what every loop around a core can see and report, in
//! one vocabulary: a request as it reached the server, what the server wrote
//! on an exchange, an exchange closed, what the application sent, what a
//! client core started, told its application, or read.
//!
//! The cores' drains ([`crate::server::ServerEndpoint::drain_observed`], the
//! client's `ClientOutput::observed`) and the [`ServerDriver`]'s tap produce
//! them; a judge (the checker's monitor) consumes them. The vocabulary lives
//! beside the cores, and the judge above them, so the cores never depend on
//! what judges them.
//!
//! [`ServerDriver`]: crate::server::ServerDriver

use crate::client::{ClientEvent, ClientTransmit};
use crate::headers;
use crate::ids::{HttpId, MsgKey};
use crate::jsonrpc::{self, Body, Message, RawJson};
use crate::principal::Principal;
use crate::server::{Cause, DropReason, Method, RequestHead, Transmit};
use crate::version::ProtocolVersion;

/// One thing a harness saw.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Observation {
    /// A request reached the server as exchange `http`.
    Request {
        /// The exchange.
        http: HttpId,
        /// Method.
        method: Method,
        /// `Mcp-Session-Id`, as sent.
        session: Option<String>,
        /// `Last-Event-ID`, as sent.
        last_event_id: Option<String>,
        /// The body's messages (empty when not parseable or not a POST).
        messages: Vec<Message>,
        /// A 2026-07-28 request: no session, nothing to resume.
        v2026: bool,
        /// A 2026-07-28 POST's `Mcp-*` headers as sent, names lower-case, in
        /// their order, repeats kept (M5 judges them against the body);
        /// empty for any other request.
        mcp_headers: Vec<(String, String)>,
        /// Who sent it, as the transport authenticated it (`None`:
        /// anonymous, or a harness that does not say).
        principal: Option<Principal>,
    },
    /// The server wrote this on an exchange.
    Transmit(Transmit),
    /// The client or the network closed the exchange: nothing written on it
    /// afterwards reaches the client.
    Closed {
        /// The exchange.
        http: HttpId,
    },
    /// The application handed a message to the core.
    Sent {
        /// The session.
        session: String,
        /// Its serial number.
        key: MsgKey,
        /// Why it was sent.
        cause: Cause,
        /// For a response, the exchange the request it answers arrived on,
        /// when the harness knows it (its application serves each request
        /// where it came from): a response written on another exchange,
        /// though one carrying the same request id, went to the wrong
        /// caller (I1).
        origin: Option<HttpId>,
    },
    /// The network failed (a dropped connection, a partition): B5 only bounds
    /// GETs in runs without faults.
    Fault,
    /// Client `client`'s core started or aborted an exchange (client-side ids).
    ClientTransmit {
        /// Which client (0 in a harness with one).
        client: usize,
        /// What it started or aborted.
        transmit: ClientTransmit,
    },
    /// Client `client`'s core told its application something.
    ClientEvent {
        /// Which client.
        client: usize,
        /// What it was told.
        event: ClientEvent,
    },
    /// Client `client` read this message on exchange `http` (before dispatching it).
    ClientReceived {
        /// Which client.
        client: usize,
        /// The client's exchange.
        http: HttpId,
        /// The message.
        message: Message,
    },
    /// Client `client`'s exchange `http` is over (its response ended or the connection failed).
    ClientClosed {
        /// Which client.
        client: usize,
        /// The client's exchange.
        http: HttpId,
    },
    /// The core dropped a message by explicit, announced policy.
    Dropped {
        /// The session.
        session: String,
        /// Its serial number.
        key: MsgKey,
        /// Why.
        reason: DropReason,
    },
    /// The session ended (the core's own account of it, with its cause):
    /// what the wire shows later, a 404 to its owner, is then explained.
    SessionEnded {
        /// The session.
        session: String,
        /// The DELETE that ended it, if one did (the server's exchange).
        deleted_by: Option<HttpId>,
    },
    /// The application broadcast a change notification (observed where it
    /// originates, once, before the core is handed it): every listen
    /// acknowledged by now that subscribed to it must get it (M3), and
    /// every client listening for it must end up knowing (M4).
    Broadcast {
        /// Its method.
        method: String,
        /// Its params.
        params: Option<RawJson>,
    },
}

impl Observation {
    /// The observation of a request as the server received it.
    pub fn request(http: HttpId, head: &RequestHead, body: &[u8]) -> Self {
        Self::request_with(http, head, body, body_messages)
    }

    /// [`Self::request`] with the body's messages from `parse` (the body
    /// read as a 2025-era server would; `None` when it is not JSON-RPC): a
    /// simulation that sees the same bodies again and again parses each once
    /// (`sim::parsed`).
    pub fn request_with(
        http: HttpId,
        head: &RequestHead,
        body: &[u8],
        parse: impl FnOnce(&[u8]) -> Option<Vec<Message>>,
    ) -> Self {
        let version = crate::server::request::protocol_version(head)
            .ok()
            .flatten();
        let v2026 = match head.method {
            Method::Post => crate::server::v2026::is_v2026(version, body),
            _ => version.is_some_and(ProtocolVersion::is_v2026),
        };
        let messages = match head.method {
            Method::Post => parse(body).unwrap_or_default(),
            _ => Vec::new(),
        };
        let mcp_headers = match head.method {
            Method::Post if v2026 => head.mcp_headers(),
            _ => Vec::new(),
        };
        Observation::Request {
            http,
            method: head.method.clone(),
            session: head.header(headers::MCP_SESSION_ID).map(str::to_owned),
            last_event_id: head.header(headers::LAST_EVENT_ID).map(str::to_owned),
            messages,
            v2026,
            mcp_headers,
            principal: None,
        }
    }

    /// The same observation, of a request sent by `who` (a request only;
    /// anything else is returned as it is).
    pub fn by(mut self, who: Option<Principal>) -> Self {
        if let Observation::Request { principal, .. } = &mut self {
            *principal = who;
        }
        self
    }
}

/// The messages of a body as the monitor reads what crosses the wire (a
/// 2025-era peer: a batch is its messages in order); `None` when it is not
/// JSON-RPC.
pub fn body_messages(body: &[u8]) -> Option<Vec<Message>> {
    jsonrpc::parse_body(body, ProtocolVersion::V2025_03_26)
        .map(Body::into_messages)
        .ok()
}
