//! rmcp's message types to the core's and back, through their JSON (both
//! follow JSON-RPC 2.0 to the letter, so the text is the contract).

use super::CoreError;
use mcp_streamable::ids::RequestId;
use mcp_streamable::jsonrpc::Message;
use mcp_streamable::principal::Principal;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::service::OriginatingRequestId;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use std::time::Duration;

/// A client message as the core sees it.
pub(super) fn from_client(message: &ClientJsonRpcMessage) -> Result<Message, CoreError> {
    let text = serde_json::to_string(message).map_err(|e| CoreError::Convert(e.to_string()))?;
    mcp_streamable::jsonrpc::parse_message(&text).map_err(|e| CoreError::Convert(e.to_string()))
}

/// Who sent `message`: the [`Principal`] an authentication layer in front
/// of rmcp's service put in the request's extensions, which rmcp hands on
/// inside the `http::request::Parts` it attaches to every POSTed message.
pub(super) fn principal(message: &ClientJsonRpcMessage) -> Option<Principal> {
    let extensions = match message {
        ClientJsonRpcMessage::Request(r) => r.request.extensions(),
        ClientJsonRpcMessage::Notification(n) => n.notification.extensions(),
        _ => return None,
    };
    extensions
        .get::<http::request::Parts>()?
        .extensions
        .get::<Principal>()
        .cloned()
}

/// A message for rmcp's handler, rebuilt from the core's (when the
/// embedder's original is not at hand: the answer to a server request).
pub(super) fn to_client(message: &Message) -> Result<ClientJsonRpcMessage, CoreError> {
    serde_json::from_str(&message.to_json()).map_err(|e| CoreError::Convert(e.to_string()))
}

/// What rmcp's handler sent, and the client request it was sent while
/// serving (SEP-2260's `OriginatingRequestId`, requests only).
pub(super) fn from_server(
    message: &ServerJsonRpcMessage,
) -> Result<(Message, Option<RequestId>), CoreError> {
    let origin = match message {
        ServerJsonRpcMessage::Request(r) => r
            .request
            .extensions()
            .get::<OriginatingRequestId>()
            .and_then(|o| request_id(&o.0).ok()),
        _ => None,
    };
    let text = serde_json::to_string(message).map_err(|e| CoreError::Convert(e.to_string()))?;
    let message = mcp_streamable::jsonrpc::parse_message(&text)
        .map_err(|e| CoreError::Convert(e.to_string()))?;
    Ok((message, origin))
}

/// rmcp's request id as the core's (both are a JSON-RPC number or string).
pub(super) fn request_id(id: &rmcp::model::RequestId) -> Result<RequestId, CoreError> {
    serde_json::to_value(id)
        .and_then(serde_json::from_value)
        .map_err(|e| CoreError::Convert(e.to_string()))
}

/// One SSE event for rmcp to write.
pub(super) fn sse(
    id: Option<String>,
    retry_ms: Option<u64>,
    message: Option<&Message>,
) -> Result<ServerSseMessage, CoreError> {
    let mut sse = ServerSseMessage::default();
    sse.event_id = id;
    sse.retry = retry_ms.map(Duration::from_millis);
    if let Some(m) = message {
        let m: ServerJsonRpcMessage =
            serde_json::from_str(&m.to_json()).map_err(|e| CoreError::Convert(e.to_string()))?;
        sse.message = Some(std::sync::Arc::new(m));
    }
    Ok(sse)
}
