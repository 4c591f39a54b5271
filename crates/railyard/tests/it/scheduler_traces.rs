//! Traces from Slurm (`sacct --parsable2`) and Kueue (`kubectl get workloads -A -o json`): the
//! samples in tests/fixtures/traces (written by scripts/scheduler-trace-samples.py in the exact
//! formats the tools print) read row by row, and simulated with the real waits beside.

use std::path::Path;

use formats::trace::{read_trace, TraceFormat};

use crate::{ok, temp_dir};

const SACCT: &str = "tests/fixtures/traces/sacct-sample.txt";
const KUEUE: &str = "tests/fixtures/traces/kueue-workloads-sample.json";

/// Seconds between two `YYYY-MM-DDTHH:MM:SS` times of the same day, by hand.
fn secs(a: &str, b: &str) -> f64 {
    let s = |t: &str| {
        let hms: Vec<f64> = t[11..19].split(':').map(|x| x.parse().unwrap()).collect();
        hms[0] * 3600.0 + hms[1] * 60.0 + hms[2]
    };
    s(b) - s(a)
}

#[test]
fn sacct_rows_become_finished_jobs_and_the_rest_is_accounted_for() {
    let trace = read_trace(Path::new(SACCT), TraceFormat::Auto, false).expect("sacct");
    assert_eq!(trace.format, Some(TraceFormat::Sacct));
    let text = std::fs::read_to_string(SACCT).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split('|').collect())
        .collect();
    // Every row is either a job or left out with its reason.
    assert_eq!(trace.jobs.len() + trace.not_run.len(), rows.len());
    // Left out: exactly the rows without an end (Start None or Unknown, End Unknown).
    let unfinished: Vec<&str> = rows
        .iter()
        .filter(|r| r[7] == "None" || r[8] == "Unknown")
        .map(|r| r[0])
        .collect();
    assert_eq!(trace.not_run.len(), unfinished.len());
    for ((_, why), id) in trace.not_run.iter().zip(&unfinished) {
        assert!(why.starts_with(id), "{why} vs {id}");
    }
    // The first row, by hand: 1 GPU (gres/gpu=1 beside the typed gres/gpu:a100=1), account
    // `nlp` as the queue, waited 09:59:58 → 10:21:25.
    let j = &trace.jobs[0];
    assert_eq!(
        (j.name.as_str(), j.gpus, j.queue.as_str()),
        ("41000", 1, "nlp")
    );
    assert_eq!(
        trace.observed_wait_s[0],
        Some(secs("2017-10-01T09:59:58", "2017-10-01T10:21:25"))
    );
    assert_eq!(j.line, 2);
    // GPUs: the untyped gres/gpu count of each kept row.
    for j in &trace.jobs {
        let row = &rows[(j.line - 2) as usize];
        let g: u32 = row[4]
            .split(',')
            .find_map(|kv| kv.strip_prefix("gres/gpu="))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(j.gpus, g, "{}", row[0]);
    }
    assert_eq!(trace.observed_wait_s.len(), trace.jobs.len());
}

#[test]
fn kueue_workloads_become_jobs_with_admission_waits_and_topology() {
    let trace = read_trace(Path::new(KUEUE), TraceFormat::Auto, false).expect("workloads");
    assert_eq!(trace.format, Some(TraceFormat::KueueWorkloads));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(KUEUE).unwrap()).unwrap();
    let items = doc["items"].as_array().unwrap();
    let finished = |w: &serde_json::Value| {
        w["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Finished" && c["status"] == "True")
    };
    let n_finished = items.iter().filter(|w| finished(w)).count();
    assert_eq!(trace.jobs.len(), n_finished);
    assert_eq!(trace.jobs.len() + trace.not_run.len(), items.len());
    for j in &trace.jobs {
        let w = &items[(j.line - 1) as usize];
        let ps = &w["spec"]["podSets"][0];
        let per_pod: u32 = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
            ["nvidia.com/gpu"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(j.gpus, ps["count"].as_u64().unwrap() as u32 * per_pod);
        assert_eq!(j.queue, w["spec"]["queueName"].as_str().unwrap());
        assert_eq!(j.priority as i64, w["spec"]["priority"].as_i64().unwrap());
        let multi = ps["count"].as_u64().unwrap() > 1;
        assert_eq!(
            j.topology,
            if multi {
                sim::TopologyAsk::Preferred("cloud.provider.com/topology-rack".into())
            } else {
                sim::TopologyAsk::None
            }
        );
    }
    // Waits are admission − creation.
    let w0 = &items[0];
    let created = w0["metadata"]["creationTimestamp"].as_str().unwrap();
    let admitted = w0["status"]["conditions"][1]["lastTransitionTime"]
        .as_str()
        .unwrap();
    assert_eq!(trace.observed_wait_s[0], Some(secs(created, admitted)));
}

/// `simulate` on a Slurm trace prints the trace's own waits beside the simulated ones (text,
/// JSON and the report's wait CDF).
#[test]
fn simulate_shows_the_real_waits_beside_the_simulated_ones() {
    let out = ok(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SACCT,
        "-q",
    ]);
    assert!(out.contains("left out"), "{out}");
    assert!(out.contains("the trace's own scheduler: avg wait"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "simulate",
        "--cluster",
        "tests/fixtures/live/nodes.json",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "-q",
        "--trace",
        KUEUE,
        "--output",
        "json",
    ]))
    .unwrap();
    assert_eq!(json["observed_wait"]["jobs"], json["jobs"]);
    assert!(json["not_run"].as_u64().unwrap() > 0);
    let dir = temp_dir("scheduler-traces");
    let report = dir.join("r.html");
    ok(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SACCT,
        "--report",
        report.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(report).unwrap();
    assert!(html.contains("observed (the trace"), "summary row");
    // The observed waits are a series of the wait chart (n said once when every series has it).
    assert!(
        html.contains(">observed<") || html.contains(">observed (n = "),
        "observed series"
    );
}
