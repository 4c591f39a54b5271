//! The runtime model: a job's trace duration is its duration on an ideal network; on a real one
//! the communicating share of each step stretches by ideal ÷ achieved bus bandwidth.

use serde::Serialize;

/// How much a job communicates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CommProfile {
    /// Share of an ideal step spent in collectives that do not overlap compute, 0..=1.
    pub comm_share: f64,
    /// Bytes each rank all-reduces per step (drives the fabric model's message size).
    pub bytes_per_step: f64,
}

/// Slowdown factor (≥ 1 when achieved ≤ ideal) of a job whose communicating share runs at
/// `achieved` instead of `ideal` bus bandwidth: `(1 − c) + c · ideal / achieved`; the fabric's
/// what-if probe prices candidates with the same function.
pub use fabric::slowdown;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_bandwidth_doubles_the_communicating_share() {
        assert_eq!(slowdown(0.3, 100.0, 50.0), 0.7 + 0.6);
        assert_eq!(slowdown(0.0, 100.0, 1.0), 1.0);
        assert_eq!(slowdown(1.0, 100.0, 100.0), 1.0);
        assert!(slowdown(0.5, 100.0, 0.0).is_infinite());
    }
}
