//! Command implementations. Each returns the text to print, so tests call them directly.

pub mod cables;
pub mod doctor;
pub mod fabric;
pub mod launch;
pub mod lint;
pub mod place;
pub mod queues;
pub mod schema;
pub mod simulate;
pub mod step;
pub mod sweep;
pub mod topo;
pub mod trace;
