//! What nccl-tests would print: per message size, the algorithm and protocol NCCL's tuner picks
//! and the time, algorithm and bus bandwidth that follow from the fabric model's rates.
//!
//! The fabric model gives the bandwidth of the job's Ring (and, for AllReduce over several
//! nodes, its double binary Tree) with NCCL's channels on the shared fabric; NCCL's tuner model
//! ([`crate::nccl::tuner_estimates`]) turns them into per-protocol bandwidths and latencies and
//! picks the fastest for each size, as NCCL does.

use crate::collective::{sharp_plans, Collective};
use crate::error::FabricError;
use crate::model::{Fabric, JobTraffic, RoutedJob};
use crate::nccl::{self, Algorithm, Protocol, TunerInput};
use crate::routing::RoutingConfig;

/// One row of a size sweep, in nccl-tests' units.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SweepRow {
    /// Buffer size, bytes (nccl-tests' `size`).
    pub size_bytes: u64,
    /// The algorithm NCCL's tuner picks.
    pub algorithm: Algorithm,
    /// The protocol it picks.
    pub protocol: Protocol,
    /// Predicted time, µs.
    pub time_us: f64,
    /// Algorithm bandwidth, GB/s (size / time).
    pub algbw_gb_s: f64,
    /// Bus bandwidth, GB/s (nccl-tests' factor for the collective).
    pub busbw_gb_s: f64,
}

/// The tuner's input for a job on a fabric: NCCL's channel count, and the Ring and Tree bus
/// bandwidths the job gets *alone* on the fabric under `cfg` (Tree only for AllReduce over
/// several nodes and when `NCCL_ALGO` allows it).
pub fn tuner_input(
    fabric: &mut Fabric<'_>,
    job: &JobTraffic,
    cfg: &RoutingConfig,
) -> Result<TunerInput, FabricError> {
    tuner_input_with(fabric, job, cfg, &[])
}

/// [`tuner_input`] for a job sharing the fabric with `running` jobs (routed with job IDs other
/// than 0): its Ring and its Tree are each solved together with them.
pub fn tuner_input_with(
    fabric: &mut Fabric<'_>,
    job: &JobTraffic,
    cfg: &RoutingConfig,
    running: &[RoutedJob],
) -> Result<TunerInput, FabricError> {
    let shared = |fabric: &Fabric<'_>, j: &RoutedJob| {
        let mut all = vec![j];
        all.extend(running);
        fabric.paces(&all)[0] / 8.0
    };
    let ring = fabric.route_flows(job, cfg, 0)?;
    let ring_busbw = shared(fabric, &ring);
    let multi_allreduce = job.collective == Collective::AllReduce && ring.n_nodes > 1;
    let tree_busbw = if multi_allreduce && cfg.nccl.allows_algorithm(Algorithm::Tree) {
        let tree = fabric.route_flows_algorithm(job, Algorithm::Tree, cfg, 0)?;
        shared(fabric, &tree)
    } else {
        0.0
    };
    let (nvls, collnet) = sharp_plans(fabric.cluster(), &job.ranks, &cfg.nccl);
    let nvls_tree_busbw =
        if multi_allreduce && nvls.is_some() && cfg.nccl.allows_algorithm(Algorithm::NvlsTree) {
            let tree = fabric.route_flows_algorithm(job, Algorithm::NvlsTree, cfg, 0)?;
            shared(fabric, &tree)
        } else {
            0.0
        };
    Ok(TunerInput {
        nvls,
        collnet,
        nvls_tree_busbw_gb_s: nvls_tree_busbw,
        ..input_for(&ring, ring_busbw, tree_busbw)
    })
}

/// The tuner's input from a routed Ring job and the bus bandwidths (GB/s) it achieves, e.g.
/// from a solve shared with other jobs. NVLS and CollNet are left out (`None`):
/// [`tuner_input_with`] adds them from the cluster, and NVLSTree's network side, which this
/// sets to the Tree's figure.
pub fn input_for(ring: &RoutedJob, ring_busbw_gb_s: f64, tree_busbw_gb_s: f64) -> TunerInput {
    TunerInput {
        collective: ring.collective,
        arch: ring.arch,
        n_ranks: ring.n_ranks,
        n_nodes: ring.n_nodes,
        channels: ring.channels,
        graph_channels: ring.graph_channels,
        ring_busbw_gb_s,
        tree_busbw_gb_s,
        nvls_tree_busbw_gb_s: tree_busbw_gb_s,
        nvls: None,
        collnet: None,
    }
}

/// nccl-tests' rows for `sizes` (bytes): the tuner's pick per size and what it predicts.
/// Sizes whose every estimate is unusable (no bandwidth) are left out.
pub fn sweep(input: &TunerInput, cfg: &RoutingConfig, sizes: &[u64]) -> Vec<SweepRow> {
    sizes
        .iter()
        .filter_map(|&size| {
            let (e, time_us) = nccl::choose(input, &cfg.nccl, size as f64)?;
            let algbw = if time_us > 0.0 {
                size as f64 / (time_us * 1000.0)
            } else {
                0.0
            };
            Some(SweepRow {
                size_bytes: size,
                algorithm: e.algorithm,
                protocol: e.protocol,
                time_us,
                algbw_gb_s: algbw,
                busbw_gb_s: algbw * input.collective.bus_factor(input.n_ranks),
            })
        })
        .collect()
}

/// A measured nccl-tests row next to railyard's prediction for the same size.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Comparison {
    /// Line of the measured row in the nccl-tests output.
    pub line: usize,
    /// Buffer size, bytes.
    pub size_bytes: u64,
    /// Measured bus bandwidth (out-of-place), GB/s.
    pub measured_busbw_gb_s: f64,
    /// Predicted bus bandwidth, GB/s.
    pub predicted_busbw_gb_s: f64,
    /// (predicted − measured) / measured; 0 when both are 0, infinite when only measured is 0.
    pub relative_error: f64,
    /// Algorithm and protocol NCCL's tuner would pick at this size.
    pub algorithm: Algorithm,
    /// The protocol.
    pub protocol: Protocol,
}

/// Compare measured rows (read by `formats::nccl_tests`) with the prediction for the same sizes,
/// in the measured rows' order (what `fabric compare` prints).
pub fn compare(
    input: &TunerInput,
    cfg: &RoutingConfig,
    measured: &[crate::Measured],
) -> Vec<Comparison> {
    measured
        .iter()
        .filter_map(|m| {
            let row = sweep(input, cfg, &[m.size_bytes]).into_iter().next()?;
            let got = m.out_of_place.busbw_gb_s;
            let relative_error = if got > 0.0 {
                (row.busbw_gb_s - got) / got
            } else if row.busbw_gb_s == 0.0 {
                0.0
            } else {
                f64::INFINITY
            };
            Some(Comparison {
                line: m.line,
                size_bytes: m.size_bytes,
                measured_busbw_gb_s: got,
                predicted_busbw_gb_s: row.busbw_gb_s,
                relative_error,
                algorithm: row.algorithm,
                protocol: row.protocol,
            })
        })
        .collect()
}

/// nccl-tests' default sweep sizes from `min` to `max` bytes, doubling (`-b min -e max -f 2`).
pub fn doubling_sizes(min: u64, max: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut s = min.max(1);
    while s <= max {
        out.push(s);
        match s.checked_mul(2) {
            Some(n) => s = n,
            None => break,
        }
    }
    out
}

/// A size as nccl-tests' `-b`/`-e` take it: a whole number of bytes with an optional `K`,
/// `M` or `G` suffix (powers of 1024, either case). `None` when malformed or above `u64`.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, shift) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 10),
        'm' | 'M' => (&t[..t.len() - 1], 20),
        'g' | 'G' => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_nccl_tests() {
        assert_eq!(parse_bytes("8"), Some(8));
        assert_eq!(parse_bytes("512M"), Some(512 << 20));
        assert_eq!(parse_bytes("8g"), Some(8 << 30));
        assert_eq!(parse_bytes("4K"), Some(4096));
        for bad in ["", "G", "1.5G", "-8", "8T", "99999999999999999999G"] {
            assert_eq!(parse_bytes(bad), None, "{bad}");
        }
    }

    #[test]
    fn doubling_sizes_are_nccl_tests_defaults() {
        assert_eq!(doubling_sizes(8, 64), vec![8, 16, 32, 64]);
        assert_eq!(doubling_sizes(3, 2), Vec::<u64>::new());
        assert_eq!(doubling_sizes(1 << 62, u64::MAX).len(), 2);
    }
}
