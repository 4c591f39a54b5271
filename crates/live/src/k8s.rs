//! The live Kubernetes source: the current (or named) context of a kubeconfig read through
//! kube-rs, discovery first so only the groups the cluster serves are asked for, every list
//! paginated (`limit` + `continue`), items given back their `apiVersion` and `kind` as kubectl
//! does, each resource kept as the `kubectl get … -o json` List railyard's readers take.

use std::collections::BTreeMap;

use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{json, Value};

use crate::{keep, Error, Input, Options, Read};

/// Items asked for per page.
const PAGE_LIMIT: u32 = 500;

/// Most pages read of one resource (500 items each), so a server that always answers with a
/// `continue` token cannot keep railyard reading forever.
const MAX_PAGES: usize = 10_000;

/// A resource railyard reads: its group ("" = core), kind, plural, the versions whose shape
/// railyard reads (preferred first), scope, the file it becomes, and the input it serves.
struct Resource {
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    versions: &'static [&'static str],
    namespaced: bool,
    file: &'static str,
    input: Input,
    what: &'static str,
}

const KUEUE: &str = "kueue.x-k8s.io";
const KAI_SCHEDULING: &str = "scheduling.run.ai";
const KAI_TOPOLOGY: &str = "kai.scheduler";

/// Every resource, in the order they are read and named.
const RESOURCES: &[Resource] = &[
    res(
        "",
        "Node",
        "nodes",
        &["v1"],
        false,
        "nodes.json",
        Input::Cluster,
        "Nodes",
    ),
    res(
        KUEUE,
        "Topology",
        "topologies",
        &["v1beta2", "v1beta1", "v1alpha1"],
        false,
        "kueue-topologies.json",
        Input::Cluster,
        "Kueue",
    ),
    res(
        KAI_TOPOLOGY,
        "Topology",
        "topologies",
        &["v1alpha1"],
        false,
        "kai-topologies.json",
        Input::Cluster,
        "KAI's topology plugin",
    ),
    res(
        "",
        "Pod",
        "pods",
        &["v1"],
        true,
        "pods.json",
        Input::State,
        "Pods",
    ),
    res(
        KUEUE,
        "Workload",
        "workloads",
        &["v1beta2", "v1beta1"],
        true,
        "workloads.json",
        Input::State,
        "Kueue",
    ),
    res(
        KAI_SCHEDULING,
        "PodGroup",
        "podgroups",
        &["v2alpha2"],
        true,
        "podgroups.json",
        Input::State,
        "KAI Scheduler",
    ),
    res(
        KUEUE,
        "ClusterQueue",
        "clusterqueues",
        &["v1beta2", "v1beta1"],
        false,
        "clusterqueues.json",
        Input::Queues,
        "Kueue",
    ),
    res(
        KUEUE,
        "Cohort",
        "cohorts",
        &["v1beta2", "v1alpha1"],
        false,
        "cohorts.json",
        Input::Queues,
        "Kueue",
    ),
    res(
        KUEUE,
        "LocalQueue",
        "localqueues",
        &["v1beta2", "v1beta1"],
        true,
        "localqueues.json",
        Input::Queues,
        "Kueue",
    ),
    res(
        KUEUE,
        "ResourceFlavor",
        "resourceflavors",
        &["v1beta2", "v1beta1"],
        false,
        "resourceflavors.json",
        Input::Flavors,
        "Kueue",
    ),
    res(
        KAI_SCHEDULING,
        "Queue",
        "queues",
        &["v2"],
        false,
        "queues.json",
        Input::Queues,
        "KAI Scheduler",
    ),
];

#[allow(clippy::too_many_arguments)] // a table row: every field is named at the table's head
const fn res(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    versions: &'static [&'static str],
    namespaced: bool,
    file: &'static str,
    input: Input,
    what: &'static str,
) -> Resource {
    Resource {
        group,
        kind,
        plural,
        versions,
        namespaced,
        file,
        input,
        what,
    }
}

/// Whether a resource serves `input`: ResourceFlavors serve `--queues` too (Kueue admission
/// reads them with the queues).
fn serves(r: &Resource, input: Input) -> bool {
    r.input == input || (input == Input::Queues && r.input == Input::Flavors)
}

/// Read `input` from the context `options` name.
pub fn read(input: Input, options: &Options) -> Result<Read, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Source(format!("k8s: cannot start the I/O runtime: {e}")))?;
    // kube's own log lines (e.g. a failed request, logged before it is returned) would print
    // as extra `error:` lines beside railyard's one: they are silenced while it reads.
    let quiet = tracing::subscriber::NoSubscriber::default();
    tracing::subscriber::with_default(quiet, || runtime.block_on(read_async(input, options)))
}

/// The context's client, its name and the namespace namespaced resources are listed in
/// (`None`: all namespaces).
struct Session {
    client: kube::Client,
    context: String,
    server: String,
    namespace: Option<String>,
}

impl Session {
    /// `k8s context `NAME``, the prefix of every error.
    fn at(&self) -> String {
        format!("k8s context `{}`", self.context)
    }

    /// GET `path`; errors name the context and `what` (the resource).
    async fn get(&self, path: &str, what: &str) -> Result<Value, Error> {
        let request = http::Request::get(path).body(Vec::new()).map_err(|e| {
            Error::Source(format!(
                "{}: {what}: bad request path `{path}`: {e}",
                self.at()
            ))
        })?;
        match self.client.request_text(request).await {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                Error::Source(format!("{}: {what}: the answer to GET {path} is not JSON: {e}", self.at()))
            }),
            Err(kube::Error::Api(r)) if r.code == 403 => Err(Error::Source(format!(
                "{}: {what}: Forbidden (403): {}; railyard only lists and reads, ask for `list` on it",
                self.at(),
                one_line(&r.message)
            ))),
            Err(kube::Error::Api(r)) => Err(Error::Source(format!(
                "{}: {what}: the server answered {} {}: {}",
                self.at(),
                r.code,
                r.reason,
                one_line(&r.message)
            ))),
            Err(e) => Err(Error::Source(format!(
                "{}: {what}: server {} unreachable: {}",
                self.at(),
                self.server,
                one_line(&e.to_string())
            ))),
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

async fn connect(options: &Options) -> Result<Session, Error> {
    let kubeconfig = match &options.kubeconfig {
        Some(p) => Kubeconfig::read_from(p).map_err(|e| {
            Error::Usage(format!(
                "--kubeconfig {}: {}",
                p.display(),
                one_line(&e.to_string())
            ))
        })?,
        None => Kubeconfig::read().map_err(|e| {
            Error::Usage(format!(
                "k8s: no kubeconfig ($KUBECONFIG or ~/.kube/config): {}",
                one_line(&e.to_string())
            ))
        })?,
    };
    let context = options
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or_else(|| {
            Error::Usage("k8s: the kubeconfig has no current-context; give --context".to_owned())
        })?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &KubeConfigOptions {
            context: Some(context.clone()),
            cluster: None,
            user: None,
        },
    )
    .await
    .map_err(|e| {
        Error::Usage(format!(
            "k8s context `{context}`: {}",
            one_line(&e.to_string())
        ))
    })?;
    let server = config.cluster_url.to_string();
    let default_namespace = config.default_namespace.clone();
    let client = kube::Client::try_from(config).map_err(|e| {
        Error::Source(format!(
            "k8s context `{context}`: no client: {}",
            one_line(&e.to_string())
        ))
    })?;
    let namespace = match (&options.namespace, options.all_namespaces) {
        (Some(_), true) => {
            return Err(Error::Usage(
                "-n/--namespace and -A/--all-namespaces: give one".to_owned(),
            ))
        }
        (Some(n), false) => Some(n.clone()),
        (None, true) => None,
        (None, false) => Some(default_namespace),
    };
    Ok(Session {
        client,
        context,
        server,
        namespace,
    })
}

async fn read_async(input: Input, options: &Options) -> Result<Read, Error> {
    let session = connect(options).await?;
    let prefix = format!("k8s:{}", session.context);
    let mut out = Read::default();
    // Discovery: the groups the cluster serves and, per group version asked, its resources.
    let groups = served_groups(&session).await?;
    let mut resources_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut topologies: Vec<Value> = Vec::new();
    for r in RESOURCES.iter().filter(|r| serves(r, input)) {
        let Some(version) =
            version_to_read(&session, r, &groups, &mut resources_of, &mut out.notes).await?
        else {
            continue;
        };
        let items = list(&session, r, &version).await?;
        if r.kind == "Topology" {
            topologies.extend(items.iter().cloned());
        }
        let api_version = if r.group.is_empty() {
            version.clone()
        } else {
            format!("{}/{version}", r.group)
        };
        let list_doc = json!({
            "apiVersion": "v1",
            "kind": format!("{}List", r.kind),
            "metadata": {"resourceVersion": ""},
            "items": items,
        });
        let text = serde_json::to_string_pretty(&list_doc).expect("JSON values serialise") + "\n";
        let is_empty = list_doc["items"].as_array().is_some_and(Vec::is_empty);
        // The queue readers refuse a file with no queue in it: an empty list is a note.
        if is_empty && matches!(r.input, Input::Queues | Input::Flavors) {
            out.notes
                .push(format!("{}: no {} ({api_version})", session.at(), r.plural));
            continue;
        }
        if r.kind == "Topology" {
            continue;
        }
        out.files
            .push(keep(&prefix, r.file, text, options.dump.as_deref())?);
    }
    if input == Input::Cluster {
        match topologies.len() {
            0 => {}
            1 => {
                let text = serde_json::to_string_pretty(&topologies[0]).expect("JSON values serialise") + "\n";
                out.topology = Some(keep(&prefix, "topology.json", text, options.dump.as_deref())?);
            }
            n => out.notes.push(format!(
                "{}: {n} Topology objects; the levels come from --topology FILE, --levels or the node labels",
                session.at()
            )),
        }
    }
    Ok(out)
}

/// The API groups the server serves, with their versions (`/apis`).
async fn served_groups(session: &Session) -> Result<BTreeMap<String, Vec<String>>, Error> {
    let doc = session.get("/apis", "API discovery (/apis)").await?;
    let mut out = BTreeMap::new();
    for g in doc
        .get("groups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = g.get("name").and_then(Value::as_str) else {
            continue;
        };
        let versions = g
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.get("version").and_then(Value::as_str).map(str::to_owned))
            .collect();
        out.insert(name.to_owned(), versions);
    }
    Ok(out)
}

/// The version of `r` to read: the first version railyard reads that the cluster serves and
/// that lists `r`. An absent group or kind is a note (`None`); a group served only at versions
/// railyard does not read is an error.
async fn version_to_read(
    session: &Session,
    r: &Resource,
    groups: &BTreeMap<String, Vec<String>>,
    resources_of: &mut BTreeMap<String, Vec<String>>,
    notes: &mut Vec<String>,
) -> Result<Option<String>, Error> {
    if r.group.is_empty() {
        return Ok(Some(r.versions[0].to_owned()));
    }
    let Some(served) = groups.get(r.group) else {
        notes.push(format!(
            "{}: {} is not installed ({} not served): no {} read",
            session.at(),
            r.what,
            r.group,
            r.plural
        ));
        return Ok(None);
    };
    let readable: Vec<&&str> = r
        .versions
        .iter()
        .filter(|v| served.iter().any(|s| s == **v))
        .collect();
    if readable.is_empty() {
        return Err(Error::Source(format!(
            "{}: {}.{}: served at {}; railyard reads {}",
            session.at(),
            r.plural,
            r.group,
            served.join(", "),
            r.versions.join(", ")
        )));
    }
    for v in readable {
        let gv = format!("{}/{v}", r.group);
        if !resources_of.contains_key(&gv) {
            let doc = session
                .get(
                    &format!("/apis/{gv}"),
                    &format!("API discovery (/apis/{gv})"),
                )
                .await?;
            let names = doc
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|x| x.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect();
            resources_of.insert(gv.clone(), names);
        }
        if resources_of[&gv].iter().any(|n| n == r.plural) {
            return Ok(Some((*v).to_owned()));
        }
    }
    notes.push(format!(
        "{}: {} serves no {} here: none read",
        session.at(),
        r.group,
        r.plural
    ));
    Ok(None)
}

/// Every item of `r` at `version`, page by page, each with its `apiVersion` and `kind`.
async fn list(session: &Session, r: &Resource, version: &str) -> Result<Vec<Value>, Error> {
    let api_version = if r.group.is_empty() {
        version.to_owned()
    } else {
        format!("{}/{version}", r.group)
    };
    let root = if r.group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{api_version}")
    };
    let path = match (&session.namespace, r.namespaced) {
        (Some(ns), true) => format!("{root}/namespaces/{ns}/{}", r.plural),
        _ => format!("{root}/{}", r.plural),
    };
    let what = if r.group.is_empty() {
        r.plural.to_owned()
    } else {
        format!("{}.{}", r.plural, r.group)
    };
    let mut items = Vec::new();
    let mut token = String::new();
    for _ in 0..MAX_PAGES {
        let mut url = format!("{path}?limit={PAGE_LIMIT}");
        if !token.is_empty() {
            url.push_str("&continue=");
            url.push_str(&encode(&token));
        }
        let page = session.get(&url, &what).await?;
        let Some(page_items) = page.get("items").and_then(Value::as_array) else {
            return Err(Error::Source(format!(
                "{}: {what}: the answer to GET {url} has no `items` list",
                session.at()
            )));
        };
        for item in page_items {
            let mut item = item.clone();
            if let Value::Object(m) = &mut item {
                m.insert("apiVersion".to_owned(), api_version.clone().into());
                m.insert("kind".to_owned(), r.kind.into());
            }
            items.push(item);
        }
        token = page
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if token.is_empty() {
            return Ok(items);
        }
    }
    Err(Error::Source(format!(
        "{}: {what}: still a `continue` token after {MAX_PAGES} pages",
        session.at()
    )))
}

/// Percent-encoding of a `continue` token for a query string (tokens are base64).
fn encode(token: &str) -> String {
    let mut out = String::new();
    for b in token.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
