//! The CLI's integration tests: one binary, one module per command family.

mod fabric;
