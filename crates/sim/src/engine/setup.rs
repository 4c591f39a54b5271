//! Before the first event: the trace's rows as the scheduler's jobs (pods, GPU requests,
//! topology requests under the policy's mode), their queues, placement classes, size groups and
//! checkpoints, the failures to replay, the initial [`State`] and the first events. Every problem
//! with the inputs is found here, before anything runs.
//!
//! Design note (2026-12-02). A row's scheduler job (`sched::Job`: its name, queue and pod set,
//! about 330 bytes with its strings) is made here once to check it and to derive what the run
//! keeps for every row (its ask, its placement class), then dropped; [`arrive_job`] makes it
//! again when the row arrives, and it is dropped when the row completes or fails
//! (`LiveJobs::retire`). A run then holds the jobs of its pending and running rows only: a
//! million-row trace at 80% load holds a few thousand instead of a million (313 MiB). Making
//! it is deterministic and was checked here, so it cannot fail at arrival.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use sched::{
    GpuRequest, Job, Occupancy, PodSet, QueueId, QueueSpec, QueueTree, Resources, TopologyRequest,
};
use topology::{Cluster, NodeId};

use crate::engine::config::{Order, Policy, SimConfig, TopologyMode};
use crate::engine::error::SimError;
use crate::engine::event::Event;
use crate::engine::node_failures::failure_list;
use crate::engine::pending_by_size::PendingBySize;
use crate::engine::place_memo::PlaceMemo;
use crate::engine::results::{JobRecord, Outcome};
use crate::engine::state::{refresh_weng, BuildFnv, LiveJobs, State, TiresiasJob};
use crate::engine::weng::{whole_gpu_table, Weng};
use crate::events::EventQueue;
use crate::failures::{Checkpointing, NodeFailure};
use crate::fragmentation::Workload;
use crate::queues::QueueRules;
use crate::runtime::CommProfile;
use crate::shares;
use crate::time::SimTime;
use crate::trace::{TopologyAsk, TraceJob};

/// What [`prepare`] builds: the state before the first event, the failures to replay, and the
/// nodes' free room on an empty cluster (for the arrivals' feasibility).
pub(super) struct Prepared<'a> {
    pub(super) st: State<'a>,
    pub(super) failures: Vec<NodeFailure>,
    pub(super) empty_room: sched::NodeFree,
}

/// The state of a run of `trace` on `cluster` under `config` before its first event, or the
/// first problem with the inputs.
pub(super) fn prepare<'a>(
    cluster: &'a Cluster,
    trace: &'a [TraceJob],
    config: &'a SimConfig,
) -> Result<Prepared<'a>, SimError> {
    let node_gpus = cluster.nodes.iter().map(|n| n.gpus).max().unwrap_or(0);
    if node_gpus == 0 {
        return Err(SimError::NoGpus);
    }
    let origin = trace
        .iter()
        .map(|j| j.submit_s)
        .fold(f64::INFINITY, f64::min);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    check_names(trace)?;
    let Rows {
        comm,
        records,
        submit,
        requests,
        class,
        class_extras,
    } = rows(cluster, trace, config, node_gpus, origin)?;
    let rules = match &config.queues {
        Some(q) => Some(QueueRules::new(q).map_err(|ps| SimError::Queues(ps.join("; ")))?),
        None => None,
    };
    let (queue_tree, queue_of) = queues_of(trace, rules.as_ref())?;
    let asks_room = trace
        .iter()
        .any(|t| t.pod.cpu_milli > 0 || t.pod.memory_mib > 0);
    let empty_room = if asks_room {
        shares::empty_room(cluster)
    } else {
        sched::NodeFree::default()
    };
    let (groups, size_group) = size_groups(&records, &requests);
    let n_queues = queue_tree.queues.len();
    let checkpointing = checkpointing(trace, config);
    let failures = failure_list(cluster, trace, &config.failures)?;
    let workload = Workload::of(trace, node_gpus);
    let network_places = config.policy.network_aware && comm.iter().any(|c| c.comm_share > 0.0);
    let mut st = State {
        cluster: Cow::Borrowed(cluster),
        config,
        network_places,
        durations: trace.iter().map(|t| t.duration_s).collect(),
        jobs: LiveJobs::new(trace.len(), node_gpus),
        comm,
        submit,
        records,
        occupancy: Occupancy::with_node_tracking(cluster),
        pending: BTreeMap::new(),
        running: BTreeMap::new(),
        queue_tree,
        queue_of,
        requests,
        usage: vec![Resources::default(); n_queues],
        non_preemptible: vec![Resources::default(); n_queues],
        queue_timeline: if rules.is_some() {
            vec![vec![(SimTime::ZERO, 0.0)]; n_queues]
        } else {
            Vec::new()
        },
        rules,
        total_gpus: cluster.gpu_count() as f64,
        busy_gpus: 0.0,
        busy_integral: 0.0,
        last_busy_change: SimTime::ZERO,
        timeline: vec![(SimTime::ZERO, 0.0)],
        frag_integral: 0.0,
        frag_level: 0.0,
        frag_since: SimTime::ZERO,
        pass_scheduled: None,
        network_dirty: false,
        network_round_at: None,
        network_round_now: false,
        net_running: BTreeMap::new(),
        net_unpaced: Vec::new(),
        net_changed: Vec::new(),
        lost_gpu_seconds: 0.0,
        preemptions: 0,
        ended: 0,
        changes: 0,
        name_index: if config.check_invariants || config.queues.is_some() {
            trace
                .iter()
                .enumerate()
                .map(|(i, t)| (t.name.clone(), i))
                .collect()
        } else {
            HashMap::default()
        },
        next_version: 0,
        tiresias: if matches!(config.policy.order, Order::Tiresias(_)) {
            vec![TiresiasJob::default(); trace.len()]
        } else {
            Vec::new()
        },
        timers: Vec::new(),
        saved_s: vec![0.0; trace.len()],
        last_stop: vec![None; trace.len()],
        down: if failures.is_empty() {
            Vec::new()
        } else {
            vec![0; cluster.nodes.len()]
        },
        node_failures: 0,
        failure_stops: 0,
        lost_by_cause: [0.0; 2],
        checkpointing,
        trace,
        memo: PlaceMemo::new(class_extras.len()),
        class,
        class_extras,
        pending_by_size: PendingBySize::new(groups, trace.len()),
        size_group,
        requeued: Vec::new(),
        input: sched::PlaceInput {
            options: config.placement,
            node_free: empty_room.clone(),
            ..sched::PlaceInput::default()
        },
        weng: Weng {
            whole_gpu: whole_gpu_table(&workload, node_gpus, &empty_room),
            workload,
            per_node: vec![0.0; cluster.nodes.len()],
            level: 0.0,
            integral: 0.0,
            since: SimTime::ZERO,
        },
    };
    let all_nodes: Vec<NodeId> = (0..cluster.nodes.len()).map(|n| NodeId(n as u32)).collect();
    refresh_weng(&mut st, &all_nodes, SimTime::ZERO);
    Ok(Prepared {
        st,
        failures,
        empty_room,
    })
}

/// Row `i` arrives: its scheduler job made again, as [`prepare`] made and checked it.
pub(super) fn arrive_job(st: &mut State<'_>, i: usize) {
    let made = to_sched_job(
        &st.cluster,
        &st.trace[i],
        st.jobs.node_gpus,
        &st.config.policy,
    );
    let (job, _, _) = made.expect("every row's job was made once in `prepare`");
    st.jobs.arrive(i, job);
}

/// The events queued before the first: every arrival and every failure.
pub(super) fn first_events(st: &State<'_>, failures: &[NodeFailure]) -> EventQueue<Event> {
    let trace = st.trace;
    let mut events: EventQueue<Event> = EventQueue::new();
    // Arrivals in (submit time, trace order).
    let mut order: Vec<usize> = (0..trace.len()).collect();
    order.sort_by_key(|&i| (st.submit[i], i));
    for i in order {
        events.push(st.submit[i], Event::Arrival(i));
    }
    for f in failures {
        events.push(
            SimTime::from_secs_f64(f.at_s),
            Event::NodeDown {
                node: f.node,
                down: SimTime::from_secs_f64(f.duration_s).0,
            },
        );
    }
    events
}

/// Every trace job's name is its own (the scheduler tracks running jobs by name).
fn check_names(trace: &[TraceJob]) -> Result<(), SimError> {
    // Look-ups only (nothing iterates it): hashing beats comparing names in a tree.
    let mut names: HashMap<&str, u64, BuildFnv> =
        HashMap::with_capacity_and_hasher(trace.len(), BuildFnv);
    for t in trace {
        match names.entry(&t.name) {
            Entry::Occupied(first) => {
                return Err(SimError::DuplicateName {
                    job: t.name.clone(),
                    line: t.line,
                    first: *first.get(),
                })
            }
            Entry::Vacant(slot) => {
                slot.insert(t.line);
            }
        }
    }
    Ok(())
}

/// Per trace row, in trace order: the communication profile, the record, the submission, the
/// ask and the placement class; and the classes' extras. The scheduler's job itself is made
/// again when the row arrives ([`arrive_job`]).
struct Rows {
    comm: Vec<CommProfile>,
    records: Vec<JobRecord>,
    /// Submission, since the first arrival (`origin`, s).
    submit: Vec<SimTime>,
    requests: Vec<Resources>,
    class: Vec<u32>,
    class_extras: Vec<Vec<sched::PodSetExtras>>,
}

/// The [`Rows`] of `trace` (on nodes of at most `node_gpus` GPUs), or the first row that names
/// a level the cluster does not have.
fn rows(
    cluster: &Cluster,
    trace: &[TraceJob],
    config: &SimConfig,
    node_gpus: u32,
    origin: f64,
) -> Result<Rows, SimError> {
    let gpu_memory_mib = sched::quota_gpu_memory_mib(cluster);
    let mut comm = Vec::with_capacity(trace.len());
    let mut records = Vec::with_capacity(trace.len());
    let mut submit = Vec::with_capacity(trace.len());
    let mut requests = Vec::with_capacity(trace.len());
    let mut classes = PlacementClasses::with_capacity(trace.len());
    for t in trace {
        let (job, pods, per_pod) = to_sched_job(cluster, t, node_gpus, &config.policy)?;
        check_layout(cluster, t)?;
        requests.push(job.request(gpu_memory_mib));
        classes.push(t, &job);
        // A layout job is paced by its step alone: the network's rate for it is the ratio
        // ideal step ÷ step now, the whole of its slowdown (the `network` module's layout note).
        let layout_share = t.training.as_ref().map(|_| CommProfile {
            comm_share: 1.0,
            bytes_per_step: 0.0,
        });
        let profile = t.comm.or(layout_share).unwrap_or_else(|| {
            config
                .comm
                .by_nodes
                .iter()
                .find(|(max, _)| pods <= *max)
                .map_or(
                    CommProfile {
                        comm_share: 0.0,
                        bytes_per_step: 0.0,
                    },
                    |(_, p)| *p,
                )
        });
        comm.push(profile);
        let s = SimTime::from_secs_f64(t.submit_s - origin);
        submit.push(s);
        records.push(JobRecord {
            name: t.name.clone(),
            queue: t.queue.clone(),
            gpus: pods * per_pod,
            nodes: pods,
            outcome: Outcome::Unfinished,
            submit_s: s.as_secs_f64(),
            start_s: None,
            end_s: None,
            network_slowdown: None,
            highest_tier: None,
            preemptions: 0,
            gpu_seconds: 0.0,
            failures: 0,
            lost_gpu_seconds_preemption: 0.0,
            lost_gpu_seconds_failure: 0.0,
            reason: None,
        });
    }
    Ok(Rows {
        comm,
        records,
        submit,
        requests,
        class: classes.class,
        class_extras: classes.extras,
    })
}

/// The queue tree and each job's queue in it: the user's, where every job's queue must be a leaf,
/// or else one top-level queue per trace queue.
fn queues_of(
    trace: &[TraceJob],
    rules: Option<&QueueRules>,
) -> Result<(QueueTree, Vec<usize>), SimError> {
    Ok(match rules {
        Some(r) => {
            let mut of = Vec::with_capacity(trace.len());
            for t in trace {
                let cluster_queue = |_: &QueueId| {
                    r.kueue
                        .as_ref()
                        .is_none_or(|k| k.cluster_queue(&t.queue).is_some())
                };
                match r
                    .tree
                    .find(&t.queue)
                    .filter(|&q| r.tree.is_leaf(q))
                    .filter(cluster_queue)
                {
                    Some(q) => of.push(q.index()),
                    None => {
                        return Err(SimError::QueueNotLeaf {
                            job: t.name.clone(),
                            line: t.line,
                            queue: t.queue.clone(),
                        })
                    }
                }
            }
            (r.tree.clone(), of)
        }
        None => trace_queues(trace),
    })
}

/// Each job's placement class, in trace order, and each class's scheduler extras: jobs of one
/// class place alike (the same pod set, `shape_key`, and the same extras).
struct PlacementClasses<'t> {
    ids: BTreeMap<(ShapeKey, u64, u64, &'t [String]), u32>,
    class: Vec<u32>,
    extras: Vec<Vec<sched::PodSetExtras>>,
}

impl<'t> PlacementClasses<'t> {
    fn with_capacity(rows: usize) -> Self {
        Self {
            ids: BTreeMap::new(),
            class: Vec::with_capacity(rows),
            extras: Vec::new(),
        }
    }

    /// The next row, `t`, whose scheduler's job is `job`.
    fn push(&mut self, t: &'t TraceJob, job: &Job) {
        let key = (
            shape_key(job),
            t.pod.cpu_milli,
            t.pod.memory_mib,
            t.pod.gpu_models.as_slice(),
        );
        let extras = &mut self.extras;
        let c = *self.ids.entry(key).or_insert_with(|| {
            extras.push(shares::pod_extras(&t.pod).into_iter().collect());
            (extras.len() - 1) as u32
        });
        self.class.push(c);
    }
}

/// How many size groups (`(GPUs, held GPUs)`, numbered in ascending order) the jobs fall in, and
/// each job's group.
fn size_groups(records: &[JobRecord], requests: &[Resources]) -> (usize, Vec<u32>) {
    let size_key = |i: usize| (records[i].gpus, requests[i].gpu.to_bits());
    let size_keys: Vec<(u32, u64)> = (0..records.len())
        .map(size_key)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let size_group: Vec<u32> = (0..records.len())
        .map(|i| size_keys.partition_point(|&k| k < size_key(i)) as u32)
        .collect();
    (size_keys.len(), size_group)
}

/// Each job's checkpoint interval and restart cost: its row's, else the run's.
fn checkpointing(trace: &[TraceJob], config: &SimConfig) -> Vec<Checkpointing> {
    trace
        .iter()
        .map(|t| Checkpointing {
            interval_s: t
                .checkpoint
                .interval_s
                .unwrap_or(config.checkpoints.interval_s),
            restart_s: t
                .checkpoint
                .restart_s
                .unwrap_or(config.checkpoints.restart_s),
        })
        .collect()
}

/// One top-level queue per trace queue (first-use order), quota 0, weight 1, and each job's.
fn trace_queues(trace: &[TraceJob]) -> (QueueTree, Vec<usize>) {
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut specs = Vec::new();
    let mut of = Vec::with_capacity(trace.len());
    for t in trace {
        let q = *index.entry(t.queue.as_str()).or_insert_with(|| {
            specs.push(QueueSpec {
                name: t.queue.clone(),
                parent: None,
                priority: 0,
                resources: [None, None, None],
                creation_time: None,
                uid: None,
            });
            specs.len() - 1
        });
        of.push(q);
    }
    let tree = QueueTree::new(specs).expect("distinct top-level queues are a valid tree");
    (tree, of)
}

/// What decides whether a simulated job fits an empty cluster: pods, GPU request (kind, amount,
/// devices) and topology levels (a tuple, not a string: one is built per arrival).
type ShapeKey = (u32, u8, u32, u32, Option<usize>, Option<usize>);

/// The [`ShapeKey`] of `job`.
fn shape_key(job: &Job) -> ShapeKey {
    let s = &job.pod_sets[0];
    let (kind, amount) = match s.gpu {
        GpuRequest::Whole(g) => (0, g),
        GpuRequest::Fraction { milli, .. } => (1, milli),
        GpuRequest::MemoryMib { mib, .. } => (2, mib),
    };
    (
        s.count,
        kind,
        amount,
        s.gpu.devices(),
        s.topology.required,
        s.topology.preferred,
    )
}

/// Build the scheduler's job for a trace row: jobs that fit one node are one pod; larger ones
/// become gangs of whole nodes. Returns the job, its pod count and GPUs per pod.
fn to_sched_job(
    cluster: &Cluster,
    t: &TraceJob,
    node_gpus: u32,
    policy: &Policy,
) -> Result<(Job, u32, u32), SimError> {
    let (pods, per_pod) = if t.gpus <= node_gpus {
        (1, t.gpus)
    } else {
        (t.gpus.div_ceil(node_gpus), node_gpus)
    };
    let level = |l: &str| {
        cluster
            .level_by_label(l)
            .ok_or_else(|| SimError::UnknownLevel {
                job: t.name.clone(),
                line: t.line,
                level: l.to_owned(),
                levels: cluster
                    .levels
                    .iter()
                    .map(|x| x.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    };
    let topology = match &t.topology {
        TopologyAsk::Required(l) => TopologyRequest {
            required: Some(level(l)?),
            ..TopologyRequest::default()
        },
        TopologyAsk::Preferred(l) => TopologyRequest {
            preferred: Some(level(l)?),
            ..TopologyRequest::default()
        },
        TopologyAsk::None if pods > 1 => match policy.topology {
            TopologyMode::None => TopologyRequest::default(),
            TopologyMode::Preferred(l) => TopologyRequest {
                preferred: Some(l),
                ..TopologyRequest::default()
            },
            TopologyMode::Required(l) => TopologyRequest {
                required: Some(l),
                ..TopologyRequest::default()
            },
        },
        TopologyAsk::None => TopologyRequest::default(),
    };
    let job = Job {
        name: t.name.clone(),
        queue: t.queue.clone(),
        priority: t.priority,
        preemptible: t.preemptible,
        pod_sets: vec![PodSet {
            name: "workers".to_owned(),
            count: pods,
            min_count: pods,
            gpu: match t.pod.gpu_milli {
                Some(milli) if per_pod == 1 => GpuRequest::Fraction { milli, devices: 1 },
                _ => GpuRequest::Whole(per_pod),
            },
            cpu_millis: t.pod.cpu_milli,
            memory_mib: t.pod.memory_mib,
            topology,
        }],
        tolerations: Vec::new(),
    };
    Ok((job, pods, per_pod))
}

/// A layout job's layout must fit its GPUs, and every GPU generation of the cluster needs a
/// peak and a published efficiency at its precision (`layout::compute`).
fn check_layout(cluster: &Cluster, t: &TraceJob) -> Result<(), SimError> {
    let Some(training) = &t.training else {
        return Ok(());
    };
    let err = |message: String| SimError::Layout {
        job: t.name.clone(),
        line: t.line,
        message,
    };
    training
        .validate(u64::from(t.gpus))
        .map_err(|e| err(e.to_string()))?;
    let p = training.precision;
    if let Some(arch) = layout::compute::unpriced_arch(cluster, p) {
        return Err(err(format!(
            "precision: {arch:?} GPUs have no peak or published efficiency at {} in railyard",
            p.name()
        )));
    }
    Ok(())
}
