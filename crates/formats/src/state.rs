//! The `place --state` file: the jobs already running and where. Two shapes are accepted:
//!
//! - the native state: `jobs: [{name, queue, priority, preemptible, pods: [{node, gpus,
//!   gpu_ids, gpu_memory_mib}]}]` (schema in the README);
//! - a previous `place --output json` result: one placement file or a list of them (jobs that
//!   were not placed are skipped; queue `default`, priority 0, preemptible);
//! - the live cluster: `kubectl get pods -A -o json`, with `kubectl get workloads -A -o json`
//!   (Kueue) and `kubectl get podgroups -A -o json` (KAI; only with the PodList) (see
//!   [`crate::live`]); several state files add up ([`read_all`]).

use std::collections::{BTreeMap, BTreeSet};

use sched::{Occupancy, PodAllocation, RunningJob, StateError, MILLI_PER_GPU};
use serde::Deserialize;
use serde_json::Value;
use topology::{Cluster, NodeId};

use crate::error::FormatError;
use crate::input::{parse_documents, parse_typed};
use crate::jobs::{default_queue, yes};
use crate::live;
use crate::placement::{self, PlacementFile};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NativeState {
    jobs: Vec<StateJob>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct StateJob {
    name: String,
    #[serde(default = "default_queue")]
    queue: String,
    #[serde(default)]
    priority: i32,
    #[serde(default = "yes")]
    preemptible: bool,
    pods: Vec<StatePod>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct StatePod {
    node: String,
    gpus: f64,
    #[serde(default)]
    gpu_ids: Vec<u32>,
    #[serde(default)]
    gpu_memory_mib: Option<u32>,
}

/// The JSON Schema of railyard's own state file, for editors.
pub fn native_state_schema() -> schemars::Schema {
    schemars::schema_for!(NativeState)
}

/// Read a state file into an occupancy of `cluster`.
pub fn read(file: &str, text: &str, cluster: &Cluster) -> Result<Occupancy, FormatError> {
    read_all(&[(file.to_owned(), text.to_owned())], cluster)
}

/// Read several state files (`(name, text)`) into one occupancy: PodLists first (so that
/// Workloads whose pods they hold are not counted twice), then the rest in order.
pub fn read_all(files: &[(String, String)], cluster: &Cluster) -> Result<Occupancy, FormatError> {
    Ok(read_all_with_usage(files, cluster)?.0)
}

/// What running pods request of each node besides GPUs, by node (resource → amount).
pub type NodeUsage = BTreeMap<NodeId, BTreeMap<String, u64>>;

/// [`read_all`], and what the live pods (PodLists, Workloads) request of each node besides
/// GPUs (`cpu`, `memory`, `pods`, …, GPU-less pods included), by node: the usage placement
/// subtracts from the nodes' allocatable.
pub fn read_all_with_usage(
    files: &[(String, String)],
    cluster: &Cluster,
) -> Result<(Occupancy, NodeUsage), FormatError> {
    let mut usage = NodeUsage::new();
    let mut add_usage = |jobs: &[live::LiveJob]| {
        for p in jobs.iter().flat_map(|j| &j.pods) {
            let u = usage.entry(p.node).or_default();
            for (r, q) in &p.requests {
                let e = u.entry(r.clone()).or_insert(0);
                *e = e.saturating_add(*q);
            }
        }
    };
    let mut occ = Occupancy::new(cluster);
    let mut parsed = Vec::new();
    for (file, text) in files {
        let docs = parse_documents(file, text)?;
        if docs.len() > 1 {
            return Err(FormatError::input(file, "expected one document"));
        }
        parsed.push((file.as_str(), text.as_str(), docs.into_iter().next()));
    }
    let mut pod_groups = BTreeMap::new();
    let mut pod_group_file = None;
    for (file, _, doc) in &parsed {
        if let Some(doc) = doc.as_ref().filter(|d| live::is_list_of(d, "PodGroup")) {
            for (name, g) in live::read_pod_groups(file, doc)? {
                if pod_groups.insert(name.clone(), g).is_some() {
                    return Err(FormatError::input(
                        file,
                        format!("PodGroup {name} is listed in two state files"),
                    ));
                }
            }
            pod_group_file.get_or_insert(*file);
        }
    }
    let has_pods = parsed
        .iter()
        .any(|(_, _, d)| d.as_ref().is_some_and(|d| live::is_list_of(d, "Pod")));
    if let (Some(file), false) = (pod_group_file, has_pods) {
        return Err(FormatError::input(
            file,
            "KAI PodGroups say how pods are scheduled, not where they run; give the PodList with them (kubectl get pods -A -o json)",
        ));
    }
    let mut owners_with_pods = BTreeSet::new();
    for (file, _, doc) in &parsed {
        if let Some(doc) = doc.as_ref().filter(|d| live::is_list_of(d, "Pod")) {
            let mut jobs = live::read_pods(file, doc, cluster)?;
            live::apply_pod_groups(&mut jobs, &pod_groups);
            owners_with_pods.extend(jobs.iter().map(|j| j.owner.clone()));
            add_usage(&jobs);
            allocate_live(file, cluster, &mut occ, jobs)?;
        }
    }
    for (file, text, doc) in &parsed {
        let empty_list = |d: &Value| {
            d.get("kind").and_then(Value::as_str) == Some("List")
                && d.get("items")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty)
        };
        match doc {
            None => {}
            Some(d)
                if live::is_list_of(d, "Pod")
                    || live::is_list_of(d, "PodGroup")
                    || empty_list(d) => {}
            Some(d) if live::is_list_of(d, "Workload") => {
                let jobs = live::read_workloads(file, d, cluster, &owners_with_pods)?;
                add_usage(&jobs);
                allocate_live(file, cluster, &mut occ, jobs)?;
            }
            Some(d) => read_one(file, text, d, cluster, &mut occ)?,
        }
    }
    Ok((occ, usage))
}

/// Live jobs into the occupancy: whole GPUs on the lowest free GPUs of their node, fractions
/// and memory on the first GPU with room. More than a node holds is an error naming the pod.
fn allocate_live(
    file: &str,
    cluster: &Cluster,
    occ: &mut Occupancy,
    jobs: Vec<live::LiveJob>,
) -> Result<(), FormatError> {
    // Per node and GPU: (thousandths used, MiB used), starting from what is already allocated.
    let mut used: BTreeMap<NodeId, Vec<(u32, u32)>> = BTreeMap::new();
    for job in jobs {
        let mut allocs = Vec::new();
        for pod in &job.pods {
            let Some(gpu) = pod.gpu else {
                continue; // no GPUs: nothing for the GPU occupancy to hold
            };
            let n = cluster.node(pod.node);
            let mem_total = n.gpu_memory_gib * 1024;
            let gpus = used.entry(pod.node).or_insert_with(|| {
                (0..n.gpus)
                    .map(|g| {
                        (
                            occ.used_milli(pod.node, g),
                            occ.used_memory_mib(pod.node, g),
                        )
                    })
                    .collect()
            });
            let full = || {
                FormatError::input(
                    file,
                    format!(
                        "pod {} (job {}) asks for {}: node \"{}\" has no room left for it ({} GPUs of {} MiB; the pods listed before it hold {})",
                        pod.name,
                        job.name,
                        match gpu {
                            live::GpuUse::Whole(k) => format!("{k} whole GPUs"),
                            live::GpuUse::Fraction { milli, devices: 1 } => format!("{} of a GPU", f64::from(milli) / 1000.0),
                            live::GpuUse::Fraction { milli, devices } => format!("{} of each of {devices} GPUs", f64::from(milli) / 1000.0),
                            live::GpuUse::MemoryMib { mib, devices: 1 } => format!("{mib} MiB of a GPU"),
                            live::GpuUse::MemoryMib { mib, devices } => format!("{mib} MiB of each of {devices} GPUs"),
                        },
                        n.name,
                        n.gpus,
                        mem_total,
                        describe_use(gpus)
                    ),
                )
            };
            let alloc = match gpu {
                live::GpuUse::Whole(k) => {
                    let free: Vec<u32> = (0..n.gpus)
                        .filter(|&g| gpus[g as usize] == (0, 0))
                        .take(k as usize)
                        .collect();
                    if free.len() < k as usize {
                        return Err(full());
                    }
                    for &g in &free {
                        gpus[g as usize] = (MILLI_PER_GPU, mem_total);
                    }
                    PodAllocation {
                        node: pod.node,
                        gpu_ids: free,
                        milli: MILLI_PER_GPU,
                        memory_mib: mem_total,
                    }
                }
                live::GpuUse::Fraction { .. } | live::GpuUse::MemoryMib { .. } => {
                    let (milli, mem, devices) = match gpu {
                        live::GpuUse::Fraction { milli, devices } => (
                            milli,
                            ((u64::from(milli) * u64::from(mem_total)).div_ceil(1000)) as u32,
                            devices,
                        ),
                        live::GpuUse::MemoryMib { mib, devices } => (
                            ((u64::from(mib) * 1000).div_ceil(u64::from(mem_total.max(1))) as u32)
                                .clamp(1, MILLI_PER_GPU),
                            mib,
                            devices,
                        ),
                        live::GpuUse::Whole(_) => unreachable!("matched above"),
                    };
                    // The first GPUs with room, one per device.
                    let ids: Vec<u32> = (0..n.gpus)
                        .filter(|&g| {
                            let (um, ug) = gpus[g as usize];
                            um + milli <= MILLI_PER_GPU && ug + mem <= mem_total
                        })
                        .take(devices as usize)
                        .collect();
                    if ids.len() < devices as usize {
                        return Err(full());
                    }
                    for &g in &ids {
                        let slot = &mut gpus[g as usize];
                        slot.0 += milli;
                        slot.1 += mem;
                    }
                    PodAllocation {
                        node: pod.node,
                        gpu_ids: ids,
                        milli,
                        memory_mib: mem,
                    }
                }
            };
            allocs.push(alloc);
        }
        if allocs.is_empty() {
            continue; // a job without GPU pods
        }
        let running = RunningJob {
            name: job.name.clone(),
            queue: job.queue.clone(),
            priority: job.priority,
            preemptible: job.preemptible,
        };
        occ.allocate(running, allocs)
            .map_err(|e| state_error(file, cluster, e))?;
    }
    Ok(())
}

fn describe_use(gpus: &[(u32, u32)]) -> String {
    let whole = gpus.iter().filter(|(m, _)| *m >= MILLI_PER_GPU).count();
    let shared = gpus
        .iter()
        .filter(|(m, _)| *m > 0 && *m < MILLI_PER_GPU)
        .count();
    format!("{whole} whole and {shared} shared GPUs")
}

/// One native or placement-file state document into `occ`.
fn read_one(
    file: &str,
    text: &str,
    doc: &Value,
    cluster: &Cluster,
    occ: &mut Occupancy,
) -> Result<(), FormatError> {
    let placements: Option<Vec<PlacementFile>> = match doc {
        Value::Array(_) => Some(parse_typed(file, text)?),
        Value::Object(m) if m.contains_key("placed") => Some(vec![parse_typed(file, text)?]),
        _ => None,
    };
    let by_name: BTreeMap<&str, NodeId> = cluster
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), NodeId::from_index(i)))
        .collect();
    if let Some(list) = placements {
        for (i, p) in list.iter().enumerate() {
            if !p.placed {
                continue;
            }
            let at = if list.len() > 1 {
                format!("{file}[{i}]")
            } else {
                file.to_owned()
            };
            let pods = placement::resolve(&at, p, cluster)?;
            let name = p.job.clone().unwrap_or_else(|| format!("placement-{i}"));
            let allocs = pods
                .iter()
                .map(|r| share(&at, cluster, &name, r.node, r.gpus, r.gpu_ids.clone(), None))
                .collect::<Result<Vec<_>, _>>()?;
            let job = RunningJob {
                name: name.clone(),
                queue: default_queue(),
                priority: 0,
                preemptible: true,
            };
            occ.allocate(job, allocs)
                .map_err(|e| state_error(&at, cluster, e))?;
        }
        return Ok(());
    }
    let state: NativeState = parse_typed(file, text)?;
    for (i, j) in state.jobs.into_iter().enumerate() {
        let at = |m: String| FormatError::input(file, format!("jobs[{i}] ({}): {m}", j.name));
        if j.pods.is_empty() {
            return Err(at("pods: expected at least one pod".into()));
        }
        let mut next_gpu: BTreeMap<NodeId, u32> = BTreeMap::new();
        let mut allocs = Vec::new();
        for (k, p) in j.pods.iter().enumerate() {
            let node = *by_name.get(p.node.as_str()).ok_or_else(|| {
                at(format!(
                    "pods[{k}].node: \"{}\" is not in the cluster",
                    p.node
                ))
            })?;
            let node_gpus = cluster.node(node).gpus;
            if !(p.gpus.is_finite() && p.gpus > 0.0 && p.gpus <= f64::from(node_gpus)) {
                // Checked before GPU ids are made up: `gpus: 1e12` must not allocate 10¹² ids.
                return Err(at(format!(
                    "pods[{k}].gpus: expected (0, {node_gpus}] on node \"{}\", got {}",
                    p.node, p.gpus
                )));
            }
            let ids = if p.gpu_ids.is_empty() {
                let whole = p.gpus.ceil().max(1.0) as u32;
                let start = next_gpu.entry(node).or_insert(0);
                let ids: Vec<u32> = (*start..start.saturating_add(whole)).collect();
                *start = start.saturating_add(whole);
                ids
            } else {
                p.gpu_ids.clone()
            };
            let a = share(file, cluster, &j.name, node, p.gpus, ids, p.gpu_memory_mib)
                .map_err(|e| at(format!("pods[{k}]: {}", strip_file(file, &e.to_string()))))?;
            allocs.push(a);
        }
        let job = RunningJob {
            name: j.name.clone(),
            queue: j.queue.clone(),
            priority: j.priority,
            preemptible: j.preemptible,
        };
        occ.allocate(job, allocs)
            .map_err(|e| state_error(file, cluster, e))?;
    }
    Ok(())
}

fn strip_file(file: &str, m: &str) -> String {
    m.strip_prefix(&format!("{file}: ")).unwrap_or(m).to_owned()
}

/// One pod's allocation: whole GPUs (gpus ≥ 1, an integer, one id each) or a share of one GPU.
fn share(
    file: &str,
    cluster: &Cluster,
    job: &str,
    node: NodeId,
    gpus: f64,
    gpu_ids: Vec<u32>,
    memory: Option<u32>,
) -> Result<PodAllocation, FormatError> {
    let n = cluster.node(node);
    let mem_total = n.gpu_memory_gib * 1024;
    let err =
        |m: String| FormatError::input(file, format!("job `{job}` on node \"{}\": {m}", n.name));
    if !(gpus.is_finite() && gpus > 0.0 && gpus <= f64::from(n.gpus)) {
        return Err(err(format!("gpus: expected (0, {}], got {gpus}", n.gpus)));
    }
    if let Some(&g) = gpu_ids.iter().find(|&&g| g >= n.gpus) {
        return Err(err(format!("GPU {g} does not exist ({} GPUs)", n.gpus)));
    }
    if gpus >= 1.0 {
        if gpus.fract() != 0.0 || gpu_ids.len() != gpus as usize {
            return Err(err(format!(
                "gpus {gpus}: expected a whole number of GPUs matching gpu_ids ({} given), or a fraction below 1",
                gpu_ids.len()
            )));
        }
        return Ok(PodAllocation {
            node,
            gpu_ids,
            milli: MILLI_PER_GPU,
            memory_mib: mem_total,
        });
    }
    if gpu_ids.len() != 1 {
        return Err(err("a fractional pod uses exactly one GPU id".to_owned()));
    }
    let milli = ((gpus * 1000.0).round() as u32).max(1);
    let memory_mib =
        memory.unwrap_or(((u64::from(milli) * u64::from(mem_total)).div_ceil(1000)) as u32);
    Ok(PodAllocation {
        node,
        gpu_ids,
        milli,
        memory_mib,
    })
}

fn state_error(file: &str, cluster: &Cluster, e: StateError) -> FormatError {
    let m = match e {
        StateError::DuplicateJob(j) => format!("job `{j}` is listed twice"),
        StateError::UnknownNode { job, node } => {
            format!("job `{job}`: node #{} is not in the cluster", node.0)
        }
        StateError::UnknownGpu {
            job,
            node,
            gpu,
            gpus,
        } => format!(
            "job `{job}`: GPU {gpu} does not exist on node \"{}\" ({gpus} GPUs)",
            cluster.node(node).name
        ),
        StateError::Oversubscribed { job, node, gpu } => format!(
            "job `{job}`: GPU {gpu} of node \"{}\" would be used above its capacity or memory",
            cluster.node(node).name
        ),
    };
    FormatError::input(file, m)
}
