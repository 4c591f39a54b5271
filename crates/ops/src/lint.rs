//! `railyard lint FILE…`: check Kubernetes manifests for the RDMA misconfigurations that make
//! multi-node training fail or crawl. One line per finding: `FILE: document N: PATH: LEVEL:
//! MESSAGE`; exit 1 when any finding is an error.
//!
//! Each document goes to the checker for its `kind` ([`check_document`], one match arm per
//! kind); checks that need several documents (pods against the networks they attach, Kueue TAS
//! levels against a Kueue Topology, jobs as `place` reads them, queue trees, kubectl Lists of
//! queues) run after ([`check_across`]). Checkers are pure functions of parsed documents. The
//! Kueue TAS rules, the job checks and the queue checks are not lint's own: they call the
//! functions `place` and `queues validate` use ([`jobs::kueue_topology`],
//! [`jobs::resolve_levels`], [`jobs::JobDoc::check_requests`], [`crate::queues::findings`]).

use std::collections::BTreeMap;

use report::fmt::count_of;
use serde::Serialize;
use serde_json::Value;

use formats::k8s::read_topology;
use formats::{jobs, workloads};

pub use crate::Severity;

mod jobs_and_queues;

/// A finding inside one document, before the file and document are known.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// Severity.
    pub severity: Severity,
    /// Dotted path inside the document, e.g. `spec.ofedDriver.version`.
    pub path: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl Problem {
    fn new(severity: Severity, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            severity,
            path: path.into(),
            message: message.into(),
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LintFinding {
    /// The file as given.
    pub file: String,
    /// Document number in the file, from 1.
    pub document: usize,
    /// Dotted path inside the document.
    pub path: String,
    /// info, warning or error.
    pub severity: Severity,
    /// What is wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for LintFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: document {}: {}: {}: {}",
            self.file,
            self.document,
            self.path,
            self.severity.word(),
            self.message
        )
    }
}

/// The last line of lint's text: what was read and what was found, e.g. `3 documents in 1
/// file: 1 error, 2 warnings` (infos are not counted), or `…: no findings`.
pub fn summary(documents: usize, files: usize, findings: &[LintFinding]) -> String {
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let found = if findings.is_empty() {
        "no findings".to_owned()
    } else {
        format!(
            "{}, {}",
            count_of(count(Severity::Error), "error"),
            count_of(count(Severity::Warning), "warning")
        )
    };
    format!(
        "{} in {}: {found}\n",
        count_of(documents, "document"),
        count_of(files, "file")
    )
}

/// A parsed document and where it came from.
#[derive(Clone, Debug)]
pub struct Document {
    /// The file as given.
    pub file: String,
    /// Number in the file, from 1.
    pub index: usize,
    /// The document.
    pub value: Value,
}

/// Lint parsed documents: per-document checks in input order, then checks across documents.
pub fn lint_documents(docs: &[Document]) -> Vec<LintFinding> {
    let mut out = Vec::new();
    let mut push = |d: &Document, problems: Vec<Problem>| {
        for p in problems {
            out.push(LintFinding {
                file: d.file.clone(),
                document: d.index,
                path: p.path,
                severity: p.severity,
                message: p.message,
            });
        }
    };
    for d in docs {
        push(d, check_document(&d.value));
    }
    for (i, problems) in check_across(docs) {
        push(&docs[i], problems);
    }
    out
}

/// The checks for one document, chosen by its `kind`. Add a checker with one arm here.
pub fn check_document(doc: &Value) -> Vec<Problem> {
    match doc.get("kind").and_then(Value::as_str) {
        Some("NicClusterPolicy") => check_nic_cluster_policy(doc),
        Some("NetworkAttachmentDefinition") => check_network_attachment(doc),
        Some(_) if jobs::is_job_doc(doc) => check_workload(doc),
        Some(_) => Vec::new(),
        // Not a Kubernetes object at all (kubectl would refuse it): say so rather than pass it.
        None => vec![Problem {
            path: "kind".to_owned(),
            severity: Severity::Error,
            message: "missing; expected a Kubernetes object (apiVersion, kind, metadata)"
                .to_owned(),
        }],
    }
}

// ---------------------------------------------------------------------------------------------
// NVIDIA Network Operator NicClusterPolicy

/// The tag scheme the Network Operator uses for the sub-components it builds (since 24.x):
/// every such component of release X.Y.Z is tagged `network-operator-vX.Y.Z`.
const RELEASE_TAG_PREFIX: &str = "network-operator-v";

/// A sub-component of a NicClusterPolicy: an object with an `image`.
struct Component<'a> {
    path: String,
    value: &'a serde_json::Map<String, Value>,
}

impl Component<'_> {
    fn str_field(&self, key: &str) -> Option<&str> {
        self.value.get(key).and_then(Value::as_str)
    }

    fn pull_secrets(&self) -> Vec<String> {
        self.value
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| {
                        s.as_str()
                            .or_else(|| s.get("name").and_then(Value::as_str))
                            .map(str::to_owned)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn find_components<'a>(v: &'a Value, path: &str, depth: usize, out: &mut Vec<Component<'a>>) {
    let Some(map) = v.as_object() else { return };
    if map.get("image").is_some_and(Value::is_string) {
        out.push(Component {
            path: path.to_owned(),
            value: map,
        });
        return;
    }
    if depth == 0 {
        return;
    }
    for (k, child) in map {
        find_components(child, &format!("{path}.{k}"), depth - 1, out);
    }
}

/// `network-operator-v25.4.0` → (25, 4, 0).
fn release_of(version: &str) -> Option<(u32, u32, u32)> {
    let rest = version.strip_prefix(RELEASE_TAG_PREFIX)?;
    let mut parts = rest.split(['.', '-']).map(|p| p.parse::<u32>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// The most common value (ties: the greatest), with its count.
fn majority<'a>(values: impl Iterator<Item = &'a str>) -> Option<(&'a str, usize)> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(b.0)))
}

fn check_nic_cluster_policy(doc: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    let Some(spec) = doc.get("spec").filter(|s| s.is_object()) else {
        out.push(Problem::new(
            Severity::Error,
            "spec",
            "expected an object with the sub-components to deploy",
        ));
        return out;
    };
    let mut components = Vec::new();
    find_components(spec, "spec", 3, &mut components);
    let mut consistency_problems = false;

    // Fields the operator reads as strings: a YAML number (`version: 25.04`) is not one, and
    // loses digits on the way (25.04 is 25.4).
    for c in &components {
        for key in ["version", "repository", "image"] {
            match c.value.get(key) {
                Some(v) if !v.is_string() => out.push(Problem::new(
                    Severity::Error,
                    format!("{}.{key}", c.path),
                    format!(
                        "{v} is not a string; the Network Operator expects one: quote it (\"{v}\")"
                    ),
                )),
                _ => {}
            }
        }
    }

    // Versions: release-tagged sub-components must all be on one release.
    let tagged: Vec<(&Component<'_>, &str)> = components
        .iter()
        .filter_map(|c| {
            c.str_field("version")
                .filter(|v| v.starts_with(RELEASE_TAG_PREFIX))
                .map(|v| (c, v))
        })
        .collect();
    let release = majority(tagged.iter().map(|(_, v)| *v));
    if let Some((reference, count)) = release {
        for (c, v) in &tagged {
            if *v == reference {
                continue;
            }
            let relation = match (release_of(v), release_of(reference)) {
                (Some(a), Some(b)) if a < b => "older than",
                (Some(a), Some(b)) if a > b => "newer than",
                _ => "different from",
            };
            out.push(Problem::new(
                Severity::Error,
                format!("{}.version", c.path),
                format!(
                    "{v} is {relation} {reference}, used by {count} other sub-component{}; a \
                     Network Operator release is tested only with its own component versions: \
                     set {reference}",
                    if count == 1 { "" } else { "s" }
                ),
            ));
            consistency_problems = true;
        }
        // The DOCA/OFED driver has its own scheme, `[docaA.B.C-]YY.MM-…`: its YY.MM should be
        // the release's.
        if let Some((major, minor, _)) = release_of(reference) {
            for c in components.iter().filter(|c| c.path == "spec.ofedDriver") {
                let Some(v) = c.str_field("version") else {
                    continue;
                };
                if let Some((yy, mm)) = driver_year_month(v) {
                    if (yy, mm) != (major, minor) {
                        out.push(Problem::new(
                            Severity::Warning,
                            format!("{}.version", c.path),
                            format!(
                                "driver {v} is from the {yy}.{mm:02} line while the other \
                                 sub-components are on {reference}; use the driver version \
                                 that release lists"
                            ),
                        ));
                        consistency_problems = true;
                    }
                }
            }
        }
    }

    // Repositories: one registry path for everything, unless there is a reason.
    if let Some((reference, count)) =
        majority(components.iter().filter_map(|c| c.str_field("repository")))
    {
        if count >= 2 {
            for c in &components {
                match c.str_field("repository") {
                    Some(r) if r != reference => {
                        out.push(Problem::new(
                            Severity::Warning,
                            format!("{}.repository", c.path),
                            format!(
                                "{r} differs from {reference}, used by {count} other \
                                 sub-components; mixed registries usually mean a sub-component \
                                 left behind by an upgrade or a mirror that lacks it"
                            ),
                        ));
                        consistency_problems = true;
                    }
                    _ => {}
                }
            }
        }
    }

    // Pull secrets: a component without them next to components with them.
    let with_secrets: Vec<&Component<'_>> = components
        .iter()
        .filter(|c| !c.pull_secrets().is_empty())
        .collect();
    if !with_secrets.is_empty() {
        for c in components.iter().filter(|c| c.pull_secrets().is_empty()) {
            let repo = c.str_field("repository");
            let same_repo = with_secrets
                .iter()
                .find(|w| repo.is_some() && w.str_field("repository") == repo);
            let (severity, message) = match same_repo {
                Some(w) => (
                    Severity::Error,
                    format!(
                        "missing, while {} pulls from the same repository {} with \
                         imagePullSecrets [{}]: this image will fail with ImagePullBackOff",
                        w.path,
                        repo.unwrap_or_default(),
                        w.pull_secrets().join(", ")
                    ),
                ),
                None => (
                    Severity::Warning,
                    format!(
                        "missing, while {} sub-component{} set{} imagePullSecrets; fine only if \
                         {} is public",
                        with_secrets.len(),
                        if with_secrets.len() == 1 { "" } else { "s" },
                        if with_secrets.len() == 1 { "s" } else { "" },
                        repo.unwrap_or("its repository")
                    ),
                ),
            };
            out.push(Problem::new(
                severity,
                format!("{}.imagePullSecrets", c.path),
                message,
            ));
            consistency_problems = true;
        }
    }

    if consistency_problems {
        out.push(Problem::new(
            Severity::Info,
            "spec",
            "keep repository, version and imagePullSecrets in one place: generate the policy \
             from the Network Operator Helm chart of one release (its values set them for every \
             sub-component together) rather than editing sub-components one by one",
        ));
    }
    out
}

/// `doca3.1.0-25.07-0.9.7.0-0` or `24.10-0.7.0.0-0` → (25, 7) / (24, 10).
fn driver_year_month(version: &str) -> Option<(u32, u32)> {
    version.split('-').find_map(|part| {
        let (yy, mm) = part.split_once('.')?;
        if yy.len() == 2 && mm.len() == 2 {
            Some((yy.parse().ok()?, mm.parse().ok()?))
        } else {
            None
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Multus NetworkAttachmentDefinition

/// The annotation that ties a network to a device-plugin resource.
pub const RESOURCE_NAME_ANNOTATION: &str = "k8s.v1.cni.cncf.io/resourceName";

/// The pod annotation listing the networks to attach.
pub const NETWORKS_ANNOTATION: &str = "k8s.v1.cni.cncf.io/networks";

/// The RDMA shared device plugin's default resource prefix; other prefixes are taken to be
/// per-device resources (SR-IOV VFs, host devices).
const SHARED_RDMA_PREFIX: &str = "rdma/";

fn check_network_attachment(doc: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    let resource = doc
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(RESOURCE_NAME_ANNOTATION))
        .and_then(Value::as_str);
    let Some(config_text) = doc.pointer("/spec/config") else {
        out.push(Problem::new(
            Severity::Error,
            "spec.config",
            "missing: expected the CNI configuration as a JSON string",
        ));
        return out;
    };
    let Some(config_text) = config_text.as_str() else {
        out.push(Problem::new(
            Severity::Error,
            "spec.config",
            "expected a JSON string (write it as a YAML block scalar `config: |`)",
        ));
        return out;
    };
    let config: Value = match serde_json::from_str(config_text) {
        Ok(v) => v,
        Err(e) => {
            out.push(Problem::new(
                Severity::Error,
                "spec.config",
                format!("invalid JSON: {e}"),
            ));
            return out;
        }
    };
    // A conflist (`plugins`) or a single plugin (`type`), as libcni reads them.
    let plugins: Vec<(String, &Value)> = match config.get("plugins") {
        Some(Value::Array(list)) if !list.is_empty() => list
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("spec.config.plugins[{i}]"), p))
            .collect(),
        Some(p) => {
            out.push(Problem::new(
                Severity::Error,
                "spec.config.plugins",
                match p {
                    Value::Array(_) => {
                        "an empty list; a CNI conflist needs at least one plugin".to_owned()
                    }
                    _ => format!(
                        "{}: expected the list of the conflist's plugins",
                        formats::excerpt(&p.to_string())
                    ),
                },
            ));
            return out;
        }
        None if config.get("type").is_none() => {
            out.push(Problem::new(
                Severity::Error,
                "spec.config",
                "neither `plugins` (a CNI conflist) nor `type` (one CNI plugin): the pod's network \
                 would get no plugin",
            ));
            return out;
        }
        None => vec![("spec.config".to_owned(), &config)],
    };
    for (path, plugin) in plugins {
        check_cni_plugin(&path, plugin, resource, &mut out);
    }
    out
}

fn non_empty<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| match x {
        Value::String(s) => !s.trim().is_empty(),
        Value::Null => false,
        Value::Object(m) => !m.is_empty(),
        _ => true,
    })
}

fn check_cni_plugin(path: &str, plugin: &Value, resource: Option<&str>, out: &mut Vec<Problem>) {
    let Some(kind) = plugin.get("type").and_then(Value::as_str) else {
        out.push(Problem::new(
            Severity::Error,
            format!("{path}.type"),
            "missing: expected the CNI plugin name",
        ));
        return;
    };
    if !matches!(kind, "macvlan" | "host-device" | "sriov" | "ipoib") {
        return; // not an RDMA attachment railyard knows
    }
    let annotation = format!("metadata.annotations[\"{RESOURCE_NAME_ANNOTATION}\"]");

    // The parent interface.
    match kind {
        "macvlan" | "ipoib" if non_empty(plugin, "master").is_none() => {
            let (severity, why) = if kind == "ipoib" {
                (
                    Severity::Error,
                    "the ipoib plugin needs the IPoIB parent interface",
                )
            } else {
                (
                    Severity::Warning,
                    "macvlan then uses the default-route interface, which is usually not the \
                     RDMA NIC",
                )
            };
            out.push(Problem::new(
                severity,
                format!("{path}.master"),
                format!("missing: {why}; set the RDMA NIC's netdev (e.g. ens1f0np0 / ib0)"),
            ));
        }
        "host-device"
            if ["device", "hwaddr", "kernelpath", "pciBusID"]
                .iter()
                .all(|k| non_empty(plugin, k).is_none())
                && resource.is_none() =>
        {
            out.push(Problem::new(
                Severity::Error,
                path.to_owned(),
                format!(
                    "host-device names no device (device, hwaddr, kernelpath or pciBusID) and \
                     the network has no {RESOURCE_NAME_ANNOTATION} annotation to get one from \
                     a device plugin"
                ),
            ));
        }
        _ => {}
    }

    // IPAM: RoCE GIDs and rdma_cm address resolution need an IP address on the interface.
    let ipam_ok = plugin
        .get("ipam")
        .and_then(|i| i.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    if !ipam_ok {
        out.push(Problem::new(
            Severity::Error,
            format!("{path}.ipam"),
            "no IPAM type: the interface gets no IP address, so RoCE has no IP-based GID and \
             rdma_cm cannot resolve peers; set ipam (e.g. {\"type\": \"whereabouts\", …} or \
             nv-ipam)",
        ));
    }

    // The device-plugin resource the pods get must match the plugin.
    match (kind, resource) {
        ("sriov", None) => out.push(Problem::new(
            Severity::Error,
            annotation,
            "missing: the sriov plugin moves a VF allocated by the SR-IOV device plugin into the \
             pod; without the resource the pod gets no VF and the attachment fails",
        )),
        ("sriov", Some(r)) if r.starts_with(SHARED_RDMA_PREFIX) => out.push(Problem::new(
            Severity::Error,
            annotation,
            format!(
                "{r} is an RDMA shared device plugin resource, which hands out no VF; the sriov \
                 plugin needs an SR-IOV device plugin resource (e.g. nvidia.com/sriov_rdma)"
            ),
        )),
        ("macvlan" | "ipoib", None) => out.push(Problem::new(
            Severity::Warning,
            annotation,
            format!(
                "missing: pods on this network get the {kind} interface but no RDMA device \
                 unless they also request the RDMA shared device plugin resource (e.g. \
                 rdma/rdma_shared_device_a); set the annotation"
            ),
        )),
        ("macvlan" | "ipoib", Some(r)) if !r.starts_with(SHARED_RDMA_PREFIX) => {
            out.push(Problem::new(
                Severity::Warning,
                annotation,
                format!(
                    "{r} does not look like an RDMA shared device plugin resource ({SHARED_RDMA_PREFIX}…); \
                     {kind} shares the parent NIC, while per-device resources (SR-IOV VFs) go \
                     with the sriov or host-device plugin"
                ),
            ))
        }
        ("host-device", Some(r)) if r.starts_with(SHARED_RDMA_PREFIX) => out.push(Problem::new(
            Severity::Warning,
            annotation,
            format!(
                "{r} is an RDMA shared device plugin resource, which allocates no netdev; \
                 host-device needs a device from the SR-IOV (or host) device plugin"
            ),
        )),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Kueue TAS annotations on batch/v1 Jobs and JobSets

/// Every workload kind railyard reads (`formats::workloads`): its API version, its markings
/// (Kueue or KAI, not both), its pod sets, the Kueue TAS annotations of each pod template with
/// the rules `place` applies ([`jobs::kueue_topology`]), and, as warnings, every Kueue label,
/// annotation or pod-spec field Kueue acts on and railyard does not ([`jobs::kueue_unread`]).
fn check_workload(doc: &Value) -> Vec<Problem> {
    let error = |p: jobs::FieldProblem| Problem::new(Severity::Error, p.field, p.message);
    let kind = match workloads::kind_of(doc) {
        Ok(Some(k)) => k,
        Ok(None) => return Vec::new(),
        Err(m) => return vec![Problem::new(Severity::Error, "apiVersion", m)],
    };
    let dialect = match jobs::dialect_of(doc) {
        Ok(d) => d,
        Err(m) => return vec![Problem::new(Severity::Error, "metadata.labels", m)],
    };
    let sets = match workloads::pod_sets(doc, kind) {
        Ok(s) => s,
        Err(p) => return vec![error(p)],
    };
    let mut out = Vec::new();
    if dialect != Some(jobs::Dialect::Kai) {
        for set in &sets {
            let (_, problems) = jobs::set_topology(set);
            out.extend(problems.into_iter().map(error));
        }
        out.extend(
            jobs::kueue_unread(doc, &sets)
                .into_iter()
                .map(|p| Problem::new(Severity::Warning, p.field, p.message)),
        );
    }
    out
}

/// The levels of the Kueue Topology objects among the documents: (name, labels top first).
fn kueue_topologies(docs: &[Document]) -> Vec<(String, Vec<String>)> {
    docs.iter()
        .filter(|d| {
            d.value.get("kind").and_then(Value::as_str) == Some("Topology")
                && d.value
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|a| a.starts_with("kueue.x-k8s.io/"))
        })
        .filter_map(|d| read_topology(&d.file, std::slice::from_ref(&d.value)).ok())
        .map(|t| (t.name, t.levels))
        .collect()
}

/// With Kueue Topologies among the linted files, the level rules of [`jobs::resolve_levels`]
/// (the ones `place` applies against a cluster): every level named is a level of the Topology,
/// preferred at or below required, the slice level at or below the main one. A pod set is
/// checked against the Topology holding most of the levels it names (the first on a tie), once
/// its annotations pass [`check_workload`].
fn check_kueue_levels(docs: &[Document]) -> Vec<(usize, Vec<Problem>)> {
    let topologies = kueue_topologies(docs);
    let mut out = Vec::new();
    if topologies.is_empty() {
        return out;
    }
    for (i, d) in docs.iter().enumerate() {
        let Ok(Some(kind)) = workloads::kind_of(&d.value) else {
            continue;
        };
        if jobs::dialect_of(&d.value) == Ok(Some(jobs::Dialect::Kai)) {
            continue;
        }
        let Ok(sets) = workloads::pod_sets(&d.value, kind) else {
            continue; // reported by `check_workload`
        };
        let mut problems = Vec::new();
        for set in &sets {
            let count = &set.count;
            let (topology, annotation_problems) = jobs::set_topology(set);
            if !annotation_problems.is_empty() {
                continue; // reported by `check_workload`; one defect at a time
            }
            let named: Vec<&str> = topology
                .required
                .iter()
                .chain(&topology.preferred)
                .chain(topology.slices.iter().map(|(l, _)| l))
                .map(|l| l.label.as_str())
                .collect();
            if named.is_empty() {
                continue;
            }
            let mut best: Option<(&(String, Vec<String>), usize)> = None;
            for t in &topologies {
                let held = named.iter().filter(|l| t.1.iter().any(|x| x == *l)).count();
                if best.is_none_or(|(_, b)| held > b) {
                    best = Some((t, held));
                }
            }
            let Some(((name, levels), _)) = best else {
                continue;
            };
            let levels: Vec<&str> = levels.iter().map(String::as_str).collect();
            if let Err(p) =
                jobs::resolve_levels(&topology, *count, &levels, &format!("Topology {name}"))
            {
                problems.push(Problem::new(Severity::Error, p.field, p.message));
            }
        }
        if !problems.is_empty() {
            out.push((i, problems));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Across documents: pods against the networks they attach

/// Pod specs in a document with their paths and annotations: a Pod, a workload with
/// `spec.template` (Deployment, Job, StatefulSet, DaemonSet, ReplicaSet), or a JobSet.
fn pod_templates(doc: &Value) -> Vec<(String, &Value, Option<&Value>)> {
    let mut out = Vec::new();
    match doc.get("kind").and_then(Value::as_str) {
        Some("Pod") => {
            if let Some(spec) = doc.get("spec") {
                out.push((
                    "spec".to_owned(),
                    spec,
                    doc.pointer("/metadata/annotations"),
                ));
            }
        }
        Some("JobSet") => {
            for (i, rj) in doc
                .pointer("/spec/replicatedJobs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                if let Some(t) = rj.pointer("/template/spec/template") {
                    if let Some(spec) = t.get("spec") {
                        out.push((
                            format!("spec.replicatedJobs[{i}].template.spec.template.spec"),
                            spec,
                            t.pointer("/metadata/annotations"),
                        ));
                    }
                }
            }
        }
        Some(_) => {
            if let Some(t) = doc.pointer("/spec/template") {
                if let Some(spec) = t.get("spec") {
                    out.push((
                        "spec.template.spec".to_owned(),
                        spec,
                        t.pointer("/metadata/annotations"),
                    ));
                }
            }
        }
        None => {}
    }
    out
}

/// Network names in a `k8s.v1.cni.cncf.io/networks` annotation: `a, ns/b@eth1` or a JSON list
/// of `{"name": …, "namespace": …}`. The namespace is dropped (railyard matches by name).
fn network_names(annotation: &str) -> Vec<String> {
    let trimmed = annotation.trim();
    if trimmed.starts_with('[') {
        return serde_json::from_str::<Vec<Value>>(trimmed)
            .unwrap_or_default()
            .iter()
            .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect();
    }
    trimmed
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let s = s.split('@').next().unwrap_or(s);
            s.rsplit('/').next().unwrap_or(s).to_owned()
        })
        .collect()
}

/// Checks that need several documents: pods against the networks they attach, jobs naming a
/// queue as `place` reads them, Kueue TAS levels against the Kueue Topologies, and queue trees
/// (with the jobs naming their queues). Returns
/// (document index in `docs`, problems), in that order of checks.
pub fn check_across(docs: &[Document]) -> Vec<(usize, Vec<Problem>)> {
    let mut out = check_networks(docs);
    out.extend(jobs_and_queues::check_jobs(docs));
    out.extend(check_kueue_levels(docs));
    out.extend(jobs_and_queues::check_queues(docs));
    out
}

/// A pod attaching a network whose NAD (in the linted files) names a device-plugin resource must
/// request that resource, else it gets the interface but no RDMA device.
fn check_networks(docs: &[Document]) -> Vec<(usize, Vec<Problem>)> {
    let mut resources: BTreeMap<&str, &str> = BTreeMap::new();
    for d in docs {
        if d.value.get("kind").and_then(Value::as_str) != Some("NetworkAttachmentDefinition") {
            continue;
        }
        let name = d.value.pointer("/metadata/name").and_then(Value::as_str);
        let resource = d
            .value
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(RESOURCE_NAME_ANNOTATION))
            .and_then(Value::as_str);
        if let (Some(n), Some(r)) = (name, resource) {
            resources.insert(n, r);
        }
    }
    let mut out = Vec::new();
    if resources.is_empty() {
        return out;
    }
    for (i, d) in docs.iter().enumerate() {
        let mut problems = Vec::new();
        for (path, spec, annotations) in pod_templates(&d.value) {
            let Some(nets) = annotations
                .and_then(|a| a.get(NETWORKS_ANNOTATION))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let containers: Vec<&Value> = spec
                .get("containers")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            for net in network_names(nets) {
                let Some(resource) = resources.get(net.as_str()) else {
                    continue;
                };
                let requested = containers.iter().any(|c| {
                    ["limits", "requests"].iter().any(|k| {
                        c.pointer(&format!("/resources/{k}"))
                            .and_then(|r| r.get(*resource))
                            .is_some()
                    })
                });
                if !requested {
                    problems.push(Problem::new(
                        Severity::Error,
                        format!("{path}.containers"),
                        format!(
                            "the pod attaches network {net}, whose {RESOURCE_NAME_ANNOTATION} is \
                             {resource}, but no container requests {resource}: the pod gets the \
                             interface without an RDMA device (unless the network resources \
                             injector adds it); add it to resources.limits"
                        ),
                    ));
                }
            }
        }
        if !problems.is_empty() {
            out.push((i, problems));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_tags_and_driver_versions() {
        assert_eq!(release_of("network-operator-v25.4.0"), Some((25, 4, 0)));
        assert_eq!(release_of("network-operator-v24.10.1"), Some((24, 10, 1)));
        assert_eq!(release_of("v1.5.2"), None);
        assert_eq!(
            driver_year_month("doca3.1.0-25.07-0.9.7.0-0"),
            Some((25, 7))
        );
        assert_eq!(driver_year_month("24.10-0.7.0.0-0"), Some((24, 10)));
        assert_eq!(driver_year_month("latest"), None);
    }

    #[test]
    fn networks_annotation_forms() {
        assert_eq!(network_names("a, ns/b@net1"), ["a", "b"]);
        assert_eq!(
            network_names(r#"[{"name": "rdma-net", "namespace": "x"}]"#),
            ["rdma-net"]
        );
    }
}
