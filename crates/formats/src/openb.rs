//! Alibaba's GPU-sharing trace (`cluster-trace-gpu-v2023` of alibaba/clusterdata, published with
//! Weng et al., "Beware of Fragmentation", USENIX ATC '23): the pod list
//! (`openb_pod_list_*.csv`) as a trace and the node list (`openb_node_list_*.csv`) as a cluster.
//!
//! Pods: `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//! deletion_time,scheduled_time`, times in seconds. A pod is a one-pod job submitted at
//! `creation_time` that runs from `scheduled_time` to `deletion_time` (pods still `Running` at
//! the end of the trace are cut there, as the trace cuts them); `scheduled_time −
//! creation_time` is its observed wait. `num_gpu` 1 with `gpu_milli` below 1000 is a share of
//! one GPU; `gpu_spec` (`V100M16|V100M32`; empty or `nan` for none) the GPU models it accepts;
//! `cpu_milli` and `memory_mib` its CPU and memory; `qos` its queue. Pods never scheduled
//! (`Pending`, no `scheduled_time`) are left out (`Trace::not_run`).
//!
//! Nodes: `sn,cpu_milli,memory_mib,gpu,model`. Each becomes a Kubernetes Node with its GPUs,
//! CPU and memory as allocatable resources and its model as the `nvidia.com/gpu.product` label,
//! all in one flat network (one level, `railyard.dev/openb-cluster`): the trace says nothing of
//! the network, and its jobs are single pods.

use serde_json::{json, Value};
use sim::shares::GPU_MODEL_LABEL;
use sim::{PodShape, TraceJob};

use crate::error::{excerpt, FormatError};
use crate::names::check_kubernetes_name;
use crate::trace_model::{Trace, TraceFormat, MAX_DURATION_S, MAX_ROWS};

/// The pod list's header.
pub const POD_HEADER: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time";

/// The node list's header.
pub const NODE_HEADER: &str = "sn,cpu_milli,memory_mib,gpu,model";

/// The one level label of an openb cluster.
pub const LEVEL_LABEL: &str = "railyard.dev/openb-cluster";

/// Most GPUs a pod or node of the trace has (the trace's own bound is 8).
const MAX_GPUS: u32 = 64;

fn first_line(text: &str) -> &str {
    let l = text.lines().next().unwrap_or("");
    l.strip_prefix('\u{feff}').unwrap_or(l).trim_end()
}

/// Whether `text` begins with the openb pod list's header.
pub fn is_openb_pods(text: &str) -> bool {
    first_line(text) == POD_HEADER
}

/// Whether `text` begins with the openb node list's header.
pub fn is_openb_nodes(text: &str) -> bool {
    first_line(text) == NODE_HEADER
}

/// Rows after the header: `(line, fields)`, blank lines skipped.
fn rows(text: &str) -> impl Iterator<Item = (u64, Vec<&str>)> {
    text.split('\n').enumerate().skip(1).filter_map(|(i, l)| {
        let l = l.strip_suffix('\r').unwrap_or(l);
        (!l.trim().is_empty()).then(|| (i as u64 + 1, l.split(',').map(str::trim).collect()))
    })
}

fn whole<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{name}: expected a whole number, got \"{}\"", excerpt(v)))
}

fn seconds(name: &str, v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!(
            "{name}: expected seconds (a number ≥ 0), got \"{}\"",
            excerpt(v)
        )),
    }
}

/// Read an openb pod list (see the module doc). `file` names it in errors; with
/// `skip_bad_rows`, unreadable rows are collected instead of failing.
pub fn parse_pods(file: &str, text: &str, skip_bad_rows: bool) -> Result<Trace, FormatError> {
    if !is_openb_pods(text) {
        return Err(FormatError::input(
            file,
            format!("line 1: expected the openb pod list header `{POD_HEADER}`"),
        ));
    }
    let columns = POD_HEADER.split(',').count();
    let mut trace = Trace {
        format: Some(TraceFormat::Openb),
        ..Trace::default()
    };
    let mut names = std::collections::BTreeSet::new();
    for (n, (line, f)) in rows(text).enumerate() {
        if n >= MAX_ROWS {
            return Err(FormatError::input(
                file,
                format!("line {line}: more than the limit of {MAX_ROWS} rows; split the trace"),
            ));
        }
        let row = (|| -> Result<Option<(TraceJob, f64)>, String> {
            if f.len() != columns {
                return Err(format!("{} fields where the header has {columns}", f.len()));
            }
            let name = f[0];
            if name.is_empty() {
                return Err("name: empty".to_owned());
            }
            check_kubernetes_name("job name", name).map_err(|m| format!("name: {m}"))?;
            if !names.insert(name.to_owned()) {
                return Err(format!("name: \"{}\" listed twice", excerpt(name)));
            }
            let cpu_milli: u64 = whole("cpu_milli", f[1])?;
            let memory_mib: u64 = whole("memory_mib", f[2])?;
            let num_gpu: u32 = whole("num_gpu", f[3])?;
            let gpu_milli: u32 = whole("gpu_milli", f[4])?;
            if num_gpu > MAX_GPUS {
                return Err(format!(
                    "num_gpu: {num_gpu} is more than the limit of {MAX_GPUS}"
                ));
            }
            let share = match (num_gpu, gpu_milli) {
                (0, 0) => None,
                (0, _) => return Err(format!("gpu_milli: {gpu_milli} for a pod without GPUs (num_gpu 0); expected 0")),
                (_, 1000) => None,
                (1, m) if (1..1000).contains(&m) => Some(m),
                (1, m) => return Err(format!("gpu_milli: expected 1..=1000 thousandths of a GPU, got {m}")),
                (g, m) => return Err(format!("gpu_milli: {m} with num_gpu {g}; a share of a GPU is only for num_gpu 1 (expected 1000)")),
            };
            let mut gpu_models: Vec<String> = match f[5] {
                "" | "nan" => Vec::new(),
                spec => spec.split('|').map(|m| m.trim().to_owned()).collect(),
            };
            if gpu_models.iter().any(String::is_empty) {
                return Err(format!(
                    "gpu_spec: expected GPU models separated by |, got \"{}\"",
                    excerpt(f[5])
                ));
            }
            gpu_models.sort();
            gpu_models.dedup();
            let qos = if f[6].is_empty() { "default" } else { f[6] };
            check_kubernetes_name("queue name", qos).map_err(|m| format!("qos: {m}"))?;
            let phase = f[7];
            if !matches!(phase, "Running" | "Succeeded" | "Failed" | "Pending") {
                return Err(format!(
                    "pod_phase: expected Running, Succeeded, Failed or Pending, got \"{}\"",
                    excerpt(phase)
                ));
            }
            let created = seconds("creation_time", f[8])?;
            if f[10].is_empty() || phase == "Pending" {
                trace
                    .not_run
                    .push((line, format!("{name}: {phase}, never scheduled")));
                return Ok(None);
            }
            let scheduled = seconds("scheduled_time", f[10])?;
            let deleted = seconds("deletion_time", f[9])?;
            if scheduled < created {
                return Err("scheduled_time: before creation_time".to_owned());
            }
            if deleted < scheduled {
                return Err("deletion_time: before scheduled_time".to_owned());
            }
            if deleted - scheduled > MAX_DURATION_S {
                return Err(format!(
                    "deletion_time − scheduled_time: {:.0} s is longer than the limit of {MAX_DURATION_S:.0} s",
                    deleted - scheduled
                ));
            }
            Ok(Some((
                TraceJob {
                    line,
                    submit_s: created,
                    queue: qos.to_owned(),
                    pod: PodShape {
                        gpu_milli: share,
                        cpu_milli,
                        memory_mib,
                        gpu_models,
                    },
                    ..TraceJob::new(name, num_gpu, deleted - scheduled)
                },
                scheduled - created,
            )))
        })();
        match row {
            Ok(Some((job, wait))) => {
                trace.jobs.push(job);
                trace.observed_wait_s.push(Some(wait));
            }
            Ok(None) => {}
            Err(m) if skip_bad_rows => trace.skipped.push((line, m)),
            Err(m) => return Err(FormatError::input(file, format!("line {line}: {m}"))),
        }
    }
    Ok(trace)
}

/// GPU memory per model, MiB, where the model names it (`V100M32`: 32 GiB; P100 and T4 have
/// 16 GiB); `None` for the trace's undisclosed `G1`–`G3`.
fn model_memory_mib(model: &str) -> Option<u32> {
    match model {
        "P100" | "T4" | "V100M16" => Some(16_384),
        "V100M32" => Some(32_768),
        "A10" => Some(24_576),
        _ => None,
    }
}

/// The node list as Kubernetes Node objects (see the module doc), for the NodeList import.
pub fn node_docs(file: &str, text: &str) -> Result<Vec<Value>, FormatError> {
    if !is_openb_nodes(text) {
        return Err(FormatError::input(
            file,
            format!("line 1: expected the openb node list header `{NODE_HEADER}`"),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    let mut docs = Vec::new();
    for (line, f) in rows(text) {
        let at = |m: String| FormatError::input(file, format!("line {line}: {m}"));
        if f.len() != 5 {
            return Err(at(format!("{} fields where the header has 5", f.len())));
        }
        let name = f[0];
        if name.is_empty() {
            return Err(at("sn: empty".to_owned()));
        }
        if !names.insert(name.to_owned()) {
            return Err(at(format!("sn: \"{}\" listed twice", excerpt(name))));
        }
        let cpu: u64 = whole("cpu_milli", f[1]).map_err(at)?;
        let memory: u64 = whole("memory_mib", f[2]).map_err(at)?;
        let gpus: u32 = whole("gpu", f[3]).map_err(at)?;
        if gpus > MAX_GPUS {
            return Err(at(format!(
                "gpu: {gpus} is more than the limit of {MAX_GPUS}"
            )));
        }
        let model = f[4];
        if gpus > 0 && matches!(model, "" | "nan") {
            return Err(at(format!("model: empty for a node with {gpus} GPUs")));
        }
        let mut labels = serde_json::Map::new();
        labels.insert("kubernetes.io/hostname".to_owned(), json!(name));
        labels.insert(LEVEL_LABEL.to_owned(), json!("openb"));
        if gpus > 0 {
            labels.insert(GPU_MODEL_LABEL.to_owned(), json!(model));
            if let Some(mib) = model_memory_mib(model) {
                labels.insert(
                    crate::k8s::GPU_MEMORY_LABEL.to_owned(),
                    json!(mib.to_string()),
                );
            }
        }
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": { "name": name, "labels": labels },
            "status": { "allocatable": {
                "nvidia.com/gpu": gpus.to_string(),
                "cpu": format!("{cpu}m"),
                "memory": format!("{memory}Mi"),
            } },
        }));
    }
    if docs.is_empty() {
        return Err(FormatError::input(file, "no nodes after the header"));
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../../../data/openb_pod_list_default.head300.csv");
    const NODES: &str = include_str!("../../../data/openb_node_list_gpu_node.head100.csv");

    fn pods(rows: &str) -> String {
        format!("{POD_HEADER}\n{rows}")
    }

    fn error(rows: &str) -> String {
        parse_pods("p.csv", &pods(rows), false)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_bundled_sample_reads_whole() {
        let t = parse_pods("sample", SAMPLE, false).unwrap();
        // 300 pods, 22 never scheduled (Pending).
        assert_eq!(t.jobs.len() + t.not_run.len(), 300);
        assert_eq!(t.not_run.len(), 22);
        assert_eq!(t.observed_wait_s.len(), t.jobs.len());
        let p1 = t.jobs.iter().find(|j| j.name == "openb-pod-0001").unwrap();
        assert_eq!(p1.pod.gpu_milli, Some(460));
        assert_eq!((p1.pod.cpu_milli, p1.pod.memory_mib), (6000, 12288));
        assert_eq!(p1.duration_s, 12_902_960.0 - 427_061.0);
        assert_eq!(p1.queue, "LS");
        let p5 = t.jobs.iter().find(|j| j.name == "openb-pod-0005").unwrap();
        assert_eq!((p5.gpus, p5.pod.gpu_milli), (0, None));
        // Scheduled 2 s after creation.
        let i5 = t
            .jobs
            .iter()
            .position(|j| j.name == "openb-pod-0005")
            .unwrap();
        assert_eq!(t.observed_wait_s[i5], Some(2.0));
        let docs = node_docs("nodes", NODES).unwrap();
        assert_eq!(docs.len(), 100);
    }

    #[test]
    fn gpu_spec_lists_the_accepted_models() {
        let t = parse_pods(
            "p.csv",
            &pods("a,1000,1024,1,1000,V100M32|V100M16,LS,Running,0,10,0\nb,1,1,1,500,nan,BE,Succeeded,0,5,1\n"),
            false,
        )
        .unwrap();
        assert_eq!(t.jobs[0].pod.gpu_models, vec!["V100M16", "V100M32"]);
        assert!(t.jobs[1].pod.gpu_models.is_empty());
        assert_eq!(t.jobs[1].duration_s, 4.0);
    }

    #[test]
    fn every_bad_row_is_named_with_its_line() {
        let cases = [
            (
                "a,1,1,1,500,,LS,Running,0,10\n",
                "line 2: 10 fields where the header has 11",
            ),
            (
                "a,x,1,1,500,,LS,Running,0,10,0\n",
                "line 2: cpu_milli: expected a whole number, got \"x\"",
            ),
            (
                "a,1,-3,1,500,,LS,Running,0,10,0\n",
                "line 2: memory_mib: expected a whole number",
            ),
            (
                "a,1,1,1.5,500,,LS,Running,0,10,0\n",
                "line 2: num_gpu: expected a whole number",
            ),
            (
                "a,1,1,99,1000,,LS,Running,0,10,0\n",
                "line 2: num_gpu: 99 is more than the limit of 64",
            ),
            (
                "a,1,1,0,500,,LS,Running,0,10,0\n",
                "line 2: gpu_milli: 500 for a pod without GPUs",
            ),
            (
                "a,1,1,1,0,,LS,Running,0,10,0\n",
                "line 2: gpu_milli: expected 1..=1000",
            ),
            (
                "a,1,1,1,1500,,LS,Running,0,10,0\n",
                "line 2: gpu_milli: expected 1..=1000",
            ),
            (
                "a,1,1,2,500,,LS,Running,0,10,0\n",
                "line 2: gpu_milli: 500 with num_gpu 2",
            ),
            (
                "a,1,1,1,500,V100|,LS,Running,0,10,0\n",
                "line 2: gpu_spec: expected GPU models",
            ),
            (
                "a,1,1,1,500,,LS,Lost,0,10,0\n",
                "line 2: pod_phase: expected Running",
            ),
            (
                "a,1,1,1,500,,LS,Running,x,10,0\n",
                "line 2: creation_time: expected seconds",
            ),
            (
                "a,1,1,1,500,,LS,Running,0,-1,0\n",
                "line 2: deletion_time: expected seconds",
            ),
            (
                "a,1,1,1,500,,LS,Running,5,10,4\n",
                "line 2: scheduled_time: before creation_time",
            ),
            (
                "a,1,1,1,500,,LS,Running,0,3,4\n",
                "line 2: deletion_time: before scheduled_time",
            ),
            (
                "a,1,1,1,500,,LS,Running,0,1e12,0\n",
                "line 2: deletion_time − scheduled_time",
            ),
            (",1,1,1,500,,LS,Running,0,10,0\n", "line 2: name: empty"),
            (
                &format!("{},1,1,1,500,,LS,Running,0,10,0\n", "p".repeat(254)),
                "line 2: name: the job name `pppp",
            ),
            (
                "p\u{1b}[2J,1,1,1,500,,LS,Running,0,10,0\n",
                "line 2: name: the job name `p\\u{1b}[2J` holds a control character",
            ),
            (
                "a,1,1,1,500,,L\u{7}S,Running,0,10,0\n",
                "line 2: qos: the queue name `L\\u{7}S` holds a control character",
            ),
            (
                &format!("a,1,1,1,500,,{},Running,0,10,0\n", "q".repeat(254)),
                "line 2: qos: the queue name `qqqq",
            ),
            (
                "a,1,1,1,500,,LS,Running,0,10,0\n\na,1,1,1,500,,LS,Running,0,10,0\n",
                "line 4: name: \"a\" listed twice",
            ),
        ];
        for (rows, want) in cases {
            let got = error(rows);
            assert!(got.contains("p.csv") && got.contains(want), "{rows}: {got}");
        }
        let skipped = parse_pods("p.csv", &pods(cases[1].0), true).unwrap();
        assert_eq!(skipped.skipped.len(), 1);
        assert_eq!(skipped.skipped[0].0, 2);
    }

    #[test]
    fn bad_node_rows_are_named_with_their_line() {
        let cases = [
            ("n1,1,1,2\n", "line 2: 4 fields where the header has 5"),
            ("n1,1,1,x,T4\n", "line 2: gpu: expected a whole number"),
            (
                "n1,1,1,2,nan\n",
                "line 2: model: empty for a node with 2 GPUs",
            ),
            (
                "n1,1,1,2,T4\nn1,1,1,2,T4\n",
                "line 3: sn: \"n1\" listed twice",
            ),
            ("", "no nodes after the header"),
        ];
        for (rows, want) in cases {
            let got = node_docs("n.csv", &format!("{NODE_HEADER}\n{rows}"))
                .unwrap_err()
                .to_string();
            assert!(got.contains("n.csv") && got.contains(want), "{rows}: {got}");
        }
    }
}
