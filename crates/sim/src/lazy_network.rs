//! A network model made only when a run first needs it ([`Lazy`]), so a run whose jobs never
//! touch the network (`--no-network`, or every job inside one node or silent) never builds the
//! fabric's state.
//!
//! Design note (2026-12-02). The fabric's state for a cluster (`fabric::FabricState::new`: a
//! record per port, the solver's arrays) is the largest fixed cost of a run: on the 131,072-GPU
//! `oci-h100-131k` about 67 million instructions and tens of MiB of fresh pages, more than a
//! 10,000-job run without the network spends on its jobs. The engine asks its network only for
//! multi-node jobs with a communicating share, and for `+network` probes; [`Lazy`] makes the
//! real network at the first such call and forwards every call to it, so a run gives the same
//! bits as with the network made up front. Before it is made, [`Network::end`] has nothing to
//! end (no job has started on it) and [`Network::rates`] of no jobs is empty, both what the
//! real network would answer; every other call makes it.

use crate::engine::{NetJob, NetRate, Network};

/// A network made by `make` at the first call that needs one.
pub struct Lazy<N, F> {
    make: Option<F>,
    built: Option<N>,
}

impl<N: Network, F: FnOnce() -> N> Lazy<N, F> {
    /// A network that `make` builds when it is first needed.
    pub fn new(make: F) -> Self {
        Self {
            make: Some(make),
            built: None,
        }
    }

    /// Whether the network has been made.
    pub fn is_built(&self) -> bool {
        self.built.is_some()
    }

    /// The network, made now if it was not yet.
    fn get(&mut self) -> &mut N {
        let make = &mut self.make;
        self.built.get_or_insert_with(|| {
            let make = make.take().expect("made once: `built` is set right after");
            make()
        })
    }
}

impl<N: Network, F: FnOnce() -> N> Network for Lazy<N, F> {
    fn start(&mut self, job: &NetJob) {
        self.get().start(job);
    }

    fn end(&mut self, id: usize) {
        // Nothing started on a network not yet made, so there is nothing to end.
        if let Some(n) = &mut self.built {
            n.end(id);
        }
    }

    fn rates(&mut self, ids: &[usize]) -> Vec<NetRate> {
        match &mut self.built {
            None if ids.is_empty() => Vec::new(),
            _ => self.get().rates(ids),
        }
    }

    fn probe(&mut self, job: &NetJob) -> Option<fabric::Probe> {
        self.get().probe(job)
    }

    fn step_probe(&mut self, job: &NetJob) -> Option<f64> {
        self.get().step_probe(job)
    }

    fn step_bound(&mut self, job: &NetJob) -> Option<f64> {
        self.get().step_bound(job)
    }

    fn provisional(&mut self, id: usize) -> Option<NetRate> {
        self.get().provisional(id)
    }
}

impl<N: std::fmt::Debug, F> std::fmt::Debug for Lazy<N, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lazy").field("built", &self.built).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A network that writes down every call it gets.
    #[derive(Debug, Default)]
    struct Log(Vec<String>);

    impl Network for Log {
        fn start(&mut self, job: &NetJob) {
            self.0.push(format!("start {}", job.id));
        }
        fn end(&mut self, id: usize) {
            self.0.push(format!("end {id}"));
        }
        fn rates(&mut self, ids: &[usize]) -> Vec<NetRate> {
            self.0.push(format!("rates {ids:?}"));
            ids.iter()
                .map(|&i| NetRate {
                    ideal_busbw: 1.0,
                    achieved_busbw: i as f64,
                })
                .collect()
        }
    }

    fn job(id: usize) -> NetJob {
        NetJob {
            id,
            name: format!("j{id}"),
            nodes: Vec::new(),
            gpus_per_node: 8,
            bytes: 0.0,
            training: None,
        }
    }

    #[test]
    fn a_network_is_made_at_the_first_start_and_gets_every_call_from_then_on() {
        let mut made = 0;
        let mut lazy = Lazy::new(|| {
            made += 1;
            Log::default()
        });
        // What the real network answers before anything starts, without making it.
        lazy.end(3);
        assert_eq!(lazy.rates(&[]), Vec::new());
        assert!(!lazy.is_built());
        lazy.start(&job(1));
        lazy.start(&job(2));
        lazy.end(1);
        let rates = lazy.rates(&[2]);
        assert_eq!(rates[0].achieved_busbw, 2.0);
        assert_eq!(lazy.rates(&[]), Vec::new());
        let log = lazy.built.take().map(|l| l.0);
        drop(lazy);
        assert_eq!(made, 1);
        let want = ["start 1", "start 2", "end 1", "rates [2]", "rates []"];
        assert_eq!(log, Some(want.map(String::from).to_vec()));
    }

    #[test]
    fn a_probe_makes_the_network() {
        let mut lazy = Lazy::new(Log::default);
        assert_eq!(lazy.probe(&job(0)), None);
        assert!(lazy.is_built());
        let mut lazy = Lazy::new(Log::default);
        assert_eq!(lazy.step_probe(&job(0)), None);
        assert!(lazy.is_built());
    }
}
