//! Hot links summarised: link ports grouped by tier and direction and ranked, instead of a list
//! of the first ten ports at 100%.

use std::collections::BTreeMap;

use topology::Endpoint;

use crate::model::Fabric;
use crate::routing::endpoint_name;

/// The loaded link ports of one tier in one direction.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct HotLinkGroup {
    /// Tier of the links' upper switch (0: NIC to leaf).
    pub tier: u8,
    /// Up (towards the upper switch) or down.
    pub up: bool,
    /// Ports of this tier and direction carrying any load.
    pub loaded_ports: usize,
    /// Of those, ports at the group's highest utilisation (within 1e-9).
    pub ports_at_max: usize,
    /// Highest utilisation in the group.
    pub max_utilization: f64,
    /// Mean utilisation over the loaded ports.
    pub mean_utilization: f64,
    /// The first port at the highest utilisation, `from -> to` (with `:pN` for a port of a
    /// multi-port link).
    pub example: String,
}

/// Per group while scanning: loaded ports, sum of utilisations, max, ports at max, first
/// resource at max.
type Tally = (usize, f64, f64, usize, u32);

/// Link ports with load, grouped by tier and direction, hottest group first (ties: lower
/// tier, then up before down). NVLink is not included.
pub fn hot_link_groups(fabric: &Fabric<'_>, load_gbps: &[f64]) -> Vec<HotLinkGroup> {
    let cluster = fabric.cluster();
    let cap = fabric.capacity();
    let ports = fabric.ports();
    let mut groups: BTreeMap<(u8, bool), Tally> = BTreeMap::new();
    for r in 0..ports.n_ports() * 2 {
        let (l, c) = (load_gbps[r as usize], cap[r as usize]);
        if l <= 0.0 || c <= 0.0 {
            continue;
        }
        let u = l / c;
        let (link, _, up) = ports.locate(r);
        let g = groups.entry((cluster.link(link).tier, !up)).or_insert((
            0,
            0.0,
            f64::NEG_INFINITY,
            0,
            r,
        ));
        g.0 += 1;
        g.1 += u;
        if u > g.2 + 1e-9 {
            g.2 = u;
            g.3 = 1;
            g.4 = r;
        } else if (u - g.2).abs() <= 1e-9 {
            g.3 += 1;
        }
    }
    let mut out: Vec<HotLinkGroup> = groups
        .into_iter()
        .map(|((tier, down), (n, sum, max, at_max, r))| {
            let (link_id, port, up) = ports.locate(r);
            let link = cluster.link(link_id);
            let mut lower = endpoint_name(cluster, link.lower);
            if link.ports > 1 {
                lower.push_str(&format!(":p{port}"));
            }
            let upper = endpoint_name(cluster, Endpoint::Switch(link.upper));
            let example = if up {
                format!("{lower} -> {upper}")
            } else {
                format!("{upper} -> {lower}")
            };
            HotLinkGroup {
                tier,
                up: !down,
                loaded_ports: n,
                ports_at_max: at_max,
                max_utilization: max,
                mean_utilization: sum / n as f64,
                example,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.max_utilization
            .total_cmp(&a.max_utilization)
            .then(a.tier.cmp(&b.tier))
            .then(b.up.cmp(&a.up))
    });
    out
}
