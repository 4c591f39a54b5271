//! railyard's prediction against published nccl-tests results (`data/nccl-tests-published.csv`):
//! every `ok` row within ±10%, every `gap` row still outside (so closing a gap shows). No
//! factor is fitted per row: the only efficiencies are NCCL's own constants (per-channel NIC
//! speeds, NVLink per-link bandwidth, tuner factors; see `fabric::nccl`).
//!
//! `cargo test -p fabric --test calibration -- --nocapture` prints the table as markdown.

use fabric::{
    doubling_sizes, parse_nccl_env, sweep, tuner_input, Collective, Fabric, JobTraffic, Rank,
    RoutingConfig, RoutingMode,
};
use topology::{build_from_spec, ClosSpec, ClusterSpec, FabricSpec, NodeId, NodeSpec, TierSpec};

const DATA: &str = include_str!("../data/nccl-tests-published.csv");

struct Row {
    id: String,
    nodes: u32,
    gpus: u32,
    rails: u32,
    ports: u32,
    port_gbps: f64,
    nvlink_gbps: f64,
    domain_nodes: u32,
    collective: Collective,
    algo: String,
    size: u64,
    measured: f64,
    ok: bool,
    note: String,
    source: String,
}

fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    let mut header = true;
    for (i, line) in DATA.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if header {
            header = false;
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 15, "line {}: {line}", i + 1);
        let num = |k: usize| -> f64 {
            f[k].parse()
                .unwrap_or_else(|_| panic!("line {}: field {k}", i + 1))
        };
        out.push(Row {
            id: f[0].to_owned(),
            nodes: num(1) as u32,
            gpus: num(2) as u32,
            rails: num(3) as u32,
            ports: num(4) as u32,
            port_gbps: num(5),
            nvlink_gbps: num(6),
            domain_nodes: num(7) as u32,
            collective: Collective::from_name(f[8]).expect("collective"),
            algo: f[9].to_owned(),
            size: f[10].parse().expect("size"),
            measured: num(11),
            ok: match f[12] {
                "ok" => true,
                "gap" => false,
                other => panic!("line {}: status {other}", i + 1),
            },
            note: f[13].to_owned(),
            source: f[14].to_owned(),
        });
    }
    out
}

/// railyard's nccl-tests busbw for a row: the hardware on a non-blocking rail-optimized leaf,
/// all GPUs of `nodes` hosts, adaptive routing, NCCL's defaults (or NCCL_ALGO=Ring).
fn predict(r: &Row) -> (f64, String) {
    let spec = ClusterSpec {
        name: r.id.clone(),
        node: NodeSpec {
            gpus: r.gpus,
            gpu_memory_gib: 80,
            rails: r.rails,
            ports_per_rail: r.ports,
            port_gbps: r.port_gbps,
            nvlink_gbps: r.nvlink_gbps,
            nvlink_domain_nodes: r.domain_nodes,
            shape: None,
            name_prefix: "n".to_owned(),
        },
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: r.nodes.max(r.domain_nodes).max(2),
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![TierSpec {
                    label: "leaf".to_owned(),
                    value_prefix: "leaf-".to_owned(),
                    nodes_per_domain: r.nodes.max(r.domain_nodes).max(2),
                    latency_us: 2.0,
                    switches_per_domain: Some(r.rails),
                    oversubscription: None,
                    sharp: false,
                }],
            }),
        },
    };
    let cluster = build_from_spec(&spec).expect("valid spec");
    let ranks: Vec<Rank> = (0..r.nodes as usize)
        .flat_map(|n| {
            (0..r.gpus).map(move |gpu| Rank {
                node: NodeId::from_index(n),
                gpu,
            })
        })
        .collect();
    let nccl = if r.algo == "ring" {
        parse_nccl_env(["NCCL_ALGO=Ring"]).expect("valid")
    } else {
        parse_nccl_env([]).expect("valid")
    };
    let cfg = RoutingConfig {
        mode: RoutingMode::Adaptive,
        nccl,
        ..RoutingConfig::default()
    };
    let job = JobTraffic {
        ranks,
        collective: r.collective,
    };
    let mut fabric = Fabric::new(&cluster);
    let input = tuner_input(&mut fabric, &job, &cfg).expect("valid job");
    let rows = sweep(&input, &cfg, &doubling_sizes(r.size, r.size));
    let row = &rows[0];
    (
        row.busbw_gb_s,
        format!("{}/{}", row.algorithm.name(), row.protocol.name()),
    )
}

#[test]
fn predictions_are_within_ten_percent_of_published_nccl_tests() {
    let mut table = String::from(
        "| configuration | collective | size | measured GB/s | predicted GB/s | error | status | source |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut misses = Vec::new();
    for r in rows() {
        let (pred, pick) = predict(&r);
        let err = (pred - r.measured) / r.measured;
        table.push_str(&format!(
            "| {} ({}) | {} ({}) | {} MiB | {:.1} | {:.1} | {:+.1}% | {} | {} |\n",
            r.id,
            r.note,
            r.collective.name(),
            pick,
            r.size >> 20,
            r.measured,
            pred,
            err * 100.0,
            if r.ok { "ok" } else { "known gap" },
            r.source
        ));
        if r.ok != (err.abs() <= 0.10) {
            misses.push(format!(
                "{}: measured {} predicted {pred:.1} ({:+.1}%)",
                r.id,
                r.measured,
                err * 100.0
            ));
        }
    }
    println!("{table}");
    assert!(
        misses.is_empty(),
        "rows off their status:\n{}",
        misses.join("\n")
    );
}
