//! The railyard CLI as a library: argument types, `--cluster` resolution, output selection and
//! the commands' text rendering. The work lives in library crates (`formats`, `ops`, `report`,
//! `sim`, `sched`, `fabric`, `topology`); `main.rs` only parses arguments and maps errors to
//! exit codes, so every command can be tested without spawning a process.

pub mod args;
pub mod cli;
pub mod cluster_arg;
pub mod commands;
pub mod error;
pub mod output;

pub use error::CliError;
