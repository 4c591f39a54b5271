//! The cluster model: nodes, switches, links, levels, domains and tiers, as index arenas.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ids::{DomainId, LinkId, NodeId, NvlinkDomainId, SwitchId};

/// A whole cluster: hosts, the switch fabric and the hierarchy of locality domains.
///
/// Levels are the Kueue/KAI view (node labels, top first); tiers are the switch view (tier 0 =
/// leaf). Every level but the host level and an NVLink level ([`Level::nvlink`]) is one switch
/// tier; when the top switch level has more than one domain (or there is none) an implicit top
/// tier joins the whole cluster.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// A name for reports.
    pub name: String,
    /// Hosts, in input order; domains list their nodes in this order.
    pub nodes: Vec<Node>,
    /// Switches, leaf tier first.
    pub switches: Vec<Switch>,
    /// Cables. Each is full duplex: both directions have `gbps`.
    pub links: Vec<Link>,
    /// Locality levels, top first (Kueue `spec.levels` order).
    pub levels: Vec<Level>,
    /// Index of the host level in `levels` (the `kubernetes.io/hostname` level), if any.
    pub host_level: Option<usize>,
    /// All domains of all levels.
    pub domains: Vec<Domain>,
    /// Switch tiers, leaf (0) first.
    pub tiers: Vec<Tier>,
    /// Sets of GPUs sharing NVLink; every node belongs to exactly one.
    pub nvlink_domains: Vec<NvlinkDomain>,
    /// Whether NIC `r` of every host in a leaf domain goes to leaf switch `r` (rail-optimized).
    pub rail_optimized: bool,
    /// `tier_groups[node * tiers.len() + t]`: which tier-`t` group (domain) the node is in.
    pub(crate) tier_groups: Vec<u32>,
    /// Up-links of each switch (towards tier + 1).
    pub(crate) switch_up: Vec<Vec<LinkId>>,
    /// Down-links of each switch (towards tier − 1 or hosts).
    pub(crate) switch_down: Vec<Vec<LinkId>>,
    /// Switches of each group, per tier: `tier_switches[t][group]`.
    pub(crate) tier_switches: Vec<Vec<Vec<SwitchId>>>,
    /// Per domain: its position among its level's domains by label values (Kueue tie-break).
    pub(crate) domain_order: Vec<u32>,
    /// Per node: its position among all nodes by label values, top first.
    pub(crate) node_order: Vec<u32>,
    /// Per domain: its index in its level's [`Level::domains`].
    pub(crate) level_pos: Vec<u32>,
}

/// A host: GPUs, NIC rails, NVLink domain, Kubernetes labels and state.
#[derive(Clone, Debug, Serialize)]
pub struct Node {
    /// Kubernetes node name; unique.
    pub name: String,
    /// Whole GPUs on the node.
    pub gpus: u32,
    /// Memory of one GPU, GiB.
    pub gpu_memory_gib: u32,
    /// RDMA NIC ports.
    pub nics: NicSpec,
    /// NVLink bandwidth per GPU, Gb/s, one direction.
    pub nvlink_gbps: f64,
    /// The NVLink domain the node's GPUs belong to.
    pub nvlink_domain: NvlinkDomainId,
    /// Kubernetes node labels.
    pub labels: BTreeMap<String, String>,
    /// Kubernetes taints.
    pub taints: Vec<Taint>,
    /// The node's Ready condition is True.
    pub ready: bool,
    /// The node is cordoned (`spec.unschedulable`).
    pub unschedulable: bool,
    /// The node's InternalIP, when known.
    pub internal_ip: Option<String>,
    /// Allocatable resources besides GPUs (Kubernetes `status.allocatable`: `cpu` in
    /// millicores, `memory` in bytes, `pods`, extended resources); empty when unknown (a spec or
    /// preset), and then placement is limited by GPUs alone.
    pub allocatable: BTreeMap<String, u64>,
    /// The node's domain at each level (same order as [`Cluster::levels`]).
    pub domains: Vec<DomainId>,
    /// The cable from each rail's NIC to its leaf switch, by rail.
    pub nic_links: Vec<LinkId>,
}

/// A node's RDMA ports: `rails` rails, each with `ports_per_rail` ports of `port_gbps`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NicSpec {
    /// Rails (usually one per GPU).
    pub rails: u32,
    /// Ports per rail (e.g. 2 × 200G per H100 on OCI BM.GPU.H100.8).
    pub ports_per_rail: u32,
    /// Speed of one port, Gb/s.
    pub port_gbps: f64,
}

impl NicSpec {
    /// Bandwidth of one rail, Gb/s.
    pub fn rail_gbps(&self) -> f64 {
        f64::from(self.ports_per_rail) * self.port_gbps
    }

    /// Bandwidth of all rails of the node, Gb/s.
    pub fn total_gbps(&self) -> f64 {
        f64::from(self.rails) * self.rail_gbps()
    }
}

/// A Kubernetes taint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// What the taint does to pods that do not tolerate it.
    pub effect: TaintEffect,
}

/// The effect of a taint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TaintEffect {
    /// New pods that do not tolerate it are not scheduled.
    NoSchedule,
    /// The scheduler tries to avoid the node.
    PreferNoSchedule,
    /// Running pods that do not tolerate it are evicted.
    NoExecute,
}

/// A set of nodes whose GPUs share one NVLink fabric (one node, or e.g. a 72-GPU rack).
#[derive(Clone, Debug, Serialize)]
pub struct NvlinkDomain {
    /// Name (label value, or generated).
    pub name: String,
    /// Member nodes.
    pub nodes: Vec<NodeId>,
}

/// A switch.
#[derive(Clone, Debug, Serialize)]
pub struct Switch {
    /// Unique name, e.g. `t0-g12-s3`.
    pub name: String,
    /// Tier, 0 = leaf.
    pub tier: u8,
    /// The tier group (domain of this tier) the switch serves.
    pub group: u32,
}

/// One end of a cable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Endpoint {
    /// A host's NIC on a rail.
    Nic {
        /// The host.
        node: NodeId,
        /// The rail (0-based).
        rail: u32,
    },
    /// A switch port.
    Switch(SwitchId),
}

/// A full-duplex cable between a lower end (NIC or switch) and an upper switch.
#[derive(Clone, Debug, Serialize)]
pub struct Link {
    /// The end nearer the hosts.
    pub lower: Endpoint,
    /// The switch one tier up.
    pub upper: SwitchId,
    /// Capacity per direction, Gb/s.
    pub gbps: f64,
    /// One-way latency of this hop (cable plus the switch above), ns. Along any shortest path
    /// the hops add up to the latency of the highest tier crossed.
    pub latency_ns: f64,
    /// The tier of `upper`.
    pub tier: u8,
    /// Physical ports (cables) the link is made of, at least 1; each carries `gbps / ports`.
    /// A NIC rail has its node's `ports_per_rail`; a switch-to-switch bundle is made of ports as
    /// fast as the fastest NIC port of the cluster (`round(gbps / port)`, at least 1).
    pub ports: u32,
}

impl Link {
    /// Capacity of one of the link's ports, Gb/s per direction.
    pub fn port_gbps(&self) -> f64 {
        self.gbps / f64::from(self.ports.max(1))
    }
}

/// A locality level: one node label, e.g. `oci.oraclecloud.com/rdma.local_block_id`.
#[derive(Clone, Debug, Serialize)]
pub struct Level {
    /// The node label.
    pub label: String,
    /// Another name a job may give the level by (a KAI Topology level's `alias`, KAI v0.17).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Domains at this level, in order of first appearance.
    pub domains: Vec<DomainId>,
    /// Its domains are NVLink domains: every node's value of the label is the name of the node's
    /// multi-node NVLink domain (e.g. `nvidia.com/gpu.clique` on GB200 NVL72). A locality level
    /// only, with no switch tier: routing, hops and latency do not see it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nvlink: bool,
}

/// A domain: the nodes sharing one label value under one parent domain (Kueue semantics: values
/// are unique only under their parent).
#[derive(Clone, Debug, Serialize)]
pub struct Domain {
    /// Index of the level in [`Cluster::levels`].
    pub level: usize,
    /// The label value.
    pub value: String,
    /// The domain one level up.
    pub parent: Option<DomainId>,
    /// Domains one level down, in order of first appearance.
    pub children: Vec<DomainId>,
    /// Member nodes, in node order.
    pub nodes: Vec<NodeId>,
    /// GPUs on the member nodes.
    pub gpus: u64,
}

/// A switch tier.
#[derive(Clone, Debug, Serialize)]
pub struct Tier {
    /// 0 = leaf.
    pub tier: u8,
    /// The level whose domains this tier's switches serve; `None` for an implicit top tier.
    pub level: Option<usize>,
    /// Worst-case GPU-to-GPU latency between two hosts whose lowest common tier is this, ns.
    pub latency_ns: u64,
    /// Ratio of down-link to up-link capacity of the tier below (1.0 = non-blocking).
    pub oversubscription: f64,
    /// Number of groups (domains) at this tier.
    pub groups: u32,
    /// Most GPUs in one group of this tier.
    pub gpus_max: u64,
    /// The tier's switches reduce data in the network (SHARP; from the spec's `sharp`, false
    /// for imported clusters).
    pub sharp: bool,
}

impl Cluster {
    /// Total GPUs.
    pub fn gpu_count(&self) -> u64 {
        self.nodes.iter().map(|n| u64::from(n.gpus)).sum()
    }

    /// GPUs of NVLink domain `domain` (its nodes' GPUs).
    pub fn nvlink_domain_gpus(&self, domain: &NvlinkDomain) -> u32 {
        domain.nodes.iter().map(|&n| self.node(n).gpus).sum()
    }

    /// The node called `name`, if any (linear scan; build a map for many look-ups).
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(NodeId::from_index)
    }

    /// The node.
    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The domain.
    #[inline]
    pub fn domain(&self, id: DomainId) -> &Domain {
        &self.domains[id.index()]
    }

    /// Per node, whether it lies in `scope` (every node when `None`).
    pub fn node_mask(&self, scope: Option<DomainId>) -> Vec<bool> {
        match scope {
            None => vec![true; self.nodes.len()],
            Some(d) => {
                let mut v = vec![false; self.nodes.len()];
                for &n in &self.domain(d).nodes {
                    v[n.index()] = true;
                }
                v
            }
        }
    }

    /// The switch.
    pub fn switch(&self, id: SwitchId) -> &Switch {
        &self.switches[id.index()]
    }

    /// The link.
    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.index()]
    }

    /// The tier-`tier` group the node belongs to.
    pub fn tier_group(&self, node: NodeId, tier: u8) -> u32 {
        self.tier_groups[node.index() * self.tiers.len() + usize::from(tier)]
    }

    /// The lowest switch tier that joins two hosts; `None` when `a == b` (no switch needed).
    pub fn common_tier(&self, a: NodeId, b: NodeId) -> Option<u8> {
        if a == b {
            return None;
        }
        let n_tiers = self.tiers.len();
        let ga = &self.tier_groups[a.index() * n_tiers..(a.index() + 1) * n_tiers];
        let gb = &self.tier_groups[b.index() * n_tiers..(b.index() + 1) * n_tiers];
        let t = ga
            .iter()
            .zip(gb)
            .position(|(x, y)| x == y)
            .expect("the top tier joins every pair of hosts");
        Some(u8::try_from(t).expect("tier fits in u8"))
    }

    /// Worst-case latency between GPUs on two hosts, ns (0 on the same host).
    pub fn latency_ns(&self, a: NodeId, b: NodeId) -> u64 {
        self.common_tier(a, b)
            .map_or(0, |t| self.tiers[usize::from(t)].latency_ns)
    }

    /// Up-links of a switch.
    pub fn up_links(&self, s: SwitchId) -> &[LinkId] {
        &self.switch_up[s.index()]
    }

    /// Down-links of a switch.
    pub fn down_links(&self, s: SwitchId) -> &[LinkId] {
        &self.switch_down[s.index()]
    }

    /// The switches serving tier group `group` at `tier`.
    pub fn group_switches(&self, tier: u8, group: u32) -> &[SwitchId] {
        &self.tier_switches[usize::from(tier)][group as usize]
    }

    /// The domain's position among the domains of its level when they are sorted by their label
    /// values, top level first: Kueue TAS breaks ties between equally good domains this way.
    #[inline]
    pub fn domain_order(&self, id: DomainId) -> u32 {
        self.domain_order[id.index()]
    }

    /// The domain's index in its level's [`Level::domains`].
    #[inline]
    pub fn position_in_level(&self, id: DomainId) -> u32 {
        self.level_pos[id.index()]
    }

    /// The node's position among all nodes sorted by their level label values, top first (the
    /// host-level value last; the node name when the cluster has no host level).
    #[inline]
    pub fn node_order(&self, id: NodeId) -> u32 {
        self.node_order[id.index()]
    }

    /// The level index with the given label.
    pub fn level_by_label(&self, label: &str) -> Option<usize> {
        self.levels.iter().position(|l| l.label == label)
    }

    /// The switch tier that serves a level, if the level is a switch level (not the host level
    /// nor an NVLink level).
    pub fn tier_of_level(&self, level: usize) -> Option<u8> {
        self.tiers
            .iter()
            .find(|t| t.level == Some(level))
            .map(|t| t.tier)
    }

    /// Whether new pods may be scheduled on the node (Ready, not cordoned, no NoSchedule or
    /// NoExecute taint that `tolerates` does not accept).
    #[inline]
    pub fn is_schedulable(&self, id: NodeId, tolerates: impl Fn(&Taint) -> bool) -> bool {
        let n = self.node(id);
        n.ready
            && !n.unschedulable
            && n.taints
                .iter()
                .all(|t| matches!(t.effect, TaintEffect::PreferNoSchedule) || tolerates(t))
    }
}
