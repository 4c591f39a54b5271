//! The network model as the engine sees it: the [`Network`] trait it asks for the bandwidth of
//! running multi-node jobs, the job it describes ([`NetJob`]) and the answer ([`NetRate`]).
//! `sim::network::FabricNetwork` implements it over the fabric model; the engine knows only this
//! interface.

use topology::NodeId;

/// A multi-node job as the network model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct NetJob {
    /// The job's index in the trace: stable while it runs (the network model's job ID).
    pub id: usize,
    /// Job name.
    pub name: String,
    /// Nodes in rank order.
    pub nodes: Vec<NodeId>,
    /// GPUs used per node.
    pub gpus_per_node: u32,
    /// Bytes all-reduced per step.
    pub bytes: f64,
    /// The model and layout it trains (its ranks: `nodes` × `gpus_per_node` in order), if any.
    pub training: Option<layout::Training>,
}

/// The network model `simulate` asks for bandwidth. Whenever the set of running multi-node
/// jobs has changed, the engine calls [`Network::end`] for each job that left it, then
/// [`Network::start`] for each that joined (both in ascending ID), then [`Network::rates`] for
/// all of them. A job that is preempted and restarts ends and starts again.
pub trait Network {
    /// `job` joined the running set.
    fn start(&mut self, job: &NetJob);
    /// Job `id` left the running set.
    fn end(&mut self, id: usize);
    /// The rates of the running jobs `ids` (ascending), in that order.
    fn rates(&mut self, ids: &[usize]) -> Vec<NetRate>;
    /// What starting `job` beside the running jobs would do, for network-aware placement
    /// (`fabric::probe`); the running jobs stay as they were. `None`: this network cannot
    /// tell, and every candidate scores its ideal.
    fn probe(&mut self, job: &NetJob) -> Option<fabric::Probe> {
        let _ = job;
        None
    }
    /// The step time, s, of layout job `job` (its `training` set) on its nodes beside the
    /// running jobs, for network-aware placement of layout jobs; the running jobs stay as they
    /// were. `None`: this network cannot tell (or the job has no layout), and the candidates
    /// are scored by [`Network::probe`].
    fn step_probe(&mut self, job: &NetJob) -> Option<f64> {
        let _ = job;
        None
    }
    /// A step time, s, [`Network::step_probe`] of the same `job` is never below, and cheaper
    /// (its step alone). `None`: no bound.
    fn step_bound(&mut self, job: &NetJob) -> Option<f64> {
        let _ = job;
        None
    }
    /// A quick estimate of running job `id`'s rate without re-solving the others, for a job
    /// started between network rounds. `None`: it runs at its ideal rate until the next round.
    fn provisional(&mut self, id: usize) -> Option<NetRate> {
        let _ = id;
        None
    }
}

/// What the network gives one job: ideal and achieved bus bandwidth, GB/s. For a layout job
/// (whose communicating share is 1) a relative rate: ideal 1, achieved = its ideal step ÷ its
/// step now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetRate {
    /// Bus bandwidth with the fabric to itself and perfect load balance.
    pub ideal_busbw: f64,
    /// Bus bandwidth it gets now, sharing links with the other jobs.
    pub achieved_busbw: f64,
}
