//! `trace synth`'s options checked together: the profile by name, a positive job count,
//! arrivals either at an offered load of a cluster's GPUs or at a rate, and a cluster whose GPUs
//! can price the profile's layout jobs.

use sim::synth::{profile, Arrivals, Profile, PROFILES};
use topology::Cluster;

/// GPUs per node without `--cluster`: Acme Seren's nodes hold 8 GPUs (Hu et al., NSDI '24, §2).
pub const DEFAULT_GPUS_PER_NODE: u32 = 8;

/// The profile, arrivals and GPUs per node (the most on any node of `cluster`, else
/// [`DEFAULT_GPUS_PER_NODE`]) `trace synth` options ask for, or the one-line usage error.
/// `cluster` is `--cluster` when given; `load` defaults to 0.8 with a cluster.
pub fn check_options(
    profile_name: &str,
    jobs: usize,
    cluster: Option<&Cluster>,
    load: Option<f64>,
    rate: Option<f64>,
) -> Result<(&'static Profile, Arrivals, u32), String> {
    let cluster_gpus = cluster.map(Cluster::gpu_count);
    let gpus_per_node = cluster
        .and_then(|c| c.nodes.iter().map(|n| n.gpus).max())
        .filter(|&g| g > 0)
        .unwrap_or(DEFAULT_GPUS_PER_NODE);
    let Some(profile) = profile(profile_name) else {
        let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
        return Err(format!(
            "--profile: unknown profile \"{profile_name}\", expected one of {}",
            names.join(", ")
        ));
    };
    if jobs == 0 {
        return Err("--jobs: expected at least 1 job".into());
    }
    if load.is_some() && cluster_gpus.is_none() {
        return Err("--load: needs --cluster (the GPUs the load is a share of)".into());
    }
    let arrivals = match (cluster_gpus, rate) {
        (Some(cluster_gpus), None) => {
            let load = load.unwrap_or(0.8);
            if !(load > 0.0 && load.is_finite()) {
                return Err(format!("--load: expected a positive share, got {load}"));
            }
            Arrivals::Load { cluster_gpus, load }
        }
        (None, Some(rate)) if rate > 0.0 && rate.is_finite() => Arrivals::PerHour(rate),
        (None, Some(rate)) => {
            return Err(format!(
                "--rate: expected a positive number of jobs per hour, got {rate}"
            ))
        }
        _ => {
            return Err(
                "trace synth: give either --cluster (with --load, default 0.8) or --rate".into(),
            )
        }
    };
    if let Some(c) = cluster {
        check_layout_gpus(profile, c)?;
    }
    Ok((profile, arrivals, gpus_per_node))
}

/// A profile whose classes give jobs a model and layout (bf16, the layouts' precision) needs
/// GPUs with a bf16 peak and a published efficiency, or `simulate` would refuse every such job
/// of the trace it writes.
fn check_layout_gpus(profile: &Profile, cluster: &Cluster) -> Result<(), String> {
    if profile
        .classes
        .iter()
        .all(|c| matches!(c.layout, sim::synth::LayoutRule::None))
    {
        return Ok(());
    }
    match layout::compute::unpriced_arch(cluster, layout::Precision::Bf16) {
        Some(arch) => Err(format!(
            "--cluster: {arch:?} GPUs have no bf16 peak or published efficiency in railyard, so the \
             `{}` profile's layout jobs could not be priced; expected a cluster of A100 or H100 GPUs",
            profile.name
        )),
        None => Ok(()),
    }
}
