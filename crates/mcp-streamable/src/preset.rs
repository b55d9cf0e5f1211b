//! What only the presets need: the scheduling points of real SDKs' races.
//!
//! FIXED decides everything in one step per input, so its cores have no
//! input of this kind. Some presets reproduce code whose outcome depends on
//! which of several tasks runs next: mcp-go's per-POST listener goroutines
//! competing for one session channel, a notification handler's two steps,
//! the two halves of a listen's start that some SDKs split, a client's
//! `initialize` post-processing. Which task runs next is not the core's to
//! decide, so it is an input: the checker explores every order, the
//! driver plays a seeded scheduler.
//!
//! Those inputs live here, behind [`Scheduled`], and not on the cores'
//! own API: a transport that runs FIXED never imports this module, and
//! under FIXED [`Scheduled::scheduling_points`] is always empty.
//!
//! ```
//! use mcp_streamable::preset::Scheduled;
//! use mcp_streamable::server::{EndpointConfig, ServerEndpoint};
//! use mcp_streamable::{IdSource, ServerPolicy};
//!
//! let endpoint = |policy| ServerEndpoint::with_ids(EndpointConfig::default(), policy, IdSource::reproducible(1));
//! let fixed = endpoint(ServerPolicy::FIXED);
//! assert!(fixed.scheduling_points().is_empty());
//! let mcp_go = endpoint(ServerPolicy::MCP_GO_0_44);
//! assert!(mcp_go.scheduling_points().is_empty(), "none until an exchange runs");
//! ```

use crate::ids::HttpId;
use crate::time::Instant;
use serde::{Deserialize, Serialize};

/// A scheduling point a driver may fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulingPoint {
    /// A listener task of exchange `http` wakes and takes the head of the
    /// session queue ([`SessionQueue::SharedCompeting`]).
    ///
    /// [`SessionQueue::SharedCompeting`]: crate::policy::SessionQueue::SharedCompeting
    ListenerWake,
    /// The handler of notification POST `http` takes its next step (writes
    /// its 202 head, then returns) under
    /// [`SessionQueue::SharedCompeting`].
    ///
    /// [`SessionQueue::SharedCompeting`]: crate::policy::SessionQueue::SharedCompeting
    HandlerStep,
    /// The half of a listen's start that its
    /// [`ListenAck`](crate::policy::ListenAck) leaves for later.
    ListenStep,
    /// A standalone GET whose `200` went out is wired to its session, and
    /// starts taking unrelated messages
    /// ([`GetRegistration::AfterHead`](crate::policy::GetRegistration::AfterHead)).
    RegisterGet,
    /// The writer task of POST `http`'s event stream starts: the priming
    /// event and what was written for its requests go out
    /// ([`RequestWriter::Lazy`](crate::policy::RequestWriter::Lazy)).
    StartWriter,
    /// A client's `initialize` foreground finishes its post-processing and
    /// commits the session
    /// ([`SessionCommit::AfterForegroundStep`](crate::policy::SessionCommit::AfterForegroundStep)).
    ForegroundStep,
}

impl SchedulingPoint {
    /// Whether the point finishes a step its preset split in two, so that
    /// what matters is what else happens in between (a listen registered
    /// before its acknowledgement, a GET's `200` out before its stream is
    /// wired, a writer not started yet), rather than which of several
    /// competing tasks runs first (mcp-go's listeners, a handler's steps).
    ///
    /// A driver that takes such a point in the turn that enabled it closes
    /// the window before any other input can land in it: correct, and
    /// invisible over the wire. [`ServerDriver::with_step_delay`] holds
    /// these points back to show the window; the competing ones keep being
    /// taken at once, in a seeded order, since their race is between
    /// themselves.
    ///
    /// [`ServerDriver::with_step_delay`]: crate::server::ServerDriver::with_step_delay
    pub fn leaves_a_window(self) -> bool {
        match self {
            SchedulingPoint::ListenerWake | SchedulingPoint::HandlerStep => false,
            SchedulingPoint::ListenStep
            | SchedulingPoint::RegisterGet
            | SchedulingPoint::StartWriter
            | SchedulingPoint::ForegroundStep => true,
        }
    }
}

/// A core whose preset leaves some steps' order to the driver.
pub trait Scheduled {
    /// The scheduling points that may fire now, in a stable order (none
    /// under FIXED).
    fn scheduling_points(&self) -> Vec<(HttpId, SchedulingPoint)>;

    /// Fires `point` of exchange `http`; whether anything happened (a
    /// point not offered now does nothing).
    fn handle_scheduling_point(
        &mut self,
        http: HttpId,
        point: SchedulingPoint,
        now: Instant,
    ) -> bool;
}
