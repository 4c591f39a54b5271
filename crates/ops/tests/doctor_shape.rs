//! `doctor --shape`: a node's RDMA devices against the NCCL device list its shape's vendor
//! publishes.

use ops::doctor::{check_shape, NodeFacts, RdmaDevice, RdmaPort, Severity};

fn node(devices: &[(&str, &str)]) -> NodeFacts {
    NodeFacts {
        rdma: Some(
            devices
                .iter()
                .map(|(name, state)| RdmaDevice {
                    name: (*name).to_owned(),
                    ports: vec![RdmaPort {
                        port: "1".to_owned(),
                        state: Some((*state).to_owned()),
                        phys_state: None,
                        link_layer: Some("Ethernet".to_owned()),
                        netdevs: Vec::new(),
                    }],
                })
                .collect(),
        ),
        hostname: None,
        hosts: None,
        pci: Vec::new(),
        unreadable: Vec::new(),
        refused: Vec::new(),
    }
}

fn h100(except: &str, down: &str) -> Vec<(String, &'static str)> {
    (0..18)
        .map(|i| format!("mlx5_{i}"))
        .filter(|n| n != except)
        .map(|n| {
            let state = if n == down { "DOWN" } else { "ACTIVE" };
            (n, state)
        })
        .collect()
}

fn facts(list: &[(String, &'static str)]) -> NodeFacts {
    let refs: Vec<(&str, &str)> = list.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    node(&refs)
}

#[test]
fn a_full_h100_passes_and_names_its_front_end_nics() {
    let f = check_shape(&facts(&h100("", "")), "BM.GPU.H100.8");
    assert_eq!(f.len(), 2);
    assert!(f.iter().all(|x| x.severity == Severity::Info));
    assert_eq!(f[1].seen, "not for NCCL: mlx5_2, mlx5_11");
}

#[test]
fn a_missing_or_down_listed_device_fails() {
    let f = check_shape(&facts(&h100("mlx5_16", "mlx5_3")), "BM.GPU.H100.8");
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(f[0].seen, "missing: mlx5_16; not ACTIVE: mlx5_3");
    // A front-end NIC being down is no fault of NCCL's.
    let f = check_shape(&facts(&h100("", "mlx5_2")), "BM.GPU.H100.8");
    assert_eq!(f[0].severity, Severity::Info);
}

#[test]
fn an_unknown_shape_is_a_warning_not_a_pass() {
    let f = check_shape(&facts(&h100("", "")), "BM.GPU.GB300.4");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warning);
}
