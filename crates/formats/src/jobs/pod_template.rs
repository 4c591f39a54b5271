//! What every reader takes from a Kubernetes object and its pod templates: fields by path,
//! resource requests as Kubernetes counts them, tolerations, node selectors and affinity, and the
//! object's name. The native spec reads its GPU fraction and tolerations with the same rules.

use serde_json::Value;
use topology::TaintEffect;

use crate::error::FormatError;

/// The GPU resource name.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

pub(super) fn kind(doc: &Value) -> &str {
    doc.get("kind").and_then(Value::as_str).unwrap_or("")
}

pub(super) fn path<'v>(v: &'v Value, keys: &[&str]) -> Option<&'v Value> {
    keys.iter().try_fold(v, |v, k| v.get(k))
}

pub(super) fn str_at<'v>(v: &'v Value, keys: &[&str]) -> Option<&'v str> {
    path(v, keys).and_then(Value::as_str)
}

/// An annotation or label value as a string (numbers and booleans are accepted as written).
pub(super) fn map_str(v: &Value, keys: &[&str], key: &str) -> Option<String> {
    match path(v, keys)?.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(super) fn fraction(f: f64) -> Result<sched::GpuRequest, String> {
    if !(f.is_finite() && f > 0.0 && f <= 1.0) {
        return Err(format!(
            "expected a fraction in (0, 1], got {}",
            crate::show_number(f)
        ));
    }
    let milli = (f * 1000.0).round() as u32;
    if milli == 0 {
        return Err(format!(
            "{} is below the smallest share, 0.001",
            crate::show_number(f)
        ));
    }
    Ok(sched::GpuRequest::fraction(milli))
}

/// CPU as Kubernetes writes it (`2`, `0.5`, `"500m"`), in millicores.
pub fn parse_cpu_millis(v: &Value) -> Option<u64> {
    crate::k8s::quantity("cpu", v)
}

/// Memory as Kubernetes writes it (`"200Mi"`, `"100Gi"`, `"1G"`, bytes), in MiB (rounded up).
pub fn parse_memory_mib(v: &Value) -> Option<u64> {
    crate::k8s::quantity("memory", v).map(|b| b.div_ceil(1_048_576))
}

pub(super) fn toleration(
    key: Option<&str>,
    operator: Option<&str>,
    value: Option<&str>,
    effect: Option<&str>,
) -> Result<sched::Toleration, String> {
    let effect = match effect {
        None | Some("") => None,
        Some("NoSchedule") => Some(TaintEffect::NoSchedule),
        Some("PreferNoSchedule") => Some(TaintEffect::PreferNoSchedule),
        Some("NoExecute") => Some(TaintEffect::NoExecute),
        Some(e) => {
            return Err(format!(
                "effect: expected NoSchedule, PreferNoSchedule or NoExecute, got \"{e}\""
            ))
        }
    };
    let key = key.filter(|k| !k.is_empty()).map(str::to_owned);
    let value = match operator.unwrap_or("Equal") {
        "Exists" => None,
        "Equal" => Some(value.unwrap_or("").to_owned()),
        o => return Err(format!("operator: expected Exists or Equal, got \"{o}\"")),
    };
    if key.is_none() && value.is_some() {
        return Err("key: an Equal toleration needs a key".to_owned());
    }
    Ok(sched::Toleration { key, value, effect })
}

/// The tolerations of an object's `spec` (a pod spec, a ResourceFlavor's spec), each checked.
pub fn tolerations_of(
    file: &str,
    at: &str,
    spec: &Value,
    field: &str,
) -> Result<Vec<sched::Toleration>, FormatError> {
    k8s_tolerations(file, at, spec, field)
}

pub(super) fn k8s_tolerations(
    file: &str,
    at: &str,
    spec: &Value,
    field: &str,
) -> Result<Vec<sched::Toleration>, FormatError> {
    let Some(list) = spec.get("tolerations") else {
        return Ok(Vec::new());
    };
    let Some(list) = list.as_array() else {
        return Err(FormatError::input(
            file,
            format!("{at}: {field}.tolerations: expected a list"),
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            toleration(
                t.get("key").and_then(Value::as_str),
                t.get("operator").and_then(Value::as_str),
                t.get("value").and_then(Value::as_str),
                t.get("effect").and_then(Value::as_str),
            )
            .map_err(|m| FormatError::input(file, format!("{at}: {field}.tolerations[{i}].{m}")))
        })
        .collect()
}

/// What a pod asks of a resource, as Kubernetes and Kueue count it: each container's request
/// (its limit when no request is given), summed over the containers, and at least the largest
/// init container's (init containers run one at a time, before the others).
pub(super) fn pod_requests(
    file: &str,
    at: &str,
    pod_spec: &Value,
    field: &str,
    resource: &str,
    parse: fn(&Value) -> Option<u64>,
) -> Result<u64, FormatError> {
    match container_amounts(pod_spec, resource, parse) {
        Ok((containers, init)) => Ok(containers.max(init)),
        Err(AmountError::Unreadable { list, index, part, value }) => Err(FormatError::input(
            file,
            format!("{at}: {field}.{list}[{index}].resources.{part}[{resource}]: expected a Kubernetes quantity (e.g. 8, \"500m\", \"64Gi\"), got {value}"),
        )),
        Err(AmountError::Overflow) => Err(FormatError::input(
            file,
            format!(
                "{at}: {field}.containers: the {resource} requests add up past {}",
                u64::MAX
            ),
        )),
    }
}

/// Why [`container_amounts`] could not count a resource.
#[derive(Debug)]
pub(crate) enum AmountError {
    /// A container's value does not parse: which list, which container, `requests` or `limits`.
    Unreadable {
        /// `containers` or `initContainers`.
        list: &'static str,
        /// The container's index in the list.
        index: usize,
        /// `requests` or `limits`.
        part: &'static str,
        /// The value as written.
        value: Value,
    },
    /// The containers' amounts add up past `u64::MAX`.
    Overflow,
}

/// How much of `resource` a pod spec's containers ask for, as Kubernetes counts it: each
/// container's request, else its limit; the containers' sum and, apart, the largest init
/// container's. The one walk over containers behind [`pod_requests`] and the live pods' GPUs.
pub(crate) fn container_amounts(
    pod_spec: &Value,
    resource: &str,
    parse: fn(&Value) -> Option<u64>,
) -> Result<(u64, u64), AmountError> {
    let one = |c: &Value, index: usize, list: &'static str| -> Result<u64, AmountError> {
        for part in ["requests", "limits"] {
            if let Some(v) = path(c, &["resources", part, resource]) {
                return parse(v).ok_or_else(|| AmountError::Unreadable {
                    list,
                    index,
                    part,
                    value: v.clone(),
                });
            }
        }
        Ok(0)
    };
    let list = |key: &str| {
        pod_spec
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let mut total: u64 = 0;
    for (i, c) in list("containers").iter().enumerate() {
        total = total
            .checked_add(one(c, i, "containers")?)
            .ok_or(AmountError::Overflow)?;
    }
    let mut init = 0;
    for (i, c) in list("initContainers").iter().enumerate() {
        init = init.max(one(c, i, "initContainers")?);
    }
    Ok((total, init))
}

/// What a pod spec requests of every resource except GPUs, per pod, in
/// [`crate::k8s::quantity`] units: each container's request (its limit when it gives no
/// request), summed over the containers, and at least the largest init container's. An
/// unreadable quantity is `Err((field under the spec, value))`.
pub fn requests_of(spec: &Value) -> Result<sched::ResourceList, (String, Value)> {
    let mut requests = sched::ResourceList::new();
    let one = |c: &Value, i: usize, key: &str| -> Result<sched::ResourceList, (String, Value)> {
        let mut out = sched::ResourceList::new();
        for part in ["limits", "requests"] {
            for (r, v) in c
                .pointer(&format!("/resources/{part}"))
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if r == GPU_RESOURCE {
                    continue;
                }
                let q = crate::k8s::quantity(r, v)
                    .ok_or_else(|| (format!("spec.{key}[{i}].resources.{part}[{r}]"), v.clone()))?;
                // Requests win over limits (a limit alone is also the request).
                out.insert(r.clone(), q);
            }
        }
        Ok(out)
    };
    let list = |key: &str| {
        spec.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for (i, c) in list("containers").iter().enumerate() {
        for (r, q) in one(c, i, "containers")? {
            let e = requests.entry(r).or_insert(0);
            *e = e.saturating_add(q);
        }
    }
    for (i, c) in list("initContainers").iter().enumerate() {
        for (r, q) in one(c, i, "initContainers")? {
            let e = requests.entry(r).or_insert(0);
            *e = (*e).max(q);
        }
    }
    Ok(requests)
}

/// Kueue: the pod-set group annotation (leader and workers placed together).
pub const KUEUE_PODSET_GROUP: &str = "kueue.x-k8s.io/podset-group-name";

/// What placement needs of a pod template besides GPUs and levels (`base` is the template's
/// path in the document, ending in `.` or empty): every resource request per pod except GPUs
/// (in Kueue's units: millicores, bytes, counts), `nodeSelector`, required and preferred node
/// affinity (`matchExpressions`), tolerations, and the pod-set group.
pub(super) fn template_extras(
    file: &str,
    at: &str,
    template: &Value,
    base: &str,
) -> Result<sched::PodSetExtras, FormatError> {
    let err =
        |field: String, m: String| FormatError::input(file, format!("{at}: {base}{field}: {m}"));
    let spec = template.get("spec").cloned().unwrap_or(Value::Null);
    let requests = requests_of(&spec)
        .map_err(|(field, v)| err(field, format!("expected a Kubernetes quantity, got {v}")))?;
    let mut node_selector = std::collections::BTreeMap::new();
    if let Some(sel) = spec.get("nodeSelector").filter(|v| !v.is_null()) {
        let sel = sel.as_object().ok_or_else(|| {
            err(
                "spec.nodeSelector".into(),
                "expected a map of labels".into(),
            )
        })?;
        for (k, v) in sel {
            let v = v.as_str().ok_or_else(|| {
                err(
                    format!("spec.nodeSelector[{k}]"),
                    format!("expected a string, got {v}"),
                )
            })?;
            node_selector.insert(k.clone(), v.to_owned());
        }
    }
    let requirements = |v: &Value,
                        field: &str|
     -> Result<Vec<sched::SelectorRequirement>, FormatError> {
        if v.get("matchFields").is_some_and(|m| !m.is_null()) {
            return Err(err(
                format!("{field}.matchFields"),
                "node fields are not modelled; use matchExpressions on labels".into(),
            ));
        }
        let exprs = v
            .get("matchExpressions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        exprs
            .iter()
            .enumerate()
            .map(|(k, e)| {
                let f = format!("{field}.matchExpressions[{k}]");
                let key = e
                    .get("key")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(format!("{f}.key"), "missing".into()))?;
                let op = match e.get("operator").and_then(Value::as_str) {
                    Some("In") => sched::SelectorOp::In,
                    Some("NotIn") => sched::SelectorOp::NotIn,
                    Some("Exists") => sched::SelectorOp::Exists,
                    Some("DoesNotExist") => sched::SelectorOp::DoesNotExist,
                    Some("Gt") => sched::SelectorOp::Gt,
                    Some("Lt") => sched::SelectorOp::Lt,
                    other => {
                        return Err(err(
                            format!("{f}.operator"),
                            format!(
                                "expected In, NotIn, Exists, DoesNotExist, Gt or Lt, got {}",
                                other.map_or_else(|| "nothing".to_owned(), |o| format!("\"{o}\""))
                            ),
                        ))
                    }
                };
                let values = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|vs| {
                        vs.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(sched::SelectorRequirement {
                    key: key.to_owned(),
                    op,
                    values,
                })
            })
            .collect()
    };
    let na = "spec.affinity.nodeAffinity";
    let mut affinity = Vec::new();
    if let Some(terms) = spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
    {
        for (k, t) in terms.iter().enumerate() {
            affinity.push(requirements(
                t,
                &format!("{na}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{k}]"),
            )?);
        }
    }
    let mut preferred = Vec::new();
    if let Some(terms) = spec
        .pointer("/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution")
        .and_then(Value::as_array)
    {
        for (k, t) in terms.iter().enumerate() {
            let f = format!("{na}.preferredDuringSchedulingIgnoredDuringExecution[{k}]");
            let weight = t
                .get("weight")
                .and_then(Value::as_i64)
                .filter(|w| (1..=100).contains(w))
                .ok_or_else(|| err(format!("{f}.weight"), "expected 1..=100".into()))?
                as i32;
            preferred.push(sched::PreferredTerm {
                weight,
                requirements: requirements(
                    t.get("preference").unwrap_or(&Value::Null),
                    &format!("{f}.preference"),
                )?,
            });
        }
    }
    let tolerations = k8s_tolerations(file, at, &spec, &format!("{base}spec"))?;
    let group = path(template, &["metadata", "annotations"])
        .and_then(|a| map_str(a, &[], KUEUE_PODSET_GROUP));
    Ok(sched::PodSetExtras {
        requests,
        node_selector,
        affinity,
        preferred,
        tolerations,
        group,
        sub_group: None,
        running_on: Vec::new(),
    })
}

/// A pod runs on one node, so it can use at most [`topology::MAX_GPUS_PER_NODE`] whole GPUs.
pub(super) fn check_gpus_per_pod(gpus: u64) -> Result<(), String> {
    let max = topology::MAX_GPUS_PER_NODE;
    if gpus > u64::from(max) {
        return Err(format!(
            "{gpus} {GPU_RESOURCE} per pod is more than the limit of {max} (a pod runs on one node)"
        ));
    }
    Ok(())
}

pub(super) fn name_of(file: &str, at: &str, d: &Value) -> Result<String, FormatError> {
    str_at(d, &["metadata", "name"])
        .map(str::to_owned)
        .or_else(|| {
            str_at(d, &["metadata", "generateName"]).map(|g| g.trim_end_matches('-').to_owned())
        })
        .filter(|n| !n.is_empty())
        .ok_or_else(|| FormatError::input(file, format!("{at}: metadata.name: missing")))
}
