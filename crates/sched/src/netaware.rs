//! Network-aware placement: among the placements the label rules allow, the one a scorer (in
//! practice the fabric model, which `sched` does not know) predicts best.
//!
//! Design note (2026-11-30). [`place_network_aware`] is the single place the choice is made.
//!
//! 1. Candidates, in the label rules' order: first the label-only placement ([`place_with`]);
//!    then the same job restricted to one domain at a time ([`place_within_with`], so every
//!    candidate obeys the same rules: required level, gang, slices, node constraints, free
//!    capacity). The domains are taken level by level from the start level up to the ceiling:
//!    start at the preferred level (`preferred:`), else the lowest non-host level (`required:`
//!    and unconstrained jobs); stop at the required level (`required:`), else the top level.
//!    Within a level, only domains with room for the whole gang are tried, tightest first (least
//!    room, then label order), as BestFit would rank them. Candidates with the same nodes and
//!    GPUs as an earlier one, or with a different number of pods (a gang minimum), are dropped.
//!    At most `max_candidates` are scored ([`MAX_CANDIDATES`] is the documented default), and at
//!    most `4 × max_candidates` domains are tried. A label-only placement on one node is the
//!    only candidate: nothing crosses less of the network.
//! 2. Each candidate is scored once by the [`PlacementScorer`]; the highest score wins, and a
//!    candidate must beat the best so far by more than [`SCORE_EPSILON`] (relative) to replace
//!    it, so ties go to the earlier candidate: a constant scorer returns exactly the label-only
//!    placement. A scorer may also give an upper bound of a candidate's score
//!    ([`PlacementScorer::bound`], cheaper than the score): a later candidate whose bound cannot
//!    beat the best so far is not scored, which never changes the choice (2026-12-02: a layout
//!    job's step alone bounds its step beside the running jobs).
//! 3. Rank order: pods are numbered by pod set (in order of first appearance in the placement),
//!    then by the node's domains top first (so consecutive ranks share the lowest-level domain,
//!    i.e. the leaf switch), then by node, then by GPU index (so consecutive ranks on a node
//!    use consecutive GPUs, and therefore the same rails in the same order on every node).
//!    Kueue's rules already number pods this way; KAI's are renumbered.
//!
//! Cost: one label-only placement, a room count per domain of the levels walked (O(nodes) on
//! a plain occupancy, O(domains) on a node-tracking one for whole-GPU jobs), up to
//! `4 × max_candidates` scoped placements, and `max_candidates` scorer calls.

use topology::{Cluster, DomainId, NodeId};

use crate::constraints::PlaceInput;
use crate::job::{GpuRequest, Job};
use crate::occupancy::Occupancy;
use crate::place::{place_with, place_within_with, room_on, NotPlaced, Placement};

/// Scores a candidate placement of a job: higher is better. Implemented by closures
/// `FnMut(&Job, &Placement) -> f64`; a NaN score counts as the worst.
pub trait PlacementScorer {
    /// The score of placing `job` as `candidate`.
    fn score(&mut self, job: &Job, candidate: &Placement) -> f64;

    /// A number [`PlacementScorer::score`] of the same candidate never exceeds (default: no
    /// bound, every candidate is scored).
    fn bound(&mut self, job: &Job, candidate: &Placement) -> f64 {
        let _ = (job, candidate);
        f64::INFINITY
    }
}

impl<F: FnMut(&Job, &Placement) -> f64> PlacementScorer for F {
    fn score(&mut self, job: &Job, candidate: &Placement) -> f64 {
        self(job, candidate)
    }
}

/// Default cap on scored candidates (label-only placement included).
pub const MAX_CANDIDATES: usize = 16;

/// Relative margin a later candidate must beat the best so far by: `score > best + ε·max(1,
/// |best|)`.
pub const SCORE_EPSILON: f64 = 1e-9;

/// One scored candidate.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The domain the job was restricted to; `None` for the label-only placement.
    pub domain: Option<DomainId>,
    /// The placement, in rank order (see the module note).
    pub placement: Placement,
    /// Its score; for a candidate not scored, its bound ([`Candidate::scored`]).
    pub score: f64,
    /// Whether it was scored: `false` when its bound could not beat the best before it.
    pub scored: bool,
}

/// The outcome of [`place_network_aware`]: every scored candidate and which won.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkAware {
    /// Candidates in the label rules' order; the first is the label-only placement.
    pub candidates: Vec<Candidate>,
    /// Index of the chosen candidate.
    pub chosen: usize,
}

impl NetworkAware {
    /// The chosen candidate.
    pub fn best(&self) -> &Candidate {
        &self.candidates[self.chosen]
    }

    /// The chosen placement.
    pub fn placement(&self) -> &Placement {
        &self.best().placement
    }

    /// Take the chosen placement.
    pub fn into_placement(mut self) -> Placement {
        self.candidates.swap_remove(self.chosen).placement
    }
}

/// Place `job` where `scorer` predicts best among the placements the label rules allow (see the
/// module note). Pure apart from the scorer; fails exactly when [`place_with`] fails.
pub fn place_network_aware(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    input: &PlaceInput,
    scorer: &mut dyn PlacementScorer,
    max_candidates: usize,
) -> Result<NetworkAware, NotPlaced> {
    let label = in_rank_order(cluster, place_with(cluster, occupancy, job, input)?);
    let mut candidates = vec![Candidate {
        domain: None,
        score: 0.0,
        scored: true,
        placement: label,
    }];
    let n_pods = candidates[0].placement.pods.len();
    let first = candidates[0].placement.pods.first().map(|p| p.node);
    let one_node = candidates[0]
        .placement
        .pods
        .iter()
        .all(|p| Some(p.node) == first);
    let levels = if one_node {
        Vec::new()
    } else {
        candidate_levels(cluster, job)
    };
    let mut tried = 0;
    'levels: for level in levels {
        for domain in fitting_domains(cluster, occupancy, job, level) {
            if candidates.len() >= max_candidates || tried >= 4 * max_candidates {
                break 'levels;
            }
            tried += 1;
            let Ok(p) = place_within_with(cluster, occupancy, job, domain, input) else {
                continue;
            };
            let p = in_rank_order(cluster, p);
            let same = |c: &Candidate| same_gpus(&c.placement, &p);
            if p.pods.len() != n_pods || candidates.iter().any(same) {
                continue;
            }
            candidates.push(Candidate {
                domain: Some(domain),
                score: 0.0,
                scored: true,
                placement: p,
            });
        }
    }
    let mut chosen = 0;
    for i in 0..candidates.len() {
        let threshold = (i > 0).then(|| beat(candidates[chosen].score));
        let c = &mut candidates[i];
        if let Some(threshold) = threshold {
            let bound = scorer.bound(job, &c.placement);
            if bound <= threshold {
                c.score = bound;
                c.scored = false;
                continue;
            }
        }
        let s = scorer.score(job, &c.placement);
        c.score = if s.is_nan() { f64::NEG_INFINITY } else { s };
        if threshold.is_some_and(|t| c.score > t) {
            chosen = i;
        }
    }
    Ok(NetworkAware { candidates, chosen })
}

/// What a later candidate's score must exceed to replace the best so far, `best`.
fn beat(best: f64) -> f64 {
    if best.is_finite() {
        best + SCORE_EPSILON * best.abs().max(1.0)
    } else {
        best
    }
}

/// Renumber a placement's pods in rank order (module note, step 3).
pub fn in_rank_order(cluster: &Cluster, mut placement: Placement) -> Placement {
    let mut set_order: Vec<usize> = Vec::new();
    for p in &placement.pods {
        if !set_order.contains(&p.pod_set) {
            set_order.push(p.pod_set);
        }
    }
    let set_pos = |s: usize| set_order.iter().position(|&x| x == s).unwrap_or(usize::MAX);
    placement.pods.sort_by(|a, b| {
        set_pos(a.pod_set)
            .cmp(&set_pos(b.pod_set))
            .then_with(|| {
                cluster
                    .node(a.node)
                    .domains
                    .cmp(&cluster.node(b.node).domains)
            })
            .then(a.node.cmp(&b.node))
            .then_with(|| a.gpu_ids.cmp(&b.gpu_ids))
    });
    for (rank, p) in placement.pods.iter_mut().enumerate() {
        p.rank = rank as u32;
    }
    placement
}

/// Whether two placements use the same GPUs of the same nodes (in any rank order).
fn same_gpus(a: &Placement, b: &Placement) -> bool {
    let key = |p: &Placement| {
        let mut v: Vec<(NodeId, Vec<u32>, usize)> = p
            .pods
            .iter()
            .map(|x| (x.node, x.gpu_ids.clone(), x.pod_set))
            .collect();
        v.sort();
        v
    };
    a.pods.len() == b.pods.len() && key(a) == key(b)
}

/// Levels whose domains are candidates, in order: the start level up to the ceiling (module
/// note, step 1). Empty for a cluster with no non-host level.
fn candidate_levels(cluster: &Cluster, job: &Job) -> Vec<usize> {
    let non_host: Vec<usize> = (0..cluster.levels.len())
        .filter(|&l| Some(l) != cluster.host_level)
        .collect();
    let Some(&lowest) = non_host.last() else {
        return Vec::new();
    };
    // The job's most demanding request: the highest (smallest index) required level bounds the
    // climb; the deepest preferred level starts it.
    let required = job
        .pod_sets
        .iter()
        .filter_map(|s| s.topology.required)
        .filter(|&l| Some(l) != cluster.host_level)
        .min();
    let preferred = job
        .pod_sets
        .iter()
        .filter_map(|s| s.topology.preferred)
        .filter(|&l| Some(l) != cluster.host_level)
        .max();
    let start = match (required, preferred) {
        (None, Some(p)) => p,
        _ => lowest,
    };
    let ceiling = required.unwrap_or(0);
    non_host
        .into_iter()
        .rev()
        .filter(|&l| l <= start && l >= ceiling)
        .collect()
}

/// Domains of `level` with room for the whole gang, tightest first, then label order. Jobs
/// whose room cannot be counted cheaply (several pod sets) get every domain in label order.
fn fitting_domains(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    level: usize,
) -> Vec<DomainId> {
    let domains = &cluster.levels[level].domains;
    let need: u64 = job.pod_sets.iter().map(|s| u64::from(s.count)).sum();
    let counted = match job.pod_sets.as_slice() {
        [set] if occupancy.tracks_nodes() && occupancy.node_count() == cluster.nodes.len() => {
            match set.gpu {
                GpuRequest::Whole(g) if g > 0 && job.tolerations.is_empty() => Some(g),
                _ => None,
            }
        }
        _ => None,
    };
    let mut rooms: Vec<(u64, u32, DomainId)> = domains
        .iter()
        .filter_map(|&d| {
            let room = match counted {
                Some(g) => Some(occupancy.whole_gpu_pods(Some(d), g)),
                None => room_on(cluster, occupancy, job, &cluster.domain(d).nodes),
            };
            match room {
                Some(r) if r < need => None,
                Some(r) => Some((r, cluster.domain_order(d), d)),
                None => Some((u64::MAX, cluster.domain_order(d), d)),
            }
        })
        .collect();
    rooms.sort_unstable();
    rooms.into_iter().map(|(_, _, d)| d).collect()
}
