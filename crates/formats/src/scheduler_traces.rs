//! Traces from the schedulers people run: Slurm's accounting (`sacct --parsable2`) and Kueue's
//! Workload list (`kubectl get workloads -A -o json`), read into trace jobs with the time each
//! job really waited.
//!
//! Both keep the jobs that ran and finished: the run time is end − start (what the job took on
//! the network it had), the submission time the trace's. Jobs that never started (cancelled
//! while pending), are still pending or running, or hold no GPUs are left out, each with its
//! line (or item) and why (`Trace::not_run`). Times are read as written: Slurm
//! prints local time without a zone, which is fine because only differences matter.
//!
//! Slurm: the fields are those of [`SACCT_FIELDS`] (`sacct -o` with that list, any order, extra
//! fields ignored); the queue is `Account`, else `Partition` when the output has no `Account`;
//! GPUs from `AllocTRES` (`gres/gpu=N`, else the sum of typed `gres/gpu:TYPE=N`). Job steps
//! (`1234.batch`, printed without `--allocations`) are not jobs and are skipped, counted.
//!
//! Kueue: a Workload's submission is `metadata.creationTimestamp`, its start the `Admitted`
//! condition's `lastTransitionTime` (else `QuotaReserved`'s), its end the `Finished` condition's;
//! GPUs are Σ pod set `count` × the template's `nvidia.com/gpu`; the queue `spec.queueName`
//! (the LocalQueue), priority `spec.priority`; a pod set's `topologyRequest` becomes the job's
//! topology ask.

use serde_json::Value;
use sim::{TopologyAsk, TraceJob};

use crate::error::{excerpt, FormatError};
use crate::live::{gpu_use, GpuUse};
use crate::names::check_kubernetes_name;
use crate::trace_model::{parse_datetime, Trace, TraceFormat, MAX_DURATION_S, MAX_ROWS};

/// The `sacct` fields railyard reads; the README's command asks for exactly these:
/// `sacct --allusers --allocations --parsable2 -o JobID,JobName,Partition,Account,AllocTRES,NNodes,Submit,Start,End,State`.
pub const SACCT_FIELDS: [&str; 10] = [
    "JobID",
    "JobName",
    "Partition",
    "Account",
    "AllocTRES",
    "NNodes",
    "Submit",
    "Start",
    "End",
    "State",
];

/// Fields a `sacct` header must have.
const SACCT_REQUIRED: [&str; 6] = ["JobID", "AllocTRES", "Submit", "Start", "End", "State"];

/// Whether `text` looks like `sacct --parsable2` output (a `|`-separated header naming JobID).
pub fn is_sacct(text: &str) -> bool {
    let first = text.lines().next().unwrap_or("");
    first.contains('|') && first.split('|').any(|f| f.trim() == "JobID")
}

/// Whether `doc` is a Kueue Workload list.
pub fn is_workload_list(doc: &Value) -> bool {
    crate::live::is_list_of(doc, "Workload")
        || (doc.get("kind").and_then(Value::as_str) == Some("List")
            && doc
                .get("items")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty))
}

/// One finished job's times and size, before it becomes a trace job.
struct Ran {
    submit: f64,
    start: f64,
    end: f64,
}

/// Check submit ≤ start ≤ end and a sane duration; the error names the fields.
fn check_times(r: &Ran) -> Result<(), String> {
    if r.start < r.submit {
        return Err("Start: before Submit".to_owned());
    }
    if r.end < r.start {
        return Err("End: before Start".to_owned());
    }
    if r.end - r.start > MAX_DURATION_S {
        return Err(format!(
            "End − Start: {:.0} s is longer than the limit of {MAX_DURATION_S:.0} s",
            r.end - r.start
        ));
    }
    Ok(())
}

fn finished_job(
    name: String,
    line: u64,
    gpus: u32,
    queue: String,
    priority: i32,
    topology: TopologyAsk,
    ran: &Ran,
) -> TraceJob {
    TraceJob {
        line,
        submit_s: ran.submit,
        queue,
        priority,
        topology,
        ..TraceJob::new(name, gpus, ran.end - ran.start)
    }
}

/// Read `sacct --parsable2` output (see the module doc). `file` names it in errors; with
/// `skip_bad_rows`, unreadable rows are collected instead of failing.
pub fn parse_sacct(file: &str, text: &str, skip_bad_rows: bool) -> Result<Trace, FormatError> {
    let mut lines = text.split('\n').enumerate().map(|(i, l)| {
        (
            i as u64 + 1,
            l.strip_suffix('\r').unwrap_or(l).trim_end_matches('|'),
        )
    });
    let Some((_, header)) = lines.next() else {
        return Err(FormatError::input(file, "line 1: missing sacct header"));
    };
    let header: Vec<&str> = header.split('|').map(str::trim).collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    for f in SACCT_REQUIRED {
        if col(f).is_none() {
            return Err(FormatError::input(
                file,
                format!(
                    "line 1: sacct output without {f}; run sacct with -o {}",
                    SACCT_FIELDS.join(",")
                ),
            ));
        }
    }
    let queue_col = col("Account").or_else(|| col("Partition"));
    let (id, tres, submit, start, end, state) = (
        col("JobID").unwrap_or(0),
        col("AllocTRES").unwrap_or(0),
        col("Submit").unwrap_or(0),
        col("Start").unwrap_or(0),
        col("End").unwrap_or(0),
        col("State").unwrap_or(0),
    );
    let nnodes = col("NNodes");
    let mut trace = Trace {
        format: Some(TraceFormat::Sacct),
        ..Trace::default()
    };
    let mut names = std::collections::BTreeSet::new();
    let mut rows = 0usize;
    for (line, l) in lines {
        if l.trim().is_empty() {
            continue;
        }
        rows += 1;
        if rows > MAX_ROWS {
            return Err(FormatError::input(
                file,
                format!("line {line}: more than the limit of {MAX_ROWS} rows; split the trace"),
            ));
        }
        let fields: Vec<&str> = l.split('|').map(str::trim).collect();
        let row = (|| -> Result<Option<TraceJob>, String> {
            if fields.len() != header.len() {
                return Err(format!(
                    "{} fields where the header has {}",
                    fields.len(),
                    header.len()
                ));
            }
            let job_id = fields[id];
            if job_id.is_empty() {
                return Err("JobID: empty".to_owned());
            }
            if job_id.contains('.') {
                trace.job_steps += 1;
                return Ok(None);
            }
            check_kubernetes_name("job name", job_id).map_err(|m| format!("JobID: {m}"))?;
            if !names.insert(job_id.to_owned()) {
                return Err(format!("JobID: \"{}\" listed twice", excerpt(job_id)));
            }
            if let Some(c) = nnodes {
                let n = fields[c];
                if !n.is_empty() && n.parse::<u32>().is_err() {
                    return Err(format!(
                        "NNodes: expected a number of nodes, got \"{}\"",
                        excerpt(n)
                    ));
                }
            }
            let time = |c: usize, what: &str| -> Result<Option<f64>, String> {
                match fields[c] {
                    "" | "Unknown" | "None" => Ok(None),
                    t => parse_datetime(t)
                        .map(Some)
                        .map_err(|e| format!("{what}: {e}")),
                }
            };
            let submit = time(submit, "Submit")?.ok_or("Submit: missing")?;
            let state_word = fields[state].split_whitespace().next().unwrap_or("");
            let (Some(start), Some(end)) = (time(start, "Start")?, time(end, "End")?) else {
                trace
                    .not_run
                    .push((line, format!("{job_id}: {state_word}, never finished")));
                return Ok(None);
            };
            if matches!(
                state_word,
                "RUNNING" | "PENDING" | "REQUEUED" | "RESIZING" | "SUSPENDED"
            ) {
                trace
                    .not_run
                    .push((line, format!("{job_id}: {state_word}, not finished")));
                return Ok(None);
            }
            let gpus = alloc_tres_gpus(fields[tres])?;
            if gpus == 0 {
                trace
                    .not_run
                    .push((line, format!("{job_id}: no GPUs in AllocTRES")));
                return Ok(None);
            }
            let ran = Ran { submit, start, end };
            check_times(&ran)?;
            let queue = match queue_col.filter(|&c| !fields[c].is_empty()) {
                Some(c) => {
                    check_kubernetes_name("queue name", fields[c])
                        .map_err(|m| format!("{}: {m}", header[c]))?;
                    fields[c]
                }
                None => "default",
            };
            trace.observed_wait_s.push(Some(start - submit));
            Ok(Some(finished_job(
                job_id.to_owned(),
                line,
                gpus,
                queue.to_owned(),
                0,
                TopologyAsk::None,
                &ran,
            )))
        })();
        match row {
            Ok(Some(job)) => trace.jobs.push(job),
            Ok(None) => {}
            Err(m) if skip_bad_rows => trace.skipped.push((line, m)),
            Err(m) => return Err(FormatError::input(file, format!("line {line}: {m}"))),
        }
    }
    Ok(trace)
}

/// GPUs of an `AllocTRES` value: `gres/gpu=N`, else the sum of the typed `gres/gpu:TYPE=N`.
fn alloc_tres_gpus(tres: &str) -> Result<u32, String> {
    let mut untyped = None;
    let mut typed: u64 = 0;
    for item in tres.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((key, value)) = item.split_once('=') else {
            return Err(format!(
                "AllocTRES: expected TRES=COUNT items, got \"{}\"",
                excerpt(item)
            ));
        };
        if key != "gres/gpu" && !key.starts_with("gres/gpu:") {
            continue;
        }
        let n: u32 = value
            .parse()
            .ok()
            .filter(|&n| n <= topology::MAX_GPUS_PER_NODE * 1_000_000)
            .ok_or_else(|| {
                format!(
                    "AllocTRES: {key}: expected a GPU count, got \"{}\"",
                    excerpt(value)
                )
            })?;
        if key == "gres/gpu" {
            untyped = Some(n);
        } else {
            typed += u64::from(n);
        }
    }
    match untyped {
        Some(n) => Ok(n),
        None => u32::try_from(typed).map_err(|_| "AllocTRES: too many GPUs".to_owned()),
    }
}

/// Read a Kueue Workload list (`kubectl get workloads -A -o json`) as a trace (see the module
/// doc). Items are numbered from 1 in `line`; messages name `items[i]`.
pub fn parse_workloads(file: &str, doc: &Value, skip_bad_rows: bool) -> Result<Trace, FormatError> {
    let items = doc
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if items.len() > MAX_ROWS {
        return Err(FormatError::input(
            file,
            format!(
                "{} Workloads is more than the limit of {MAX_ROWS}",
                items.len()
            ),
        ));
    }
    let mut trace = Trace {
        format: Some(TraceFormat::KueueWorkloads),
        ..Trace::default()
    };
    let mut names = std::collections::BTreeSet::new();
    for (i, wl) in items.iter().enumerate() {
        let ns = wl
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        let name = wl
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let full = format!("{ns}/{name}");
        let row = (|| -> Result<Option<TraceJob>, String> {
            if wl.get("kind").and_then(Value::as_str) != Some("Workload") {
                return Err("kind: expected Workload".to_owned());
            }
            if name.is_empty() {
                return Err("metadata.name: missing".to_owned());
            }
            check_kubernetes_name("Workload name", name)
                .map_err(|m| format!("metadata.name: {m}"))?;
            check_kubernetes_name("namespace", ns)
                .map_err(|m| format!("metadata.namespace: {m}"))?;
            if !names.insert(full.clone()) {
                return Err("listed twice".to_owned());
            }
            let time = |p: &str, what: &str| -> Result<Option<f64>, String> {
                match wl.pointer(p).and_then(Value::as_str) {
                    None => Ok(None),
                    Some(t) => parse_datetime(t)
                        .map(Some)
                        .map_err(|e| format!("{what}: {e}")),
                }
            };
            let submit = time("/metadata/creationTimestamp", "metadata.creationTimestamp")?
                .ok_or("metadata.creationTimestamp: missing")?;
            let condition = |kind: &str| -> Result<Option<f64>, String> {
                let conds = wl
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                match conds.iter().find(|c| {
                    c.get("type").and_then(Value::as_str) == Some(kind)
                        && c.get("status").and_then(Value::as_str) == Some("True")
                }) {
                    None => Ok(None),
                    Some(c) => {
                        let t = c
                            .get("lastTransitionTime")
                            .and_then(Value::as_str)
                            .ok_or_else(|| {
                                format!("status.conditions[{kind}].lastTransitionTime: missing")
                            })?;
                        parse_datetime(t).map(Some).map_err(|e| {
                            format!("status.conditions[{kind}].lastTransitionTime: {e}")
                        })
                    }
                }
            };
            let start = match condition("Admitted")? {
                Some(t) => Some(t),
                None => condition("QuotaReserved")?,
            };
            let (Some(start), Some(end)) = (start, condition("Finished")?) else {
                trace
                    .not_run
                    .push((i as u64 + 1, format!("{full}: not admitted and finished")));
                return Ok(None);
            };
            let mut gpus: u64 = 0;
            let mut topology = TopologyAsk::None;
            let sets = wl
                .pointer("/spec/podSets")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            if sets.is_empty() {
                return Err("spec.podSets: missing".to_owned());
            }
            for (k, ps) in sets.iter().enumerate() {
                let count = ps
                    .get("count")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| format!("spec.podSets[{k}].count: expected a pod count"))?;
                let template = ps.get("template").cloned().unwrap_or(Value::Null);
                let spec = template.get("spec").cloned().unwrap_or(Value::Null);
                let per_pod = match gpu_use(&template, &spec)
                    .map_err(|m| format!("spec.podSets[{k}].template: {m}"))?
                {
                    None => 0,
                    Some(GpuUse::Whole(n)) => u64::from(n),
                    Some(_) => {
                        return Err(format!(
                            "spec.podSets[{k}].template: GPU fractions and GPU memory are not simulated from Kueue traces; whole GPUs only"
                        ))
                    }
                };
                gpus = gpus.saturating_add(count.saturating_mul(per_pod));
                if let Some(tr) = ps.get("topologyRequest") {
                    let level = |key: &str| tr.get(key).and_then(Value::as_str).map(str::to_owned);
                    if let Some(l) = level("required") {
                        topology = TopologyAsk::Required(l);
                    } else if let Some(l) = level("preferred") {
                        if topology == TopologyAsk::None {
                            topology = TopologyAsk::Preferred(l);
                        }
                    }
                }
            }
            if gpus == 0 {
                trace
                    .not_run
                    .push((i as u64 + 1, format!("{full}: no GPUs")));
                return Ok(None);
            }
            let gpus = u32::try_from(gpus)
                .map_err(|_| format!("spec.podSets: {gpus} GPUs is too many"))?;
            let ran = Ran { submit, start, end };
            check_times(&ran).map_err(|m| {
                m.replace("Start", "admission")
                    .replace("Submit", "creation")
                    .replace("End", "Finished")
            })?;
            let priority = wl
                .pointer("/spec/priority")
                .and_then(Value::as_i64)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0);
            let queue = wl
                .pointer("/spec/queueName")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_owned();
            check_kubernetes_name("queue name", &queue)
                .map_err(|m| format!("spec.queueName: {m}"))?;
            trace.observed_wait_s.push(Some(start - submit));
            Ok(Some(finished_job(
                full.clone(),
                i as u64 + 1,
                gpus,
                queue,
                priority,
                topology,
                &ran,
            )))
        })();
        match row {
            Ok(Some(job)) => trace.jobs.push(job),
            Ok(None) => {}
            Err(m) if skip_bad_rows => trace.skipped.push((i as u64 + 1, m)),
            Err(m) => {
                return Err(FormatError::input(
                    file,
                    format!("items[{i}] (Workload {}): {m}", excerpt(&full)),
                ))
            }
        }
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_tres_counts_untyped_gpus_else_typed_ones() {
        assert_eq!(
            alloc_tres_gpus("billing=64,cpu=64,gres/gpu=8,mem=512G,node=1"),
            Ok(8)
        );
        assert_eq!(
            alloc_tres_gpus("cpu=8,gres/gpu:a100=2,gres/gpu:h100=4"),
            Ok(6)
        );
        assert_eq!(alloc_tres_gpus("gres/gpu=8,gres/gpu:h100=8,node=1"), Ok(8));
        assert_eq!(alloc_tres_gpus("cpu=4,mem=16G"), Ok(0));
        assert!(alloc_tres_gpus("gres/gpu=lots").is_err());
    }

    const SACCT_HEAD: &str = "JobID|Partition|Account|AllocTRES|Submit|Start|End|State\n";

    fn sacct_row(id: &str, account: &str) -> String {
        format!("{SACCT_HEAD}{id}|gpu|{account}|gres/gpu=1|2017-10-01T10:00:00|2017-10-01T10:01:00|2017-10-01T11:00:00|COMPLETED\n")
    }

    /// A Workload list of one finished Workload, its name, namespace and queue as given
    /// (`None`: left out).
    fn workloads(name: &str, namespace: Option<&str>, queue: Option<&str>) -> Value {
        let mut metadata = serde_json::json!({
            "name": name, "creationTimestamp": "2017-10-01T10:00:00Z"
        });
        if let Some(ns) = namespace {
            metadata["namespace"] = ns.into();
        }
        let mut spec = serde_json::json!({ "podSets": [{ "count": 1, "template": { "spec": {
            "containers": [{ "name": "c", "resources": { "limits": { "nvidia.com/gpu": "1" } } }]
        } } }] });
        if let Some(q) = queue {
            spec["queueName"] = q.into();
        }
        let at = |t: &str, when: &str| serde_json::json!({ "type": t, "status": "True", "lastTransitionTime": when });
        serde_json::json!({ "kind": "List", "items": [{
            "kind": "Workload", "metadata": metadata, "spec": spec,
            "status": { "conditions": [
                at("Admitted", "2017-10-01T10:01:00Z"), at("Finished", "2017-10-01T11:00:00Z")
            ] }
        }] })
    }

    /// Job and queue names no Kubernetes object could have are refused, naming the field; the
    /// names real sacct output and Workload lists have are read.
    #[test]
    fn names_that_can_never_be_kubernetes_names_are_refused() {
        let long = "a".repeat(254);
        for (text, want) in [
            (sacct_row(&long, "nlp"), "line 2: JobID: the job name `aaaa"),
            (
                sacct_row("41000", "nl\u{7}p"),
                "line 2: Account: the queue name `nl\\u{7}p` holds a control character",
            ),
            (
                sacct_row("41000", &long),
                "line 2: Account: the queue name `aaaa",
            ),
        ] {
            let e = parse_sacct("s.txt", &text, false).unwrap_err().to_string();
            assert!(e.starts_with(&format!("s.txt: {want}")), "{e}");
            assert!(e.ends_with("it can never be a Kubernetes name"), "{e}");
            assert_eq!(parse_sacct("s.txt", &text, true).unwrap().skipped.len(), 1);
        }
        let t = parse_sacct("s.txt", &sacct_row("41000_7", "nlp"), false).unwrap();
        assert_eq!(
            (t.jobs[0].name.as_str(), t.jobs[0].queue.as_str()),
            ("41000_7", "nlp")
        );

        for (doc, want) in [
            (
                workloads("w", Some("team-a"), Some("")),
                "items[0] (Workload team-a/w): spec.queueName: the queue name `` is empty",
            ),
            (
                workloads("w", Some(""), Some("q")),
                "items[0] (Workload /w): metadata.namespace: the namespace `` is empty",
            ),
            (
                workloads("w", Some("team-a"), Some("q\tr")),
                "items[0] (Workload team-a/w): spec.queueName: the queue name `q\\tr` holds a control character",
            ),
            (
                workloads(&long, None, None),
                "items[0] (Workload default/aaaa",
            ),
        ] {
            let e = parse_workloads("w.json", &doc, false)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("w.json: {want}")), "{e}");
            assert!(e.ends_with("it can never be a Kubernetes name"), "{e}");
            assert!(e.len() < 400, "{e}");
            assert_eq!(parse_workloads("w.json", &doc, true).unwrap().skipped.len(), 1);
        }
        let t = parse_workloads("w.json", &workloads("w", None, None), false).unwrap();
        assert_eq!(
            (t.jobs[0].name.as_str(), t.jobs[0].queue.as_str()),
            ("default/w", "default")
        );
    }
}
