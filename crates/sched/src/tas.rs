//! The Kueue TAS placement algorithm over the domain tree: capacities per domain (pods, slices,
//! with and without a group leader), the choice of the fit level and domains, and the descent to
//! nodes. Pure and deterministic; every sort ends in the label-value order of the cluster.

use std::collections::BTreeMap;

use topology::{Cluster, DomainId, NodeId};

/// An entry of the tree: a domain (its index) or a node (`domains + node index`).
type E = usize;

/// What one node can take of a pod set (and of its group's leader).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LeafCap {
    /// Worker pods that fit.
    pub pods: u64,
    /// The leader pod fits.
    pub leader: bool,
    /// Worker pods that fit next to the leader (equal to `pods` when there is no leader or it
    /// does not fit).
    pub pods_with_leader: u64,
}

/// A pod set's request in placement levels (non-host levels top first, then the node level).
#[derive(Clone, Debug)]
pub(crate) struct Request {
    /// Worker pods.
    pub count: i64,
    /// Leader pods (0 or 1).
    pub leader_count: i64,
    /// Outer slice size (1 without slices).
    pub slice_size: i64,
    /// Placement level of the outer slice (the node level without slices).
    pub slice_level: usize,
    /// Inner slice sizes by placement level (multi-layer slices).
    pub size_at: BTreeMap<usize, i64>,
    /// Level searched first.
    pub search_level: usize,
    /// The required level: the search climbs no higher, and fails there.
    pub required: Option<usize>,
    /// No required or preferred level.
    pub unconstrained: bool,
    /// Unconstrained pods go to the least free domains first, without the tightest-fit step.
    pub least_free: bool,
}

/// Why the pods did not fit: how many slices (or pods) did, of how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NoFit {
    /// The level searched last.
    pub level: usize,
    /// Slices that fit.
    pub fit: i64,
    /// Slices asked for.
    pub wanted: i64,
}

/// The cluster's tree as the algorithm walks it.
pub(crate) struct Tree<'a> {
    cluster: &'a Cluster,
    /// Cluster level index of each non-host placement level, top first.
    levels: &'a [usize],
    n_domains: usize,
}

#[derive(Clone, Default)]
struct State {
    pod: Vec<i64>,
    slice: Vec<i64>,
    pod_wl: Vec<i64>,
    slice_wl: Vec<i64>,
    leader: Vec<i64>,
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
        Self {
            cluster,
            levels,
            n_domains: cluster.domains.len(),
        }
    }

    fn node_level(&self) -> usize {
        self.levels.len()
    }

    fn node(&self, n: NodeId) -> E {
        self.n_domains + n.index()
    }

    fn order(&self, e: E) -> u32 {
        if e < self.n_domains {
            self.cluster.domain_order(DomainId::from_index(e))
        } else {
            self.cluster
                .node_order(NodeId::from_index(e - self.n_domains))
        }
    }

    fn entries_at(&self, level: usize) -> Vec<E> {
        if level == self.node_level() {
            (0..self.cluster.nodes.len())
                .map(|i| self.n_domains + i)
                .collect()
        } else {
            self.cluster.levels[self.levels[level]]
                .domains
                .iter()
                .map(|d| d.index())
                .collect()
        }
    }

    /// Children of an entry at placement level `level`.
    fn children(&self, e: E, level: usize) -> Vec<E> {
        if e >= self.n_domains {
            return Vec::new();
        }
        let dom = self.cluster.domain(DomainId::from_index(e));
        if level + 1 == self.node_level() {
            dom.nodes.iter().map(|&n| self.node(n)).collect()
        } else {
            dom.children.iter().map(|c| c.index()).collect()
        }
    }
}

/// Place a pod set (with its group leader) as Kueue TAS does: per node, the worker and leader
/// pods, in no particular order. `Err` says how much fit.
pub(crate) fn assign(
    tree: &Tree,
    leaves: &[LeafCap],
    req: &Request,
) -> Result<Vec<(NodeId, u64, u64)>, NoFit> {
    let mut st = fill_counts(tree, leaves, req);
    let (fit_level, found) = find_level(tree, &mut st, req, req.search_level)?;
    let mut cur = update_counts(
        &mut st,
        found,
        req.count,
        req.leader_count,
        req.slice_size,
        req,
        true,
    );
    let mut level = fit_level;
    while level < tree.node_level().min(req.slice_level) {
        let lower: Vec<E> = cur.iter().flat_map(|&d| tree.children(d, level)).collect();
        let sorted = sorted_entries(tree, &st, lower, req.least_free, false);
        cur = update_counts(
            &mut st,
            sorted,
            req.count,
            req.leader_count,
            req.slice_size,
            req,
            true,
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
                    st.slice[c] = st.pod[c] / size_here;
                    st.slice_wl[c] = st.pod_wl[c] / size_here;
                }
            }
            let (pods, leaders) = (st.pod[d], st.leader[d]);
            next.extend(update_counts(
                &mut st,
                sorted,
                pods,
                leaders,
                size_here,
                req,
                size_here > 1,
            ));
        }
        cur = next;
        level += 1;
    }
    Ok(cur
        .into_iter()
        .filter_map(|e| {
            let n = NodeId::from_index(e - tree.n_domains);
            let (w, l) = (st.pod[e].max(0) as u64, st.leader[e].max(0) as u64);
            (w > 0 || l > 0).then_some((n, w, l))
        })
        .collect())
}

/// Slices (in pods) the roomiest entry at `level` holds, and all entries there together.
pub(crate) fn room(tree: &Tree, leaves: &[LeafCap], req: &Request, level: usize) -> (i64, i64) {
    let st = fill_counts(tree, leaves, req);
    let entries = tree.entries_at(level);
    let max = entries.iter().map(|&e| st.slice[e]).max().unwrap_or(0);
    let sum = entries.iter().map(|&e| st.slice[e]).sum::<i64>();
    (max * req.slice_size, sum * req.slice_size)
}

/// Phase 1: pods, slices and leader room of every node and domain.
fn fill_counts(tree: &Tree, leaves: &[LeafCap], req: &Request) -> State {
    let n = tree.n_domains + leaves.len();
    let mut st = State {
        pod: vec![0; n],
        slice: vec![0; n],
        pod_wl: vec![0; n],
        slice_wl: vec![0; n],
        leader: vec![0; n],
    };
    let node_level = tree.node_level();
    for (i, cap) in leaves.iter().enumerate() {
        let e = tree.n_domains + i;
        st.pod[e] = cap.pods as i64;
        st.leader[e] = i64::from(req.leader_count > 0 && cap.leader);
        st.pod_wl[e] = cap.pods_with_leader as i64;
        if node_level == req.slice_level {
            st.slice[e] = st.pod[e] / req.slice_size;
            st.slice_wl[e] = st.pod_wl[e] / req.slice_size;
        }
    }
    let leader_required = req.leader_count > 0;
    for level in (0..node_level).rev() {
        let inner = req.size_at.get(&(level + 1)).copied();
        for e in tree.entries_at(level) {
            let (mut pods, mut slices, mut leader) = (0i64, 0i64, 0i64);
            let (mut min_pod_diff, mut min_slice_diff) = (i64::MAX, i64::MAX);
            let mut contributor = false;
            for c in tree.children(e, level) {
                let round = |p: i64| inner.map_or(p, |s| p / s * s);
                let (cp, cp_wl) = (round(st.pod[c]), round(st.pod_wl[c]));
                pods += cp;
                slices += st.slice[c];
                if !leader_required || st.leader[c] > 0 {
                    contributor = true;
                    min_pod_diff = min_pod_diff.min(cp - cp_wl);
                    min_slice_diff = min_slice_diff.min(st.slice[c] - st.slice_wl[c]);
                }
                leader = leader.max(st.leader[c]);
            }
            st.pod[e] = pods;
            let mut slices_wl = 0;
            if contributor {
                st.pod_wl[e] = pods - min_pod_diff;
                slices_wl = slices - min_slice_diff;
            } else {
                st.pod_wl[e] = 0;
            }
            st.leader[e] = leader;
            if level == req.slice_level {
                slices = st.pod[e] / req.slice_size;
                slices_wl = st.pod_wl[e] / req.slice_size;
            }
            st.slice[e] = slices;
            st.slice_wl[e] = slices_wl;
        }
    }
    st
}

fn get(st: &State, e: E, by: By) -> i64 {
    match by {
        By::Pod => st.pod[e],
        By::PodWl => st.pod_wl[e],
        By::Slice => st.slice[e],
        By::SliceWl => st.slice_wl[e],
    }
}

/// Sort for descent: most slices first (least free first), then fewest pods, then label order.
/// `with_leader`: leader room first, and counts next to the leader.
fn sorted_entries(
    tree: &Tree,
    st: &State,
    mut entries: Vec<E>,
    least_free: bool,
    with_leader: bool,
) -> Vec<E> {
    let (slice, pod) = if with_leader {
        (&st.slice_wl, &st.pod_wl)
    } else {
        (&st.slice, &st.pod)
    };
    entries.sort_by_cached_key(|&e| {
        let s = if least_free { slice[e] } else { -slice[e] };
        let l = if with_leader { -st.leader[e] } else { 0 };
        (l, s, pod[e], tree.order(e))
    });
    entries
}

/// The first of the entries with the fewest `by` that still hold `needed` (and the leaders),
/// else the first entry.
fn best_fit(st: &State, entries: &[E], needed: i64, leaders: i64, by: By) -> E {
    let mut best = entries[0];
    let mut best_count = i64::MAX;
    for &e in entries {
        if st.leader[e] < leaders {
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

/// Phase 2a: the level and the domains that hold the pod set, climbing from `level`.
fn find_level(
    tree: &Tree,
    st: &mut State,
    req: &Request,
    level: usize,
) -> Result<(usize, Vec<E>), NoFit> {
    let entries = tree.entries_at(level);
    let no_fit = |fit: i64, wanted: i64| NoFit { level, fit, wanted };
    if entries.is_empty() {
        return Err(no_fit(0, req.count / req.slice_size));
    }
    let sorted = sorted_entries(tree, st, entries, req.least_free, true);
    let slices = req.count / req.slice_size;
    let leaders = req.leader_count;
    let mut top = sorted[0];
    if !req.least_free && st.slice_wl[top] >= slices && st.leader[top] >= leaders {
        top = best_fit(st, &sorted, slices, leaders, slice_by(leaders));
    }
    let is_required = req.required == Some(level);
    if req.least_free {
        for &e in &sorted {
            let cap = if leaders > 0 {
                if st.leader[e] < leaders {
                    continue;
                }
                st.slice_wl[e]
            } else {
                st.slice[e]
            };
            if cap >= slices {
                return Ok((level, vec![e]));
            }
        }
    }
    if st.slice_wl[top] >= slices && st.leader[top] >= leaders {
        return Ok((level, vec![top]));
    }
    if is_required {
        return Err(no_fit(st.slice[sorted[0]], slices));
    }
    if level > req.required.unwrap_or(0) && !req.unconstrained {
        return find_level(tree, st, req, level - 1);
    }
    let sorted = prioritize_leader(st, sorted, req.count, leaders, req.slice_size, true);
    let mut out = Vec::new();
    let (mut rem, mut rem_leaders) = (slices, leaders);
    let mut idx = 0;
    while rem_leaders > 0 && idx < sorted.len() && st.leader[sorted[idx]] > 0 {
        let mut e = sorted[idx];
        if !req.least_free && st.slice_wl[e] >= rem {
            e = best_fit(st, &sorted[idx..], rem, rem_leaders, slice_by(rem_leaders));
        }
        out.push(e);
        rem_leaders -= st.leader[e];
        rem -= st.slice_wl[e];
        idx += 1;
    }
    if rem_leaders > 0 {
        return Err(no_fit(leaders - rem_leaders, slices));
    }
    let rest = sorted_entries(tree, st, sorted[idx..].to_vec(), req.least_free, false);
    for i in 0..rest.len() {
        if rem <= 0 {
            break;
        }
        let mut e = rest[i];
        if !req.least_free && st.slice[e] >= rem {
            e = best_fit(st, &rest[i..], rem, 0, By::Slice);
        }
        out.push(e);
        rem -= st.slice[e];
    }
    if rem > 0 {
        return Err(no_fit(slices - rem, slices));
    }
    Ok((level, out))
}

fn slice_by(leaders: i64) -> By {
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
    count: i64,
    leaders: i64,
    slice_size: i64,
    slices: bool,
) -> Vec<E> {
    if leaders == 0 || entries.len() < 2 {
        return entries;
    }
    let (required, available) = if slices {
        (
            count / slice_size,
            entries.iter().map(|&e| st.slice[e]).sum::<i64>(),
        )
    } else {
        (count, entries.iter().map(|&e| st.pod[e]).sum::<i64>())
    };
    for (i, &e) in entries.iter().enumerate() {
        if st.leader[e] < leaders {
            continue;
        }
        let penalty = if slices {
            st.slice[e] - st.slice_wl[e]
        } else {
            st.pod[e] - st.pod_wl[e]
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
    count: i64,
    leaders: i64,
    unit: i64,
    req: &Request,
    slices: bool,
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
            if best_fit_on && get(st, e, wl) >= rem && st.leader[e] >= rem_leaders {
                e = best_fit(st, &entries[i..], rem, rem_leaders, wl);
            }
            let with_leader = get(st, e, wl);
            if with_leader >= rem && st.leader[e] >= rem_leaders {
                set(st, e, prim, rem);
                st.leader[e] = rem_leaders;
                st.pod[e] = rem * pods_per;
                out.push(e);
                return out;
            }
            let take = with_leader.min(rem);
            st.leader[e] = st.leader[e].min(rem_leaders);
            set(st, e, prim, take);
            st.pod[e] = take * pods_per;
            rem_leaders -= st.leader[e];
            rem -= take;
            out.push(e);
            continue;
        }
        if best_fit_on && get(st, e, prim) >= rem {
            e = best_fit(st, &entries[i..], rem, 0, prim);
        }
        st.leader[e] = 0;
        let have = get(st, e, prim);
        if have >= rem {
            st.pod[e] = rem * pods_per;
            set(st, e, prim, rem);
            out.push(e);
            return out;
        }
        st.pod[e] = have * pods_per;
        rem -= have;
        out.push(e);
    }
    out
}

fn set(st: &mut State, e: E, by: By, v: i64) {
    match by {
        By::Pod => st.pod[e] = v,
        By::PodWl => st.pod_wl[e] = v,
        By::Slice => st.slice[e] = v,
        By::SliceWl => st.slice_wl[e] = v,
    }
}
