//! The network models the simulator uses: every running multi-node job runs a Ring AllReduce,
//! and the fabric model (`fabric`) gives each its achieved and ideal bus bandwidth with all of
//! them sharing the links together — kept incrementally ([`FabricNetwork`]) or solved from
//! scratch on every change ([`fabric_network_from_scratch`], the reference it is tested
//! against); and [`FromScratch`], which turns a function of the whole running set into a
//! [`Network`].

use std::collections::{BTreeMap, BTreeSet};

use fabric::{Collective, Fabric, FabricState, JobTraffic, Rank, RoutedJob, RoutingConfig};
use topology::Cluster;

use crate::engine::{NetJob, NetRate, Network};

/// The fabric model kept between changes ([`fabric::FabricState`]): a job is routed once when
/// it starts (job ID = its trace index) and rates are re-solved only over the jobs that share
/// links with the jobs that started or ended.
#[derive(Debug)]
pub struct FabricNetwork<'c> {
    state: FabricState<'c>,
    /// IDs of the running jobs, ascending (what a probe reads before and after).
    running: BTreeSet<u64>,
}

/// The network model [`crate::engine::simulate`] uses by default, backed by the fabric model.
pub fn fabric_network(cluster: &Cluster, routing: RoutingConfig) -> FabricNetwork<'_> {
    FabricNetwork {
        state: FabricState::new(cluster, routing),
        running: BTreeSet::new(),
    }
}

impl FabricNetwork<'_> {
    /// Sum each job's ideal pace per leaf pair ([`fabric::FabricState::with_grouped_ideal`]):
    /// faster, the same up to rounding; for runs with network rounds, which approximate anyway.
    pub fn with_grouped_ideal(mut self, grouped: bool) -> Self {
        self.state = self.state.with_grouped_ideal(grouped);
        self
    }
}

impl Network for FabricNetwork<'_> {
    fn start(&mut self, job: &NetJob) {
        self.state
            .start(job.id as u64, &traffic(job))
            .expect("the scheduler only places jobs on GPUs the cluster has");
        self.running.insert(job.id as u64);
    }

    fn end(&mut self, id: usize) {
        self.state.end(id as u64);
        self.running.remove(&(id as u64));
    }

    fn probe(&mut self, job: &NetJob) -> Option<fabric::Probe> {
        let running: Vec<u64> = self.running.iter().copied().collect();
        fabric::probe(&mut self.state, job.id as u64, &traffic(job), &running).ok()
    }

    fn provisional(&mut self, id: usize) -> Option<NetRate> {
        self.state.provisional(id as u64).map(|r| NetRate {
            ideal_busbw: r.ideal_busbw_gb_s,
            achieved_busbw: r.busbw_gb_s,
        })
    }

    fn rates(&mut self, ids: &[usize]) -> Vec<NetRate> {
        self.state.solve();
        ids.iter()
            .map(|&id| {
                let r = self
                    .state
                    .result(id as u64)
                    .expect("the engine asks only for running jobs");
                NetRate {
                    ideal_busbw: r.ideal_busbw_gb_s,
                    achieved_busbw: r.busbw_gb_s,
                }
            })
            .collect()
    }
}

/// A [`Network`] from a function of the whole running set (jobs in ascending ID), called on
/// every change: for hand-made networks in tests and for from-scratch references.
#[derive(Clone, Debug)]
pub struct FromScratch<F> {
    running: BTreeMap<usize, NetJob>,
    rates_of: F,
}

impl<F: FnMut(&[NetJob]) -> Vec<NetRate>> FromScratch<F> {
    /// The network whose rates are `rates_of(running jobs)`.
    pub fn new(rates_of: F) -> Self {
        Self {
            running: BTreeMap::new(),
            rates_of,
        }
    }
}

impl<F: FnMut(&[NetJob]) -> Vec<NetRate>> Network for FromScratch<F> {
    fn start(&mut self, job: &NetJob) {
        self.running.insert(job.id, job.clone());
    }

    fn end(&mut self, id: usize) {
        self.running.remove(&id);
    }

    fn rates(&mut self, ids: &[usize]) -> Vec<NetRate> {
        let jobs: Vec<NetJob> = ids.iter().map(|i| self.running[i].clone()).collect();
        (self.rates_of)(&jobs)
    }
}

/// The fabric model solved from scratch on every change: every running job routed again and
/// all of them solved together ([`Fabric::solve`]). Slow; the reference [`fabric_network`] must
/// match bit for bit.
pub fn fabric_network_from_scratch(
    cluster: &Cluster,
    routing: RoutingConfig,
) -> FromScratch<impl FnMut(&[NetJob]) -> Vec<NetRate> + '_> {
    FromScratch::new(move |jobs: &[NetJob]| {
        let mut fabric = Fabric::new(cluster);
        let routed: Vec<RoutedJob> = jobs
            .iter()
            .map(|j| fabric.route(&traffic(j), &routing, j.id as u64))
            .collect::<Result<_, _>>()
            .expect("the scheduler only places jobs on GPUs the cluster has");
        let refs: Vec<&RoutedJob> = routed.iter().collect();
        let alloc = fabric.solve(&refs);
        routed
            .iter()
            .zip(&alloc.busbw_gbps)
            .map(|(j, &b)| {
                let r = fabric.job_result(j, b);
                NetRate {
                    ideal_busbw: r.ideal_busbw_gb_s,
                    achieved_busbw: r.busbw_gb_s,
                }
            })
            .collect()
    })
}

/// A job's Ring AllReduce over all its GPUs, node by node in rank order.
fn traffic(job: &NetJob) -> JobTraffic {
    JobTraffic {
        ranks: job
            .nodes
            .iter()
            .flat_map(|&node| (0..job.gpus_per_node).map(move |gpu| Rank { node, gpu }))
            .collect(),
        collective: Collective::AllReduce,
    }
}
