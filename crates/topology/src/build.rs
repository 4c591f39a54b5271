//! Builders: spec → node records → [`Cluster`]. [`assemble`] is the one place where levels,
//! domains, tiers, switches and links are made, whatever the input was.

use std::collections::{BTreeMap, HashMap};

use crate::error::{problem, Problem, TopologyError};
use crate::ids::{DomainId, LinkId, NodeId, NvlinkDomainId, SwitchId};
use crate::model::{
    Cluster, Domain, Endpoint, Level, Link, NicSpec, Node, NvlinkDomain, Switch, Taint, Tier,
};
use crate::spec::{ClosSpec, ClusterSpec, FatTreeSpec, NodeSpec, TierSpec};
use crate::{
    HOSTNAME_LABEL, MAX_GPUS_PER_NODE, MAX_GPU_MEMORY_GIB, MAX_LINKS, MAX_NODES,
    MAX_PORTS_PER_RAIL, MAX_RAILS, MAX_SWITCHES,
};

/// Why `nvlink_gbps: 0` is refused on a node with several GPUs: railyard models traffic
/// between the GPUs of a node over NVLink only, and 0 would read as "no limit".
const NO_NVLINK: &str = "nvlink_gbps 0 on a node with several GPUs: railyard carries traffic between a node's GPUs over NVLink and does not model hosts without it; give the GPU-to-GPU bandwidth inside the host (e.g. 256 Gb/s for PCIe 4.0 x16)";

/// Most switch tiers a fabric may have.
const MAX_TIERS: usize = 8;

/// One host as the builders see it: hardware facts plus Kubernetes labels and state.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRecord {
    /// Unique node name.
    pub name: String,
    /// Whole GPUs.
    pub gpus: u32,
    /// Memory per GPU, GiB.
    pub gpu_memory_gib: u32,
    /// RDMA ports.
    pub nics: NicSpec,
    /// NVLink bandwidth per GPU, Gb/s.
    pub nvlink_gbps: f64,
    /// Name of a multi-node NVLink domain, if the node is in one.
    pub nvlink_domain: Option<String>,
    /// Kubernetes labels; must hold every level label.
    pub labels: BTreeMap<String, String>,
    /// Taints.
    pub taints: Vec<Taint>,
    /// Ready condition.
    pub ready: bool,
    /// Cordoned.
    pub unschedulable: bool,
    /// InternalIP.
    pub internal_ip: Option<String>,
    /// Allocatable resources besides GPUs (Kubernetes `status.allocatable`: `cpu` in
    /// millicores, `memory` in bytes, `pods`, extended resources); empty when unknown.
    pub allocatable: BTreeMap<String, u64>,
}

/// Parameters of one switch tier.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TierParams {
    /// Worst-case latency across this tier, ns.
    pub latency_ns: u64,
    /// Down-link over up-link capacity of the tier below (1.0 = non-blocking).
    pub oversubscription: f64,
    /// Switches per group; `None` for the default (see [`crate::TierSpec`]).
    pub switches_per_group: Option<u32>,
}

/// How to turn labelled nodes into a fabric.
#[derive(Clone, Debug, PartialEq)]
pub struct FabricParams {
    /// Level labels, top first.
    pub levels: Vec<String>,
    /// Label of the host level; it may only be the last level.
    pub host_label: String,
    /// Tier parameters, leaf first; at least one per switch tier the levels make.
    pub tiers: Vec<TierParams>,
    /// NIC `r` of each host goes to leaf switch `r`.
    pub rail_optimized: bool,
}

/// The smallest tier latency, µs: latencies are kept in whole nanoseconds, so anything smaller
/// would be 0 (a tier crossed for free).
pub const MIN_LATENCY_US: f64 = 0.001;

/// The smallest oversubscription: 1,000 times more up-link than down-link capacity, the mirror
/// of the largest (1,000). Below it the ratio is no network anyone builds, and the capacities it
/// gives overflow.
pub const MIN_OVERSUBSCRIPTION: f64 = 0.001;

/// A number in a message: exponent form when plain notation would be hundreds of digits long.
fn show(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-6..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Build a cluster from a railyard spec.
pub fn build_from_spec(spec: &ClusterSpec) -> Result<Cluster, TopologyError> {
    let (clos, place) = match (&spec.fabric.fat_tree, &spec.fabric.clos) {
        (Some(f), None) => {
            let problems = check_fat_tree(f);
            if !problems.is_empty() {
                return Err(TopologyError::new(problems));
            }
            (fat_tree_as_clos(f), "fabric.fat_tree")
        }
        (None, Some(c)) => (c.clone(), "fabric.clos"),
        _ => {
            return Err(TopologyError::new(vec![problem(
                "fabric",
                "expected exactly one of `fat_tree` or `clos`",
            )]))
        }
    };
    let mut problems = check_node_spec(&spec.node);
    if spec.name.trim().is_empty() {
        problems.push(problem("name", "must not be empty"));
    }
    problems.extend(check_clos(&clos, &spec.node, place));
    if !problems.is_empty() {
        return Err(TopologyError::new(problems));
    }
    let (records, params) = clos_records(&clos, &spec.node);
    let mut cluster = assemble(&spec.name, records, &params)?;
    // The last Clos tier holds every node, so the spec's tiers are the cluster's, leaf first.
    for (tier, spec_tier) in cluster.tiers.iter_mut().zip(&clos.tiers) {
        tier.sharp = spec_tier.sharp;
    }
    Ok(cluster)
}

fn check_node_spec(n: &NodeSpec) -> Vec<Problem> {
    let mut p = Vec::new();
    if n.gpus == 0 || n.gpus > MAX_GPUS_PER_NODE {
        p.push(problem(
            "node.gpus",
            format!("expected 1..={MAX_GPUS_PER_NODE}, got {}", n.gpus),
        ));
    }
    if n.gpu_memory_gib == 0 || n.gpu_memory_gib > MAX_GPU_MEMORY_GIB {
        p.push(problem(
            "node.gpu_memory_gib",
            format!(
                "expected 1..={MAX_GPU_MEMORY_GIB} GiB, got {}",
                n.gpu_memory_gib
            ),
        ));
    }
    if n.rails == 0 || n.rails > MAX_RAILS {
        p.push(problem(
            "node.rails",
            format!("expected 1..={MAX_RAILS}, got {}", n.rails),
        ));
    }
    if n.ports_per_rail == 0 || n.ports_per_rail > MAX_PORTS_PER_RAIL {
        p.push(problem(
            "node.ports_per_rail",
            format!(
                "expected 1..={MAX_PORTS_PER_RAIL}, got {}",
                n.ports_per_rail
            ),
        ));
    }
    if !(n.port_gbps.is_finite() && n.port_gbps > 0.0 && n.port_gbps <= 1.0e5) {
        p.push(problem(
            "node.port_gbps",
            format!("expected a speed in (0, 100000] Gb/s, got {}", n.port_gbps),
        ));
    }
    if !(n.nvlink_gbps.is_finite() && n.nvlink_gbps >= 0.0 && n.nvlink_gbps <= 1.0e6) {
        p.push(problem(
            "node.nvlink_gbps",
            format!(
                "expected a speed in [0, 1000000] Gb/s, got {}",
                n.nvlink_gbps
            ),
        ));
    } else if n.nvlink_gbps == 0.0 && n.gpus > 1 {
        p.push(problem("node.nvlink_gbps", NO_NVLINK));
    }
    if n.nvlink_domain_nodes == 0 {
        p.push(problem("node.nvlink_domain_nodes", "expected at least 1"));
    }
    p
}

fn check_fat_tree(f: &FatTreeSpec) -> Vec<Problem> {
    let mut p = Vec::new();
    if f.k < 2 || f.k % 2 != 0 || f.k > 158 {
        p.push(problem(
            "fabric.fat_tree.k",
            format!(
                "expected an even radix in 2..=158 (k³/4 hosts ≤ {MAX_NODES}), got {}",
                f.k
            ),
        ));
    }
    p
}

/// The k-ary fat-tree as a Clos: edges of k/2 hosts (1 switch), pods of k²/4 hosts (k/2 switches),
/// a core of k³/4 hosts ((k/2)² switches). The striped wiring rule of [`assemble`] then connects
/// every edge to every aggregation switch of its pod and aggregation switch `i` of every pod to
/// core switches `i·k/2 .. (i+1)·k/2`, exactly as in Al-Fares et al.
fn fat_tree_as_clos(f: &FatTreeSpec) -> ClosSpec {
    let half = f.k / 2;
    let tier = |i: usize, nodes: u32, switches: u32, prefix: &str| TierSpec {
        label: f.tier_labels[i].clone(),
        value_prefix: prefix.to_owned(),
        nodes_per_domain: nodes,
        latency_us: f.latency_us[i],
        switches_per_domain: Some(switches),
        oversubscription: None,
        sharp: false,
    };
    ClosSpec {
        nodes: f.k * f.k * f.k / 4,
        rail_optimized: false,
        host_label: HOSTNAME_LABEL.to_owned(),
        tiers: vec![
            tier(0, half, 1, "edge-"),
            tier(1, half * half, half, "pod-"),
            tier(2, f.k * f.k * f.k / 4, half * half, "core-"),
        ],
    }
}

fn check_clos(c: &ClosSpec, node: &NodeSpec, place: &str) -> Vec<Problem> {
    let mut p = Vec::new();
    if c.nodes == 0 || c.nodes as usize > MAX_NODES {
        p.push(problem(
            format!("{place}.nodes"),
            format!("expected 1..={MAX_NODES} nodes, got {}", c.nodes),
        ));
        return p;
    }
    if c.tiers.is_empty() || c.tiers.len() > MAX_TIERS {
        p.push(problem(
            format!("{place}.tiers"),
            format!("expected 1..={MAX_TIERS} tiers, got {}", c.tiers.len()),
        ));
        return p;
    }
    if node.nvlink_domain_nodes > 0 && c.nodes % node.nvlink_domain_nodes != 0 {
        p.push(problem(
            "node.nvlink_domain_nodes",
            format!(
                "{} does not divide the {} nodes",
                node.nvlink_domain_nodes, c.nodes
            ),
        ));
    }
    if c.host_label.trim().is_empty() {
        p.push(problem(format!("{place}.host_label"), "must not be empty"));
    }
    if let Some(label) = &node.nvlink_domain_label {
        p.extend(check_nvlink_level(label, c, node, place));
    }
    let mut prev_nodes = 1;
    let mut prev_latency = 0.0;
    for (i, t) in c.tiers.iter().enumerate() {
        let at = |field: &str| format!("{place}.tiers[{i}].{field}");
        if t.label.trim().is_empty() {
            p.push(problem(at("label"), "must not be empty"));
        }
        if t.label == c.host_label {
            p.push(problem(at("label"), "must differ from host_label"));
        }
        if c.tiers[..i].iter().any(|o| o.label == t.label) {
            p.push(problem(
                at("label"),
                format!("`{}` is used by an earlier tier", t.label),
            ));
        }
        if t.nodes_per_domain == 0
            || c.nodes % t.nodes_per_domain != 0
            || t.nodes_per_domain % prev_nodes != 0
        {
            p.push(problem(
                at("nodes_per_domain"),
                format!(
                    "expected a multiple of the tier below ({prev_nodes}) that divides the {} nodes, got {}",
                    c.nodes, t.nodes_per_domain
                ),
            ));
        } else {
            prev_nodes = t.nodes_per_domain;
        }
        if !(t.latency_us.is_finite() && (MIN_LATENCY_US..=1.0e6).contains(&t.latency_us)) {
            p.push(problem(
                at("latency_us"),
                format!(
                    "expected a latency of {MIN_LATENCY_US}..=1000000 µs (1 ns is the resolution), got {}",
                    show(t.latency_us)
                ),
            ));
        } else if t.latency_us < prev_latency {
            p.push(problem(
                at("latency_us"),
                format!(
                    "expected at least the tier below ({prev_latency} µs), got {}",
                    t.latency_us
                ),
            ));
        } else {
            prev_latency = t.latency_us;
        }
        if let Some(o) = t.oversubscription {
            if !(o.is_finite() && (MIN_OVERSUBSCRIPTION..=1000.0).contains(&o)) {
                p.push(problem(
                    at("oversubscription"),
                    format!(
                        "expected a ratio in {MIN_OVERSUBSCRIPTION}..=1000 (below 1: more up-link than down-link capacity), got {}",
                        show(o)
                    ),
                ));
            }
        }
    }
    if let Some(last) = c.tiers.last() {
        if last.nodes_per_domain != c.nodes && p.is_empty() {
            p.push(problem(
                format!("{place}.tiers[{}].nodes_per_domain", c.tiers.len() - 1),
                format!(
                    "the top tier must hold all {} nodes, got {}",
                    c.nodes, last.nodes_per_domain
                ),
            ));
        }
    }
    let explicit: Vec<Option<u32>> = c.tiers.iter().map(|t| t.switches_per_domain).collect();
    match switch_counts(c.rail_optimized, node.rails, &explicit) {
        Err((i, msg)) => p.push(problem(
            format!("{place}.tiers[{i}].switches_per_domain"),
            msg,
        )),
        // Sizes checked before the node records are made (the same rule `assemble` applies).
        Ok(counts) if p.is_empty() => {
            let groups: Vec<u64> = c
                .tiers
                .iter()
                .map(|t| u64::from(c.nodes / t.nodes_per_domain))
                .collect();
            let nic_links = u64::from(c.nodes) * u64::from(node.rails);
            p.extend(fabric_size_problems(&groups, &counts, nic_links));
        }
        Ok(_) => {}
    }
    p
}

/// The spec's `node.nvlink_domain_label`: a label of its own, on NVLink domains of several
/// nodes that nest in the leaf tier's blocks (the level sits between the host and the leaf).
fn check_nvlink_level(label: &str, c: &ClosSpec, node: &NodeSpec, place: &str) -> Vec<Problem> {
    let at = "node.nvlink_domain_label";
    let mut p = Vec::new();
    if label.trim().is_empty() {
        p.push(problem(at, "must not be empty"));
    } else if label == c.host_label || c.tiers.iter().any(|t| t.label == label) {
        p.push(problem(
            at,
            format!(
                "`{label}` is also the host label or a tier's label; expected a label of its own"
            ),
        ));
    }
    let n = node.nvlink_domain_nodes;
    if n == 1 {
        p.push(problem(
            at,
            "an NVLink level needs node.nvlink_domain_nodes > 1 (NVLink inside one node is the host level), got 1",
        ));
    }
    if let Some(leaf) = c.tiers.first() {
        if n > 1 && leaf.nodes_per_domain % n != 0 {
            // A fat-tree's leaf block is its edge of k/2 hosts; a Clos names it.
            let leaf_field = if place == "fabric.clos" {
                format!("{place}.tiers[0].nodes_per_domain")
            } else {
                "the edge's k/2 hosts".to_owned()
            };
            p.push(problem(
                at,
                format!(
                    "the NVLink level lies between the host and the leaf tier: node.nvlink_domain_nodes ({n}) must divide {leaf_field} ({})",
                    leaf.nodes_per_domain
                ),
            ));
        }
    }
    p
}

/// Switches per group at each tier, leaf first, applying the defaults and checking the striped
/// wiring rule: adjacent tiers' counts must divide one another.
fn switch_counts(
    rail_optimized: bool,
    max_rails: u32,
    explicit: &[Option<u32>],
) -> Result<Vec<u32>, (usize, String)> {
    let mut out: Vec<u32> = Vec::with_capacity(explicit.len());
    for (t, e) in explicit.iter().enumerate() {
        let s = match (e, out.last()) {
            (Some(s), _) => *s,
            (None, None) if rail_optimized => max_rails,
            (None, None) => 1,
            (None, Some(below)) => *below,
        };
        if s == 0 || s > 65_536 {
            return Err((t, format!("expected 1..=65536 switches, got {s}")));
        }
        if let Some(&below) = out.last() {
            if s % below != 0 && below % s != 0 {
                return Err((
                    t,
                    format!("{s} switches: expected a multiple or a divisor of the tier below ({below})"),
                ));
            }
        }
        out.push(s);
    }
    Ok(out)
}

fn clos_records(c: &ClosSpec, node: &NodeSpec) -> (Vec<NodeRecord>, FabricParams) {
    let width = (c.nodes.max(2) - 1).to_string().len().max(3);
    let mut records = Vec::with_capacity(c.nodes as usize);
    for i in 0..c.nodes {
        let name = format!("{}{:0width$}", node.name_prefix, i);
        let mut labels = BTreeMap::new();
        for t in &c.tiers {
            labels.insert(
                t.label.clone(),
                format!("{}{}", t.value_prefix, i / t.nodes_per_domain),
            );
        }
        labels.insert(c.host_label.clone(), name.clone());
        if let Some(shape) = &node.shape {
            labels.insert("node.kubernetes.io/instance-type".to_owned(), shape.clone());
        }
        let nvlink_domain =
            (node.nvlink_domain_nodes > 1).then(|| format!("nvl-{}", i / node.nvlink_domain_nodes));
        if let Some(d) = &nvlink_domain {
            labels.insert("accelerator.topograph.run/domain".to_owned(), d.clone());
            if let Some(label) = &node.nvlink_domain_label {
                labels.insert(label.clone(), d.clone());
            }
        }
        records.push(NodeRecord {
            name,
            gpus: node.gpus,
            gpu_memory_gib: node.gpu_memory_gib,
            nics: NicSpec {
                rails: node.rails,
                ports_per_rail: node.ports_per_rail,
                port_gbps: node.port_gbps,
            },
            nvlink_gbps: node.nvlink_gbps,
            nvlink_domain,
            labels,
            allocatable: BTreeMap::new(),
            taints: Vec::new(),
            ready: true,
            unschedulable: false,
            internal_ip: None,
        });
    }
    let mut levels: Vec<String> = c.tiers.iter().rev().map(|t| t.label.clone()).collect();
    // Checked: the NVLink domains nest in the leaf blocks, so their level sits just above the host.
    levels.extend(node.nvlink_domain_label.iter().cloned());
    levels.push(c.host_label.clone());
    let tiers = c
        .tiers
        .iter()
        .map(|t| TierParams {
            latency_ns: (t.latency_us * 1000.0).round() as u64,
            oversubscription: t.oversubscription.unwrap_or(1.0),
            switches_per_group: t.switches_per_domain,
        })
        .collect();
    let params = FabricParams {
        levels,
        host_label: c.host_label.clone(),
        tiers,
        rail_optimized: c.rail_optimized,
    };
    (records, params)
}

/// Build a cluster from labelled nodes: domains from the level labels (values unique only under
/// their parent), one switch tier per switch level plus an implicit top tier when the top switch
/// level has several domains, then switches and links. Reports every problem found.
///
/// A level other than the host level whose value on every node is the node's NVLink domain
/// name ([`NodeRecord::nvlink_domain`]) is an NVLink level ([`Level::nvlink`]): a locality level
/// with no switch tier. Every other non-host level is a switch level.
pub fn assemble(
    name: &str,
    records: Vec<NodeRecord>,
    params: &FabricParams,
) -> Result<Cluster, TopologyError> {
    let mut problems = check_records(&records, params);
    if !problems.is_empty() {
        return Err(TopologyError::new(problems));
    }
    let n_levels = params.levels.len();
    let host_level = (params.levels.last() == Some(&params.host_label)).then(|| n_levels - 1);

    // Domains, level by level, in order of first appearance.
    let mut levels: Vec<Level> = params
        .levels
        .iter()
        .enumerate()
        .map(|(li, l)| Level {
            label: l.clone(),
            alias: None,
            domains: Vec::new(),
            nvlink: Some(li) != host_level
                && records
                    .iter()
                    .all(|r| r.nvlink_domain.as_deref() == Some(r.labels[l].as_str())),
        })
        .collect();
    let mut domains: Vec<Domain> = Vec::new();
    let mut level_pos: Vec<u32> = Vec::new();
    let mut node_domains: Vec<Vec<DomainId>> = Vec::with_capacity(records.len());
    {
        let mut index: HashMap<(u32, usize, &str), DomainId> = HashMap::new();
        for (ni, r) in records.iter().enumerate() {
            let mut path = Vec::with_capacity(n_levels);
            let mut parent: Option<DomainId> = None;
            for (li, label) in params.levels.iter().enumerate() {
                let value = r.labels[label].as_str();
                let key = (parent.map_or(u32::MAX, |p| p.0), li, value);
                let id = *index.entry(key).or_insert_with(|| {
                    let id = DomainId::from_index(domains.len());
                    level_pos.push(levels[li].domains.len() as u32);
                    levels[li].domains.push(id);
                    domains.push(Domain {
                        level: li,
                        value: value.to_owned(),
                        parent,
                        children: Vec::new(),
                        nodes: Vec::new(),
                        gpus: 0,
                    });
                    if let Some(p) = parent {
                        domains[p.index()].children.push(id);
                    }
                    id
                });
                let d = &mut domains[id.index()];
                d.nodes.push(NodeId::from_index(ni));
                d.gpus += u64::from(r.gpus);
                path.push(id);
                parent = Some(id);
            }
            node_domains.push(path);
        }
    }
    if let Some(h) = host_level {
        for &d in &levels[h].domains {
            let dom = &domains[d.index()];
            if dom.nodes.len() > 1 {
                problems.push(problem(
                    format!("node \"{}\"", records[dom.nodes[1].index()].name),
                    format!(
                        "host label `{}` value \"{}\" is also used by node \"{}\"",
                        params.host_label,
                        dom.value,
                        records[dom.nodes[0].index()].name
                    ),
                ));
            }
        }
    }

    // Tiers: every switch level bottom-up, plus an implicit top tier if needed.
    let switch_levels: Vec<usize> = (0..n_levels)
        .rev()
        .filter(|&l| Some(l) != host_level && !levels[l].nvlink)
        .collect();
    let implicit_top = switch_levels
        .last()
        .is_none_or(|&top| levels[top].domains.len() > 1);
    let n_tiers = switch_levels.len() + usize::from(implicit_top);
    if n_tiers > MAX_TIERS {
        problems.push(problem(
            "levels",
            format!("expected at most {MAX_TIERS} switch tiers, the levels make {n_tiers}"),
        ));
    }
    if params.tiers.len() < n_tiers {
        problems.push(problem(
            "tiers",
            format!(
                "the levels make {n_tiers} switch tiers{} but parameters were given for {}",
                if implicit_top {
                    " (including an implicit top tier joining the top-level domains)"
                } else {
                    ""
                },
                params.tiers.len()
            ),
        ));
    }
    for (t, tp) in params.tiers.iter().enumerate().take(n_tiers) {
        if !(tp.oversubscription.is_finite() && tp.oversubscription > 0.0) {
            problems.push(problem(
                format!("tier {t}"),
                format!(
                    "expected a positive oversubscription, got {}",
                    tp.oversubscription
                ),
            ));
        }
        if t > 0 && tp.latency_ns < params.tiers[t - 1].latency_ns {
            problems.push(problem(
                format!("tier {t}"),
                "latency must not be below the tier beneath it".to_owned(),
            ));
        }
    }
    let max_rails = records.iter().map(|r| r.nics.rails).max().unwrap_or(1);
    let explicit: Vec<Option<u32>> = params
        .tiers
        .iter()
        .take(n_tiers)
        .map(|t| t.switches_per_group)
        .collect();
    let switch_counts = match switch_counts(params.rail_optimized, max_rails, &explicit) {
        Ok(s) => s,
        Err((t, msg)) => {
            problems.push(problem(format!("tier {t}"), msg));
            Vec::new()
        }
    };
    if problems.is_empty() {
        problems.extend(check_fabric_size(
            &records,
            &switch_levels,
            &levels,
            &switch_counts,
        ));
    }
    if !problems.is_empty() {
        return Err(TopologyError::new(problems));
    }

    let n_nodes = records.len();
    let mut tier_groups = vec![0u32; n_nodes * n_tiers];
    let mut tiers: Vec<Tier> = Vec::with_capacity(n_tiers);
    for t in 0..n_tiers {
        let level = switch_levels.get(t).copied();
        let groups = level.map_or(1, |l| levels[l].domains.len() as u32);
        let mut gpus = vec![0u64; groups as usize];
        for (ni, r) in records.iter().enumerate() {
            let g = level.map_or(0, |l| level_pos[node_domains[ni][l].index()]);
            tier_groups[ni * n_tiers + t] = g;
            gpus[g as usize] += u64::from(r.gpus);
        }
        tiers.push(Tier {
            tier: t as u8,
            level,
            latency_ns: params.tiers[t].latency_ns,
            oversubscription: params.tiers[t].oversubscription,
            groups,
            gpus_max: gpus.iter().copied().max().unwrap_or(0),
            sharp: false,
        });
    }

    // Switches.
    let mut switches: Vec<Switch> = Vec::new();
    let mut tier_switches: Vec<Vec<Vec<SwitchId>>> = Vec::with_capacity(n_tiers);
    for (t, tier) in tiers.iter().enumerate() {
        let mut per_group = Vec::with_capacity(tier.groups as usize);
        for g in 0..tier.groups {
            let ids: Vec<SwitchId> = (0..switch_counts[t])
                .map(|s| {
                    let id = SwitchId::from_index(switches.len());
                    switches.push(Switch {
                        name: format!("t{t}-g{g}-s{s}"),
                        tier: t as u8,
                        group: g,
                    });
                    id
                })
                .collect();
            per_group.push(ids);
        }
        tier_switches.push(per_group);
    }

    // Links: hosts to leaves, then each tier's groups to their parents.
    let mut links: Vec<Link> = Vec::new();
    let mut switch_up: Vec<Vec<LinkId>> = vec![Vec::new(); switches.len()];
    let mut switch_down: Vec<Vec<LinkId>> = vec![Vec::new(); switches.len()];
    // Physical ports per link: a NIC rail has its `ports_per_rail` ports; a switch-to-switch
    // bundle is made of ports as fast as the fastest NIC port in the cluster (the rule
    // `railyard cables plan` uses for cable counts).
    let fabric_port_gbps = records
        .iter()
        .map(|r| r.nics.port_gbps)
        .fold(0.0_f64, f64::max);
    let switch_link_ports = |gbps: f64| -> u32 {
        if fabric_port_gbps > 0.0 {
            ((gbps / fabric_port_gbps).round() as u32).max(1)
        } else {
            1
        }
    };
    let mut add_link =
        |links: &mut Vec<Link>, lower: Endpoint, upper: SwitchId, gbps, lat, tier, ports| {
            let id = LinkId::from_index(links.len());
            links.push(Link {
                lower,
                upper,
                gbps,
                latency_ns: lat,
                tier,
                ports,
            });
            if let Endpoint::Switch(s) = lower {
                switch_up[s.index()].push(id);
            }
            switch_down[upper.index()].push(id);
            id
        };
    let leaf_latency = params.tiers[0].latency_ns as f64 / 2.0;
    let mut pos_in_group = vec![0u32; tiers[0].groups as usize];
    let mut nic_links: Vec<Vec<LinkId>> = Vec::with_capacity(n_nodes);
    // Capacity entering each group from below, per tier.
    let mut cap_below: Vec<f64> = vec![0.0; tiers[0].groups as usize];
    for (ni, r) in records.iter().enumerate() {
        let g = tier_groups[ni * n_tiers] as usize;
        let leaves = &tier_switches[0][g];
        let pos = pos_in_group[g];
        pos_in_group[g] += 1;
        cap_below[g] += r.nics.total_gbps();
        let node_links = (0..r.nics.rails)
            .map(|rail| {
                let leaf = if params.rail_optimized {
                    leaves[rail as usize % leaves.len()]
                } else {
                    leaves[pos as usize % leaves.len()]
                };
                add_link(
                    &mut links,
                    Endpoint::Nic {
                        node: NodeId::from_index(ni),
                        rail,
                    },
                    leaf,
                    r.nics.rail_gbps(),
                    leaf_latency,
                    0,
                    r.nics.ports_per_rail,
                )
            })
            .collect();
        nic_links.push(node_links);
    }
    for t in 1..n_tiers {
        let child_groups = tiers[t - 1].groups as usize;
        // Parent of each child group, from any member node.
        let mut parent = vec![u32::MAX; child_groups];
        for ni in 0..n_nodes {
            parent[tier_groups[ni * n_tiers + t - 1] as usize] = tier_groups[ni * n_tiers + t];
        }
        let (s_below, s_here) = (switch_counts[t - 1], switch_counts[t]);
        let hop_latency =
            (params.tiers[t].latency_ns as f64 - params.tiers[t - 1].latency_ns as f64) / 2.0;
        let mut next_cap = vec![0.0; tiers[t].groups as usize];
        for c in 0..child_groups {
            let p = parent[c] as usize;
            let up_total = cap_below[c] / params.tiers[t].oversubscription;
            next_cap[p] += up_total;
            let per_child_switch = if s_here >= s_below {
                s_here / s_below
            } else {
                1
            };
            let gbps = up_total / f64::from(s_below * per_child_switch);
            for i in 0..s_below {
                let lower = tier_switches[t - 1][c][i as usize];
                for j in 0..per_child_switch {
                    let upper_idx = if s_here >= s_below {
                        i * per_child_switch + j
                    } else {
                        i % s_here
                    };
                    let upper = tier_switches[t][p][upper_idx as usize];
                    add_link(
                        &mut links,
                        Endpoint::Switch(lower),
                        upper,
                        gbps,
                        hop_latency,
                        t as u8,
                        switch_link_ports(gbps),
                    );
                }
            }
        }
        cap_below = next_cap;
    }

    // NVLink domains.
    let mut nvlink_domains: Vec<NvlinkDomain> = Vec::new();
    let mut nvl_index: HashMap<&str, NvlinkDomainId> = HashMap::new();
    let mut node_nvl = Vec::with_capacity(n_nodes);
    for (ni, r) in records.iter().enumerate() {
        let id = match &r.nvlink_domain {
            Some(name) => *nvl_index.entry(name.as_str()).or_insert_with(|| {
                nvlink_domains.push(NvlinkDomain {
                    name: name.clone(),
                    nodes: Vec::new(),
                });
                NvlinkDomainId::from_index(nvlink_domains.len() - 1)
            }),
            None => {
                nvlink_domains.push(NvlinkDomain {
                    name: r.name.clone(),
                    nodes: Vec::new(),
                });
                NvlinkDomainId::from_index(nvlink_domains.len() - 1)
            }
        };
        nvlink_domains[id.index()]
            .nodes
            .push(NodeId::from_index(ni));
        node_nvl.push(id);
    }

    let nodes: Vec<Node> = records
        .into_iter()
        .zip(node_domains)
        .zip(nic_links)
        .zip(node_nvl)
        .map(|(((r, domains), nic_links), nvlink_domain)| Node {
            name: r.name,
            gpus: r.gpus,
            gpu_memory_gib: r.gpu_memory_gib,
            nics: r.nics,
            nvlink_gbps: r.nvlink_gbps,
            nvlink_domain,
            labels: r.labels,
            taints: r.taints,
            ready: r.ready,
            unschedulable: r.unschedulable,
            internal_ip: r.internal_ip,
            allocatable: r.allocatable,
            domains,
            nic_links,
        })
        .collect();

    let (domain_order, node_order) = label_order(&domains, &nodes, host_level.is_some());
    let mut level_pos = vec![0u32; domains.len()];
    for level in &levels {
        for (i, d) in level.domains.iter().enumerate() {
            level_pos[d.index()] = i as u32;
        }
    }
    Ok(Cluster {
        name: name.to_owned(),
        nodes,
        switches,
        links,
        levels,
        host_level,
        domains,
        tiers,
        nvlink_domains,
        rail_optimized: params.rail_optimized,
        tier_groups,
        switch_up,
        switch_down,
        tier_switches,
        domain_order,
        node_order,
        level_pos,
    })
}

/// Kueue's tie-break order: each domain's position among the domains of its level, and each
/// node's position among all nodes, when sorted by their label values top first (a node's last
/// value is its host-level value, or its name when there is no host level). O(n log n), once.
fn label_order(domains: &[Domain], nodes: &[Node], has_host_level: bool) -> (Vec<u32>, Vec<u32>) {
    let path = |mut d: Option<DomainId>| {
        let mut values: Vec<&str> = Vec::new();
        while let Some(id) = d {
            let dom = &domains[id.index()];
            values.push(dom.value.as_str());
            d = dom.parent;
        }
        values.reverse();
        values
    };
    let mut by_level: Vec<(usize, Vec<&str>, usize)> = domains
        .iter()
        .enumerate()
        .map(|(i, d)| (d.level, path(Some(DomainId::from_index(i))), i))
        .collect();
    by_level.sort_unstable();
    let mut domain_order = vec![0u32; domains.len()];
    let mut level_start = 0;
    for (pos, (level, _, i)) in by_level.iter().enumerate() {
        if pos > 0 && by_level[pos - 1].0 != *level {
            level_start = pos;
        }
        domain_order[*i] = (pos - level_start) as u32;
    }
    let mut node_keys: Vec<(Vec<&str>, usize)> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut values = path(n.domains.last().copied());
            if !has_host_level {
                values.push(n.name.as_str());
            }
            (values, i)
        })
        .collect();
    node_keys.sort_unstable();
    let mut node_order = vec![0u32; nodes.len()];
    for (pos, (_, i)) in node_keys.iter().enumerate() {
        node_order[*i] = pos as u32;
    }
    (domain_order, node_order)
}

/// The switch and link counts the tiers will make, refused above [`MAX_SWITCHES`] and
/// [`MAX_LINKS`] before anything is allocated (a leaf block of one node with 65,536 switches
/// is a valid shape, but not at 4,096 blocks).
fn check_fabric_size(
    records: &[NodeRecord],
    switch_levels: &[usize],
    levels: &[Level],
    switch_counts: &[u32],
) -> Vec<Problem> {
    let groups: Vec<u64> = (0..switch_counts.len())
        .map(|t| {
            switch_levels
                .get(t)
                .map_or(1, |&l| levels[l].domains.len() as u64)
        })
        .collect();
    let nic_links: u64 = records.iter().map(|r| u64::from(r.nics.rails)).sum();
    fabric_size_problems(&groups, switch_counts, nic_links)
}

/// Switches and links of tiers with `groups[t]` groups of `switch_counts[t]` switches each
/// (leaf first) over `nic_links` NIC links, against [`MAX_SWITCHES`] and [`MAX_LINKS`]. Child
/// switch `i` has `max(1, S/S₋)` up-links, so a tier adds `groups below × max(S₋, S)` links.
fn fabric_size_problems(groups: &[u64], switch_counts: &[u32], nic_links: u64) -> Vec<Problem> {
    let switches: u64 = groups
        .iter()
        .zip(switch_counts)
        .map(|(&g, &s)| g * u64::from(s))
        .sum();
    let switch_links: u64 = (1..switch_counts.len())
        .map(|t| groups[t - 1] * u64::from(switch_counts[t - 1].max(switch_counts[t])))
        .sum();
    let mut p = Vec::new();
    if switches > MAX_SWITCHES as u64 {
        p.push(problem(
            "switches",
            format!("the tiers make {switches} switches, more than the limit of {MAX_SWITCHES}"),
        ));
    }
    if nic_links + switch_links > MAX_LINKS as u64 {
        p.push(problem(
            "links",
            format!(
                "the tiers make {} links, more than the limit of {MAX_LINKS}",
                nic_links + switch_links
            ),
        ));
    }
    p
}

/// Problems with the records and levels that can be seen before building anything.
fn check_records(records: &[NodeRecord], params: &FabricParams) -> Vec<Problem> {
    const MAX_REPORTED: usize = 20;
    let mut p = Vec::new();
    if records.is_empty() {
        p.push(problem("nodes", "expected at least one node"));
    }
    if records.len() > MAX_NODES {
        p.push(problem(
            "nodes",
            format!(
                "{} nodes is more than the limit of {MAX_NODES}",
                records.len()
            ),
        ));
        return p;
    }
    if params.levels.is_empty() {
        p.push(problem("levels", "expected at least one level label"));
    }
    for (i, l) in params.levels.iter().enumerate() {
        if params.levels[..i].contains(l) {
            p.push(problem("levels", format!("label `{l}` is listed twice")));
        }
        if *l == params.host_label && i + 1 != params.levels.len() {
            p.push(problem(
                "levels",
                format!("the host label `{l}` may only be the lowest level"),
            ));
        }
    }
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        if p.len() >= MAX_REPORTED {
            break;
        }
        let at = || format!("node \"{}\"", r.name);
        if r.name.is_empty() {
            p.push(problem(format!("nodes[{i}]"), "has an empty name"));
        }
        if let Some(first) = seen.insert(r.name.as_str(), i) {
            p.push(problem(
                at(),
                format!("duplicate node name (also nodes[{first}])"),
            ));
        }
        if r.gpus > MAX_GPUS_PER_NODE {
            p.push(problem(
                at(),
                format!(
                    "{} GPUs is more than the limit of {MAX_GPUS_PER_NODE}",
                    r.gpus
                ),
            ));
        }
        if r.nics.rails == 0
            || r.nics.ports_per_rail == 0
            || !r.nics.port_gbps.is_finite()
            || r.nics.port_gbps <= 0.0
        {
            p.push(problem(
                at(),
                "expected at least one NIC rail with a positive speed",
            ));
        } else if r.nics.rails > MAX_RAILS
            || r.nics.ports_per_rail > MAX_PORTS_PER_RAIL
            || r.nics.port_gbps > 1.0e5
        {
            p.push(problem(
                at(),
                format!(
                    "{} rails × {} ports × {} Gb/s: expected at most {MAX_RAILS} rails, {MAX_PORTS_PER_RAIL} ports per rail and 100000 Gb/s per port",
                    r.nics.rails, r.nics.ports_per_rail, r.nics.port_gbps
                ),
            ));
        }
        if r.gpu_memory_gib == 0 || r.gpu_memory_gib > MAX_GPU_MEMORY_GIB {
            p.push(problem(
                at(),
                format!(
                    "{} GiB per GPU: expected 1..={MAX_GPU_MEMORY_GIB}",
                    r.gpu_memory_gib
                ),
            ));
        }
        if !(r.nvlink_gbps.is_finite() && (0.0..=1.0e6).contains(&r.nvlink_gbps)) {
            p.push(problem(
                at(),
                format!(
                    "NVLink {} Gb/s: expected a speed in [0, 1000000] Gb/s",
                    r.nvlink_gbps
                ),
            ));
        } else if r.nvlink_gbps == 0.0 && r.gpus > 1 {
            p.push(problem(at(), NO_NVLINK));
        }
        for l in &params.levels {
            if !r.labels.contains_key(l) {
                p.push(problem(at(), format!("missing level label `{l}`")));
            }
        }
    }
    p
}
