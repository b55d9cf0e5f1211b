//! [`CoreTransport`]: what rmcp's service runs on for one session. What the
//! handler sends goes to the core at once (in the order sent); what the
//! core delivers waits in the session's inbox until the service reads it.

use super::live::LiveSession;
use super::{convert, CoreError};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use std::future::Future;
use std::sync::Arc;

/// The transport `CoreSessionManager::create_session` hands rmcp.
pub struct CoreTransport {
    session: Arc<LiveSession>,
}

impl CoreTransport {
    pub(super) fn new(session: Arc<LiveSession>) -> Self {
        CoreTransport { session }
    }
}

impl Transport<RoleServer> for CoreTransport {
    type Error = CoreError;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), CoreError>> + Send + 'static {
        // Done now, not when the future is polled: rmcp may poll sends
        // concurrently, and the core must see them in the order sent.
        let sent = convert::from_server(&item).and_then(|(message, origin)| {
            self.session
                .with(|b, now| b.send(message, origin, now))
                .map_err(CoreError::Send)
        });
        std::future::ready(sent)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.session.recv().await
    }

    async fn close(&mut self) -> Result<(), CoreError> {
        Ok(())
    }
}
