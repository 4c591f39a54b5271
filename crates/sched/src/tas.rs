//! The Kueue TAS placement algorithm over the domain tree: capacities per domain (pods, slices,
//! with and without a group leader), the choice of the fit level and domains, and the descent to
//! nodes. Pure and deterministic; every sort ends in the label-value order of the cluster.

use std::collections::BTreeMap;

use topology::{Cluster, DomainId, NodeId};

mod balanced;

/// An entry of the tree: a domain (its index) or a node (`domains + node index`).
type E = usize;

/// Pods and slices, as Kueue counts them (32 bits keep the per-entry state small; node
/// capacities are capped so that sums over all nodes cannot overflow).
pub(crate) type Count = i32;

/// What one node can take of a pod set (and of its group's leader).
pub(crate) type LeafCap = Cnt;

/// A node's capacity: `pods` workers; whether the leader fits; workers next to the leader
/// (equal to `pods` without a leader). `nodes` caps the counts so sums cannot overflow.
pub(crate) fn leaf(pods: u64, leader: bool, pods_with_leader: u64, nodes: usize) -> LeafCap {
    Cnt {
        pod: capped(pods, nodes),
        pod_wl: capped(pods_with_leader, nodes),
        leader: Count::from(leader),
        ..Cnt::default()
    }
}

/// The nodes' capacities for [`assign`]: every node's, or (for a pod set without leader,
/// slices, affinity or balanced placement, searched above the node level) each node's on
/// demand, with the pods of each domain just above the nodes given directly; then only the
/// nodes of the chosen domains are read.
pub(crate) enum Leaves<'a> {
    /// Every node's capacity, by node index.
    All(&'a [LeafCap]),
    /// A node's capacity, and a domain's pods summed over its nodes (both capped as
    /// [`leaf`] caps).
    OnDemand {
        /// The node's capacity.
        node: &'a dyn Fn(NodeId) -> LeafCap,
        /// Pods of the domain (one level above the nodes).
        domain_pods: &'a dyn Fn(DomainId) -> Count,
    },
}

/// A pod set's request in placement levels (non-host levels top first, then the node level).
#[derive(Clone, Debug)]
pub(crate) struct Request {
    /// Worker pods.
    pub count: Count,
    /// Leader pods (0 or 1).
    pub leader_count: Count,
    /// Outer slice size (1 without slices).
    pub slice_size: Count,
    /// Placement level of the outer slice (the node level without slices).
    pub slice_level: usize,
    /// Inner slice sizes by placement level (multi-layer slices).
    pub size_at: BTreeMap<usize, Count>,
    /// Level searched first.
    pub search_level: usize,
    /// The required level: the search climbs no higher, and fails there.
    pub required: Option<usize>,
    /// No required or preferred level.
    pub unconstrained: bool,
    /// Unconstrained pods go to the least free domains first, without the tightest-fit step.
    pub least_free: bool,
    /// Balanced placement for preferred pod sets ([`crate::PlaceOptions::balanced`]).
    pub balanced: bool,
}

/// Why the pods did not fit: the room there is, in pods of whole slices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NoFit {
    /// In the roomiest domain at the required level (0 without one).
    pub roomiest: i64,
    /// On all nodes together.
    pub total: i64,
}

/// Internal: the search failed at a level.
struct Failed;

/// The cluster's tree as the algorithm walks it.
pub(crate) struct Tree<'a> {
    cluster: &'a Cluster,
    /// Cluster level index of each non-host placement level, top first.
    levels: &'a [usize],
    /// The domains of the placement levels, by entry (host-level domains have no entry).
    dom: Vec<DomainId>,
    /// The first entry of each cluster level's domains (unused for the host level).
    offset: Vec<usize>,
    n_domains: usize,
    n_nodes: usize,
}

/// Counts of one entry (Kueue's domain state).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cnt {
    pod: Count,
    slice: Count,
    pod_wl: Count,
    slice_wl: Count,
    leader: Count,
}

#[derive(Clone, Default)]
struct State {
    /// By entry.
    c: Vec<Cnt>,
    /// Preferred-affinity score by entry (the sum of matching terms' weights over the nodes
    /// below); empty when preferred affinity is not used.
    aff: Vec<i64>,
}

impl State {
    fn affinity(&self, e: E) -> i64 {
        self.aff.get(e).copied().unwrap_or(0)
    }
}

/// Which count a tightest-fit search compares.
#[derive(Clone, Copy)]
enum By {
    Pod,
    PodWl,
    Slice,
    SliceWl,
}

impl<'a> Tree<'a> {
    pub(crate) fn new(cluster: &'a Cluster, levels: &'a [usize]) -> Self {
        let dom: Vec<DomainId> = levels
            .iter()
            .flat_map(|&l| cluster.levels[l].domains.iter().copied())
            .collect();
        let mut offset = vec![0; cluster.levels.len()];
        let mut next = 0;
        for &l in levels {
            offset[l] = next;
            next += cluster.levels[l].domains.len();
        }
        Self {
            cluster,
            levels,
            n_domains: dom.len(),
            n_nodes: cluster.nodes.len(),
            dom,
            offset,
        }
    }

    fn domain_entry(&self, d: DomainId) -> E {
        self.n_nodes
            + self.offset[self.cluster.domain(d).level]
            + self.cluster.position_in_level(d) as usize
    }

    fn node_level(&self) -> usize {
        self.levels.len()
    }

    fn node(&self, n: NodeId) -> E {
        n.index()
    }

    fn order(&self, e: E) -> u32 {
        if e >= self.n_nodes {
            self.cluster.domain_order(self.dom[e - self.n_nodes])
        } else {
            self.cluster.node_order(NodeId::from_index(e))
        }
    }

    fn entries_at(&self, level: usize) -> Vec<E> {
        if level == self.node_level() {
            (0..self.cluster.nodes.len()).collect()
        } else {
            self.cluster.levels[self.levels[level]]
                .domains
                .iter()
                .map(|&d| self.domain_entry(d))
                .collect()
        }
    }

    /// Children of an entry at placement level `level`.
    fn children(&self, e: E, level: usize) -> Vec<E> {
        if e < self.n_nodes {
            return Vec::new();
        }
        let dom = self.cluster.domain(self.dom[e - self.n_nodes]);
        if level + 1 == self.node_level() {
            dom.nodes.iter().map(|&n| self.node(n)).collect()
        } else {
            dom.children.iter().map(|&c| self.domain_entry(c)).collect()
        }
    }

    /// Calls `f` for each child of an entry at placement level `level`, without allocating.
    fn for_children(&self, e: E, level: usize, mut f: impl FnMut(E)) {
        let dom = self.cluster.domain(self.dom[e - self.n_nodes]);
        if level + 1 == self.node_level() {
            dom.nodes.iter().for_each(|&n| f(self.node(n)));
        } else {
            dom.children.iter().for_each(|&c| f(self.domain_entry(c)));
        }
    }
}

/// Place a pod set (with its group leader) as Kueue TAS does: per node, the worker and leader
/// pods, in no particular order. `Err` says how much fit.
pub(crate) fn assign(
    tree: &Tree,
    leaves: &Leaves,
    scores: &[i64],
    req: &Request,
) -> Result<Vec<(NodeId, u64, u64)>, NoFit> {
    let on_demand = match leaves {
        Leaves::OnDemand { node, .. } => {
            debug_assert!(req.leader_count == 0 && req.slice_level == tree.node_level());
            debug_assert!(scores.is_empty() && !req.balanced && !req.unconstrained);
            debug_assert!(req.search_level < tree.node_level());
            Some(*node)
        }
        Leaves::All(_) => None,
    };
    let mut st = fill_counts(tree, leaves, req);
    if !scores.is_empty() {
        st.aff = affinity_sums(tree, scores);
    }
    // Balanced placement, when asked for and possible; else BestFit (as Kueue falls back).
    let balanced = if req.balanced && req.required.is_none() && !req.unconstrained {
        balanced::place(tree, &st, req)
    } else {
        None
    };
    let use_balanced = balanced.is_some();
    let found = match balanced {
        Some((state, domains, level)) => {
            st = state;
            Ok((level, domains))
        }
        None => find_level(tree, &mut st, req, req.search_level),
    };
    let Ok((fit_level, found)) = found else {
        let room = |level: usize| tree.entries_at(level).into_iter().map(|e| st.c[e].slice);
        return Err(NoFit {
            roomiest: i64::from(req.required.map_or(0, |r| room(r).max().unwrap_or(0)))
                * i64::from(req.slice_size),
            total: room(0).map(i64::from).sum::<i64>() * i64::from(req.slice_size),
        });
    };
    let mut cur = update_counts(
        &mut st,
        found,
        req.count,
        req.leader_count,
        req.slice_size,
        req,
        true,
        None,
    );
    let mut level = fit_level;
    while level < tree.node_level().min(req.slice_level) && !use_balanced {
        // Children without a whole slice take nothing here (they sort last, or first and take
        // nothing under least-free), nor do their own children: leave them out of the sort.
        if let (Some(node), true) = (on_demand, level + 1 == tree.node_level()) {
            for &d in &cur {
                tree.for_children(d, level, |c| {
                    // No slices: a node's slices are its pods.
                    let x = node(NodeId::from_index(c));
                    st.c[c] = Cnt {
                        slice: x.pod,
                        slice_wl: x.pod_wl,
                        ..x
                    };
                });
            }
        }
        let lower: Vec<E> = cur
            .iter()
            .flat_map(|&d| tree.children(d, level))
            .filter(|&c| st.c[c].slice > 0 || st.c[c].leader > 0)
            .collect();
        // Each entry left holds a whole slice: the fill takes at most `slices` of them.
        let plain = req.leader_count == 0 && !req.least_free && st.aff.is_empty();
        let sorted = if plain {
            partly_sorted(
                tree,
                &st,
                lower,
                (req.count / req.slice_size).max(1) as usize,
            )
        } else {
            sorted_entries(tree, &st, lower, req.least_free, false)
        };
        cur = update_counts(
            &mut st,
            sorted,
            req.count,
            req.leader_count,
            req.slice_size,
            req,
            true,
            plain.then_some(tree),
        );
        level += 1;
    }
    while level < tree.node_level() {
        let size_here = if level >= req.slice_level {
            req.size_at.get(&(level + 1)).copied().unwrap_or(1)
        } else {
            req.slice_size
        };
        let mut next = Vec::new();
        for &d in &cur {
            let sorted = sorted_entries(tree, &st, tree.children(d, level), req.least_free, false);
            if size_here > 1 {
                for &c in &sorted {
                    st.c[c].slice = st.c[c].pod / size_here;
                    st.c[c].slice_wl = st.c[c].pod_wl / size_here;
                }
            }
            let (pods, leaders) = (st.c[d].pod, st.c[d].leader);
            next.extend(update_counts(
                &mut st,
                sorted,
                pods,
                leaders,
                size_here,
                req,
                size_here > 1,
                None,
            ));
        }
        cur = next;
        level += 1;
    }
    Ok(cur
        .into_iter()
        .filter_map(|e| {
            let n = NodeId::from_index(e);
            let (w, l) = (st.c[e].pod.max(0) as u64, st.c[e].leader.max(0) as u64);
            (w > 0 || l > 0).then_some((n, w, l))
        })
        .collect())
}

/// Preferred-affinity scores of every entry: the nodes' own, summed up the tree.
fn affinity_sums(tree: &Tree, scores: &[i64]) -> Vec<i64> {
    let mut aff = vec![0; tree.n_nodes + tree.n_domains];
    aff[..scores.len()].copy_from_slice(scores);
    for level in (0..tree.node_level()).rev() {
        for e in tree.entries_at(level) {
            let mut sum = 0;
            tree.for_children(e, level, |c| sum += aff[c]);
            aff[e] = sum;
        }
    }
    aff
}

/// A node's pods, capped so that the sum over `nodes` nodes fits a [`Count`].
fn capped(pods: u64, nodes: usize) -> Count {
    let cap = Count::MAX as u64 / (nodes as u64 + 1);
    pods.min(cap) as Count
}

/// Phase 1: pods, slices and leader room of every node and domain.
fn fill_counts(tree: &Tree, leaves: &Leaves, req: &Request) -> State {
    let (leaves, domain_pods) = match leaves {
        Leaves::All(l) => (*l, None),
        Leaves::OnDemand { domain_pods, .. } => (&[][..], Some(*domain_pods)),
    };
    let mut c = Vec::with_capacity(tree.n_nodes + tree.n_domains);
    c.extend_from_slice(leaves);
    c.resize(tree.n_nodes + tree.n_domains, Cnt::default());
    let mut st = State { c, aff: Vec::new() };
    let node_level = tree.node_level();
    if node_level == req.slice_level {
        for x in &mut st.c[..leaves.len()] {
            if req.slice_size == 1 {
                x.slice = x.pod;
                x.slice_wl = x.pod_wl;
            } else {
                x.slice = x.pod / req.slice_size;
                x.slice_wl = x.pod_wl / req.slice_size;
            }
        }
    }
    let leader_required = req.leader_count > 0;
    for level in (0..node_level).rev() {
        let inner = req.size_at.get(&(level + 1)).copied();
        let round = |p: Count| inner.map_or(p, |s| p / s * s);
        for e in tree.entries_at(level) {
            if let (Some(pods_of), true) = (domain_pods, level + 1 == node_level) {
                // No leader, no slices: pods and slices are the nodes' pods.
                let pods = pods_of(tree.dom[e - tree.n_nodes]);
                st.c[e] = Cnt {
                    pod: pods,
                    slice: pods,
                    pod_wl: pods,
                    slice_wl: pods,
                    leader: 0,
                };
                continue;
            }
            if !leader_required {
                // Without a leader the counts "with the leader" equal the plain ones.
                let (mut pods, mut slices) = (0 as Count, 0 as Count);
                tree.for_children(e, level, |c| {
                    pods += round(st.c[c].pod);
                    slices += st.c[c].slice;
                });
                if level == req.slice_level {
                    slices = pods / req.slice_size;
                }
                st.c[e].pod = pods;
                st.c[e].pod_wl = pods;
                st.c[e].slice = slices;
                st.c[e].slice_wl = slices;
                continue;
            }
            let (mut pods, mut slices, mut leader) = (0 as Count, 0 as Count, 0 as Count);
            let (mut min_pod_diff, mut min_slice_diff) = (Count::MAX, Count::MAX);
            let mut contributor = false;
            tree.for_children(e, level, |c| {
                let (cp, cp_wl) = (round(st.c[c].pod), round(st.c[c].pod_wl));
                pods += cp;
                slices += st.c[c].slice;
                if !leader_required || st.c[c].leader > 0 {
                    contributor = true;
                    min_pod_diff = min_pod_diff.min(cp - cp_wl);
                    min_slice_diff = min_slice_diff.min(st.c[c].slice - st.c[c].slice_wl);
                }
                leader = leader.max(st.c[c].leader);
            });
            st.c[e].pod = pods;
            let mut slices_wl = 0;
            if contributor {
                st.c[e].pod_wl = pods - min_pod_diff;
                slices_wl = slices - min_slice_diff;
            } else {
                st.c[e].pod_wl = 0;
            }
            st.c[e].leader = leader;
            if level == req.slice_level {
                slices = st.c[e].pod / req.slice_size;
                slices_wl = st.c[e].pod_wl / req.slice_size;
            }
            st.c[e].slice = slices;
            st.c[e].slice_wl = slices_wl;
        }
    }
    st
}

fn get(st: &State, e: E, by: By) -> Count {
    match by {
        By::Pod => st.c[e].pod,
        By::PodWl => st.c[e].pod_wl,
        By::Slice => st.c[e].slice,
        By::SliceWl => st.c[e].slice_wl,
    }
}

/// Sort for descent: most slices first (least free first), then fewest pods, then label order.
/// `with_leader`: leader room first, and counts next to the leader.
fn sorted_entries(
    tree: &Tree,
    st: &State,
    entries: Vec<E>,
    least_free: bool,
    with_leader: bool,
) -> Vec<E> {
    if !st.aff.is_empty() {
        // Preferred affinity sorts right after the leader room (higher score first).
        let mut keyed: Vec<((u32, i64, u128), E)> = entries
            .into_iter()
            .map(|e| {
                let k = sort_key(tree, st, e, least_free, with_leader);
                (((k >> 96) as u32, -st.affinity(e), k), e)
            })
            .collect();
        keyed.sort_unstable();
        return keyed.into_iter().map(|(_, e)| e).collect();
    }
    let mut keyed: Vec<(u128, E)> = entries
        .into_iter()
        .map(|e| (sort_key(tree, st, e, least_free, with_leader), e))
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, e)| e).collect()
}

/// The sort key of [`sorted_entries`], packed into one integer (counts are never negative);
/// unique within a level, since label order is.
fn sort_key(tree: &Tree, st: &State, e: E, least_free: bool, with_leader: bool) -> u128 {
    let c = &st.c[e];
    let (slice, pod) = if with_leader {
        (c.slice_wl, c.pod_wl)
    } else {
        (c.slice, c.pod)
    };
    let u = |v: Count| u128::from(v.max(0) as u32);
    let leader = if with_leader {
        u128::from(u32::MAX) - u(c.leader)
    } else {
        0
    };
    let slice = if least_free {
        u(slice)
    } else {
        u128::from(u32::MAX) - u(slice)
    };
    leader << 96 | slice << 64 | u(pod) << 32 | u128::from(tree.order(e))
}

/// [`sorted_entries`] (without leader, BestFit) for a greedy fill that takes at most `k`
/// entries: only the first `k` are put in order, the rest only follow them. O(n + k log k).
fn partly_sorted(tree: &Tree, st: &State, entries: Vec<E>, k: usize) -> Vec<E> {
    let mut keyed: Vec<(u128, E)> = entries
        .into_iter()
        .map(|e| (sort_key(tree, st, e, false, false), e))
        .collect();
    if k < keyed.len() {
        keyed.select_nth_unstable(k);
        keyed[..k].sort_unstable();
    } else {
        keyed.sort_unstable();
    }
    keyed.into_iter().map(|(_, e)| e).collect()
}

/// The first of the entries with the fewest `by` that still hold `needed` (and the leaders),
/// else the first entry.
fn best_fit(st: &State, entries: &[E], needed: Count, leaders: Count, by: By) -> E {
    // With preferred affinity, only the entries of the top score compete (sorted first).
    let top = st.affinity(entries[0]);
    let tier = entries
        .iter()
        .position(|&e| st.affinity(e) != top)
        .unwrap_or(entries.len());
    let entries = &entries[..tier];
    let mut best = entries[0];
    let mut best_count = Count::MAX;
    for &e in entries {
        if st.c[e].leader < leaders {
            continue;
        }
        let c = get(st, e, by);
        if c >= needed && c < best_count {
            best = e;
            best_count = c;
        }
    }
    best
}

/// [`best_fit`] over entries not (all) in sorted order: the fewest `by` that still holds
/// `needed`, ties by the sort key (so the same entry a sorted list would give first).
fn best_fit_keyed(tree: &Tree, st: &State, entries: &[E], needed: Count, by: By) -> E {
    entries
        .iter()
        .copied()
        .filter(|&e| get(st, e, by) >= needed)
        .min_by_key(|&e| (get(st, e, by), sort_key(tree, st, e, false, false)))
        .unwrap_or(entries[0])
}

/// Phase 2a: the level and the domains that hold the pod set, climbing from `level`.
fn find_level(
    tree: &Tree,
    st: &mut State,
    req: &Request,
    level: usize,
) -> Result<(usize, Vec<E>), Failed> {
    let entries = tree.entries_at(level);
    if entries.is_empty() {
        return Err(Failed);
    }
    let sorted = sorted_entries(tree, st, entries, req.least_free, true);
    let slices = req.count / req.slice_size;
    let leaders = req.leader_count;
    let mut top = sorted[0];
    if !req.least_free && st.c[top].slice_wl >= slices && st.c[top].leader >= leaders {
        top = best_fit(st, &sorted, slices, leaders, slice_by(leaders));
    }
    let is_required = req.required == Some(level);
    if req.least_free {
        for &e in &sorted {
            let cap = if leaders > 0 {
                if st.c[e].leader < leaders {
                    continue;
                }
                st.c[e].slice_wl
            } else {
                st.c[e].slice
            };
            if cap >= slices {
                return Ok((level, vec![e]));
            }
        }
    }
    if st.c[top].slice_wl >= slices && st.c[top].leader >= leaders {
        return Ok((level, vec![top]));
    }
    if is_required && !st.aff.is_empty() {
        // Preferred affinity may have sorted a fitting domain behind a better-scored one.
        if let Some(i) = (1..sorted.len())
            .find(|&i| st.c[sorted[i]].slice_wl >= slices && st.c[sorted[i]].leader >= leaders)
        {
            let e = best_fit(st, &sorted[i..], slices, leaders, slice_by(leaders));
            return Ok((level, vec![e]));
        }
    }
    if is_required {
        return Err(Failed);
    }
    if level > req.required.unwrap_or(0) && !req.unconstrained {
        return find_level(tree, st, req, level - 1);
    }
    let sorted = prioritize_leader(st, sorted, req.count, leaders, req.slice_size, true);
    let mut out = Vec::new();
    let (mut rem, mut rem_leaders) = (slices, leaders);
    let mut idx = 0;
    while rem_leaders > 0 && idx < sorted.len() && st.c[sorted[idx]].leader > 0 {
        let mut e = sorted[idx];
        if !req.least_free && st.c[e].slice_wl >= rem {
            e = best_fit(st, &sorted[idx..], rem, rem_leaders, slice_by(rem_leaders));
        }
        out.push(e);
        rem_leaders -= st.c[e].leader;
        rem -= st.c[e].slice_wl;
        idx += 1;
    }
    if rem_leaders > 0 {
        return Err(Failed);
    }
    let rest = sorted_entries(tree, st, sorted[idx..].to_vec(), req.least_free, false);
    for i in 0..rest.len() {
        if rem <= 0 {
            break;
        }
        let mut e = rest[i];
        if !req.least_free && st.c[e].slice >= rem {
            e = best_fit(st, &rest[i..], rem, 0, By::Slice);
        }
        out.push(e);
        rem -= st.c[e].slice;
    }
    if rem > 0 {
        return Err(Failed);
    }
    Ok((level, out))
}

fn slice_by(leaders: Count) -> By {
    if leaders > 0 {
        By::SliceWl
    } else {
        By::Slice
    }
}

/// Move to the front the first domain that can hold the leader without costing the workers room
/// they need.
fn prioritize_leader(
    st: &State,
    entries: Vec<E>,
    count: Count,
    leaders: Count,
    slice_size: Count,
    slices: bool,
) -> Vec<E> {
    if leaders == 0 || entries.len() < 2 {
        return entries;
    }
    let (required, available) = if slices {
        (
            count / slice_size,
            entries.iter().map(|&e| st.c[e].slice).sum::<Count>(),
        )
    } else {
        (count, entries.iter().map(|&e| st.c[e].pod).sum::<Count>())
    };
    for (i, &e) in entries.iter().enumerate() {
        if st.c[e].leader < leaders {
            continue;
        }
        let penalty = if slices {
            st.c[e].slice - st.c[e].slice_wl
        } else {
            st.c[e].pod - st.c[e].pod_wl
        };
        if available - penalty < required {
            continue;
        }
        let mut out = entries;
        out[..=i].rotate_right(1);
        return out;
    }
    entries
}

/// Give `count` pods (in slices of `unit` when `slices`) and `leaders` to the entries in order,
/// the last piece to the tightest entry that holds it; returns the entries used, with their
/// assigned pods and leaders written into the state.
#[allow(clippy::too_many_arguments)] // the descent's parameters, as Kueue passes them
fn update_counts(
    st: &mut State,
    entries: Vec<E>,
    count: Count,
    leaders: Count,
    unit: Count,
    req: &Request,
    slices: bool,
    keyed: Option<&Tree>,
) -> Vec<E> {
    let entries = prioritize_leader(st, entries, count, leaders, unit, slices);
    let best_fit_on = !req.least_free;
    let mut out = Vec::new();
    let mut rem = if slices { count / unit } else { count };
    let mut rem_leaders = leaders;
    let (prim, wl) = if slices {
        (By::Slice, By::SliceWl)
    } else {
        (By::Pod, By::PodWl)
    };
    let pods_per = if slices { unit } else { 1 };
    for i in 0..entries.len() {
        let mut e = entries[i];
        if rem_leaders > 0 {
            if best_fit_on && get(st, e, wl) >= rem && st.c[e].leader >= rem_leaders {
                e = best_fit(st, &entries[i..], rem, rem_leaders, wl);
            }
            let with_leader = get(st, e, wl);
            if with_leader >= rem && st.c[e].leader >= rem_leaders {
                set(st, e, prim, rem);
                st.c[e].leader = rem_leaders;
                st.c[e].pod = rem * pods_per;
                out.push(e);
                return out;
            }
            let take = with_leader.min(rem);
            st.c[e].leader = st.c[e].leader.min(rem_leaders);
            set(st, e, prim, take);
            st.c[e].pod = take * pods_per;
            rem_leaders -= st.c[e].leader;
            rem -= take;
            out.push(e);
            continue;
        }
        if best_fit_on && get(st, e, prim) >= rem {
            e = match keyed {
                Some(tree) => best_fit_keyed(tree, st, &entries[i..], rem, prim),
                None => best_fit(st, &entries[i..], rem, 0, prim),
            };
        }
        st.c[e].leader = 0;
        let have = get(st, e, prim);
        if have >= rem {
            st.c[e].pod = rem * pods_per;
            set(st, e, prim, rem);
            out.push(e);
            return out;
        }
        st.c[e].pod = have * pods_per;
        rem -= have;
        out.push(e);
    }
    out
}

fn set(st: &mut State, e: E, by: By, v: Count) {
    match by {
        By::Pod => st.c[e].pod = v,
        By::PodWl => st.c[e].pod_wl = v,
        By::Slice => st.c[e].slice = v,
        By::SliceWl => st.c[e].slice_wl = v,
    }
}

#[cfg(test)]
mod tests {
    //! Kueue's sort tests (`tests/kueue/tas_flavor_snapshot_test.yaml`: hand-set domain states
    //! and the order Kueue sorts them in) against [`sorted_entries`].

    use std::collections::BTreeMap;

    use serde::Deserialize;
    use topology::{assemble, FabricParams, NicSpec, NodeRecord, TierParams};

    use super::*;

    #[derive(Deserialize)]
    struct File {
        sort_cases: Vec<SortCase>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct SortCase {
        name: String,
        test: String,
        with_leader: bool,
        unconstrained: bool,
        domains: Vec<Dom>,
        want_order: Vec<String>,
        #[serde(default)]
        gates_on: Vec<String>,
        difference: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Dom {
        id: String,
        values: Vec<String>,
        slice_count: Count,
        pod_count: Count,
        slice_count_with_leader: Count,
        pod_count_with_leader: Count,
        leader_count: Count,
        affinity_score: i64,
    }

    /// The ids in the order railyard sorts the case's domains.
    fn order(case: &SortCase) -> Vec<String> {
        let records = case
            .domains
            .iter()
            .enumerate()
            .map(|(i, d)| NodeRecord {
                name: format!("n{i}"),
                gpus: 1,
                gpu_memory_gib: 80,
                nics: NicSpec {
                    rails: 1,
                    ports_per_rail: 1,
                    port_gbps: 100.0,
                },
                nvlink_gbps: 0.0,
                nvlink_domain: None,
                labels: BTreeMap::from([("block".to_owned(), d.values[0].clone())]),
                taints: Vec::new(),
                ready: true,
                unschedulable: false,
                internal_ip: None,
                allocatable: Default::default(),
            })
            .collect();
        let tier = TierParams {
            latency_ns: 1,
            oversubscription: 1.0,
            switches_per_group: Some(1),
        };
        let cluster = assemble(
            "sort",
            records,
            &FabricParams {
                levels: vec!["block".to_owned()],
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![tier; 2],
                rail_optimized: false,
            },
        )
        .expect("sort-case cluster");
        let levels = [0];
        let tree = Tree::new(&cluster, &levels);
        let mut st = State {
            c: vec![Cnt::default(); tree.n_nodes + tree.n_domains],
            aff: Vec::new(),
        };
        let entries = tree.entries_at(0);
        if case
            .gates_on
            .iter()
            .any(|g| g == "TASRespectNodeAffinityPreferred")
        {
            st.aff = vec![0; st.c.len()];
        }
        let mut id_of = BTreeMap::new();
        for &e in &entries {
            let value = &cluster.domain(tree.dom[e - tree.n_nodes]).value;
            let d = case
                .domains
                .iter()
                .find(|d| &d.values[0] == value)
                .expect("domain");
            st.c[e] = Cnt {
                pod: d.pod_count,
                slice: d.slice_count,
                pod_wl: d.pod_count_with_leader,
                slice_wl: d.slice_count_with_leader,
                leader: d.leader_count,
            };
            if !st.aff.is_empty() {
                st.aff[e] = d.affinity_score;
            }
            id_of.insert(e, d.id.clone());
        }
        sorted_entries(&tree, &st, entries, case.unconstrained, case.with_leader)
            .into_iter()
            .map(|e| id_of[&e].clone())
            .collect()
    }

    #[test]
    fn kueue_sort_cases() {
        // Compiled in: the core's sources do no I/O, not even in tests.
        let text = include_str!("../tests/kueue/tas_flavor_snapshot_test.yaml");
        let file: File = serde_norway::from_str(text).expect("sort cases");
        assert!(!file.sort_cases.is_empty());
        let mut problems = Vec::new();
        for case in &file.sort_cases {
            let got = order(case);
            let same = got == case.want_order;
            match (&case.difference, same) {
                (None, false) => problems.push(format!(
                    "{} / {}: want {:?}, got {got:?}",
                    case.test, case.name, case.want_order
                )),
                (Some(d), true) => problems.push(format!(
                    "{} / {}: now agrees; remove `difference: {d}`",
                    case.test, case.name
                )),
                _ => {}
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
