//! Slurm's live state: `sinfo --json` (the nodes and whether each can run a job) with
//! `scontrol show topology` (the topology plugin's switches) as a `topology.conf`, and
//! `squeue --json` (running jobs, their nodes and GPUs) as railyard's native state file. The
//! conversions are pure functions of the commands' output; [`read`] runs the commands.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{json, Value};

use crate::{keep, Error, Input, Options, Read};

/// The name prefix of Slurm's documents.
const PREFIX: &str = "slurm:";

/// Read `input` from the Slurm controller the local Slurm commands reach.
pub fn read(input: Input, options: &Options) -> Result<Read, Error> {
    let dump = options.dump.as_deref();
    match input {
        Input::Cluster => {
            let sinfo = run("sinfo", &["--json"])?;
            let topo = run("scontrol", &["show", "topology"])?;
            let (text, notes) = topology_conf(&sinfo, &topo)?;
            Ok(Read {
                files: vec![keep(PREFIX, "topology.conf", text, dump)?],
                topology: None,
                notes,
            })
        }
        Input::State => {
            let squeue = run("squeue", &["--json"])?;
            let (text, notes) = native_state(&squeue)?;
            Ok(Read {
                files: vec![keep(PREFIX, "state.json", text, dump)?],
                topology: None,
                notes,
            })
        }
        Input::Queues | Input::Flavors => Err(Error::Usage(
            "`slurm:`: Slurm has no queue objects railyard reads; give --queues FILE".to_owned(),
        )),
    }
}

/// Run a Slurm command; its standard output, or an error naming it.
fn run(program: &str, args: &[&str]) -> Result<String, Error> {
    let shown = format!("slurm: `{program} {}`", args.join(" "));
    let out = Command::new(program).args(args).output().map_err(|e| {
        Error::Source(format!(
            "{shown}: cannot run it: {e} (is Slurm installed here?)"
        ))
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::Source(format!(
            "{shown}: {}: {}",
            out.status,
            err.split_whitespace().collect::<Vec<_>>().join(" ")
        )));
    }
    String::from_utf8(out.stdout)
        .map_err(|_| Error::Source(format!("{shown}: output is not UTF-8")))
}

/// Node states (and flags) in which Slurm starts no job on a node.
const UNUSABLE: &[&str] = &[
    "DOWN",
    "DRAIN",
    "DRAINED",
    "DRAINING",
    "FAIL",
    "FUTURE",
    "NOT_RESPONDING",
    "POWERED_DOWN",
    "MAINTENANCE",
    "REBOOT_REQUESTED",
    "INVALID_REG",
];

/// The nodes of `sinfo --json` that can run a job, in sinfo's order, and notes naming the
/// others.
pub fn usable_nodes(sinfo: &str) -> Result<(Vec<String>, Vec<String>), Error> {
    let doc: Value = serde_json::from_str(sinfo)
        .map_err(|e| Error::Source(format!("slurm: `sinfo --json`: not JSON: {e}")))?;
    let nodes = doc.get("nodes").and_then(Value::as_array).ok_or_else(|| {
        Error::Source(
            "slurm: `sinfo --json`: no `nodes` list (Slurm 22.05 or later has it)".to_owned(),
        )
    })?;
    let mut usable = Vec::new();
    let mut seen = BTreeSet::new();
    let mut left_out = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let name = n.get("name").and_then(Value::as_str).ok_or_else(|| {
            Error::Source(format!("slurm: `sinfo --json`: nodes[{i}] has no `name`"))
        })?;
        if !seen.insert(name.to_owned()) {
            continue;
        }
        let mut states: Vec<String> = Vec::new();
        for key in ["state", "state_flags"] {
            match n.get(key) {
                Some(Value::String(s)) => states.extend(s.split('+').map(str::to_ascii_uppercase)),
                Some(Value::Array(a)) => states.extend(
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_ascii_uppercase),
                ),
                _ => {}
            }
        }
        match states.iter().find(|s| UNUSABLE.contains(&s.as_str())) {
            Some(s) => left_out.push(format!("{name} ({})", s.to_ascii_lowercase())),
            None => usable.push(name.to_owned()),
        }
    }
    let notes = if left_out.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "slurm: {} left out: no job starts there now",
            left_out.join(", ")
        )]
    };
    Ok((usable, notes))
}

/// `scontrol show topology` with `sinfo --json` as a topology.conf of the nodes that can run
/// a job: every switch line with its `Level` and `LinkSpeed` dropped, a switch that has child
/// switches keeping only those (as topology.conf writes it), switches left without nodes
/// dropped. Without a topology plugin (no `SwitchName=` line), one switch `slurm` holds every
/// usable node.
pub fn topology_conf(sinfo: &str, scontrol: &str) -> Result<(String, Vec<String>), Error> {
    let (usable, mut notes) = usable_nodes(sinfo)?;
    if usable.is_empty() {
        return Err(Error::Source(
            "slurm: `sinfo --json`: no node can run a job".to_owned(),
        ));
    }
    let keep_node: BTreeSet<&str> = usable.iter().map(String::as_str).collect();
    struct Switch {
        name: String,
        nodes: Vec<String>,
        switches: Vec<String>,
    }
    let mut switches = Vec::new();
    for (i, line) in scontrol.lines().enumerate() {
        let line = line.trim();
        if !line.to_ascii_lowercase().starts_with("switchname=") {
            continue;
        }
        let at = |m: String| {
            Error::Source(format!(
                "slurm: `scontrol show topology` line {}: {m}",
                i + 1
            ))
        };
        let mut sw = Switch {
            name: String::new(),
            nodes: Vec::new(),
            switches: Vec::new(),
        };
        for field in line.split_whitespace() {
            let (k, v) = field
                .split_once('=')
                .ok_or_else(|| at(format!("expected Key=Value, got `{field}`")))?;
            match k.to_ascii_lowercase().as_str() {
                "switchname" => sw.name = v.to_owned(),
                "nodes" => sw.nodes = formats::hostlist::expand(v).map_err(&at)?,
                "switches" => sw.switches = formats::hostlist::expand(v).map_err(&at)?,
                _ => {}
            }
        }
        switches.push(sw);
    }
    if switches.is_empty() {
        notes.push("slurm: `scontrol show topology` shows no switches (topology/none): one flat switch `slurm`".to_owned());
        let text = format!(
            "# read from sinfo --json; no topology plugin\nSwitchName=slurm Nodes={}\n",
            formats::hostlist::compress(&usable)
        );
        return Ok((text, notes));
    }
    // Leaves keep their usable nodes; a parent is kept while one of its children is.
    let mut kept: BTreeSet<String> = BTreeSet::new();
    for sw in switches.iter_mut().filter(|s| s.switches.is_empty()) {
        sw.nodes.retain(|n| keep_node.contains(n.as_str()));
        if !sw.nodes.is_empty() {
            kept.insert(sw.name.clone());
        }
    }
    // Parents after their children, as Slurm lists them: repeat until nothing changes.
    loop {
        let before = kept.len();
        for sw in switches.iter().filter(|s| !s.switches.is_empty()) {
            if sw.switches.iter().any(|c| kept.contains(c)) {
                kept.insert(sw.name.clone());
            }
        }
        if kept.len() == before {
            break;
        }
    }
    let placed: BTreeSet<&str> = switches
        .iter()
        .flat_map(|s| s.nodes.iter().map(String::as_str))
        .collect();
    let outside: Vec<&str> = usable
        .iter()
        .map(String::as_str)
        .filter(|n| !placed.contains(n))
        .collect();
    if !outside.is_empty() {
        notes.push(format!(
            "slurm: {} under no switch: left out",
            outside.join(", ")
        ));
    }
    let mut text = String::from("# read from scontrol show topology and sinfo --json\n");
    for sw in switches.iter().filter(|s| kept.contains(&s.name)) {
        if sw.switches.is_empty() {
            text.push_str(&format!(
                "SwitchName={} Nodes={}\n",
                sw.name,
                formats::hostlist::compress(&sw.nodes)
            ));
        } else {
            let children: Vec<&String> = sw.switches.iter().filter(|c| kept.contains(*c)).collect();
            text.push_str(&format!(
                "SwitchName={} Switches={}\n",
                sw.name,
                formats::hostlist::compress(&children)
            ));
        }
    }
    Ok((text, notes))
}

/// `squeue --json`'s running jobs as railyard's native state: one job per Slurm job
/// (`slurm-ID`, its partition as the queue, its priority), a pod per node with the job's GPUs
/// (see `job_gpus`). Jobs holding no GPU are a note.
pub fn native_state(squeue: &str) -> Result<(String, Vec<String>), Error> {
    let doc: Value = serde_json::from_str(squeue)
        .map_err(|e| Error::Source(format!("slurm: `squeue --json`: not JSON: {e}")))?;
    let jobs = doc.get("jobs").and_then(Value::as_array).ok_or_else(|| {
        Error::Source(
            "slurm: `squeue --json`: no `jobs` list (Slurm 22.05 or later has it)".to_owned(),
        )
    })?;
    let mut out = Vec::new();
    let mut no_gpu = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        let at = |m: &str| Error::Source(format!("slurm: `squeue --json`: jobs[{i}]: {m}"));
        let state = match j.get("job_state") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("+"),
            _ => return Err(at("no `job_state`")),
        };
        if !state.split('+').any(|s| s == "RUNNING") {
            continue;
        }
        let id = j
            .get("job_id")
            .and_then(Value::as_u64)
            .ok_or_else(|| at("no `job_id` number"))?;
        let nodes_expr = j
            .get("nodes")
            .and_then(Value::as_str)
            .ok_or_else(|| at("a running job without `nodes`"))?;
        let nodes = formats::hostlist::expand(nodes_expr)
            .map_err(|e| at(&format!("nodes `{nodes_expr}`: {e}")))?;
        let pods = match job_gpus(j, &nodes).map_err(|m| at(&m))? {
            Some(pods) => pods,
            None => {
                no_gpu.push(format!("{id}"));
                continue;
            }
        };
        let priority = match j.get("priority") {
            Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
            Some(Value::Object(o)) => o.get("number").and_then(Value::as_i64).unwrap_or(0),
            _ => 0,
        };
        let partition = j
            .get("partition")
            .and_then(Value::as_str)
            .unwrap_or("default");
        out.push(json!({
            "name": format!("slurm-{id}"),
            "queue": partition,
            "priority": priority.clamp(i64::from(i32::MIN), i64::from(i32::MAX)),
            "pods": pods,
        }));
    }
    let mut notes = Vec::new();
    if !no_gpu.is_empty() {
        notes.push(format!(
            "slurm: running job(s) {} hold no GPU: not counted",
            no_gpu.join(", ")
        ));
    }
    let text = serde_json::to_string_pretty(&json!({ "jobs": out }))
        .expect("JSON values serialise")
        + "\n";
    Ok((text, notes))
}

/// The nodes of a placement as the hostlist `sbatch --nodelist` takes: each node once, in
/// natural order (prefix, then number), compressed (`gpu[01-04]`).
pub fn nodelist(pods: &[formats::placement::PlacedPod]) -> String {
    let key = |n: &str| {
        let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, number) = n.split_at(n.len() - digits);
        (prefix.to_owned(), number.parse::<u64>().ok(), n.to_owned())
    };
    let names: BTreeSet<_> = pods.iter().map(|p| key(&p.node)).collect();
    let names: Vec<String> = names.into_iter().map(|(_, _, n)| n).collect();
    formats::hostlist::compress(&names)
}

/// The GPUs a running job holds, one pod per node: from `gres_detail` (one entry per node, in
/// the order of `nodes`, e.g. `gpu:8(IDX:0-7)` or `gpu:h100:2(IDX:0,3)`: the count and the GPU
/// indices), else `gres/gpu=N` of `tres_alloc_str` (the job's total, split evenly), else
/// `tres_per_node` (`gres:gpu:N`). `None`: the job holds no GPU.
fn job_gpus(job: &Value, nodes: &[String]) -> Result<Option<Vec<Value>>, String> {
    if nodes.is_empty() {
        return Ok(None);
    }
    let detail: Vec<&str> = job
        .get("gres_detail")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if detail.len() == nodes.len() {
        let mut pods = Vec::new();
        for (node, d) in nodes.iter().zip(&detail) {
            let (count, ids) = gpu_detail(d).map_err(|m| format!("gres_detail `{d}`: {m}"))?;
            if count > 0 {
                pods.push(json!({"node": node, "gpus": count, "gpu_ids": ids}));
            }
        }
        return Ok((!pods.is_empty()).then_some(pods));
    }
    let tres = job
        .get("tres_alloc_str")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut total = 0u64;
    for (k, v) in tres.split(',').filter_map(|kv| kv.split_once('=')) {
        if k == "gres/gpu" {
            total += v
                .parse::<u64>()
                .map_err(|_| format!("tres_alloc_str `{tres}`: gres/gpu is not a count"))?;
        }
    }
    let per_node = if total > 0 {
        total as f64 / nodes.len() as f64
    } else {
        let tpn = job
            .get("tres_per_node")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut n = 0u64;
        for part in tpn.split(',') {
            let part = part.trim_start_matches("gres:").trim_start_matches("gres/");
            if part == "gpu" {
                n += 1;
            } else if part.starts_with("gpu:") {
                let count = part.rsplit(':').next().unwrap_or_default();
                n += count
                    .parse::<u64>()
                    .map_err(|_| format!("tres_per_node `{tpn}`: no GPU count"))?;
            }
        }
        n as f64
    };
    if per_node == 0.0 {
        return Ok(None);
    }
    Ok(Some(
        nodes
            .iter()
            .map(|n| json!({"node": n, "gpus": per_node}))
            .collect(),
    ))
}

/// One node's entry of `gres_detail`: the GPUs it holds and their indices.
fn gpu_detail(detail: &str) -> Result<(u64, Vec<u32>), String> {
    // Split at the commas outside parentheses: `gpu:2(IDX:0,3),nic:1`.
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in detail.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&detail[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&detail[start..]);
    let (mut count, mut ids) = (0u64, Vec::new());
    let gpu = |p: &&str| *p == "gpu" || p.starts_with("gpu:") || p.starts_with("gpu(");
    for part in parts.into_iter().filter(gpu) {
        let (head, idx) = match part.split_once('(') {
            Some((h, rest)) => (h, rest.trim_end_matches(')')),
            None => (part, ""),
        };
        count += match head.rsplit_once(':') {
            Some((_, n)) => n
                .parse::<u64>()
                .map_err(|_| format!("`{head}`: no GPU count"))?,
            None => 1,
        };
        if let Some(list) = idx.strip_prefix("IDX:") {
            for r in list.split(',').filter(|r| !r.is_empty() && *r != "N/A") {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                let bad = || format!("IDX `{r}` is not a range of GPU indices");
                let (a, b): (u32, u32) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if b < a || b - a > 1024 {
                    return Err(bad());
                }
                ids.extend(a..=b);
            }
        }
    }
    if !ids.is_empty() && ids.len() as u64 != count {
        return Err(format!("{count} GPUs but {} indices", ids.len()));
    }
    Ok((count, ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sinfo --json`, `scontrol show topology` and `squeue --json` as Slurm 22.05.8 printed
    /// them in scripts/slurm-live-check.sh (cut to the fields railyard reads; states varied).
    const SINFO: &str = r#"{"nodes": [
        {"name": "n1", "state": "mixed", "state_flags": [], "gres": "gpu:8"},
        {"name": "n2", "state": "idle", "state_flags": ["DRAIN"], "gres": "gpu:8"},
        {"name": "n3", "state": "idle", "state_flags": [], "gres": "gpu:8"},
        {"name": "n4", "state": "down", "state_flags": ["NOT_RESPONDING"], "gres": "gpu:8"}]}"#;
    const TOPOLOGY: &str = "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-2]\nSwitchName=s2 Level=0 LinkSpeed=1 Nodes=n[3-4]\nSwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=s[1-2]\n";

    #[test]
    fn the_topology_keeps_the_nodes_that_can_run_a_job_under_their_switches() {
        let (text, notes) = topology_conf(SINFO, TOPOLOGY).unwrap();
        assert_eq!(
            text,
            "# read from scontrol show topology and sinfo --json\nSwitchName=s1 Nodes=n1\nSwitchName=s2 Nodes=n3\nSwitchName=top Switches=s[1-2]\n"
        );
        assert_eq!(
            notes,
            ["slurm: n2 (drain), n4 (down) left out: no job starts there now"]
        );
        assert_eq!(formats::slurm::parse_tree(&text).unwrap().len(), 3);
        // Without a topology plugin: one flat switch.
        let (flat, _) = topology_conf(SINFO, "").unwrap();
        assert!(flat.ends_with("SwitchName=slurm Nodes=n[1,3]\n"), "{flat}");
    }

    #[test]
    fn running_jobs_hold_the_gpus_slurm_gave_them() {
        let squeue = r#"{"jobs": [
          {"job_id": 7, "job_state": "RUNNING", "nodes": "n[1-2]", "partition": "all", "priority": 4294901759,
           "gres_detail": ["gpu:8(IDX:0-7)", "gpu:h100:2(IDX:0,3)"], "tres_alloc_str": "cpu=1,node=2,billing=1"},
          {"job_id": 8, "job_state": "RUNNING", "nodes": "n3", "partition": "all", "priority": 1,
           "tres_per_node": "gres:gpu:4", "tres_alloc_str": "cpu=1,node=1"},
          {"job_id": 9, "job_state": "RUNNING", "nodes": "n4", "partition": "all", "priority": 1,
           "tres_alloc_str": "cpu=1,node=1"},
          {"job_id": 10, "job_state": "PENDING", "nodes": "", "partition": "all", "priority": 1}]}"#;
        let (text, notes) = native_state(squeue).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let jobs = doc["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0]["name"], "slurm-7");
        assert_eq!(jobs[0]["priority"], i64::from(i32::MAX));
        assert_eq!(
            jobs[0]["pods"][1],
            json!({"node": "n2", "gpus": 2, "gpu_ids": [0, 3]})
        );
        assert_eq!(jobs[1]["pods"][0], json!({"node": "n3", "gpus": 4.0}));
        assert_eq!(notes, ["slurm: running job(s) 9 hold no GPU: not counted"]);
        let bad = r#"{"jobs": [{"job_id": 1, "job_state": "RUNNING", "nodes": "n1", "gres_detail": ["gpu:2(IDX:0-5)"]}]}"#;
        let e = native_state(bad).unwrap_err().to_string();
        assert!(
            e.contains("jobs[0]: gres_detail `gpu:2(IDX:0-5)`: 2 GPUs but 6 indices"),
            "{e}"
        );
    }

    #[test]
    fn the_node_list_is_what_sbatch_nodelist_takes() {
        let pod = |n: &str| formats::placement::PlacedPod {
            rank: 0,
            node: n.to_owned(),
            gpus: 8.0,
            gpu_ids: Vec::new(),
            gpu_memory_mib: None,
        };
        let pods: Vec<_> = ["n10", "n9", "n2", "n9", "n1"]
            .iter()
            .map(|n| pod(n))
            .collect();
        // Numbers of different widths are separate groups, as the hostlist reader takes them.
        assert_eq!(nodelist(&pods), "n[1-2,9],n10");
    }
}
