//! [`BindLayer`]: each session kept to the principal that opened it.
//!
//! rmcp's `StreamableHttpService` hands the session manager a request's
//! `http::request::Parts` only inside a POSTed message. `has_session`, a
//! GET's `create_standalone_stream` and `resume`, and a DELETE's
//! `close_session` get the session id alone, so the manager by itself
//! cannot tell who sends a GET or a DELETE. This layer, in front of rmcp's
//! service, asks the manager whether the session a request names serves
//! its caller (the core's `SessionBinding` applied to the principal that
//! opened it) and hands a request it does not serve on as one naming no
//! session. rmcp then answers it exactly as it answers an unknown session,
//! byte for byte: 404 to a POST or a GET, and to a DELETE the 202 that ends
//! nothing. A stolen session id is no oracle.
//!
//! The caller is the [`Principal`] an authentication layer put in the
//! request's extensions (in front of this one); a request without one is
//! anonymous, and is not served a session a principal opened.
//!
//! ```ignore
//! let manager = Arc::new(CoreSessionManager::default());
//! let mcp = tower::ServiceBuilder::new()
//!     .layer(axum::middleware::from_fn(authenticate)) // inserts a Principal
//!     .layer(manager.layer())
//!     .service(StreamableHttpService::new(factory, manager, config));
//! ```

use super::live::Tokio;
use super::manager::Table;
use mcp_streamable::headers::MCP_SESSION_ID;
use mcp_streamable::principal::Principal;
use mcp_streamable_hyper::sync::StdLock;
use std::sync::Arc;
use std::task::{Context, Poll};

/// What a request naming another principal's session is handed on with:
/// never a session id the manager issues (those are 32 hex digits).
const NO_SESSION: &str = "-";

/// The layer: [`CoreSessionManager::layer`](crate::CoreSessionManager::layer).
#[derive(Clone)]
pub struct BindLayer {
    table: Arc<StdLock<Table<Tokio>>>,
}

impl BindLayer {
    pub(crate) fn new(table: Arc<StdLock<Table<Tokio>>>) -> Self {
        BindLayer { table }
    }
}

impl<S> tower_layer::Layer<S> for BindLayer {
    type Service = Bound<S>;

    fn layer(&self, inner: S) -> Bound<S> {
        Bound {
            inner,
            table: self.table.clone(),
        }
    }
}

/// rmcp's service (or any) behind a [`BindLayer`].
#[derive(Clone)]
pub struct Bound<S> {
    inner: S,
    table: Arc<StdLock<Table<Tokio>>>,
}

impl<S> Bound<S> {
    /// Whether `request` names a session it may not use.
    fn foreign<B>(&self, request: &http::Request<B>) -> bool {
        let caller = request.extensions().get::<Principal>();
        request
            .headers()
            .get_all(MCP_SESSION_ID)
            .iter()
            .any(|id| match id.to_str() {
                Ok(id) => Table::<Tokio>::foreign(&self.table, id, caller),
                Err(_) => false,
            })
    }
}

impl<S, B> tower_service::Service<http::Request<B>> for Bound<S>
where
    S: tower_service::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if self.foreign(&request) {
            let headers = request.headers_mut();
            headers.remove(MCP_SESSION_ID);
            headers.insert(MCP_SESSION_ID, http::HeaderValue::from_static(NO_SESSION));
        }
        self.inner.call(request)
    }
}
