//! Placement benchmarks (filled in below).
fn main() {}
