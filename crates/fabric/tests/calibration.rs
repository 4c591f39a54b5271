//! railyard's prediction against published nccl-tests results (`data/nccl-tests-published.csv`):
//! every `ok` row within ±10%, every `gap` row still outside (so closing a gap shows). No
//! factor is fitted per row: the only efficiencies are NCCL's own constants (per-channel NIC
//! speeds, NVLink per-link bandwidth, tuner factors; see `fabric::nccl`).
//!
//! Beyond those single figures, whole published sweeps (`tests/data/*.log`, nccl-tests' rows
//! with the source, hardware and NCCL version at the top) are predicted size by size, with the
//! error per size decade; each sweep's largest size must be within ±10%, the others are
//! reported whatever they are.
//!
//! `cargo test -p fabric --test calibration -- --nocapture` prints the tables as markdown.

use fabric::nccl::TunerInput;
use fabric::{
    doubling_sizes, parse_nccl_env, sweep, tuner_input, Collective, Fabric, JobTraffic, NcclConfig,
    Rank, RoutingConfig, RoutingMode,
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

/// The hardware of a published run: `nodes` hosts on a non-blocking rail-optimized leaf.
#[derive(Clone, Copy)]
struct Hardware {
    nodes: u32,
    gpus: u32,
    rails: u32,
    ports: u32,
    port_gbps: f64,
    nvlink_gbps: f64,
    domain_nodes: u32,
}

/// NCCL's tuner input for all GPUs of the hardware's hosts, adaptive routing, `nccl` settings.
fn tuner_for(
    name: &str,
    hw: Hardware,
    collective: Collective,
    nccl: NcclConfig,
) -> (TunerInput, RoutingConfig) {
    let spec = ClusterSpec {
        name: name.to_owned(),
        node: NodeSpec {
            gpus: hw.gpus,
            gpu_memory_gib: 80,
            rails: hw.rails,
            ports_per_rail: hw.ports,
            port_gbps: hw.port_gbps,
            nvlink_gbps: hw.nvlink_gbps,
            nvlink_domain_nodes: hw.domain_nodes,
            nvlink_domain_label: None,
            shape: None,
            name_prefix: "n".to_owned(),
        },
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: hw.nodes.max(hw.domain_nodes).max(2),
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![TierSpec {
                    label: "leaf".to_owned(),
                    value_prefix: "leaf-".to_owned(),
                    nodes_per_domain: hw.nodes.max(hw.domain_nodes).max(2),
                    latency_us: 2.0,
                    switches_per_domain: Some(hw.rails),
                    oversubscription: None,
                    sharp: false,
                }],
            }),
        },
    };
    let cluster = build_from_spec(&spec).expect("valid spec");
    let ranks: Vec<Rank> = (0..hw.nodes as usize)
        .flat_map(|n| {
            (0..hw.gpus).map(move |gpu| Rank {
                node: NodeId::from_index(n),
                gpu,
            })
        })
        .collect();
    let cfg = RoutingConfig {
        mode: RoutingMode::Adaptive,
        nccl,
        ..RoutingConfig::default()
    };
    let job = JobTraffic { ranks, collective };
    let mut fabric = Fabric::new(&cluster);
    let input = tuner_input(&mut fabric, &job, &cfg).expect("valid job");
    (input, cfg)
}

/// railyard's nccl-tests busbw for a row: the hardware on a non-blocking rail-optimized leaf,
/// all GPUs of `nodes` hosts, adaptive routing, NCCL's defaults (or NCCL_ALGO=Ring).
fn predict(r: &Row) -> (f64, String) {
    let hw = Hardware {
        nodes: r.nodes,
        gpus: r.gpus,
        rails: r.rails,
        ports: r.ports,
        port_gbps: r.port_gbps,
        nvlink_gbps: r.nvlink_gbps,
        domain_nodes: r.domain_nodes,
    };
    let nccl = if r.algo == "ring" {
        parse_nccl_env(["NCCL_ALGO=Ring"]).expect("valid")
    } else {
        parse_nccl_env([]).expect("valid")
    };
    let (input, cfg) = tuner_for(&r.id, hw, r.collective, nccl);
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

/// A published nccl-tests sweep (`tests/data/*.log`).
struct Sweep {
    file: &'static str,
    source: String,
    hardware: String,
    nccl_version: String,
    hw: Hardware,
    nccl: NcclConfig,
    /// (size, out-of-place time µs, out-of-place busbw GB/s).
    rows: Vec<(u64, f64, f64)>,
}

const SWEEPS: [(&str, &str); 3] = [
    (
        "nccl-tests-309-2x-hgx-h100.log",
        include_str!("data/nccl-tests-309-2x-hgx-h100.log"),
    ),
    (
        "nccl-tests-290-1x-h100.log",
        include_str!("data/nccl-tests-290-1x-h100.log"),
    ),
    (
        "oci-hpc-oke-2x-bm-gpu4-8.log",
        include_str!("data/oci-hpc-oke-2x-bm-gpu4-8.log"),
    ),
];

fn parse_sweep(file: &'static str, text: &str) -> Sweep {
    let mut header = std::collections::BTreeMap::new();
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("# ") {
            if let Some((k, v)) = rest.split_once(": ") {
                header.insert(k.to_owned(), v.to_owned());
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let col = |k: usize| -> f64 {
            f.get(k).and_then(|v| v.parse().ok()).unwrap_or_else(|| {
                panic!("{file}:{}: column {k} of an nccl-tests result row", i + 1)
            })
        };
        rows.push((col(0) as u64, col(5), col(7)));
    }
    let field = |k: &str| {
        header
            .get(k)
            .unwrap_or_else(|| panic!("{file}: no `# {k}:` line"))
            .clone()
    };
    let mut kv = std::collections::BTreeMap::new();
    for item in field("railyard").split_whitespace() {
        let (k, v) = item
            .split_once('=')
            .unwrap_or_else(|| panic!("{file}: railyard: expected key=value, got {item}"));
        kv.insert(k.to_owned(), v.to_owned());
    }
    let num = |k: &str| -> f64 {
        kv.get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{file}: railyard: {k} missing or not a number"))
    };
    let settings: Vec<String> = kv
        .get("nccl")
        .map(|v| v.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let nccl = parse_nccl_env(settings.iter().map(String::as_str))
        .unwrap_or_else(|e| panic!("{file}: railyard: nccl: {e}"));
    Sweep {
        file,
        source: field("source"),
        hardware: field("hardware"),
        nccl_version: field("nccl"),
        hw: Hardware {
            nodes: num("nodes") as u32,
            gpus: num("gpus") as u32,
            rails: num("rails") as u32,
            ports: num("ports") as u32,
            port_gbps: num("port_gbps"),
            nvlink_gbps: num("nvlink_gbps"),
            domain_nodes: num("domain_nodes") as u32,
        },
        nccl,
        rows,
    }
}

/// Size decade of a buffer: 1 B–9 B is 0, 10 B–99 B is 1, …
fn decade(size: u64) -> u32 {
    size.max(1).ilog10()
}

fn decade_name(d: u32) -> &'static str {
    [
        "1–9 B",
        "10–99 B",
        "100–999 B",
        "1–10 kB",
        "10–100 kB",
        "100 kB–1 MB",
        "1–10 MB",
        "10–100 MB",
        "100 MB–1 GB",
        "1–10 GB",
        "10–100 GB",
    ][d.min(10) as usize]
}

#[test]
fn sweeps_are_predicted_size_by_size() {
    let mut out = String::new();
    let mut misses = Vec::new();
    for (file, text) in SWEEPS {
        let s = parse_sweep(file, text);
        assert!(!s.rows.is_empty(), "{file}: no rows");
        let (input, cfg) = tuner_for(file, s.hw, Collective::AllReduce, s.nccl);
        out.push_str(&format!(
            "#### `{}`\n{} — {}; NCCL {}. railyard: {} channels ({} in the search graph).\n\n",
            s.file, s.hardware, s.source, s.nccl_version, input.channels, input.graph_channels
        ));
        out.push_str(
            "| size (B) | measured µs | measured busbw | predicted µs | predicted busbw | pick | error |\n|---|---|---|---|---|---|---|\n",
        );
        // Error = predicted busbw / measured − 1 = measured time / predicted time − 1.
        let mut by_decade: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
        for &(size, t_meas, bw_meas) in &s.rows {
            let p = sweep(&input, &cfg, &[size]).remove(0);
            let err = t_meas / p.time_us - 1.0;
            by_decade.entry(decade(size)).or_default().push(err);
            out.push_str(&format!(
                "| {size} | {t_meas} | {bw_meas:.2} | {:.1} | {:.2} | {}/{} | {:+.1}% |\n",
                p.time_us,
                p.busbw_gb_s,
                p.algorithm.name(),
                p.protocol.name(),
                err * 100.0
            ));
        }
        out.push_str("\n| size decade | rows | mean error | worst error |\n|---|---|---|---|\n");
        for (d, errs) in &by_decade {
            let mean = errs.iter().sum::<f64>() / errs.len() as f64;
            let worst = errs
                .iter()
                .copied()
                .fold(0.0f64, |a, e| if e.abs() > a.abs() { e } else { a });
            out.push_str(&format!(
                "| {} | {} | {:+.1}% | {:+.1}% |\n",
                decade_name(*d),
                errs.len(),
                mean * 100.0,
                worst * 100.0
            ));
        }
        out.push('\n');
        // The largest size (8 GiB, or the sweep's end) must be within ±10%.
        let &(size, t_meas, _) = s.rows.iter().max_by_key(|r| r.0).expect("rows");
        let p = sweep(&input, &cfg, &[size]).remove(0);
        let err = t_meas / p.time_us - 1.0;
        if err.abs() > 0.10 {
            misses.push(format!("{file}: {size} B off by {:+.1}%", err * 100.0));
        }
    }
    println!("{out}");
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}
