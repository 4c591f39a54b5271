//! Collectives as connections between GPUs and NICs.
//!
//! Ranks are GPUs, in rank order. A *segment* is a maximal run of consecutive ranks in one NVLink
//! domain (one host, or a multi-node NVLink rack); the ring closes, so the last and the first
//! segment merge when they share a domain.
//!
//! Ring collectives (AllReduce, AllGather, ReduceScatter) follow NCCL's ring on rail-optimized
//! hosts: `C = min(rails, longest segment)` channels (one ring per rail). Channel `c` enters a
//! segment at its GPU at position `c mod len`, visits the segment's GPUs in order over NVLink
//! (`len − 1` NVLink hops) and leaves through the NIC of rail `g mod rails`, `g` being the
//! entry GPU's index ("GPU i's traffic leaves on rail i"); it arrives at the next segment on the
//! same rail, so rail traffic stays on its rail plane. Each channel carries `1/C` of the data.
//! With a single segment the ring is all NVLink: one flow per rank to the next.
//!
//! AllToAll: every pair of ranks in one NVLink domain talks over NVLink; between domains, a rank
//! reaches a peer through the NIC on the *peer's* rail (NCCL's PXN), and the connections from one
//! host to one peer host on one rail are merged into one flow whose fairness weight is the number
//! of rank pairs it stands for.

use topology::{Cluster, NodeId};

use crate::error::{FabricError, MAX_FLOWS};

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

/// Where a connection runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    /// GPU to GPU over NVLink.
    Nvlink { src: Rank, dst: Rank },
    /// NIC to NIC over the switch fabric.
    Network {
        src: NodeId,
        src_rail: u32,
        dst: NodeId,
        dst_rail: u32,
    },
}

/// One connection of a collective.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Connection {
    pub hop: Hop,
    /// Fraction of the collective's bus bytes this connection carries.
    pub share: f64,
    /// Fairness weight (rank pairs merged into this connection).
    pub fairness: f64,
}

/// Check ranks against the cluster: known nodes and GPUs, no GPU twice, at least two ranks.
pub fn validate_ranks(cluster: &Cluster, ranks: &[Rank]) -> Result<(), FabricError> {
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

/// Ranks grouped into segments (runs in one NVLink domain), with the ring wrap merged.
pub(crate) fn segments(cluster: &Cluster, ranks: &[Rank]) -> Vec<Vec<Rank>> {
    let domain = |r: &Rank| cluster.node(r.node).nvlink_domain;
    let mut segs: Vec<Vec<Rank>> = Vec::new();
    for r in ranks {
        match segs.last_mut() {
            Some(s) if domain(&s[0]) == domain(r) => s.push(*r),
            _ => segs.push(vec![*r]),
        }
    }
    if segs.len() > 1 && domain(&segs[0][0]) == domain(&segs[segs.len() - 1][0]) {
        let mut last = segs.pop().expect("more than one segment");
        last.append(&mut segs[0]);
        segs[0] = last;
    }
    segs
}

/// The connections of a collective over validated ranks.
pub(crate) fn connections(
    cluster: &Cluster,
    ranks: &[Rank],
    collective: Collective,
    qps: u32,
) -> Result<Vec<Connection>, FabricError> {
    match collective {
        Collective::AllReduce | Collective::AllGather | Collective::ReduceScatter => {
            Ok(ring(cluster, ranks))
        }
        Collective::AllToAll => all_to_all(cluster, ranks, qps),
    }
}

fn ring(cluster: &Cluster, ranks: &[Rank]) -> Vec<Connection> {
    let segs = segments(cluster, ranks);
    let mut out = Vec::new();
    if segs.len() == 1 {
        let s = &segs[0];
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
    let rails = |r: &Rank| cluster.node(r.node).nics.rails;
    let max_rails = ranks.iter().map(rails).max().unwrap_or(1) as usize;
    let longest = segs.iter().map(Vec::len).max().unwrap_or(1);
    let channels = max_rails.min(longest).max(1);
    let share = 1.0 / channels as f64;
    for c in 0..channels {
        for (si, s) in segs.iter().enumerate() {
            let len = s.len();
            let entry = c % len;
            for k in 0..len - 1 {
                out.push(Connection {
                    hop: Hop::Nvlink {
                        src: s[(entry + k) % len],
                        dst: s[(entry + k + 1) % len],
                    },
                    share,
                    fairness: 1.0,
                });
            }
            let exit = s[entry];
            let rail = exit.gpu % rails(&exit);
            let next = &segs[(si + 1) % segs.len()];
            let next_entry = next[c % next.len()];
            out.push(Connection {
                hop: Hop::Network {
                    src: exit.node,
                    src_rail: rail,
                    dst: next_entry.node,
                    dst_rail: rail % rails(&next_entry),
                },
                share,
                fairness: 1.0,
            });
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
            peers * rails.iter().filter(|&&x| x > 0).count() as u64
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
                let pairs = (*count_a * dst_ranks) as f64;
                out.push(Connection {
                    hop: Hop::Network {
                        src: a,
                        src_rail: rail as u32 % rails_a,
                        dst: b,
                        dst_rail: rail as u32,
                    },
                    share: pairs * pair_share,
                    fairness: pairs,
                });
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

    #[test]
    fn names_round_trip() {
        for c in Collective::ALL {
            assert_eq!(Collective::from_name(c.name()), Some(c));
        }
        assert_eq!(Collective::from_name("broadcast"), None);
    }
}
