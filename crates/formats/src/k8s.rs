//! Kubernetes formats: NodeList / Node streams in, Kueue and KAI Topology in and out, node
//! labels and NodeLists out.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use topology::{
    assemble, known_shape, Cluster, FabricParams, NicSpec, NodeRecord, Taint, TaintEffect,
    TierParams, HOSTNAME_LABEL,
};

use crate::error::FormatError;
use crate::input::{parse_documents, parse_typed, read_text};
use crate::names::shell_quote;

/// The label carrying a node's instance type.
pub const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
/// The label Topograph sets to a node's NVLink domain.
pub const NVLINK_DOMAIN_LABEL: &str = "accelerator.topograph.run/domain";
/// The label NVIDIA's GPU feature discovery sets to a node's NVLink clique.
pub const GPU_CLIQUE_LABEL: &str = "nvidia.com/gpu.clique";
/// Topograph's switch-tier labels are this prefix followed by the tier (0 = leaf).
pub const TOPOGRAPH_TIER_PREFIX: &str = "fabric.topograph.run/tier-";
/// OCI's RDMA locality labels, top first.
pub const OCI_LEVELS: [&str; 3] = [
    "oci.oraclecloud.com/rdma.hpc_island_id",
    "oci.oraclecloud.com/rdma.network_block_id",
    "oci.oraclecloud.com/rdma.local_block_id",
];
/// Tier latencies assumed when nothing says otherwise: OCI's Tier-0/1/2 figures (2, 5, 8 µs),
/// then +3 µs per further tier.
const DEFAULT_TIER_LATENCY_US: [f64; 3] = [2.0, 5.0, 8.0];

/// A known node-label vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelPreset {
    /// `oci.oraclecloud.com/rdma.hpc_island_id` → `network_block_id` → `local_block_id` → hostname.
    Oci,
    /// `fabric.topograph.run/tier-N`, highest N first, then hostname.
    Topograph,
}

/// A loaded cluster and the notes about facts that had to be inferred.
#[derive(Debug)]
pub struct LoadedCluster {
    /// The cluster.
    pub cluster: Cluster,
    /// What was detected or inferred, for the user (the CLI prints them on stderr).
    pub notes: Vec<String>,
}

/// Options for importing a NodeList.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// A Kueue or KAI Topology file.
    pub topology: Option<PathBuf>,
    /// Level labels, top first.
    pub levels: Vec<String>,
    /// A label vocabulary.
    pub label_preset: Option<LabelPreset>,
    /// Shape for nodes without a known instance type.
    pub shape: Option<String>,
    /// Overlay file.
    pub overlay: Option<PathBuf>,
}

/// Hardware and fabric facts Node objects do not carry. Every field is optional.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Overlay {
    /// Shape for nodes without a known instance type.
    pub shape: Option<String>,
    /// Rails per node (overrides the shape).
    pub rails: Option<u32>,
    /// Ports per rail.
    pub ports_per_rail: Option<u32>,
    /// Port speed, Gb/s.
    pub port_gbps: Option<f64>,
    /// Memory per GPU, GiB.
    pub gpu_memory_gib: Option<u32>,
    /// NVLink bandwidth per GPU, Gb/s.
    pub nvlink_gbps: Option<f64>,
    /// Worst-case latency of each switch tier, leaf first, µs.
    pub tier_latency_us: Option<Vec<f64>>,
    /// Oversubscription into each switch tier, leaf first.
    pub oversubscription: Option<Vec<f64>>,
    /// NIC `r` of each host goes to leaf `r` of its block.
    pub rail_optimized: Option<bool>,
}

/// Check the overlay's node facts against the bounds the cluster builder applies, so a bad
/// value is blamed on the overlay once rather than on every node of the NodeList.
fn check_overlay(overlay_file: &str, o: &Overlay) -> Result<(), FormatError> {
    let bad = |m: String| Err(FormatError::input(overlay_file, m));
    if let Some(r) = o.rails {
        if !(1..=topology::MAX_RAILS).contains(&r) {
            return bad(format!(
                "rails: expected 1..={}, got {r}",
                topology::MAX_RAILS
            ));
        }
    }
    if let Some(p) = o.ports_per_rail {
        if !(1..=topology::MAX_PORTS_PER_RAIL).contains(&p) {
            return bad(format!(
                "ports_per_rail: expected 1..={}, got {p}",
                topology::MAX_PORTS_PER_RAIL
            ));
        }
    }
    if let Some(g) = o.port_gbps {
        if !(g.is_finite() && g > 0.0 && g <= 1.0e5) {
            return bad(format!(
                "port_gbps: expected a speed in (0, 100000] Gb/s, got {g}"
            ));
        }
    }
    if let Some(m) = o.gpu_memory_gib {
        if !(1..=topology::MAX_GPU_MEMORY_GIB).contains(&m) {
            return bad(format!(
                "gpu_memory_gib: expected 1..={} GiB per GPU, got {m}",
                topology::MAX_GPU_MEMORY_GIB
            ));
        }
    }
    if let Some(v) = o.nvlink_gbps {
        if !(v.is_finite() && v > 0.0 && v <= 1.0e6) {
            return bad(format!(
                "nvlink_gbps: expected a speed in (0, 1000000] Gb/s, got {v} (0 would mean no NVLink, which railyard does not model: give the GPU-to-GPU bandwidth inside a host, e.g. 256 for PCIe 4.0 x16)"
            ));
        }
    }
    Ok(())
}

/// NVLink per GPU assumed for nodes of unknown shape: the slowest NVLink of a known shape
/// (A100, BM.GPU4.8), said in a note. Never 0, which the fabric model would take as unlimited.
pub const ASSUMED_NVLINK_GBPS: f64 = 2400.0;

/// The name errors about overlay facts carry: the overlay file, or the NodeList when none.
fn overlay_name(file: &str, options: &ImportOptions) -> String {
    options
        .overlay
        .as_ref()
        .map_or_else(|| file.to_owned(), |p| p.display().to_string())
}

/// Turn parsed NodeList / Node documents into a cluster.
pub fn import_nodes(
    file: &str,
    docs: &[Value],
    options: &ImportOptions,
) -> Result<LoadedCluster, FormatError> {
    let overlay_file = overlay_name(file, options);
    let overlay: Overlay = match &options.overlay {
        Some(p) => parse_typed(&overlay_file, &read_text(p)?)?,
        None => Overlay::default(),
    };
    import_nodes_with_overlay(file, docs, options, &overlay)
}

/// [`import_nodes`] with the overlay already read (`options.overlay` only names it in errors).
pub fn import_nodes_with_overlay(
    file: &str,
    docs: &[Value],
    options: &ImportOptions,
    overlay: &Overlay,
) -> Result<LoadedCluster, FormatError> {
    let mut notes = Vec::new();
    let overlay_file = overlay_name(file, options);
    if let Some(o) = &overlay.oversubscription {
        if let Some((t, x)) = o.iter().enumerate().find(|(_, x)| {
            !(x.is_finite() && (topology::MIN_OVERSUBSCRIPTION..=1000.0).contains(*x))
        }) {
            return Err(FormatError::input(
                &overlay_file,
                format!(
                    "oversubscription[{t}]: expected a ratio in {}..=1000 (below 1: more up-link than down-link capacity), got {}",
                    topology::MIN_OVERSUBSCRIPTION,
                    crate::show_number(*x)
                ),
            ));
        }
    }
    let objects = node_objects(file, docs)?;
    if objects.len() > topology::MAX_NODES {
        return Err(FormatError::input(
            file,
            format!(
                "{} nodes is more than the limit of {}",
                objects.len(),
                topology::MAX_NODES
            ),
        ));
    }
    let fallback_shape = options.shape.clone().or(overlay.shape.clone());
    if let Some(s) = &fallback_shape {
        if known_shape(s).is_none() {
            let known: Vec<&str> = topology::SHAPES.iter().map(|s| s.name).collect();
            // Blame where the name came from: the flag wins over the overlay.
            let (source, field) = if options.shape.is_some() {
                ("--shape".to_owned(), "")
            } else {
                (overlay_file.clone(), "shape: ")
            };
            return Err(FormatError::input(
                source,
                format!(
                    "{field}unknown shape `{}`; expected one of {}",
                    crate::excerpt(s),
                    known.join(", ")
                ),
            ));
        }
    }
    check_overlay(&overlay_file, overlay)?;
    let mut records = Vec::with_capacity(objects.len());
    let mut guessed = 0usize;
    let mut nvlink_guessed = 0usize;
    let mut no_condition = 0usize;
    for (i, obj) in objects.iter().enumerate() {
        let (record, facts) = node_record(file, i, obj, fallback_shape.as_deref(), overlay)?;
        guessed += usize::from(facts.nics_guessed);
        nvlink_guessed += usize::from(facts.nvlink_guessed);
        no_condition += usize::from(facts.no_ready_condition);
        records.push(record);
    }
    if guessed > 0 {
        notes.push(format!(
            "{guessed} node(s) have no known instance type: assumed one 100 Gb/s rail per GPU (pass --shape or --overlay to say otherwise)"
        ));
    }
    if nvlink_guessed > 0 {
        notes.push(format!(
            "{nvlink_guessed} node(s) of unknown shape: assumed NVLink {ASSUMED_NVLINK_GBPS} Gb/s per GPU, 80 GiB per GPU (the overlay's nvlink_gbps and gpu_memory_gib say otherwise)"
        ));
    }
    if no_condition > 0 {
        notes.push(format!(
            "{no_condition} node(s) carry no Ready condition: treated as Ready"
        ));
    }

    let mut aliases = Vec::new();
    let levels = choose_levels(file, &records, options, &mut notes, &mut aliases)?;
    // A level of NVLink domain labels is the cluster's NVLink level (no switch tier): the nodes'
    // NVLink domains are read from that label, so that `assemble` sees its values as theirs.
    let nvlink_label = [NVLINK_DOMAIN_LABEL, GPU_CLIQUE_LABEL]
        .into_iter()
        .find(|l| levels.iter().any(|level| level == l));
    if let Some(label) = nvlink_label {
        for r in &mut records {
            if let Some(v) = r.labels.get(label) {
                r.nvlink_domain = Some(v.clone());
            }
        }
    }
    let n_switch_levels = levels
        .iter()
        .filter(|l| *l != HOSTNAME_LABEL && Some(l.as_str()) != nvlink_label)
        .count();
    let latencies = match &overlay.tier_latency_us {
        Some(l) => l.clone(),
        None => {
            notes.push(format!(
                "tier latencies not given: assumed OCI's {} µs (leaf first), +3 µs per further tier",
                DEFAULT_TIER_LATENCY_US.map(|x| x.to_string()).join(" / ")
            ));
            default_latencies(n_switch_levels + 1)
        }
    };
    let rail_optimized = overlay
        .rail_optimized
        .unwrap_or_else(|| records.iter().any(|r| r.nics.rails > 1));
    if overlay.rail_optimized.is_none() && rail_optimized {
        notes.push("multi-rail nodes: assumed a rail-optimized leaf tier".to_owned());
    }
    let tiers = latencies
        .iter()
        .enumerate()
        .map(|(t, &us)| {
            Ok(TierParams {
                latency_ns: check_positive(&overlay_file, &format!("tier_latency_us[{t}]"), us)?
                    as u64,
                oversubscription: match overlay.oversubscription.as_ref().and_then(|o| o.get(t)) {
                    Some(&o) => o,
                    None => 1.0,
                },
                switches_per_group: None,
            })
        })
        .collect::<Result<Vec<_>, FormatError>>()?;
    let params = FabricParams {
        levels,
        host_label: HOSTNAME_LABEL.to_owned(),
        tiers,
        rail_optimized,
    };
    let name = std::path::Path::new(file).file_stem().map_or_else(
        || "cluster".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut cluster = assemble(&name, records, &params).map_err(|e| FormatError::input(file, e))?;
    for (level, alias) in cluster.levels.iter_mut().zip(aliases) {
        level.alias = alias;
    }
    // Entries past the cluster's tiers would be dropped without a word: refuse them.
    let tiers = cluster.tiers.len();
    for (field, given) in [
        (
            "tier_latency_us",
            overlay.tier_latency_us.as_ref().map(Vec::len),
        ),
        (
            "oversubscription",
            overlay.oversubscription.as_ref().map(Vec::len),
        ),
    ] {
        if let Some(n) = given.filter(|&n| n > tiers) {
            return Err(FormatError::input(
                &overlay_file,
                format!(
                    "{field}: {n} entries, but the cluster has {tiers} switch tier{} (leaf first); give one per tier",
                    if tiers == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    Ok(LoadedCluster { cluster, notes })
}

fn check_positive(file: &str, what: &str, us: f64) -> Result<f64, FormatError> {
    let min = topology::MIN_LATENCY_US;
    if us.is_finite() && (min..=1.0e6).contains(&us) {
        Ok(us * 1000.0)
    } else {
        Err(FormatError::input(
            file,
            format!(
                "{what}: expected a latency of {min}..=1000000 µs (1 ns is the resolution), got {}",
                crate::show_number(us)
            ),
        ))
    }
}

fn default_latencies(n: usize) -> Vec<f64> {
    (0..n.max(1))
        .map(|t| {
            DEFAULT_TIER_LATENCY_US
                .get(t)
                .copied()
                .unwrap_or(8.0 + 3.0 * (t as f64 - 2.0))
        })
        .collect()
}

/// The Node objects of a NodeList, a List of Nodes, or a stream of Node documents.
fn node_objects<'a>(file: &str, docs: &'a [Value]) -> Result<Vec<&'a Value>, FormatError> {
    let mut out = Vec::new();
    for (d, doc) in docs.iter().enumerate() {
        match doc.get("kind").and_then(Value::as_str) {
            Some("NodeList" | "List") => {
                let items = doc.get("items").and_then(Value::as_array).ok_or_else(|| {
                    FormatError::input(
                        file,
                        format!("document {}: `items` must be a list of Node objects", d + 1),
                    )
                })?;
                for (i, item) in items.iter().enumerate() {
                    match item.get("kind").and_then(Value::as_str) {
                        Some("Node") | None => out.push(item),
                        Some(k) => {
                            return Err(FormatError::input(
                                file,
                                format!("items[{i}]: expected kind Node, got {k}"),
                            ))
                        }
                    }
                }
            }
            Some("Node") => out.push(doc),
            Some(k) => {
                return Err(FormatError::input(
                    file,
                    format!(
                        "document {}: expected a Node or NodeList, got kind {k}",
                        d + 1
                    ),
                ))
            }
            None => {
                return Err(FormatError::input(
                    file,
                    format!(
                        "document {}: missing `kind` (expected Node or NodeList)",
                        d + 1
                    ),
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(FormatError::input(file, "no Node objects found"));
    }
    Ok(out)
}

struct Facts {
    nics_guessed: bool,
    /// NVLink speed assumed ([`ASSUMED_NVLINK_GBPS`]).
    nvlink_guessed: bool,
    no_ready_condition: bool,
}

fn node_record(
    file: &str,
    index: usize,
    obj: &Value,
    fallback_shape: Option<&str>,
    overlay: &Overlay,
) -> Result<(NodeRecord, Facts), FormatError> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| FormatError::input(file, format!("node {index}: missing metadata.name")))?
        .to_owned();
    let at = |msg: String| FormatError::input(file, format!("node \"{name}\": {msg}"));
    let mut labels = BTreeMap::new();
    if let Some(l) = obj.pointer("/metadata/labels") {
        let map = l
            .as_object()
            .ok_or_else(|| at("metadata.labels: expected a map of strings".to_owned()))?;
        for (k, v) in map {
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return Err(at(format!("metadata.labels[\"{k}\"]: expected a string"))),
            };
            labels.insert(k.clone(), v);
        }
    }
    let gpus = match obj.pointer("/status/allocatable/nvidia.com~1gpu") {
        None | Some(Value::Null) => 0,
        Some(v) => parse_count(v)
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| {
                at(format!(
                "status.allocatable[\"nvidia.com/gpu\"]: expected a whole number of GPUs, got {v}"
            ))
            })?,
    };
    if gpus > topology::MAX_GPUS_PER_NODE {
        return Err(at(format!(
            "status.allocatable[\"nvidia.com/gpu\"]: {gpus} GPUs is more than the limit of {}",
            topology::MAX_GPUS_PER_NODE
        )));
    }
    let unschedulable = match obj.pointer("/spec/unschedulable") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(at(format!(
                "spec.unschedulable: expected true or false, got {v}"
            )))
        }
    };
    let mut taints = Vec::new();
    if let Some(ts) = obj.pointer("/spec/taints").filter(|v| !v.is_null()) {
        let ts = ts
            .as_array()
            .ok_or_else(|| at("spec.taints: expected a list".to_owned()))?;
        for (i, t) in ts.iter().enumerate() {
            let key = t
                .get("key")
                .and_then(Value::as_str)
                .ok_or_else(|| at(format!("spec.taints[{i}].key: expected a string")))?;
            let effect = match t.get("effect").and_then(Value::as_str) {
                Some("NoSchedule") => TaintEffect::NoSchedule,
                Some("PreferNoSchedule") => TaintEffect::PreferNoSchedule,
                Some("NoExecute") => TaintEffect::NoExecute,
                other => {
                    return Err(at(format!(
                        "spec.taints[{i}].effect: expected NoSchedule, PreferNoSchedule or NoExecute, got {}",
                        other.unwrap_or("nothing")
                    )))
                }
            };
            taints.push(Taint {
                key: key.to_owned(),
                value: t
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                effect,
            });
        }
    }
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
    let ready_condition = conditions.and_then(|cs| {
        cs.iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
    });
    let ready =
        ready_condition.is_none_or(|c| c.get("status").and_then(Value::as_str) == Some("True"));
    let internal_ip = match obj
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .position(|x| x.get("type").and_then(Value::as_str) == Some("InternalIP"))
                .map(|k| (k, &a[k]))
        }) {
        None => None,
        Some((k, x)) => {
            let address = x.get("address").and_then(Value::as_str).unwrap_or("");
            // Launch files put this address in front of every other node: refuse a typo here
            // rather than hand torchrun an endpoint nobody can reach.
            if address.parse::<std::net::IpAddr>().is_err() {
                return Err(at(format!(
                    "status.addresses[{k}].address: expected an IP address for the InternalIP, got \"{address}\""
                )));
            }
            Some(address.to_owned())
        }
    };

    let instance = labels
        .get(INSTANCE_TYPE_LABEL)
        .or_else(|| labels.get("beta.kubernetes.io/instance-type"))
        .and_then(|s| known_shape(s));
    let shape = instance.or_else(|| fallback_shape.and_then(known_shape));
    if let Some(sh) = shape {
        if gpus > sh.gpus {
            return Err(at(format!(
                "status.allocatable[\"nvidia.com/gpu\"]: {gpus} GPUs, but a {} has {}",
                sh.name, sh.gpus
            )));
        }
    }
    let nics_guessed = shape.is_none() && overlay.rails.is_none();
    if nics_guessed && gpus > topology::MAX_RAILS {
        return Err(at(format!(
            "{gpus} GPUs and no known instance type: railyard would assume one rail per GPU, more than {} rails; give --shape or an overlay with rails",
            topology::MAX_RAILS
        )));
    }
    let base_nics = shape.map_or(
        NicSpec {
            rails: gpus.max(1),
            ports_per_rail: 1,
            port_gbps: 100.0,
        },
        |s| s.nics,
    );
    let nics = NicSpec {
        rails: overlay.rails.unwrap_or(base_nics.rails),
        ports_per_rail: overlay.ports_per_rail.unwrap_or(base_nics.ports_per_rail),
        port_gbps: overlay.port_gbps.unwrap_or(base_nics.port_gbps),
    };
    let nvlink_domain = labels
        .get(NVLINK_DOMAIN_LABEL)
        .or_else(|| labels.get(GPU_CLIQUE_LABEL))
        .cloned();
    let label_memory = labels
        .get(GPU_MEMORY_LABEL)
        .map(|v| {
            gpu_memory_from_label(v).ok_or_else(|| {
                at(format!(
                    "metadata.labels[\"{GPU_MEMORY_LABEL}\"]: expected MiB per GPU as a positive integer (as GPU feature discovery publishes it), got \"{v}\""
                ))
            })
        })
        .transpose()?;
    let record = NodeRecord {
        name: name.clone(),
        gpus,
        gpu_memory_gib: overlay
            .gpu_memory_gib
            .or(label_memory)
            .or(shape.map(|s| s.gpu_memory_gib))
            .unwrap_or(80),
        nics,
        nvlink_gbps: overlay
            .nvlink_gbps
            .or(shape.map(|s| s.nvlink_gbps))
            .unwrap_or(if gpus > 1 { ASSUMED_NVLINK_GBPS } else { 0.0 }),
        nvlink_domain,
        labels,
        taints,
        ready,
        unschedulable,
        internal_ip,
        allocatable: allocatable(obj).map_err(at)?,
    };
    Ok((
        record,
        Facts {
            nics_guessed,
            nvlink_guessed: shape.is_none() && overlay.nvlink_gbps.is_none() && gpus > 1,
            no_ready_condition: ready_condition.is_none(),
        },
    ))
}

/// A Kubernetes quantity that must be a whole count: `8`, `"8"`.
/// A Kubernetes resource quantity in the unit Kueue counts it in: millicores for `cpu`, else the
/// plain amount (bytes for memory and storage, a count for `pods` and extended resources).
/// Binary (`Ki`…`Ei`) and decimal (`k`…`E`, `m` for thousandths) suffixes; numbers or strings.
pub fn quantity(resource: &str, v: &Value) -> Option<u64> {
    let s = match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.trim().to_owned(),
        _ => return None,
    };
    const UNITS: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
        ("m", 1e-3),
    ];
    let (num, mult) = UNITS
        .iter()
        .find_map(|(u, m)| s.strip_suffix(u).map(|n| (n, *m)))
        .unwrap_or((s.as_str(), 1.0));
    let scale = if resource == "cpu" { 1000.0 } else { 1.0 };
    let x = num.trim().parse::<f64>().ok()? * mult * scale;
    (x.is_finite() && (0.0..1.8e19).contains(&x)).then(|| x.ceil() as u64)
}

/// A node's allocatable resources other than GPUs, in [`quantity`] units.
fn allocatable(obj: &Value) -> Result<BTreeMap<String, u64>, String> {
    let mut out = BTreeMap::new();
    let Some(map) = obj
        .pointer("/status/allocatable")
        .and_then(Value::as_object)
    else {
        return Ok(out);
    };
    for (k, v) in map {
        if k == "nvidia.com/gpu" {
            continue;
        }
        let q = quantity(k, v).ok_or_else(|| {
            format!("status.allocatable[\"{k}\"]: expected a Kubernetes quantity, got {v}")
        })?;
        out.insert(k.clone(), q);
    }
    Ok(out)
}

pub(crate) fn parse_count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn choose_levels(
    file: &str,
    records: &[NodeRecord],
    options: &ImportOptions,
    notes: &mut Vec<String>,
    aliases: &mut Vec<Option<String>>,
) -> Result<Vec<String>, FormatError> {
    let sources = usize::from(options.topology.is_some())
        + usize::from(!options.levels.is_empty())
        + usize::from(options.label_preset.is_some());
    if sources > 1 {
        return Err(FormatError::input(
            "--cluster",
            "give the levels one way: --topology, --levels or --label-preset",
        ));
    }
    if let Some(p) = &options.topology {
        let f = p.display().to_string();
        let docs = parse_documents(&f, &read_text(p)?)?;
        let t = read_topology(&f, &docs)?;
        *aliases = t.aliases;
        return Ok(t.levels);
    }
    if !options.levels.is_empty() {
        return Ok(options.levels.clone());
    }
    let preset = match options.label_preset {
        Some(p) => p,
        None => {
            let detected = detect_preset(records).ok_or_else(|| {
                FormatError::input(
                    file,
                    "no levels given and no known label vocabulary found on the nodes; pass --topology FILE, --levels a,b,c or --label-preset oci|topograph",
                )
            })?;
            notes.push(format!(
                "levels not given: detected {} labels on the nodes",
                match detected {
                    LabelPreset::Oci => "OCI rdma.*",
                    LabelPreset::Topograph => "Topograph tier-N",
                }
            ));
            detected
        }
    };
    Ok(preset_levels(preset, records))
}

fn detect_preset(records: &[NodeRecord]) -> Option<LabelPreset> {
    if records.iter().any(|r| r.labels.contains_key(OCI_LEVELS[2])) {
        Some(LabelPreset::Oci)
    } else if records.iter().any(|r| {
        r.labels
            .keys()
            .any(|k| k.starts_with(TOPOGRAPH_TIER_PREFIX))
    }) {
        Some(LabelPreset::Topograph)
    } else {
        None
    }
}

fn preset_levels(preset: LabelPreset, records: &[NodeRecord]) -> Vec<String> {
    let mut levels: Vec<String> = match preset {
        LabelPreset::Oci => OCI_LEVELS.iter().map(|s| (*s).to_owned()).collect(),
        LabelPreset::Topograph => {
            let mut tiers: Vec<u32> = records
                .iter()
                .flat_map(|r| r.labels.keys())
                .filter_map(|k| k.strip_prefix(TOPOGRAPH_TIER_PREFIX)?.parse().ok())
                .collect();
            tiers.sort_unstable();
            tiers.dedup();
            tiers
                .iter()
                .rev()
                .map(|t| format!("{TOPOGRAPH_TIER_PREFIX}{t}"))
                .collect()
        }
    };
    levels.push(HOSTNAME_LABEL.to_owned());
    levels
}

/// Which scheduler a Topology object belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopologyFlavor {
    /// `kueue.x-k8s.io`.
    Kueue,
    /// `kai.scheduler`.
    Kai,
}

/// The levels of a Kueue or KAI Topology object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyObject {
    /// Whose object it is.
    pub flavor: TopologyFlavor,
    /// `metadata.name`.
    pub name: String,
    /// `spec.levels[].nodeLabel`, top first.
    pub levels: Vec<String>,
    /// `spec.levels[].alias` (KAI v0.17: another name a workload may give the level by), one
    /// per level.
    pub aliases: Vec<Option<String>>,
}

/// Check a Kubernetes label key: an optional DNS-subdomain prefix (at most 253 characters) and
/// `/`, then a name of at most 63 characters, alphanumeric at both ends with `-`, `_` and `.`
/// inside. Returns why not.
pub fn check_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if p.is_empty() || p.len() > 253 {
            return Err("the prefix must be 1..=253 characters".to_owned());
        }
        let ok_part = |part: &str| {
            !part.is_empty()
                && part.len() <= 63
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        };
        if !p.split('.').all(ok_part) {
            return Err(format!(
                "the prefix `{p}` must be a DNS subdomain (lowercase letters, digits, `-`, `.`)"
            ));
        }
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if name.is_empty()
        || name.len() > 63
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || !alnum(name.chars().next())
        || !alnum(name.chars().last())
    {
        return Err(format!(
            "the name `{name}` must be 1..=63 characters, letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit"
        ));
    }
    Ok(())
}

/// Read the Topology object of a file (other kinds, e.g. ResourceFlavor, are skipped; two
/// Topology objects are refused: which one applies would be a guess).
pub fn read_topology(file: &str, docs: &[Value]) -> Result<TopologyObject, FormatError> {
    let topologies: Vec<usize> = docs
        .iter()
        .enumerate()
        .filter(|(_, d)| d.get("kind").and_then(Value::as_str) == Some("Topology"))
        .map(|(i, _)| i + 1)
        .collect();
    if topologies.len() > 1 {
        return Err(FormatError::input(
            file,
            format!(
                "documents {} and {} are both Topology objects; give the one that describes this cluster",
                topologies[0], topologies[1]
            ),
        ));
    }
    for (d, doc) in docs.iter().enumerate() {
        if doc.get("kind").and_then(Value::as_str) != Some("Topology") {
            continue;
        }
        let api = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let flavor = if api.starts_with("kueue.x-k8s.io/") {
            TopologyFlavor::Kueue
        } else if api.starts_with("kai.scheduler/") {
            TopologyFlavor::Kai
        } else {
            return Err(FormatError::input(
                file,
                format!(
                    "document {}: apiVersion `{api}`: expected kueue.x-k8s.io/… or kai.scheduler/…",
                    d + 1
                ),
            ));
        };
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let levels = doc
            .pointer("/spec/levels")
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                FormatError::input(
                    file,
                    format!("Topology \"{name}\": spec.levels: expected a non-empty list"),
                )
            })?;
        if levels.len() > 16 {
            return Err(FormatError::input(
                file,
                format!(
                    "Topology \"{name}\": spec.levels: {} levels; the Topology CRD allows at most 16",
                    levels.len()
                ),
            ));
        }
        let mut out = Vec::with_capacity(levels.len());
        for (i, l) in levels.iter().enumerate() {
            let label = l
                .get("nodeLabel")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    FormatError::input(
                        file,
                        format!(
                            "Topology \"{name}\": spec.levels[{i}].nodeLabel: expected a label"
                        ),
                    )
                })?;
            if out.iter().any(|x| x == label) {
                return Err(FormatError::input(
                    file,
                    format!("Topology \"{name}\": spec.levels[{i}].nodeLabel: `{label}` is listed twice"),
                ));
            }
            if let Err(why) = check_label_key(label) {
                return Err(FormatError::input(
                    file,
                    format!("Topology \"{name}\": spec.levels[{i}].nodeLabel: `{label}` is not a Kubernetes label key: {why}"),
                ));
            }
            if !out.is_empty() && out.last().is_some_and(|x| x == HOSTNAME_LABEL) {
                return Err(FormatError::input(
                    file,
                    format!("Topology \"{name}\": spec.levels[{i}].nodeLabel: `{label}` comes after `{HOSTNAME_LABEL}`, which may only be the lowest level"),
                ));
            }
            out.push(label.to_owned());
        }
        let aliases = read_aliases(file, &name, flavor, levels, &out)?;
        return Ok(TopologyObject {
            flavor,
            name,
            levels: out,
            aliases,
        });
    }
    Err(FormatError::input(file, "no Topology object found"))
}

/// The `alias` of each level of a Topology (`labels`: the levels' nodeLabels), with the KAI
/// Topology webhook's rules (pkg/admission/webhook/topologyhooks/topology_validator.go at
/// d5bc503a): aliases are unique and none equals a nodeLabel, and each has the CRD's
/// label-key syntax. Kueue's Topology has no alias.
fn read_aliases(
    file: &str,
    name: &str,
    flavor: TopologyFlavor,
    levels: &[Value],
    labels: &[String],
) -> Result<Vec<Option<String>>, FormatError> {
    let mut out: Vec<Option<String>> = Vec::with_capacity(levels.len());
    for (i, l) in levels.iter().enumerate() {
        let at = |m: String| {
            FormatError::input(
                file,
                format!("Topology \"{name}\": spec.levels[{i}].alias: {m}"),
            )
        };
        let Some(a) = l.get("alias") else {
            out.push(None);
            continue;
        };
        if flavor == TopologyFlavor::Kueue {
            return Err(at(
                "Kueue's Topology has no alias (KAI's has, from v0.17)".to_owned()
            ));
        }
        let a = a
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| at(format!("expected a name, got {a}")))?;
        check_label_key(a).map_err(|why| at(format!("`{}`: {why}", crate::excerpt(a))))?;
        if out.iter().flatten().any(|x| x == a) {
            return Err(at(format!(
                "`{a}` is given to two levels; aliases are unique"
            )));
        }
        if labels.iter().any(|x| x == a) {
            return Err(at(format!(
                "`{a}` is the nodeLabel of a level; an alias must not equal a nodeLabel"
            )));
        }
        out.push(Some(a.to_owned()));
    }
    Ok(out)
}

#[derive(Serialize)]
struct Meta<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct LevelOut<'a> {
    #[serde(rename = "nodeLabel")]
    node_label: &'a str,
}

#[derive(Serialize)]
struct TopologySpecOut<'a> {
    levels: Vec<LevelOut<'a>>,
}

#[derive(Serialize)]
struct TopologyOut<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'a str,
    metadata: Meta<'a>,
    spec: TopologySpecOut<'a>,
}

/// A Kubernetes object name derived from the cluster name: an RFC 1123 subdomain (lowercase
/// alphanumeric labels of at most 63 characters with `-` inside, joined by `.`, at most 253).
pub fn object_name(cluster: &Cluster) -> String {
    let lower = cluster.name.to_ascii_lowercase();
    let labels: Vec<String> = lower
        .split('.')
        .map(|label| {
            let l: String = label
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .take(63)
                .collect();
            l.trim_matches('-').to_owned()
        })
        .filter(|l| !l.is_empty())
        .collect();
    let mut s = String::new();
    for l in labels {
        if s.len() + 1 + l.len() > 253 {
            break;
        }
        if !s.is_empty() {
            s.push('.');
        }
        s.push_str(&l);
    }
    if s.is_empty() {
        "default".to_owned()
    } else {
        s
    }
}

/// A Topology object for Kueue or KAI with the cluster's levels.
pub fn export_topology(cluster: &Cluster, flavor: TopologyFlavor) -> String {
    let name = object_name(cluster);
    let out = TopologyOut {
        api_version: match flavor {
            TopologyFlavor::Kueue => "kueue.x-k8s.io/v1beta2",
            TopologyFlavor::Kai => "kai.scheduler/v1alpha1",
        },
        kind: "Topology",
        metadata: Meta { name: &name },
        spec: TopologySpecOut {
            levels: cluster
                .levels
                .iter()
                .map(|l| LevelOut {
                    node_label: &l.label,
                })
                .collect(),
        },
    };
    serde_norway::to_string(&out).expect("plain data serializes")
}

/// The labels each node needs for the cluster's levels (and its NVLink domain, if shared).
pub fn level_labels(cluster: &Cluster) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for n in &cluster.nodes {
        let mut labels = BTreeMap::new();
        for (l, d) in cluster.levels.iter().zip(&n.domains) {
            labels.insert(l.label.clone(), cluster.domain(*d).value.clone());
        }
        let nvl = &cluster.nvlink_domains[n.nvlink_domain.index()];
        if nvl.nodes.len() > 1 {
            labels.insert(NVLINK_DOMAIN_LABEL.to_owned(), nvl.name.clone());
        }
        out.insert(n.name.clone(), labels);
    }
    out
}

/// `kubectl label` commands that give every node its level labels, in node order. Every word
/// is shell-quoted (after [`check_exportable`], quoting changes nothing; it is the second wall).
pub fn export_label_commands(cluster: &Cluster) -> String {
    let labels = level_labels(cluster);
    let mut out = String::new();
    for n in &cluster.nodes {
        out.push_str("kubectl label node ");
        out.push_str(&shell_quote(&n.name));
        out.push_str(" --overwrite");
        for (k, v) in &labels[&n.name] {
            if k == HOSTNAME_LABEL {
                continue; // the kubelet owns it
            }
            out.push(' ');
            out.push_str(&shell_quote(&format!("{k}={v}")));
        }
        out.push('\n');
    }
    out
}

/// Where an export goes, for [`check_exportable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// A Kueue or KAI Topology: level label keys.
    Topology,
    /// Node labels or a NodeList: node names, label keys and values.
    NodeLabels,
    /// Slurm `topology.conf`: node names as host names.
    Slurm,
}

/// Check every identifier an export to `destination` writes against that destination's rule
/// (label keys, label values, RFC 1123 node names, host names), before anything is written.
/// `file` is where the cluster came from (named in the error: it holds the fault).
pub fn check_exportable(
    cluster: &Cluster,
    file: &str,
    destination: Destination,
) -> Result<(), FormatError> {
    use crate::names::{check_dns_subdomain, check_host_name, check_label_value};
    if cluster.name.chars().any(char::is_control) {
        return Err(FormatError::input(
            file,
            "cluster name: control characters are not allowed in a name written to a file",
        ));
    }
    for l in &cluster.levels {
        check_label_key(&l.label).map_err(|m| {
            FormatError::input(
                file,
                format!("level label `{}`: {m}", crate::excerpt(&l.label)),
            )
        })?;
    }
    match destination {
        Destination::Topology => {}
        Destination::NodeLabels => {
            for n in &cluster.nodes {
                let at = |m: String| {
                    FormatError::input(file, format!("node `{}`: {m}", crate::excerpt(&n.name)))
                };
                check_dns_subdomain(&n.name).map_err(at)?;
                for (k, v) in &n.labels {
                    check_label_key(k)
                        .map_err(|m| at(format!("label `{}`: {m}", crate::excerpt(k))))?;
                    check_label_value(v).map_err(at)?;
                }
            }
            for (_, labels) in level_labels(cluster) {
                for v in labels.values() {
                    check_label_value(v).map_err(|m| FormatError::input(file, m))?;
                }
            }
        }
        Destination::Slurm => {
            for n in &cluster.nodes {
                check_host_name(&n.name).map_err(|m| FormatError::input(file, m))?;
            }
        }
    }
    Ok(())
}

/// The cluster as a `kubectl get nodes -o yaml`-shaped NodeList (labels, GPUs, state), which
/// `--cluster` imports back.
pub fn export_nodelist(cluster: &Cluster) -> String {
    let items: Vec<Value> = cluster
        .nodes
        .iter()
        .map(|n| {
            let mut status = serde_json::json!({
                "allocatable": { "nvidia.com/gpu": n.gpus.to_string() },
                "capacity": { "nvidia.com/gpu": n.gpus.to_string() },
                "conditions": [{ "type": "Ready", "status": if n.ready { "True" } else { "False" } }],
            });
            if let Some(ip) = &n.internal_ip {
                status["addresses"] = serde_json::json!([{ "type": "InternalIP", "address": ip }]);
            }
            let mut spec = serde_json::json!({});
            if n.unschedulable {
                spec["unschedulable"] = Value::Bool(true);
            }
            if !n.taints.is_empty() {
                spec["taints"] = n
                    .taints
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "key": t.key,
                            "value": t.value,
                            "effect": format!("{:?}", t.effect),
                        })
                    })
                    .collect();
            }
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": { "name": n.name, "labels": n.labels },
                "spec": spec,
                "status": status,
            })
        })
        .collect();
    let list = serde_json::json!({ "apiVersion": "v1", "kind": "NodeList", "items": items });
    serde_norway::to_string(&list).expect("plain data serializes")
}

/// The node label GPU feature discovery sets to the memory of one GPU, in MiB.
pub const GPU_MEMORY_LABEL: &str = "nvidia.com/gpu.memory";

/// GiB per GPU from the `nvidia.com/gpu.memory` label (MiB, e.g. `81559` on an H100 80GB: 80
/// GiB, to the nearest GiB). Values of a TiB or more are bytes, as KAI reads them (a GPU
/// feature discovery bug published bytes); `None` for anything but a positive integer or a
/// memory above [`topology::MAX_GPU_MEMORY_GIB`].
pub fn gpu_memory_from_label(value: &str) -> Option<u32> {
    let raw: u64 = value.trim().parse().ok().filter(|&v| v > 0)?;
    let mib = if raw >= 1 << 20 { raw >> 20 } else { raw };
    let gib = (mib + 512) / 1024;
    u32::try_from(gib.max(1))
        .ok()
        .filter(|&g| g <= topology::MAX_GPU_MEMORY_GIB)
}

#[cfg(test)]
mod tests {
    use super::gpu_memory_from_label;

    #[test]
    fn gpu_memory_label_is_mib_rounded_to_gib_and_bytes_when_huge() {
        // H100 80GB HBM3 as GPU feature discovery labels it; A100 40GB; 80 GiB given in bytes.
        assert_eq!(gpu_memory_from_label("81559"), Some(80));
        assert_eq!(gpu_memory_from_label("40960"), Some(40));
        assert_eq!(gpu_memory_from_label("85899345920"), Some(80));
        assert_eq!(gpu_memory_from_label("0"), None);
        assert_eq!(gpu_memory_from_label("80Gi"), None);
    }
}
