//! KAI Scheduler's allocate-action tests (topology, fractional GPUs, GPU memory), kept as data
//! in `tests/kai/allocate/*.yaml` (facts only, extracted by `tests/kai/allocate/port_allocate.py`, each
//! case tagged with KAI's file and test name), run against [`sched::place_with`] in
//! [`Dialect::Kai`]. A case passes, or carries a one-line `difference:` that this test checks
//! still holds (so a difference that goes away is noticed).
//!
//! How a KAI test becomes a placement: running (and releasing, pipelined) tasks are committed
//! to the occupancy first, on their node, fractional ones on the GPU of their GPU group; then the
//! jobs with pending tasks are placed one attempt at a time in KAI's order
//! ([`sched::next_pending`]: queue by fair share and quota, then job priority, then below its
//! gang before at or above it, then KAI's creation order, which its test harness makes priority
//! then file order), an attempt being skipped when it would take its queue above
//! `MaxAllowedGPUs` or a non-preemptible job above its quota. An attempt places a job without
//! sub-groups whole, one with sub-groups one KAI step ([`sched::place_kai_step`]: its gang, then
//! one step at a time, the job put back in the queue after each); the job's running and
//! already placed pods are given as [`sched::PodSetExtras::running_on`]. Sub-groups become pod sets (a leaf's constraint, else its nearest
//! ancestor's). GPU memory is scaled by 1024 on both sides (KAI's test nodes have GPUs of a
//! few hundred MiB, railyard's GPUs whole GiB), which keeps every ratio.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sched::{
    fair_share_in, kai_next_step, next_pending, place_kai_step, Dialect, GangStanding, GpuRequest,
    Job, KaiStrategy, NodeFree, Occupancy, PendingJob, PlaceInput, PlaceOptions, PlacementStrategy,
    PodAllocation, PodSet, PodSetExtras, QueueSpec, QueueStanding, QueueTree, ResourceList,
    ResourceQuota, Resources, RunningJob, TopologyRequest, MILLI_PER_GPU, UNLIMITED,
};
use serde::Deserialize;
use topology::{assemble, Cluster, FabricParams, NicSpec, NodeId, NodeRecord, TierParams};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    file: String,
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    test: String,
    case: String,
    #[serde(default)]
    topologies: Vec<Topology>,
    #[serde(default)]
    nodes_from: Option<String>,
    nodes: Vec<Node>,
    jobs: Vec<JobSpec>,
    #[serde(default)]
    queues: Vec<Queue>,
    #[serde(default)]
    departments: Vec<Queue>,
    #[serde(default)]
    strategy: Option<Strategy>,
    #[serde(default)]
    expect_tasks: BTreeMap<String, Expect>,
    #[serde(default)]
    expect_jobs: BTreeMap<String, Expect>,
    #[serde(default)]
    rounds: Option<u32>,
    #[serde(default)]
    difference: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Topology {
    name: String,
    levels: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Node {
    name: String,
    gpus: u32,
    #[serde(default)]
    gpu_memory_mib: Option<u32>,
    #[serde(default)]
    cpu_millis: Option<f64>,
    #[serde(default)]
    memory: Option<f64>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    kai_fields: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobSpec {
    name: String,
    queue: Option<String>,
    #[serde(default)]
    gpus_per_task: Option<f64>,
    #[serde(default)]
    gpu_memory_mib: Option<u32>,
    #[serde(default)]
    fraction_devices: Option<u32>,
    #[serde(default)]
    cpus_per_task: Option<f64>,
    #[serde(default)]
    memory_per_task: Option<f64>,
    #[serde(default)]
    min_available: Option<u32>,
    #[serde(default)]
    priority: Option<String>,
    #[serde(default)]
    sub_groups: Option<SubGroup>,
    tasks: Vec<Task>,
    #[serde(default)]
    kai_fields: Vec<String>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct SubGroup {
    name: String,
    #[serde(default)]
    min_sub_group: Option<u32>,
    #[serde(default)]
    topology: Option<Constraint>,
    #[serde(default)]
    children: Vec<SubGroup>,
    #[serde(default)]
    pod_sets: Vec<SubGroupPods>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct SubGroupPods {
    name: String,
    min: u32,
    #[serde(default)]
    topology: Option<Constraint>,
}

#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
struct Constraint {
    #[serde(default)]
    topology: Option<String>,
    #[serde(default)]
    required: Option<String>,
    #[serde(default)]
    preferred: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Task {
    state: String,
    #[serde(default)]
    node: Option<String>,
    #[serde(default)]
    sub_group: Option<String>,
    #[serde(default)]
    gpu_groups: Vec<String>,
    #[serde(default)]
    node_affinity: Vec<String>,
    #[serde(default)]
    priority: Option<i64>,
    #[serde(default)]
    gpus: Option<f64>,
    #[serde(default)]
    kai_fields: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
struct Queue {
    Name: String,
    #[serde(default)]
    ParentQueue: Option<String>,
    #[serde(default)]
    DeservedGPUs: Option<f64>,
    #[serde(default)]
    MaxAllowedGPUs: Option<f64>,
    #[serde(default)]
    GPUOverQuotaWeight: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Strategy {
    gpu: String,
    cpu: String,
    shared_gpus: String,
    #[serde(default)]
    plugins: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    status: String,
    #[serde(default)]
    node: Option<String>,
    #[serde(default)]
    gpus: Option<f64>,
    #[serde(default)]
    gpu_groups: Vec<String>,
}

/// Default allocatable of KAI's fake nodes: CPU millicores and memory bytes.
const NODE_CPU_MILLIS: f64 = 20_000.0;
const NODE_MEMORY_BYTES: f64 = 20e9;
/// KAI's GPU memory when a node has no `nvidia.com/gpu.memory` label, MiB.
const KAI_DEFAULT_GPU_MEMORY: u32 = 100;

fn strategy(s: &str) -> PlacementStrategy {
    // Without KAI's nodeplacement plugin node order is unspecified; binpack stands in.
    PlacementStrategy::parse(s).unwrap_or_default()
}

/// Where each task went: node name and GPU ids, `None` when not placed.
type Outcome = BTreeMap<String, Option<(String, Vec<u32>, u32)>>;

fn build_cluster(case: &Case) -> Result<(Cluster, Vec<String>), String> {
    let levels: Vec<String> = match case.topologies.as_slice() {
        [] => Vec::new(),
        [t] => t.levels.clone(),
        _ => return Err("several topologies".to_owned()),
    };
    let mut all_levels = levels.clone();
    all_levels.push(topology::HOSTNAME_LABEL.to_owned());
    let records = case
        .nodes
        .iter()
        .map(|n| {
            let mut labels = n.labels.clone();
            labels.insert(topology::HOSTNAME_LABEL.to_owned(), n.name.clone());
            let mem = n.gpu_memory_mib.unwrap_or(KAI_DEFAULT_GPU_MEMORY);
            NodeRecord {
                name: n.name.clone(),
                gpus: n.gpus,
                // Scaled by 1024 (see the module notes), floored to 100 as KAI does.
                gpu_memory_gib: mem - mem % 100,
                nics: NicSpec {
                    rails: 1,
                    ports_per_rail: 1,
                    port_gbps: 400.0,
                },
                nvlink_gbps: 3600.0,
                nvlink_domain: None,
                labels,
                taints: Vec::new(),
                ready: true,
                unschedulable: false,
                internal_ip: None,
                allocatable: Default::default(),
            }
        })
        .collect();
    let tier = TierParams {
        latency_ns: 1000,
        oversubscription: 1.0,
        switches_per_group: Some(1),
    };
    let c = assemble(
        "kai-case",
        records,
        &FabricParams {
            levels: all_levels.clone(),
            host_label: topology::HOSTNAME_LABEL.to_owned(),
            tiers: vec![tier; all_levels.len()],
            rail_optimized: false,
        },
    )
    .map_err(|e| format!("cluster: {e}"))?;
    Ok((c, levels))
}

/// One task's GPU request: the job's, or the task's own `RequiredGPUs`.
fn task_gpu(j: &JobSpec, t: &Task) -> Result<GpuRequest, String> {
    match (t.gpus, j.gpus_per_task) {
        (Some(g), None) if g >= 1.0 && g.fract() == 0.0 => Ok(GpuRequest::Whole(g as u32)),
        (Some(g), _) => Err(format!("task GPUs {g}")),
        (None, _) => gpu_request(j),
    }
}

fn gpu_request(j: &JobSpec) -> Result<GpuRequest, String> {
    // KAI's fake jobs: `RequiredMultiFractionDevicesPerTask` makes a shared request take that
    // many devices (the `gpu-fraction-num-devices` annotation).
    let devices = j.fraction_devices.unwrap_or(1);
    if let Some(m) = j.gpu_memory_mib {
        return Ok(GpuRequest::MemoryMib {
            mib: m * 1024,
            devices,
        });
    }
    let g = j.gpus_per_task.unwrap_or(0.0);
    if g >= 1.0 || g == 0.0 {
        if g.fract() != 0.0 {
            return Err(format!("{g} GPUs per task"));
        }
        Ok(GpuRequest::Whole(g as u32))
    } else {
        Ok(GpuRequest::Fraction {
            milli: (g * f64::from(MILLI_PER_GPU)).round() as u32,
            devices,
        })
    }
}

fn priority(j: &JobSpec) -> i32 {
    match j.priority.as_deref() {
        Some("PriorityBuildNumber") => 100,
        Some("PriorityTrainNumber") => 50,
        _ => 0,
    }
}

fn is_active(state: &str) -> bool {
    matches!(
        state,
        "Running" | "Releasing" | "Pipelined" | "Binding" | "Bound"
    )
}

/// A job placed in steps: per pod set the nodes of its pods placed so far and its tasks placed,
/// and the steps taken.
type Grown = (Vec<Vec<NodeId>>, Vec<usize>, usize);

/// One node of a flattened sub-group tree: name, parent, constraint, and the minimum (members
/// for a sub-group, `None` = all; pods for a pod set).
type Flat = (String, Option<usize>, Constraint, Option<u32>);

/// A sub-group tree flattened, parents first: the sub-groups and the leaf pod sets. KAI's root
/// sub-group set is a sub-group too.
fn flatten(sg: &SubGroup, parent: Option<usize>, groups: &mut Vec<Flat>, sets: &mut Vec<Flat>) {
    let me = groups.len();
    groups.push((
        sg.name.clone(),
        parent,
        sg.topology.clone().unwrap_or_default(),
        sg.min_sub_group,
    ));
    for p in &sg.pod_sets {
        sets.push((
            p.name.clone(),
            Some(me),
            p.topology.clone().unwrap_or_default(),
            Some(p.min),
        ));
    }
    for child in &sg.children {
        flatten(child, Some(me), groups, sets);
    }
}

fn topology_request(c: &Cluster, constraint: &Constraint) -> Result<TopologyRequest, String> {
    let level = |l: &Option<String>| -> Result<Option<usize>, String> {
        match l {
            None => Ok(None),
            Some(l) => c
                .level_by_label(l)
                .map(Some)
                .ok_or_else(|| format!("unknown level {l}")),
        }
    };
    Ok(TopologyRequest {
        required: level(&constraint.required)?,
        preferred: level(&constraint.preferred)?,
        slices: Vec::new(),
    })
}

fn run(case: &Case) -> Result<(), String> {
    let (cluster, _) = build_cluster(case)?;
    if case.nodes.iter().any(|n| !n.kai_fields.is_empty()) {
        return Err("node fields railyard does not model".to_owned());
    }
    let strat = case
        .strategy
        .as_ref()
        .map_or_else(KaiStrategy::default, |s| {
            let _ = &s.plugins;
            KaiStrategy {
                gpu: strategy(&s.gpu),
                cpu: strategy(&s.cpu),
                shared_gpus: strategy(&s.shared_gpus),
            }
        });
    let needs_resources = case
        .jobs
        .iter()
        .any(|j| j.cpus_per_task.is_some() || j.memory_per_task.is_some());
    let node_free = if needs_resources {
        NodeFree(
            case.nodes
                .iter()
                .map(|n| {
                    ResourceList::from([
                        (
                            "cpu".to_owned(),
                            n.cpu_millis.unwrap_or(NODE_CPU_MILLIS) as u64,
                        ),
                        (
                            "memory".to_owned(),
                            n.memory.unwrap_or(NODE_MEMORY_BYTES) as u64,
                        ),
                        (sched::PODS.to_owned(), 110),
                    ])
                })
                .collect(),
        )
    } else {
        NodeFree::default()
    };
    let mut occupancy = Occupancy::new(&cluster);
    let mut outcome: Outcome = BTreeMap::new();
    let mut queue_gpus: BTreeMap<String, f64> = BTreeMap::new();
    let mut queue_gpus_np: BTreeMap<String, f64> = BTreeMap::new();
    let parent_of = |q: &str| {
        case.queues
            .iter()
            .find(|x| x.Name == q)
            .and_then(|x| x.ParentQueue.clone())
    };
    // Active tasks first, on their nodes; GPU groups name GPUs per node in order of appearance.
    let mut group_gpu: BTreeMap<(String, String), u32> = BTreeMap::new();
    let mut next_gpu: BTreeMap<String, u32> = BTreeMap::new();
    for j in &case.jobs {
        let queue = j.queue.clone().unwrap_or_default();
        let mut pods = Vec::new();
        for (i, t) in j.tasks.iter().enumerate() {
            if !is_active(&t.state) {
                continue;
            }
            let gpu = task_gpu(j, t)?;
            let node_name = t.node.clone().ok_or("active task without node")?;
            let node = cluster.node_by_name(&node_name).ok_or("unknown node")?;
            let mem = occupancy.gpu_memory_mib(node);
            let (gpu_ids, milli, memory) = match gpu {
                GpuRequest::Whole(0) => (Vec::new(), MILLI_PER_GPU, mem),
                GpuRequest::Whole(g) => {
                    let start = next_gpu.entry(node_name.clone()).or_default();
                    let ids: Vec<u32> = (*start..*start + g).collect();
                    *start += g;
                    (ids, MILLI_PER_GPU, mem)
                }
                GpuRequest::Fraction { milli, .. } => {
                    let ids = gpus_of(&mut group_gpu, &mut next_gpu, &node_name, &t.gpu_groups);
                    (
                        ids,
                        milli,
                        (u64::from(milli) * u64::from(mem)).div_ceil(1000) as u32,
                    )
                }
                GpuRequest::MemoryMib { mib, .. } => {
                    let ids = gpus_of(&mut group_gpu, &mut next_gpu, &node_name, &t.gpu_groups);
                    (
                        ids,
                        ((u64::from(mib) * 1000).div_ceil(u64::from(mem.max(1))) as u32).max(1),
                        mib,
                    )
                }
            };
            let gpus = if gpu_ids.is_empty() {
                0.0
            } else {
                f64::from(milli) * gpu_ids.len() as f64 / 1000.0
            };
            for name in [Some(queue.clone()), parent_of(&queue)]
                .into_iter()
                .flatten()
            {
                *queue_gpus.entry(name.clone()).or_default() += gpus;
                if priority(j) >= 100 {
                    *queue_gpus_np.entry(name).or_default() += gpus;
                }
            }
            outcome.insert(
                format!("{}-{i}", j.name),
                Some((node_name.clone(), gpu_ids.clone(), milli)),
            );
            pods.push(PodAllocation {
                node,
                gpu_ids,
                milli,
                memory_mib: memory,
            });
        }
        if !pods.is_empty() {
            occupancy
                .allocate(
                    RunningJob {
                        name: format!("{}#running", j.name),
                        queue: queue.clone(),
                        priority: priority(j),
                        preemptible: true,
                    },
                    pods,
                )
                .map_err(|e| format!("running tasks: {e}"))?;
        }
    }
    // Pending jobs in KAI's order (`sched::next_pending`, asked again after every job): fair
    // shares from the running and pending GPUs, CPU and memory, as KAI's session computes them
    // once; what each queue holds grows with every job placed.
    let tree = kai_queue_tree(case)?;
    let node_total = |f: &dyn Fn(&Node) -> f64| case.nodes.iter().map(f).sum::<f64>();
    let capacity = Resources {
        gpu: node_total(&|n| f64::from(n.gpus)),
        cpu: node_total(&|n| n.cpu_millis.unwrap_or(NODE_CPU_MILLIS)),
        memory: node_total(&|n| n.memory.unwrap_or(NODE_MEMORY_BYTES)),
    };
    let mut allocated = vec![Resources::default(); tree.queues.len()];
    for (name, &gpus) in &queue_gpus {
        if let Some(q) = tree.find(name).filter(|&q| tree.is_leaf(q)) {
            allocated[q.index()].gpu += gpus;
        }
    }
    // KAI's harness makes jobs in order of priority (higher first), then file order: that is
    // their creation order, the job order's last tie-break.
    let mut by_age: Vec<&JobSpec> = case.jobs.iter().collect();
    by_age.sort_by_key(|j| -priority(j));
    let mut waiting: Vec<(&JobSpec, PendingJob)> = Vec::new();
    // (A job's `request` is what its pending pods take; KAI's queue order weighs the next
    // step's pods, which differs only for a job placed in several steps.)
    for j in by_age {
        let pending: Vec<&Task> = j.tasks.iter().filter(|t| t.state == "Pending").collect();
        if pending.is_empty() {
            continue;
        }
        let count = pending.len() as u32;
        let mut gpus = 0.0;
        for t in pending {
            gpus += gpus_wanted(case, task_gpu(j, t)?, 1);
        }
        let queue = j.queue.clone().unwrap_or_default();
        let q = tree
            .find(&queue)
            .ok_or_else(|| format!("job {}: queue {queue} is not in the case", j.name))?;
        let n = f64::from(count);
        let request = Resources {
            gpu: gpus,
            cpu: n * j.cpus_per_task.unwrap_or(0.0),
            memory: n * j.memory_per_task.unwrap_or(0.0),
        };
        waiting.push((
            j,
            PendingJob {
                queue: q,
                priority: priority(j),
                request,
                gang: GangStanding::Below,
            },
        ));
    }
    let mut demand = allocated.clone();
    for (_, p) in &waiting {
        demand[p.queue.index()] = demand[p.queue.index()].add(&p.request);
    }
    let fair = fair_share_in(&tree, &demand, &capacity, Dialect::Kai);
    // Per job placed in steps: the nodes of its pods placed so far and its tasks placed, per
    // sub-group pod set; and how many steps it took (each committed under its own name).
    let mut grown: BTreeMap<String, Grown> = BTreeMap::new();
    loop {
        let jobs: Vec<PendingJob> = waiting.iter().map(|(_, p)| p.clone()).collect();
        let standing = QueueStanding {
            tree: &tree,
            fair_share: &fair,
            allocated: &allocated,
            total: capacity,
        };
        let Some(next) = next_pending(Dialect::Kai, &standing, &jobs) else {
            break;
        };
        let (j, pending_job) = waiting.remove(next);
        let (grown_nodes, grown_tasks, steps) = grown.get(&j.name).cloned().unwrap_or_default();
        let pending: Vec<usize> = (0..j.tasks.len())
            .filter(|&i| j.tasks[i].state == "Pending")
            .collect();
        if pending
            .iter()
            .any(|&i| !j.tasks[i].node_affinity.is_empty())
        {
            return Err("node affinity in tasks".to_owned());
        }
        if !j.kai_fields.is_empty() {
            return Err(format!("job fields {:?}", j.kai_fields));
        }
        let queue = j.queue.clone().unwrap_or_default();
        let mut requests = ResourceList::new();
        if let Some(c) = j.cpus_per_task {
            // KAI's fake jobs give CPU in millicores.
            requests.insert("cpu".to_owned(), c as u64);
        }
        if let Some(m) = j.memory_per_task {
            requests.insert("memory".to_owned(), m as u64);
        }
        // Pod sets: one per leaf sub-group with pending tasks (the default one otherwise,
        // directly under the root sub-group); sub-groups above them.
        let mut groups: Vec<Flat> = Vec::new();
        let mut sets: Vec<Flat> = Vec::new();
        if let Some(sg) = &j.sub_groups {
            flatten(sg, None, &mut groups, &mut sets);
        }
        if sets.is_empty() {
            let parent = (!groups.is_empty()).then_some(0);
            sets.push((
                "default".to_owned(),
                parent,
                Constraint::default(),
                j.min_available,
            ));
        }
        if j.tasks.iter().any(|t| !t.kai_fields.is_empty()) {
            return Err("task fields railyard does not model".to_owned());
        }
        let set_of = |t: &Task| -> usize {
            t.sub_group
                .as_ref()
                .and_then(|s| sets.iter().position(|(n, _, _, _)| n == s))
                .unwrap_or(0)
        };
        for (_, _, c, _) in groups.iter() {
            if c.topology.is_some()
                && case.topologies.first().map(|t| &t.name) != c.topology.as_ref()
            {
                return Err("constraint names another topology".to_owned());
            }
        }
        let mut pod_sets = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut parents: Vec<Option<usize>> = Vec::new();
        let mut running_on: Vec<Vec<NodeId>> = Vec::new();
        let mut set_index: Vec<usize> = Vec::new();
        for (k, (name, parent, constraint, min)) in sets.iter().enumerate() {
            // Its running pods (committed above) count towards its minimum: KAI grows from them.
            let running: Vec<&Task> = j
                .tasks
                .iter()
                .filter(|t| is_active(&t.state) && set_of(t) == k)
                .collect();
            let mut nodes = Vec::new();
            for t in &running {
                let n = t.node.as_deref().ok_or("active task without node")?;
                nodes.push(cluster.node_by_name(n).ok_or("unknown node")?);
            }
            // Pods this runner placed in earlier steps run too.
            nodes.extend(grown_nodes.get(k).into_iter().flatten().copied());
            let done = grown_tasks.get(k).copied().unwrap_or(0);
            // KAI's task order: higher task priority first, then list order.
            let mut tasks: Vec<usize> = pending
                .iter()
                .copied()
                .filter(|&i| set_of(&j.tasks[i]) == k)
                .collect();
            tasks.sort_by_key(|&i| -j.tasks[i].priority.unwrap_or(0));
            // A pod set has one GPU request: its tasks must agree.
            let mut gpus = Vec::new();
            for t in tasks
                .iter()
                .map(|&i| &j.tasks[i])
                .chain(running.iter().copied())
            {
                gpus.push(task_gpu(j, t)?);
            }
            if gpus.windows(2).any(|w| w[0] != w[1]) {
                return Err("tasks of one pod set with different GPUs".to_owned());
            }
            let Some(&gpu) = gpus.first() else { continue };
            if constraint.topology.is_some()
                && case.topologies.first().map(|t| &t.name) != constraint.topology.as_ref()
            {
                return Err("constraint names another topology".to_owned());
            }
            let count = (tasks.len() + running.len()) as u32;
            tasks.drain(..done.min(tasks.len()));
            pod_sets.push(PodSet {
                name: name.clone(),
                count,
                min_count: min.map_or(count, |m| m.clamp(1, count)),
                gpu,
                cpu_millis: 0,
                memory_mib: 0,
                topology: topology_request(&cluster, constraint)?,
            });
            members.push(tasks);
            parents.push(*parent);
            running_on.push(nodes);
            set_index.push(k);
        }
        let job = Job {
            name: j.name.clone(),
            queue: queue.clone(),
            priority: priority(j),
            preemptible: true,
            pod_sets,
            tolerations: Vec::new(),
        };
        job.check(&cluster).map_err(|e| format!("job: {e}"))?;
        let input = PlaceInput {
            options: PlaceOptions {
                dialect: Dialect::Kai,
                strategy: strat,
                ..PlaceOptions::default()
            },
            node_free: node_free.clone(),
            pod_sets: parents
                .iter()
                .zip(&running_on)
                .map(|(&parent, nodes)| PodSetExtras {
                    requests: requests.clone(),
                    sub_group: parent,
                    running_on: nodes.clone(),
                    ..PodSetExtras::default()
                })
                .collect(),
            sub_groups: groups
                .iter()
                .map(|(name, parent, constraint, min)| {
                    Ok(sched::SubGroup {
                        name: name.clone(),
                        parent: *parent,
                        topology: topology_request(&cluster, constraint)?,
                        min_sub_groups: *min,
                    })
                })
                .collect::<Result<_, String>>()?,
        };
        // This attempt's pods (KAI's next step for a job with sub-groups, else all pending
        // pods) and what they take from the queue.
        let step: Vec<u32> = if input.sub_groups.is_empty() {
            members.iter().map(|m| m.len() as u32).collect()
        } else {
            kai_next_step(&job, &input)
        };
        let pods_in_step = f64::from(step.iter().sum::<u32>());
        let want: f64 = step
            .iter()
            .zip(&job.pod_sets)
            .map(|(&n, set)| gpus_wanted(case, set.gpu, n))
            .sum();
        let step_request = Resources {
            gpu: want,
            cpu: pods_in_step * j.cpus_per_task.unwrap_or(0.0),
            memory: pods_in_step * j.memory_per_task.unwrap_or(0.0),
        };
        // KAI: priority 100 and above is not preemptible and must stay within deserved quota.
        let non_preemptible = priority(j) >= 100;
        let mut over_limit = false;
        let parent = case
            .queues
            .iter()
            .find(|q| q.Name == queue)
            .and_then(|q| q.ParentQueue.clone());
        let chain = [Some(queue.clone()), parent];
        for (k, name) in chain.iter().enumerate() {
            let Some(name) = name else { continue };
            let list = if k == 0 {
                &case.queues
            } else {
                &case.departments
            };
            let Some(q) = list.iter().find(|q| q.Name == *name) else {
                continue;
            };
            let used = queue_gpus.get(name).copied().unwrap_or(0.0);
            let used_np = queue_gpus_np.get(name).copied().unwrap_or(0.0);
            if q.MaxAllowedGPUs
                .is_some_and(|m| m >= 0.0 && used + want > m + 1e-9)
            {
                over_limit = true;
            }
            if non_preemptible
                && q.DeservedGPUs
                    .is_some_and(|d| d >= 0.0 && used_np + want > d + 1e-9)
            {
                over_limit = true;
            }
        }
        let placed = if over_limit {
            None
        } else {
            place_kai_step(&cluster, &occupancy, &job, &input).ok()
        };
        match placed {
            Some(p) => {
                let q = pending_job.queue.index();
                allocated[q] = allocated[q].add(&step_request);
                for name in chain.iter().flatten() {
                    *queue_gpus.entry(name.clone()).or_default() += want;
                    if non_preemptible {
                        *queue_gpus_np.entry(name.clone()).or_default() += want;
                    }
                }
                // Pods of a pod set come in rank order; hand them to its tasks in order.
                let (mut nodes, mut done, _) = grown.remove(&j.name).unwrap_or_default();
                nodes.resize(sets.len(), Vec::new());
                done.resize(sets.len(), 0);
                let mut next: Vec<usize> = vec![0; members.len()];
                for pod in &p.pods {
                    let task = members[pod.pod_set][next[pod.pod_set]];
                    next[pod.pod_set] += 1;
                    nodes[set_index[pod.pod_set]].push(pod.node);
                    done[set_index[pod.pod_set]] += 1;
                    outcome.insert(
                        format!("{}-{task}", j.name),
                        Some((
                            cluster.node(pod.node).name.clone(),
                            pod.gpu_ids.clone(),
                            pod.milli,
                        )),
                    );
                }
                let mut step_job = job.clone();
                step_job.name = format!("{}#step{steps}", j.name);
                sched::commit(&mut occupancy, &step_job, &p).map_err(|e| format!("commit: {e}"))?;
                // KAI puts the job back while it has pods to place, standing against its gang.
                let left: usize = members.iter().zip(&next).map(|(m, &n)| m.len() - n).sum();
                if left > 0 && !p.pods.is_empty() {
                    let mut gang = GangStanding::At;
                    for (k, set) in job.pod_sets.iter().enumerate() {
                        let now = running_on[k].len() + next[k];
                        match now.cmp(&(set.min_count as usize)) {
                            std::cmp::Ordering::Less => gang = GangStanding::Below,
                            std::cmp::Ordering::Greater if gang != GangStanding::Below => {
                                gang = GangStanding::Above
                            }
                            _ => {}
                        }
                    }
                    let mut request = pending_job.request;
                    request.gpu = (request.gpu - want).max(0.0);
                    waiting.push((
                        j,
                        PendingJob {
                            gang,
                            request,
                            ..pending_job
                        },
                    ));
                }
                grown.insert(j.name.clone(), (nodes, done, steps + 1));
            }
            None => {
                for &i in members.iter().flatten() {
                    outcome.insert(format!("{}-{i}", j.name), None);
                }
            }
        }
    }
    compare(case, &outcome)
}

/// GPUs a job's `count` pending tasks count for against queues: KAI counts a memory request
/// as its share of the smallest GPU that could take it.
fn gpus_wanted(case: &Case, gpu: GpuRequest, count: u32) -> f64 {
    let memory = match gpu {
        GpuRequest::MemoryMib { mib, .. } => case
            .nodes
            .iter()
            .map(|n| n.gpu_memory_mib.unwrap_or(KAI_DEFAULT_GPU_MEMORY) * 1024)
            .filter(|&g| g >= mib)
            .min()
            .unwrap_or(mib),
        _ => KAI_DEFAULT_GPU_MEMORY * 1024,
    };
    f64::from(count) * gpu.gpus(memory)
}

/// The case's queues as KAI's test harness makes them (`BuildQueueInfoMap`,
/// `BuildDepartmentInfoMap`): GPU quota, limit (0: none) and over-quota weight as given (the
/// weight 0 when not), CPU and memory unlimited; departments weighted by their quota; without
/// departments, every queue under one unlimited `default` department; created in list order.
fn kai_queue_tree(case: &Case) -> Result<QueueTree, String> {
    let unlimited = ResourceQuota {
        quota: UNLIMITED,
        limit: UNLIMITED,
        over_quota_weight: 1.0,
    };
    let limit = |m: Option<f64>| m.filter(|&m| m != 0.0).unwrap_or(UNLIMITED);
    let spec = |name: &str, parent: Option<String>, gpu: ResourceQuota, index: usize| QueueSpec {
        name: name.to_owned(),
        parent,
        priority: 0,
        resources: [Some(gpu), Some(unlimited), Some(unlimited)],
        creation_time: Some(index as i64),
        uid: None,
    };
    let mut specs = Vec::new();
    if case.departments.is_empty() {
        specs.push(spec("default", None, unlimited, 0));
    }
    for (i, d) in case.departments.iter().enumerate() {
        let quota = d.DeservedGPUs.unwrap_or(0.0);
        let gpu = ResourceQuota {
            quota,
            limit: limit(d.MaxAllowedGPUs),
            over_quota_weight: quota.max(0.0),
        };
        specs.push(spec(&d.Name, None, gpu, i));
    }
    for (i, q) in case.queues.iter().enumerate() {
        let parent = if case.departments.is_empty() {
            Some("default".to_owned())
        } else {
            q.ParentQueue.clone()
        };
        let gpu = ResourceQuota {
            quota: q.DeservedGPUs.unwrap_or(0.0),
            limit: limit(q.MaxAllowedGPUs),
            over_quota_weight: q.GPUOverQuotaWeight.unwrap_or(0.0),
        };
        specs.push(spec(&q.Name, parent, gpu, i));
    }
    QueueTree::new_in(specs, Dialect::Kai)
        .map(|(tree, _)| tree)
        .map_err(|p| format!("queue tree: {p:?}"))
}

/// The GPUs of a running shared task: one per GPU group it names (one when it names none),
/// each group a GPU of its node in order of first appearance.
fn gpus_of(
    group_gpu: &mut BTreeMap<(String, String), u32>,
    next_gpu: &mut BTreeMap<String, u32>,
    node: &str,
    groups: &[String],
) -> Vec<u32> {
    let unnamed = [String::new()];
    let groups = if groups.is_empty() {
        &unnamed[..]
    } else {
        groups
    };
    groups
        .iter()
        .map(|group| {
            *group_gpu
                .entry((node.to_owned(), group.clone()))
                .or_insert_with(|| {
                    let n = next_gpu.entry(node.to_owned()).or_default();
                    *n += 1;
                    *n - 1
                })
        })
        .collect()
}

/// KAI's expectations against the outcome: placed tasks on the expected node, pending tasks
/// not placed, tasks KAI puts in one GPU group sharing one GPU here (and only those).
fn compare(case: &Case, outcome: &Outcome) -> Result<(), String> {
    let mut problems = Vec::new();
    let mut by_group: BTreeMap<(String, String), (String, u32)> = BTreeMap::new();
    for (task, e) in &case.expect_tasks {
        if !peer_tasks(case, task).contains(task) {
            // KAI's matcher skips expectations for tasks its jobs do not have.
            continue;
        }
        let got = outcome.get(task).cloned().flatten();
        let placed_expected = matches!(
            e.status.as_str(),
            "Binding" | "Pipelined" | "Running" | "Releasing" | "Bound"
        );
        match (&got, placed_expected) {
            (None, true) => problems.push(format!("{task}: not placed, KAI {}", e.status)),
            (Some((n, _, _)), false) => {
                problems.push(format!("{task}: placed on {n}, KAI {}", e.status))
            }
            (Some((n, ids, _)), true) => {
                if let Some(want) = &e.node {
                    // Pods of one sub-group are interchangeable: compare the nodes as a multiset.
                    let peers = peer_tasks(case, task);
                    let mut ours: Vec<String> = peers
                        .iter()
                        .filter_map(|t| outcome.get(t).cloned().flatten().map(|x| x.0))
                        .collect();
                    let mut theirs: Vec<String> = peers
                        .iter()
                        .filter_map(|t| case.expect_tasks.get(t).and_then(|x| x.node.clone()))
                        .collect();
                    ours.sort();
                    theirs.sort();
                    if want != n && ours != theirs {
                        problems.push(format!("{task}: on {n}, KAI {want}"));
                    }
                }
                if let (Some(g), Some(&id)) = (e.gpu_groups.first(), ids.first()) {
                    let key = (n.clone(), g.clone());
                    let here = (n.clone(), id);
                    if let Some(prev) = by_group.get(&key) {
                        if *prev != here {
                            problems.push(format!("{task}: GPU group {g} split over GPUs"));
                        }
                    }
                    if by_group.iter().any(|(k, v)| *v == here && *k != key) {
                        problems.push(format!("{task}: shares a GPU with another KAI group"));
                    }
                    by_group.insert(key, here);
                }
                if let Some(g) = e.gpus {
                    let (_, ids, milli) = got.as_ref().expect("placed");
                    let have = f64::from(*milli) * ids.len() as f64 / 1000.0;
                    let gpu_memory = case.jobs.iter().any(|j| {
                        task.starts_with(&format!("{}-", j.name)) && j.gpu_memory_mib.is_some()
                    });
                    if !gpu_memory && (have - g).abs() > 1e-6 && !ids.is_empty() {
                        problems.push(format!("{task}: {have} GPUs, KAI {g}"));
                    }
                }
            }
            (None, false) => {}
        }
    }
    for (job, e) in &case.expect_jobs {
        let tasks: Vec<_> = outcome
            .iter()
            .filter(|(k, _)| k.rsplit_once('-').is_some_and(|(j, _)| j == job))
            .collect();
        let placed = tasks.iter().any(|(_, v)| v.is_some());
        let pending_expected = e.status == "Pending";
        if placed == pending_expected && !tasks.is_empty() {
            problems.push(format!("job {job}: placed {placed}, KAI {}", e.status));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The tasks of the same job and sub-group as `task` (named `<job>-<index>`).
fn peer_tasks(case: &Case, task: &str) -> Vec<String> {
    for j in &case.jobs {
        let Some(i) = task
            .strip_prefix(&format!("{}-", j.name))
            .and_then(|i| i.parse::<usize>().ok())
        else {
            continue;
        };
        let Some(t) = j.tasks.get(i) else {
            return Vec::new();
        };
        return (0..j.tasks.len())
            .filter(|&k| j.tasks[k].sub_group == t.sub_group && j.tasks[k].state == t.state)
            .map(|k| format!("{}-{k}", j.name))
            .collect();
    }
    vec![task.to_owned()]
}

fn case_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kai/allocate");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/kai/allocate")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("allocate_") && n.ends_with(".yaml"))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn kais_allocate_tests_agree_or_carry_a_difference() {
    let mut failures = Vec::new();
    let (mut n_cases, mut n_pass) = (0, 0);
    for path in case_files() {
        let text = std::fs::read_to_string(&path).expect("case file");
        let file: CaseFile =
            serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for case in &file.cases {
            n_cases += 1;
            let _ = (&case.nodes_from, case.rounds, &case.test);
            let at = format!("{} / {}", file.file, case.case);
            match (run(case), &case.difference) {
                (Ok(()), None) => n_pass += 1,
                (Err(e), None) => failures.push(format!("{at}: {e}")),
                (Err(_), Some(_)) => {}
                (Ok(()), Some(d)) => failures.push(format!(
                    "{at}: now agrees with KAI; remove `difference: {d}`"
                )),
            }
        }
    }
    eprintln!("KAI allocate cases: {n_cases}, {n_pass} pass");
    assert!(n_cases >= 50, "only {n_cases} KAI allocate cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The queue fields the runner reads (kept so the data's quota facts are visible in one place).
#[allow(dead_code)]
fn queue_facts(q: &Queue) -> (Option<&String>, Option<f64>, Option<f64>) {
    (q.ParentQueue.as_ref(), q.DeservedGPUs, q.GPUOverQuotaWeight)
}

#[allow(dead_code)]
fn node_id(c: &Cluster, name: &str) -> Option<NodeId> {
    c.node_by_name(name)
}
