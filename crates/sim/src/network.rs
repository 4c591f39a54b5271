//! The network models the simulator uses: every running multi-node job runs a Ring AllReduce,
//! and the fabric model (`fabric`) gives each its achieved and ideal bus bandwidth with all of
//! them sharing the links together — kept incrementally ([`FabricNetwork`]) or solved from
//! scratch on every change ([`fabric_network_from_scratch`], the reference it is tested
//! against); and [`FromScratch`], which turns a function of the whole running set into a
//! [`Network`].
//!
//! Layout jobs (design note, 2026-12-01). A job with a model and layout
//! ([`crate::trace::TraceJob::training`]) is priced once when it starts: `layout::price_step` on
//! an empty fabric over its ranks (its nodes × GPUs in order) gives its [`layout::Pace`], each
//! collective's time at its kind's ideal bus bandwidth. Each communicator kind with groups that
//! span hosts is then started in the incremental [`FabricState`] as ONE job, the union of those
//! groups ([`FabricState::start_union`]; ID `2^61 + index · 2^8 + kind`): each group a Ring over
//! its ranks with the kind's collective, routed under its own ID (`2^62 + index · 2^24 +
//! group`), all of them sharing one max-min pace, so the running jobs and the layout jobs share
//! links by the same max-min and only what touches them is re-solved. Rule (2026-12-02, for
//! cost: a 1,024-GPU tp=8,pp=4,dp=32 job is 2 fabric jobs, not 288): a step waits for a kind's
//! slowest group anyway, so the kind runs at the pace its most loaded link allows every group;
//! a kind's ratio is the union's achieved ÷ its ideal (the lowest ideal of its groups alone,
//! capped at 1). Before, each group was its own max-min job and a less loaded group could take
//! the share a slower one left; now a kind's groups hold back together. The job's step now is
//! [`layout::Pace::step_s`] at those ratios, and its rate is ideal step ÷ step now (its
//! communicating share is 1, so that ratio is its whole slowdown; kinds inside one NVLink
//! domain never slow). A layout job inside one host is not on the network and runs at its
//! trace duration. Kinds are weighted alike (one max-min share per kind, not per group or byte).
//! `+network` scores a layout job's candidates by its step time
//! ([`Network::step_probe`], rule of 2026-12-02): the step the simulator would give it there —
//! its pace alone on the candidate's ranks (in the trace's rank order), its kinds started on the
//! incremental state as the union jobs it would run as (same IDs, so the same routes), solved
//! beside everything running, read, and ended again (max-min over the same jobs gives the
//! running jobs the same bits, as `fabric::probe`). Before, a candidate was priced by
//! `price_step` beside every running job from scratch (each group its own max-min job, as
//! `fabric step --state` prices it): ~90× the cost of the same run without layouts, and a
//! model the simulator does not then run the job under. Paces alone are kept by (training, ranks), a pure
//! function of both (up to 1,024, then emptied): a job's candidates are asked again in later
//! passes, the one it starts on is priced already, and later jobs of the same layout often land
//! on the same GPUs. Other jobs'
//! candidates are scored by their Ring AllReduce's probe, as before. The from-scratch
//! reference does not model layout jobs (they run as Ring AllReduce over their GPUs there).
//!
//! Cost (2026-12-02). Pricing alone goes through `layout::price_step_without_hot_links` (no
//! load per resource, no hot links: `Pace` reads neither) on a `Fabric` whose solve is sparse
//! (`Fabric::paces`: the resources the jobs touch, renumbered; no vector per resource of the
//! cluster is zeroed per call); a probe costs the candidate's routes and two solves of the
//! components it touches.

use std::collections::{BTreeMap, BTreeSet};

use fabric::{Collective, Fabric, FabricState, JobTraffic, Rank, RoutedJob, RoutingConfig};
use layout::{Kind, Pace, StepInput};
use topology::Cluster;

use crate::engine::{NetJob, NetRate, Network};

/// The fabric model kept between changes ([`fabric::FabricState`]): a job is routed once when
/// it starts (job ID = its trace index) and rates are re-solved only over the jobs that share
/// links with the jobs that started or ended.
#[derive(Debug)]
pub struct FabricNetwork<'c> {
    state: FabricState<'c>,
    /// IDs of the running jobs without a layout, ascending (what a probe reads before and
    /// after).
    running: BTreeSet<u64>,
    /// The running layout jobs by ID: their pace and their groups on the fabric.
    layouts: BTreeMap<u64, LayoutRun>,
    /// The fabric layout jobs are priced on alone (made at the first).
    pricing: Option<Fabric<'c>>,
    /// Paces already priced, by training (its `Debug` form) and ranks: a pure function of
    /// both, asked again for a job's candidates in later passes, for the candidate it starts
    /// on, and for later jobs of the same layout on the same GPUs. Emptied when it holds
    /// [`KNOWN_PACES`] entries.
    paces: BTreeMap<(String, Vec<Rank>), Pace>,
    cluster: &'c Cluster,
    routing: RoutingConfig,
}

/// A running layout job.
#[derive(Debug)]
struct LayoutRun {
    pace: Pace,
    /// Per kind on the network: the fabric ID of the kind's union job.
    groups: Vec<(Kind, u64)>,
}

impl LayoutRun {
    /// Its rate from each kind's union job's result (`None` when one has none).
    fn rate(&self, result: impl Fn(u64) -> Option<fabric::JobResult>) -> Option<NetRate> {
        let mut ratios: Vec<(Kind, f64)> = Vec::with_capacity(self.groups.len());
        for (kind, union) in &self.groups {
            let r = result(*union)?;
            let ratio = if r.ideal_busbw_gb_s > 0.0 {
                (r.busbw_gb_s / r.ideal_busbw_gb_s).min(1.0)
            } else {
                1.0
            };
            ratios.push((*kind, ratio));
        }
        let ratio = |k: Kind| ratios.iter().find(|x| x.0 == k).map_or(1.0, |x| x.1);
        let now = self.pace.step_s(ratio);
        Some(NetRate {
            ideal_busbw: 1.0,
            achieved_busbw: if now > 0.0 {
                self.pace.ideal_step_s / now
            } else {
                1.0
            },
        })
    }
}

/// The fabric ID of group `g` of layout job `id`.
fn group_id(id: u64, g: usize) -> u64 {
    (1 << 62) + (id << 24) + g as u64
}

/// The fabric ID of the union job of layout job `id`'s `k`-th kind on the network.
fn union_id(id: u64, k: usize) -> u64 {
    (1 << 61) + (id << 8) + k as u64
}

/// The network model [`crate::engine::simulate`] uses by default, backed by the fabric model.
pub fn fabric_network(cluster: &Cluster, routing: RoutingConfig) -> FabricNetwork<'_> {
    FabricNetwork {
        state: FabricState::new(cluster, routing),
        running: BTreeSet::new(),
        layouts: BTreeMap::new(),
        pricing: None,
        paces: BTreeMap::new(),
        cluster,
        routing,
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
        if let Some(t) = &job.training {
            let run = self.start_layout(job.id as u64, t, &traffic(job).ranks);
            self.layouts.insert(job.id as u64, run);
            return;
        }
        let t = traffic(job);
        self.state
            .start(job.id as u64, &t)
            .expect("the scheduler only places jobs on GPUs the cluster has");
        self.running.insert(job.id as u64);
    }

    fn end(&mut self, id: usize) {
        if let Some(run) = self.layouts.remove(&(id as u64)) {
            for (_, union) in &run.groups {
                self.state.end(*union);
            }
            return;
        }
        self.state.end(id as u64);
        self.running.remove(&(id as u64));
    }

    fn step_probe(&mut self, job: &NetJob) -> Option<f64> {
        let t = job.training.as_ref()?;
        let id = job.id as u64;
        let ranks = traffic(job).ranks;
        let pace = self.pace_alone(t, &ranks);
        let kinds = self.union_members(id, t, &ranks, &pace);
        if kinds.is_empty() {
            return Some(pace.ideal_step_s);
        }
        // Start the kinds as the job would run them (same IDs, so the same routes), read
        // their paces, end them: max-min over the same jobs gives the running jobs the same
        // bits again (as `fabric::probe`).
        let mut groups = Vec::with_capacity(kinds.len());
        for (kind, union, members) in &kinds {
            if self.state.start_union(*union, members).is_err() {
                // Leave the running set as it was: end the kinds already started.
                for (_, started) in &groups {
                    self.state.end(*started);
                }
                self.state.solve();
                return None;
            }
            groups.push((*kind, *union));
        }
        self.state.solve();
        let run = LayoutRun { pace, groups };
        let rate = run.rate(|g| self.state.result(g));
        for (_, union) in &run.groups {
            self.state.end(*union);
        }
        self.state.solve();
        let rate = rate?;
        Some(if rate.achieved_busbw > 0.0 {
            run.pace.ideal_step_s / rate.achieved_busbw
        } else {
            f64::INFINITY
        })
    }

    /// Its step alone (`Pace::ideal_step_s`): beside other jobs each kind's ratio is at most 1.
    fn step_bound(&mut self, job: &NetJob) -> Option<f64> {
        let t = job.training.as_ref()?;
        Some(self.pace_alone(t, &traffic(job).ranks).ideal_step_s)
    }

    fn probe(&mut self, job: &NetJob) -> Option<fabric::Probe> {
        let running: Vec<u64> = self.running.iter().copied().collect();
        fabric::probe(&mut self.state, job.id as u64, &traffic(job), &running).ok()
    }

    fn provisional(&mut self, id: usize) -> Option<NetRate> {
        if let Some(run) = self.layouts.get(&(id as u64)) {
            return run.rate(|g| self.state.provisional(g));
        }
        self.state.provisional(id as u64).map(|r| NetRate {
            ideal_busbw: r.ideal_busbw_gb_s,
            achieved_busbw: r.busbw_gb_s,
        })
    }

    fn rates(&mut self, ids: &[usize]) -> Vec<NetRate> {
        self.state.solve();
        ids.iter()
            .map(|&id| {
                if let Some(run) = self.layouts.get(&(id as u64)) {
                    return run
                        .rate(|g| self.state.result(g))
                        .expect("every group of a running layout job is on the fabric");
                }
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

impl<'c> FabricNetwork<'c> {
    /// Price layout job `id` on its `ranks` alone and put its groups that span hosts on the
    /// fabric (module note).
    fn start_layout(&mut self, id: u64, t: &layout::Training, ranks: &[Rank]) -> LayoutRun {
        let pace = self.pace_alone(t, ranks);
        let kinds = self.union_members(id, t, ranks, &pace);
        let mut groups = Vec::with_capacity(kinds.len());
        for (kind, union, members) in kinds {
            self.state
                .start_union(union, &members)
                .expect("the scheduler only places jobs on GPUs the cluster has");
            groups.push((kind, union));
        }
        LayoutRun { pace, groups }
    }

    /// Layout job `id`'s pace on `ranks` with nothing else running (`layout::Pace`), from the
    /// candidates already priced for it when it is one of them.
    fn pace_alone(&mut self, t: &layout::Training, ranks: &[Rank]) -> Pace {
        let key = (format!("{t:?}"), ranks.to_vec());
        if let Some(pace) = self.paces.get(&key) {
            return pace.clone();
        }
        let cluster = self.cluster;
        let fabric = self.pricing.get_or_insert_with(|| Fabric::new(cluster));
        let step = layout::price_step_without_hot_links(
            fabric,
            StepInput {
                training: t,
                ranks,
                cfg: &self.routing,
                running: &[],
                efficiency: None,
            },
        )
        .expect("the engine checked the layout against the job's GPUs and the cluster");
        let pace = Pace::new(t, &step);
        if self.paces.len() >= KNOWN_PACES {
            self.paces.clear();
        }
        self.paces.insert(key, pace.clone());
        pace
    }

    /// Per communicator kind of `pace` on the network: its union job's ID and its groups that
    /// span hosts, each `(routing ID, traffic)` (module note).
    fn union_members(
        &self,
        id: u64,
        t: &layout::Training,
        ranks: &[Rank],
        pace: &Pace,
    ) -> Vec<KindUnion> {
        let mut kinds = Vec::new();
        let mut g = 0;
        for kind in pace.network_kinds() {
            let collective = pace
                .comms
                .iter()
                .find(|c| c.kind == kind)
                .map_or(Collective::AllReduce, |c| c.op.collective());
            let mut members: Vec<(u64, JobTraffic)> = Vec::new();
            for group in layout::groups(&t.layout, kind) {
                let granks: Vec<Rank> = group.iter().map(|&r| ranks[r as usize]).collect();
                if granks.iter().all(|r| r.node == granks[0].node) {
                    continue;
                }
                members.push((
                    group_id(id, g),
                    JobTraffic {
                        ranks: granks,
                        collective,
                    },
                ));
                g += 1;
            }
            if !members.is_empty() {
                let union = union_id(id, kinds.len());
                kinds.push((kind, union, members));
            }
        }
        kinds
    }
}

/// A communicator kind on the network: the kind, its union job's ID, its groups that span
/// hosts (each its routing ID and traffic).
type KindUnion = (Kind, u64, Vec<(u64, JobTraffic)>);

/// How many paces [`FabricNetwork`] keeps before it empties its `paces`.
const KNOWN_PACES: usize = 1024;

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
