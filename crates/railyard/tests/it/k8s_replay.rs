//! `--cluster k8s:` against a replayed API server: a hand-written HTTP/1.1 responder on
//! loopback serves discovery and list responses in the API's documented shapes (list items
//! without `apiVersion`/`kind`, a `continue` token splitting the NodeList over two pages, a
//! `Status` for 403), built from the kubectl fixtures the file tests already use. No real API
//! server can run here; the replay stands in. The live answer must equal, byte for byte, the
//! answer from the files `--dump` wrote and the answer from the original fixtures.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::{fixture, railyard, temp_dir};

/// What the replayed server serves.
#[derive(Clone, Copy)]
struct Served {
    /// The version Kueue's group is served at (`None`: Kueue not installed).
    kueue: Option<&'static str>,
    /// Pods answer 403.
    pods_forbidden: bool,
}

/// A replayed API server on 127.0.0.1: its port and the request lines it saw. It accepts for
/// about two minutes and stops by itself (every test finishes far sooner).
struct Replay {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

fn json_fixture(rel: &str) -> Value {
    let text = std::fs::read_to_string(fixture(rel)).unwrap();
    if rel.ends_with(".yaml") {
        // The first document (the fixture may carry others after it).
        let first = serde_norway::Deserializer::from_str(&text).next().unwrap();
        serde::Deserialize::deserialize(first).unwrap()
    } else {
        serde_json::from_str(&text).unwrap()
    }
}

/// A List as the API server returns it: items without `apiVersion` and `kind`.
fn api_list(kind: &str, items: &[Value], cont: &str) -> Value {
    let items: Vec<Value> = items
        .iter()
        .map(|i| {
            let mut i = i.clone();
            let m = i.as_object_mut().unwrap();
            m.remove("apiVersion");
            m.remove("kind");
            i
        })
        .collect();
    json!({"kind": format!("{kind}List"), "apiVersion": "v1",
           "metadata": {"resourceVersion": "4711", "continue": cont}, "items": items})
}

fn items(rel: &str) -> Vec<Value> {
    json_fixture(rel)["items"].as_array().unwrap().clone()
}

/// The answer to GET `target`: status code and JSON body.
fn answer(served: Served, target: &str) -> (u16, Value) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let status = |code: u16, reason: &str, message: String| {
        (
            code,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                      "message": message, "reason": reason, "code": code}),
        )
    };
    let kueue = served.kueue;
    let kueue_root = kueue.map(|v| format!("/apis/kueue.x-k8s.io/{v}"));
    let nodes = items("live/nodes.json");
    match path {
        "/apis" => {
            let mut groups = vec![json!({"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                                         "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}})];
            if let Some(v) = kueue {
                let gv = format!("kueue.x-k8s.io/{v}");
                groups.push(json!({"name": "kueue.x-k8s.io", "versions": [{"groupVersion": gv, "version": v}],
                                   "preferredVersion": {"groupVersion": gv, "version": v}}));
            }
            (200, json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        p if Some(p) == kueue_root.as_deref() => {
            // Kueue without Cohorts served (an older release): a note, not an error.
            let resources: Vec<Value> = ["workloads", "clusterqueues", "localqueues", "resourceflavors", "topologies"]
                .iter()
                .map(|r| {
                    let namespaced = ["workloads", "localqueues"].contains(r);
                    json!({"name": r, "namespaced": namespaced, "kind": "", "verbs": ["get", "list"]})
                })
                .collect();
            (200, json!({"kind": "APIResourceList", "apiVersion": "v1",
                          "groupVersion": format!("kueue.x-k8s.io/{}", kueue.unwrap()), "resources": resources}))
        }
        "/api/v1/nodes" if query == "limit=500" => (200, api_list("Node", &nodes[..5], "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDcxMSwic3RhcnQiOiJraW5kLXdvcmtlcjUifQ==")),
        "/api/v1/nodes" if query == "limit=500&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDcxMSwic3RhcnQiOiJraW5kLXdvcmtlcjUifQ%3D%3D" => {
            (200, api_list("Node", &nodes[5..], ""))
        }
        "/api/v1/pods" if served.pods_forbidden => status(
            403,
            "Forbidden",
            "pods is forbidden: User \"system:serviceaccount:default:railyard\" cannot list resource \"pods\" in API group \"\" at the cluster scope".to_owned(),
        ),
        "/api/v1/pods" => (200, api_list("Pod", &items("live/pods.json"), "")),
        p if kueue_root.as_ref().is_some_and(|r| p == format!("{r}/workloads")) => {
            (200, api_list("Workload", &items("live/workloads.json"), ""))
        }
        p if kueue_root.as_ref().is_some_and(|r| p == format!("{r}/topologies")) => {
            (200, api_list("Topology", &[json_fixture("nodes/kueue-topology.yaml")], ""))
        }
        p if kueue_root.as_ref().is_some_and(|r| p.starts_with(r.as_str())) => (200, api_list("Object", &[], "")),
        _ => status(404, "NotFound", format!("the server could not find the requested resource ({target})")),
    }
}

fn serve_one(mut stream: TcpStream, served: Served, seen: &Mutex<Vec<String>>) {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
        }
        seen.lock().unwrap().push(request_line.trim().to_owned());
        let mut words = request_line.split_whitespace();
        let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let (code, body) = if method == "GET" {
            answer(served, target)
        } else {
            (
                405,
                json!({"kind": "Status", "code": 405, "message": "the replay only reads"}),
            )
        };
        let body = body.to_string();
        let reason = match code {
            200 => "OK",
            403 => "Forbidden",
            404 => "Not Found",
            _ => "Error",
        };
        let head = format!("HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
        if stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

impl Replay {
    fn start(served: Served) -> Replay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            // At most 24,000 polls 5 ms apart (about two minutes), then it stops by itself.
            for _ in 0..24_000 {
                match listener.accept() {
                    Ok((stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        let log = Arc::clone(&log);
                        std::thread::spawn(move || serve_one(stream, served, &log));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Replay { port, seen }
    }

    /// A kubeconfig whose current context `replay` points at this server.
    fn kubeconfig(&self, dir: &std::path::Path) -> String {
        kubeconfig_for(self.port, dir)
    }
}

fn kubeconfig_for(port: u16, dir: &std::path::Path) -> String {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: replay\nclusters:\n- name: replay\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: replay\n  context:\n    cluster: replay\n    user: reader\n    namespace: team-a\nusers:\n- name: reader\n  user: {{}}\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

const JOB: &str = "tests/fixtures/workloads/kueue-jobset.yaml";

#[test]
fn the_live_answer_equals_the_dumped_files_and_the_fixtures() {
    let replay = Replay::start(Served {
        kueue: Some("v1beta2"),
        pods_forbidden: false,
    });
    let dir = temp_dir("k8s-replay");
    let kubeconfig = replay.kubeconfig(&dir);
    let dump = dir.join("dump").display().to_string();
    let live = railyard(&[
        "place",
        "--cluster",
        "k8s:",
        "--kubeconfig",
        &kubeconfig,
        "-A",
        "--state",
        "k8s:",
        "--job",
        JOB,
        "--dump",
        &dump,
        "-o",
        "json",
    ]);
    assert_eq!(live.code, 0, "{}", live.stderr);
    // The NodeList came in two pages; nothing but GETs was sent.
    let seen = replay.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|l| l.contains("/api/v1/nodes?limit=500&continue=")),
        "{seen:?}"
    );
    assert!(seen.iter().all(|l| l.starts_with("GET ")), "{seen:?}");
    // KAI is absent and Kueue serves no Cohorts: notes, not errors.
    assert!(
        live.stderr
            .contains("KAI Scheduler is not installed (scheduling.run.ai not served)"),
        "{}",
        live.stderr
    );
    let dumped = crate::ok(&[
        "place",
        "--cluster",
        &format!("{dump}/nodes.json"),
        "--topology",
        &format!("{dump}/topology.json"),
        "--state",
        &format!("{dump}/pods.json"),
        "--state",
        &format!("{dump}/workloads.json"),
        "--job",
        JOB,
        "-o",
        "json",
    ]);
    assert_eq!(live.stdout, dumped);
    let fixtures = crate::ok(&[
        "place",
        "--cluster",
        "tests/fixtures/live/nodes.json",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "--state",
        "tests/fixtures/live/pods.json",
        "--state",
        "tests/fixtures/live/workloads.json",
        "--job",
        JOB,
        "-o",
        "json",
    ]);
    assert_eq!(live.stdout, fixtures);
    // The placement the file tests know: b2/r2 is the rack left (tests/it/live.rs).
    let placed: formats::placement::PlacementFile = serde_json::from_str(&live.stdout).unwrap();
    let mut nodes: Vec<&str> = placed.pods.iter().map(|p| p.node.as_str()).collect();
    nodes.dedup();
    assert_eq!(nodes, ["kind-worker7", "kind-worker8"]);
    // The dumped NodeList holds all eight nodes of both pages, each with its kind again.
    let list: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{dump}/nodes.json")).unwrap())
            .unwrap();
    assert_eq!(list["kind"], "NodeList");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 8);
    assert!(items
        .iter()
        .all(|i| i["kind"] == "Node" && i["apiVersion"] == "v1"));
    // The text answer too, and topo show.
    let text_live = crate::ok(&[
        "place",
        "--cluster",
        "k8s:replay",
        "--kubeconfig",
        &kubeconfig,
        "-A",
        "--state",
        "k8s:",
        "--job",
        JOB,
    ]);
    let text_files = crate::ok(&[
        "place",
        "--cluster",
        &format!("{dump}/nodes.json"),
        "--topology",
        &format!("{dump}/topology.json"),
        "--state",
        &format!("{dump}/pods.json"),
        "--state",
        &format!("{dump}/workloads.json"),
        "--job",
        JOB,
    ]);
    assert_eq!(text_live, text_files);
    let show_live = crate::ok(&[
        "topo",
        "show",
        "--cluster",
        "k8s:",
        "--kubeconfig",
        &kubeconfig,
    ]);
    let show_files = crate::ok(&[
        "topo",
        "show",
        "--cluster",
        &format!("{dump}/nodes.json"),
        "--topology",
        &format!("{dump}/topology.json"),
    ]);
    assert_eq!(show_live, show_files);
}

#[test]
fn the_namespace_flags_choose_the_pods_path() {
    let replay = Replay::start(Served {
        kueue: Some("v1beta2"),
        pods_forbidden: false,
    });
    let dir = temp_dir("k8s-replay-ns");
    let kubeconfig = replay.kubeconfig(&dir);
    // Without -A the context's namespace (team-a) is listed, which the replay does not serve.
    let run = railyard(&[
        "place",
        "--cluster",
        "k8s:",
        "--kubeconfig",
        &kubeconfig,
        "--state",
        "k8s:",
        "--job",
        JOB,
    ]);
    crate::assert_one_line_error(
        &run,
        "k8s context `replay`: pods: the server answered 404 NotFound",
    );
    let seen = replay.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|l| l.contains("/api/v1/namespaces/team-a/pods?limit=500")),
        "{seen:?}"
    );
    let run = railyard(&[
        "place",
        "--cluster",
        "k8s:",
        "--kubeconfig",
        &kubeconfig,
        "-n",
        "x",
        "-A",
        "--state",
        "k8s:",
        "--job",
        JOB,
    ]);
    crate::assert_one_line_error(&run, "-n/--namespace and -A/--all-namespaces: give one");
}

#[test]
fn a_forbidden_resource_is_named_with_the_context_and_spares_commands_that_do_not_need_it() {
    let replay = Replay::start(Served {
        kueue: None,
        pods_forbidden: true,
    });
    let dir = temp_dir("k8s-replay-403");
    let kubeconfig = replay.kubeconfig(&dir);
    let run = railyard(&[
        "place",
        "--cluster",
        "k8s:",
        "--kubeconfig",
        &kubeconfig,
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "-A",
        "--state",
        "k8s:",
        "--job",
        JOB,
    ]);
    crate::assert_one_line_error(
        &run,
        "k8s context `replay`: pods: Forbidden (403): pods is forbidden",
    );
    // topo show needs no pods; Kueue is absent, so the levels come from the labels (a note).
    let run = railyard(&[
        "topo",
        "show",
        "--cluster",
        "k8s:",
        "--kubeconfig",
        &kubeconfig,
        "--levels",
        "kubernetes.io/hostname",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("Kueue is not installed (kueue.x-k8s.io not served)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_kueue_version_railyard_does_not_read_is_an_error_naming_it() {
    let replay = Replay::start(Served {
        kueue: Some("v1alpha9"),
        pods_forbidden: false,
    });
    let dir = temp_dir("k8s-replay-version");
    let kubeconfig = replay.kubeconfig(&dir);
    let run = railyard(&[
        "topo",
        "show",
        "--cluster",
        "k8s:",
        "--kubeconfig",
        &kubeconfig,
    ]);
    crate::assert_one_line_error(&run, "k8s context `replay`: topologies.kueue.x-k8s.io: served at v1alpha9; railyard reads v1beta2, v1beta1, v1alpha1");
}

#[test]
fn an_unreachable_server_and_an_unknown_context_are_one_line_errors() {
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = temp_dir("k8s-replay-down");
    let kubeconfig = kubeconfig_for(port, &dir);
    let run = railyard(&[
        "topo",
        "show",
        "--cluster",
        "k8s:",
        "--kubeconfig",
        &kubeconfig,
    ]);
    crate::assert_one_line_error(&run, &format!("k8s context `replay`: API discovery (/apis): server http://127.0.0.1:{port}/ unreachable"));
    let run = railyard(&[
        "topo",
        "show",
        "--cluster",
        "k8s:staging",
        "--kubeconfig",
        &kubeconfig,
    ]);
    crate::assert_one_line_error(&run, "k8s context `staging`");
    let run = railyard(&[
        "topo",
        "show",
        "--cluster",
        "k8s:staging",
        "--context",
        "replay",
        "--kubeconfig",
        &kubeconfig,
    ]);
    crate::assert_one_line_error(
        &run,
        "names context `staging` and --context names `replay`; give one",
    );
}
