//! [`CoreSessionManager`]: rmcp's `SessionManager` on our server core.

use super::bind::BindLayer;
use super::bridge::Bridge;
use super::live::{run_timers, LiveSession, Platform, Tokio};
use super::stream::CoreStream;
use super::transport::CoreTransport;
use super::{convert, CoreConfig, CoreError};
use mcp_streamable::app::Tap;
use mcp_streamable::id_source::IdSource;
use mcp_streamable::ids::SessionId;
use mcp_streamable::jsonrpc::Message;
use mcp_streamable::server::{Admission, ServerSession, SessionState};
use mcp_streamable::time::Instant;
use mcp_streamable_hyper::sync::{Lock, StdLock};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{
    SessionId as RmcpSessionId, SessionManager,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// rmcp's `SessionManager`, each session a [`ServerSession`] core: its
/// routing, event ids, replay, takeover and bounds, instead of rmcp's
/// `LocalSessionManager`. The one-line change in an rmcp server:
///
/// ```ignore
/// let service = StreamableHttpService::new(
///     factory,
///     Arc::new(mcp_streamable::rmcp::CoreSessionManager::default()),
///     StreamableHttpServerConfig::default(),
/// );
/// ```
pub struct CoreSessionManager {
    config: CoreConfig,
    start: tokio::time::Instant,
    table: Arc<StdLock<Table>>,
    tap: Option<Arc<Mutex<Tap>>>,
}

/// All sessions, and who may open one.
pub(crate) struct Table<P: Platform = Tokio> {
    sessions: BTreeMap<Arc<str>, Arc<LiveSession<P>>>,
    admission: Admission,
    ids: IdSource,
}

/// A session [`Table::admit`] made room for.
pub(crate) struct Admitted<P: Platform> {
    /// The new session.
    pub(crate) session: Arc<LiveSession<P>>,
    /// Whom the bounds evicted for it: ended by the caller outside the
    /// table's lock (a session's lock comes first).
    pub(crate) evicted: Vec<Arc<LiveSession<P>>>,
}

impl<P: Platform> Table<P> {
    /// An empty table drawing ids from `ids`.
    pub(crate) fn new(ids: IdSource) -> Self {
        Table {
            sessions: BTreeMap::new(),
            admission: Admission::default(),
            ids,
        }
    }

    /// Sessions in the table.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }

    /// The session `id`, if it is in the table.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<LiveSession<P>>> {
        self.sessions.get(id).cloned()
    }

    /// Admits a new session (choosing whom to evict to make room) and
    /// makes its core; `start` makes the live session from them.
    pub(crate) fn admit(
        &mut self,
        config: &CoreConfig,
        now: Instant,
        start: impl FnOnce(SessionId, ServerSession) -> LiveSession<P>,
    ) -> Result<Admitted<P>, CoreError> {
        let Table { sessions, ids, .. } = self;
        let id = ids.session_id(|id| sessions.contains_key(id.as_str()));
        self.admission
            .admit(&id, None, config.admission, now)
            .map_err(CoreError::Refused)?;
        let mut evicted = Vec::new();
        while let Some(victim) = self.admission.poll_evicted() {
            evicted.extend(self.sessions.get(victim.as_str()).cloned());
        }
        let namespace = self.ids.namespace();
        let core = ServerSession::new(
            id.clone(),
            namespace,
            mcp_streamable::version::ProtocolVersion::LATEST,
            config.session_config(),
            config.policy,
        );
        let session = Arc::new(start(id.clone(), core));
        self.sessions.insert(id.as_str().into(), session.clone());
        Ok(Admitted { session, evicted })
    }

    /// What `id` is now, for admission's choice of whom to evict.
    pub(super) fn report(&mut self, id: &SessionId, state: SessionState) {
        if self.admission.differs(id, state) {
            self.admission.handle_session(id, state);
        }
    }

    /// Whether a session `id` is open that does not serve `caller`: one
    /// another principal opened (the core's `SessionBinding` decides).
    pub(crate) fn foreign(
        table: &P::TableLock,
        id: &str,
        caller: Option<&mcp_streamable::principal::Principal>,
    ) -> bool {
        // The session's lock comes first: the table's is released before it.
        let session = table.with(|t| t.get(id));
        session.is_some_and(|s| !s.serves(caller))
    }

    /// `id` ended: it leaves the table (idempotent).
    pub(super) fn forget(&mut self, id: &SessionId) {
        self.sessions.remove(id.as_str());
        self.admission.remove(id);
    }
}

impl Default for CoreSessionManager {
    fn default() -> Self {
        Self::new(CoreConfig::default())
    }
}

impl CoreSessionManager {
    /// A manager with session ids from the OS-keyed CSPRNG.
    pub fn new(config: CoreConfig) -> Self {
        Self::with_ids(config, IdSource::from_os())
    }

    /// A manager drawing session ids and event-id namespaces from `ids`.
    pub fn with_ids(config: CoreConfig, ids: IdSource) -> Self {
        CoreSessionManager {
            config,
            start: tokio::time::Instant::now(),
            table: Arc::new(StdLock::new(Table::new(ids))),
            tap: None,
        }
    }

    /// Shows every session's requests, transmits, closes and sends to `tap`
    /// (a monitor: `mcp_streamable_check::monitor::watching`).
    pub fn with_tap(mut self, tap: Option<Tap>) -> Self {
        self.tap = tap.map(|t| Arc::new(Mutex::new(t)));
        self
    }

    // ----- getters -----

    /// Sessions open now.
    pub fn sessions(&self) -> usize {
        self.table.with(|t| t.len())
    }

    // ----- commands -----

    /// Closes the connection carrying request `request`'s stream in
    /// `session` without ending the stream (polling, SEP-1699): the client
    /// resumes with `Last-Event-ID` after the stream's `retry`, and the
    /// handler's answer comes on the resumed stream. A handler finds its
    /// session in the `Mcp-Session-Id` header of the `http::request::Parts`
    /// rmcp puts in its context's extensions.
    pub fn close_connection(
        &self,
        session: &str,
        request: &rmcp::model::RequestId,
    ) -> Result<(), CoreError> {
        let id = convert::request_id(request)?;
        let session = self.get(&RmcpSessionId::from(session))?;
        session
            .with(|b, now| b.close_connection(&id, now))
            .map_err(|e| CoreError::Send(e.into()))
    }

    /// The tower layer that keeps each session to the principal that
    /// opened it: put it in front of rmcp's `StreamableHttpService` (see
    /// [`BindLayer`]).
    pub fn layer(&self) -> BindLayer {
        BindLayer::new(self.table.clone())
    }

    fn get(&self, id: &RmcpSessionId) -> Result<Arc<LiveSession>, CoreError> {
        self.table
            .with(|t| t.get(id))
            .ok_or(CoreError::UnknownSession)
    }

    /// Opens a session: admitted (evicting whom the bounds require), its
    /// core created, its timers started.
    fn open(&self) -> Result<Arc<LiveSession>, CoreError> {
        let now = mcp_streamable_hyper::clock::now(self.start);
        let Admitted { session, evicted } = self.table.with(|table| {
            table.admit(&self.config, now, |id, core| {
                LiveSession::new(
                    id,
                    Bridge::new(core).with_tap(self.tap.clone()),
                    self.start,
                    self.config.stream_queued_max,
                    self.config.inbox_max,
                    Arc::downgrade(&self.table),
                )
            })
        })?;
        // Outside the table's lock: a session's lock comes first.
        for victim in evicted {
            victim.with(|b, now| b.end(now));
        }
        tokio::spawn(run_timers(session.clone()));
        Ok(session)
    }
}

#[allow(refining_impl_trait)] // CoreStream is public: callers may name it.
impl SessionManager for CoreSessionManager {
    type Error = CoreError;
    type Transport = CoreTransport;

    async fn create_session(&self) -> Result<(RmcpSessionId, CoreTransport), CoreError> {
        let session = self.open()?;
        let id: RmcpSessionId = session.id.as_str().into();
        Ok((id, CoreTransport::new(session)))
    }

    async fn initialize_session(
        &self,
        id: &RmcpSessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, CoreError> {
        let session = self.get(id)?;
        let core = convert::from_client(&message)?;
        let opener = convert::principal(&message);
        let mut stream = session.open(true, |b, now| {
            b.handle_opener(opener)
                .map_err(|e| CoreError::Send(e.into()))?;
            b.handle_initialize(core, message, now)
                .map_err(CoreError::Refused)
        })?;
        // The answer; the priming before it is rmcp's to write (id "0").
        while let Some(event) = std::future::poll_fn(|cx| {
            futures_core::Stream::poll_next(std::pin::Pin::new(&mut stream), cx)
        })
        .await
        {
            if let Some(m) = event.message {
                return Ok(Arc::unwrap_or_clone(m));
            }
        }
        Err(CoreError::NoAnswer)
    }

    async fn has_session(&self, id: &RmcpSessionId) -> Result<bool, CoreError> {
        Ok(self.get(id).is_ok_and(|s| !s.is_ended()))
    }

    async fn close_session(&self, id: &RmcpSessionId) -> Result<(), CoreError> {
        if let Ok(session) = self.get(id) {
            session.with(|b, now| b.handle_delete(now));
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &RmcpSessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<CoreStream, CoreError> {
        let session = self.get(id)?;
        let core = convert::from_client(&message)?;
        let request_id = core.id().cloned();
        let caller = convert::principal(&message);
        match session.open(true, |b, now| {
            if !b.serves(caller.as_ref()) {
                return Err(CoreError::UnknownSession);
            }
            b.handle_request(core, message, now)
                .map_err(CoreError::Refused)
        }) {
            // The core's JSON-RPC error, on the stream rmcp asked for
            // (rmcp would make any error a plain-text 500).
            Err(CoreError::Refused(e)) => {
                let error = Message::Error {
                    id: e.request_id().cloned().or(request_id),
                    error: e.error_object(),
                };
                Ok(CoreStream::of(vec![convert::sse(
                    None,
                    None,
                    Some(&error),
                )?]))
            }
            other => other,
        }
    }

    async fn accept_message(
        &self,
        id: &RmcpSessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), CoreError> {
        let session = self.get(id)?;
        let core = convert::from_client(&message)?;
        let caller = convert::principal(&message);
        session.accept(|b, now| {
            if !b.serves(caller.as_ref()) {
                return Err(CoreError::UnknownSession);
            }
            b.handle_message(core, message, now)
                .map_err(CoreError::Refused)
        })
    }

    async fn create_standalone_stream(&self, id: &RmcpSessionId) -> Result<CoreStream, CoreError> {
        let session = self.get(id)?;
        session.open(false, |b, now| {
            b.handle_get(None, now).map_err(CoreError::Refused)
        })
    }

    async fn resume(
        &self,
        id: &RmcpSessionId,
        last_event_id: String,
    ) -> Result<CoreStream, CoreError> {
        let session = self.get(id)?;
        session.open(false, |b, now| {
            b.handle_get(Some(&last_event_id), now)
                .map_err(CoreError::Refused)
        })
    }
}
