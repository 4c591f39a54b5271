//! Simulated time: whole milliseconds since the start of the trace.

use serde::Serialize;

/// A point in simulated time, in milliseconds since the trace's first arrival.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SimTime(pub u64);

impl SimTime {
    /// Time zero.
    pub const ZERO: SimTime = SimTime(0);

    /// From seconds (rounded to the nearest millisecond; negative and NaN become zero).
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_finite() && s > 0.0 {
            SimTime((s * 1000.0).round().min(u64::MAX as f64) as u64)
        } else {
            SimTime(0)
        }
    }

    /// As seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// `self + d` seconds, saturating.
    pub fn plus_secs(self, d: f64) -> Self {
        SimTime(self.0.saturating_add(SimTime::from_secs_f64(d).0))
    }

    /// Seconds from `earlier` to `self` (zero if `earlier` is later).
    pub fn secs_since(self, earlier: SimTime) -> f64 {
        self.0.saturating_sub(earlier.0) as f64 / 1000.0
    }
}
