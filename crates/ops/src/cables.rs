//! `railyard cables plan`: the cable each link of a cluster needs — passive DAC within reach,
//! active copper (ACC/AEC) up to 5 m, optics beyond — with a bill of materials and a warning for
//! every link a passive DAC cannot reach.
//!
//! Every reach and power figure lives in [`GENERATIONS`] and the constants next to it, with
//! their sources. Lengths come from a rack layout file ([`Layout`]) or from per-tier defaults
//! ([`DEFAULT_TIER_LENGTH_M`]). A logical link of the model is a bundle of cables at the NIC port
//! speed: a rail of 2 × 200G ports is two 200G cables; a leaf-to-spine link of 6.4 Tb/s at 400G
//! ports is sixteen.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use topology::{Cluster, Endpoint, Link};

use formats::input::parse_typed;
use formats::FormatError;
use report::fmt::{fmt_count, fmt_gbps, trim_float};

// ---------------------------------------------------------------------------------------------
// The reach and power table: the only place these figures appear.

/// Reach and power of the cables for one signalling generation (lane rate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Generation {
    /// Name, e.g. `400G/NDR`.
    pub name: &'static str,
    /// Ports up to this speed use this generation, Gb/s.
    pub max_port_gbps: f64,
    /// Lane rate, Gb/s.
    pub lane_gbps: u32,
    /// Longest passive DAC, m.
    pub dac_m: f64,
    /// Longest passive DAC with a splitter (thicker gauge), m, where one exists.
    pub dac_splitter_m: Option<f64>,
    /// Power of an active copper cable (ACC/AEC) per end, W (approximate).
    pub active_copper_w: f64,
    /// Power of a multimode (SR) transceiver or AOC end, W (approximate).
    pub sr_w: f64,
    /// Power of a single-mode (DR) transceiver, W (approximate).
    pub dr_w: f64,
    /// Where the figures come from.
    pub source: &'static str,
}

/// Cable generations by lane rate, slowest first. Sources:
/// - DESIGN.md "Passive DAC reach": 400G/NDR ≤ 2 m (≤ 3 m with a splitter, thicker gauge);
///   200G/HDR ≤ 2 m; ACC 3–5 m; beyond, AOC or optics: SR4 ≤ 50 m ~8–9 W per end, DR4 ≤ 100 m
///   ~9 W; the older "DAC does 5 m" rule held for EDR/100G.
/// - IEEE 802.3bj (100GBASE-CR4, 25 Gb/s lanes): twinaxial copper reach "up to at least 5 m".
/// - 800G/XDR (200 Gb/s lanes, e.g. ConnectX-8 / Quantum-X800): railyard's figure is **1 m**,
///   the IEEE P802.3dj objective for 200 Gb/s-per-lane copper cable assemblies ("at least 1 m");
///   longer vendor parts may exist, railyard plans with the standard's figure.
/// - Power per end other than the 400G optics (DESIGN.md) is an approximation from typical
///   vendor data sheets for that module class (QSFP28, QSFP56, OSFP), to size the power
///   budget, not to replace the data sheet of the part bought.
pub const GENERATIONS: &[Generation] = &[
    Generation {
        name: "100G/EDR",
        max_port_gbps: 100.0,
        lane_gbps: 25,
        dac_m: 5.0,
        dac_splitter_m: None,
        active_copper_w: 1.0,
        sr_w: 2.5,
        dr_w: 3.5,
        source: "IEEE 802.3bj 100GBASE-CR4 (>= 5 m); DESIGN.md (EDR/100G DAC 5 m)",
    },
    Generation {
        name: "200G/HDR",
        max_port_gbps: 200.0,
        lane_gbps: 50,
        dac_m: 2.0,
        dac_splitter_m: None,
        active_copper_w: 1.5,
        sr_w: 5.0,
        dr_w: 5.5,
        source: "DESIGN.md (200G/HDR DAC <= 2 m)",
    },
    Generation {
        name: "400G/NDR",
        max_port_gbps: 400.0,
        lane_gbps: 100,
        dac_m: 2.0,
        dac_splitter_m: Some(3.0),
        active_copper_w: 1.5,
        sr_w: 8.5,
        dr_w: 9.0,
        source: "DESIGN.md (400G/NDR DAC <= 2 m, <= 3 m splitter; SR4 ~8-9 W, DR4 ~9 W)",
    },
    Generation {
        name: "800G/XDR",
        max_port_gbps: 800.0,
        lane_gbps: 200,
        dac_m: 1.0,
        dac_splitter_m: None,
        active_copper_w: 3.0,
        sr_w: 16.0,
        dr_w: 17.0,
        source: "IEEE P802.3dj objective: 200 Gb/s-per-lane copper >= 1 m",
    },
];

/// Longest active copper cable (ACC/AEC), m (DESIGN.md: ACC 3–5 m).
pub const ACTIVE_COPPER_M: f64 = 5.0;
/// Longest multimode (SR4) optical link or AOC, m (DESIGN.md).
pub const SR_M: f64 = 50.0;
/// Longest single-mode (DR4) optical link planned, m (DESIGN.md).
pub const DR_M: f64 = 100.0;

/// Cable lengths railyard orders, m: the next one at or above the run is bought.
pub const COPPER_LENGTHS_M: &[f64] = &[0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0];
/// Fibre / AOC lengths, m.
pub const FIBRE_LENGTHS_M: &[f64] = &[
    1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0, 70.0, 100.0,
];

/// Assumed run length per tier when no layout places both ends, m: tier 0 (NIC to leaf) within
/// a rack or to the next one; tier 1 (leaf to spine) across a row; higher tiers across a hall.
pub const DEFAULT_TIER_LENGTH_M: &[f64] = &[3.0, 20.0, 60.0];

/// The generation of a port speed: the first whose `max_port_gbps` covers it (the fastest for
/// anything above).
pub fn generation(port_gbps: f64) -> &'static Generation {
    GENERATIONS
        .iter()
        .find(|g| port_gbps <= g.max_port_gbps)
        .unwrap_or(&GENERATIONS[GENERATIONS.len() - 1])
}

/// The kind of cable a run needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CableKind {
    /// Passive direct-attach copper.
    PassiveDac,
    /// Passive splitter DAC (one switch port to two NIC ports, thicker gauge); counted in legs.
    PassiveDacSplitter,
    /// Active copper (ACC / AEC).
    ActiveCopper,
    /// Multimode optics (SR4 transceivers + MMF) or an AOC of the same reach.
    MultimodeOptics,
    /// Single-mode optics (DR4 transceivers + SMF).
    SinglemodeOptics,
    /// Longer than anything in the table.
    NoneInTable,
}

impl CableKind {
    /// How the cable is named in tables and the bill of materials.
    pub fn label(self) -> &'static str {
        match self {
            CableKind::PassiveDac => "passive DAC",
            CableKind::PassiveDacSplitter => "passive DAC splitter (legs)",
            CableKind::ActiveCopper => "ACC/AEC active copper",
            CableKind::MultimodeOptics => "SR4 optics + MMF (or AOC)",
            CableKind::SinglemodeOptics => "DR4 optics + SMF",
            CableKind::NoneInTable => "none in table",
        }
    }
}

/// The cable for a run of `length_m` at `port_gbps`, the length to buy, and the power per end.
/// `to_nic`: the run ends at a NIC, where a splitter DAC from a switch port may reach further.
pub fn choose_cable(port_gbps: f64, length_m: f64, to_nic: bool) -> (CableKind, Option<f64>, f64) {
    let g = generation(port_gbps);
    let buy = |lengths: &[f64]| lengths.iter().copied().find(|&l| l + 1e-9 >= length_m);
    if length_m <= g.dac_m + 1e-9 {
        (CableKind::PassiveDac, buy(COPPER_LENGTHS_M), 0.0)
    } else if to_nic && g.dac_splitter_m.is_some_and(|m| length_m <= m + 1e-9) {
        (CableKind::PassiveDacSplitter, buy(COPPER_LENGTHS_M), 0.0)
    } else if length_m <= ACTIVE_COPPER_M + 1e-9 {
        (
            CableKind::ActiveCopper,
            buy(COPPER_LENGTHS_M),
            g.active_copper_w,
        )
    } else if length_m <= SR_M + 1e-9 {
        (CableKind::MultimodeOptics, buy(FIBRE_LENGTHS_M), g.sr_w)
    } else if length_m <= DR_M + 1e-9 {
        (CableKind::SinglemodeOptics, buy(FIBRE_LENGTHS_M), g.dr_w)
    } else {
        (CableKind::NoneInTable, None, 0.0)
    }
}

// ---------------------------------------------------------------------------------------------
// The rack layout file

/// A rack layout: where racks stand and what is in them. Runs between racks are the Manhattan
/// distance of their positions plus `overhead_m`; runs inside one rack are `in_rack_m`.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// Racks by name: floor position in metres.
    pub racks: BTreeMap<String, RackPosition>,
    /// Node or switch name (or a prefix ending in `*`) → rack. Exact names win over prefixes;
    /// the longest prefix wins among prefixes.
    #[serde(default)]
    pub placement: BTreeMap<String, String>,
    /// Length of a run inside one rack, m.
    #[serde(default = "default_in_rack")]
    pub in_rack_m: f64,
    /// Added to every run between racks (up into the tray, down, slack), m.
    #[serde(default = "default_overhead")]
    pub overhead_m: f64,
    /// Per-tier lengths for links whose ends are not both placed, m (tier 0 first); missing
    /// tiers use railyard's defaults.
    #[serde(default)]
    pub tier_length_m: Vec<f64>,
}

/// A rack's position on the floor.
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RackPosition {
    /// Along the row, m.
    pub x: f64,
    /// Across rows, m.
    pub y: f64,
}

fn default_in_rack() -> f64 {
    2.0
}

fn default_overhead() -> f64 {
    3.0
}

/// Parse and check a layout file's text (`file` names it in errors).
pub fn parse_layout(file: &str, text: &str) -> Result<Layout, FormatError> {
    let layout: Layout = parse_typed(file, text)?;
    layout.validate(file)?;
    Ok(layout)
}

impl Layout {
    /// Check the layout: finite non-negative figures, every placement names a known rack.
    pub fn validate(&self, file: &str) -> Result<(), FormatError> {
        let bad = |v: f64| !(v.is_finite() && (0.0..=1.0e5).contains(&v));
        for (name, r) in &self.racks {
            if bad(r.x.abs()) || bad(r.y.abs()) {
                return Err(FormatError::input(
                    file,
                    format!("racks.{name}: expected finite x and y in metres"),
                ));
            }
        }
        for (what, rack) in &self.placement {
            if !self.racks.contains_key(rack) {
                return Err(FormatError::input(
                    file,
                    format!("placement.{what}: rack \"{rack}\" is not under racks"),
                ));
            }
        }
        for (key, v) in [
            ("in_rack_m", self.in_rack_m),
            ("overhead_m", self.overhead_m),
        ] {
            if bad(v) {
                return Err(FormatError::input(
                    file,
                    format!("{key}: expected a length in metres, got {v}"),
                ));
            }
        }
        for (i, &v) in self.tier_length_m.iter().enumerate() {
            if bad(v) || v == 0.0 {
                return Err(FormatError::input(
                    file,
                    format!("tier_length_m[{i}]: expected a positive length in metres, got {v}"),
                ));
            }
        }
        Ok(())
    }

    fn rack_of(&self, name: &str) -> Option<&RackPosition> {
        // The longest prefix first: one map look-up per prefix of the name, not a scan of every
        // placement per link (which is links × placements on a large cluster).
        let rack = self.placement.get(name).or_else(|| {
            let mut key = String::with_capacity(name.len() + 1);
            name.char_indices()
                .map(|(i, _)| i)
                .chain([name.len()])
                .rev()
                .find_map(|end| {
                    key.clear();
                    key.push_str(&name[..end]);
                    key.push('*');
                    self.placement.get(&key)
                })
        })?;
        self.racks.get(rack)
    }
}

// ---------------------------------------------------------------------------------------------
// The plan

/// One link's cabling.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkCables {
    /// Switch tier of the upper end (0 = NIC to leaf).
    pub tier: u8,
    /// Lower end: `node/rail N` or a switch name.
    pub lower: String,
    /// Upper switch.
    pub upper: String,
    /// Capacity of the logical link, Gb/s.
    pub link_gbps: f64,
    /// Cables in the bundle.
    pub cables: u32,
    /// Speed of one cable, Gb/s.
    pub cable_gbps: f64,
    /// Run length, m.
    pub length_m: f64,
    /// Whether the length came from the layout (else the tier default).
    pub measured: bool,
    /// The cable.
    pub cable: CableKind,
    /// Length to buy, m (none when nothing in the table reaches).
    pub buy_length_m: Option<f64>,
    /// Power per cable end, W.
    pub power_per_end_w: f64,
}

/// A line of the bill of materials.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BomLine {
    /// Cable kind.
    pub cable: CableKind,
    /// Speed, Gb/s.
    pub cable_gbps: f64,
    /// Length to buy, m.
    pub length_m: Option<f64>,
    /// How many.
    pub count: u64,
    /// Power per end, W.
    pub power_per_end_w: f64,
    /// Power of all of them, both ends, W.
    pub power_total_w: f64,
}

/// The whole plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CablePlan {
    /// Every link.
    pub links: Vec<LinkCables>,
    /// Bill of materials by kind, speed and length.
    pub bom: Vec<BomLine>,
    /// Links a passive DAC cannot reach, grouped, one line each.
    pub warnings: Vec<String>,
}

fn endpoint_name(cluster: &Cluster, e: Endpoint) -> String {
    match e {
        Endpoint::Nic { node, rail } => format!("{}/rail {rail}", cluster.node(node).name),
        Endpoint::Switch(s) => cluster.switch(s).name.clone(),
    }
}

fn endpoint_device(cluster: &Cluster, e: Endpoint) -> &str {
    match e {
        Endpoint::Nic { node, .. } => &cluster.node(node).name,
        Endpoint::Switch(s) => &cluster.switch(s).name,
    }
}

fn tier_default(layout: Option<&Layout>, tier: u8) -> f64 {
    let t = usize::from(tier);
    layout
        .and_then(|l| l.tier_length_m.get(t).copied())
        .unwrap_or_else(|| {
            DEFAULT_TIER_LENGTH_M
                .get(t)
                .copied()
                .unwrap_or(DEFAULT_TIER_LENGTH_M[DEFAULT_TIER_LENGTH_M.len() - 1])
        })
}

fn run_length(cluster: &Cluster, link: &Link, layout: Option<&Layout>) -> (f64, bool) {
    if let Some(l) = layout {
        let a = l.rack_of(endpoint_device(cluster, link.lower));
        let b = l.rack_of(&cluster.switch(link.upper).name);
        if let (Some(a), Some(b)) = (a, b) {
            let d = (a.x - b.x).abs() + (a.y - b.y).abs();
            let len = if d < 1e-9 {
                l.in_rack_m
            } else {
                d + l.overhead_m
            };
            return (len, true);
        }
    }
    (tier_default(layout, link.tier), false)
}

/// Plan the cables of every link. Pure: the cluster and an optional layout in, the plan out.
pub fn plan(cluster: &Cluster, layout: Option<&Layout>) -> CablePlan {
    let fabric_port_gbps = cluster
        .nodes
        .iter()
        .map(|n| n.nics.port_gbps)
        .fold(0.0_f64, f64::max);
    let mut links = Vec::with_capacity(cluster.links.len());
    for link in &cluster.links {
        let cable_gbps = match link.lower {
            Endpoint::Nic { node, .. } => cluster.node(node).nics.port_gbps,
            Endpoint::Switch(_) => fabric_port_gbps,
        };
        let cable_gbps = if cable_gbps > 0.0 {
            cable_gbps
        } else {
            link.gbps
        };
        let cables = ((link.gbps / cable_gbps).round() as u32).max(1);
        let (length_m, measured) = run_length(cluster, link, layout);
        let to_nic = matches!(link.lower, Endpoint::Nic { .. });
        let (cable, buy_length_m, power_per_end_w) = choose_cable(cable_gbps, length_m, to_nic);
        links.push(LinkCables {
            tier: link.tier,
            lower: endpoint_name(cluster, link.lower),
            upper: cluster.switch(link.upper).name.clone(),
            link_gbps: link.gbps,
            cables,
            cable_gbps,
            length_m,
            measured,
            cable,
            buy_length_m,
            power_per_end_w,
        });
    }

    // Bill of materials: (kind, speed, length) → count.
    let mut bom: BTreeMap<(CableKind, u64, Option<u64>), (u64, f64)> = BTreeMap::new();
    for l in &links {
        let key = (
            l.cable,
            (l.cable_gbps * 1000.0) as u64,
            l.buy_length_m.map(|m| (m * 1000.0) as u64),
        );
        let e = bom.entry(key).or_insert((0, l.power_per_end_w));
        e.0 += u64::from(l.cables);
    }
    let bom = bom
        .into_iter()
        .map(|((cable, gbps, len), (count, w))| BomLine {
            cable,
            cable_gbps: gbps as f64 / 1000.0,
            length_m: len.map(|m| m as f64 / 1000.0),
            count,
            power_per_end_w: w,
            power_total_w: w * 2.0 * count as f64,
        })
        .collect();

    // Warnings: links beyond passive DAC reach, grouped by tier, speed and cable.
    /// (count, shortest, longest, index of an example link) per (tier, speed, cable).
    type Group = (u64, f64, f64, usize);
    let mut groups: BTreeMap<(u8, u64, CableKind), Group> = BTreeMap::new();
    for (i, l) in links.iter().enumerate() {
        if matches!(
            l.cable,
            CableKind::PassiveDac | CableKind::PassiveDacSplitter
        ) {
            continue;
        }
        let e = groups
            .entry((l.tier, (l.cable_gbps * 1000.0) as u64, l.cable))
            .or_insert((0, f64::INFINITY, 0.0, i));
        e.0 += 1;
        e.1 = e.1.min(l.length_m);
        e.2 = e.2.max(l.length_m);
    }
    let warnings = groups
        .into_iter()
        .map(|((tier, gbps, cable), (n, min, max, example))| {
            let g = generation(gbps as f64 / 1000.0);
            let ex = &links[example];
            let lengths = if (max - min).abs() < 1e-9 {
                format!("{} m", trim_float(max))
            } else {
                format!("{}–{} m", trim_float(min), trim_float(max))
            };
            let splitter = g
                .dac_splitter_m
                .filter(|_| tier == 0)
                .map(|m| format!(", {} m with a splitter", trim_float(m)))
                .unwrap_or_default();
            format!(
                "{} tier-{tier} link{} at {} per cable ({lengths}) beyond passive DAC reach ({} \
                 m for {}{splitter}): {}; e.g. {} → {}",
                fmt_count(n),
                if n == 1 { "" } else { "s" },
                fmt_gbps(gbps as f64 / 1000.0),
                trim_float(g.dac_m),
                g.name,
                if cable == CableKind::NoneInTable {
                    format!(
                        "longer than {} m, the longest run in the table: move the racks or \
                         plan long-reach optics",
                        trim_float(DR_M)
                    )
                } else {
                    format!("plan {}", cable.label())
                },
                ex.lower,
                ex.upper
            )
        })
        .collect();
    CablePlan {
        links,
        bom,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_md_reach_figures() {
        // Passive DAC: 100G/EDR 5 m, 200G/HDR 2 m, 400G/NDR 2 m; ACC to 5 m; SR4 50 m; DR4 100 m.
        assert_eq!(choose_cable(100.0, 5.0, false).0, CableKind::PassiveDac);
        assert_eq!(choose_cable(200.0, 2.0, false).0, CableKind::PassiveDac);
        assert_eq!(choose_cable(200.0, 2.5, false).0, CableKind::ActiveCopper);
        assert_eq!(choose_cable(400.0, 2.0, false).0, CableKind::PassiveDac);
        assert_eq!(choose_cable(400.0, 3.0, false).0, CableKind::ActiveCopper);
        assert_eq!(
            choose_cable(400.0, 3.0, true).0,
            CableKind::PassiveDacSplitter
        );
        assert_eq!(choose_cable(200.0, 3.0, true).0, CableKind::ActiveCopper);
        assert_eq!(choose_cable(400.0, 5.0, false).0, CableKind::ActiveCopper);
        assert_eq!(choose_cable(800.0, 1.5, false).0, CableKind::ActiveCopper);
        let (kind, buy, w) = choose_cable(400.0, 20.0, false);
        assert_eq!(
            (kind, buy, w),
            (CableKind::MultimodeOptics, Some(20.0), 8.5)
        );
        let (kind, buy, w) = choose_cable(400.0, 60.0, false);
        assert_eq!(
            (kind, buy, w),
            (CableKind::SinglemodeOptics, Some(70.0), 9.0)
        );
        assert_eq!(choose_cable(400.0, 150.0, false).0, CableKind::NoneInTable);
        assert_eq!(choose_cable(400.0, 1.2, false).1, Some(1.5));
    }

    #[test]
    fn generations_by_port_speed() {
        assert_eq!(generation(100.0).name, "100G/EDR");
        assert_eq!(generation(200.0).name, "200G/HDR");
        assert_eq!(generation(400.0).name, "400G/NDR");
        assert_eq!(generation(800.0).name, "800G/XDR");
        assert_eq!(generation(1600.0).name, "800G/XDR");
    }
}
