//! Steps the search leaves out of a state because another path from the
//! same parent makes their successors: sleep sets, for the one step whose
//! independence the model knows by construction, a client's idle step.
//!
//! Under a clock per component, `Idle(c)` moves client `c`'s clock to just
//! before its next deadline and does nothing else. The server side's steps
//! (a request delivered, a response, a notify reaching a session, a drop
//! noticed, a server scheduling point, the server script and its timers)
//! never read or change a client's clock or core: the client's outputs are
//! drained only when it has some. So from a state `s` where both are
//! enabled, `s·a·Idle(c)` and `s·Idle(c)·a` are the same state, and neither
//! step enables or disables the other. The search explores `Idle(c)` from
//! `s`, and from `s·Idle(c)` it explores `a` (a step that is not an idle
//! step is never left out, and `s·Idle(c)` has the same ample component as
//! `s`: an idle step changes no other component). So `Idle(c)` sleeps in
//! `s·a`, and in every state reached from there by steps that are
//! independent of it, until a step of client `c` itself wakes it. This is
//! Godefroid's sleep set, restricted to idle steps: with a visited set it
//! still reaches every state; it only takes fewer steps to get there
//! (`docs/reduction.md`).
//!
//! And `TickClient(c)` from a state made by `Idle(c)` makes the state
//! `TickClient(c)` made from the parent (the tick sets the clock to the
//! deadline either way), and the parent explored that tick: it is enabled
//! wherever the idle step is, and is the same component's.
//!
//! Both are part of the partial-order reduction, on and off with it
//! ([`CheckModel::with_sleep_sets`] turns them off alone).

use super::model::{Action, CheckModel, State};

/// Client `c`'s bit in [`Covered::idles`], if it has one.
fn bit(c: usize) -> u64 {
    u32::try_from(c)
        .ok()
        .and_then(|c| 1u64.checked_shl(c))
        .unwrap_or(0)
}

/// What a state leaves out of its expansion (see the module docs). How a
/// state was reached is no part of what it is: this is kept beside the
/// state, out of its equality and fingerprint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Covered {
    /// Made by this client's idle step: its tick is left out.
    tick: Option<usize>,
    /// Clients (one bit each) whose idle step sleeps.
    idles: u64,
}

impl Covered {
    /// Whether `a` is left out.
    fn covers(&self, a: &Action) -> bool {
        match a {
            Action::TickClient { client } => self.tick == Some(*client),
            Action::Idle { client } => self.idles & bit(*client) != 0,
            _ => false,
        }
    }

    /// Nothing left out.
    fn is_empty(&self) -> bool {
        self.tick.is_none() && self.idles == 0
    }
}

impl CheckModel {
    /// Whether sleep sets act: asked for, the reduction on, and every
    /// step counted in the component it reaches. A server sharing one
    /// stateless transport ([`CheckModel::shares_stateless_requests`])
    /// counts an answer to one client in the component of the client whose
    /// request opened the shared session: the step that reaches the first
    /// would not wake its idle step.
    fn sleeps(&self) -> bool {
        self.reduction && self.sleep_sets && !self.shares_stateless_requests()
    }

    /// What the successor of `s` by `a` leaves out, asked of `s` before the
    /// step is taken.
    pub(super) fn covered_after(&self, s: &State, a: &Action) -> Covered {
        if !self.sleeps() {
            return Covered::default();
        }
        let idles = s.covered.0.idles;
        match a {
            // Independent of every idle step; what else it touches decides
            // nothing here. A step of one component also puts that
            // component's idle step to sleep, which `s` explored or left
            // asleep (it is enabled, and `a` being explored, the ample
            // component is `a`'s or none).
            //
            // The server script's step is a component's when it acts on the
            // oldest call (that call's); a `notify` is nobody's, and the
            // ample set that explores it (the `notify` alone) did not
            // explore the idle steps, so none is added.
            Action::DeliverRequest { .. }
            | Action::ServerRespond { .. }
            | Action::NotifySession { .. }
            | Action::ServerNotices { .. }
            | Action::ServerSchedule { .. }
            | Action::ServerStep
            | Action::TickSessions { .. } => {
                let own = self
                    .component_of(s, a)
                    .filter(|c| self.idle_enabled(&s.world, *c))
                    .map_or(0, bit);
                Covered {
                    tick: None,
                    idles: idles | own,
                }
            }
            // Independent of every idle step, but not a component's (the
            // sessions no client opened): none is added.
            Action::TickServer => Covered { tick: None, idles },
            // Client `client`'s own steps read its clock: its idle step
            // wakes. Other clients' idle steps are independent of them.
            Action::ClientStep { client }
            | Action::TickClient { client }
            | Action::Idle { client } => Covered {
                tick: matches!(a, Action::Idle { .. }).then_some(*client),
                idles: idles & !bit(*client),
            },
            Action::DeliverNext { .. } | Action::Drop { .. } | Action::ClientSchedule { .. } => {
                let wakes = self.component_of(s, a).map_or(u64::MAX, bit);
                Covered {
                    tick: None,
                    idles: idles & !wakes,
                }
            }
            // One clock for all, or the drops' owner chosen: nothing is
            // left out after them.
            Action::Tick | Action::ReserveDrops { .. } | Action::ReserveCall { .. } => {
                Covered::default()
            }
        }
    }

    /// Leaves out of `out` (what `s` would explore) what `s` covers, with
    /// sleep sets on: off, nothing is left out, whatever `s` was made by.
    pub(super) fn leave_out_covered(&self, s: &State, out: &mut Vec<Action>) {
        let covered = s.covered.0;
        if self.sleeps() && !covered.is_empty() {
            out.retain(|a| !covered.covers(a));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_for_the_first_64_clients_and_none_beyond() {
        assert_eq!(bit(0), 1);
        assert_eq!(bit(63), 1 << 63);
        assert_eq!(bit(64), 0);
        assert_eq!(bit(usize::MAX), 0);
    }

    #[test]
    fn covers_only_what_it_names() {
        let c = Covered {
            tick: Some(1),
            idles: bit(2),
        };
        assert!(c.covers(&Action::TickClient { client: 1 }));
        assert!(!c.covers(&Action::TickClient { client: 2 }));
        assert!(c.covers(&Action::Idle { client: 2 }));
        assert!(!c.covers(&Action::Idle { client: 1 }));
        assert!(!c.covers(&Action::ClientStep { client: 1 }));
        assert!(!c.is_empty());
        assert!(Covered::default().is_empty());
    }
}
