//! The railyard CLI as a library: argument types, file formats, command implementations and
//! reports. `main.rs` only parses arguments and maps errors to exit codes, so every command can
//! be tested (and fuzzed) without spawning a process.

pub mod cluster_arg;
pub mod commands;
pub mod error;
pub mod formats;
pub mod input;
pub mod output;
pub mod report;
pub mod table;

pub use error::CliError;
