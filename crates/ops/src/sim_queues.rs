//! The user's queues for `simulate --queues`: the queue files read as `queues validate` reads
//! them, plus what the simulator needs that the tree does not carry (a Kueue ClusterQueue's
//! `preemption` and `lendingLimit`), and the trace's queue names mapped to leaf queues
//! (`--queue-map`: YAML `trace_queue: leaf_queue` or CSV `trace_queue,leaf_queue`; then by
//! identical names; then a Kueue LocalQueue of that name stands for its ClusterQueue, as in a
//! Kueue Workload trace). Unmapped names are one error listing them, before anything runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use formats::input::{parse_documents, read_text};
use formats::queues::{kueue_amount, kueue_resource, list_items, QueueFiles};
use formats::FormatError;
use sched::kueue::fair_preempt::Strategy;
use sched::{Dialect, Resources};
use serde_json::Value;
use sim::queues::kueue::{KueueFlavor, KueueModel};
use sim::queues::{KueuePreemption, QueueConfig, ReclaimWithinCohort, WithinClusterQueue};
use sim::TraceJob;

use crate::queues::{dialect, tree_in};

/// How many unmapped trace queue names an error lists before it counts the rest.
const UNMAPPED_SHOWN: usize = 12;

/// Queue files read for a simulation.
#[derive(Clone, Debug)]
pub struct SimQueues {
    files: QueueFiles,
    /// Kueue: per ClusterQueue, what it keeps of its nominal quota (nominal − `lendingLimit`).
    kept: BTreeMap<String, Resources>,
    /// Kueue: per ClusterQueue, its `spec.preemption`.
    preemption: BTreeMap<String, KueuePreemption>,
    /// Kueue: each LocalQueue's ClusterQueue (first definition wins).
    local_queues: BTreeMap<String, String>,
    /// Kueue's objects, for `sched::kueue`'s admission (`None` for KAI Queues).
    kueue: Option<KueueModel>,
}

/// Read queue files (`-` is standard input) for `simulate --queues`: the queues and, for Kueue
/// ClusterQueues, `spec.preemption` and each resource's `lendingLimit`. A value Kueue does not
/// define is an error naming the file, document and field.
pub fn load(paths: &[PathBuf]) -> Result<SimQueues, FormatError> {
    let mut files = Vec::new();
    let mut fair_sharing = None;
    for p in paths {
        let file = p.display().to_string();
        let text = read_text(p)?;
        // A file of Kueue Configurations only says whether fair sharing is on, and how it
        // preempts.
        match kueue_configuration(&file, &text)? {
            Some(fs) => fair_sharing = Some(fs),
            None => files.push((file, text)),
        }
    }
    let read = formats::queues::read(&files);
    if read.queues.is_empty() && read.problems.is_empty() {
        return Err(FormatError::input(
            files.first().map_or("--queues".to_owned(), |f| f.0.clone()),
            "no queue found; expected KAI Queues or Kueue ClusterQueues/Cohorts",
        ));
    }
    let mut kept = BTreeMap::new();
    let mut preemption = BTreeMap::new();
    let mut local_queues = BTreeMap::new();
    for (file, text) in &files {
        // Unreadable files are reported by the tree's checks.
        let Ok(docs) = parse_documents(file, text) else {
            continue;
        };
        for (k, d) in list_items(docs).iter().enumerate() {
            let kind = d.get("kind").and_then(Value::as_str);
            let Some(name) = d.pointer("/metadata/name").and_then(Value::as_str) else {
                continue;
            };
            if kind == Some("LocalQueue") {
                if let Some(cq) = d.pointer("/spec/clusterQueue").and_then(Value::as_str) {
                    local_queues
                        .entry(name.to_owned())
                        .or_insert_with(|| cq.to_owned());
                }
            }
            if kind != Some("ClusterQueue") {
                continue;
            }
            let at = |field: &str| format!("{file}: document {}: {field}", k + 1);
            preemption.insert(name.to_owned(), kueue_preemption(d, &at)?);
            if let Some(r) = lending_kept(d) {
                kept.insert(name.to_owned(), r);
            }
        }
    }
    let kueue = crate::kueue_admit::read_objects(&files)?.map(|o| KueueModel {
        cluster_queues: o.cluster_queues,
        cohorts: o.cohorts,
        flavors: o
            .flavors
            .into_iter()
            .map(|f| KueueFlavor {
                name: f.name,
                node_labels: f.node_labels,
                node_taints: f.node_taints,
                tolerations: f.tolerations,
                undeclared: false,
            })
            .collect(),
        gpu_resource: crate::kueue_admit::GPU.to_owned(),
        fair_sharing: fair_sharing.as_ref().is_some_and(|fs| fs.0),
        fair_strategies: fair_sharing.clone().map(|fs| fs.1).unwrap_or_default(),
    });
    let kueue = kueue.map(with_named_flavors);
    if fair_sharing.is_some() && kueue.is_none() {
        return Err(FormatError::input(
            "--queues",
            "a Kueue Configuration was given, but no Kueue ClusterQueue",
        ));
    }
    Ok(SimQueues {
        files: read,
        kept,
        preemption,
        local_queues,
        kueue,
    })
}

/// The model with a flavor for every flavor a ClusterQueue or Cohort names: one without a
/// ResourceFlavor is added with no node labels, marked undeclared (a warning, not Kueue's
/// pending Workloads: queue files for a simulation often leave ResourceFlavors out).
fn with_named_flavors(mut m: KueueModel) -> KueueModel {
    let named: Vec<String> = m
        .cluster_queues
        .iter()
        .flat_map(|q| &q.groups)
        .chain(m.cohorts.iter().flat_map(|c| &c.groups))
        .flat_map(|g| g.flavors.iter().map(|(f, _)| f.clone()))
        .collect();
    for f in named {
        if !m.flavors.iter().any(|x| x.name == f) {
            m.flavors.push(KueueFlavor {
                name: f,
                undeclared: true,
                ..KueueFlavor::default()
            });
        }
    }
    m
}

/// Whether a queue file holds Kueue Configurations (`apiVersion:
/// config.kueue.x-k8s.io/…`, `kind: Configuration`) and nothing else: `Some` of
/// `fairSharing.enable` and `fairSharing.preemptionStrategies` (the last document's; no list:
/// empty, Kueue's default), `None` for any other file. A Configuration beside queue objects, a
/// `fairSharing.enable` that is not a boolean, or a strategy list Kueue's validation refuses,
/// is an error naming the file, document and field.
fn kueue_configuration(
    file: &str,
    text: &str,
) -> Result<Option<(bool, Vec<Strategy>)>, FormatError> {
    // Unreadable files are reported by the tree's checks.
    let Ok(docs) = parse_documents(file, text) else {
        return Ok(None);
    };
    let is_config = |d: &Value| {
        d.get("kind").and_then(Value::as_str) == Some("Configuration")
            && d.get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|a| a.starts_with("config.kueue.x-k8s.io/"))
    };
    let n = docs.iter().filter(|d| is_config(d)).count();
    if n == 0 {
        return Ok(None);
    }
    if n != docs.len() {
        return Err(FormatError::input(
            file,
            "a Kueue Configuration must be in a file of its own, not beside queue objects",
        ));
    }
    let mut out = (false, Vec::new());
    for (k, d) in docs.iter().enumerate() {
        let at = |field: &str| format!("{file}: document {}: fairSharing.{field}", k + 1);
        let on = match d.pointer("/fairSharing/enable") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                return Err(FormatError::input(
                    at("enable"),
                    format!("expected true or false, got {v}"),
                ))
            }
        };
        out = (on, preemption_strategies(d, &at("preemptionStrategies"))?);
    }
    Ok(Some(out))
}

/// `fairSharing.preemptionStrategies` as Kueue's validation allows it: none,
/// `[LessThanOrEqualToFinalShare]`, `[LessThanInitialShare]` or both in that order.
fn preemption_strategies(d: &Value, at: &str) -> Result<Vec<Strategy>, FormatError> {
    let Some(v) = d.pointer("/fairSharing/preemptionStrategies") else {
        return Ok(Vec::new());
    };
    let expected = "expected [LessThanOrEqualToFinalShare], [LessThanInitialShare] or [LessThanOrEqualToFinalShare, LessThanInitialShare]";
    let names: Option<Vec<&str>> = v
        .as_array()
        .and_then(|a| a.iter().map(Value::as_str).collect());
    let list: Vec<Strategy> = match names.as_deref() {
        Some(["LessThanOrEqualToFinalShare"]) => vec![Strategy::LessThanOrEqualToFinalShare],
        Some(["LessThanInitialShare"]) => vec![Strategy::LessThanInitialShare],
        Some([] | ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]) => {
            Strategy::DEFAULT.to_vec()
        }
        _ => return Err(FormatError::input(at, format!("{expected}, got {v}"))),
    };
    Ok(list)
}

impl SimQueues {
    /// The queues as the simulator runs them under `rules` (the files' own scheduler when
    /// `None`: KAI for KAI Queues, else Kueue's), and the problems that scheduler only warns
    /// about (`warning: FILE: …` lines for the output); every problem when one refuses the tree.
    pub fn config(
        &self,
        rules: Option<Dialect>,
    ) -> Result<(QueueConfig, Vec<String>), FormatError> {
        let dialect = rules.unwrap_or_else(|| dialect(&self.files));
        let (_, warnings) = tree_in(&self.files, dialect)?;
        let config = QueueConfig {
            specs: self.files.queues.iter().map(|q| q.spec.clone()).collect(),
            dialect,
            kept: self.kept.clone(),
            kueue_preemption: self.preemption.clone(),
            kueue: self
                .kueue
                .clone()
                .filter(|_| dialect == sched::Dialect::Kueue),
        };
        let mut warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        if let Some(k) = &config.kueue {
            warnings.extend(k.flavors.iter().filter(|f| f.undeclared).map(|f| {
                format!(
                    "--queues: flavor `{}` has no ResourceFlavor; simulated as one with no node labels or taints (Kueue keeps such Workloads pending)",
                    f.name
                )
            }));
        }
        Ok((config, warnings))
    }

    /// Leaf queues (no queue names them as parent), in file order.
    pub fn leaves(&self) -> Vec<&str> {
        let parents: BTreeSet<&str> = self
            .files
            .queues
            .iter()
            .filter_map(|q| q.spec.parent.as_deref())
            .collect();
        self.files
            .queues
            .iter()
            .map(|q| q.spec.name.as_str())
            .filter(|n| !parents.contains(n))
            .collect()
    }
}

/// Give every trace job its leaf queue: by `map` (`--queue-map FILE`, read with
/// [`read_queue_map`]), else by its own name when that is a leaf queue, else by the
/// ClusterQueue of a Kueue LocalQueue of that name. Every name left without
/// one is listed in one error naming the map file (or `trace`, when there is no map).
pub fn map_trace(
    jobs: &mut [TraceJob],
    queues: &SimQueues,
    map: Option<(&str, &BTreeMap<String, String>)>,
    trace: &str,
) -> Result<(), FormatError> {
    let leaves: BTreeSet<&str> = queues.leaves().into_iter().collect();
    if let Some((file, m)) = map {
        for (from, to) in m {
            if !leaves.contains(to.as_str()) {
                return Err(FormatError::input(
                    file,
                    format!(
                        "{from}: `{to}` is not a leaf queue of the queue files; leaf queues: {}",
                        list(leaves.iter().copied(), leaves.len())
                    ),
                ));
            }
        }
    }
    let mut unmapped: BTreeSet<&str> = BTreeSet::new();
    let mut leaf_of: Vec<Option<String>> = Vec::with_capacity(jobs.len());
    for j in jobs.iter() {
        let to = match map.and_then(|(_, m)| m.get(&j.queue)) {
            Some(to) => Some(to.clone()),
            None if leaves.contains(j.queue.as_str()) => None,
            None => match queues.local_queues.get(&j.queue) {
                Some(cq) if leaves.contains(cq.as_str()) => Some(cq.clone()),
                _ => {
                    unmapped.insert(&j.queue);
                    None
                }
            },
        };
        leaf_of.push(to);
    }
    if !unmapped.is_empty() {
        return Err(FormatError::input(
            map.map_or(trace, |(f, _)| f),
            format!(
                "trace queues with no leaf queue: {}; map them with --queue-map FILE (`trace_queue: leaf_queue`)",
                list(unmapped.iter().copied(), unmapped.len())
            ),
        ));
    }
    for (j, to) in jobs.iter_mut().zip(leaf_of) {
        if let Some(to) = to {
            j.queue = to;
        }
    }
    Ok(())
}

/// Read `--queue-map FILE` (`-` is standard input): a YAML (or JSON) mapping `trace_queue:
/// leaf_queue`, or, for a `.csv` file, lines `trace_queue,leaf_queue` (an optional header
/// `trace_queue,leaf_queue`, blank lines and `#` comments skipped). Errors name the file and
/// line (CSV) or key (YAML).
pub fn read_queue_map(path: &Path) -> Result<BTreeMap<String, String>, FormatError> {
    let file = path.display().to_string();
    let text = read_text(path)?;
    let mut out = BTreeMap::new();
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty()
                || line.starts_with('#')
                || (n == 0 && line == "trace_queue,leaf_queue")
            {
                continue;
            }
            let at = format!("{file}: line {}", n + 1);
            let (from, to) = line
                .split_once(',')
                .filter(|(a, b)| !a.trim().is_empty() && !b.trim().is_empty() && !b.contains(','))
                .ok_or_else(|| {
                    FormatError::input(&at, "expected `trace_queue,leaf_queue`".to_owned())
                })?;
            let (from, to) = (from.trim(), to.trim());
            check_map_names(from, to).map_err(|m| FormatError::input(&at, m))?;
            if out.insert(from.to_owned(), to.to_owned()).is_some() {
                return Err(FormatError::input(
                    &at,
                    format!("trace queue `{from}` is mapped twice"),
                ));
            }
        }
        return Ok(out);
    }
    let docs = parse_documents(&file, &text)?;
    let [Value::Object(m)] = docs.as_slice() else {
        return Err(FormatError::input(
            &file,
            "expected one mapping `trace_queue: leaf_queue`".to_owned(),
        ));
    };
    for (from, to) in m {
        let to = match to {
            Value::String(s) if !s.is_empty() => s.clone(),
            Value::Number(n) => n.to_string(),
            v => {
                return Err(FormatError::input(
                    &file,
                    format!(
                        "`{}`: expected a leaf queue name, got {v}",
                        formats::excerpt(from)
                    ),
                ))
            }
        };
        check_map_names(from, &to).map_err(|m| FormatError::input(&file, m))?;
        out.insert(from.clone(), to);
    }
    Ok(out)
}

/// A `--queue-map` entry's names: neither may be a name no Kubernetes object could have
/// (empty, over 253 bytes, a control character), as the trace readers and queue files refuse
/// them; the message names the trace queue (cut) and what is wrong.
fn check_map_names(from: &str, to: &str) -> Result<(), String> {
    formats::names::check_kubernetes_name("trace queue name", from)?;
    formats::names::check_kubernetes_name("leaf queue name", to)
        .map_err(|m| format!("`{}`: {m}", formats::excerpt(from)))
}

/// Up to [`UNMAPPED_SHOWN`] names, then how many more.
fn list<'a>(names: impl Iterator<Item = &'a str>, n: usize) -> String {
    let shown: Vec<&str> = names.take(UNMAPPED_SHOWN).collect();
    let mut s = shown.join(", ");
    if n > shown.len() {
        s.push_str(&format!(" and {} more", n - shown.len()));
    }
    s
}

/// A ClusterQueue's `spec.preemption` (Kueue's defaults, `Never`, for what it leaves out).
fn kueue_preemption(
    d: &Value,
    at: &dyn Fn(&str) -> String,
) -> Result<KueuePreemption, FormatError> {
    let field = |name: &str| {
        d.pointer(&format!("/spec/preemption/{name}"))
            .and_then(Value::as_str)
    };
    let bad = |name: &str, v: &str, expected: &str| {
        FormatError::input(
            at(&format!("spec.preemption.{name}")),
            format!("expected {expected}, got `{v}`"),
        )
    };
    let within = match field("withinClusterQueue") {
        None | Some("Never") => WithinClusterQueue::Never,
        Some("LowerPriority" | "LowerOrNewerEqualPriority") => WithinClusterQueue::LowerPriority,
        Some(v) => {
            return Err(bad(
                "withinClusterQueue",
                v,
                "Never, LowerPriority or LowerOrNewerEqualPriority",
            ))
        }
    };
    let reclaim = match field("reclaimWithinCohort") {
        None | Some("Never") => ReclaimWithinCohort::Never,
        Some("LowerPriority") => ReclaimWithinCohort::LowerPriority,
        Some("Any") => ReclaimWithinCohort::Any,
        Some(v) => return Err(bad("reclaimWithinCohort", v, "Never, LowerPriority or Any")),
    };
    Ok(KueuePreemption {
        within_cluster_queue: within,
        reclaim_within_cohort: reclaim,
    })
}

/// What a ClusterQueue keeps of its nominal quota per resource, summed over flavors that give
/// a `lendingLimit` (nominal − lendingLimit); `None` when none does. Invalid amounts are
/// `queues validate`'s to report and count as nothing kept here.
fn lending_kept(d: &Value) -> Option<Resources> {
    let mut kept = Resources::default();
    let mut any = false;
    let groups = d
        .pointer("/spec/resourceGroups")
        .and_then(Value::as_array)?;
    for g in groups {
        let flavors = g.get("flavors").and_then(Value::as_array);
        for f in flavors.into_iter().flatten() {
            let resources = f.get("resources").and_then(Value::as_array);
            for r in resources.into_iter().flatten() {
                let Some(kind) = r
                    .get("name")
                    .and_then(Value::as_str)
                    .and_then(kueue_resource)
                else {
                    continue;
                };
                let amount = |k: &str| r.get(k).and_then(|v| kueue_amount(kind, v));
                if let (Some(nominal), Some(lend)) =
                    (amount("nominalQuota"), amount("lendingLimit"))
                {
                    kept.set(kind, kept.get(kind) + (nominal - lend).max(0.0));
                    any = true;
                }
            }
        }
    }
    any.then_some(kept)
}
