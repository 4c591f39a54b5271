//! The simulator's policy strings (`simulate --policy`, `--compare`):
//! `ORDER[+TOPOLOGY][+network]`, e.g. `fifo`, `best-effort+required:tier0`,
//! `fifo+preferred:tier1+network`, `tiresias:3600:36000:promote=8+preferred:tier0`, read into a
//! `sim::engine::Policy` against a cluster's levels and tiers.

use sim::engine::{Order, Policy, TopologyMode};
use sim::policies::Tiresias;
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
        "srtf" => Order::Srtf,
        "sjf" => Order::Sjf,
        o if o == "tiresias" || o.starts_with("tiresias:") => {
            Order::Tiresias(parse_tiresias(o).map_err(|m| bad(format!("`{spec}`: {m}")))?)
        }
        o => {
            return Err(bad(format!(
                "`{spec}`: unknown order `{o}`; expected fifo, best-effort, fair-share, tiresias[:T1:T2…][:promote=N], srtf or sjf"
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

/// Tiresias' options after `tiresias`, each after a `:`: queue thresholds in attained
/// GPU-seconds (whole, above 0, strictly ascending; `:` not `,`, which separates `--compare`
/// policies) and last, optionally, `promote=N` (PROMOTEKNOB, 0 = no starvation guard); defaults
/// from [`Tiresias::default`]. E.g. `tiresias:3600:36000:promote=8`.
fn parse_tiresias(order: &str) -> Result<Tiresias, String> {
    let mut t = Tiresias::default();
    let parts: Vec<&str> = order.split(':').skip(1).collect();
    let (thresholds, promote) = match parts.split_last() {
        Some((last, rest)) if last.starts_with("promote=") => (rest, Some(*last)),
        _ => (&parts[..], None),
    };
    if !thresholds.is_empty() {
        let mut list: Vec<u64> = Vec::new();
        for v in thresholds {
            if v.starts_with("promote=") {
                return Err(format!(
                    "tiresias `{v}` must be the last option (after the thresholds), given once"
                ));
            }
            if let Some((name, _)) = v.split_once('=') {
                return Err(format!(
                    "unknown tiresias option `{name}`; expected queue thresholds, then promote=N"
                ));
            }
            let x = v.trim().parse::<u64>().ok().filter(|&x| x > 0).ok_or_else(|| {
                format!("tiresias threshold `{v}` is not a whole number of GPU-seconds above 0; expected e.g. tiresias:3600:36000[:promote=8]")
            })?;
            if let Some(&last) = list.last() {
                if x <= last {
                    return Err(format!(
                        "tiresias thresholds must be strictly ascending; `{x}` follows `{last}`"
                    ));
                }
            }
            list.push(x);
        }
        t.thresholds_gpu_s = list;
    }
    if let Some(p) = promote {
        let v = &p["promote=".len()..];
        t.promote_knob = v.parse::<u32>().map_err(|_| {
            format!("tiresias promote=`{v}` is not a whole number; expected e.g. promote=8 (0: no starvation guard)")
        })?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        topology::build_from_spec(&topology::examples::oci_h100(256)).unwrap()
    }

    #[test]
    fn literature_orders() {
        let c = cluster();
        let order = |s: &str| parse_policy(s, &c, "--policy").map(|p| p.order);
        assert_eq!(order("srtf").unwrap(), Order::Srtf);
        assert_eq!(order("sjf").unwrap(), Order::Sjf);
        assert_eq!(
            order("tiresias").unwrap(),
            Order::Tiresias(Tiresias::default())
        );
        let t = |thresholds_gpu_s: Vec<u64>, promote_knob| {
            Order::Tiresias(Tiresias {
                thresholds_gpu_s,
                promote_knob,
            })
        };
        assert_eq!(
            order("tiresias:3600:36000").unwrap(),
            t(vec![3600, 36000], 8)
        );
        assert_eq!(order("tiresias:100:promote=0").unwrap(), t(vec![100], 0));
        assert_eq!(order("tiresias:promote=2").unwrap(), t(vec![3600], 2));
    }

    #[test]
    fn bad_tiresias_options_are_one_line_errors() {
        let c = cluster();
        for (spec, expect) in [
            ("tiresias:", "`` is not a whole number"),
            (
                "tiresias:0",
                "`0` is not a whole number of GPU-seconds above 0",
            ),
            ("tiresias:10:5", "strictly ascending; `5` follows `10`"),
            ("tiresias:100:knob=2", "unknown tiresias option `knob`"),
            (
                "tiresias:promote=1:100",
                "`promote=1` must be the last option",
            ),
            ("tiresias:10,20", "`10,20` is not a whole number"),
            ("tiresias:1e3", "`1e3` is not a whole number"),
            (
                "tiresias:100:promote=-1",
                "promote=`-1` is not a whole number",
            ),
            ("tiresia", "unknown order `tiresia`"),
        ] {
            let e = parse_policy(spec, &c, "--policy").unwrap_err().to_string();
            assert!(e.contains(expect), "{spec}: {e}");
            assert!(e.contains("--policy"), "{spec}: {e}");
            assert!(!e.contains('\n'), "{spec}: {e}");
        }
    }
}
