//! [`Scheduler`]: how a driver takes a preset's scheduling points, written
//! once for the plain driver and the fleet's.
//!
//! A core whose preset leaves some steps' order open ([`Scheduled`]) offers
//! the points that may fire now; the scheduler plays the runtime those SDKs
//! ran on. Competing points (mcp-go's listeners) are taken after each input,
//! in a seeded random order, until none changes anything. A point that
//! leaves a window ([`SchedulingPoint::leaves_a_window`]) is taken the same
//! way, or, with a step delay, only once it has been enabled for that long:
//! the driver reports the deadline in its `poll_timeout`.

use crate::ids::HttpId;
use crate::preset::{Scheduled, SchedulingPoint};
use crate::rng::SeededRng;
use crate::time::Instant;
use std::collections::BTreeMap;
use std::time::Duration;

/// A driver's scheduler for a preset's points (see the module docs).
pub(crate) struct Scheduler {
    /// Picks among the enabled points: seeded, so a run can be repeated.
    rng: SeededRng,
    /// How long a point that leaves a window waits before it may fire;
    /// `None`: in the turn that enabled it.
    step_delay: Option<Duration>,
    /// Each such point enabled now, and when it may fire.
    held: BTreeMap<(HttpId, SchedulingPoint), Instant>,
}

impl Scheduler {
    pub(crate) fn new(seed: u64) -> Self {
        Scheduler {
            rng: SeededRng::new(seed),
            step_delay: None,
            held: BTreeMap::new(),
        }
    }

    pub(crate) fn set_step_delay(&mut self, delay: Duration) {
        self.step_delay = Some(delay);
    }

    /// Whether a point is held back for later.
    pub(crate) fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// When the earliest held point may fire.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.held.values().min().copied()
    }

    /// Fires enabled points of `core` in a seeded random order until one
    /// changes something; whether one did. A point held back is offered
    /// once its delay has passed.
    pub(crate) fn fire_one(&mut self, core: &mut impl Scheduled, now: Instant) -> bool {
        let mut points = core.scheduling_points();
        if let Some(delay) = self.step_delay {
            let held = &mut self.held;
            held.retain(|p, _| points.contains(p));
            for p in points.iter().filter(|(_, point)| point.leaves_a_window()) {
                held.entry(*p).or_insert(now + delay);
            }
            points.retain(|p| held.get(p).is_none_or(|due| *due <= now));
        }
        while !points.is_empty() {
            let i = (self.rng.next_u64() % points.len() as u64) as usize;
            let (http, point) = points.swap_remove(i);
            if core.handle_scheduling_point(http, point, now) {
                self.held.remove(&(http, point));
                return true;
            }
        }
        false
    }
}

/// The earlier of two deadlines.
pub(crate) fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
