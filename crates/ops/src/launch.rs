//! `railyard launch`: turn a placement file into the `torchrun` command lines and NCCL
//! environment of every pod, as a shell script, an env file, a Kubernetes patch, or an MPI /
//! nccl-tests hostfile.
//!
//! One torchrun agent per placed pod ("node" in torchrun's terms): `--node-rank` is the pod's
//! rank, `--nproc-per-node` its GPUs. The rendezvous endpoint is always the rank-0 pod's node
//! **IP address**, never a host name: with host networking a node resolves its own name to
//! 127.0.1.1 (the Debian/Ubuntu `/etc/hosts` default) and other nodes often cannot resolve it at
//! all, so a name-based endpoint hangs the rendezvous.
//!
//! [`plan`] is pure (cluster + placement + addresses → [`LaunchPlan`]); the renderers are pure
//! functions of the plan; reading the files is the CLI's (`railyard launch`).

use std::collections::BTreeMap;
use std::net::IpAddr;

use topology::{Cluster, HOSTNAME_LABEL};

use formats::k8s::INSTANCE_TYPE_LABEL;
use formats::names::comment_text;
pub use formats::names::shell_quote;
use formats::placement::ResolvedPod;
use formats::FormatError;

use crate::launch_layout::{megatron_layout, MegatronLayout};
use crate::nccl_shapes;

/// Queue pairs per connection `launch` writes for a node when `--qps` is not given: the shape's
/// published value, else 4.
pub fn default_qps(cluster: &Cluster, node: topology::NodeId) -> u32 {
    cluster
        .node(node)
        .labels
        .get(INSTANCE_TYPE_LABEL)
        .and_then(|s| nccl_shapes::for_shape(s))
        .and_then(|r| {
            r.env
                .iter()
                .find(|(k, _)| *k == "NCCL_IB_QPS_PER_CONNECTION")
        })
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(4)
}

/// Options of [`plan`] that do not come from the cluster or the placement.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Rendezvous port.
    pub port: u16,
    /// Queue pairs per connection; `None`: the shape's published value, else 4.
    pub qps: Option<u32>,
    /// RDMA device name prefix (devices PREFIX0..PREFIX(n−1)); `None`: the shape's published
    /// device list, else `mlx5_`.
    pub hca_prefix: Option<String>,
    /// Exact RDMA device names (overrides the prefix and the shape's list when not empty).
    pub hca: Vec<String>,
    /// NCCL_SOCKET_IFNAME value; `None`: the shape's published value, else `^lo,docker`.
    pub socket_ifname: Option<String>,
    /// Training script.
    pub script: String,
    /// Rendezvous ID.
    pub rdzv_id: String,
    /// NCCL settings advised by `place --network-aware` (the placement's `network.nccl_advice`),
    /// written when `launch --network-aware` is given; checked by [`check_advice`]. An explicit
    /// flag (`--qps`) still wins.
    pub advice: Vec<(String, String)>,
    /// The model and layout the job trains (`launch --model --layout`): checked against the
    /// placement, and written as Megatron-LM's parallelism arguments.
    pub training: Option<layout::Training>,
}

/// The variable every format writes Megatron-LM's parallelism arguments to (with `--layout`).
pub const MEGATRON_ARGS_VAR: &str = "MEGATRON_PARALLEL_ARGS";

/// NCCL variables `launch --network-aware` takes from a placement's advice, with what their
/// values must be: whole numbers in a range.
const ADVISABLE: &[(&str, u32, u32)] = &[
    ("NCCL_IB_QPS_PER_CONNECTION", 1, 128),
    ("NCCL_IB_SPLIT_DATA_ON_QPS", 0, 1),
];

/// Check advice read from a placement file (`file` names it in errors): only the variables
/// railyard advises, with whole-number values in their range, each at most once.
pub fn check_advice(file: &str, advice: &[(String, String)]) -> Result<(), FormatError> {
    let mut seen: Vec<&str> = Vec::new();
    for (i, (name, value)) in advice.iter().enumerate() {
        let at = |m: String| FormatError::input(file, format!("network.nccl_advice[{i}]: {m}"));
        let Some(&(_, lo, hi)) = ADVISABLE.iter().find(|(n, _, _)| n == name) else {
            return Err(at(format!(
                "name: expected one of {}, got \"{}\"",
                ADVISABLE.iter().map(|a| a.0).collect::<Vec<_>>().join(", "),
                formats::excerpt(name)
            )));
        };
        let ok = value.chars().all(|c| c.is_ascii_digit())
            && value.parse::<u32>().is_ok_and(|v| (lo..=hi).contains(&v));
        if !ok {
            return Err(at(format!(
                "value: expected a whole number in {lo}..={hi} for {name}, got \"{}\"",
                formats::excerpt(value)
            )));
        }
        if seen.contains(&name.as_str()) {
            return Err(at(format!("{name} is advised twice")));
        }
        seen.push(name);
    }
    Ok(())
}

/// The launch of one job.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchPlan {
    /// `IP:PORT` of the rank-0 node (`[IPv6]:PORT`).
    pub endpoint: String,
    /// Pods in the whole job (agents may be filtered to one node).
    pub n_pods: usize,
    /// GPUs in the whole job.
    pub n_gpus: u32,
    /// One torchrun agent per pod, in rank order.
    pub agents: Vec<Agent>,
    /// Rendezvous ID.
    pub rdzv_id: String,
    /// Training script.
    pub script: String,
    /// Where the NCCL settings come from, one line per shape used: the published row of
    /// [`crate::nccl_shapes`] with its source, or why generic settings were used.
    pub nccl_sources: Vec<String>,
    /// With `--layout`: the layout as Megatron-LM is told it, after the training script in
    /// every command line and in [`MEGATRON_ARGS_VAR`] of every pod's environment.
    pub megatron: Option<MegatronLayout>,
}

/// One torchrun agent: a placed pod.
#[derive(Clone, Debug, PartialEq)]
pub struct Agent {
    /// torchrun node rank (= placement rank).
    pub rank: u32,
    /// Node name.
    pub node: String,
    /// The node's `kubernetes.io/hostname` label (the name when absent).
    pub hostname_label: String,
    /// The node's address.
    pub address: IpAddr,
    /// Processes (GPUs) of this agent.
    pub nproc: u32,
    /// GPU indices when the pod does not use the whole node: `CUDA_VISIBLE_DEVICES` on a host
    /// ([`host_env`]); never in a pod, where the device plugin chooses the devices and the
    /// container sees its GPUs as 0..n−1.
    pub visible_gpus: Option<Vec<u32>>,
    /// Environment, in output order (without `CUDA_VISIBLE_DEVICES`: see [`host_env`]).
    pub env: Vec<(String, String)>,
    /// torchrun arguments after `torchrun` (flags then the script).
    pub args: Vec<String>,
}

/// Parse an addresses file: `ADDRESS NAME [NAME…]` per line (the `/etc/hosts` layout), `#`
/// starts a comment. Loopback and unspecified addresses are refused: they are the very problem
/// this file exists to avoid.
pub fn parse_addresses(file: &str, text: &str) -> Result<BTreeMap<String, IpAddr>, FormatError> {
    let mut out: BTreeMap<String, IpAddr> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let at = |m: String| FormatError::input(file, format!("line {}: {m}", i + 1));
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(addr) = words.next() else { continue };
        let ip: IpAddr = addr
            .parse()
            .map_err(|_| at(format!("expected an IP address first, got \"{addr}\"")))?;
        check_usable(ip).map_err(at)?;
        let names: Vec<&str> = words.collect();
        if names.is_empty() {
            return Err(at(format!("expected node names after {addr}")));
        }
        for name in names {
            if let Some(prev) = out.insert(name.to_owned(), ip) {
                if prev != ip {
                    return Err(at(format!(
                        "node \"{name}\" given two addresses, {prev} and {ip}"
                    )));
                }
            }
        }
    }
    Ok(out)
}

/// Values that end up unquoted in env files and command lines must be plain words.
fn check_options(options: &LaunchOptions) -> Result<(), FormatError> {
    if options.port == 0 {
        return Err(FormatError::input(
            "--port",
            "expected a TCP port in 1..=65535, got 0 (port 0 asks the kernel for any port: the other nodes could not find the rendezvous)",
        ));
    }
    if options.script.is_empty() || options.script.chars().any(char::is_control) {
        return Err(FormatError::input(
            "--script",
            format!(
                "expected a script name without control characters, got \"{}\"",
                formats::excerpt(&options.script)
            ),
        ));
    }
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.:/^,=@+".contains(c))
    };
    for dev in &options.hca {
        if !plain(dev) || dev.contains(',') {
            return Err(FormatError::input(
                "--hca",
                format!("expected RDMA device names like mlx5_0, got \"{dev}\""),
            ));
        }
    }
    if let Some(prefix) = options.hca_prefix.as_deref().filter(|p| !plain(p)) {
        return Err(FormatError::input(
            "--hca-prefix",
            format!("expected a device name prefix like mlx5_, got \"{prefix}\""),
        ));
    }
    if let Some(ifname) = options.socket_ifname.as_deref().filter(|p| !plain(p)) {
        return Err(FormatError::input(
            "--socket-ifname",
            format!("expected interface names (NCCL_SOCKET_IFNAME syntax), got \"{ifname}\""),
        ));
    }
    if !plain(&options.rdzv_id) || options.rdzv_id.contains(['=', ',', '/', '^']) {
        return Err(FormatError::input(
            "rendezvous id",
            format!(
                "expected letters, digits, `-`, `_`, `.` (from --rdzv-id or the placement's job \
                 name), got \"{}\"",
                options.rdzv_id
            ),
        ));
    }
    Ok(())
}

fn check_usable(ip: IpAddr) -> Result<(), String> {
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    if ip.is_loopback() || ip.is_unspecified() || ip.is_multicast() || broadcast {
        Err(format!(
            "{ip} is not reachable from other nodes as one host (loopback, unspecified, broadcast or multicast); give the node's own address"
        ))
    } else {
        Ok(())
    }
}

/// Build the launch: one agent per pod in rank order. `placement_file` and `address_source`
/// name the inputs in errors.
pub fn plan(
    cluster: &Cluster,
    pods: &[ResolvedPod],
    addresses: &BTreeMap<String, IpAddr>,
    options: &LaunchOptions,
    placement_file: &str,
    address_source: &str,
) -> Result<LaunchPlan, FormatError> {
    if pods.is_empty() {
        return Err(FormatError::input(
            placement_file,
            "pods: expected at least one pod",
        ));
    }
    check_options(options)?;
    check_advice(placement_file, &options.advice)?;
    let advised = |name: &str| {
        options
            .advice
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut agents = Vec::with_capacity(pods.len());
    let nnodes = pods.len();
    let mut missing: Vec<&str> = Vec::new();
    let mut resolved: Vec<Option<IpAddr>> = Vec::with_capacity(pods.len());
    for pod in pods {
        let node = cluster.node(pod.node);
        let ip = match addresses.get(&node.name) {
            Some(ip) => Some(*ip),
            None => match &node.internal_ip {
                Some(s) => {
                    let ip: IpAddr = s.parse().map_err(|_| {
                        FormatError::input(
                            address_source,
                            format!(
                                "node \"{}\": InternalIP \"{s}\" is not an IP address",
                                node.name
                            ),
                        )
                    })?;
                    check_usable(ip).map_err(|m| {
                        FormatError::input(address_source, format!("node \"{}\": {m}", node.name))
                    })?;
                    Some(ip)
                }
                None => None,
            },
        };
        if ip.is_none() && !missing.contains(&node.name.as_str()) {
            missing.push(&node.name);
        }
        resolved.push(ip);
    }
    if !missing.is_empty() {
        let shown: Vec<String> = missing.iter().take(5).map(|n| format!("\"{n}\"")).collect();
        let more = if missing.len() > 5 {
            format!(" and {} more", missing.len() - 5)
        } else {
            String::new()
        };
        return Err(FormatError::input(
            address_source,
            format!(
                "no address for node {}{more}: the NodeList has no status.addresses InternalIP \
                 for it and no --addresses file lists it",
                shown.join(", ")
            ),
        ));
    }
    // Two placed nodes with one address: one of them would get the other's ranks.
    let mut owner: BTreeMap<IpAddr, &str> = BTreeMap::new();
    for (pod, ip) in pods.iter().zip(&resolved) {
        let node = cluster.node(pod.node);
        if let Some(ip) = ip {
            if let Some(other) = owner.insert(*ip, &node.name) {
                if other != node.name {
                    return Err(FormatError::input(
                        address_source,
                        format!(
                            "nodes \"{other}\" and \"{}\" share the address {ip}; every node needs its own",
                            node.name
                        ),
                    ));
                }
            }
        }
    }
    let rank0 = resolved[0].expect("every address resolved above");
    let endpoint = match rank0 {
        IpAddr::V4(v4) => format!("{v4}:{}", options.port),
        IpAddr::V6(v6) => format!("[{v6}]:{}", options.port),
    };
    let mut nccl_sources: Vec<String> = Vec::new();
    if !options.advice.is_empty() {
        let list: Vec<String> = options
            .advice
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        nccl_sources.push(format!(
            "advice of place --network-aware: {}",
            list.join(", ")
        ));
    }
    for (pod, ip) in pods.iter().zip(resolved) {
        let node = cluster.node(pod.node);
        let shape = node.labels.get(INSTANCE_TYPE_LABEL).map(String::as_str);
        let row = shape.and_then(nccl_shapes::for_shape);
        let source = match (shape, row) {
            (_, Some(r)) => format!("{}: published settings, {}", r.shape, r.source),
            (Some(s), None) => format!(
                "{s}: no published NCCL settings known; generic: devices PREFIX0..n-1, 4 QPs"
            ),
            (None, None) => format!(
                "node \"{}\" has no {INSTANCE_TYPE_LABEL}; generic: devices PREFIX0..n-1, 4 QPs",
                node.name
            ),
        };
        if !nccl_sources.contains(&source) && nccl_sources.len() < 8 {
            nccl_sources.push(source);
        }
        if pod.gpus.fract() != 0.0 {
            return Err(FormatError::input(
                placement_file,
                format!(
                    "rank {}: gpus {}: torchrun runs one process per whole GPU",
                    pod.rank, pod.gpus
                ),
            ));
        }
        let nproc = pod.gpus as u32;
        let whole_node =
            pod.gpu_ids.len() == node.gpus as usize && pod.gpu_ids.iter().copied().eq(0..node.gpus);
        // Explicit flags first, then the shape's published row, then generic defaults.
        let hcas = match (&options.hca_prefix, row) {
            _ if !options.hca.is_empty() => options.hca.clone(),
            (None, Some(r)) => r.hcas.iter().map(|h| (*h).to_owned()).collect(),
            (prefix, _) => {
                let prefix = prefix.as_deref().unwrap_or("mlx5_");
                let n = node.nics.rails * node.nics.ports_per_rail;
                (0..n).map(|i| format!("{prefix}{i}")).collect()
            }
        };
        let published = |name: &str| {
            row.and_then(|r| r.env.iter().find(|(k, _)| *k == name))
                .map(|(_, v)| (*v).to_owned())
        };
        let qps = options
            .qps
            .map(|q| q.to_string())
            .or_else(|| advised("NCCL_IB_QPS_PER_CONNECTION"))
            .or_else(|| published("NCCL_IB_QPS_PER_CONNECTION"))
            .unwrap_or_else(|| "4".to_owned());
        let ifname = options
            .socket_ifname
            .clone()
            .or_else(|| published("NCCL_SOCKET_IFNAME"))
            .unwrap_or_else(|| "^lo,docker".to_owned());
        let mut env = vec![
            ("NCCL_IB_HCA".to_owned(), format!("={}", hcas.join(","))),
            ("NCCL_IB_QPS_PER_CONNECTION".to_owned(), qps),
            ("NCCL_SOCKET_IFNAME".to_owned(), ifname),
        ];
        for (k, v) in row.map(|r| r.env).unwrap_or_default() {
            if !matches!(*k, "NCCL_IB_QPS_PER_CONNECTION" | "NCCL_SOCKET_IFNAME") {
                let v = advised(k).unwrap_or_else(|| (*v).to_owned());
                env.push(((*k).to_owned(), v));
            }
        }
        for (k, v) in &options.advice {
            if !env.iter().any(|(e, _)| e == k) {
                env.push((k.clone(), v.clone()));
            }
        }
        let args = vec![
            "--nnodes".to_owned(),
            nnodes.to_string(),
            "--nproc-per-node".to_owned(),
            nproc.to_string(),
            "--node-rank".to_owned(),
            pod.rank.to_string(),
            "--rdzv-backend".to_owned(),
            "c10d".to_owned(),
            "--rdzv-endpoint".to_owned(),
            endpoint.clone(),
            "--rdzv-id".to_owned(),
            options.rdzv_id.clone(),
            options.script.clone(),
        ];
        agents.push(Agent {
            rank: pod.rank,
            node: node.name.clone(),
            hostname_label: node
                .labels
                .get(HOSTNAME_LABEL)
                .cloned()
                .unwrap_or_else(|| node.name.clone()),
            address: ip.expect("every address resolved above"),
            nproc,
            visible_gpus: (!whole_node).then(|| pod.gpu_ids.clone()),
            env,
            args,
        });
    }
    let megatron = options
        .training
        .as_ref()
        .map(|t| megatron_layout(cluster, pods, t, placement_file))
        .transpose()?;
    if let Some(m) = &megatron {
        for a in &mut agents {
            a.env.push((MEGATRON_ARGS_VAR.to_owned(), m.args.join(" ")));
        }
    }
    Ok(LaunchPlan {
        endpoint,
        n_pods: agents.len(),
        n_gpus: agents.iter().map(|a| a.nproc).sum(),
        agents,
        rdzv_id: options.rdzv_id.clone(),
        script: options.script.clone(),
        nccl_sources,
        megatron,
    })
}

/// The comment every format starts with: why an IP, and what NCCL_IB_HCA assumes.
fn header(plan: &LaunchPlan) -> String {
    format!(
        "# railyard launch: {}, {}, rendezvous {} (id {}).\n\
         # The rendezvous endpoint is the rank-0 node's IP address, not its host name: with host\n\
         # networking a node resolves its own name to 127.0.1.1 (the Debian/Ubuntu /etc/hosts\n\
         # default) and other nodes cannot resolve it at all, so a name-based rendezvous hangs.\n\
         # NCCL settings per shape (the vendor's published device list, GID index, traffic class,\n\
         # timeouts), else one RDMA device per NIC port named PREFIX0..PREFIX(n-1) rail-major\n\
         # (override with --hca); the leading `=` makes NCCL match names exactly (`mlx5_1` would\n\
         # otherwise also select mlx5_10..mlx5_19). Check the names with `ibv_devices`.\n{}{}",
        report::fmt::count_of(plan.n_pods, "pod"),
        report::fmt::count_of(plan.n_gpus as usize, "GPU"),
        plan.endpoint,
        plan.rdzv_id,
        plan.nccl_sources
            .iter()
            .map(|s| format!("# NCCL settings: {}\n", comment_text(s)))
            .collect::<String>(),
        plan.megatron
            .as_ref()
            .map(megatron_comment)
            .unwrap_or_default()
    )
}

/// What `--layout` adds to the header: the layout, where its flags come from, and the highest
/// tier each communicator kind crosses on this placement.
fn megatron_comment(m: &MegatronLayout) -> String {
    let tiers: String = m
        .tiers
        .iter()
        .map(|(k, t)| format!("#   {k}: {}\n", comment_text(t)))
        .collect();
    format!(
        "# Layout {} of {}, checked against this placement (TP groups inside one node).\n\
         # {MEGATRON_ARGS_VAR} holds its Megatron-LM flags, which every command line passes to\n\
         # the script (flag names, rank orders: NVIDIA/Megatron-LM {}, megatron/training/\n\
         # arguments.py and initialize.py). Highest tier each communicator crosses:{}\n{tiers}",
        comment_text(&m.layout),
        comment_text(&m.model),
        &crate::launch_layout::MEGATRON_COMMIT[..8],
        if tiers.is_empty() { " none" } else { "" },
    )
}

/// Megatron-LM's arguments after the training script, when `--layout` is given.
fn script_args(plan: &LaunchPlan) -> &[String] {
    plan.megatron.as_ref().map_or(&[], |m| &m.args)
}

/// The environment of an agent started on its host (shell and env formats): [`Agent::env`],
/// then `CUDA_VISIBLE_DEVICES` when the agent uses part of the node.
pub fn host_env(a: &Agent) -> Vec<(String, String)> {
    let mut env = a.env.clone();
    if let Some(ids) = &a.visible_gpus {
        env.push((
            "CUDA_VISIBLE_DEVICES".to_owned(),
            ids.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
        ));
    }
    env
}

/// One line per pod: `VAR=… torchrun …`, to run on that pod's node.
pub fn render_shell(plan: &LaunchPlan) -> String {
    let mut out = String::from("#!/bin/sh\n");
    out.push_str(&header(plan));
    for a in &plan.agents {
        out.push_str(&format!(
            "\n# rank {}: run on {} ({})\n",
            a.rank,
            comment_text(&a.node),
            a.address
        ));
        let env: Vec<String> = host_env(a)
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(v)))
            .collect();
        let args: Vec<String> = a
            .args
            .iter()
            .chain(script_args(plan))
            .map(|s| shell_quote(s))
            .collect();
        out.push_str(&format!("{} torchrun {}\n", env.join(" "), args.join(" ")));
    }
    out
}

/// The torchrun flags as the `PET_*` variables torchrun reads, then the NCCL environment.
fn env_vars(a: &Agent) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    let mut it = a.args.iter();
    while let Some(flag) = it.next() {
        let Some(name) = flag.strip_prefix("--") else {
            continue; // the script
        };
        if let Some(value) = it.next() {
            vars.push((
                format!("PET_{}", name.replace('-', "_").to_ascii_uppercase()),
                value.clone(),
            ));
        }
    }
    vars.extend(host_env(a));
    vars
}

/// `KEY=VALUE` sections, one per pod, headed `# rank N: NODE (ADDRESS)`.
pub fn render_env(plan: &LaunchPlan) -> String {
    let mut out = header(plan);
    out.push_str(&format!(
        "# One section per pod: give each node its own section, then run `torchrun {}{}`.\n",
        comment_text(&shell_quote(&plan.script)),
        if plan.megatron.is_some() {
            format!(" ${MEGATRON_ARGS_VAR}")
        } else {
            String::new()
        }
    ));
    for a in &plan.agents {
        out.push_str(&format!(
            "\n# rank {}: {} ({})\n",
            a.rank,
            comment_text(&a.node),
            a.address
        ));
        for (k, v) in env_vars(a) {
            out.push_str(&format!("{k}={v}\n"));
        }
    }
    out
}

/// One strategic-merge patch per pod for a Pod spec (or a pod template's `spec`): pin it to its
/// node, use the host network, run torchrun with the NCCL environment.
pub fn render_k8s_patch(plan: &LaunchPlan, container: &str) -> String {
    let mut out = header(plan);
    out.push_str(
        "# One Pod-spec patch per pod (strategic merge: containers merge by name). hostNetwork\n\
         # puts NCCL's bootstrap on the node addresses; ClusterFirstWithHostNet keeps cluster DNS.\n\
         # No CUDA_VISIBLE_DEVICES: the device plugin chooses the pod's GPUs (the nvidia.com/gpu\n\
         # limit) and the container sees them as 0..n-1.\n",
    );
    for a in &plan.agents {
        let mut command = vec!["torchrun".to_owned()];
        command.extend(a.args.iter().chain(script_args(plan)).cloned());
        let env: Vec<serde_json::Value> = a
            .env
            .iter()
            .map(|(k, v)| serde_json::json!({ "name": k, "value": v }))
            .collect();
        let patch = serde_json::json!({
            "spec": {
                "nodeSelector": { HOSTNAME_LABEL: a.hostname_label },
                "hostNetwork": true,
                "dnsPolicy": "ClusterFirstWithHostNet",
                "containers": [{
                    "name": container,
                    "command": command,
                    "env": env,
                    "resources": { "limits": { "nvidia.com/gpu": a.nproc } },
                }],
            }
        });
        out.push_str(&format!(
            "---\n# rank {}: {} ({})\n",
            a.rank,
            comment_text(&a.node),
            a.address
        ));
        out.push_str(&serde_norway::to_string(&patch).expect("plain data serializes"));
    }
    out
}

/// `ADDRESS slots=N` per node in order of its first rank; pods sharing a node add their slots.
pub fn render_hostfile(plan: &LaunchPlan) -> String {
    let mut nodes: Vec<(&str, IpAddr, u32)> = Vec::new();
    for a in &plan.agents {
        match nodes.iter_mut().find(|(n, _, _)| *n == a.node) {
            Some(entry) => entry.2 += a.nproc,
            None => nodes.push((&a.node, a.address, a.nproc)),
        }
    }
    let mut out = String::from(
        "# MPI / nccl-tests hostfile from a railyard placement, in rank order (one slot per GPU).\n\
         # Addresses, not host names: other nodes may not resolve a name, and a node resolves its\n\
         # own to 127.0.1.1.\n",
    );
    for (name, ip, slots) in nodes {
        out.push_str(&format!("# {}\n{ip} slots={slots}\n", comment_text(name)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_file() {
        let m = parse_addresses(
            "a.txt",
            "# nodes\n10.0.0.1 gpu-1 gpu-1.lan\n\n10.0.0.2 gpu-2 # x\n",
        )
        .unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m["gpu-2"].to_string(), "10.0.0.2");
        let e = parse_addresses("a.txt", "127.0.1.1 gpu-1\n").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("a.txt: line 1: 127.0.1.1 is not reachable"));
        let e = parse_addresses("a.txt", "10.0.0.1 a\n10.0.0.2 a\n").unwrap_err();
        assert!(e
            .to_string()
            .contains("line 2: node \"a\" given two addresses"));
        let e = parse_addresses("a.txt", "gpu-1 10.0.0.1\n").unwrap_err();
        assert!(e.to_string().contains("expected an IP address first"));
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("train.py"), "train.py");
        assert_eq!(shell_quote("=mlx5_0,mlx5_1"), "'=mlx5_0,mlx5_1'");
        assert_eq!(shell_quote("^lo,docker"), "'^lo,docker'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
