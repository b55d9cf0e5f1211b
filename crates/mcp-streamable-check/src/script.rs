//! What every checker model does the same way, whatever its server side
//! (one endpoint, or a fleet): the client's scripted steps, the
//! application's oldest call, the endpoint's timers turned off.

use super::scenario::ClientStep;
use crate::sim::{Servers, World};
use mcp_streamable::ids::{RequestId, SessionId};
use mcp_streamable::jsonrpc::RawJson;
use mcp_streamable::server::SessionConfig;

/// Whether client `c` of `w` can run `step` now.
pub(crate) fn client_step_enabled<S: Servers>(w: &World<S>, c: usize, step: ClientStep) -> bool {
    let client = &w.clients[c];
    match step {
        ClientStep::Initialize => client.can_initialize(),
        ClientStep::Call | ClientStep::Notify => client.is_ready(),
        ClientStep::Cancel => client.pending().next().is_some(),
        ClientStep::Answer => client.asked().next().is_some(),
        ClientStep::Close => true,
        ClientStep::Listen => client.is_ready() && client.is_v2026(),
        ClientStep::Hijack => w.victim_of(c).is_some(),
    }
}

/// Client `c` of `w` runs `step`, the `pc`th of its script; `None` if it
/// could not.
pub(crate) fn run_client_step<S: Servers>(
    w: &mut World<S>,
    c: usize,
    step: ClientStep,
    pc: usize,
) -> Option<()> {
    let now = w.client_now(c);
    match step {
        ClientStep::Initialize => {
            w.initialize_on(c)?;
        }
        ClientStep::Call => {
            w.call_on(c, "echo")?;
        }
        ClientStep::Notify => {
            let _ = w.clients[c].notify("notifications/roots/list_changed", None, now);
            w.pump();
        }
        ClientStep::Cancel => {
            let id = w.clients[c].pending().next()?;
            let _ = w.clients[c].cancel(&id, now);
            w.pump();
        }
        ClientStep::Answer => {
            let id = w.clients[c].asked().next()?.clone();
            let _ = w.clients[c].respond(id, Ok(RawJson::empty_object()), now);
            w.pump();
        }
        ClientStep::Close => {
            w.clients[c].close(now);
            w.pump();
        }
        ClientStep::Listen => {
            // A listen the core refuses (`listens_max`, a pool with no
            // connection to spare) is an answer the application got: the
            // script goes on.
            let _ = w.listen_on(c);
        }
        ClientStep::Hijack => {
            if !w.hijack_on(c, pc as u64) {
                return None;
            }
            w.pump();
        }
    }
    Some(())
}

/// The oldest `tools/call` the application has not answered.
pub(crate) fn oldest_call<S: Servers>(w: &World<S>) -> Option<(SessionId, RequestId)> {
    w.server_pending
        .iter()
        .find(|(_, _, m, _)| &**m == "tools/call")
        .map(|(s, id, _, _)| (s.clone(), id.clone()))
}

/// The endpoint's own timers off (keepalive, idle and initialization
/// timeouts: time moves only when a model ticks, and these would add orders
/// no race needs), four streams per session. The deadline of the server's
/// requests to the client is off here too; a scenario sets it
/// (`settings.outbound_timeout_ms`, on by default in the single-server
/// world).
pub(crate) fn quiet_session(s: &mut SessionConfig) {
    s.keepalive_ms = None;
    s.idle_timeout_ms = None;
    s.init_timeout_ms = None;
    s.outbound_timeout_ms = None;
    s.streams_max = 4;
}
