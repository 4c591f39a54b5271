//! Deciding a placement from the files `railyard place` takes (a job file, running jobs, queue
//! files) as the placement file it writes: the one code path behind `place` and `fabric
//! collective --job`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use formats::input::read_text;
use formats::placement::{PlacedPod, PlacementFile};
use formats::{jobs, queues, state, FormatError};
use sched::{fair_share_in, PreemptionPolicy, Resources};
use topology::Cluster;

/// What a placement is decided from, besides the cluster: the files `place` takes.
#[derive(Clone, Copy, Debug)]
pub struct PlaceInputs<'a> {
    /// The job file (native, Kueue or KAI).
    pub job: &'a Path,
    /// Running jobs: state files, previous `place --output json` results, a PodList, a Kueue
    /// Workload list; empty for an idle cluster.
    pub state: &'a [PathBuf],
    /// Queue files; empty for none (then only the job's own queue may be preempted).
    pub queues: &'a [PathBuf],
    /// Never preempt.
    pub no_preempt: bool,
    /// Kueue ResourceFlavor files: the job is tried on each flavor in file order (its
    /// `nodeLabels` added to every pod set's node selector, its `tolerations` to theirs), the
    /// first that places it wins, as Kueue assigns the first flavor that fits. Empty: no flavor.
    pub flavors: &'a [PathBuf],
    /// Kueue's placement feature gates ([`parse_feature_gates`]) and KAI's placement strategy
    /// ([`parse_kai_strategy`]).
    pub options: sched::PlaceOptions,
    /// Whose placement rules decide; `None`: by the job's format (KAI objects → KAI, Kueue
    /// objects and native jobs → Kueue).
    pub scheduler: Option<sched::Dialect>,
    /// `--network-aware`: among the placements the rules allow without preemption, take the
    /// one the fabric model predicts best against the running jobs' traffic ([`network_aware`]),
    /// and report why (`network` in the placement file).
    pub network_aware: bool,
    /// `--model`/`--layout`: the job trains this layout. Its slice layers are derived and put on
    /// the job ([`crate::place_layout::apply_slices`]), and `network_aware` scores candidates by
    /// its step time in each rank order instead of a Ring AllReduce.
    pub training: Option<&'a layout::Training>,
}

/// The dialect a job is placed with: the run's choice, else by the format it came in.
pub fn dialect_for(scheduler: Option<sched::Dialect>, format: jobs::JobFormat) -> sched::Dialect {
    scheduler.unwrap_or(match format {
        jobs::JobFormat::Kai => sched::Dialect::Kai,
        jobs::JobFormat::Kueue | jobs::JobFormat::Native => sched::Dialect::Kueue,
    })
}

/// Parse `--scheduler`: `kueue` or `kai`.
pub fn parse_scheduler(text: &str) -> Result<sched::Dialect, FormatError> {
    match text.trim() {
        "kueue" => Ok(sched::Dialect::Kueue),
        "kai" => Ok(sched::Dialect::Kai),
        other => Err(FormatError::input(
            "--scheduler",
            format!("expected kueue or kai, got \"{other}\""),
        )),
    }
}

/// The placement options of each run `simulate --scheduler A,B,…` asks for, with the label its
/// series carries (the scheduler's name); one unlabelled run with Kueue's rules when none is
/// given, so the output stays as it was.
pub fn scheduler_runs(
    schedulers: &[String],
    kai_placement: &str,
) -> Result<Vec<(Option<&'static str>, sched::PlaceOptions)>, FormatError> {
    let strategy = parse_kai_strategy(kai_placement)?;
    if schedulers.is_empty() {
        return Ok(vec![(None, sched::PlaceOptions::default())]);
    }
    schedulers
        .iter()
        .map(|s| {
            let dialect = parse_scheduler(s)?;
            Ok((
                Some(dialect.name()),
                sched::PlaceOptions {
                    dialect,
                    strategy,
                    ..sched::PlaceOptions::default()
                },
            ))
        })
        .collect()
}

/// Parse KAI's placement strategy as a SchedulingShard's `placementStrategy` gives it:
/// `binpack` or `spread` for both, or `gpu=binpack|spread,cpu=binpack|spread` (an omitted
/// one stays binpack, KAI's default). The GPU strategy also picks the GPU of a shared pod
/// (`gpupack` under binpack, `gpuspread` under spread).
pub fn parse_kai_strategy(text: &str) -> Result<sched::KaiStrategy, FormatError> {
    let err = |what: String| FormatError::input("--kai-placement", what);
    let strategy = |v: &str| {
        sched::PlacementStrategy::parse(v.trim()).ok_or_else(|| {
            err(format!(
                "unknown strategy \"{}\"; expected binpack or spread",
                v.trim()
            ))
        })
    };
    let mut out = sched::KaiStrategy::default();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.split_once('=') {
            None => out = sched::KaiStrategy::all(strategy(item)?),
            Some((k, v)) => match k.trim() {
                "gpu" => {
                    out.gpu = strategy(v)?;
                    out.shared_gpus = out.gpu;
                }
                "cpu" => out.cpu = strategy(v)?,
                other => {
                    return Err(err(format!(
                        "unknown resource `{other}`; expected gpu=… or cpu=…"
                    )))
                }
            },
        }
    }
    Ok(out)
}

/// Kueue feature gates that change placement, as Kueue's `--feature-gates` takes them
/// (`NAME=true|false`, comma-separated): `TASBalancedPlacement` (default false),
/// `TASProfileMixed` (default true: unconstrained pod sets least free first; false: BestFit),
/// `TASRespectNodeAffinityPreferred` (default false). Other Kueue gates are refused by name, so
/// a gate that would change nothing here is never silently accepted.
pub fn parse_feature_gates(text: &str) -> Result<sched::PlaceOptions, FormatError> {
    let mut o = sched::PlaceOptions::default();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, value) = item.split_once('=').ok_or_else(|| {
            FormatError::input(
                "--feature-gates",
                format!("expected NAME=true|false, got \"{item}\""),
            )
        })?;
        let on = match value.trim() {
            "true" => true,
            "false" => false,
            v => {
                return Err(FormatError::input(
                    "--feature-gates",
                    format!("{name}: expected true or false, got \"{v}\""),
                ))
            }
        };
        match name.trim() {
            "TASBalancedPlacement" => o.balanced = on,
            "TASProfileMixed" => {
                o.unconstrained = if on {
                    sched::UnconstrainedMode::LeastFreeCapacity
                } else {
                    sched::UnconstrainedMode::BestFit
                }
            }
            "TASRespectNodeAffinityPreferred" => o.preferred_affinity = on,
            other => {
                return Err(FormatError::input(
                    "--feature-gates",
                    format!("unknown or not placement-related gate `{other}`; expected TASBalancedPlacement, TASProfileMixed or TASRespectNodeAffinityPreferred"),
                ))
            }
        }
    }
    Ok(o)
}

/// Place a job on a cluster the way `railyard place` does, as the placement file it writes:
/// read and resolve the job, the running jobs and the queues, check the queue's limits, then
/// place with preemption (unless `no_preempt`). The one code path behind `place` and `fabric
/// collective --job`. Not being placed is an answer (`placed: false` with the scheduler's
/// reason); bad input is an error.
pub fn decide(cluster: &Cluster, inputs: &PlaceInputs<'_>) -> Result<PlacementFile, FormatError> {
    let job_file = inputs.job.display().to_string();
    let mut flavors = read_flavors(inputs.flavors)?;
    let job_text = read_text(inputs.job)?;
    let doc = jobs::read_job(&job_file, &job_text)?;
    let mut queue_files = Vec::new();
    for p in inputs.queues {
        queue_files.push((p.display().to_string(), read_text(p)?));
    }
    let kueue = if queue_files.is_empty() {
        None
    } else {
        crate::kueue_admit::read_objects(&queue_files)?
    };
    if let Some(k) = &kueue {
        if flavors.is_empty() {
            flavors = k
                .flavors
                .iter()
                .map(|f| Flavor {
                    name: f.name.clone(),
                    node_labels: f.node_labels.clone(),
                    tolerations: f.tolerations.clone(),
                })
                .collect();
        }
    }
    let mut job = doc.resolve(&job_file, cluster)?;
    if let Some(t) = inputs.training {
        crate::place_layout::apply_slices(cluster, &mut job, t, &job_file)?;
    }
    let mut options = inputs.options;
    options.dialect = dialect_for(inputs.scheduler, doc.format);
    doc.resolve_sub_groups(&job_file, cluster)?;
    // A job that does not fit even with nothing running would wait forever: that is a mistake
    // in the job (or the wrong cluster), not an answer, so it is an input error (exit 1).
    let largest = cluster.nodes.iter().map(|n| n.gpus).max().unwrap_or(0);
    for (i, set) in job.pod_sets.iter().enumerate() {
        if let sched::GpuRequest::Whole(g) = set.gpu {
            if g > largest {
                return Err(FormatError::input(
                    &job_file,
                    format!(
                        "job `{}` pod set {i} (`{}`): {g} GPUs per pod, but the largest node of cluster {} has {largest}; a pod runs on one node",
                        job.name, set.name, cluster.name
                    ),
                ));
            }
        }
    }
    // NotReady and cordoned nodes may come back: judge "never" with every node available.
    let all_up;
    let whole = if cluster.nodes.iter().any(|n| !n.ready || n.unschedulable) {
        let mut c = cluster.clone();
        for n in &mut c.nodes {
            n.ready = true;
            n.unschedulable = false;
        }
        all_up = c;
        &all_up
    } else {
        cluster
    };
    let idle = place_input(whole, options, &doc, &BTreeMap::new());
    let empty = sched::Occupancy::new(whole);
    // A flavor's tolerations and labels count: the job may fit only through one of them.
    let idle_result = match sched::place_with(whole, &empty, &job, &idle) {
        Err(e) if !flavors.is_empty() => flavors
            .iter()
            .find_map(|f| sched::place_with(whole, &empty, &job, &with_flavor(&idle, f)).ok())
            .ok_or(e),
        r => r,
    };
    if let Err(e) = idle_result {
        return Err(FormatError::input(
            &job_file,
            format!(
                "job `{}` can never be placed on cluster {} ({} GPUs), even with nothing running: {e}{}",
                job.name,
                cluster.name,
                cluster.gpu_count(),
                missing_pods_note(whole).map_or(String::new(), |n| format!("; {n}"))
            ),
        ));
    }
    let mut state_files = Vec::new();
    for p in inputs.state {
        state_files.push((p.display().to_string(), read_text(p)?));
    }
    let (occupancy, usage) = state::read_all_with_usage(&state_files, cluster)?;
    let input = place_input(cluster, options, &doc, &usage);
    if occupancy.jobs().contains_key(&job.name) {
        return Err(FormatError::input(
            &job_file,
            format!("job `{}` is already running in the state file", job.name),
        ));
    }
    let mut policy = PreemptionPolicy::default();
    let mut refused: Option<String> = None;
    let mut warnings: Vec<String> = missing_pods_note(cluster).into_iter().collect();
    if let Some(objects) = &kueue {
        if options.dialect == sched::Dialect::Kueue {
            let decision = crate::kueue_admit::place_decision(
                cluster,
                objects,
                &state_files,
                &occupancy,
                (&job_file, &job_text, &doc),
                &job,
                &input,
                inputs.no_preempt,
            )?;
            let mut file = match decision {
                Ok(d) => with_gpu_memory(placement_file(cluster, &job.name, &d), &job, &d),
                Err(reason) => not_placed(&job.name, reason),
            };
            file.warnings = warnings;
            return Ok(file);
        }
    }
    if !inputs.queues.is_empty() {
        let files = queue_files;
        let read = queues::read(&files);
        let dialect = crate::queues::dialect(&read);
        let (tree, problems) = crate::queues::tree_in(&read, dialect)?;
        warnings.extend(problems.iter().map(ToString::to_string));
        // Running jobs hold GPUs in the state; their CPU and memory are not known, so only the
        // job's own CPU and memory count against those limits.
        let mut usage = vec![Resources::default(); tree.queues.len()];
        let mut non_preemptible = vec![Resources::default(); tree.queues.len()];
        for a in occupancy.jobs().values() {
            if let Some(q) = tree.find(&a.job.queue) {
                let gpus = a.milli_gpus() as f64 / 1000.0;
                usage[q.index()].gpu += gpus;
                if !a.job.preemptible {
                    non_preemptible[q.index()].gpu += gpus;
                }
            }
        }
        let mut demand = usage.clone();
        let request = job.request(sched::quota_gpu_memory_mib(cluster));
        match tree.find(&job.queue) {
            Some(q) => demand[q.index()].gpu += request.gpu,
            None => {
                return Err(FormatError::input(
                    &job_file,
                    format!("queue `{}` is not in the queue files", job.queue),
                ))
            }
        }
        let ask = sched::QuotaRequest {
            queue: &job.queue,
            request,
            preemptible: job.preemptible,
        };
        if let Err(e) = sched::admit_in(&tree, &usage, &non_preemptible, &ask, dialect) {
            refused = Some(e.to_string());
        }
        let capacity = Resources {
            gpu: cluster.gpu_count() as f64,
            cpu: f64::INFINITY,
            memory: f64::INFINITY,
        };
        let shares = fair_share_in(&tree, &demand, &capacity, dialect);
        policy.fair_share_gpus = tree
            .queues
            .iter()
            .zip(&shares)
            .map(|(q, s)| (q.name.clone(), s.gpu))
            .collect();
    }
    let inputs_by_flavor: Vec<(Option<&str>, sched::PlaceInput)> = if flavors.is_empty() {
        vec![(None, input)]
    } else {
        flavors
            .iter()
            .map(|f| (Some(f.name.as_str()), with_flavor(&input, f)))
            .collect()
    };
    let try_one = |input: &sched::PlaceInput| match &refused {
        Some(reason) => Err(reason.clone()),
        None if inputs.no_preempt => sched::place_with(cluster, &occupancy, &job, input)
            .map(|placement| sched::Decision {
                placement,
                victims: Vec::new(),
            })
            .map_err(|e| e.to_string()),
        None => sched::place_with_preemption_input(cluster, &occupancy, &job, &policy, input)
            .map_err(|e| e.to_string()),
    };
    let mut result = Err(String::new());
    let mut network = None;
    for (flavor, input) in &inputs_by_flavor {
        if inputs.network_aware && refused.is_none() {
            let aware = network_aware(cluster, &occupancy, &job, input, inputs.training)?;
            if let Some((placement, choice)) = aware {
                result = Ok(sched::Decision {
                    placement,
                    victims: Vec::new(),
                });
                network = Some(choice);
                break;
            }
        }
        result = try_one(input).map_err(|e| match flavor {
            Some(f) => format!("flavor {f}: {e}"),
            None => e,
        });
        if result.is_ok() {
            break;
        }
    }
    let mut file = match result {
        Ok(mut d) => {
            // A layout's ranks run pod by pod in domain order, so its slices are consecutive.
            if inputs.training.is_some() {
                d.placement = sched::in_rank_order(cluster, d.placement);
            }
            with_gpu_memory(placement_file(cluster, &job.name, &d), &job, &d)
        }
        Err(reason) => not_placed(&job.name, reason),
    };
    file.warnings = warnings;
    file.network = network;
    Ok(file)
}

/// Runners-up reported in `network.runners_up`.
const RUNNERS_UP: usize = 3;

/// QP counts tried when ECMP collisions are predicted (NCCL accepts 1..=128).
const QPS_TRIED: [u32; 4] = [2, 4, 8, 16];

/// `place --network-aware` without preemption: [`sched::place_network_aware`] scored by the
/// fabric model. The running jobs of `occupancy` that span nodes become the fabric's traffic
/// (Ring AllReduce over their pods' GPUs in pod order, job IDs 0.. in name order, the new job
/// the next ID), each candidate is priced by [`fabric::probe`] and scored by
/// [`fabric::Probe::score`], every job's communicating share taken from the simulator's
/// defaults by node count ([`sim::engine::CommDefaults`]). Routing: ECMP with the QPs per
/// connection `launch` would write ([`crate::launch::default_qps`]). With a `training` layout,
/// each candidate's score is instead its tokens per second in its fastest rank order, priced
/// beside the same running jobs ([`crate::place_layout::LayoutPricer`]); the Ring figures stay
/// in the output. `None`: the rules place the job nowhere without preemption.
pub fn network_aware(
    cluster: &Cluster,
    occupancy: &sched::Occupancy,
    job: &sched::Job,
    input: &sched::PlaceInput,
    training: Option<&layout::Training>,
) -> Result<Option<(sched::Placement, formats::placement::NetworkChoice)>, FormatError> {
    let fabric_err = |e: fabric::FabricError| FormatError::input("--network-aware", e.to_string());
    let comm = sim::engine::CommDefaults::default();
    let weight = |gpus: f64, nodes: usize| fabric::JobWeight {
        gpus,
        comm_share: comm
            .by_nodes
            .iter()
            .find(|(max, _)| nodes as u32 <= *max)
            .map_or(0.0, |(_, p)| p.comm_share),
    };
    let qps = cluster.nodes.first().map_or(4, |_| {
        crate::launch::default_qps(cluster, topology::NodeId::from_index(0))
    });
    let cfg = fabric::RoutingConfig {
        nccl: fabric::NcclConfig {
            qps_per_connection: qps,
            ..fabric::NcclConfig::default()
        },
        ..fabric::RoutingConfig::default()
    };
    let mut state = fabric::FabricState::new(cluster, cfg);
    let mut running = Vec::new();
    let mut running_traffic = Vec::new();
    let mut weights = Vec::new();
    for (id, (name, a)) in occupancy.jobs().iter().enumerate() {
        let pods: Vec<(topology::NodeId, Vec<u32>)> =
            a.pods.iter().map(|p| (p.node, p.gpu_ids.clone())).collect();
        let gpus = a.milli_gpus() as f64 / 1000.0;
        let w = weight(gpus, distinct_nodes(&pods).len());
        weights.push(w);
        let Some(traffic) = ring_of(&pods).filter(|_| w.comm_share > 0.0) else {
            continue;
        };
        state.start(id as u64, &traffic).map_err(fabric_err)?;
        running.push(id as u64);
        running_traffic.push((id as u64, name.to_string(), traffic));
    }
    let new_id = weights.len() as u64;
    let mut pricer = match training {
        Some(t) => {
            let named: Vec<(String, fabric::JobTraffic)> = running_traffic
                .iter()
                .map(|(_, n, t)| (n.clone(), t.clone()))
                .collect();
            Some(crate::place_layout::LayoutPricer::new(
                cluster, cfg, t, &named,
            )?)
        }
        None => None,
    };
    let mut steps: Vec<Option<layout::OrderChoice>> = Vec::new();
    let mut layout_failure: Option<FormatError> = None;
    let mut priced: Vec<Option<fabric::Probe>> = Vec::new();
    let mut failure: Option<fabric::FabricError> = None;
    let mut scorer = |_: &sched::Job, p: &sched::Placement| {
        let pods = pods_of(p);
        let nodes = distinct_nodes(&pods).len();
        let gpus: f64 = p.pods.iter().map(sched::PlacedPod::gpus).sum();
        let new = weight(gpus, nodes);
        let layout_score = pricer.as_mut().map(|pr| match pr.price(&pods) {
            Ok(c) => {
                let s = c.step.tokens_per_s;
                steps.push(Some(c));
                s
            }
            Err(e) => {
                layout_failure.get_or_insert(e);
                steps.push(None);
                f64::NEG_INFINITY
            }
        });
        let Some(traffic) = ring_of(&pods).filter(|_| new.comm_share > 0.0) else {
            priced.push(None);
            return layout_score.unwrap_or_else(|| fabric::ideal_score(new));
        };
        match fabric::probe(&mut state, new_id, &traffic, &running) {
            Ok(probe) => {
                let score = probe.score(new, &mut |id| weights[id as usize]);
                priced.push(Some(probe));
                layout_score.unwrap_or(score)
            }
            Err(e) => {
                failure.get_or_insert(e);
                priced.push(None);
                f64::NEG_INFINITY
            }
        }
    };
    let Ok(aware) = sched::place_network_aware(
        cluster,
        occupancy,
        job,
        input,
        &mut scorer,
        sched::MAX_CANDIDATES,
    ) else {
        return Ok(None);
    };
    if let Some(e) = failure {
        return Err(fabric_err(e));
    }
    if let Some(e) = layout_failure {
        return Err(e);
    }
    let layout_choice = match (training, steps.get(aware.chosen).cloned().flatten()) {
        (Some(t), Some(c)) => Some(formats::placement::LayoutChoice {
            layout: t.layout.label(),
            slices: crate::place_layout::slices_text(
                cluster,
                job.pod_sets.first().map_or(&[][..], |s| &s.topology.slices),
            ),
            order: layout::layout::order_label(&c.order),
            step_s: c.step.step_s,
            tokens_per_s: c.step.tokens_per_s,
            label_only_step_s: steps[0].as_ref().map_or(f64::NAN, |l| l.tried[0].step_s),
            orders: c
                .tried
                .iter()
                .map(|o| formats::placement::OrderStep {
                    order: o.order.clone(),
                    step_s: o.step_s,
                })
                .collect(),
        }),
        _ => None,
    };
    let busbw = |i: usize| priced[i].as_ref().map(|p| p.busbw_gb_s);
    let domain_name = |d: Option<topology::DomainId>| match d {
        None => "label-only".to_owned(),
        Some(d) => {
            let dom = cluster.domain(d);
            format!("{}={}", cluster.levels[dom.level].label, dom.value)
        }
    };
    let mut others: Vec<usize> = (0..aware.candidates.len())
        .filter(|&i| i != aware.chosen)
        .collect();
    others.sort_by(|&a, &b| {
        aware.candidates[b]
            .score
            .total_cmp(&aware.candidates[a].score)
            .then(a.cmp(&b))
    });
    others.truncate(RUNNERS_UP);
    let best = aware.best();
    let runners_up: Vec<formats::placement::RunnerUp> = others
        .iter()
        .map(|&i| formats::placement::RunnerUp {
            domain: domain_name(aware.candidates[i].domain),
            busbw_gb_s: busbw(i).map(round3),
            score: round3(aware.candidates[i].score),
        })
        .collect();
    let margin = others
        .first()
        .map(|&i| round3(best.score - aware.candidates[i].score));
    let chosen_probe = priced[aware.chosen].clone();
    let nccl_advice = match &chosen_probe {
        Some(_) => {
            nccl_advice(cluster, &pods_of(&best.placement), &cfg, new_id).map_err(fabric_err)?
        }
        None => Vec::new(),
    };
    // Before (the label rules' own placement) and after (the chosen one): the hottest links the
    // new job crosses, when the choice moved it.
    let mut hot_links = Vec::new();
    if chosen_probe.is_some() {
        let mut shown = vec![("chosen", aware.chosen)];
        if aware.chosen != 0 {
            shown.insert(0, ("label-only", 0));
        }
        for (label, i) in shown {
            let pods = pods_of(&aware.candidates[i].placement);
            hot_links.extend(
                hottest_links(cluster, &cfg, &pods, new_id, &running_traffic, HOT_LINKS)
                    .map_err(fabric_err)?
                    .into_iter()
                    .map(|h| formats::placement::HotLink {
                        placement: label.to_owned(),
                        ..h
                    }),
            );
        }
    }
    let choice = formats::placement::NetworkChoice {
        busbw_gb_s: chosen_probe.as_ref().map(|p| round3(p.busbw_gb_s)),
        ideal_busbw_gb_s: chosen_probe.as_ref().map(|p| round3(p.ideal_gb_s)),
        score: round3(best.score),
        candidates: aware.candidates.len(),
        runners_up,
        margin,
        nccl_advice,
        hot_links,
        layout: layout_choice,
    };
    Ok(Some((aware.into_placement(), choice)))
}

/// Hot links listed per placement in `network.hot_links`.
const HOT_LINKS: usize = 3;

/// The `top` most utilised switch-fabric link ports (NIC to leaf included, NVLink not) that a
/// new job on `pods` crosses, when it runs with `running` (ID, name, traffic): every job routed
/// under `cfg` with its ID and solved together ([`fabric::Fabric::solve`], job-level max-min),
/// utilisation at the achieved pace. Ranked by utilisation, then by the number of jobs on the
/// port, then by resource number; each lists the jobs on it, the new one as `(this job)`.
fn hottest_links(
    cluster: &Cluster,
    cfg: &fabric::RoutingConfig,
    pods: &[(topology::NodeId, Vec<u32>)],
    new_id: u64,
    running: &[(u64, String, fabric::JobTraffic)],
    top: usize,
) -> Result<Vec<formats::placement::HotLink>, fabric::FabricError> {
    let Some(traffic) = ring_of(pods) else {
        return Ok(Vec::new());
    };
    let mut fab = fabric::Fabric::new(cluster);
    let mut routed = vec![fab.route_flows(&traffic, cfg, new_id)?];
    for (id, _, t) in running {
        routed.push(fab.route_flows(t, cfg, *id)?);
    }
    let refs: Vec<&fabric::RoutedJob> = routed.iter().collect();
    let alloc = fab.solve(&refs);
    let n_link_res = fab.ports().n_ports() as usize * 2;
    // Jobs (index into `routed`) carrying load on each link port.
    let mut jobs_on: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (j, job) in routed.iter().enumerate() {
        for f in 0..job.flows.len() {
            if alloc.rates[j][f] <= 0.0 {
                continue;
            }
            for (r, _) in job.flows.path(f) {
                let r = r as usize;
                if r >= n_link_res {
                    continue;
                }
                let on = jobs_on.entry(r).or_default();
                if on.last() != Some(&j) {
                    on.push(j);
                }
            }
        }
    }
    let capacity = fab.capacity();
    let mut ports: Vec<(f64, usize, usize)> = jobs_on
        .iter()
        .filter(|(&r, jobs)| jobs.first() == Some(&0) && capacity[r] > 0.0)
        .map(|(&r, jobs)| (alloc.load_gbps[r] / capacity[r], jobs.len(), r))
        .collect();
    ports.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    ports.truncate(top);
    let name = |e: topology::Endpoint| match e {
        topology::Endpoint::Nic { node, rail } => format!("{}/rail{rail}", cluster.node(node).name),
        topology::Endpoint::Switch(s) => cluster.switch(s).name.clone(),
    };
    Ok(ports
        .into_iter()
        .map(|(utilization, _, r)| {
            let (link_id, port, up) = fab.ports().locate(r as u32);
            let link = cluster.link(link_id);
            let mut lower = name(link.lower);
            if link.ports > 1 {
                lower.push_str(&format!(":p{port}"));
            }
            let upper = name(topology::Endpoint::Switch(link.upper));
            let (from, to) = if up { (lower, upper) } else { (upper, lower) };
            formats::placement::HotLink {
                placement: String::new(),
                from,
                to,
                tier: link.tier,
                utilization: round3(utilization),
                jobs: jobs_on[&r]
                    .iter()
                    .map(|&j| match j {
                        0 => "(this job)".to_owned(),
                        j => running[j - 1].1.clone(),
                    })
                    .collect(),
            }
        })
        .collect())
}

/// NCCL settings for a placement, from the fabric model alone. ECMP collisions: when two or
/// more of the job's flows hash onto one switch-to-switch port ([`fabric::collisions`]), more
/// QPs per connection (each QP its own RoCEv2 source port, so its own ECMP hash) spread a
/// connection over more paths. The advice is the fewest QPs of `QPS_TRIED` above the current
/// count whose predicted bus bandwidth alone is within 1% of the best tried, given only when it
/// beats the current count by more than 2%. NCCL documents the variable as "the number of IB
/// queue pairs to use for each connection between two ranks … useful on multi-level fabrics
/// which need multiple queue pairs to have good routing entropy" (NCCL user guide, Environment
/// Variables, `NCCL_IB_QPS_PER_CONNECTION`,
/// <https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-qps-per-connection>).
pub fn nccl_advice(
    cluster: &Cluster,
    pods: &[(topology::NodeId, Vec<u32>)],
    cfg: &fabric::RoutingConfig,
    job_id: u64,
) -> Result<Vec<formats::placement::NcclAdvice>, fabric::FabricError> {
    let traffic = fabric::JobTraffic {
        ranks: fabric::ranks_of(pods),
        collective: fabric::Collective::AllReduce,
    };
    let mut fab = fabric::Fabric::new(cluster);
    let hits = fabric::collisions(&mut fab, &traffic, cfg, job_id)?;
    if cfg.mode != fabric::RoutingMode::Ecmp || hits.ports_shared == 0 {
        return Ok(Vec::new());
    }
    let current = cfg.nccl.qps_per_connection;
    let with_qps = |q: u32| fabric::RoutingConfig {
        nccl: fabric::NcclConfig {
            qps_per_connection: q,
            ..cfg.nccl
        },
        ..*cfg
    };
    let base = fabric::alone_busbw(&mut fab, &traffic, cfg, job_id)?;
    let mut tried = Vec::new();
    for q in QPS_TRIED.into_iter().filter(|&q| q > current) {
        let names: Vec<(topology::NodeId, usize)> =
            pods.iter().map(|(n, g)| (*n, g.len())).collect();
        if fabric::check_flow_budget(cluster, &names, fabric::Collective::AllReduce, q).is_err() {
            break;
        }
        tried.push((
            q,
            fabric::alone_busbw(&mut fab, &traffic, &with_qps(q), job_id)?,
        ));
    }
    let top = tried.iter().map(|t| t.1).fold(base, f64::max);
    let Some(&(q, busbw)) = tried.iter().find(|t| t.1 >= 0.99 * top) else {
        return Ok(Vec::new());
    };
    if busbw <= 1.02 * base {
        return Ok(Vec::new());
    }
    Ok(vec![formats::placement::NcclAdvice {
        name: "NCCL_IB_QPS_PER_CONNECTION".to_owned(),
        value: q.to_string(),
        reason: format!(
            "ECMP collisions: {} of the {} switch-to-switch ports the job uses carry 2 or more of its flows (up to {}); with {q} QPs per connection instead of {current} the model predicts {:.1} GB/s bus bandwidth alone instead of {:.1} (more QPs, more source ports, more ECMP entropy: NCCL user guide, NCCL_IB_QPS_PER_CONNECTION)",
            hits.ports_shared, hits.ports_used, hits.worst, busbw, base
        ),
    }])
}

/// A job's Ring AllReduce over its GPUs in rank order, each GPU once (pods sharing a GPU are
/// one rank); `None` when it does not cross nodes (one node, or fewer than two GPUs).
fn ring_of(pods: &[(topology::NodeId, Vec<u32>)]) -> Option<fabric::JobTraffic> {
    let mut seen = std::collections::BTreeSet::new();
    let ranks: Vec<fabric::Rank> = fabric::ranks_of(pods)
        .into_iter()
        .filter(|r| seen.insert(*r))
        .collect();
    (distinct_nodes(pods).len() >= 2 && ranks.len() >= 2).then_some(fabric::JobTraffic {
        ranks,
        collective: fabric::Collective::AllReduce,
    })
}

/// The `network` section of `place --network-aware` as text.
pub fn network_text(n: &formats::placement::NetworkChoice) -> String {
    let gbs = |x: Option<f64>| {
        x.map_or("one node".to_owned(), |b| {
            format!("{} GB/s", report::fmt::trim_float(b))
        })
    };
    let mut out = format!(
        "network-aware: busbw {} (ideal {}), score {} of {}",
        gbs(n.busbw_gb_s),
        gbs(n.ideal_busbw_gb_s),
        report::fmt::trim_float(n.score),
        report::fmt::count_of(n.candidates, "candidate")
    );
    match n.margin {
        Some(m) => out.push_str(&format!(", ahead by {}\n", report::fmt::trim_float(m))),
        None => out.push('\n'),
    }
    for r in &n.runners_up {
        out.push_str(&format!(
            "  runner-up {}: busbw {}, score {}\n",
            r.domain,
            gbs(r.busbw_gb_s),
            report::fmt::trim_float(r.score)
        ));
    }
    if let Some(l) = &n.layout {
        let orders: Vec<String> = l
            .orders
            .iter()
            .map(|o| format!("{} {:.3} s", o.order, o.step_s))
            .collect();
        out.push_str(&format!(
            "  layout {} (slices: {}): rank order {}, step {:.3} s ({:.0} tokens/s) vs {:.3} s on the label-only placement; orders: {}\n",
            l.layout, l.slices, l.order, l.step_s, l.tokens_per_s, l.label_only_step_s, orders.join(", ")
        ));
    }
    for a in &n.nccl_advice {
        out.push_str(&format!(
            "  advice: {}={} ({})\n",
            a.name, a.value, a.reason
        ));
    }
    for h in &n.hot_links {
        out.push_str(&format!(
            "  hot link, {}: {} -> {} (tier {}) {:.1}%: {}\n",
            h.placement,
            h.from,
            h.to,
            h.tier,
            h.utilization * 100.0,
            h.jobs.join(", ")
        ));
    }
    out
}

/// A placement's pods as (node, GPU ids) in rank order.
fn pods_of(p: &sched::Placement) -> Vec<(topology::NodeId, Vec<u32>)> {
    p.pods.iter().map(|x| (x.node, x.gpu_ids.clone())).collect()
}

/// The distinct nodes of a pod list.
fn distinct_nodes(pods: &[(topology::NodeId, Vec<u32>)]) -> Vec<topology::NodeId> {
    let mut v: Vec<topology::NodeId> = pods.iter().map(|p| p.0).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Round to 3 decimals for output (the figures are model predictions, not measurements).
fn round3(x: f64) -> f64 {
    if x.is_finite() {
        (x * 1000.0).round() / 1000.0
    } else {
        x
    }
}

/// A Kueue ResourceFlavor: what it adds to a pod set's node constraints.
#[derive(Clone, Debug, PartialEq)]
pub struct Flavor {
    /// `metadata.name`.
    pub name: String,
    /// `spec.nodeLabels`.
    pub node_labels: BTreeMap<String, String>,
    /// `spec.tolerations`.
    pub tolerations: Vec<sched::Toleration>,
}

/// The ResourceFlavor documents of the files, in order (other documents are skipped; a file
/// without any is an error naming it).
pub fn read_flavors(paths: &[PathBuf]) -> Result<Vec<Flavor>, FormatError> {
    let mut out = Vec::new();
    for p in paths {
        let file = p.display().to_string();
        let docs = formats::input::parse_documents(&file, &read_text(p)?)?;
        let before = out.len();
        for (i, d) in docs.iter().enumerate() {
            if d.get("kind").and_then(serde_json::Value::as_str) != Some("ResourceFlavor") {
                continue;
            }
            let at = |m: String| {
                FormatError::input(&file, format!("document {} (ResourceFlavor): {m}", i + 1))
            };
            let name = d
                .pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| at("metadata.name: missing".to_owned()))?
                .to_owned();
            let mut node_labels = BTreeMap::new();
            if let Some(m) = d.pointer("/spec/nodeLabels").filter(|v| !v.is_null()) {
                let m = m
                    .as_object()
                    .ok_or_else(|| at("spec.nodeLabels: expected a map".to_owned()))?;
                for (k, v) in m {
                    let v = v.as_str().ok_or_else(|| {
                        at(format!("spec.nodeLabels[{k}]: expected a string, got {v}"))
                    })?;
                    node_labels.insert(k.clone(), v.to_owned());
                }
            }
            let spec = d.get("spec").cloned().unwrap_or(serde_json::Value::Null);
            let tolerations =
                jobs::tolerations_of(&file, &format!("document {}", i + 1), &spec, "spec")?;
            out.push(Flavor {
                name,
                node_labels,
                tolerations,
            });
        }
        if out.len() == before {
            return Err(FormatError::input(
                &file,
                "no ResourceFlavor (kueue.x-k8s.io) in the file",
            ));
        }
    }
    Ok(out)
}

/// `input` with a flavor's node labels and tolerations added to every pod set.
fn with_flavor(input: &sched::PlaceInput, flavor: &Flavor) -> sched::PlaceInput {
    let mut out = input.clone();
    for set in &mut out.pod_sets {
        set.node_selector.extend(
            flavor
                .node_labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        set.tolerations.extend(flavor.tolerations.iter().cloned());
    }
    out
}

/// The running jobs of the `state` files that cross the network (GPUs on several hosts, whole
/// GPUs), minus those named in `preempted`: name and `(node, GPUs)` per pod in rank order.
#[allow(clippy::type_complexity)] // a plain list of pods per job
pub fn running_multi_node_jobs(
    state: &[PathBuf],
    cluster: &Cluster,
    preempted: &[String],
) -> Result<Vec<(String, Vec<(topology::NodeId, Vec<u32>)>)>, FormatError> {
    if state.is_empty() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for p in state {
        files.push((p.display().to_string(), read_text(p)?));
    }
    let occupancy = state::read_all(&files, cluster)?;
    let mut out = Vec::new();
    for (name, a) in occupancy.jobs() {
        let whole = a.pods.iter().all(|p| p.milli == sched::MILLI_PER_GPU);
        let first = a.pods.first().map(|p| p.node);
        if preempted.contains(name) || !whole || a.pods.iter().all(|p| Some(p.node) == first) {
            continue;
        }
        out.push((
            name.clone(),
            a.pods.iter().map(|p| (p.node, p.gpu_ids.clone())).collect(),
        ));
    }
    Ok(out)
}

/// What placement needs besides the job: each pod set's constraints from its file, and, when
/// the cluster's nodes carry their allocatable resources (an imported NodeList), each node's
/// room: allocatable minus what the running pods (`usage`) request. Nodes without allocatable
/// (presets, specs) are limited by their GPUs alone.
pub fn place_input(
    cluster: &Cluster,
    options: sched::PlaceOptions,
    doc: &jobs::JobDoc,
    usage: &BTreeMap<topology::NodeId, BTreeMap<String, u64>>,
) -> sched::PlaceInput {
    let node_free = if cluster.nodes.iter().any(|n| !n.allocatable.is_empty()) {
        sched::NodeFree(
            cluster
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let mut free = n.allocatable.clone();
                    if let Some(used) = usage.get(&topology::NodeId::from_index(i)) {
                        for (r, q) in used {
                            if let Some(f) = free.get_mut(r) {
                                *f = f.saturating_sub(*q);
                            }
                        }
                    }
                    free
                })
                .collect(),
        )
    } else {
        sched::NodeFree::default()
    };
    sched::PlaceInput {
        options,
        node_free,
        pod_sets: doc.extras(),
        sub_groups: doc.resolve_sub_groups("", cluster).unwrap_or_default(),
    }
}

/// Nodes shown in a note before `…`.
const NODES_NAMED: usize = 3;

/// Nodes whose `status.allocatable` lists resources but not `pods` take no pod: Kueue's TAS
/// counts one `pods` per pod against a node's allocatable, as railyard does. The note names
/// them (the first few, and how many) and what to do; `None` when every node with an
/// allocatable lists `pods`.
pub fn missing_pods_note(cluster: &Cluster) -> Option<String> {
    let without: Vec<&str> = cluster
        .nodes
        .iter()
        .filter(|n| !n.allocatable.is_empty() && !n.allocatable.contains_key(sched::PODS))
        .map(|n| n.name.as_str())
        .collect();
    if without.is_empty() {
        return None;
    }
    let mut named = without[..without.len().min(NODES_NAMED)].join(", ");
    if without.len() > NODES_NAMED {
        named.push_str(", …");
    }
    Some(format!(
        "{} of {} nodes ({named}) have a status.allocatable without `pods`, and Kueue's TAS counts \
         one `pods` per pod against it, so they take no pod; add `pods` to their \
         status.allocatable (the kubelet reports it, 110 by default)",
        without.len(),
        cluster.nodes.len()
    ))
}

/// The placement file with the GPU memory of pods that asked for it ([`PlacedPod::gpu_memory_mib`]).
fn with_gpu_memory(
    mut file: PlacementFile,
    job: &sched::Job,
    d: &sched::Decision,
) -> PlacementFile {
    for (f, p) in file.pods.iter_mut().zip(&d.placement.pods) {
        if let Some(sched::GpuRequest::MemoryMib { mib, .. }) =
            job.pod_sets.get(p.pod_set).map(|s| s.gpu)
        {
            f.gpu_memory_mib = Some(mib);
        }
    }
    file
}

/// What a placement's pods hold, for its summary line: `8 GPUs`, or for pods that asked for GPU
/// memory, that memory and its share of the GPU: `2000 MiB of GPU memory: 0.025 of one 80 GiB
/// GPU`.
pub fn gpus_text(cluster: &Cluster, file: &PlacementFile) -> String {
    let gpus = report::fmt::trim_float(file.pods.iter().map(|p| p.gpus).sum::<f64>());
    let memory: Option<Vec<(u64, &str)>> = file
        .pods
        .iter()
        .map(|p| {
            p.gpu_memory_mib.map(|m| {
                (
                    u64::from(m) * p.gpu_ids.len().max(1) as u64,
                    p.node.as_str(),
                )
            })
        })
        .collect();
    let Some(memory) = memory.filter(|m| !m.is_empty()) else {
        return format!("{gpus} GPUs");
    };
    let mib: u64 = memory.iter().map(|(m, _)| m).sum();
    let size = cluster
        .nodes
        .iter()
        .find(|n| n.name == memory[0].1)
        .map_or(0, |n| n.gpu_memory_gib);
    if memory.len() == 1 {
        format!("{mib} MiB of GPU memory: {gpus} of one {size} GiB GPU")
    } else {
        format!("{mib} MiB of GPU memory: {gpus} GPUs of {size} GiB")
    }
}

/// A decision as the placement file `place --output json` writes.
pub fn placement_file(cluster: &Cluster, job: &str, d: &sched::Decision) -> PlacementFile {
    PlacementFile {
        job: Some(job.to_owned()),
        placed: true,
        reason: None,
        pods: d
            .placement
            .pods
            .iter()
            .map(|p| PlacedPod {
                rank: p.rank,
                node: cluster.node(p.node).name.clone(),
                gpus: p.gpus(),
                gpu_ids: p.gpu_ids.clone(),
                gpu_memory_mib: None,
            })
            .collect(),
        highest_tier: d.placement.highest_tier,
        worst_latency_us: Some(d.placement.worst_latency_ns as f64 / 1000.0),
        preempted: d.victims.clone(),
        warnings: Vec::new(),
        network: None,
    }
}

/// The placement file of a job that stays pending, with the reason.
fn not_placed(job: &str, reason: String) -> PlacementFile {
    PlacementFile {
        job: Some(job.to_owned()),
        placed: false,
        reason: Some(reason),
        pods: Vec::new(),
        highest_tier: None,
        worst_latency_us: None,
        preempted: Vec::new(),
        warnings: Vec::new(),
        network: None,
    }
}
