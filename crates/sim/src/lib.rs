//! Deterministic discrete-event simulation of a GPU cluster replaying a job trace: arrivals,
//! starts, completions and preemptions in `(time, sequence)` order, jobs slowed by the network
//! they actually get. Pure: the clock is [`SimTime`], advanced only by events.

pub mod engine;
pub mod events;
pub mod failures;
pub mod fragmentation;
pub mod lazy_network;
pub mod metrics;
pub mod network;
pub mod policies;
pub mod queues;
pub mod runtime;
pub mod shares;
pub mod synth;
pub mod synthetic;
pub mod time;
pub mod trace;

pub use events::{EventQueue, Scheduled};
pub use metrics::{percentile, Cdf, WaitStats};
pub use runtime::{slowdown, CommProfile};
pub use time::SimTime;
pub use trace::{CheckpointAsk, PodShape, TopologyAsk, TraceJob};
