//! A summary of a cluster for reports: counts per tier, domains per level, bisection bandwidth.

use serde::Serialize;

use crate::model::Cluster;

/// Figures a person wants first about a cluster.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Cluster name.
    pub name: String,
    /// Hosts.
    pub nodes: usize,
    /// GPUs.
    pub gpus: u64,
    /// Switches.
    pub switches: usize,
    /// Cables.
    pub links: usize,
    /// Nodes not Ready, cordoned, or with a NoSchedule/NoExecute taint.
    pub unavailable_nodes: usize,
    /// Levels, top first.
    pub levels: Vec<LevelSummary>,
    /// Tiers, leaf first.
    pub tiers: Vec<TierSummary>,
    /// Sum of all hosts' NIC bandwidth, Gb/s.
    pub injection_gbps: f64,
    /// Bandwidth across the worst cut that halves the hosts along the tree, Gb/s.
    pub bisection_gbps: f64,
    /// NVLink domains with more than one node.
    pub multi_node_nvlink_domains: usize,
    /// NIC rails connect to per-rail leaves.
    pub rail_optimized: bool,
}

/// One level.
#[derive(Clone, Debug, Serialize)]
pub struct LevelSummary {
    /// Node label.
    pub name: String,
    /// Number of domains.
    pub domains: usize,
    /// Its domains are NVLink domains, with no switch tier ([`crate::Level::nvlink`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nvlink: bool,
}

/// One switch tier.
#[derive(Clone, Debug, Serialize)]
pub struct TierSummary {
    /// 0 = leaf.
    pub tier: u8,
    /// Level label this tier serves, or null for an implicit top tier.
    pub level: Option<String>,
    /// Groups (domains) at this tier.
    pub groups: u32,
    /// Switches at this tier.
    pub switches: usize,
    /// Cables from the tier below into this tier.
    pub links: usize,
    /// Most GPUs under one group.
    pub gpus_max: u64,
    /// Worst-case latency across this tier, µs.
    pub latency_us: f64,
    /// Sum of up-link capacity from the tier below into this tier, Gb/s.
    pub uplink_gbps: f64,
    /// Oversubscription of the links into this tier.
    pub oversubscription: f64,
}

impl Cluster {
    /// Summarise the cluster.
    pub fn summary(&self) -> Summary {
        let n_tiers = self.tiers.len();
        let mut switches = vec![0usize; n_tiers];
        for s in &self.switches {
            switches[usize::from(s.tier)] += 1;
        }
        let mut links = vec![0usize; n_tiers];
        let mut uplink = vec![0.0f64; n_tiers];
        for l in &self.links {
            links[usize::from(l.tier)] += 1;
            uplink[usize::from(l.tier)] += l.gbps;
        }
        let injection: f64 = self.nodes.iter().map(|n| n.nics.total_gbps()).sum();
        // A cut that halves the hosts along the tree must carry half of the traffic through
        // every tier; the tier with the least capacity decides.
        let bisection = uplink.iter().copied().fold(injection, f64::min) / 2.0;
        let unavailable = (0..self.nodes.len())
            .filter(|&i| !self.is_schedulable(crate::NodeId::from_index(i), |_| false))
            .count();
        Summary {
            name: self.name.clone(),
            nodes: self.nodes.len(),
            gpus: self.gpu_count(),
            switches: self.switches.len(),
            links: self.links.len(),
            unavailable_nodes: unavailable,
            levels: self
                .levels
                .iter()
                .map(|l| LevelSummary {
                    name: l.label.clone(),
                    domains: l.domains.len(),
                    nvlink: l.nvlink,
                })
                .collect(),
            tiers: self
                .tiers
                .iter()
                .map(|t| TierSummary {
                    tier: t.tier,
                    level: t.level.map(|l| self.levels[l].label.clone()),
                    groups: t.groups,
                    switches: switches[usize::from(t.tier)],
                    links: links[usize::from(t.tier)],
                    gpus_max: t.gpus_max,
                    latency_us: t.latency_ns as f64 / 1000.0,
                    uplink_gbps: uplink[usize::from(t.tier)],
                    oversubscription: t.oversubscription,
                })
                .collect(),
            injection_gbps: injection,
            bisection_gbps: bisection,
            multi_node_nvlink_domains: self
                .nvlink_domains
                .iter()
                .filter(|d| d.nodes.len() > 1)
                .count(),
            rail_optimized: self.rail_optimized,
        }
    }

    /// Number of distinct shortest up/down paths between the leaf of `a`'s rail `rail` and the
    /// leaf of `b`'s same rail: the product of fan-outs up to the lowest common tier. For a
    /// k-ary fat-tree this is (k/2)² between pods.
    pub fn paths_between(&self, a: crate::NodeId, b: crate::NodeId, rail: u32) -> usize {
        let Some(top) = self.common_tier(a, b) else {
            return 1;
        };
        let ways_up = |n: crate::NodeId| {
            let leaf = self.link(self.node(n).nic_links[rail as usize]).upper;
            let mut ways = vec![0usize; self.switches.len()];
            ways[leaf.index()] = 1;
            let mut frontier = vec![leaf];
            for _ in 0..top {
                let mut next = Vec::new();
                for &s in &frontier {
                    for &l in self.up_links(s) {
                        let up = self.link(l).upper;
                        if ways[up.index()] == 0 {
                            next.push(up);
                        }
                        ways[up.index()] += ways[s.index()];
                    }
                }
                frontier = next;
            }
            (frontier, ways)
        };
        let (tops, wa) = ways_up(a);
        let (_, wb) = ways_up(b);
        tops.iter().map(|s| wa[s.index()] * wb[s.index()]).sum()
    }
}
