//! The application side of a server: a synchronous [`App`] called by the
//! [`ServerDriver`](crate::server::ServerDriver) with a [`Cx`] to answer,
//! notify, ask the client, close a connection for polling, or set a timer. No
//! async and no locks in application code: it runs inside the driver, between
//! core steps, in any transport (the hyper shell, axum, a blocking server).

use crate::ids::{RequestId, SessionId};
use crate::jsonrpc::{ErrorObject, RawJson, METHOD_NOT_FOUND};
use crate::observe::Observation;
use crate::server::{Cause, ServerEndpoint};
use crate::time::Instant;

pub mod tool_call;

/// An observer of everything a driver sees and writes (feeds the monitor).
pub type Tap = Box<dyn FnMut(&Observation) + Send>;

/// Where a transport with several endpoints (one per session, as the hyper
/// shell runs them) sends an application's broadcast, so every other
/// endpoint delivers it too ([`ServerDriver::broadcast`]).
///
/// [`ServerDriver::broadcast`]: crate::server::ServerDriver::broadcast
pub type Fanout = std::sync::Arc<dyn Fn(&str, Option<&RawJson>) + Send + Sync>;

/// An MCP server application.
pub trait App: Send + 'static {
    /// A client request; answer it with [`Cx::respond`], now or later.
    fn on_request(&mut self, cx: &mut Cx<'_>, id: RequestId, method: &str, params: Option<RawJson>);
    /// A client notification.
    fn on_notification(&mut self, _cx: &mut Cx<'_>, _method: &str, _params: Option<RawJson>) {}
    /// The client's answer to a request sent with [`Cx::request`].
    fn on_response(
        &mut self,
        _cx: &mut Cx<'_>,
        _id: RequestId,
        _result: Result<RawJson, ErrorObject>,
    ) {
    }
    /// A timer set with [`Cx::after`] fired.
    fn on_timer(&mut self, _cx: &mut Cx<'_>, _token: u64) {}
    /// The session ended.
    fn on_session_ended(&mut self, _session: &SessionId) {}
}

/// What an application can do, for one session, at one moment.
pub struct Cx<'a> {
    pub(crate) ep: &'a mut ServerEndpoint,
    pub(crate) session: SessionId,
    pub(crate) now: Instant,
    pub(crate) timers: &'a mut Vec<(Instant, SessionId, u64)>,
    pub(crate) tap: Option<std::sync::Arc<std::sync::Mutex<Tap>>>,
    pub(crate) fanout: Option<Fanout>,
    /// The fan-out reaches this endpoint's sessions too: a broadcast goes
    /// to it alone (a fleet's instance).
    pub(crate) fanout_only: bool,
}

impl Cx<'_> {
    /// The session.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The current time of the shell (ms since it started).
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Who opened the session (for a 2026-07-28 request, who sent it), as the
    /// transport authenticated them: what an application binds its own
    /// state to (an MRTR `requestState`, a task id).
    pub fn principal(&self) -> Option<&crate::principal::Principal> {
        self.ep.session(&self.session)?.principal()
    }

    fn sent(&mut self, key: crate::ids::MsgKey, cause: Cause) {
        if let Some(mut tap) = self.tap.as_ref().and_then(|t| t.lock().ok()) {
            tap(&Observation::Sent {
                session: self.session.to_string(),
                key,
                cause,
                origin: None,
            });
        }
    }

    /// Answers client request `id`. Returns false if it is not active.
    pub fn respond(&mut self, id: &RequestId, result: Result<RawJson, ErrorObject>) -> bool {
        let now = self.now;
        let Some(s) = self.ep.session_mut(&self.session) else {
            return false;
        };
        match s.respond(id, result, now) {
            Ok(key) => {
                self.sent(key, Cause::Request(id.clone()));
                true
            }
            Err(_) => false,
        }
    }

    /// Sends a notification, related to a request or not.
    pub fn notify(&mut self, method: &str, params: Option<RawJson>, cause: Cause) -> bool {
        let now = self.now;
        let Some(s) = self.ep.session_mut(&self.session) else {
            return false;
        };
        match s.notify(method, params, cause.clone(), now) {
            Ok(key) => {
                self.sent(key, cause);
                true
            }
            Err(_) => false,
        }
    }

    /// Whether this request is of the 2026-07-28 era: no session
    /// behind it, no requests to the client, list changes go to listens.
    pub fn is_v2026(&self) -> bool {
        self.ep
            .session(&self.session)
            .is_some_and(|s| s.version().is_v2026())
    }

    /// A notification for every client it concerns, in either era
    /// ([`ServerEndpoint::broadcast`]): list changes and resource updates;
    /// the driver's [`Fanout`], when it has one, takes it to the other
    /// endpoints. Returns how many got it here.
    pub fn broadcast(&mut self, method: &str, params: Option<RawJson>) -> usize {
        let now = self.now;
        // The tap is held throughout: no other task's observation of this
        // broadcast's fan-out comes before the broadcast itself.
        let mut tap = self.tap.as_ref().and_then(|t| t.lock().ok());
        if let Some(fanout) = &self.fanout {
            fanout(method, params.as_ref());
            if self.fanout_only {
                // Delivered by the fan-out, here too, once it has the
                // store's word: nothing got it here yet.
                if let Some(tap) = tap.as_mut() {
                    tap(&Observation::Broadcast {
                        method: method.to_owned(),
                        params,
                    });
                }
                return 0;
            }
        }
        self.ep.broadcast_observed(
            method,
            params,
            now,
            crate::server::BroadcastOrigin::Here,
            &mut |o| {
                if let Some(tap) = tap.as_mut() {
                    tap(o);
                }
            },
        )
    }

    /// Sends a request to the client; its answer arrives in [`App::on_response`].
    pub fn request(
        &mut self,
        method: &str,
        params: Option<RawJson>,
        cause: Cause,
    ) -> Option<RequestId> {
        let now = self.now;
        let s = self.ep.session_mut(&self.session)?;
        let (id, key) = s.request(method, params, cause.clone(), now).ok()?;
        self.sent(key, cause);
        Some(id)
    }

    /// Withdraws request `id` sent with [`Cx::request`]: the client is told
    /// (`notifications/cancelled`) and [`App::on_response`] is not called
    /// for it. Returns false if it is not awaited.
    pub fn cancel_request(&mut self, id: &RequestId, reason: &str) -> bool {
        let now = self.now;
        self.ep
            .session_mut(&self.session)
            .is_some_and(|s| s.cancel_request(id, reason, now).is_ok())
    }

    /// Closes the connection of request `id`'s stream; the client resumes (polling).
    pub fn close_connection(&mut self, id: &RequestId) -> bool {
        let now = self.now;
        self.ep
            .session_mut(&self.session)
            .is_some_and(|s| s.close_connection(id, now).is_ok())
    }

    /// Entropy for the application, forked from the endpoint's source
    /// ([`ServerEndpoint::fork_entropy`]); the cores read no global RNG.
    pub fn entropy(&mut self) -> crate::id_source::IdSource {
        self.ep.fork_entropy()
    }

    /// The endpoint's application secret ([`ServerEndpoint::app_secret`]).
    pub fn app_secret(&mut self) -> [u8; 32] {
        self.ep.app_secret()
    }

    /// Calls [`App::on_timer`] with `token` after `ms` milliseconds.
    pub fn after(&mut self, ms: u64, token: u64) {
        let at = Instant::from_millis(self.now.as_millis() + ms);
        self.timers.push((at, self.session.clone(), token));
    }
}

/// The answer to `initialize` or `server/discover` (the two eras' ways of
/// asking who the server is): the capabilities and the server's description,
/// each where its era puts it. The core adds the rest (the negotiated
/// version; `supportedVersions`, `resultType` and caching hints).
pub fn self_description(
    method: &str,
    capabilities: serde_json::Value,
    server_info: serde_json::Value,
) -> serde_json::Value {
    if method == "server/discover" {
        serde_json::json!({
            "capabilities": capabilities,
            "_meta": {crate::v2026::META_SERVER_INFO: server_info},
        })
    } else {
        serde_json::json!({"capabilities": capabilities, "serverInfo": server_info})
    }
}

/// A minimal application: `initialize`, `server/discover`, `ping`, and an
/// `echo` tool.
#[derive(Clone, Debug, Default)]
pub struct EchoApp;

impl App for EchoApp {
    fn on_request(
        &mut self,
        cx: &mut Cx<'_>,
        id: RequestId,
        method: &str,
        params: Option<RawJson>,
    ) {
        let result = match method {
            "initialize" | "server/discover" => {
                let capabilities = serde_json::json!({"tools": {"listChanged": true}});
                let info = serde_json::json!({"name": "mcp-streamable-echo", "version": env!("CARGO_PKG_VERSION")});
                Ok(self_description(method, capabilities, info))
            }
            "ping" => Ok(serde_json::json!({})),
            "tools/list" => Ok(serde_json::json!({"tools": [{
                "name": "echo", "description": "Echoes its text argument.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}
            }]})),
            "tools/call" => {
                let text = params
                    .map(|p| p.to_value())
                    .and_then(|v| {
                        v.pointer("/arguments/text")
                            .and_then(|t| t.as_str())
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
                Ok(serde_json::json!({"content": [{"type": "text", "text": text}]}))
            }
            other => Err(ErrorObject::new(
                METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        };
        cx.respond(&id, result.map(RawJson::from));
    }
}
