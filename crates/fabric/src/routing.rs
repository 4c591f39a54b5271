//! Routing NIC-to-NIC flows over the up/down switch fabric: ECMP (hash the 5-tuple at every
//! switch with more than one shortest next hop) or adaptive routing / packet spraying (split the
//! flow evenly over every shortest next hop at every switch).
//!
//! Next hops are physical ports: a link made of several ports (a 2 × 200G rail, a bundle of
//! uplinks) is that many resources, and a switch hashes over all ports of all its candidate
//! links, as a switch's ECMP group lists ports, not bundles.
//!
//! A shortest path climbs from the source leaf to the lowest tier `T` where an ancestor of the
//! source leaf is also an ancestor of the destination leaf, then descends. Ancestors are found by
//! walking up-links, so whatever the wiring (striped, rail planes), only switches that can still
//! reach the destination are candidates; on a rail-optimized fabric this keeps a rail's traffic
//! on its rail plane.

use std::sync::{Arc, OnceLock};
use topology::{Cluster, Endpoint, LinkId, SwitchId};

use crate::error::FabricError;
use crate::hash::{choose, switch_seed, FiveTuple, HashFn, SwitchSeeds};
use crate::nccl::NcclConfig;

/// How flows are spread over equal-cost paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoutingMode {
    /// Per-flow ECMP: each switch hashes the 5-tuple to pick one next hop.
    #[default]
    Ecmp,
    /// Adaptive routing / packet spraying: each switch splits a flow evenly over all next hops.
    Adaptive,
}

/// Routing and transport settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoutingConfig {
    /// ECMP or adaptive.
    pub mode: RoutingMode,
    /// The switches' hash function (default [`HashFn::Mix`]: independent per switch).
    pub hash: HashFn,
    /// How each switch's seed is chosen.
    pub seeds: SwitchSeeds,
    /// Seed for QP numbers and switch hash seeds.
    pub seed: u64,
    /// NCCL's settings: QPs per connection (each QP is its own flow), channels, algorithms.
    pub nccl: NcclConfig,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        Self {
            mode: RoutingMode::Ecmp,
            hash: HashFn::Mix,
            seeds: SwitchSeeds::PerSwitch,
            seed: 0,
            nccl: NcclConfig::default(),
        }
    }
}

impl RoutingConfig {
    /// QPs per connection (`NCCL_IB_QPS_PER_CONNECTION`).
    pub fn qps(&self) -> u32 {
        self.nccl.qps_per_connection
    }
}

/// Where each link's ports start in the resource numbering: link `l`'s port `p` in direction
/// `up` is resource `2·(first[l] + p) + (0 if up else 1)`.
#[derive(Clone, Debug)]
pub struct PortIndex {
    first: Vec<u32>,
    total: u32,
}

impl PortIndex {
    /// The numbering of a cluster's link ports.
    pub fn new(cluster: &Cluster) -> Self {
        let mut first = Vec::with_capacity(cluster.links.len());
        let mut total = 0u32;
        for l in &cluster.links {
            first.push(total);
            total += l.ports.max(1);
        }
        Self { first, total }
    }

    /// Number of link ports (resources are twice as many: both directions).
    pub fn n_ports(&self) -> u32 {
        self.total
    }

    /// Resource index of a link port in one direction.
    pub fn resource(&self, link: LinkId, port: u32, up: bool) -> u32 {
        (self.first[link.index()] + port) * 2 + u32::from(!up)
    }

    /// The link, port and direction of a link-port resource (`r < 2 · n_ports`).
    pub fn locate(&self, r: u32) -> (LinkId, u32, bool) {
        let slot = r / 2;
        let l = self.first.partition_point(|&f| f <= slot) - 1;
        (LinkId::from_index(l), slot - self.first[l], r % 2 == 0)
    }
}

/// The valid switches at each tier of the shortest paths between two leaves.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Highest tier climbed.
    pub top: usize,
    /// `up[t]`: switches at tier t the climb may use (sorted); `up[0] = [src leaf]`.
    up: Vec<Vec<u32>>,
    /// `down[t]`: switches at tier t the descent may use (sorted); `down[0] = [dst leaf]`.
    down: Vec<Vec<u32>>,
    /// The ends of the switch-to-switch part of [`Router::spray`]'s path and a bound on its
    /// inner part, made on first use: the same for every flow between the two leaves.
    sprayed: OnceLock<Sprayed>,
    /// The inner part of that path, made only when asked for ([`Router::spray_inner`]).
    inner: OnceLock<Vec<(u32, f64)>>,
}

/// The switch-to-switch part of a sprayed path has three parts: the hop out of the source leaf,
/// the hops between higher tiers (the inner part, empty below a tier-2 climb), and the hop into
/// the destination leaf; no resource is in two of them. This keeps the first and last, and of
/// the inner part (most of a long climb's ports, each with a sliver of the flow) only the most
/// it puts on any resource per unit of capacity.
#[derive(Clone, Debug)]
pub(crate) struct Sprayed {
    /// The hop out of the source leaf (`ends[..first_end]`), then the hop into the destination.
    ends: Vec<(u32, f64)>,
    first_end: usize,
    /// The largest weight ÷ capacity of the inner part (infinite if a resource of it has no
    /// capacity, 0 if it is empty).
    inner_worst: f64,
}

impl Sprayed {
    /// The hops out of the source leaf and into the destination leaf.
    pub fn ends(&self) -> &[(u32, f64)] {
        &self.ends
    }

    /// The largest load per unit of capacity a unit flow puts on any resource of the inner
    /// part (infinite if one has no capacity, 0 if the part is empty).
    pub fn inner_worst(&self) -> f64 {
        self.inner_worst
    }
}

/// Which part of a sprayed path a hop is in ([`Sprayed`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    First,
    Inner,
    Last,
}

impl Plan {
    /// The two leaves the plan joins, `(source, destination)`.
    pub fn leaves(&self) -> (u32, u32) {
        (self.up[0][0], self.down[0][0])
    }

    /// The ends of the sprayed path, once [`Router::sprayed`] has made them.
    pub fn sprayed(&self) -> Option<&Sprayed> {
        self.sprayed.get()
    }
}

/// Path finding with a cache of each leaf's ancestors per tier.
#[derive(Debug)]
pub(crate) struct Router {
    ancestors: Vec<Option<Vec<Vec<u32>>>>,
    /// Recent plans by `(src leaf, dst leaf)`, direct-mapped ([`PLAN_CACHE_SLOTS`] slots): a
    /// plan is a function of its two leaves, so a hit returns what computing it would.
    plans: Vec<Option<(u32, u32, Arc<Plan>)>>,
    scratch: Vec<(u32, f64)>,
    /// Scratch for [`Router::spray`]'s next hops up (links) and down (layer index, link, lower
    /// switch).
    up_hops: Vec<LinkId>,
    down_hops: Vec<(u32, LinkId, u32)>,
}

/// Slots of [`Router`]'s plan cache (bounded memory whatever the fabric's size).
const PLAN_CACHE_SLOTS: usize = 1024;

fn contains(sorted: &[u32], x: u32) -> bool {
    sorted.binary_search(&x).is_ok()
}

impl Router {
    pub fn new(cluster: &Cluster) -> Self {
        Self {
            ancestors: vec![None; cluster.switches.len()],
            plans: vec![None; PLAN_CACHE_SLOTS],
            scratch: Vec::new(),
            up_hops: Vec::new(),
            down_hops: Vec::new(),
        }
    }

    fn ancestors(&mut self, cluster: &Cluster, leaf: u32) -> &Vec<Vec<u32>> {
        if self.ancestors[leaf as usize].is_none() {
            let mut levels = vec![vec![leaf]];
            loop {
                let mut next: Vec<u32> = levels[levels.len() - 1]
                    .iter()
                    .flat_map(|&s| cluster.up_links(SwitchId(s)).iter())
                    .map(|&l| cluster.link(l).upper.0)
                    .collect();
                if next.is_empty() {
                    break;
                }
                next.sort_unstable();
                next.dedup();
                levels.push(next);
            }
            self.ancestors[leaf as usize] = Some(levels);
        }
        self.ancestors[leaf as usize]
            .as_ref()
            .expect("filled above")
    }

    /// The shortest-path plan between two leaf switches, or `None` if no switch is an ancestor
    /// of both.
    pub fn plan(&mut self, cluster: &Cluster, src: u32, dst: u32) -> Option<Arc<Plan>> {
        let slot = (u64::from(src).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(dst))
            .wrapping_mul(0xBF58_476D_1CE4_E5B9)
            >> 52;
        let slot = slot as usize % PLAN_CACHE_SLOTS;
        if let Some((s, d, plan)) = &self.plans[slot] {
            if (*s, *d) == (src, dst) {
                return Some(Arc::clone(plan));
            }
        }
        let plan = Arc::new(self.compute_plan(cluster, src, dst)?);
        self.plans[slot] = Some((src, dst, Arc::clone(&plan)));
        Some(plan)
    }

    fn compute_plan(&mut self, cluster: &Cluster, src: u32, dst: u32) -> Option<Plan> {
        self.ancestors(cluster, src);
        self.ancestors(cluster, dst);
        let a = self.ancestors[src as usize].as_ref().expect("filled above");
        let b = self.ancestors[dst as usize].as_ref().expect("filled above");
        let tiers = a.len().min(b.len());
        let (top, meet) = (0..tiers).find_map(|t| {
            let m: Vec<u32> = a[t]
                .iter()
                .copied()
                .filter(|x| contains(&b[t], *x))
                .collect();
            (!m.is_empty()).then_some((t, m))
        })?;
        let reach = |side: &Vec<Vec<u32>>| {
            let mut sets = vec![Vec::new(); top + 1];
            sets[top] = meet.clone();
            for t in (0..top).rev() {
                sets[t] = side[t]
                    .iter()
                    .copied()
                    .filter(|&y| {
                        cluster
                            .up_links(SwitchId(y))
                            .iter()
                            .any(|&l| contains(&sets[t + 1], cluster.link(l).upper.0))
                    })
                    .collect();
            }
            sets
        };
        let up = reach(a);
        let down = reach(b);
        Some(Plan {
            top,
            up,
            down,
            sprayed: OnceLock::new(),
            inner: OnceLock::new(),
        })
    }

    /// Route one flow between two NIC ports with ECMP over every port of every shortest next
    /// hop, appending its resources to `out`.
    #[allow(clippy::too_many_arguments)] // one call site; a struct would only rename these
    pub fn ecmp(
        &self,
        cluster: &Cluster,
        ports: &PortIndex,
        plan: &Plan,
        (src_nic, src_port): (LinkId, u32),
        (dst_nic, dst_port): (LinkId, u32),
        tuple: &FiveTuple,
        cfg: &RoutingConfig,
        out: &mut Vec<(u32, f64)>,
    ) {
        out.push((ports.resource(src_nic, src_port, true), 1.0));
        let mut x = cluster.link(src_nic).upper;
        let pick = |s: SwitchId, cands: &[LinkId]| -> (LinkId, u32) {
            let total: u32 = cands.iter().map(|&l| cluster.link(l).ports.max(1)).sum();
            let mut k = if total <= 1 {
                0
            } else {
                let seed = switch_seed(cfg.seeds, cfg.seed, s.0);
                choose(cfg.hash, seed, tuple, total as usize) as u32
            };
            for &l in cands {
                let p = cluster.link(l).ports.max(1);
                if k < p {
                    return (l, k);
                }
                k -= p;
            }
            (cands[0], 0)
        };
        let mut cands: Vec<LinkId> = Vec::with_capacity(16);
        for t in 0..plan.top {
            cands.clear();
            cands.extend(
                cluster
                    .up_links(x)
                    .iter()
                    .copied()
                    .filter(|&l| contains(&plan.up[t + 1], cluster.link(l).upper.0)),
            );
            let (l, p) = pick(x, &cands);
            out.push((ports.resource(l, p, true), 1.0));
            x = cluster.link(l).upper;
        }
        for t in (1..=plan.top).rev() {
            cands.clear();
            cands.extend(cluster.down_links(x).iter().copied().filter(|&l| {
                matches!(cluster.link(l).lower, Endpoint::Switch(s) if contains(&plan.down[t - 1], s.0))
            }));
            let (l, p) = pick(x, &cands);
            out.push((ports.resource(l, p, false), 1.0));
            match cluster.link(l).lower {
                Endpoint::Switch(s) => x = s,
                Endpoint::Nic { .. } => unreachable!("filtered to switch ends"),
            }
        }
        debug_assert_eq!(
            x,
            cluster.link(dst_nic).upper,
            "the descent ends at the leaf"
        );
        out.push((ports.resource(dst_nic, dst_port, false), 1.0));
    }

    /// Route one flow split evenly over all ports of all shortest next hops at every switch,
    /// appending its resources to `out` (`capacity` indexed by resource, one fabric's).
    #[allow(clippy::too_many_arguments)] // one call site; a struct would only rename these
    pub fn spray(
        &mut self,
        cluster: &Cluster,
        ports: &PortIndex,
        capacity: &[f64],
        plan: &Plan,
        (src_nic, src_port): (LinkId, u32),
        (dst_nic, dst_port): (LinkId, u32),
        out: &mut Vec<(u32, f64)>,
    ) {
        out.push((ports.resource(src_nic, src_port, true), 1.0));
        let first_end = self.sprayed(cluster, ports, capacity, plan).first_end;
        let ends = &plan.sprayed().expect("made above").ends;
        out.extend_from_slice(&ends[..first_end]);
        out.extend_from_slice(self.spray_inner(cluster, ports, plan));
        out.extend_from_slice(&ends[first_end..]);
        out.push((ports.resource(dst_nic, dst_port, false), 1.0));
    }

    /// The ends of the switch-to-switch part of [`Router::spray`]'s path between `plan`'s
    /// leaves and the bound on its inner part, made on first use.
    pub fn sprayed<'p>(
        &mut self,
        cluster: &Cluster,
        ports: &PortIndex,
        capacity: &[f64],
        plan: &'p Plan,
    ) -> &'p Sprayed {
        plan.sprayed.get_or_init(|| {
            let (mut first, mut last) = (Vec::new(), Vec::new());
            let mut inner_worst = 0.0f64;
            self.spray_walk(cluster, plan, |part, l, up, w| match part {
                Part::First => first.extend(link_ports(cluster, ports, l, up, w)),
                Part::Last => last.extend(link_ports(cluster, ports, l, up, w)),
                Part::Inner => {
                    // Every port of a link has the same capacity (Fabric::new).
                    let c = capacity[ports.resource(l, 0, up) as usize];
                    inner_worst = inner_worst.max(if c > 0.0 { w / c } else { f64::INFINITY });
                }
            });
            let first_end = first.len();
            first.extend_from_slice(&last);
            Sprayed {
                ends: first,
                first_end,
                inner_worst,
            }
        })
    }

    /// The inner part of [`Router::spray`]'s path between `plan`'s leaves, made on first use.
    pub fn spray_inner<'p>(
        &mut self,
        cluster: &Cluster,
        ports: &PortIndex,
        plan: &'p Plan,
    ) -> &'p [(u32, f64)] {
        plan.inner.get_or_init(|| {
            let mut inner = Vec::new();
            self.spray_walk(cluster, plan, |part, l, up, w| {
                if part == Part::Inner {
                    inner.extend(link_ports(cluster, ports, l, up, w));
                }
            });
            inner
        })
    }

    /// Walk [`Router::spray`]'s path between the two leaves of `plan`: up every shortest next
    /// hop and down again, the flow split evenly over the ports at each switch; `visit` gets
    /// each link's part, direction (up or not) and weight on each of its ports, in path order.
    fn spray_walk(
        &mut self,
        cluster: &Cluster,
        plan: &Plan,
        mut visit: impl FnMut(Part, LinkId, bool, f64),
    ) {
        let mut layer: Vec<(u32, f64)> = vec![(plan.up[0][0], 1.0)];
        let next = &mut self.scratch;
        let cands = &mut self.up_hops;
        for t in 0..plan.top {
            next.clear();
            for &(x, p) in &layer {
                cands.clear();
                cands.extend(
                    cluster
                        .up_links(SwitchId(x))
                        .iter()
                        .copied()
                        .filter(|&l| contains(&plan.up[t + 1], cluster.link(l).upper.0)),
                );
                let total: u32 = cands.iter().map(|&l| cluster.link(l).ports.max(1)).sum();
                let per_port = p / f64::from(total.max(1));
                for &l in cands.iter() {
                    let n = cluster.link(l).ports.max(1);
                    let part = if t == 0 { Part::First } else { Part::Inner };
                    visit(part, l, true, per_port);
                    next.push((cluster.link(l).upper.0, per_port * f64::from(n)));
                }
            }
            merge(next);
            std::mem::swap(&mut layer, next);
        }
        let hops = &mut self.down_hops;
        for t in (1..=plan.top).rev() {
            next.clear();
            // Each layer switch's next hops down, found from below: the links up from the valid
            // switches of the tier under it into the layer (a wide switch has far more
            // down-links), in ascending link ID per switch, the order of its down-links.
            hops.clear();
            for &y in &plan.down[t - 1] {
                for &l in cluster.up_links(SwitchId(y)) {
                    let x = cluster.link(l).upper.0;
                    if let Ok(i) = layer.binary_search_by_key(&x, |&(s, _)| s) {
                        hops.push((i as u32, l, y));
                    }
                }
            }
            hops.sort_unstable_by_key(|&(i, l, _)| (i, l));
            for cands in hops.chunk_by(|a, b| a.0 == b.0) {
                let p = layer[cands[0].0 as usize].1;
                let total: u32 = cands
                    .iter()
                    .map(|&(_, l, _)| cluster.link(l).ports.max(1))
                    .sum();
                let per_port = p / f64::from(total.max(1));
                for &(_, l, s) in cands {
                    let n = cluster.link(l).ports.max(1);
                    let part = if t == 1 { Part::Last } else { Part::Inner };
                    visit(part, l, false, per_port);
                    next.push((s, per_port * f64::from(n)));
                }
            }
            merge(next);
            std::mem::swap(&mut layer, next);
        }
        debug_assert!(
            layer.len() == 1 && layer[0].0 == plan.down[0][0],
            "the descent ends at the leaf"
        );
    }
}

/// Each port of link `l` in one direction (`up` or not) as a resource with weight `w`.
fn link_ports<'a>(
    cluster: &'a Cluster,
    ports: &'a PortIndex,
    l: LinkId,
    up: bool,
    w: f64,
) -> impl Iterator<Item = (u32, f64)> + 'a {
    (0..cluster.link(l).ports.max(1)).map(move |q| (ports.resource(l, q, up), w))
}

fn merge(v: &mut Vec<(u32, f64)>) {
    v.sort_by_key(|&(s, _)| s);
    let mut w = 0;
    for i in 0..v.len() {
        if w > 0 && v[w - 1].0 == v[i].0 {
            v[w - 1].1 += v[i].1;
        } else {
            v[w] = v[i];
            w += 1;
        }
    }
    v.truncate(w);
}

/// Resolve a NIC (node, rail) to its link, and check a plan exists.
pub(crate) fn plan_for(
    router: &mut Router,
    cluster: &Cluster,
    src_nic: LinkId,
    dst_nic: LinkId,
) -> Result<Arc<Plan>, FabricError> {
    let s = cluster.link(src_nic).upper.0;
    let d = cluster.link(dst_nic).upper.0;
    router
        .plan(cluster, s, d)
        .ok_or_else(|| FabricError::NoPath {
            from: nic_name(cluster, src_nic),
            to: nic_name(cluster, dst_nic),
        })
}

/// `host/railN` for a NIC link's lower end, or the switch name.
pub fn nic_name(cluster: &Cluster, link: LinkId) -> String {
    endpoint_name(cluster, cluster.link(link).lower)
}

/// A readable name for one end of a link.
pub fn endpoint_name(cluster: &Cluster, e: Endpoint) -> String {
    match e {
        Endpoint::Nic { node, rail } => format!("{}/rail{rail}", cluster.node(node).name),
        Endpoint::Switch(s) => cluster.switch(s).name.clone(),
    }
}
