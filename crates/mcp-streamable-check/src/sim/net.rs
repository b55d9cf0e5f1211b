//! One HTTP exchange in flight between a client core and the server: the
//! request not yet delivered, and the response items in TCP order.

use mcp_streamable::head::{RequestHead, ResponseHead};
use mcp_streamable::ids::HttpId;
use mcp_streamable::server::{Transmit, TransmitKind};
use mcp_streamable::shared::Shared;
use mcp_streamable::sse::SseItem;
use std::collections::VecDeque;
use std::sync::Arc;

/// A response item on its way to the client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// The response head.
    Head(ResponseHead),
    /// A whole JSON body (shared: a checker copies worlds by the million).
    Body(Arc<[u8]>),
    /// One SSE item, as the client's decoder would produce it.
    Sse(SseItem),
    /// The response ended.
    End,
}

/// One exchange, end to end.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Link {
    /// The request, until delivered to the server.
    pub request: Option<(RequestHead, Arc<[u8]>)>,
    /// The server's id for it, once delivered.
    pub server_http: Option<HttpId>,
    /// Response items in flight, in order (one TCP stream). Each shared
    /// and hashed once: a checker's step that takes the first copies the
    /// rest as references, not as heads and event texts.
    pub to_client: VecDeque<Shared<Delivery>>,
    /// The client no longer reads it (aborted, or the connection dropped).
    pub client_gone: bool,
    /// The server has been told the exchange is over.
    pub server_told: bool,
    /// The request is a GET with `Last-Event-ID` (a resumption).
    pub resume: bool,
}

impl Link {
    /// A link carrying a request not yet delivered.
    pub fn new(head: RequestHead, body: Vec<u8>) -> Self {
        let body = body.into();
        let resume = head
            .header(mcp_streamable::headers::LAST_EVENT_ID)
            .is_some();
        Link {
            resume,
            request: Some((head, body)),
            server_http: None,
            to_client: VecDeque::new(),
            client_gone: false,
            server_told: false,
        }
    }

    /// The link once its request is delivered to the server as `http`: a
    /// copy without the request, so a link other states still hold is not
    /// copied whole (head, headers and all) only to have its request taken.
    pub fn delivered(&self, http: HttpId) -> Self {
        Link {
            request: None,
            server_http: Some(http),
            to_client: self.to_client.clone(),
            client_gone: self.client_gone,
            server_told: self.server_told,
            resume: self.resume,
        }
    }
}

/// What a server transmit becomes on the wire, as items the client reads.
pub fn deliveries(t: &Transmit) -> Vec<Delivery> {
    match &t.kind {
        TransmitKind::Head(h) => vec![Delivery::Head(h.clone())],
        TransmitKind::Json(m) => vec![Delivery::Body(m.to_json().into_bytes().into())],
        TransmitKind::Event {
            id,
            retry_ms,
            message,
        } => {
            let mut out = Vec::with_capacity(2);
            if let Some(ms) = retry_ms {
                out.push(Delivery::Sse(SseItem::Retry(*ms)));
            }
            out.push(Delivery::Sse(match message {
                Some(o) => SseItem::Message {
                    id: id.clone(),
                    event: None,
                    data: o.message.to_json(),
                },
                None => SseItem::NoMessage { id: id.clone() },
            }));
            out
        }
        TransmitKind::Comment => Vec::new(),
        TransmitKind::End(_) => vec![Delivery::End],
    }
}
