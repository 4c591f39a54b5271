//! NCCL settings per host shape, as the vendor publishes them: which RDMA devices NCCL should
//! use (leaving out front-end NICs), the RoCE GID index and traffic class, timeouts, QPs per
//! connection and the bootstrap interface. `launch` writes them; `doctor` checks a node's RDMA
//! device names against them.
//!
//! Every row cites the sample script it comes from (oracle-quickstart/oci-hpc, the OCI HPC/GPU
//! quickstart, at the commit named). Values are facts of those scripts; nothing is tuned here.

/// The NCCL environment published for one shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeNccl {
    /// Instance type (`node.kubernetes.io/instance-type`).
    pub shape: &'static str,
    /// The RDMA devices NCCL uses, in the published order (`NCCL_IB_HCA`, written with `=`).
    pub hcas: &'static [&'static str],
    /// Other variables, in the order written.
    pub env: &'static [(&'static str, &'static str)],
    /// Where the row comes from.
    pub source: &'static str,
}

const OCI_A100_HCAS: &[&str] = &[
    "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_14",
    "mlx5_15", "mlx5_16", "mlx5_17", "mlx5_9", "mlx5_10", "mlx5_11", "mlx5_12",
];

const OCI_ALLREDUCE_SH: &str =
    "oracle-quickstart/oci-hpc samples/gpu/nccl_run_allreduce.sh (commit 067a20d8)";

const OCI_A100_ENV: &[(&str, &str)] = &[
    ("NCCL_IB_GID_INDEX", "3"),
    ("NCCL_IB_TC", "41"),
    ("NCCL_IB_SL", "0"),
    ("NCCL_IB_QPS_PER_CONNECTION", "4"),
];

const OCI_H200_B200_HCAS: &[&str] = &[
    "mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11",
];

const OCI_H200_B200_ENV: &[(&str, &str)] = &[
    ("NCCL_IB_GID_INDEX", "3"),
    ("NCCL_IB_TC", "41"),
    ("NCCL_IB_SL", "0"),
    ("NCCL_IB_TIMEOUT", "22"),
    ("NCCL_IB_QPS_PER_CONNECTION", "1"),
    ("NCCL_IB_SPLIT_DATA_ON_QPS", "0"),
    ("NCCL_SOCKET_IFNAME", "eth0"),
    ("NCCL_CUMEM_ENABLE", "0"),
];

const OCI_H200_B200_SOURCE: &str = "oracle-quickstart/oci-hpc samples/gpu/nccl_run_allreduce_containers_H100_H200.sbatch (commit 420fc610)";

/// The published rows. Shapes railyard knows but the samples do not cover (BM.GPU.GB300.4) have
/// no row: `launch` then says it fell back to generic settings.
pub const SHAPE_NCCL: &[ShapeNccl] = &[
    ShapeNccl {
        shape: "BM.GPU4.8",
        hcas: &[
            "mlx5_0", "mlx5_2", "mlx5_6", "mlx5_8", "mlx5_10", "mlx5_12", "mlx5_14", "mlx5_16",
            "mlx5_1", "mlx5_3", "mlx5_7", "mlx5_9", "mlx5_11", "mlx5_13", "mlx5_15", "mlx5_17",
        ],
        env: OCI_A100_ENV,
        source: OCI_ALLREDUCE_SH,
    },
    ShapeNccl {
        shape: "BM.GPU.A100-v2.8",
        hcas: OCI_A100_HCAS,
        env: OCI_A100_ENV,
        source: OCI_ALLREDUCE_SH,
    },
    ShapeNccl {
        shape: "BM.GPU.B4.8",
        hcas: OCI_A100_HCAS,
        env: OCI_A100_ENV,
        source: OCI_ALLREDUCE_SH,
    },
    ShapeNccl {
        shape: "BM.GPU.H100.8",
        // mlx5_2 and mlx5_11 are the front-end (VCN) NICs: not for NCCL.
        hcas: &[
            "mlx5_0", "mlx5_1", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8",
            "mlx5_9", "mlx5_10", "mlx5_12", "mlx5_13", "mlx5_14", "mlx5_15", "mlx5_16", "mlx5_17",
        ],
        env: &[
            ("NCCL_IB_GID_INDEX", "3"),
            ("NCCL_IB_TC", "41"),
            ("NCCL_IB_SL", "0"),
            ("NCCL_IB_TIMEOUT", "22"),
            ("NCCL_IB_QPS_PER_CONNECTION", "16"),
            ("NCCL_IB_SPLIT_DATA_ON_QPS", "0"),
            ("NCCL_CROSS_NIC", "1"),
            ("NCCL_SOCKET_IFNAME", "eth0"),
            ("NCCL_CUMEM_ENABLE", "0"),
        ],
        source: "oracle-quickstart/oci-hpc samples/gpu/nccl_run_allreduce_H100.sh (commit 52582445)",
    },
    ShapeNccl {
        shape: "BM.GPU.H200.8",
        hcas: OCI_H200_B200_HCAS,
        env: OCI_H200_B200_ENV,
        source: OCI_H200_B200_SOURCE,
    },
    ShapeNccl {
        shape: "BM.GPU.B200.8",
        hcas: OCI_H200_B200_HCAS,
        env: OCI_H200_B200_ENV,
        source: OCI_H200_B200_SOURCE,
    },
    ShapeNccl {
        shape: "BM.GPU.GB200.4",
        hcas: &["mlx5_0", "mlx5_1", "mlx5_3", "mlx5_4"],
        env: &[
            ("NCCL_SOCKET_IFNAME", "eth0"),
            ("NCCL_MNNVL_ENABLE", "1"),
            ("NCCL_CUMEM_ENABLE", "1"),
            ("NCCL_NVLS_ENABLE", "1"),
            ("NCCL_NET_GDR_C2C", "1"),
        ],
        source: "oracle-quickstart/oci-hpc samples/gpu/nccl_run_allreduce_GB200.sbatch (commit b0ad2024)",
    },
];

/// The published row for a shape.
pub fn for_shape(shape: &str) -> Option<&'static ShapeNccl> {
    SHAPE_NCCL.iter().find(|r| r.shape == shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_shape_but_gb300_has_a_row_and_rows_are_consistent() {
        for s in topology::SHAPES {
            let row = for_shape(s.name);
            if s.name == "BM.GPU.GB300.4" {
                assert!(row.is_none());
                continue;
            }
            let row = row.unwrap_or_else(|| panic!("{}", s.name));
            // One RDMA device per NIC port the shape has for the RDMA fabric; BM.GPU4.8's
            // 8 × 200G adapters show up as 16 devices (two 100G ports each) in OCI's list.
            let ports = s.nics.rails * s.nics.ports_per_rail;
            let expected = if s.name == "BM.GPU4.8" {
                2 * ports
            } else {
                ports
            };
            assert_eq!(row.hcas.len() as u32, expected, "{}", s.name);
            let mut seen = std::collections::BTreeSet::new();
            assert!(
                row.hcas.iter().all(|h| seen.insert(*h)),
                "{}: duplicate",
                s.name
            );
            assert!(row.source.starts_with("oracle-quickstart/oci-hpc "));
        }
    }

    #[test]
    fn h100_leaves_out_the_front_end_nics() {
        let row = for_shape("BM.GPU.H100.8").unwrap();
        assert!(!row.hcas.contains(&"mlx5_2") && !row.hcas.contains(&"mlx5_11"));
        assert!(row.hcas.contains(&"mlx5_16") && row.hcas.contains(&"mlx5_17"));
        let env: std::collections::BTreeMap<_, _> = row.env.iter().copied().collect();
        assert_eq!(env["NCCL_IB_GID_INDEX"], "3");
        assert_eq!(env["NCCL_IB_TC"], "41");
        assert_eq!(env["NCCL_IB_TIMEOUT"], "22");
    }
}
