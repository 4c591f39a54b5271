//! Kueue's own TAS unit tests, as data (`tests/kueue/*_test.yaml`, one file per Kueue test file),
//! run through `sched::place_with`. Every case must give Kueue's expected assignment (pods per
//! domain at the expected levels) or fail as Kueue does; a case marked `difference:` must still
//! differ, so a difference that gets fixed is noticed.

use std::collections::BTreeMap;
use std::path::Path;

use sched::{
    place_with, GpuRequest, Job, NodeFree, PlaceInput, PlaceOptions, PodSet, PodSetExtras,
    PreferredTerm, ResourceList, SelectorOp, SelectorRequirement, SliceLayer, Toleration,
    TopologyRequest, UnconstrainedMode,
};
use serde::Deserialize;
use topology::{
    assemble, Cluster, FabricParams, NicSpec, NodeRecord, Taint, TaintEffect, TierParams,
    HOSTNAME_LABEL,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    kueue_commit: String,
    file: String,
    test: String,
    #[allow(dead_code)] // documentation for readers of the data
    units: String,
    cases: Vec<Case>,
    /// Sort-order cases, checked by the unit test in `src/tas.rs`.
    #[serde(default)]
    sort_cases: Vec<serde::de::IgnoredAny>,
    #[serde(default)]
    not_ported: Vec<NotPorted>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NotPorted {
    name: String,
    /// The Kueue test function, when the file holds several.
    #[allow(dead_code)] // names the function for readers
    test: Option<String>,
    reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default)]
    gates_on: Vec<String>,
    #[serde(default)]
    gates_off: Vec<String>,
    levels: Vec<String>,
    #[serde(default)]
    flavor_node_labels: BTreeMap<String, String>,
    #[serde(default)]
    flavor_tolerations: Vec<TolerationDoc>,
    nodes: Vec<NodeDoc>,
    #[serde(default)]
    pods: Vec<PodDoc>,
    pod_sets: Vec<PodSetDoc>,
    difference: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeDoc {
    name: String,
    labels: BTreeMap<String, String>,
    allocatable: BTreeMap<String, String>,
    #[serde(default = "yes")]
    ready: bool,
    #[serde(default)]
    conditions: Vec<String>,
    #[serde(default)]
    unschedulable: bool,
    #[serde(default)]
    taints: Vec<TaintDoc>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaintDoc {
    key: String,
    value: String,
    effect: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PodDoc {
    #[allow(dead_code)] // names the pod for readers
    name: String,
    node: Option<String>,
    phase: Option<String>,
    requests: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PodSetDoc {
    name: String,
    count: u32,
    min_count: Option<u32>,
    requests: BTreeMap<String, u64>,
    #[serde(default)]
    implied: bool,
    required: Option<String>,
    preferred: Option<String>,
    unconstrained: Option<bool>,
    slice_level: Option<String>,
    slice_size: Option<u32>,
    #[serde(default)]
    slice_layers: Vec<LayerDoc>,
    group: Option<String>,
    #[serde(default)]
    node_selector: BTreeMap<String, String>,
    #[serde(default)]
    tolerations: Vec<TolerationDoc>,
    #[serde(default)]
    affinity_required: Vec<TermDoc>,
    #[serde(default)]
    affinity_preferred: Vec<PreferredDoc>,
    want: Option<Want>,
    want_fail: Option<String>,
    #[allow(dead_code)] // Kueue's message, for readers; the category is compared
    want_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerDoc {
    level: String,
    size: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TolerationDoc {
    key: Option<String>,
    operator: String,
    value: Option<String>,
    effect: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TermDoc {
    match_expressions: Vec<ExprDoc>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExprDoc {
    key: String,
    operator: String,
    values: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PreferredDoc {
    weight: i32,
    key: String,
    operator: String,
    values: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Want {
    levels: Vec<String>,
    domains: Vec<WantDomain>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WantDomain {
    values: Vec<String>,
    count: u32,
}

/// Pods per domain (label values at the expected levels), per pod set; or the failure category.
type Outcome = Result<Vec<BTreeMap<Vec<String>, u32>>, &'static str>;

/// A Kubernetes quantity in the unit Kueue counts requests in: millicores for `cpu`, else the
/// plain amount (bytes for memory).
fn quantity(resource: &str, q: &str) -> u64 {
    let (num, mult): (&str, f64) = [
        ("Ki", 1024f64),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("m", 1e-3),
    ]
    .iter()
    .find_map(|(s, m)| q.strip_suffix(s).map(|n| (n, *m)))
    .unwrap_or((q, 1.0));
    let v: f64 = num.parse().unwrap_or_else(|_| panic!("quantity `{q}`"));
    let scale = if resource == "cpu" { 1000.0 } else { 1.0 };
    (v * mult * scale).round() as u64
}

fn gate(case: &Case, name: &str, default: bool) -> bool {
    if case.gates_on.iter().any(|g| g == name) {
        true
    } else if case.gates_off.iter().any(|g| g == name) {
        false
    } else {
        default
    }
}

fn effect(s: &str) -> TaintEffect {
    match s {
        "NoSchedule" => TaintEffect::NoSchedule,
        "NoExecute" => TaintEffect::NoExecute,
        _ => TaintEffect::PreferNoSchedule,
    }
}

/// The case's cluster (nodes lacking a level label are not in Kueue's tree either) and each
/// node's free resources after the running pods.
fn cluster(case: &Case) -> Result<(Cluster, NodeFree), String> {
    let mut records = Vec::new();
    let mut free = Vec::new();
    for n in &case.nodes {
        if !case.levels.iter().all(|l| n.labels.contains_key(l)) {
            continue;
        }
        let mut f: ResourceList = n
            .allocatable
            .iter()
            .map(|(k, v)| (k.clone(), quantity(k, v)))
            .collect();
        for p in &case.pods {
            let terminal = matches!(p.phase.as_deref(), Some("Succeeded" | "Failed"));
            if p.node.as_deref() == Some(n.name.as_str()) && !terminal {
                let req: ResourceList = p
                    .requests
                    .iter()
                    .map(|(k, v)| (k.clone(), quantity(k, v)))
                    .collect();
                for (k, v) in &req {
                    if let Some(x) = f.get_mut(k) {
                        *x = x.saturating_sub(*v);
                    }
                }
                if let Some(x) = f.get_mut(sched::PODS) {
                    *x = x.saturating_sub(1);
                }
            }
        }
        free.push(f);
        let unhealthy = n.conditions.iter().any(|c| c.ends_with("=True"));
        records.push(NodeRecord {
            name: n.name.clone(),
            gpus: 8,
            gpu_memory_gib: 80,
            nics: NicSpec {
                rails: 1,
                ports_per_rail: 1,
                port_gbps: 400.0,
            },
            nvlink_gbps: 3600.0,
            nvlink_domain: None,
            labels: n.labels.clone(),
            taints: n
                .taints
                .iter()
                .map(|t| Taint {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: effect(&t.effect),
                })
                .collect(),
            ready: n.ready && !unhealthy,
            unschedulable: n.unschedulable,
            internal_ip: None,
            allocatable: Default::default(),
        });
    }
    if records.is_empty() {
        return Err("no_domains".to_owned());
    }
    let tier = TierParams {
        latency_ns: 1000,
        oversubscription: 1.0,
        switches_per_group: Some(1),
    };
    let c = assemble(
        "kueue-case",
        records,
        &FabricParams {
            levels: case.levels.clone(),
            host_label: HOSTNAME_LABEL.to_owned(),
            tiers: vec![tier; case.levels.len() + 1],
            rail_optimized: false,
        },
    )
    .map_err(|e| format!("cluster: {e}"))?;
    Ok((c, NodeFree(free)))
}

fn op(s: &str) -> SelectorOp {
    match s {
        "In" => SelectorOp::In,
        "NotIn" => SelectorOp::NotIn,
        "Exists" => SelectorOp::Exists,
        "DoesNotExist" => SelectorOp::DoesNotExist,
        "Gt" => SelectorOp::Gt,
        _ => SelectorOp::Lt,
    }
}

/// The job and its extras, or `invalid_request` when Kueue would reject the request.
fn job(case: &Case, c: &Cluster) -> Result<(Job, PlaceInput), &'static str> {
    let level = |l: &str| c.level_by_label(l).ok_or("invalid_request");
    let multi_layer = gate(case, "TASMultiLayerTopology", true);
    let mut pod_sets = Vec::new();
    let mut extras = Vec::new();
    for ps in &case.pod_sets {
        let mut slices = Vec::new();
        if !ps.slice_layers.is_empty() {
            for l in &ps.slice_layers {
                slices.push(SliceLayer {
                    level: level(&l.level)?,
                    size: l.size,
                });
            }
            if !multi_layer {
                slices.truncate(1);
            }
        } else if let Some(l) = &ps.slice_level {
            match ps.slice_size {
                Some(size) => slices.push(SliceLayer {
                    level: level(l)?,
                    size,
                }),
                // A group's leader is placed by its workers' request; Kueue never reads its own.
                None if ps.group.is_some() => {}
                None => return Err("invalid_request"),
            }
        }
        // `implied` and `unconstrained: true` are railyard's default: neither level given.
        let _ = (ps.implied, ps.unconstrained);
        let topology = TopologyRequest {
            required: ps.required.as_deref().map(level).transpose()?,
            preferred: ps.preferred.as_deref().map(level).transpose()?,
            slices,
        };
        let mut requests: ResourceList = ps.requests.clone();
        requests.retain(|_, v| *v > 0);
        let mut node_selector = ps.node_selector.clone();
        node_selector.extend(case.flavor_node_labels.clone());
        pod_sets.push(PodSet {
            name: ps.name.clone(),
            count: ps.count,
            min_count: ps.min_count.unwrap_or(ps.count),
            gpu: GpuRequest::Whole(0),
            cpu_millis: 0,
            memory_mib: 0,
            topology,
        });
        extras.push(PodSetExtras {
            requests,
            node_selector,
            affinity: ps
                .affinity_required
                .iter()
                .map(|t| {
                    t.match_expressions
                        .iter()
                        .map(|e| SelectorRequirement {
                            key: e.key.clone(),
                            op: op(&e.operator),
                            values: e.values.clone(),
                        })
                        .collect()
                })
                .collect(),
            preferred: ps
                .affinity_preferred
                .iter()
                .map(|t| PreferredTerm {
                    weight: t.weight,
                    requirements: vec![SelectorRequirement {
                        key: t.key.clone(),
                        op: op(&t.operator),
                        values: t.values.clone(),
                    }],
                })
                .collect(),
            tolerations: ps
                .tolerations
                .iter()
                .chain(&case.flavor_tolerations)
                .map(|t| Toleration {
                    key: t.key.clone(),
                    value: (t.operator == "Equal").then(|| t.value.clone().unwrap_or_default()),
                    effect: t.effect.as_deref().map(effect),
                })
                .collect(),
            group: ps.group.clone(),
            sub_group: None,
            running_on: Vec::new(),
        });
    }
    let job = Job {
        name: "wl".to_owned(),
        queue: "q".to_owned(),
        priority: 0,
        preemptible: true,
        pod_sets,
        tolerations: Vec::new(),
    };
    job.check(c).map_err(|_| "invalid_request")?;
    let options = PlaceOptions {
        unconstrained: if gate(case, "TASProfileMixed", true) {
            UnconstrainedMode::LeastFreeCapacity
        } else {
            UnconstrainedMode::BestFit
        },
        balanced: gate(case, "TASBalancedPlacement", false),
        preferred_affinity: gate(case, "TASRespectNodeAffinityPreferred", false),
        ..PlaceOptions::default()
    };
    Ok((
        job,
        PlaceInput {
            options,
            node_free: NodeFree::default(),
            pod_sets: extras,
            sub_groups: Vec::new(),
        },
    ))
}

/// What railyard does with the case.
fn run(case: &Case) -> Result<Outcome, String> {
    let (c, free) = match cluster(case) {
        Ok(x) => x,
        Err(kind) if kind == "no_domains" => return Ok(Err("no_domains")),
        Err(e) => return Err(e),
    };
    let (job, mut input) = match job(case, &c) {
        Ok(x) => x,
        Err(kind) => return Ok(Err(kind)),
    };
    input.node_free = free;
    let occ = sched::Occupancy::new(&c);
    let placement = match place_with(&c, &occ, &job, &input) {
        Ok(p) => p,
        Err(_) => return Ok(Err("no_fit")),
    };
    let mut out = Vec::new();
    for (i, ps) in case.pod_sets.iter().enumerate() {
        let levels = ps.want.as_ref().map_or(&case.levels, |w| &w.levels);
        let mut per: BTreeMap<Vec<String>, u32> = BTreeMap::new();
        for pod in placement.pods.iter().filter(|p| p.pod_set == i) {
            let labels = &c.node(pod.node).labels;
            let key = levels.iter().map(|l| labels[l].clone()).collect();
            *per.entry(key).or_default() += 1;
        }
        out.push(per);
    }
    Ok(Ok(out))
}

fn expected(case: &Case) -> Outcome {
    if let Some(kind) = case.pod_sets.iter().find_map(|p| p.want_fail.as_deref()) {
        return Err(match kind {
            "no_fit" => "no_fit",
            "no_domains" => "no_domains",
            _ => "invalid_request",
        });
    }
    Ok(case
        .pod_sets
        .iter()
        .map(|p| {
            p.want.as_ref().map_or_else(BTreeMap::new, |w| {
                w.domains
                    .iter()
                    .map(|d| (d.values.clone(), d.count))
                    .collect()
            })
        })
        .collect())
}

/// Kueue drops nodes it cannot use from its tree ("no topology domains"); railyard keeps them
/// and finds no room: the same answer.
fn same(want: &Outcome, got: &Outcome) -> bool {
    match (want, got) {
        (Err("no_domains"), Err("no_fit")) => true,
        _ => want == got,
    }
}

#[test]
fn kueue_tas_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kueue");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/kueue")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.to_string_lossy().ends_with("_test.yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut problems = Vec::new();
    let mut summary = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("case file");
        let doc: CaseFile =
            serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(doc.kueue_commit.len(), 40, "{}: commit", path.display());
        assert!(doc
            .not_ported
            .iter()
            .all(|n| !n.reason.is_empty() && !n.name.is_empty()));
        let (mut pass, mut differ) = (0, 0);
        for case in &doc.cases {
            let tag = format!("{} {} / {}", doc.file, doc.test, case.name);
            let got = match run(case) {
                Ok(g) => g,
                Err(e) => {
                    problems.push(format!("{tag}: {e}"));
                    continue;
                }
            };
            let want = expected(case);
            match (&case.difference, same(&want, &got)) {
                (None, true) => pass += 1,
                (Some(_), false) => differ += 1,
                (None, false) => {
                    problems.push(format!("{tag}:\n    want {want:?}\n    got  {got:?}"))
                }
                (Some(d), true) => problems.push(format!(
                    "{tag}: now agrees with Kueue; remove `difference: {d}`"
                )),
            }
        }
        summary.push(format!(
            "{}: {} cases, {pass} pass, {differ} documented differences, {} sort cases (src/tas.rs), {} not ported",
            path.file_name().unwrap_or_default().to_string_lossy(),
            doc.cases.len(),
            doc.sort_cases.len(),
            doc.not_ported.len()
        ));
    }
    println!("{}", summary.join("\n"));
    assert!(
        problems.is_empty(),
        "{} Kueue cases disagree:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
