//! railyard: the command-line face of the topology, scheduler, fabric and simulator crates.

fn main() {}
