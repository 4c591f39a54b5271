//! The simulator's policy strings (`simulate --policy`, `--compare`):
//! `ORDER[+TOPOLOGY][+network]`, e.g. `fifo`, `best-effort+required:tier0`,
//! `fifo+preferred:tier1+network`, read into a `sim::engine::Policy` against a cluster's levels
//! and tiers.

use sim::engine::{Order, Policy, TopologyMode};
use topology::Cluster;

use crate::error::FormatError;

/// Parse a policy spec (`fair-share+required:tier0`); `flag` (`--policy` or `--compare`) is
/// the flag errors name.
pub fn parse_policy(spec: &str, cluster: &Cluster, flag: &str) -> Result<Policy, FormatError> {
    let bad = |m: String| FormatError::input(flag, m);
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(bad(
            "empty policy; expected ORDER[+TOPOLOGY], e.g. fifo or best-effort+required:tier0"
                .to_owned(),
        ));
    }
    let (order_s, topo_s) = spec.split_once('+').unwrap_or((spec, "none"));
    // `+network` ends the spec: network-aware placement within the topology mode before it.
    let (topo_s, network_aware) = match topo_s.strip_suffix("+network") {
        Some(t) => (t, true),
        None if topo_s == "network" => ("none", true),
        None => (topo_s, false),
    };
    let order = match order_s {
        "fifo" => Order::Fifo,
        "best-effort" => Order::BestEffortFifo,
        "fair-share" => Order::FairShare,
        o => {
            return Err(bad(format!(
                "`{spec}`: unknown order `{o}`; expected fifo, best-effort or fair-share"
            )))
        }
    };
    let level = |l: &str| -> Result<usize, FormatError> {
        if let Some(t) = l.strip_prefix("tier").and_then(|t| t.parse::<usize>().ok()) {
            return cluster
                .tiers
                .get(t)
                .and_then(|tier| tier.level)
                .ok_or_else(|| bad(format!("`{spec}`: tier {t} has no level in this cluster")));
        }
        cluster.level_by_label(l).ok_or_else(|| {
            bad(format!(
                "`{spec}`: unknown level `{l}`; expected tierN or one of {}",
                cluster
                    .levels
                    .iter()
                    .map(|x| x.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    };
    let topology = match topo_s.split_once(':') {
        None if topo_s == "none" => TopologyMode::None,
        Some(("preferred", l)) => TopologyMode::Preferred(level(l)?),
        Some(("required", l)) => TopologyMode::Required(level(l)?),
        _ => {
            return Err(bad(format!(
                "`{spec}`: expected none, preferred:LEVEL or required:LEVEL after `+`, optionally followed by +network"
            )))
        }
    };
    Ok(Policy {
        name: spec.to_owned(),
        order,
        topology,
        network_aware,
    })
}
