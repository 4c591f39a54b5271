//! Kueue's quota tree: ClusterQueues and Cohorts as one arena of nodes, each with its quotas per
//! (flavor, resource), its subtree quota and its usage, and the arithmetic Kueue admits with
//! (`pkg/cache/scheduler/resource_node.go` at kubernetes-sigs/kueue ff69552: `localQuota`,
//! `LocalAvailable`, `available`, `potentialAvailable`, `addUsage`, `removeUsage`,
//! `accumulateFromChild`). Amounts are `i64` in Kubernetes' base units (CPU in millicores),
//! [`UNLIMITED`] standing for Kueue's `Unlimited` with its saturating rules.

use std::collections::BTreeMap;

/// Kueue's `Unlimited` amount (`math.MaxInt64`).
pub const UNLIMITED: i64 = i64::MAX;

/// `a + b`, unlimited if either is.
pub fn add(a: i64, b: i64) -> i64 {
    if a == UNLIMITED || b == UNLIMITED {
        UNLIMITED
    } else {
        a.saturating_add(b).min(UNLIMITED - 1)
    }
}

/// `a - b` as Kueue's `Amount.Sub`: unlimited − unlimited = 0, unlimited − x = unlimited,
/// x − unlimited = the smallest amount.
pub fn sub(a: i64, b: i64) -> i64 {
    match (a == UNLIMITED, b == UNLIMITED) {
        (true, true) => 0,
        (true, false) => UNLIMITED,
        (false, true) => i64::MIN,
        (false, false) => a.saturating_sub(b).min(UNLIMITED - 1),
    }
}

/// A (flavor, resource) pair, interned by [`QuotaTree`].
pub type Fr = (u32, u32);

/// One resource of one flavor of a node: `nominalQuota`, `borrowingLimit`, `lendingLimit`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quota {
    /// `nominalQuota`.
    pub nominal: i64,
    /// `borrowingLimit`; `None`: no bound.
    pub borrowing_limit: Option<i64>,
    /// `lendingLimit`; `None`: everything may be lent.
    pub lending_limit: Option<i64>,
}

/// What a node of the tree is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A ClusterQueue (always a leaf).
    ClusterQueue,
    /// A Cohort (declared or only named).
    Cohort,
}

/// A ClusterQueue or Cohort.
#[derive(Clone, Debug)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// ClusterQueue or Cohort.
    pub kind: NodeKind,
    /// The parent Cohort.
    pub parent: Option<usize>,
    /// Child nodes, in input order.
    pub children: Vec<usize>,
    /// Quotas as declared.
    pub quotas: BTreeMap<Fr, Quota>,
    /// Own nominal quota plus what the children lend up (Kueue's `SubtreeQuota`).
    pub subtree: BTreeMap<Fr, i64>,
    /// Usage counted against [`Node::subtree`] (Kueue's `Usage`).
    pub usage: BTreeMap<Fr, i64>,
}

/// The tree of ClusterQueues and Cohorts with interned flavor and resource names.
#[derive(Clone, Debug, Default)]
pub struct QuotaTree {
    /// Every node, ClusterQueues and Cohorts in input order.
    pub nodes: Vec<Node>,
    /// Flavor names by id.
    pub flavors: Vec<String>,
    /// Resource names by id.
    pub resources: Vec<String>,
    cq_ids: BTreeMap<String, usize>,
    cohort_ids: BTreeMap<String, usize>,
    flavor_ids: BTreeMap<String, u32>,
    resource_ids: BTreeMap<String, u32>,
}

impl QuotaTree {
    /// The id of a flavor name, interned.
    pub fn flavor_id(&mut self, name: &str) -> u32 {
        intern(&mut self.flavor_ids, &mut self.flavors, name)
    }

    /// The id of a resource name, interned.
    pub fn resource_id(&mut self, name: &str) -> u32 {
        intern(&mut self.resource_ids, &mut self.resources, name)
    }

    /// The (flavor, resource) pair of two names, if both are known.
    pub fn fr(&self, flavor: &str, resource: &str) -> Option<Fr> {
        Some((
            *self.flavor_ids.get(flavor)?,
            *self.resource_ids.get(resource)?,
        ))
    }

    /// The id of a resource name, if known.
    pub fn find_resource(&self, name: &str) -> Option<u32> {
        self.resource_ids.get(name).copied()
    }

    /// Add a node (no parent yet); `None` when a node of that kind and name exists.
    pub fn add_node(&mut self, name: &str, kind: NodeKind) -> Option<usize> {
        let ids = match kind {
            NodeKind::ClusterQueue => &mut self.cq_ids,
            NodeKind::Cohort => &mut self.cohort_ids,
        };
        if ids.contains_key(name) {
            return None;
        }
        let id = self.nodes.len();
        ids.insert(name.to_owned(), id);
        self.nodes.push(Node {
            name: name.to_owned(),
            kind,
            parent: None,
            children: Vec::new(),
            quotas: BTreeMap::new(),
            subtree: BTreeMap::new(),
            usage: BTreeMap::new(),
        });
        Some(id)
    }

    /// The ClusterQueue called `name`.
    pub fn cluster_queue(&self, name: &str) -> Option<usize> {
        self.cq_ids.get(name).copied()
    }

    /// The Cohort called `name`.
    pub fn cohort(&self, name: &str) -> Option<usize> {
        self.cohort_ids.get(name).copied()
    }

    /// Make `parent` the parent of `child`.
    pub fn set_parent(&mut self, child: usize, parent: usize) {
        self.nodes[child].parent = Some(parent);
        self.nodes[parent].children.push(child);
    }

    /// One node of each cycle of parent links, in node order (each node is walked once).
    pub fn cycles(&self) -> Vec<usize> {
        // 0: not seen; 1 + w: on walk w; usize::MAX: done.
        let mut mark = vec![0usize; self.nodes.len()];
        let mut out = Vec::new();
        for start in 0..self.nodes.len() {
            if mark[start] != 0 {
                continue;
            }
            let mut walk = Vec::new();
            let mut cur = Some(start);
            while let Some(c) = cur {
                if mark[c] != 0 {
                    if mark[c] == start + 1 {
                        out.push(c);
                    }
                    break;
                }
                mark[c] = start + 1;
                walk.push(c);
                cur = self.nodes[c].parent;
            }
            for w in walk {
                mark[w] = usize::MAX;
            }
        }
        out.sort_unstable();
        out
    }

    /// Recompute every subtree quota and usage from the quotas and the ClusterQueues' usage
    /// (Kueue's `updateCohortResourceNode` from each root). The tree must have no cycle.
    pub fn update(&mut self) {
        let roots: Vec<usize> = (0..self.nodes.len())
            .filter(|&n| self.nodes[n].parent.is_none())
            .collect();
        for r in roots {
            self.update_node(r);
        }
    }

    fn update_node(&mut self, n: usize) {
        let own: BTreeMap<Fr, i64> = self.nodes[n]
            .quotas
            .iter()
            .map(|(fr, q)| (*fr, q.nominal))
            .collect();
        self.nodes[n].subtree = own;
        if self.nodes[n].kind == NodeKind::Cohort {
            self.nodes[n].usage.clear();
        }
        for k in 0..self.nodes[n].children.len() {
            let c = self.nodes[n].children[k];
            self.update_node(c);
            let lent: Vec<(Fr, i64)> = self.nodes[c]
                .subtree
                .iter()
                .map(|(fr, q)| (*fr, sub(*q, self.local_quota(c, *fr))))
                .collect();
            let used: Vec<(Fr, i64)> = self.nodes[c]
                .usage
                .iter()
                .map(|(fr, u)| (*fr, sub(*u, self.local_quota(c, *fr)).max(0)))
                .collect();
            for (fr, d) in lent {
                let e = self.nodes[n].subtree.entry(fr).or_insert(0);
                *e = add(*e, d);
            }
            for (fr, d) in used {
                let e = self.nodes[n].usage.entry(fr).or_insert(0);
                *e = add(*e, d);
            }
        }
    }

    fn quota(&self, n: usize, fr: Fr) -> Quota {
        self.nodes[n].quotas.get(&fr).copied().unwrap_or_default()
    }

    fn subtree_of(&self, n: usize, fr: Fr) -> i64 {
        self.nodes[n].subtree.get(&fr).copied().unwrap_or(0)
    }

    /// Usage of `fr` at node `n`.
    pub fn usage_of(&self, n: usize, fr: Fr) -> i64 {
        self.nodes[n].usage.get(&fr).copied().unwrap_or(0)
    }

    /// Nominal quota of `fr` at node `n` (0 when not declared).
    pub fn nominal(&self, n: usize, fr: Fr) -> i64 {
        self.quota(n, fr).nominal
    }

    /// The capacity only this subtree sees because of its lending limit (`localQuota`).
    pub fn local_quota(&self, n: usize, fr: Fr) -> i64 {
        match self.quota(n, fr).lending_limit {
            Some(l) => sub(self.subtree_of(n, fr), l).max(0),
            None => 0,
        }
    }

    /// Guaranteed quota left unused at `n` (`LocalAvailable`).
    pub fn local_available(&self, n: usize, fr: Fr) -> i64 {
        sub(self.local_quota(n, fr), self.usage_of(n, fr)).max(0)
    }

    /// What is left for `n` now, within its borrowing limits (`available`; may be negative
    /// after over-admission).
    pub fn available(&self, n: usize, fr: Fr) -> i64 {
        let Some(p) = self.nodes[n].parent else {
            return sub(self.subtree_of(n, fr), self.usage_of(n, fr));
        };
        let mut parent_available = self.available(p, fr);
        if let Some(b) = self.quota(n, fr).borrowing_limit {
            let lq = self.local_quota(n, fr);
            let stored = sub(self.subtree_of(n, fr), lq);
            let used = sub(self.usage_of(n, fr), lq).max(0);
            parent_available = parent_available.min(add(sub(stored, used), b));
        }
        add(self.local_available(n, fr), parent_available)
    }

    /// The most `n` could ever have with no usage anywhere (`potentialAvailable`).
    pub fn potential_available(&self, n: usize, fr: Fr) -> i64 {
        let Some(p) = self.nodes[n].parent else {
            return self.subtree_of(n, fr);
        };
        let mut avail = add(self.local_quota(n, fr), self.potential_available(p, fr));
        if let Some(b) = self.quota(n, fr).borrowing_limit {
            avail = avail.min(add(self.subtree_of(n, fr), b));
        }
        avail
    }

    /// Add usage at `n`, the part past its local quota bubbling up (`addUsage`).
    pub fn add_usage(&mut self, n: usize, fr: Fr, val: i64) {
        let local = self.local_available(n, fr);
        let e = self.nodes[n].usage.entry(fr).or_insert(0);
        *e = add(*e, val);
        if let Some(p) = self.nodes[n].parent {
            if val > local {
                self.add_usage(p, fr, sub(val, local));
            }
        }
    }

    /// Remove usage at `n`, and what it was storing in its parent (`removeUsage`).
    pub fn remove_usage(&mut self, n: usize, fr: Fr, val: i64) {
        let stored = sub(self.usage_of(n, fr), self.local_quota(n, fr));
        let e = self.nodes[n].usage.entry(fr).or_insert(0);
        *e = sub(*e, val);
        let Some(p) = self.nodes[n].parent else {
            return;
        };
        if stored <= 0 {
            return;
        }
        self.remove_usage(p, fr, val.min(stored));
    }

    /// Whether `val` more of `fr` would take a ClusterQueue above its nominal quota, or a
    /// Cohort above its subtree quota (`BorrowingWith`).
    pub fn borrowing_with(&self, n: usize, fr: Fr, val: i64) -> bool {
        let cap = match self.nodes[n].kind {
            NodeKind::ClusterQueue => self.nominal(n, fr),
            NodeKind::Cohort => self.subtree_of(n, fr),
        };
        cap < add(self.usage_of(n, fr), val)
    }

    /// The height of a Cohort: 1 for one with children and no child Cohorts, plus one per
    /// level of child Cohorts (`getNodeHeight`).
    pub fn height(&self, n: usize) -> usize {
        let mut h = self.nodes[n].children.len().min(1);
        for &c in &self.nodes[n].children {
            if self.nodes[c].kind == NodeKind::Cohort {
                h = h.max(self.height(c) + 1);
            }
        }
        h
    }

    /// The root of `n`'s tree.
    pub fn root(&self, mut n: usize) -> usize {
        while let Some(p) = self.nodes[n].parent {
            n = p;
        }
        n
    }

    /// The height of the lowest subtree above ClusterQueue `cq` in which `val` more of `fr`
    /// fits without borrowing, and whether that subtree is below the root
    /// (`FindHeightOfLowestSubtreeThatFits`, `classical/hierarchical_preemption.go`).
    pub fn lowest_subtree_that_fits(&self, cq: usize, fr: Fr, val: i64) -> (usize, bool) {
        let has_parent = self.nodes[cq].parent.is_some();
        if !self.borrowing_with(cq, fr, val) || !has_parent {
            return (0, has_parent);
        }
        let mut remaining = sub(val, self.local_available(cq, fr));
        let mut cur = self.nodes[cq].parent;
        while let Some(t) = cur {
            if !self.borrowing_with(t, fr, remaining) {
                return (self.height(t), self.nodes[t].parent.is_some());
            }
            remaining = sub(remaining, self.local_available(t, fr));
            cur = self.nodes[t].parent;
        }
        (self.height(self.root(cq)), false)
    }
}

fn intern(ids: &mut BTreeMap<String, u32>, names: &mut Vec<String>, name: &str) -> u32 {
    if let Some(&i) = ids.get(name) {
        return i;
    }
    let i = names.len() as u32;
    ids.insert(name.to_owned(), i);
    names.push(name.to_owned());
    i
}
