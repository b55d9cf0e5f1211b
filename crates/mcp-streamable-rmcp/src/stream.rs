//! [`CoreStream`]: the SSE stream rmcp writes for one exchange. Dropping it
//! (rmcp does when its client goes away) tells the core the exchange is
//! closed: the stream behind it stays resumable.

use super::live::LiveSession;
use mcp_streamable::ids::HttpId;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// The events of one exchange, in the order the core wrote them; it ends
/// when the core ends the exchange.
pub struct CoreStream {
    rx: mpsc::Receiver<ServerSseMessage>,
    exchange: Option<(Arc<LiveSession>, HttpId)>,
}

impl CoreStream {
    pub(super) fn new(
        rx: mpsc::Receiver<ServerSseMessage>,
        exchange: Option<(Arc<LiveSession>, HttpId)>,
    ) -> Self {
        CoreStream { rx, exchange }
    }

    /// A stream of just `events`, tied to no exchange (an error answered
    /// on the stream rmcp asked for).
    pub(super) fn of(events: Vec<ServerSseMessage>) -> Self {
        let (tx, rx) = mpsc::channel(events.len().max(1));
        for e in events {
            let _ = tx.try_send(e);
        }
        CoreStream { rx, exchange: None }
    }
}

impl futures_core::Stream for CoreStream {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for CoreStream {
    fn drop(&mut self) {
        if let Some((session, http)) = self.exchange.take() {
            session.stream_dropped(http);
        }
    }
}
