//! `railyard launch`: reads a placement (and addresses), plans the launch with `ops::launch` and
//! prints it in the chosen format.

use std::collections::BTreeMap;
use std::path::PathBuf;

use formats::input::{parse_typed, read_text};
use formats::placement::{self, PlacementFile};
use ops::launch::{
    parse_addresses, plan, render_env, render_hostfile, render_k8s_patch, render_shell,
    LaunchOptions,
};

use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;

/// What `launch` writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LaunchFormat {
    /// One `VAR=… torchrun …` line per pod, each to run on its node.
    #[default]
    Shell,
    /// `KEY=VALUE` sections per pod (docker `--env-file`, systemd `EnvironmentFile`), with the
    /// torchrun flags as its `PET_*` variables so that `torchrun SCRIPT` needs no flags.
    Env,
    /// One Pod-spec patch per pod (YAML documents): node selector, host network, command, env.
    K8sPatch,
    /// An MPI / nccl-tests hostfile: `ADDRESS slots=N` per node, in rank order.
    Hostfile,
}

/// Arguments of `launch`.
#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The placement (`railyard place --output json`).
    #[arg(long, value_name = "FILE")]
    pub placement: PathBuf,
    /// Rendezvous port on the rank-0 node.
    #[arg(long, default_value_t = 29500, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// Node addresses, `/etc/hosts` style: `ADDRESS NAME [NAME…]` per line, `#` comments.
    /// Overrides the NodeList's InternalIP; names not in the cluster are ignored.
    #[arg(long, value_name = "FILE")]
    pub addresses: Option<PathBuf>,
    /// What to write.
    #[arg(long, value_enum, default_value_t)]
    pub format: LaunchFormat,
    /// NCCL_IB_QPS_PER_CONNECTION: queue pairs per connection. Each QP gets its own RoCEv2 UDP
    /// source port, so more QPs spread a connection over more ECMP paths. Default: the shape's
    /// published value, else 4.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=128))]
    pub qps: Option<u32>,
    /// Prefix of the RDMA device names: devices are PREFIX0 … PREFIX(n−1), one per NIC port,
    /// rail-major. Default: the shape's published device list (which leaves out front-end NICs),
    /// else `mlx5_`. Check with `ibv_devices` or `railyard doctor`.
    #[arg(long, value_name = "PREFIX")]
    pub hca_prefix: Option<String>,
    /// The RDMA devices to use, exactly (overrides --hca-prefix), e.g. mlx5_0,mlx5_1,mlx5_3.
    #[arg(long, value_delimiter = ',', value_name = "DEV,…")]
    pub hca: Vec<String>,
    /// NCCL_SOCKET_IFNAME: the interface carrying the nodes' addresses (bootstrap traffic).
    /// Default: the shape's published value, else `^lo,docker`.
    #[arg(long, value_name = "IFNAME")]
    pub socket_ifname: Option<String>,
    /// The training script (and nothing else; add its arguments in the output).
    #[arg(long, default_value = "train.py", value_name = "SCRIPT")]
    pub script: String,
    /// Rendezvous ID (default: the placement's job name, else `railyard`).
    #[arg(long, value_name = "ID")]
    pub rdzv_id: Option<String>,
    /// Container name the Kubernetes patch targets.
    #[arg(long, default_value = "trainer", value_name = "NAME")]
    pub container: String,
    /// Take the NCCL settings `place --network-aware` advised for this placement (its
    /// `network.nccl_advice`, e.g. more QPs per connection where ECMP collisions are predicted)
    /// into every pod's environment; explicit flags such as --qps still win.
    #[arg(long)]
    pub network_aware: bool,
    #[command(flatten)]
    pub training: crate::args::TrainingArgs,
    /// Only the pods on this node (e.g. to write one node's env file); not with `hostfile`.
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
}

/// `launch`.
pub fn launch(args: &LaunchArgs) -> Result<String, CliError> {
    // Written into the patch's `containers[].name`, where the API server wants a DNS label;
    // a patch naming a container that cannot exist would merge into nothing.
    formats::names::check_dns_label(&args.container).map_err(|why| {
        CliError::Usage(format!(
            "--container: {why}; a Kubernetes container name is one"
        ))
    })?;
    let training = args.training.training()?;
    let cluster = load_cluster(&args.cluster)?;
    let placement_file = args.placement.display().to_string();
    let placement_text = read_text(&args.placement)?;
    let placement: PlacementFile = parse_typed(&placement_file, &placement_text)?;
    let pods = placement::resolve(&placement_file, &placement, &cluster)?;
    let (addresses, address_source) = match &args.addresses {
        Some(path) => {
            let file = path.display().to_string();
            (parse_addresses(&file, &read_text(path)?)?, file)
        }
        None => (BTreeMap::new(), args.cluster.cluster.clone()),
    };
    let options = LaunchOptions {
        port: args.port,
        qps: args.qps,
        hca_prefix: args.hca_prefix.clone(),
        hca: args.hca.clone(),
        socket_ifname: args.socket_ifname.clone(),
        script: args.script.clone(),
        rdzv_id: args
            .rdzv_id
            .clone()
            .or(placement.job.clone())
            .unwrap_or_else(|| "railyard".to_owned()),
        advice: match (&placement.network, args.network_aware) {
            (Some(n), true) => n
                .nccl_advice
                .iter()
                .map(|a| (a.name.clone(), a.value.clone()))
                .collect(),
            (None, true) => {
                return Err(CliError::input(
                    &placement_file,
                    "--network-aware: the placement has no `network` section; write it with `railyard place --network-aware`",
                ))
            }
            (_, false) => Vec::new(),
        },
        training,
    };
    let mut plan = plan(
        &cluster,
        &pods,
        &addresses,
        &options,
        &placement_file,
        &address_source,
    )?;
    if let Some(node) = &args.node {
        if args.format == LaunchFormat::Hostfile {
            return Err(CliError::input(
                "--node",
                "a hostfile lists every node; drop --node",
            ));
        }
        plan.agents.retain(|a| &a.node == node);
        if plan.agents.is_empty() {
            return Err(CliError::input(
                &placement_file,
                format!("--node {node}: no pod of the placement is on this node"),
            ));
        }
    }
    Ok(match args.format {
        LaunchFormat::Shell => render_shell(&plan),
        LaunchFormat::Env => render_env(&plan),
        LaunchFormat::K8sPatch => render_k8s_patch(&plan, &args.container),
        LaunchFormat::Hostfile => render_hostfile(&plan),
    })
}
