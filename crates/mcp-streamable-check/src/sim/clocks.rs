//! How time passes in a world: one clock for everybody, or a clock per
//! component (each client, and the server side).
//!
//! With one clock, a tick moves the time every core reads, so a client's
//! next step (which sets its deadlines from the time) depends on every tick,
//! whoever's timer it fires. The model checker's partial-order reduction
//! needs the opposite: that a client's step be independent of what the
//! others do (`docs/reduction.md`). With a clock per component, a tick of
//! client `d` moves only `d`'s clock, so it commutes with client `c`'s steps.
//!
//! What that changes: hosts whose clocks run at unrelated rates. Each
//! component's own timers still fire in its own deadline order; the timers
//! of different components fire in any order (a superset of the orders one
//! clock allows between components). What one clock has and a clock per
//! component would not: time passing for `c` because of somebody else's
//! timer, so that `c`'s later deadlines land later among its own. An idle
//! step ([`World::idle_client`](super::World::idle_client): `c`'s clock
//! moves to just before its next deadline without firing it) brings those
//! orders back: `c` then arms its next timer as late as one clock could
//! have let it.

use serde::{Deserialize, Serialize};

/// How the clocks of a world run (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Clocks {
    /// A model's default: the checker decides ([`crate::CheckModel::new`]),
    /// a clock per component where the partial-order reduction can act
    /// (two clients or more, kept apart), one clock elsewhere. A world is
    /// never built with it; one that were would run one clock.
    #[default]
    Auto,
    /// One clock for every core: a tick jumps it to the earliest deadline
    /// and fires every timer due.
    Global,
    /// A clock per client and one for the server side: a tick of a
    /// component jumps its clock to its own next deadline and fires only its
    /// timers; an idle step moves a client's clock to just before it.
    PerComponent,
}
