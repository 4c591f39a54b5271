//! The fabric model: resources (link directions and NVLink ports) with capacities, jobs routed
//! into flows, max-min fair rates over all running jobs, and what a job gets out of them.
//!
//! Design note (2026-11-30). [`Fabric`] owns the capacities and the routing caches and is the
//! single place where flows are made ([`Fabric::route`]) and rates decided ([`Fabric::solve`]).
//! A [`RoutedJob`] is immutable once made and carries its *ideal* bus bandwidth (the same ranks
//! alone on the fabric with perfect load balance, i.e. adaptive routing), so a simulator routes a
//! job once when it starts and only re-solves rates when the set of running jobs changes.
//!
//! Capacities are what NCCL can use of each resource: a switch-to-switch port its line rate; a
//! NIC port NCCL's per-channel speed for it (the ring search's speed array, 48 GB/s for a
//! 400 Gb/s port, [`crate::nccl::channel_speed_gb_s`]); a GPU's NVLink its line rate times
//! NCCL's NVLink efficiency ([`crate::nccl::GpuArch::nvlink_efficiency`]).
//!
//! Rates: a job moves at one pace, its bus bandwidth `b`, and each of its flows at its share of
//! it (`share × b`). Jobs share the fabric max-min fairly *as jobs*: every job's pace rises
//! together and a job stops rising when a resource it uses fills; so a job held back by one
//! slow flow takes from every other resource only what that pace needs and leaves the rest to
//! the others (where per-flow max-min followed by "each job at its slowest flow" stranded it).
//! Computed exactly, without iterating, by progressive filling over jobs whose path on each
//! resource is the sum of its flows' shares there ([`crate::job_max_min`]).
//!
//! Cost (2026-12-02). [`Fabric::solve`] and [`Fabric::paces`] solve only the resources the
//! jobs touch, renumbered in ascending order ([`crate::SparseSolver`], kept in the fabric):
//! every job's row together is a union of whole components, so the paces are the bits of the
//! dense solve over every resource, at a cost in the jobs' resources. Only `solve` still
//! makes the dense load per resource (for hot links); callers that read paces call `paces`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use topology::{Cluster, Endpoint, NodeId};

use crate::collective::{
    connections, nccl_nodes, plan_channels, validate_ranks, Collective, Connection, Hop, NicPort,
    Rank,
};
use crate::error::{FabricError, MAX_FLOWS};
use crate::hash::{FiveTuple, IPPROTO_UDP};
use crate::maxmin::{add_load, alone_level, FlowPaths, SparseSolver};
use crate::nccl::{channel_speed_gb_s, Algorithm, GpuArch};
use crate::routing::{
    endpoint_name, plan_for, Plan, PortIndex, Router, RoutingConfig, RoutingMode,
};
use crate::sport::{mix64, qp_number, udp_source_port};

/// One job's traffic: its ranks (GPUs, in rank order) and the collective they run.
#[derive(Clone, Debug, PartialEq)]
pub struct JobTraffic {
    /// Ranks in rank order.
    pub ranks: Vec<Rank>,
    /// The collective.
    pub collective: Collective,
}

/// What a resource is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// One port (cable) of a link in one direction: `up` from its lower end to its upper
    /// switch, else down.
    Link {
        /// The link.
        link: topology::LinkId,
        /// The port of the link (0-based, below [`topology::Link::ports`]).
        port: u32,
        /// Direction.
        up: bool,
    },
    /// A GPU's NVLink port: sending (`out`) or receiving.
    Nvlink {
        /// The host.
        node: NodeId,
        /// GPU index.
        gpu: u32,
        /// Direction.
        out: bool,
    },
}

/// A job routed into flows, ready to share the fabric with others.
#[derive(Clone, Debug)]
pub struct RoutedJob {
    /// Number of ranks.
    pub n_ranks: usize,
    /// The collective.
    pub collective: Collective,
    /// The flows (one per QP of each network connection, one per NVLink connection).
    pub flows: FlowPaths,
    /// Fraction of the job's bus bytes each flow carries.
    pub shares: Vec<f64>,
    /// Flows that cross the switch fabric.
    pub network_flows: usize,
    /// The algorithm the flows follow.
    pub algorithm: Algorithm,
    /// NCCL channels ([`crate::nccl::channel_plan`]; 1 for AllToAll).
    pub channels: u32,
    /// Channels of NCCL's ring/tree search graph ([`crate::nccl::ChannelPlan::graph_channels`];
    /// 1 for AllToAll).
    pub graph_channels: u32,
    /// NCCL nodes (NVLink domains) of the job.
    pub n_nodes: usize,
    /// The job's GPU generation (its oldest GPU).
    pub arch: GpuArch,
    /// Bus bandwidth the job gets alone with perfect load balance, Gb/s.
    pub ideal_busbw_gbps: f64,
    /// Worst one-way latency between two ranks that exchange data, ns.
    pub latency_ns: f64,
}

/// Rates of all flows of several jobs.
#[derive(Clone, Debug)]
pub struct Allocation {
    /// Rate of each flow, per job, Gb/s: its share of the job's pace.
    pub rates: Vec<Vec<f64>>,
    /// Bus bandwidth each job achieves, Gb/s: job-level max-min fair pace (0 when nothing
    /// the job uses has a known capacity).
    pub busbw_gbps: Vec<f64>,
    /// Load on each resource when every job runs at its achieved pace, Gb/s.
    pub load_gbps: Vec<f64>,
}

/// What one job gets from the fabric.
#[derive(Clone, Debug, PartialEq)]
pub struct JobResult {
    /// Number of ranks.
    pub n_ranks: usize,
    /// The collective.
    pub collective: Collective,
    /// Algorithm bandwidth, GB/s.
    pub algbw_gb_s: f64,
    /// nccl-tests bus bandwidth, GB/s.
    pub busbw_gb_s: f64,
    /// Bus bandwidth alone with perfect load balance, GB/s.
    pub ideal_busbw_gb_s: f64,
    /// busbw / ideal (1 when ideal is 0).
    pub efficiency: f64,
    /// Worst one-way latency between ranks that exchange data, µs.
    pub latency_us: f64,
}

impl JobResult {
    /// Alpha-beta estimate of the collective's time for a buffer of `bytes`, µs: latency-bound
    /// steps × worst latency + bytes / algbw.
    pub fn time_us(&self, bytes: f64) -> f64 {
        let alpha = self.collective.latency_steps(self.n_ranks) * self.latency_us;
        let beta = if self.algbw_gb_s > 0.0 {
            bytes / (self.algbw_gb_s * 1e3)
        } else {
            f64::INFINITY
        };
        alpha + beta
    }
}

/// A link port direction's utilisation.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkLoad {
    /// The lower end's name for up, the upper switch's for down (with `:pN` for port N of a
    /// link of several ports).
    pub from: String,
    /// The other end.
    pub to: String,
    /// Tier of the link's upper switch.
    pub tier: u8,
    /// Load over capacity at the jobs' achieved pace.
    pub utilization: f64,
}

/// The fabric of one cluster: capacities and routing caches.
///
/// Resources are every port of every link in each direction (numbered by [`PortIndex`])
/// followed by every GPU's NVLink port out and in. A node whose `nvlink_gbps` is 0 (unknown)
/// puts no limit on its GPUs' NVLink traffic.
#[derive(Debug)]
pub struct Fabric<'c> {
    cluster: &'c Cluster,
    ports: PortIndex,
    gpu_offset: Vec<u32>,
    capacity: Vec<f64>,
    router: Router,
    /// Memory for the next job's flows ([`Fabric::recycle`]).
    spare: FlowPaths,
    /// Per resource, all zeros between calls ([`Fabric::alone_pace`]).
    sums: Vec<f64>,
    /// Scratch for one flow's path (kept to save its growth on every connection).
    path: Vec<(u32, f64)>,
    /// The last job's connections: a job routed twice in a row (its flows, then its ideal
    /// pace) is planned once.
    connections: Option<JobConnections>,
    /// Scratch of [`Fabric::paces`] and [`Fabric::solve`], sized to the fabric at the first
    /// solve (a `RefCell` so solving stays `&self`).
    solver: RefCell<Option<SparseSolver>>,
}

/// A job's NCCL connections and what they were planned from (all of what they depend on
/// besides the cluster).
#[derive(Debug)]
struct JobConnections {
    ranks: Vec<Rank>,
    collective: Collective,
    algorithm: Algorithm,
    nccl: crate::nccl::NcclConfig,
    arch: GpuArch,
    channels: u32,
    graph_channels: u32,
    n_nodes: usize,
    conns: Vec<Connection>,
}

impl<'c> Fabric<'c> {
    /// The model of a cluster's fabric.
    pub fn new(cluster: &'c Cluster) -> Self {
        let ports = PortIndex::new(cluster);
        let mut gpu_offset = Vec::with_capacity(cluster.nodes.len() + 1);
        let mut total = 0u32;
        for n in &cluster.nodes {
            gpu_offset.push(total);
            total += n.gpus;
        }
        gpu_offset.push(total);
        let mut capacity = Vec::with_capacity(ports.n_ports() as usize * 2 + total as usize * 2);
        for l in &cluster.links {
            let line = l.port_gbps();
            let usable = match l.lower {
                Endpoint::Nic { node, .. } => nic_port_usable_gbps(cluster.node(node), line),
                Endpoint::Switch(_) => line,
            };
            for _ in 0..l.ports.max(1) * 2 {
                capacity.push(usable);
            }
        }
        for n in &cluster.nodes {
            let nvl = n.nvlink_gbps * GpuArch::from_nvlink_gbps(n.nvlink_gbps).nvlink_efficiency();
            for _ in 0..n.gpus * 2 {
                capacity.push(nvl);
            }
        }
        Self {
            cluster,
            ports,
            gpu_offset,
            capacity,
            router: Router::new(cluster),
            spare: FlowPaths::new(),
            sums: Vec::new(),
            path: Vec::new(),
            connections: None,
            solver: RefCell::new(None),
        }
    }

    /// The cluster.
    pub fn cluster(&self) -> &'c Cluster {
        self.cluster
    }

    /// Capacity of every resource, Gb/s, indexed by resource: what NCCL can use of it.
    pub fn capacity(&self) -> &[f64] {
        &self.capacity
    }

    /// Number of resources.
    pub fn n_resources(&self) -> usize {
        self.capacity.len()
    }

    /// The numbering of link ports.
    pub fn ports(&self) -> &PortIndex {
        &self.ports
    }

    /// What resource `r` is.
    pub fn resource(&self, r: u32) -> Resource {
        let n_link_res = self.ports.n_ports() * 2;
        if r < n_link_res {
            let (link, port, up) = self.ports.locate(r);
            Resource::Link { link, port, up }
        } else {
            let g = (r - n_link_res) / 2;
            let node = self.gpu_offset.partition_point(|&o| o <= g) - 1;
            Resource::Nvlink {
                node: NodeId::from_index(node),
                gpu: g - self.gpu_offset[node],
                out: (r - n_link_res) % 2 == 0,
            }
        }
    }

    fn nvlink_resource(&self, rank: Rank, out: bool) -> u32 {
        self.ports.n_ports() * 2
            + (self.gpu_offset[rank.node.index()] + rank.gpu) * 2
            + u32::from(!out)
    }

    /// Route a job's collective into flows under `cfg` with NCCL's Ring (AllToAll: direct
    /// connections). `job_id` makes QP numbers differ between jobs. Also computes the job's
    /// ideal bus bandwidth (alone, adaptive routing).
    pub fn route(
        &mut self,
        job: &JobTraffic,
        cfg: &RoutingConfig,
        job_id: u64,
    ) -> Result<RoutedJob, FabricError> {
        self.route_algorithm(job, Algorithm::Ring, cfg, job_id)
    }

    /// Like [`Fabric::route`] with the given algorithm (Tree applies to AllReduce only; other
    /// collectives use Ring).
    pub fn route_algorithm(
        &mut self,
        job: &JobTraffic,
        algorithm: Algorithm,
        cfg: &RoutingConfig,
        job_id: u64,
    ) -> Result<RoutedJob, FabricError> {
        let routed = self.route_flows_algorithm(job, algorithm, cfg, job_id)?;
        let ideal = match ideal_routing(cfg) {
            None => self.paces(&[&routed])[0],
            Some(_) => self.ideal_busbw(job, algorithm, cfg, job_id)?,
        };
        Ok(RoutedJob {
            ideal_busbw_gbps: ideal,
            ..routed
        })
    }

    /// What [`Fabric::route_algorithm`] gives as `ideal_busbw_gbps`, without routing the job
    /// under `cfg` itself when that is not the ideal routing: its bus bandwidth alone under the
    /// ideal routing (Gb/s).
    pub fn ideal_busbw(
        &mut self,
        job: &JobTraffic,
        algorithm: Algorithm,
        cfg: &RoutingConfig,
        job_id: u64,
    ) -> Result<f64, FabricError> {
        let ideal_cfg = ideal_routing(cfg).unwrap_or(*cfg);
        let mut alone = self.route_flows_algorithm(job, algorithm, &ideal_cfg, job_id)?;
        let pace = self.paces(&[&alone])[0];
        self.recycle(std::mem::take(&mut alone.flows));
        Ok(pace)
    }

    /// Like [`Fabric::route`] but without the ideal reference (`ideal_busbw_gbps` is left at
    /// 0): for callers that already know it, or only want the flows.
    pub fn route_flows(
        &mut self,
        job: &JobTraffic,
        cfg: &RoutingConfig,
        job_id: u64,
    ) -> Result<RoutedJob, FabricError> {
        self.route_flows_algorithm(job, Algorithm::Ring, cfg, job_id)
    }

    /// Give back a routed job's flows once they are no longer needed: the next route reuses
    /// their memory instead of growing a new buffer.
    pub fn recycle(&mut self, flows: FlowPaths) {
        self.spare = flows;
    }

    /// [`Fabric::route_flows`] with the given algorithm.
    pub fn route_flows_algorithm(
        &mut self,
        job: &JobTraffic,
        algorithm: Algorithm,
        cfg: &RoutingConfig,
        job_id: u64,
    ) -> Result<RoutedJob, FabricError> {
        let mut flows = std::mem::take(&mut self.spare);
        flows.clear();
        let mut sink = (flows, Vec::new());
        let routed = self.route_into(job, algorithm, cfg, job_id, &mut sink)?;
        let (flows, shares) = sink;
        Ok(RoutedJob {
            flows,
            shares,
            ..routed
        })
    }

    /// The pace job `job_id` would get alone under `cfg` with the ring algorithm: its lowest
    /// level alone over the resources it loads — the same bits as aggregating
    /// [`Fabric::route_flows`]' flows and taking the lowest level of the row, without keeping
    /// the flows. Infinite when it loads no resource.
    pub fn alone_pace(
        &mut self,
        job: &JobTraffic,
        cfg: &RoutingConfig,
        job_id: u64,
    ) -> Result<f64, FabricError> {
        self.alone_pace_summed(job, cfg, job_id, SetAside::PerFlow(Vec::new()))
    }

    /// [`Fabric::alone_pace`] with each leaf pair's sprayed switch-to-switch load summed once
    /// (its flows' shares added first): the same quantity up to rounding, not the same bits,
    /// and far fewer additions for large jobs. For approximate runs (network rounds).
    pub fn alone_pace_grouped(
        &mut self,
        job: &JobTraffic,
        cfg: &RoutingConfig,
        job_id: u64,
    ) -> Result<f64, FabricError> {
        self.alone_pace_summed(job, cfg, job_id, SetAside::ByLeafPair(BTreeMap::new()))
    }

    fn alone_pace_summed(
        &mut self,
        job: &JobTraffic,
        cfg: &RoutingConfig,
        job_id: u64,
        set_aside: SetAside,
    ) -> Result<f64, FabricError> {
        let mut sink = LoadSums {
            sums: std::mem::take(&mut self.sums),
            touched: Vec::new(),
            set_aside,
        };
        sink.sums.resize(self.capacity.len(), 0.0);
        let routed = self.route_into(job, Algorithm::Ring, cfg, job_id, &mut sink);
        // The sprayed flows' inner hops were left out: bound what they could add first.
        // Grouped, a leaf pair's hops out of and into its leaves are added now; flow by flow,
        // routing added them.
        let (groups, add_ends) =
            match std::mem::replace(&mut sink.set_aside, SetAside::PerFlow(Vec::new())) {
                SetAside::ByLeafPair(pairs) => {
                    (pairs.into_values().map(|(p, s)| (p, s, 1)).collect(), true)
                }
                SetAside::PerFlow(connections) => (connections, false),
            };
        let mut inner_bound = 0.0f64;
        for (plan, share, flows) in &groups {
            let sprayed = plan.sprayed().expect("spraying made the ends");
            if add_ends {
                add_load(
                    &mut sink.sums,
                    &mut sink.touched,
                    sprayed.ends().iter().copied(),
                    *share,
                );
            }
            inner_bound += share * f64::from(*flows) * sprayed.inner_worst();
        }
        let lowest = |sink: &LoadSums| {
            sink.touched
                .iter()
                .map(|&e| alone_level(self.capacity[e as usize], sink.sums[e as usize] * 1.0))
                .fold(f64::INFINITY, f64::min)
        };
        let mut level = lowest(&sink);
        // Every inner hop's level is at least 1 / inner_bound (false when not a number).
        let inner_clear = inner_bound * level * (1.0 + INNER_MARGIN) < 1.0;
        if !inner_clear {
            // An inner hop might pace the job: add them all, in routing order.
            for (plan, share, flows) in &groups {
                let inner = self.router.spray_inner(self.cluster, &self.ports, plan);
                for _ in 0..*flows {
                    add_load(
                        &mut sink.sums,
                        &mut sink.touched,
                        inner.iter().copied(),
                        *share,
                    );
                }
            }
            level = lowest(&sink);
        }
        for &e in &sink.touched {
            sink.sums[e as usize] = 0.0;
        }
        self.sums = sink.sums;
        routed.map(|_| level)
    }

    /// Route `job`'s flows into `sink` (in the order [`Fabric::route_flows`] lists them);
    /// returns the job without flows.
    fn route_into<S: FlowSink>(
        &mut self,
        job: &JobTraffic,
        algorithm: Algorithm,
        cfg: &RoutingConfig,
        job_id: u64,
        flows: &mut S,
    ) -> Result<RoutedJob, FabricError> {
        let qps = cfg.qps();
        if qps == 0 {
            return Err(FabricError::ZeroQps);
        }
        let algorithm = if job.collective == Collective::AllReduce {
            algorithm
        } else {
            Algorithm::Ring
        };
        let cached = self.connections.take().filter(|c| {
            c.collective == job.collective
                && c.algorithm == algorithm
                && c.nccl == cfg.nccl
                && c.ranks == job.ranks
        });
        let cached = match cached {
            Some(c) => c,
            None => {
                validate_ranks(self.cluster, &job.ranks)?;
                let nodes = nccl_nodes(self.cluster, &job.ranks);
                let (arch, plan) = plan_channels(self.cluster, &nodes, &cfg.nccl);
                let conns = connections(
                    self.cluster,
                    &job.ranks,
                    &nodes,
                    &plan,
                    job.collective,
                    algorithm,
                    cfg.nccl.qps_per_connection,
                )?;
                JobConnections {
                    ranks: job.ranks.clone(),
                    collective: job.collective,
                    algorithm,
                    nccl: cfg.nccl,
                    arch,
                    channels: plan.channels,
                    graph_channels: plan.graph_channels,
                    n_nodes: nodes.ranks.len(),
                    conns,
                }
            }
        };
        let (arch, n_nodes) = (cached.arch, cached.n_nodes);
        let (channels, graph_channels) = if job.collective == Collective::AllToAll {
            (1, 1)
        } else {
            (cached.channels, cached.graph_channels)
        };
        let result = self.route_connections(job, &cached.conns, cfg, job_id, flows);
        self.connections = Some(cached);
        let (network_flows, latency_ns) = result?;
        Ok(RoutedJob {
            n_ranks: job.ranks.len(),
            collective: job.collective,
            flows: FlowPaths::new(),
            shares: Vec::new(),
            network_flows,
            algorithm,
            channels,
            graph_channels,
            n_nodes,
            arch,
            ideal_busbw_gbps: 0.0,
            latency_ns,
        })
    }

    /// Route a job's connections into `flows`: its network flow count and latency.
    fn route_connections<S: FlowSink>(
        &mut self,
        job: &JobTraffic,
        conns: &[Connection],
        cfg: &RoutingConfig,
        job_id: u64,
        flows: &mut S,
    ) -> Result<(usize, f64), FabricError> {
        let qps = cfg.qps();
        let n_flows: u64 = conns
            .iter()
            .map(|c| match c.hop {
                Hop::Nvlink { .. } => 1,
                Hop::Network { .. } => u64::from(qps),
            })
            .sum();
        if n_flows > MAX_FLOWS {
            return Err(FabricError::TooManyFlows(n_flows));
        }
        flows.reserve(n_flows as usize);
        let mut network_flows = 0;
        let mut path: Vec<(u32, f64)> = Vec::with_capacity(16);
        let mut latency_ns = 0.0f64;
        let qp_seed = mix64(cfg.seed ^ mix64(job_id));
        for (ci, c) in conns.iter().enumerate() {
            match c.hop {
                Hop::Nvlink { src, dst } => {
                    path.clear();
                    // NVLink speed 0 means unknown (an imported node without a known shape):
                    // no limit rather than no bandwidth.
                    if self.cluster.node(src.node).nvlink_gbps > 0.0 {
                        path.push((self.nvlink_resource(src, true), 1.0));
                    }
                    if self.cluster.node(dst.node).nvlink_gbps > 0.0 {
                        path.push((self.nvlink_resource(dst, false), 1.0));
                    }
                    flows.flow(&path, c.fairness, c.share);
                }
                Hop::Network { src, dst } => {
                    latency_ns = latency_ns.max(self.cluster.latency_ns(src.node, dst.node) as f64);
                    self.push_network(c, ci as u64, src, dst, cfg, qp_seed, flows)?;
                    network_flows += qps as usize;
                }
            }
        }
        if job.collective == Collective::AllToAll {
            latency_ns = worst_pair_latency_ns(self.cluster, &job.ranks);
        }
        Ok((network_flows, latency_ns))
    }

    #[allow(clippy::too_many_arguments)] // private helper of route_flows
    fn push_network<S: FlowSink>(
        &mut self,
        c: &Connection,
        conn_index: u64,
        src: NicPort,
        dst: NicPort,
        cfg: &RoutingConfig,
        qp_seed: u64,
        flows: &mut S,
    ) -> Result<(), FabricError> {
        let cluster = self.cluster;
        let src_nic = cluster.node(src.node).nic_links[src.rail as usize];
        let dst_nic = cluster.node(dst.node).nic_links[dst.rail as usize];
        let plan = plan_for(&mut self.router, cluster, src_nic, dst_nic)?;
        let qps = cfg.qps();
        let share = c.share / f64::from(qps);
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let (s, d) = ((src_nic, src.port), (dst_nic, dst.port));
        match cfg.mode {
            RoutingMode::Adaptive => {
                if S::FULL_PATHS {
                    self.router
                        .spray(cluster, &self.ports, &self.capacity, &plan, s, d, &mut path);
                } else {
                    self.router
                        .sprayed(cluster, &self.ports, &self.capacity, &plan);
                    path.push((self.ports.resource(s.0, s.1, true), 1.0));
                    path.push((self.ports.resource(d.0, d.1, false), 1.0));
                }
                flows.sprayed(&path, &plan, qps, c.fairness, share);
            }
            RoutingMode::Ecmp => {
                for q in 0..qps {
                    let lqpn = qp_number(qp_seed, conn_index, q, 0);
                    let rqpn = qp_number(qp_seed, conn_index, q, 1);
                    let tuple = FiveTuple {
                        src_ip: nic_ip(src.node, device_index(cluster, src)),
                        dst_ip: nic_ip(dst.node, device_index(cluster, dst)),
                        src_port: udp_source_port(lqpn, rqpn),
                        dst_port: topology::roce::ROCE_V2_UDP_PORT,
                        protocol: IPPROTO_UDP,
                    };
                    path.clear();
                    self.router
                        .ecmp(cluster, &self.ports, &plan, s, d, &tuple, cfg, &mut path);
                    flows.flow(&path, c.fairness, share);
                }
            }
        }
        self.path = path;
        Ok(())
    }

    /// Job-level max-min fair paces over all flows of `jobs` together (see the design note),
    /// each flow's rate at its job's pace and the resulting load per resource.
    pub fn solve(&self, jobs: &[&RoutedJob]) -> Allocation {
        let (busbw, rows) = self.paces_and_rows(jobs);
        let rates = jobs
            .iter()
            .zip(&busbw)
            .map(|(j, &b)| j.shares.iter().map(|s| s * b).collect::<Vec<f64>>())
            .collect();
        // Job by job, row by row: the order [`FlowPaths::loads`] sums in, so the same bits.
        let mut load = vec![0.0; self.capacity.len()];
        for (row, &b) in rows.iter().zip(&busbw) {
            for &(e, w) in row {
                load[e as usize] += w * b;
            }
        }
        Allocation {
            rates,
            busbw_gbps: busbw,
            load_gbps: load,
        }
    }

    /// The paces of [`Fabric::solve`] alone (its `busbw_gbps`, the same bits), at a cost in the
    /// resources `jobs` touch rather than in the fabric: no rates, no load per resource.
    pub fn paces(&self, jobs: &[&RoutedJob]) -> Vec<f64> {
        self.paces_and_rows(jobs).0
    }

    /// Each job's pace (0 when it crosses no resource of known capacity) and its aggregated
    /// row. Design note (2026-12-02): the rows are aggregated and solved by one
    /// [`SparseSolver`] kept in the fabric, on the resources they touch renumbered in
    /// ascending order; all the rows are a union of whole components, so the paces are the
    /// bits of [`crate::job_max_min`] over the whole fabric (the max-min module note), without
    /// zeroing a vector per resource of the cluster on every call.
    fn paces_and_rows(&self, jobs: &[&RoutedJob]) -> (Vec<f64>, Vec<Vec<(u32, f64)>>) {
        let mut solver = self.solver.borrow_mut();
        let solver = solver.get_or_insert_with(|| SparseSolver::new(self.capacity.len()));
        let rows: Vec<Vec<(u32, f64)>> = jobs
            .iter()
            .map(|j| solver.aggregate(&j.flows, &j.shares))
            .collect();
        let refs: Vec<&[(u32, f64)]> = rows.iter().map(Vec::as_slice).collect();
        let paces = solver
            .solve(&self.capacity, &refs)
            .into_iter()
            .map(|b| if b.is_finite() { b } else { 0.0 })
            .collect();
        (paces, rows)
    }

    /// What `job` gets when it achieves `busbw_gbps` (from [`Allocation::busbw_gbps`]).
    pub fn job_result(&self, job: &RoutedJob, busbw_gbps: f64) -> JobResult {
        let busbw = busbw_gbps / 8.0;
        let ideal = job.ideal_busbw_gbps / 8.0;
        JobResult {
            n_ranks: job.n_ranks,
            collective: job.collective,
            algbw_gb_s: busbw / job.collective.bus_factor(job.n_ranks),
            busbw_gb_s: busbw,
            ideal_busbw_gb_s: ideal,
            efficiency: if ideal > 0.0 { busbw / ideal } else { 1.0 },
            latency_us: job.latency_ns / 1000.0,
        }
    }

    /// The `top` most utilised link-port directions of the switch fabric (NIC ports included,
    /// NVLink excluded), highest first, ties in resource order. See [`crate::hot_link_groups`]
    /// for a summary by tier and direction.
    pub fn hot_links(&self, load_gbps: &[f64], top: usize) -> Vec<LinkLoad> {
        let n_link_res = self.ports.n_ports() as usize * 2;
        let mut idx: Vec<(f64, usize)> = (0..n_link_res)
            .filter(|&r| load_gbps[r] > 0.0 && self.capacity[r] > 0.0)
            .map(|r| (load_gbps[r] / self.capacity[r], r))
            .collect();
        idx.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        idx.truncate(top);
        idx.into_iter()
            .map(|(u, r)| {
                let (link_id, port, up) = self.ports.locate(r as u32);
                let link = self.cluster.link(link_id);
                let mut lower = endpoint_name(self.cluster, link.lower);
                if link.ports > 1 {
                    lower.push_str(&format!(":p{port}"));
                }
                let upper = endpoint_name(self.cluster, Endpoint::Switch(link.upper));
                let (from, to) = if up { (lower, upper) } else { (upper, lower) };
                LinkLoad {
                    from,
                    to,
                    tier: link.tier,
                    utilization: u,
                }
            })
            .collect()
    }

    /// Highest utilisation of any switch-fabric link-port direction.
    pub fn max_link_utilization(&self, load_gbps: &[f64]) -> f64 {
        (0..self.ports.n_ports() as usize * 2)
            .filter(|&r| self.capacity[r] > 0.0)
            .map(|r| load_gbps[r] / self.capacity[r])
            .fold(0.0, f64::max)
    }
}

/// The routing of a job's ideal reference (adaptive, one QP per connection), or `None` when
/// `cfg` is already that routing and the job's own flows serve.
pub(crate) fn ideal_routing(cfg: &RoutingConfig) -> Option<RoutingConfig> {
    if cfg.mode == RoutingMode::Adaptive && cfg.qps() == 1 {
        return None;
    }
    Some(RoutingConfig {
        mode: RoutingMode::Adaptive,
        nccl: crate::nccl::NcclConfig {
            qps_per_connection: 1,
            ..cfg.nccl
        },
        ..*cfg
    })
}

/// What NCCL can use of one NIC port of `line_gbps`: its ring search's per-channel speed for
/// that port (a 400 Gb/s port gives 48 GB/s = 384 Gb/s; [`channel_speed_gb_s`]), times the
/// channels the port can carry.
fn nic_port_usable_gbps(node: &topology::Node, line_gbps: f64) -> f64 {
    if line_gbps <= 0.0 {
        return line_gbps;
    }
    let arch = GpuArch::from_nvlink_gbps(node.nvlink_gbps);
    let gb_s = line_gbps / 8.0;
    let speed = channel_speed_gb_s(arch, gb_s);
    let per_port = ((gb_s + 1e-9) / speed).floor().max(1.0);
    (speed * per_port * 8.0).min(line_gbps)
}

/// The RDMA device index of a NIC port on its host: rail-major, `rail × ports_per_rail + port`.
fn device_index(cluster: &Cluster, p: NicPort) -> u32 {
    p.rail * cluster.node(p.node).nics.ports_per_rail + p.port
}

/// A synthetic IPv4 address for an RDMA device (10.0.0.0/8 space), unique per (node, device)
/// for up to 1,024 devices per node; `device` = rail × ports per rail + port.
pub fn nic_ip(node: NodeId, device: u32) -> u32 {
    0x0A00_0000u32.wrapping_add(node.0.wrapping_mul(1024).wrapping_add(device & 1023))
}

/// One-way latency between two ranks, ns: 0 inside one NVLink domain (NVLink latency is not
/// modelled), else the latency of the lowest switch tier joining their hosts
/// ([`Cluster::latency_ns`]; the hops of any shortest path add up to it).
pub fn pair_latency_ns(cluster: &Cluster, a: Rank, b: Rank) -> f64 {
    if cluster.node(a.node).nvlink_domain == cluster.node(b.node).nvlink_domain {
        0.0
    } else {
        cluster.latency_ns(a.node, b.node) as f64
    }
}

/// Worst latency between any two ranks, ns. Any pair crossing tier T has a member outside the
/// first rank's tier-(T−1) group, and that member crosses at least tier T with the first rank,
/// so the pairs with the first rank suffice (tier latencies never decrease upwards).
fn worst_pair_latency_ns(cluster: &Cluster, ranks: &[Rank]) -> f64 {
    ranks
        .iter()
        .map(|&r| pair_latency_ns(cluster, ranks[0], r))
        .fold(0.0, f64::max)
}

/// Evaluate several concurrent jobs: route each (job `i` gets job ID `i`), solve max-min fair
/// rates over all of them together, and report each job's achieved and ideal bus bandwidth.
pub fn evaluate(
    cluster: &Cluster,
    jobs: &[JobTraffic],
    cfg: &RoutingConfig,
) -> Result<Vec<JobResult>, FabricError> {
    let mut fabric = Fabric::new(cluster);
    let routed: Vec<RoutedJob> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| fabric.route(j, cfg, i as u64))
        .collect::<Result<_, _>>()?;
    let refs: Vec<&RoutedJob> = routed.iter().collect();
    let alloc = fabric.solve(&refs);
    Ok(routed
        .iter()
        .zip(&alloc.busbw_gbps)
        .map(|(j, &b)| fabric.job_result(j, b))
        .collect())
}

/// Where routing puts a job's flows: kept as flows ([`FlowPaths`] and their shares) or summed
/// per resource ([`LoadSums`]).
trait FlowSink {
    /// Whether sprayed flows need their whole path; if not, [`FlowSink::sprayed`] gets only
    /// their NIC ports and the plan (whose ends and inner bound are made).
    const FULL_PATHS: bool;
    /// Room for `n` more flows.
    fn reserve(&mut self, n: usize);
    /// One flow crossing `path`, with fairness weight `fairness`, carrying `share` of the job's
    /// bus bandwidth.
    fn flow(&mut self, path: &[(u32, f64)], fairness: f64, share: f64);
    /// `qps` flows sprayed along `path`, each like [`FlowSink::flow`]: their whole path if
    /// [`FlowSink::FULL_PATHS`], else only their two NIC ports (the middle is `plan`'s).
    fn sprayed(
        &mut self,
        path: &[(u32, f64)],
        plan: &Arc<Plan>,
        qps: u32,
        fairness: f64,
        share: f64,
    ) {
        let _ = plan;
        for _ in 0..qps {
            self.flow(path, fairness, share);
        }
    }
}

impl FlowSink for (FlowPaths, Vec<f64>) {
    const FULL_PATHS: bool = true;

    fn reserve(&mut self, n: usize) {
        self.1.reserve(n);
    }

    fn flow(&mut self, path: &[(u32, f64)], fairness: f64, share: f64) {
        self.0.push(path, fairness);
        self.1.push(share);
    }
}

/// What [`LoadSums`] sets aside of sprayed flows while routing, to add after.
enum SetAside {
    /// Flow by flow ([`Fabric::alone_pace`]): each sprayed connection's plan, per-flow share and
    /// flows, in routing order; their NIC ports and end hops are added as they come, their
    /// inner hops perhaps after.
    PerFlow(Vec<(Arc<Plan>, f64, u32)>),
    /// Grouped ([`Fabric::alone_pace_grouped`]): per leaf pair (source, destination), its plan
    /// and the summed share of its flows; their NIC ports are added as they come, the pair's
    /// end hops once after, its inner hops perhaps after.
    ByLeafPair(BTreeMap<(u32, u32), (Arc<Plan>, f64)>),
}

/// Relative margin by which the bound on a job's inner-hop loads must clear its lowest level
/// for those hops to be left out of its pace alone: far above rounding in the sums.
const INNER_MARGIN: f64 = 1e-9;

/// A job's load per unit pace on each resource, summed flow by flow in routing order as
/// aggregation sums it ([`add_load`]; `sums` all zeros outside, `touched` the resources
/// reached).
///
/// Sprayed flows' hops between higher tiers (the inner part of their path,
/// [`crate::routing::Sprayed`]) are set aside: each carries a sliver of a flow spread over
/// many ports, so they rarely pace a job alone, and they are most of a large job's path. They
/// are added (per resource in the same order as the others, so the same bits) only when a
/// bound on them does not clear the job's lowest level elsewhere.
struct LoadSums {
    sums: Vec<f64>,
    touched: Vec<u32>,
    /// What sprayed flows left to add.
    set_aside: SetAside,
}

impl FlowSink for LoadSums {
    const FULL_PATHS: bool = false;

    fn reserve(&mut self, _: usize) {}

    fn flow(&mut self, path: &[(u32, f64)], _: f64, share: f64) {
        add_load(
            &mut self.sums,
            &mut self.touched,
            path.iter().copied(),
            share,
        );
    }

    fn sprayed(&mut self, path: &[(u32, f64)], plan: &Arc<Plan>, qps: u32, _: f64, share: f64) {
        let nics = [path[0], path[path.len() - 1]];
        let groups = match &mut self.set_aside {
            SetAside::ByLeafPair(groups) => groups,
            SetAside::PerFlow(connections) => {
                // Each flow's NIC ports and end hops now, its inner hops perhaps later.
                let ends = plan.sprayed().expect("spraying made the ends").ends();
                for _ in 0..qps {
                    add_load(
                        &mut self.sums,
                        &mut self.touched,
                        std::iter::once(nics[0])
                            .chain(ends.iter().copied())
                            .chain(std::iter::once(nics[1])),
                        share,
                    );
                }
                connections.push((Arc::clone(plan), share, qps));
                return;
            }
        };
        // The NIC ports now; the rest once per leaf pair, with the pair's summed share.
        for _ in 0..qps {
            add_load(
                &mut self.sums,
                &mut self.touched,
                nics.iter().copied(),
                share,
            );
        }
        let total = groups
            .entry(plan.leaves())
            .or_insert_with(|| (Arc::clone(plan), 0.0));
        total.1 += share * f64::from(qps);
    }
}
