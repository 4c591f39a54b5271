//! Collectives as connections between GPUs and NICs, built the way NCCL builds them.
//!
//! Ranks are GPUs, in rank order. NCCL groups ranks into *nodes* — here NVLink domains (one
//! host, or a multi-node NVLink rack) — numbered in order of their first rank, each node's
//! ranks in rank order (NCCL's `rankToNode`/`nodeRanks`).
//!
//! Ring collectives (AllReduce, AllGather, ReduceScatter), as NCCL's ring search and
//! `connectRings` (src/graph/search.cc, src/graph/connect.cc) build them: every channel is one
//! ring that enters every node exactly once, through one NIC port, visits all of the node's
//! ranks over NVLink and leaves through the *same* NIC port (`NET n -> GPU a -> … -> GPU x ->
//! NET n`, the search's ring pattern without cross-NIC) towards the next node, in node order;
//! the last node closes the ring to the first. A node's NIC ports are its ranks' rails (GPU `g`
//! uses rail `g mod rails`, every port of that rail), ordered rail by rail. A channel uses one
//! rail on both ends of every hop between nodes (railyard's rule, so that on a rail-optimized
//! fabric, whose rail planes may meet only at the top or not at all, a hop always has a path;
//! not checked against NCCL's search for multi-host NVLink domains), so rail traffic stays on
//! its rail plane. When every node is one host, search channel `s` uses port
//! `s mod ports` on each node (the same rail where the hosts use the same rails). When a node
//! spans several hosts of a multi-host NVLink domain, its port count is its hosts' and differs
//! between domains holding different numbers of the job's hosts, so search channel `s` uses
//! rail `shared[s mod n]` of the `n` rails every node has a port on, ascending, and on it the
//! node's port `(s div n) mod` its ports of that rail, on every node (`s mod ports` when no
//! rail is shared). Tree edges use the same port per channel as the rings. The number
//! of channels is [`crate::nccl::channel_plan`]; channel `c` runs search channel
//! `c mod search_channels`' ring and carries `1/channels` of the data. The NVLink hops of all
//! channels between the same two GPUs are one flow (weight = channels using it). With a single
//! node the ring is all NVLink: one flow per rank to the next.
//!
//! Tree AllReduce: NCCL's double binary tree over nodes (`ncclGetDtree`, src/graph/trees.cc):
//! the first tree is a binary tree over node indices (a node's parent clears its lowest set
//! bit and sets the next one up, or only clears it when that would be out of range), the second
//! the mirror image (even node count) or the first shifted by one (odd); channel `c` uses the
//! first tree, channel `c + channels/2` the second. Inside a node the tree is a chain over
//! NVLink. Every tree edge carries the channel's data up (reduce) and down (broadcast).
//! NVLSTree AllReduce: the same tree between nodes without the chains (NVLink SHARP does the
//! reduction inside each node; it is priced by NCCL's formula, not as flows).
//!
//! AllToAll: every pair of ranks in one NVLink domain talks over NVLink; between domains, a rank
//! reaches a peer through the NIC on the *peer's* rail (NCCL's PXN), and the connections from one
//! host to one peer host on one rail are merged into one flow per port of the rail whose
//! fairness weight is the number of rank pairs it stands for.

use topology::{Cluster, NodeId};

use crate::error::{FabricError, MAX_FLOWS};
use crate::nccl::{
    channel_plan, channel_speed_gb_s, nvls_plan, Algorithm, ChannelPlan, CollNetPlan, GpuArch,
    NcclConfig, NvlsPlan, MAX_COLLNET_DIRECT_HEADS,
};

/// A collective operation, as nccl-tests names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Collective {
    /// Ring AllReduce.
    AllReduce,
    /// Ring AllGather.
    AllGather,
    /// Ring ReduceScatter.
    ReduceScatter,
    /// All-to-all exchange.
    AllToAll,
}

impl Collective {
    /// Every collective, in a fixed order.
    pub const ALL: [Collective; 4] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::AllToAll,
    ];

    /// The lower-case name (`allreduce`, `allgather`, `reducescatter`, `alltoall`).
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "allreduce",
            Collective::AllGather => "allgather",
            Collective::ReduceScatter => "reducescatter",
            Collective::AllToAll => "alltoall",
        }
    }

    /// The collective with this name.
    pub fn from_name(name: &str) -> Option<Collective> {
        Collective::ALL.into_iter().find(|c| c.name() == name)
    }

    /// nccl-tests' bus bandwidth factor: busbw = algbw × factor. AllReduce 2(n−1)/n; AllGather,
    /// ReduceScatter and AllToAll (n−1)/n.
    pub fn bus_factor(self, n_ranks: usize) -> f64 {
        let n = n_ranks as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            _ => (n - 1.0) / n,
        }
    }

    /// Latency-bound steps of the algorithm, for the alpha-beta estimate: ring AllReduce
    /// 2(n−1), ring AllGather/ReduceScatter n−1, AllToAll 1 (all peers at once).
    pub fn latency_steps(self, n_ranks: usize) -> f64 {
        let n = n_ranks as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0),
            Collective::AllGather | Collective::ReduceScatter => n - 1.0,
            Collective::AllToAll => 1.0,
        }
    }
}

/// Bus bandwidth from algorithm bandwidth (same unit).
pub fn busbw_from_algbw(collective: Collective, n_ranks: usize, algbw: f64) -> f64 {
    algbw * collective.bus_factor(n_ranks)
}

/// A rank: one GPU of one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rank {
    /// The host.
    pub node: NodeId,
    /// GPU index on the host.
    pub gpu: u32,
}

/// A NIC port: one RDMA device as NCCL sees it (`rail`, `port` of a host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NicPort {
    /// The host.
    pub node: NodeId,
    /// The rail.
    pub rail: u32,
    /// The port of the rail.
    pub port: u32,
}

/// Where a connection runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    /// GPU to GPU over NVLink.
    Nvlink { src: Rank, dst: Rank },
    /// NIC port to NIC port over the switch fabric.
    Network { src: NicPort, dst: NicPort },
}

/// One connection of a collective.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Connection {
    pub hop: Hop,
    /// Fraction of the collective's bus bytes this connection carries.
    pub share: f64,
    /// Fairness weight (rank pairs or channels merged into this connection).
    pub fairness: f64,
}

/// Check ranks against the cluster: known nodes and GPUs, no GPU twice, at least two ranks.
pub fn validate_ranks(cluster: &Cluster, ranks: &[Rank]) -> Result<(), FabricError> {
    // Ranks in ascending (host, GPU) order on known GPUs, as placements make them, are valid
    // with no map; anything else gets the full check, which names the first problem.
    let ascending_known = ranks.len() >= 2
        && ranks.windows(2).all(|w| w[0] < w[1])
        && ranks.iter().all(|r| {
            cluster
                .nodes
                .get(r.node.index())
                .is_some_and(|node| r.gpu < node.gpus)
        });
    if ascending_known {
        return Ok(());
    }
    let mut seen: std::collections::HashMap<Rank, usize> = std::collections::HashMap::new();
    for (i, r) in ranks.iter().enumerate() {
        let Some(node) = cluster.nodes.get(r.node.index()) else {
            return Err(FabricError::UnknownNode {
                rank: i,
                node: r.node.0,
                nodes: cluster.nodes.len(),
            });
        };
        if r.gpu >= node.gpus {
            return Err(FabricError::UnknownGpu {
                rank: i,
                node: node.name.clone(),
                gpu: r.gpu,
                gpus: node.gpus,
            });
        }
        if let Some(first) = seen.insert(*r, i) {
            return Err(FabricError::SharedGpu {
                first,
                second: i,
                node: node.name.clone(),
                gpu: r.gpu,
            });
        }
    }
    if ranks.len() < 2 {
        return Err(FabricError::TooFewRanks(ranks.len()));
    }
    Ok(())
}

/// NCCL's nodes for a set of ranks: NVLink domains in order of their first rank, each with
/// its ranks in rank order and its NIC ports (rail by rail, then port, then host order).
pub(crate) struct NcclNodes {
    pub ranks: Vec<Vec<Rank>>,
    pub ports: Vec<Vec<NicPort>>,
}

pub(crate) fn nccl_nodes(cluster: &Cluster, ranks: &[Rank]) -> NcclNodes {
    let mut index: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    let mut groups: Vec<Vec<Rank>> = Vec::new();
    let mut last: Option<(u32, usize)> = None;
    for r in ranks {
        let d = cluster.node(r.node).nvlink_domain.0;
        // Ranks of one domain mostly come together: no lookup for the next one.
        let i = match last {
            Some((ld, li)) if ld == d => li,
            _ => *index.entry(d).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            }),
        };
        last = Some((d, i));
        groups[i].push(*r);
    }
    let ports = groups
        .iter()
        .map(|g| {
            // Hosts in order of first rank; ports sorted rail, port, host position.
            let mut hosts: Vec<NodeId> = Vec::new();
            for r in g {
                if !hosts.contains(&r.node) {
                    hosts.push(r.node);
                }
            }
            let mut ps: Vec<(u32, u32, usize, NicPort)> = Vec::new();
            for r in g {
                let nics = cluster.node(r.node).nics;
                let rail = r.gpu % nics.rails.max(1);
                let h = hosts.iter().position(|&x| x == r.node).unwrap_or(0);
                for port in 0..nics.ports_per_rail {
                    ps.push((
                        rail,
                        port,
                        h,
                        NicPort {
                            node: r.node,
                            rail,
                            port,
                        },
                    ));
                }
            }
            ps.sort_by_key(|&(rail, port, h, _)| (rail, port, h));
            ps.dedup_by_key(|x| (x.0, x.1, x.2));
            ps.into_iter().map(|x| x.3).collect()
        })
        .collect();
    NcclNodes {
        ranks: groups,
        ports,
    }
}

/// NCCL's channel plan for ranks already grouped into nodes.
pub(crate) fn plan_channels(
    cluster: &Cluster,
    nodes: &NcclNodes,
    cfg: &NcclConfig,
) -> (GpuArch, ChannelPlan) {
    let all = nodes.ranks.iter().flatten();
    let arch = all
        .clone()
        .map(|r| GpuArch::from_nvlink_gbps(cluster.node(r.node).nvlink_gbps))
        .min()
        .unwrap_or(GpuArch::Volta);
    let nvlink_gb_s = all
        .clone()
        .map(|r| cluster.node(r.node).nvlink_gbps / 8.0 * arch.nvlink_efficiency())
        .fold(f64::INFINITY, f64::min);
    let nvlink_gb_s = if nvlink_gb_s.is_finite() {
        nvlink_gb_s
    } else {
        0.0
    };
    let port_gb_s = slowest_port_gb_s(cluster, nodes);
    let nics = nodes.ports.iter().map(Vec::len).min().unwrap_or(0) as u32;
    let gpus = nodes.ranks.iter().map(Vec::len).min().unwrap_or(0) as u32;
    let plan = channel_plan(
        arch,
        nodes.ranks.len(),
        nics,
        if port_gb_s.is_finite() {
            port_gb_s
        } else {
            0.0
        },
        gpus,
        nvlink_gb_s,
        cfg,
    );
    (arch, plan)
}

/// The slowest NIC port of the job's NCCL nodes, GB/s (infinite when they have none).
fn slowest_port_gb_s(cluster: &Cluster, nodes: &NcclNodes) -> f64 {
    nodes
        .ports
        .iter()
        .flatten()
        .map(|p| cluster.node(p.node).nics.port_gbps / 8.0)
        .fold(f64::INFINITY, f64::min)
}

/// GPUs an NVLink domain needs before railyard assumes NVSwitches in it: HGX/DGX 8-GPU boards
/// and NVL racks have them, 4-GPU boards and NVLink bridges connect GPUs directly (NCCL looks
/// for an `NVS` node in the topology, `ncclTopoCompute`, src/graph/search.cc).
pub(crate) const NVSWITCH_MIN_GPUS: u32 = 8;

/// NVLink SHARP and network SHARP as NCCL would find them for validated ranks.
///
/// NVLS ([`nvls_plan`]): `NCCL_NVLS_ENABLE` not 0, every NCCL node's NVLink domain with at
/// least [`NVSWITCH_MIN_GPUS`] GPUs (NVSwitches), the fewest ranks of any node as local ranks,
/// NCCL's usable NVLink per GPU; across nodes each head needs a NIC port. CollNet:
/// `NCCL_COLLNET_ENABLE=1`, several nodes, and SHARP on every switch tier from the leaves up to
/// the lowest tier joining all the job's hosts; heads per node the fewest of
/// [`MAX_COLLNET_DIRECT_HEADS`], local ranks and NIC ports, each at NCCL's channel speed for
/// its port.
pub(crate) fn sharp_plans(
    cluster: &Cluster,
    ranks: &[Rank],
    cfg: &NcclConfig,
) -> (Option<NvlsPlan>, Option<CollNetPlan>) {
    let nodes = nccl_nodes(cluster, ranks);
    let (arch, _) = plan_channels(cluster, &nodes, cfg);
    let multi = nodes.ranks.len() > 1;
    let local = nodes.ranks.iter().map(Vec::len).min().unwrap_or(0) as u32;
    let nic_ports = nodes.ports.iter().map(Vec::len).min().unwrap_or(0) as u32;
    let port_gb_s = slowest_port_gb_s(cluster, &nodes);
    let channel_gb_s = if port_gb_s.is_finite() && port_gb_s > 0.0 {
        channel_speed_gb_s(arch, port_gb_s)
    } else {
        0.0
    };
    let nvswitch = nodes.ranks.iter().all(|node_ranks| {
        let domain = cluster.node(node_ranks[0].node).nvlink_domain;
        let gpus = cluster.nvlink_domain_gpus(&cluster.nvlink_domains[domain.index()]);
        gpus >= NVSWITCH_MIN_GPUS
    });
    let nvlink_gb_s = ranks
        .iter()
        .map(|r| cluster.node(r.node).nvlink_gbps / 8.0 * arch.nvlink_efficiency())
        .fold(f64::INFINITY, f64::min);
    let network = multi.then_some((nic_ports, channel_gb_s));
    let nvls = if cfg.nvls_enable && nvswitch && nvlink_gb_s.is_finite() {
        nvls_plan(arch, local, nvlink_gb_s, network)
    } else {
        None
    };
    let collnet = if cfg.collnet_enable && multi && channel_gb_s > 0.0 && nic_ports > 0 {
        let first = ranks[0].node;
        let top = ranks
            .iter()
            .filter_map(|r| cluster.common_tier(first, r.node))
            .max();
        let sharp = top.is_some_and(|t| cluster.tiers[..=usize::from(t)].iter().all(|x| x.sharp));
        sharp.then_some(CollNetPlan {
            heads: MAX_COLLNET_DIRECT_HEADS.min(local).min(nic_ports).max(1),
            bw_gb_s: channel_gb_s,
        })
    } else {
        None
    };
    (nvls, collnet)
}

/// The connections of a collective over validated ranks.
pub(crate) fn connections(
    cluster: &Cluster,
    ranks: &[Rank],
    nodes: &NcclNodes,
    plan: &ChannelPlan,
    collective: Collective,
    algorithm: Algorithm,
    qps: u32,
) -> Result<Vec<Connection>, FabricError> {
    match collective {
        Collective::AllReduce if algorithm == Algorithm::Tree => {
            Ok(tree(cluster, ranks.len(), nodes, plan, true))
        }
        Collective::AllReduce if algorithm == Algorithm::NvlsTree => {
            Ok(tree(cluster, ranks.len(), nodes, plan, false))
        }
        Collective::AllReduce | Collective::AllGather | Collective::ReduceScatter => {
            Ok(ring(cluster, nodes, plan))
        }
        Collective::AllToAll => all_to_all(cluster, ranks, qps),
    }
}

/// The port and entry rank position of every search channel on every node, node by node:
/// `search` entries each. With one host per node, search channel `s` uses port `s mod ports`
/// of each node. When a node spans several hosts, every node's channel `s` uses the same rail
/// instead: [`shared_rails`]`[s mod n]`, and on it port `(s div n) mod` the node's ports of
/// that rail, so every hop between nodes stays on one rail plane.
fn entry_ports(cluster: &Cluster, nodes: &NcclNodes, search: usize) -> Vec<(NicPort, usize)> {
    let multi_host = nodes
        .ranks
        .iter()
        .any(|g| g.iter().any(|r| r.node != g[0].node));
    let rails = if multi_host {
        shared_rails(nodes)
    } else {
        Vec::new()
    };
    nodes
        .ranks
        .iter()
        .zip(&nodes.ports)
        .flat_map(|(node_ranks, ports)| {
            let rails = &rails;
            (0..search).map(move |s| {
                let port = if rails.is_empty() {
                    ports[s % ports.len()]
                } else {
                    let rail = rails[s % rails.len()];
                    let on_rail: Vec<NicPort> =
                        ports.iter().copied().filter(|p| p.rail == rail).collect();
                    on_rail[(s / rails.len()) % on_rail.len()]
                };
                (port, entry_of(cluster, node_ranks, port, s))
            })
        })
        .collect()
}

/// The rails every node has a port on, ascending (empty when no rail is common to all).
fn shared_rails(nodes: &NcclNodes) -> Vec<u32> {
    let rails_of = |ports: &[NicPort]| {
        let mut rails: Vec<u32> = ports.iter().map(|p| p.rail).collect();
        rails.sort_unstable();
        rails.dedup();
        rails
    };
    let mut shared = nodes.ports.first().map(|p| rails_of(p)).unwrap_or_default();
    for ports in nodes.ports.iter().skip(1) {
        let here = rails_of(ports);
        shared.retain(|r| here.contains(r));
    }
    shared
}

fn ring(cluster: &Cluster, nodes: &NcclNodes, plan: &ChannelPlan) -> Vec<Connection> {
    let mut out = Vec::new();
    if nodes.ranks.len() == 1 {
        let s = &nodes.ranks[0];
        for i in 0..s.len() {
            out.push(Connection {
                hop: Hop::Nvlink {
                    src: s[i],
                    dst: s[(i + 1) % s.len()],
                },
                share: 1.0,
                fairness: 1.0,
            });
        }
        return out;
    }
    let channels = plan.channels as usize;
    let search = plan.search_channels.max(1) as usize;
    let share = 1.0 / channels as f64;
    let n_nodes = nodes.ranks.len();
    let entries = entry_ports(cluster, nodes, search);
    let entry = |ni: usize, c: usize| entries[ni * search + c % search];
    let mut entering = Vec::new();
    out.reserve(n_nodes * (channels + nodes.ranks[0].len()));
    for (ni, node_ranks) in nodes.ranks.iter().enumerate() {
        let len = node_ranks.len();
        // Channels entering at each rank position: their NVLink chains skip the hop into it.
        entering.clear();
        entering.resize(len, 0u32);
        for c in 0..channels {
            entering[entry(ni, c).1] += 1;
        }
        if len > 1 {
            for j in 0..len {
                let next = (j + 1) % len;
                let count = channels as u32 - entering[next];
                if count > 0 {
                    out.push(Connection {
                        hop: Hop::Nvlink {
                            src: node_ranks[j],
                            dst: node_ranks[next],
                        },
                        share: f64::from(count) * share,
                        fairness: f64::from(count),
                    });
                }
            }
        }
        let nj = (ni + 1) % n_nodes;
        for c in 0..channels {
            let (src, _) = entry(ni, c);
            let (dst, _) = entry(nj, c);
            out.push(Connection {
                hop: Hop::Network { src, dst },
                share,
                fairness: 1.0,
            });
        }
    }
    out
}

/// The position of the rank search channel `s` enters a node at through `port`: the first rank
/// on that port's rail and host; else position `s mod ranks`.
fn entry_of(cluster: &Cluster, node_ranks: &[Rank], port: NicPort, s: usize) -> usize {
    let rails = cluster.node(port.node).nics.rails.max(1);
    node_ranks
        .iter()
        .position(|r| r.node == port.node && r.gpu % rails == port.rail)
        .unwrap_or(s % node_ranks.len())
}

/// Parent of `i` in NCCL's first binary tree over `n` nodes (None for the root, node 0).
pub(crate) fn btree_parent(i: usize, n: usize) -> Option<usize> {
    if i == 0 {
        return None;
    }
    let low = i & i.wrapping_neg();
    let up = (i ^ low) | (low << 1);
    Some(if up >= n { i ^ low } else { up })
}

/// Parent of `i` in NCCL's second tree: the mirror image for an even `n`, the first tree
/// shifted by one for an odd `n`.
pub(crate) fn dtree_second_parent(i: usize, n: usize) -> Option<usize> {
    if n % 2 == 0 {
        btree_parent(n - 1 - i, n).map(|p| n - 1 - p)
    } else {
        btree_parent((i + n - 1) % n, n).map(|p| (p + 1) % n)
    }
}

/// The double binary tree; `chains` false leaves out the NVLink chains inside nodes, which
/// NVLSTree replaces by NVLink SHARP: only its tree between nodes is left on the fabric.
fn tree(
    cluster: &Cluster,
    n_ranks: usize,
    nodes: &NcclNodes,
    plan: &ChannelPlan,
    chains: bool,
) -> Vec<Connection> {
    let n_nodes = nodes.ranks.len();
    if n_nodes == 1 {
        return ring(cluster, nodes, plan);
    }
    let channels = plan.channels as usize;
    let search = plan.search_channels.max(1) as usize;
    let entries = entry_ports(cluster, nodes, search);
    let entry = |ni: usize, c: usize| entries[ni * search + c % search];
    // Bus bytes of an AllReduce: 2(n−1)/n of the buffer. A tree channel moves its 1/channels
    // of the buffer up and down every edge.
    let n = n_ranks as f64;
    let per_channel = (1.0 / channels as f64) / (2.0 * (n - 1.0) / n);
    let mut out = Vec::new();
    // Chains inside nodes: the head (entry rank) to the others in order, both directions.
    for (ni, node_ranks) in nodes.ranks.iter().enumerate() {
        let len = node_ranks.len();
        if len < 2 || !chains {
            continue;
        }
        let mut entering = vec![0u32; len];
        for c in 0..channels {
            entering[entry(ni, c).1] += 1;
        }
        for j in 0..len {
            let next = (j + 1) % len;
            let count = channels as u32 - entering[next];
            if count == 0 {
                continue;
            }
            for (src, dst) in [
                (node_ranks[j], node_ranks[next]),
                (node_ranks[next], node_ranks[j]),
            ] {
                out.push(Connection {
                    hop: Hop::Nvlink { src, dst },
                    share: f64::from(count) * per_channel,
                    fairness: f64::from(count),
                });
            }
        }
    }
    for c in 0..channels {
        let second = c >= channels.div_ceil(2);
        for child in 0..n_nodes {
            let parent = if second {
                dtree_second_parent(child, n_nodes)
            } else {
                btree_parent(child, n_nodes)
            };
            let Some(parent) = parent else { continue };
            let (a, _) = entry(child, c);
            let (b, _) = entry(parent, c);
            for (src, dst) in [(a, b), (b, a)] {
                out.push(Connection {
                    hop: Hop::Network { src, dst },
                    share: per_channel,
                    fairness: 1.0,
                });
            }
        }
    }
    out
}

fn all_to_all(cluster: &Cluster, ranks: &[Rank], qps: u32) -> Result<Vec<Connection>, FabricError> {
    let n = ranks.len();
    let pair_share = 1.0 / (n as f64 - 1.0);
    // Ranks per NVLink domain and per node, in first-appearance order.
    let mut by_domain: std::collections::BTreeMap<u32, Vec<Rank>> = Default::default();
    for r in ranks {
        by_domain
            .entry(cluster.node(r.node).nvlink_domain.0)
            .or_default()
            .push(*r);
    }
    let nvlink_pairs: u64 = by_domain
        .values()
        .map(|v| (v.len() as u64) * (v.len() as u64 - 1))
        .sum();
    let mut per_node: std::collections::BTreeMap<NodeId, (u64, Vec<u64>)> = Default::default();
    for r in ranks {
        let rails = cluster.node(r.node).nics.rails;
        let e = per_node
            .entry(r.node)
            .or_insert_with(|| (0, vec![0; rails as usize]));
        e.0 += 1;
        e.1[(r.gpu % rails) as usize] += 1;
    }
    let network: u64 = per_node
        .iter()
        .map(|(a, (_, rails))| {
            let dom = cluster.node(*a).nvlink_domain;
            let peers = per_node
                .keys()
                .filter(|b| cluster.node(**b).nvlink_domain != dom)
                .count() as u64;
            peers
                * rails.iter().filter(|&&x| x > 0).count() as u64
                * u64::from(cluster.node(*a).nics.ports_per_rail)
        })
        .sum();
    let total = nvlink_pairs + network * u64::from(qps);
    if total > MAX_FLOWS {
        return Err(FabricError::TooManyFlows(total));
    }
    let mut out = Vec::new();
    for members in by_domain.values() {
        for &a in members {
            for &b in members {
                if a != b {
                    out.push(Connection {
                        hop: Hop::Nvlink { src: a, dst: b },
                        share: pair_share,
                        fairness: 1.0,
                    });
                }
            }
        }
    }
    for (&a, (count_a, _)) in &per_node {
        let dom = cluster.node(a).nvlink_domain;
        for (&b, (_, rails_b)) in &per_node {
            if cluster.node(b).nvlink_domain == dom {
                continue;
            }
            let rails_a = cluster.node(a).nics.rails;
            for (rail, &dst_ranks) in rails_b.iter().enumerate() {
                if dst_ranks == 0 {
                    continue;
                }
                // One flow per port of the rail, each with its part of the rank pairs.
                let pairs = (*count_a * dst_ranks) as f64;
                let ports_b = cluster.node(b).nics.ports_per_rail.max(1);
                let ports_a = cluster.node(a).nics.ports_per_rail.max(1);
                let per_port = pairs / f64::from(ports_b);
                for port in 0..ports_b {
                    out.push(Connection {
                        hop: Hop::Network {
                            src: NicPort {
                                node: a,
                                rail: rail as u32 % rails_a,
                                port: port % ports_a,
                            },
                            dst: NicPort {
                                node: b,
                                rail: rail as u32,
                                port,
                            },
                        },
                        share: per_port * pair_share,
                        fairness: per_port,
                    });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_md_bus_bandwidth_conversions() {
        assert_eq!(busbw_from_algbw(Collective::AllReduce, 16, 100.0), 187.5);
        assert_eq!(busbw_from_algbw(Collective::AllGather, 16, 100.0), 93.75);
        assert_eq!(
            busbw_from_algbw(Collective::ReduceScatter, 16, 100.0),
            93.75
        );
        assert_eq!(busbw_from_algbw(Collective::AllToAll, 16, 100.0), 93.75);
    }

    /// Three NVLink domains of 4 hosts, each host 4 GPUs and 4 rails of one port; one leaf
    /// block per domain with a switch per rail, and a top tier whose striped wiring keeps
    /// every rail its own plane (rail `r` reaches only rail `r`).
    fn three_racks() -> Cluster {
        let tier = |label: &str, nodes_per_domain, switches| topology::TierSpec {
            label: label.to_owned(),
            value_prefix: format!("{label}-"),
            nodes_per_domain,
            latency_us: 1.0,
            switches_per_domain: Some(switches),
            oversubscription: None,
            sharp: false,
        };
        topology::build_from_spec(&topology::ClusterSpec {
            name: "racks".to_owned(),
            node: topology::NodeSpec {
                nvlink_gbps: 7_200.0,
                nvlink_domain_nodes: 4,
                ..topology::examples::node(4, 4, 1, 400.0)
            },
            fabric: topology::FabricSpec {
                fat_tree: None,
                clos: Some(topology::ClosSpec {
                    nodes: 12,
                    rail_optimized: true,
                    host_label: topology::HOSTNAME_LABEL.to_owned(),
                    tiers: vec![tier("lb", 4, 4), tier("top", 12, 4)],
                }),
            },
        })
        .expect("valid spec")
    }

    /// Jobs over the racks as GPUs per host, rack by rack (hosts from the rack's first), and
    /// the rails every inter-rack hop must use. Different host counts per rack made search
    /// channel `s` land on different rails before (`s mod ports` of 16 vs 12 ports).
    struct RailCase {
        name: &'static str,
        /// GPUs per host, rack by rack.
        racks: &'static [&'static [u32]],
        /// The rails hops between racks may use.
        rails: &'static [u32],
    }

    const RAIL_CASES: &[RailCase] = &[
        RailCase {
            name: "4 hosts then 3",
            racks: &[&[4, 4, 4, 4], &[4, 4, 4]],
            rails: &[0, 1, 2, 3],
        },
        RailCase {
            name: "3 hosts then 4",
            racks: &[&[4, 4, 4], &[4, 4, 4, 4]],
            rails: &[0, 1, 2, 3],
        },
        RailCase {
            name: "4 hosts then 1",
            racks: &[&[4, 4, 4, 4], &[4]],
            rails: &[0, 1, 2, 3],
        },
        RailCase {
            name: "2, 3, then 1",
            racks: &[&[4, 4], &[4, 4, 4], &[4]],
            rails: &[0, 1, 2, 3],
        },
        RailCase {
            name: "only rails 0 and 1 shared",
            racks: &[&[4, 4, 4, 4], &[2]],
            rails: &[0, 1],
        },
    ];

    fn rail_case_ranks(cluster: &Cluster, racks: &[&[u32]]) -> Vec<Rank> {
        let mut ranks = Vec::new();
        for (rack, hosts) in racks.iter().enumerate() {
            for (h, &gpus) in hosts.iter().enumerate() {
                let node = NodeId::from_index(rack * 4 + h);
                assert!(gpus <= cluster.node(node).gpus, "fixture fits the host");
                ranks.extend((0..gpus).map(|gpu| Rank { node, gpu }));
            }
        }
        ranks
    }

    #[test]
    fn every_hop_between_multi_host_domains_stays_on_one_rail() {
        let cluster = three_racks();
        let cfg = NcclConfig::default();
        for &RailCase { name, racks, rails } in RAIL_CASES {
            let ranks = rail_case_ranks(&cluster, racks);
            validate_ranks(&cluster, &ranks).expect("valid ranks");
            let nodes = nccl_nodes(&cluster, &ranks);
            assert_eq!(
                nodes.ranks.len(),
                racks.len(),
                "{name}: one NCCL node per rack"
            );
            let (_, plan) = plan_channels(&cluster, &nodes, &cfg);
            for algorithm in [Algorithm::Ring, Algorithm::Tree, Algorithm::NvlsTree] {
                let conns = connections(
                    &cluster,
                    &ranks,
                    &nodes,
                    &plan,
                    Collective::AllReduce,
                    algorithm,
                    1,
                )
                .expect("connections");
                let mut used: Vec<u32> = Vec::new();
                for c in &conns {
                    let Hop::Network { src, dst } = c.hop else {
                        continue;
                    };
                    let domain = |p: NicPort| cluster.node(p.node).nvlink_domain;
                    assert_ne!(domain(src), domain(dst), "{name} {algorithm:?}: {c:?}");
                    assert_eq!(
                        src.rail, dst.rail,
                        "{name} {algorithm:?}: {src:?} -> {dst:?}"
                    );
                    used.push(src.rail);
                }
                used.sort_unstable();
                used.dedup();
                let want = &rails[..rails.len().min(plan.search_channels as usize)];
                assert_eq!(used, want, "{name} {algorithm:?}: rails used");
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for c in Collective::ALL {
            assert_eq!(Collective::from_name(c.name()), Some(c));
        }
        assert_eq!(Collective::from_name("broadcast"), None);
    }
}
