//! NCCL's structure and defaults as facts: channel counts, QPs per connection, the environment
//! variables that change them, and the tuner's per-algorithm and per-protocol constants.
//!
//! Every number here was read from NVIDIA/nccl at [`NCCL_SOURCE`]; the file and the constant
//! or function it comes from is named next to it. No NCCL code is reproduced: the rules are
//! restated in railyard's own terms.

use std::fmt;

/// The NCCL source the facts in this module were read from.
pub const NCCL_SOURCE: &str =
    "NVIDIA/nccl v2.30.7 (makefiles/version.mk), commit 5067397c2676d5aed50042fc39e5c8ee96eb0027";

/// Most channels a communicator has (`MAXCHANNELS`, src/include/device.h).
pub const MAX_CHANNELS: u32 = 64;

/// Most QPs per connection (`NCCL_IB_MAX_QPS`, src/transport/net_ib/common.h).
pub const MAX_QPS_PER_CONNECTION: u32 = 128;

/// A collective algorithm as `NCCL_ALGO` names it (serialised as NCCL prints it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Algorithm {
    /// Double binary tree over nodes, chains inside them (`NCCL_ALGO=Tree`).
    Tree,
    /// One ring per channel, each node entered once (`NCCL_ALGO=Ring`).
    Ring,
    /// Network SHARP: every GPU with a NIC a head, reductions in the switches
    /// (`NCCL_ALGO=CollNetDirect`; AllReduce, needs `NCCL_COLLNET_ENABLE=1` and SHARP switches).
    CollNetDirect,
    /// Network SHARP behind a chain inside each node (`NCCL_ALGO=CollNetChain`).
    CollNetChain,
    /// NVLink SHARP: reductions in the NVSwitches of one NVLink domain (`NCCL_ALGO=NVLS`); across
    /// nodes only together with CollNet.
    #[serde(rename = "NVLS")]
    Nvls,
    /// NVLink SHARP inside each node, a double binary tree between nodes
    /// (`NCCL_ALGO=NVLSTree`; several nodes only).
    #[serde(rename = "NVLSTree")]
    NvlsTree,
}

impl Algorithm {
    /// Every modelled algorithm, in NCCL's order (`NCCL_ALGO_TREE` = 0, `RING` = 1,
    /// `COLLNET_DIRECT` = 2, `COLLNET_CHAIN` = 3, `NVLS` = 4, `NVLS_TREE` = 5,
    /// src/include/device.h; PAT, 6, is not modelled).
    pub const ALL: [Algorithm; 6] = [
        Algorithm::Tree,
        Algorithm::Ring,
        Algorithm::CollNetDirect,
        Algorithm::CollNetChain,
        Algorithm::Nvls,
        Algorithm::NvlsTree,
    ];

    /// The name NCCL prints (`Tree`, `Ring`, `CollNetDirect`, `CollNetChain`, `NVLS`,
    /// `NVLSTree`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Tree => "Tree",
            Algorithm::Ring => "Ring",
            Algorithm::CollNetDirect => "CollNetDirect",
            Algorithm::CollNetChain => "CollNetChain",
            Algorithm::Nvls => "NVLS",
            Algorithm::NvlsTree => "NVLSTree",
        }
    }
}

/// A protocol as `NCCL_PROTO` names it (serialised as NCCL prints it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Protocol {
    /// Low latency: 8-byte stores of 4 bytes of data and a 4-byte flag.
    #[serde(rename = "LL")]
    Ll,
    /// 128-byte lines with 8 bytes of flags (120/128 of the line is data).
    #[serde(rename = "LL128")]
    Ll128,
    /// Bulk copies with a separate synchronisation.
    Simple,
}

impl Protocol {
    /// All protocols, in NCCL's order (`NCCL_PROTO_LL` = 0, `LL128` = 1, `SIMPLE` = 2).
    pub const ALL: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

    /// The name NCCL prints (`LL`, `LL128`, `Simple`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
            Protocol::Simple => "Simple",
        }
    }
}

/// The NCCL settings railyard models. `Default` is NCCL's default for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NcclConfig {
    /// `NCCL_IB_QPS_PER_CONNECTION`: QPs per network connection, each its own flow with its own
    /// RoCEv2 source port. Default 1 (`IbQpsPerConn`, src/transport/net_ib/connect.cc).
    pub qps_per_connection: u32,
    /// `NCCL_IB_SPLIT_DATA_ON_QPS`: split every message over all QPs (1) or send each message
    /// on one QP, round-robin (0). Default 0 (`IbSplitDataOnQps`,
    /// src/transport/net_ib/common.cc). Either way each QP carries 1/QPs of the bytes over time,
    /// so the rate model is the same; recorded for completeness.
    pub split_data_on_qps: bool,
    /// `NCCL_MIN_NCHANNELS` (unset: NCCL's own count; `MinNchannels`, src/graph/connect.cc).
    pub min_nchannels: Option<u32>,
    /// `NCCL_MAX_NCHANNELS` (unset: [`MAX_CHANNELS`]; `MaxNchannels`, src/graph/connect.cc).
    pub max_nchannels: Option<u32>,
    /// `NCCL_ALGO`: algorithms the tuner may pick, indexed by [`Algorithm`] in NCCL's order
    /// (default all; NVLS and CollNet still need the hardware and their switches below).
    pub algorithms: [bool; 6],
    /// `NCCL_PROTO`: protocols the tuner may pick (`[LL, LL128, Simple]`, default all).
    pub protocols: [bool; 3],
    /// `NCCL_NVLS_ENABLE`: 0 turns NVLink SHARP off; 1 and 2 (the default, "where the GPUs
    /// support multicast") leave it on where the NVLink domain has NVSwitches and Hopper or
    /// newer GPUs (`NvlsEnable`, src/transport/nvls.cc).
    pub nvls_enable: bool,
    /// `NCCL_COLLNET_ENABLE`: 1 lets NCCL use network SHARP (CollNet, and NVLS across nodes);
    /// default 0 (`CollnetEnable`, src/init.cc). It helps only where the switches have SHARP
    /// (`sharp: true` on the tiers the job crosses).
    pub collnet_enable: bool,
}

impl Default for NcclConfig {
    fn default() -> Self {
        Self {
            qps_per_connection: 1,
            split_data_on_qps: false,
            min_nchannels: None,
            max_nchannels: None,
            algorithms: [true; 6],
            protocols: [true, true, true],
            nvls_enable: true,
            collnet_enable: false,
        }
    }
}

impl NcclConfig {
    /// Whether the tuner may pick `a`.
    pub fn allows_algorithm(&self, a: Algorithm) -> bool {
        self.algorithms[a as usize]
    }

    /// Whether the tuner may pick `p`.
    pub fn allows_protocol(&self, p: Protocol) -> bool {
        self.protocols[p as usize]
    }
}

/// The variables [`parse_nccl_env`] understands.
pub const NCCL_VARIABLES: [&str; 8] = [
    "NCCL_IB_QPS_PER_CONNECTION",
    "NCCL_IB_SPLIT_DATA_ON_QPS",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NVLS_ENABLE",
    "NCCL_COLLNET_ENABLE",
];

/// One bad `NAME=VALUE` setting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{setting}`: {kind}")]
pub struct NcclSettingError {
    /// The setting as given.
    pub setting: String,
    /// What is wrong with it.
    pub kind: NcclSettingErrorKind,
}

/// What is wrong with a setting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NcclSettingErrorKind {
    /// No `=`.
    #[error("expected NAME=VALUE")]
    NotAssignment,
    /// A name railyard does not model.
    #[error("unknown variable {name}; railyard models {}", NCCL_VARIABLES.join(", "))]
    UnknownName {
        /// The name given.
        name: String,
    },
    /// A value out of range or of the wrong form.
    #[error("{name}: expected {expected}, got \"{value}\"")]
    BadValue {
        /// The variable.
        name: String,
        /// The value given.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// The same variable twice.
    #[error("{name} is set twice")]
    Duplicate {
        /// The variable.
        name: String,
    },
}

/// Every bad setting of one [`parse_nccl_env`] call (at least one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct NcclEnvError {
    /// The problems, in input order.
    pub problems: Vec<NcclSettingError>,
}

impl fmt::Display for NcclEnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// Parse `NAME=VALUE` settings (as in an environment) into a configuration, starting from
/// NCCL's defaults. Unknown names, bad values, duplicates and `MIN > MAX` channels are all
/// reported together.
///
/// Values: `NCCL_IB_QPS_PER_CONNECTION` 1..=128; `NCCL_IB_SPLIT_DATA_ON_QPS` 0 or 1;
/// `NCCL_MIN_NCHANNELS`/`NCCL_MAX_NCHANNELS` 1..=64; `NCCL_ALGO` and `NCCL_PROTO` a
/// comma-separated list, optionally starting with `^` to exclude, names case-insensitive
/// (`Ring`, `Tree`, `CollNetDirect`, `CollNetChain`, `NVLS`, `NVLSTree`; `LL`, `LL128`,
/// `Simple`); `PAT`, which railyard does not model, is refused. `NCCL_NVLS_ENABLE` 0, 1 or 2;
/// `NCCL_COLLNET_ENABLE` 0 or 1.
///
/// ```
/// let c = fabric::parse_nccl_env(["NCCL_IB_QPS_PER_CONNECTION=4", "NCCL_ALGO=Ring"]).unwrap();
/// assert_eq!(c.qps_per_connection, 4);
/// assert!(!c.allows_algorithm(fabric::Algorithm::Tree));
/// assert!(fabric::parse_nccl_env(["NCCL_IB_QPS=4"]).is_err());
/// ```
pub fn parse_nccl_env<'a>(
    settings: impl IntoIterator<Item = &'a str>,
) -> Result<NcclConfig, NcclEnvError> {
    let mut cfg = NcclConfig::default();
    let mut problems = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for setting in settings {
        let fail = |kind| NcclSettingError {
            setting: setting.to_owned(),
            kind,
        };
        let Some((name, value)) = setting.split_once('=') else {
            problems.push(fail(NcclSettingErrorKind::NotAssignment));
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        let Some(&known) = NCCL_VARIABLES.iter().find(|&&v| v == name) else {
            problems.push(fail(NcclSettingErrorKind::UnknownName {
                name: name.to_owned(),
            }));
            continue;
        };
        if seen.contains(&known) {
            problems.push(fail(NcclSettingErrorKind::Duplicate {
                name: name.to_owned(),
            }));
            continue;
        }
        seen.push(known);
        let bad = |expected: &str| {
            fail(NcclSettingErrorKind::BadValue {
                name: name.to_owned(),
                value: value.to_owned(),
                expected: expected.to_owned(),
            })
        };
        let int_in = |lo: u32, hi: u32| value.parse::<u32>().ok().filter(|v| (lo..=hi).contains(v));
        match known {
            "NCCL_IB_QPS_PER_CONNECTION" => match int_in(1, MAX_QPS_PER_CONNECTION) {
                Some(v) => cfg.qps_per_connection = v,
                None => problems.push(bad("an integer in 1..=128")),
            },
            "NCCL_IB_SPLIT_DATA_ON_QPS" => match value {
                "0" => cfg.split_data_on_qps = false,
                "1" => cfg.split_data_on_qps = true,
                _ => problems.push(bad("0 or 1")),
            },
            "NCCL_MIN_NCHANNELS" => match int_in(1, MAX_CHANNELS) {
                Some(v) => cfg.min_nchannels = Some(v),
                None => problems.push(bad("an integer in 1..=64")),
            },
            "NCCL_MAX_NCHANNELS" => match int_in(1, MAX_CHANNELS) {
                Some(v) => cfg.max_nchannels = Some(v),
                None => problems.push(bad("an integer in 1..=64")),
            },
            "NCCL_ALGO" => match parse_list(value, &ALGO_NAMES, ALGO_UNMODELLED) {
                Ok(mask) => cfg.algorithms.copy_from_slice(&mask),
                Err(e) => problems.push(bad(&format!(
                    "{e} (Ring, Tree, CollNetDirect, CollNetChain, NVLS, NVLSTree; `^` to exclude)"
                ))),
            },
            "NCCL_NVLS_ENABLE" => match value {
                "0" => cfg.nvls_enable = false,
                "1" | "2" => cfg.nvls_enable = true,
                _ => problems.push(bad("0, 1 or 2")),
            },
            "NCCL_COLLNET_ENABLE" => match value {
                "0" => cfg.collnet_enable = false,
                "1" => cfg.collnet_enable = true,
                _ => problems.push(bad("0 or 1")),
            },
            "NCCL_PROTO" => match parse_list(value, &["ll", "ll128", "simple"], &[]) {
                Ok(mask) => cfg.protocols = [mask[0], mask[1], mask[2]],
                Err(e) => problems.push(bad(&format!("{e} (LL, LL128, Simple; `^` to exclude)"))),
            },
            _ => unreachable!("every name of NCCL_VARIABLES has an arm"),
        }
    }
    if let (Some(lo), Some(hi)) = (cfg.min_nchannels, cfg.max_nchannels) {
        if lo > hi {
            problems.push(NcclSettingError {
                setting: format!("NCCL_MIN_NCHANNELS={lo}"),
                kind: NcclSettingErrorKind::BadValue {
                    name: "NCCL_MIN_NCHANNELS".to_owned(),
                    value: lo.to_string(),
                    expected: format!("at most NCCL_MAX_NCHANNELS ({hi})"),
                },
            });
        }
    }
    if problems.is_empty() {
        Ok(cfg)
    } else {
        Err(NcclEnvError { problems })
    }
}

/// `NCCL_ALGO` names of [`Algorithm::ALL`], lower case (`ncclAlgoStr`, src/init.cc).
const ALGO_NAMES: [&str; 6] = [
    "tree",
    "ring",
    "collnetdirect",
    "collnetchain",
    "nvls",
    "nvlstree",
];

/// NCCL algorithms railyard knows by name but does not model.
const ALGO_UNMODELLED: &[&str] = &["pat"];

/// A comma-separated list of names (case-insensitive), `^` first to exclude; at least one
/// name must remain enabled.
fn parse_list(value: &str, names: &[&str], unmodelled: &[&str]) -> Result<Vec<bool>, String> {
    let (exclude, body) = match value.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let mut mask = vec![exclude; names.len()];
    let mut any = false;
    for item in body.split(',') {
        let item = item.trim().to_ascii_lowercase();
        if item.is_empty() {
            return Err("an empty name".to_owned());
        }
        if unmodelled.contains(&item.as_str()) {
            return Err(format!("{item} is not modelled by railyard"));
        }
        let Some(i) = names.iter().position(|n| *n == item) else {
            return Err(format!("unknown name {item}"));
        };
        mask[i] = !exclude;
        any = true;
    }
    if !any || !mask.iter().any(|&m| m) {
        return Err("nothing left enabled".to_owned());
    }
    Ok(mask)
}

/// GPU generation, as NCCL's tuner groups compute capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GpuArch {
    /// SM 7.x and older.
    Volta,
    /// SM 8.x (A100).
    Ampere,
    /// SM 9.x (H100, H200).
    Hopper,
    /// SM 10.x (B200, GB200).
    Blackwell,
}

impl GpuArch {
    /// The generation of a GPU from its NVLink bandwidth per direction (the only GPU fact a
    /// railyard node carries): NVLink 5 (7,200 Gb/s) Blackwell, NVLink 4 (3,600) Hopper,
    /// NVLink 3 (2,400) Ampere, anything less Volta.
    pub fn from_nvlink_gbps(nvlink_gbps: f64) -> GpuArch {
        if nvlink_gbps >= 7200.0 {
            GpuArch::Blackwell
        } else if nvlink_gbps >= 3600.0 {
            GpuArch::Hopper
        } else if nvlink_gbps >= 2400.0 {
            GpuArch::Ampere
        } else {
            GpuArch::Volta
        }
    }

    /// Representative compute capability (×10), as NCCL compares `ccMin`.
    pub fn compute_capability(self) -> u32 {
        match self {
            GpuArch::Volta => 70,
            GpuArch::Ampere => 80,
            GpuArch::Hopper => 90,
            GpuArch::Blackwell => 100,
        }
    }

    /// Index into the tuner's per-generation tables (`NCCL_*_COMPCAP_IDX`).
    fn index(self) -> usize {
        self as usize
    }

    /// Per-channel network speeds the ring search tries, GB/s, highest first
    /// (`speedArrayInter`, `sm90SpeedArrayInter`, `sm100SpeedArrayInter`, src/graph/search.cc).
    pub fn inter_speeds(self) -> &'static [f64] {
        match self {
            GpuArch::Volta | GpuArch::Ampere => &[
                48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0,
                2.4, 1.2, 0.24, 0.12,
            ],
            GpuArch::Hopper => &[
                48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4,
                1.2, 0.24, 0.12,
            ],
            GpuArch::Blackwell => &[
                96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
                6.0, 3.0, 2.4, 1.2, 0.24, 0.12,
            ],
        }
    }

    /// Per-channel speeds the search tries inside one node, GB/s, highest first
    /// (`speedArrayIntra`, `sm90SpeedArrayIntra`, `sm100SpeedArrayIntra`, src/graph/search.cc).
    pub fn intra_speeds(self) -> &'static [f64] {
        match self {
            GpuArch::Volta | GpuArch::Ampere => &[
                40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0,
            ],
            GpuArch::Hopper => &[
                60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0,
            ],
            GpuArch::Blackwell => &[
                90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0,
            ],
        }
    }

    /// NCCL's usable bandwidth of one NVLink, GB/s per direction (`SM80_NVLINK_BW` 20.0,
    /// `SM90_NVLINK_BW` 20.6, `SM100_NVLINK_BW` 40.1, `SM70_NVLINK_BW` 20.0;
    /// src/graph/topo.h).
    pub fn nvlink_link_gb_s(self) -> f64 {
        match self {
            GpuArch::Volta | GpuArch::Ampere => 20.0,
            GpuArch::Hopper => 20.6,
            GpuArch::Blackwell => 40.1,
        }
    }

    /// Signalling rate of one NVLink of this generation, GB/s per direction (NVLink 2, 3
    /// and 4: 25; NVLink 5: 50; NVIDIA's NVLink specifications).
    pub fn nvlink_link_line_gb_s(self) -> f64 {
        match self {
            GpuArch::Blackwell => 50.0,
            _ => 25.0,
        }
    }

    /// The fraction of NVLink line rate NCCL uses: [`GpuArch::nvlink_link_gb_s`] over
    /// [`GpuArch::nvlink_link_line_gb_s`] (H100: 20.6 / 25 = 0.824, so 450 GB/s of NVLink
    /// gives NCCL 370.8 GB/s).
    pub fn nvlink_efficiency(self) -> f64 {
        self.nvlink_link_gb_s() / self.nvlink_link_line_gb_s()
    }
}

/// The per-channel speed NCCL's ring search settles on for a NIC of `nic_gb_s` GB/s: the
/// highest entry of [`GpuArch::inter_speeds`] not above it (the search skips speeds above the
/// GPU-to-NIC path bandwidth, `ncclTopoCompute`, src/graph/search.cc). A 400 Gb/s NIC
/// (50 GB/s) gives 48, a 200 Gb/s NIC 24, a 100 Gb/s NIC 12.
pub fn channel_speed_gb_s(arch: GpuArch, nic_gb_s: f64) -> f64 {
    let speeds = arch.inter_speeds();
    speeds
        .iter()
        .copied()
        .find(|&s| s <= nic_gb_s + 1e-9)
        .unwrap_or(speeds[speeds.len() - 1])
}

/// What NCCL's ring search and channel set-up give a communicator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChannelPlan {
    /// Channels the search finds (one per NIC the ring can fill at `speed_gb_s`).
    pub search_channels: u32,
    /// Per-channel speed of the search, GB/s.
    pub speed_gb_s: f64,
    /// Channels of the ring (and tree) search graph after `ncclTopoDupChannels`, before
    /// `ncclTopoPostset`: NCCL's `graphs[a]->nChannels`, which the tuner multiplies its
    /// per-channel caps by (`ncclTopoTuneModel`, src/graph/tuning.cc). The tree search is held
    /// to the ring's count (`treeGraph->minChannels = maxChannels = ringGraph->nChannels`,
    /// `initTransportsRank`, src/init.cc).
    pub graph_channels: u32,
    /// Channels after NCCL's duplications and the `NCCL_MIN/MAX_NCHANNELS` limits; channel
    /// `c` runs the ring of search channel `c mod search_channels`.
    pub channels: u32,
}

/// Channels of a ring over `n_nodes` nodes (NVLink domains) that use `nics_per_node` NICs of
/// `nic_gb_s` GB/s each and `gpus_per_node` GPUs with `nvlink_gb_s` GB/s of NVLink (per
/// direction, NCCL's usable figure) each.
///
/// 1. Search (`ncclTopoCompute`, src/graph/search.cc): every channel crosses every GPU of the
///    node and leaves all but the last over NVLink, so channels × speed × (GPUs − 1)/GPUs ≤
///    NVLink; a NIC carries ⌊NIC / speed⌋ channels; at most
///    `MAXCHANNELS / 2` = 32 (`ringGraph->maxChannels`, src/init.cc). Speeds are tried from
///    the fastest down, while above 0.49 of the best solution's speed; the most total
///    bandwidth wins (ties: the faster speed, tried first). On one node (`n_nodes` 1) the
///    search has no network: `ncclTopoTrimSystem` (src/graph/paths.cc) marks the system
///    intra-node (`inter = 0`) when every rank is local, and `ncclTopoCompute` then tries the
///    intra-node speed array ([`GpuArch::intra_speeds`]); the ring closes over NVLink, so
///    every GPU sends every channel over it: channels × speed ≤ NVLink, and NICs do not count.
///    8 × H100 (370.8 GB/s): 6 channels at 60 GB/s.
/// 2. `ncclTopoDupChannels` (src/graph/search.cc): doubles the channels when the speed is at
///    least 25 GB/s, unless the GPU is newer than SM80, the speed is below 50 and there are
///    more than 4 channels.
/// 3. `ncclTopoPostset` (src/graph/connect.cc): doubles them again (every ring is used by two
///    channels, the second tree mirrored), at most `MAXCHANNELS`; then on SM90 and newer with
///    several nodes, a per-channel speed above 45 GB/s and fewer than 16 channels, doubles
///    once more.
/// 4. `NCCL_MAX_NCHANNELS` caps the count, then `NCCL_MIN_NCHANNELS` raises it by copying
///    channels (`ncclTopoPostset`).
pub fn channel_plan(
    arch: GpuArch,
    n_nodes: usize,
    nics_per_node: u32,
    nic_gb_s: f64,
    gpus_per_node: u32,
    nvlink_gb_s: f64,
    cfg: &NcclConfig,
) -> ChannelPlan {
    let max_search = MAX_CHANNELS / 2;
    let mut best = (0u32, 0.0f64);
    if n_nodes == 1 {
        best = intra_node_search(arch, gpus_per_node, nvlink_gb_s, max_search);
    } else if nics_per_node > 0 && nic_gb_s > 0.0 {
        for &speed in arch.inter_speeds() {
            if speed > nic_gb_s + 1e-9 {
                continue;
            }
            // The search lowers the speed only while it stays above 0.49 of the best
            // solution's speed (`ncclTopoCompute`, src/graph/search.cc).
            if best.0 > 0 && speed / best.1 <= 0.49 {
                break;
            }
            let per_nic = ((nic_gb_s + 1e-9) / speed).floor() as u32;
            let mut n = nics_per_node.saturating_mul(per_nic.max(1)).min(max_search);
            if gpus_per_node > 1 && nvlink_gb_s > 0.0 {
                // A channel leaves every GPU but its last over NVLink.
                let g = f64::from(gpus_per_node);
                n = n.min(((nvlink_gb_s + 1e-9) / (speed * (g - 1.0) / g)).floor() as u32);
            }
            if f64::from(n) * speed > f64::from(best.0) * best.1 + 1e-9 {
                best = (n, speed);
            }
        }
    }
    let (search, speed) = if best.0 == 0 {
        // Nothing fits (no NIC, or NVLink slower than the slowest speed): NCCL falls back to
        // one channel at the slowest speed.
        let speeds = if n_nodes == 1 {
            arch.intra_speeds()
        } else {
            arch.inter_speeds()
        };
        (1, speeds[speeds.len() - 1])
    } else {
        best
    };
    let cc = arch.compute_capability();
    let mut channels = search;
    let mut speed_now = speed;
    // ncclTopoDupChannels (src/graph/search.cc): 25 GB/s, SM80, 50 GB/s, 4 channels.
    if speed >= 25.0 && !(cc > 80 && speed < 50.0 && search > 4) {
        let dup = (2 * channels).min(max_search);
        speed_now /= f64::from(dup.div_ceil(channels));
        channels = dup;
    }
    let graph_channels = channels;
    // ncclTopoPostset (src/graph/connect.cc): ×2, then ×2 again on SM90+ over several nodes
    // when the per-channel speed is above 45 GB/s and there are fewer than 16 channels.
    channels = (2 * channels).min(MAX_CHANNELS);
    if cc >= 90 && n_nodes > 1 && speed_now > 45.0 && channels < 16 {
        channels *= 2;
    }
    if let Some(max) = cfg.max_nchannels {
        channels = channels.min(max);
    }
    if let Some(min) = cfg.min_nchannels {
        channels = channels.max(min);
    }
    ChannelPlan {
        search_channels: search,
        speed_gb_s: speed,
        graph_channels,
        channels: channels.clamp(1, MAX_CHANNELS),
    }
}

/// The ring search inside one node (no network): the (channels, speed) with the most total
/// bandwidth over [`GpuArch::intra_speeds`], tried from the fastest down while above 0.49 of the
/// best solution's speed, each channel sending `speed` out of every GPU over NVLink. (0, 0)
/// when nothing fits.
fn intra_node_search(arch: GpuArch, gpus: u32, nvlink_gb_s: f64, max_search: u32) -> (u32, f64) {
    let mut best = (0u32, 0.0f64);
    if gpus < 2 || nvlink_gb_s <= 0.0 {
        return best;
    }
    for &speed in arch.intra_speeds() {
        if best.0 > 0 && speed / best.1 <= 0.49 {
            break;
        }
        let n = (((nvlink_gb_s + 1e-9) / speed).floor() as u32).min(max_search);
        if n > 0 && f64::from(n) * speed > f64::from(best.0) * best.1 + 1e-9 {
            best = (n, speed);
        }
    }
    best
}

/// Base latency per algorithm and protocol, µs (`baseLatencies`, src/graph/tuning.cc):
/// `[algorithm][LL, LL128, Simple]`, algorithms in [`Algorithm::ALL`] order.
pub const BASE_LATENCY_US: [[f64; 3]; 6] = [
    [6.8, 14.0, 8.4],
    [6.6, 14.0, 8.4],
    [0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0],
];

/// Hardware latency per step over NVLink, µs (`hwLatencies[NCCL_HW_NVLINK]`).
pub const NVLINK_LATENCY_US: [[f64; 3]; 6] = [
    [0.6, 1.25, 4.0],
    [0.6, 1.9, 3.4],
    [0.0, 0.0, 3.7],
    [0.0, 0.0, 2.8],
    [0.0, 0.0, 25.0],
    [0.0, 0.0, 25.0],
];

/// Hardware latency per step over the network, µs (`hwLatencies[NCCL_HW_NET]`).
pub const NET_LATENCY_US: [[f64; 3]; 6] = [
    [5.0, 8.5, 14.0],
    [2.7, 4.0, 14.0],
    [0.0, 0.0, 31.0],
    [0.0, 0.0, 30.0],
    [0.0, 0.0, 18.0],
    [0.0, 0.0, 20.9],
];

/// The share of NVLink SHARP's per-channel bandwidth NCCL's tuner counts on, by generation
/// (`nvlsEfficiency`, src/graph/tuning.cc: Volta and Ampere 0, Hopper 0.85, Blackwell 0.74).
pub const NVLS_EFFICIENCY: [f64; 4] = [0.0, 0.0, 0.85, 0.74];

/// Most NVLS heads, i.e. NVLS search channels (`NCCL_MAX_NVLS_ARITY`, src/include/device.h).
pub const MAX_NVLS_ARITY: u32 = 32;

/// Most CollNet Direct heads per node: `NCCL_MAX_DIRECT_ARITY` + 1 (src/include/device.h), the
/// limit of the CollNet Direct search (`ncclTopoCompute`, src/graph/search.cc) and the local
/// ranks above which CollNet is not used (`updateCollCostTable`, src/enqueue.cc).
pub const MAX_COLLNET_DIRECT_HEADS: u32 = 8;

/// `perChMaxNVLSTreeBws` (src/graph/tuning.cc), GB/s per channel, by generation and nodes.
const PER_CH_MAX_NVLS_TREE_BW: [[f64; 3]; 4] = [
    [26.5, 18.5, 10.0],
    [24.0, 23.6, 17.8],
    [0.0, 57.7, 45.5],
    [0.0, 96.0, 80.0],
];

/// `llMaxBws` (src/graph/tuning.cc), GB/s: rows by generation for one node (Volta, Ampere,
/// Hopper, Blackwell), by CPU for several (row 0 Intel/other, row 1 AMD); columns 1 node,
/// 2 nodes, more.
const LL_MAX_BW: [[f64; 3]; 4] = [
    [39.0, 39.0, 20.4],
    [87.7, 22.5, 19.0],
    [141.0, 45.0, 35.0],
    [282.0, 90.0, 70.0],
];

/// `perChMaxRingLL128Bws` (src/graph/tuning.cc), GB/s per channel, by generation and nodes.
const PER_CH_MAX_RING_LL128_BW: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 36.7],
    [40.0, 40.0, 40.0],
];

/// `perChMaxTreeLL128Bws` (src/graph/tuning.cc), GB/s per channel.
const PER_CH_MAX_TREE_LL128_BW: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 29.0],
    [55.6, 31.67, 20.0],
];

/// `perChMaxTreeBws` (src/graph/tuning.cc), GB/s per channel.
const PER_CH_MAX_TREE_BW: [[f64; 3]; 4] = [
    [26.5, 18.5, 10.0],
    [24.0, 23.6, 17.8],
    [38.7, 41.4, 36.0],
    [70.0, 42.8, 24.0],
];

/// Tree bandwidth correction by message size, powers of two from 64 B (`treeCorrectionFactor`,
/// src/graph/tuning.cc), per protocol LL, LL128, Simple.
const TREE_CORRECTION: [[f64; 24]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.0, 1.0, 1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9,
        0.9, 0.9, 0.9, 1.0, 1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8,
        0.7, 0.7, 0.8, 0.9, 0.9, 0.9,
    ],
];

/// What NCCL's NVLS search finds for a communicator (`ncclTopoCompute` with the NVLS pattern,
/// src/graph/search.cc): the heads (one search channel per head GPU) and the per-channel speed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NvlsPlan {
    /// NVLS heads: search channels, each pulling through one head GPU.
    pub heads: u32,
    /// Per-channel speed of the search inside the NVLink domain (`bwIntra`), GB/s.
    pub bw_intra_gb_s: f64,
}

/// NVLink SHARP's channels for `local_ranks` GPUs of one NVLink domain with NVSwitches, each
/// with `nvlink_gb_s` of NVLink per direction (NCCL's usable figure), or `None` where NCCL
/// finds no NVLS graph. `network` is, across nodes, the heads that have a NIC and the NIC's
/// speed (GB/s); `None` inside one domain.
///
/// As the search does it (`ncclTopoCompute`, `ncclTopoSearchTryNvls`, src/graph/search.cc):
/// no NVLS before SM90; at most [`MAX_NVLS_ARITY`] heads, each a different GPU (inside one
/// domain the search insists on one head per GPU up to that limit); every channel moves its
/// speed through every GPU's NVLink in each direction and twice through its head's, so the
/// busiest GPU carries (heads + 1) × speed; the speed is the highest of the speed array (the
/// intra-node array inside one domain, the network array across nodes, where it also stays at
/// or below the NIC's speed) that fits. The tuner needs at least two channels
/// (`ncclTopoTuneModel`, src/graph/tuning.cc).
pub fn nvls_plan(
    arch: GpuArch,
    local_ranks: u32,
    nvlink_gb_s: f64,
    network: Option<(u32, f64)>,
) -> Option<NvlsPlan> {
    if arch < GpuArch::Hopper || local_ranks < 2 || nvlink_gb_s <= 0.0 {
        return None;
    }
    let mut heads = local_ranks.min(MAX_NVLS_ARITY);
    let (speeds, cap) = match network {
        None => (arch.intra_speeds(), f64::INFINITY),
        Some((nic_heads, nic_gb_s)) => {
            heads = heads.min(nic_heads);
            (arch.inter_speeds(), nic_gb_s)
        }
    };
    if heads < 2 {
        return None;
    }
    let load = f64::from(heads + 1);
    let speed = speeds
        .iter()
        .copied()
        .find(|&s| s <= cap + 1e-9 && s * load <= nvlink_gb_s + 1e-9)?;
    Some(NvlsPlan {
        heads,
        bw_intra_gb_s: speed,
    })
}

/// What NCCL's CollNet (network SHARP) gets per node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollNetPlan {
    /// CollNet heads per node (GPUs with a NIC, at most [`MAX_COLLNET_DIRECT_HEADS`]).
    pub heads: u32,
    /// Per-channel speed of a head's NIC ([`channel_speed_gb_s`]), GB/s.
    pub bw_gb_s: f64,
}

/// Inputs of the tuner model for one communicator and collective.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TunerInput {
    /// The collective.
    pub collective: crate::Collective,
    /// GPU generation (the oldest GPU of the job).
    pub arch: GpuArch,
    /// Ranks.
    pub n_ranks: usize,
    /// Nodes (NVLink domains).
    pub n_nodes: usize,
    /// Channels ([`ChannelPlan::channels`]): the communicator's, after `ncclTopoPostset`.
    pub channels: u32,
    /// Channels of the ring/tree search graph ([`ChannelPlan::graph_channels`]), by which the
    /// tuner multiplies its per-channel caps.
    pub graph_channels: u32,
    /// Ring bus bandwidth with the Simple protocol, GB/s: what the fabric model gives the
    /// job's rings (NCCL's `nChannels × bw`).
    pub ring_busbw_gb_s: f64,
    /// Bus bandwidth of the job's double binary tree between nodes with the Simple protocol
    /// before NCCL's tree refinements, GB/s, in nccl-tests' convention (algorithm bandwidth ×
    /// 2(n − 1)/n; 0 when the collective has no tree or `NCCL_ALGO` excludes Tree): Tree's
    /// bandwidth.
    pub tree_busbw_gb_s: f64,
    /// Bus bandwidth of the same tree between nodes without its NVLink chains, GB/s, in
    /// nccl-tests' convention (0 when NVLSTree does not apply): NVLSTree's network side, where
    /// NCCL counts `bwInter` per channel (`ncclTopoTuneModel`, src/graph/tuning.cc).
    pub nvls_tree_busbw_gb_s: f64,
    /// NVLink SHARP's channels ([`nvls_plan`]); `None` without NVSwitches, before Hopper, or
    /// with `NCCL_NVLS_ENABLE=0`.
    pub nvls: Option<NvlsPlan>,
    /// Network SHARP; `None` inside one node, with `NCCL_COLLNET_ENABLE=0` (the default) or
    /// where a tier the job crosses has no SHARP.
    pub collnet: Option<CollNetPlan>,
}

/// The tuner's estimate for one algorithm and protocol.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlgoEstimate {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The protocol.
    pub protocol: Protocol,
    /// Algorithm bandwidth, GB/s (before the per-size tree correction).
    pub algbw_gb_s: f64,
    /// Latency, µs.
    pub latency_us: f64,
}

/// Whether NCCL's tuner considers `algo` with `proto` for this communicator at all
/// (`ncclTopoTuneModel`, src/graph/tuning.cc; `updateCollCostTable`, src/enqueue.cc): Tree
/// for AllReduce with a tree; NVLS and NVLSTree Simple only, with an NVLS graph; NVLS across
/// nodes only with CollNet, for AllGather/ReduceScatter only inside one domain of at most
/// [`MAX_NVLS_ARITY`] ranks; NVLSTree AllReduce across nodes; CollNet AllReduce, Simple,
/// across nodes with at most [`MAX_COLLNET_DIRECT_HEADS`] ranks per node. AllToAll is a Ring
/// here (NCCL runs it as point-to-point sends).
fn considered(input: &TunerInput, algo: Algorithm, proto: Protocol) -> bool {
    use crate::Collective;
    let allreduce = input.collective == Collective::AllReduce;
    let multi = input.n_nodes > 1;
    let ppn = input.n_ranks / input.n_nodes.max(1);
    let simple = proto == Protocol::Simple;
    match algo {
        Algorithm::Ring => true,
        Algorithm::Tree => allreduce && input.tree_busbw_gb_s > 0.0,
        Algorithm::Nvls => {
            simple
                && input.nvls.is_some()
                && match input.collective {
                    Collective::AllReduce => !multi || input.collnet.is_some(),
                    Collective::AllGather | Collective::ReduceScatter => {
                        !multi && ppn <= MAX_NVLS_ARITY as usize
                    }
                    Collective::AllToAll => false,
                }
        }
        Algorithm::NvlsTree => {
            simple && allreduce && multi && input.nvls.is_some() && input.nvls_tree_busbw_gb_s > 0.0
        }
        Algorithm::CollNetDirect | Algorithm::CollNetChain => {
            simple
                && allreduce
                && multi
                && input.collnet.is_some()
                && ppn <= MAX_COLLNET_DIRECT_HEADS as usize
        }
    }
}

/// NCCL's tuner model (`ncclTopoTuneModel`, src/graph/tuning.cc) for every algorithm and
/// protocol `cfg` allows and the communicator supports (`considered`), with the bandwidth
/// railyard's fabric model gives in place of NCCL's `nChannels × bw` for Ring and Tree.
///
/// Tree's bandwidth is NCCL's `nChannels × bw`, which the tuner halves into algorithm
/// bandwidth: twice the modelled tree's algorithm bandwidth, i.e. its nccl-tests bus bandwidth
/// × n/(n − 1).
///
/// Refinements: Ring LL ×0.5 capped by `llMaxBw`; Ring LL128 ×0.92 capped by search-graph
/// channels ([`TunerInput::graph_channels`]) × `perChMaxRingLL128Bw`; Tree AllReduce ×0.92
/// capped by graph channels × `perChMaxTreeBw`, then Tree LL ×1/3.8 capped by `llMaxBw` and
/// Tree LL128 ×120/128 (7/9 on one node) capped by graph channels × `perChMaxTreeLL128Bw`. NVLS and NVLSTree: per head, the search speed × `nvlsEfficiency` ×
/// (heads − 1)/heads, ×2 for AllReduce (two operations pipelined) or ×(ppn − 1)/ppn; NVLS
/// across nodes at most the NIC's channel speed per head; NVLSTree at most the modelled tree
/// between nodes without its NVLink chains ([`TunerInput::nvls_tree_busbw_gb_s`]) and heads ×
/// `perChMaxNVLSTreeBw`. CollNet: heads × the NIC's channel speed;
/// Direct divided by the GPU-to-NIC factor f − (f − 1)/2 with f = ppn / heads, ×0.85 on SM90
/// and newer. Bus to algorithm bandwidth ×n/steps for Ring, NVLS and NVLSTree, ×0.5 for Tree
/// and CollNet (AllGather/ReduceScatter other than Ring: none).
///
/// Latency: Ring: base + steps × per-step latency (intra-node steps at the NVLink latency, at
/// least the network post overhead of 1 µs, ×3 for Simple; inter-node steps at the network
/// latency); Tree: base + 2 × ((ranks per node − 1) × NVLink + log2(nodes) × network); NVLS:
/// the NVLink latency, plus the network's across nodes; NVLSTree: NVLink + 2 × log2(nodes) ×
/// network; CollNetDirect: 2 × (NVLink + (ppn − 1) × 0.4) + network; CollNetChain: 2 ×
/// (ppn − 1) × NVLink + network. Intel CPUs and NVLink inside nodes are assumed.
pub fn tuner_estimates(input: &TunerInput, cfg: &NcclConfig) -> Vec<AlgoEstimate> {
    use crate::Collective;
    let n = input.n_ranks.max(2);
    let nodes = input.n_nodes.max(1);
    let gen = input.arch.index();
    let col = if nodes <= 2 { nodes - 1 } else { 2 };
    let ll_row = if nodes == 1 { gen } else { 0 };
    let ll_max = LL_MAX_BW[ll_row][col];
    // The per-channel caps multiply the search graph's channels (`graphs[a]->nChannels`),
    // not the communicator's doubled count.
    let ch = f64::from(input.graph_channels.max(1));
    let nsteps = match input.collective {
        Collective::AllReduce => 2 * (n - 1),
        Collective::AllGather | Collective::ReduceScatter => n - 1,
        Collective::AllToAll => n,
    } as f64;
    let ppn = n as f64 / nodes as f64;
    let allreduce = input.collective == Collective::AllReduce;
    let net_overhead_us = 1.0; // getNetOverhead: Intel x86 (src/graph/tuning.cc)
    let log2_nodes = f64::from(usize::BITS - 1 - nodes.leading_zeros());
    let mut out = Vec::new();
    for algo in Algorithm::ALL {
        if !cfg.allows_algorithm(algo) {
            continue;
        }
        for proto in Protocol::ALL {
            if !cfg.allows_protocol(proto) || !considered(input, algo, proto) {
                continue;
            }
            let (a, p) = (algo as usize, proto as usize);
            // NVLS per head: the search speed at NCCL's efficiency, less one head's share.
            let nvls_intra = input.nvls.map_or(0.0, |v| {
                let h = f64::from(v.heads);
                let per_head = v.bw_intra_gb_s * NVLS_EFFICIENCY[gen] * (h - 1.0) / h;
                per_head * if allreduce { 2.0 } else { (ppn - 1.0) / ppn }
            });
            let heads = input.nvls.map_or(0.0, |v| f64::from(v.heads));
            let mut bus = match algo {
                Algorithm::Ring => input.ring_busbw_gb_s,
                // NCCL's tree figure (`nChannels × bw`) is twice the algorithm bandwidth (the
                // tree's ratio is 0.5, with no (n − 1)/n): the modelled tree's algorithm
                // bandwidth × 2 = its nccl-tests bus bandwidth × n/(n − 1).
                Algorithm::Tree => input.tree_busbw_gb_s * n as f64 / (n as f64 - 1.0),
                Algorithm::Nvls => {
                    let net = match (nodes > 1, input.collnet) {
                        (true, Some(c)) => c.bw_gb_s,
                        _ => f64::INFINITY,
                    };
                    heads * nvls_intra.min(net)
                }
                Algorithm::NvlsTree => (heads * nvls_intra)
                    .min(input.nvls_tree_busbw_gb_s)
                    .min(heads * PER_CH_MAX_NVLS_TREE_BW[gen][col]),
                Algorithm::CollNetDirect | Algorithm::CollNetChain => input
                    .collnet
                    .map_or(0.0, |c| f64::from(c.heads) * c.bw_gb_s),
            };
            match (algo, proto) {
                (Algorithm::Ring, Protocol::Ll) => bus = (bus * 0.5).min(ll_max),
                (Algorithm::Ring, Protocol::Ll128) => {
                    bus = (bus * 0.92).min(ch * PER_CH_MAX_RING_LL128_BW[gen][col]);
                }
                _ => {}
            }
            if algo == Algorithm::Tree {
                bus = (bus * 0.92).min(ch * PER_CH_MAX_TREE_BW[gen][col]);
                match proto {
                    Protocol::Ll => bus = (bus / 3.8).min(ll_max),
                    Protocol::Ll128 => {
                        let f = if nodes == 1 { 7.0 / 9.0 } else { 120.0 / 128.0 };
                        bus = (bus * f).min(ch * PER_CH_MAX_TREE_LL128_BW[gen][col]);
                    }
                    Protocol::Simple => {}
                }
            }
            if algo == Algorithm::CollNetDirect {
                let heads = f64::from(input.collnet.map_or(1, |c| c.heads.max(1)));
                let mut factor = ppn / heads;
                factor -= (factor - 1.0) / 2.0;
                bus /= factor;
                if input.arch.compute_capability() >= 90 {
                    bus *= 0.85;
                }
            }
            let algbw = match algo {
                Algorithm::Ring => bus * n as f64 / nsteps,
                _ if !allreduce => bus,
                Algorithm::Nvls | Algorithm::NvlsTree => bus * n as f64 / nsteps,
                _ => bus * 0.5,
            };
            let intra = NVLINK_LATENCY_US[a][p];
            let inter = if ppn <= 1.0 {
                NET_LATENCY_US[Algorithm::Tree as usize][p]
            } else {
                NET_LATENCY_US[a][p]
            };
            let mut latency = BASE_LATENCY_US[a][p];
            match algo {
                Algorithm::Ring => {
                    let mut intra_step = intra;
                    if nodes > 1 {
                        let overhead = if proto == Protocol::Simple {
                            3.0 * net_overhead_us
                        } else {
                            net_overhead_us
                        };
                        intra_step = intra_step.max(overhead);
                    }
                    let inter_steps = if nodes == 1 {
                        0.0
                    } else if allreduce {
                        2.0 * (nodes as f64 - 1.0)
                    } else {
                        nodes as f64 - 1.0
                    };
                    let inter_lat = if nodes == 1 { intra } else { inter };
                    latency += (nsteps - inter_steps) * intra_step + inter_steps * inter_lat;
                }
                Algorithm::Tree => {
                    latency += 2.0 * ((ppn - 1.0) * intra + log2_nodes * inter);
                }
                Algorithm::CollNetDirect => {
                    latency += 2.0 * ((ppn - 1.0).min(1.0) * intra + (ppn - 1.0) * 0.4) + inter;
                }
                Algorithm::CollNetChain => latency += 2.0 * (ppn - 1.0) * intra + inter,
                Algorithm::Nvls => {
                    latency = intra + if nodes > 1 { inter } else { 0.0 };
                }
                Algorithm::NvlsTree => latency += intra + 2.0 * log2_nodes * inter,
            }
            out.push(AlgoEstimate {
                algorithm: algo,
                protocol: proto,
                algbw_gb_s: algbw,
                latency_us: latency,
            });
        }
    }
    out
}

/// NCCL's time estimate for `bytes` with one estimate (`ncclTopoGetAlgoTime`,
/// src/graph/tuning.cc): latency (×1.4 on SM80+ or ×1.9 before, for multi-node Ring Simple
/// AllReduce with at least 64 bytes per channel and rank: the "plateau" of the ring) plus
/// bytes over the algorithm bandwidth, with the tree correction factor by size for Tree
/// AllReduce (and for NVLSTree AllReduce on SM100 and newer). µs.
pub fn estimate_time_us(input: &TunerInput, e: &AlgoEstimate, bytes: f64) -> f64 {
    let mut bw = e.algbw_gb_s;
    if bw <= 0.0 {
        return f64::INFINITY;
    }
    let log_size = ((bytes / 64.0).max(1.0)).log2().floor() as i64;
    let allreduce = input.collective == crate::Collective::AllReduce;
    if allreduce
        && ((e.algorithm == Algorithm::Tree && (0..23).contains(&log_size))
            || (e.algorithm == Algorithm::NvlsTree
                && input.arch >= GpuArch::Blackwell
                && (0..24).contains(&log_size)))
    {
        bw *= TREE_CORRECTION[e.protocol as usize][log_size as usize];
    }
    let mut lat = e.latency_us;
    if e.algorithm == Algorithm::Ring
        && e.protocol == Protocol::Simple
        && input.n_nodes > 1
        && allreduce
        && bytes / (f64::from(input.channels.max(1)) * input.n_ranks as f64) >= 64.0
    {
        lat *= if input.arch.compute_capability() < 80 {
            1.9
        } else {
            1.4
        };
    }
    lat + bytes / (1000.0 * bw)
}

/// The algorithm and protocol NCCL's tuner picks for `bytes` (the fastest estimate; ties
/// go to the earlier algorithm and protocol in NCCL's order), with its time in µs.
pub fn choose(input: &TunerInput, cfg: &NcclConfig, bytes: f64) -> Option<(AlgoEstimate, f64)> {
    let mut best: Option<(AlgoEstimate, f64)> = None;
    for e in tuner_estimates(input, cfg) {
        let t = estimate_time_us(input, &e, bytes);
        if t.is_finite() && best.is_none_or(|(_, bt)| t < bt) {
            best = Some((e, t));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_accepts_nccl_names_and_reports_every_problem() {
        let c = parse_nccl_env([
            "NCCL_IB_QPS_PER_CONNECTION=4",
            "NCCL_IB_SPLIT_DATA_ON_QPS=1",
            "NCCL_MIN_NCHANNELS=8",
            "NCCL_MAX_NCHANNELS=16",
            "NCCL_ALGO=^tree",
            "NCCL_PROTO=Simple,LL128",
        ])
        .expect("valid");
        assert_eq!(c.qps_per_connection, 4);
        assert!(c.split_data_on_qps);
        assert_eq!((c.min_nchannels, c.max_nchannels), (Some(8), Some(16)));
        assert!(!c.allows_algorithm(Algorithm::Tree) && c.allows_algorithm(Algorithm::Ring));
        assert!(c.allows_algorithm(Algorithm::Nvls));
        assert_eq!(c.protocols, [false, true, true]);

        let e = parse_nccl_env([
            "NCCL_IB_QPS=4",
            "NCCL_IB_QPS_PER_CONNECTION=0",
            "NCCL_ALGO=PAT",
            "NCCL_PROTO=fast",
            "garbage",
            "NCCL_MIN_NCHANNELS=32",
            "NCCL_MAX_NCHANNELS=4",
            "NCCL_MAX_NCHANNELS=8",
        ])
        .expect_err("all bad");
        let msg = e.to_string();
        assert_eq!(e.problems.len(), 7, "{msg}");
        assert!(msg.contains("unknown variable NCCL_IB_QPS;"), "{msg}");
        assert!(
            msg.contains("expected an integer in 1..=128, got \"0\""),
            "{msg}"
        );
        assert!(msg.contains("pat is not modelled"), "{msg}");
        assert!(msg.contains("unknown name fast"), "{msg}");
        assert!(msg.contains("`garbage`: expected NAME=VALUE"), "{msg}");
        assert!(msg.contains("NCCL_MAX_NCHANNELS is set twice"), "{msg}");
        assert!(msg.contains("at most NCCL_MAX_NCHANNELS (4)"), "{msg}");
        assert!(
            parse_nccl_env(["NCCL_ALGO=^ring,tree,collnetdirect,collnetchain,nvls,nvlstree"])
                .is_err()
        );
        assert!(parse_nccl_env(["NCCL_ALGO=^ring,tree"]).is_ok());
    }

    #[test]
    fn defaults_are_nccls() {
        // IbQpsPerConn = 1 (src/transport/net_ib/connect.cc); IbSplitDataOnQps = 0
        // (src/transport/net_ib/common.cc).
        let d = parse_nccl_env([]).expect("empty is valid");
        assert_eq!(d, NcclConfig::default());
        assert_eq!(d.qps_per_connection, 1);
        assert!(!d.split_data_on_qps);
    }

    #[test]
    fn channel_speed_follows_the_search_speed_arrays() {
        // src/graph/search.cc: sm90SpeedArrayInter starts 48, 45, ...; 24 is below 25.
        assert_eq!(channel_speed_gb_s(GpuArch::Hopper, 50.0), 48.0);
        assert_eq!(channel_speed_gb_s(GpuArch::Hopper, 25.0), 24.0);
        assert_eq!(channel_speed_gb_s(GpuArch::Ampere, 12.5), 12.0);
        assert_eq!(channel_speed_gb_s(GpuArch::Blackwell, 100.0), 96.0);
    }

    /// Channel counts follow src/graph/search.cc (ncclTopoCompute, ncclTopoDupChannels) and
    /// src/graph/connect.cc (ncclTopoPostset): at least two channels per NIC.
    #[test]
    fn channel_counts_follow_search_and_postset() {
        let d = NcclConfig::default();
        let h100_nvl = 450.0 * GpuArch::Hopper.nvlink_efficiency();
        // DGX H100: 8 × 400G. Search 8 × 48 (no dup: SM90, < 50, > 4), postset ×2 → 16.
        let p = channel_plan(GpuArch::Hopper, 4, 8, 50.0, 8, h100_nvl, &d);
        assert_eq!((p.search_channels, p.speed_gb_s, p.channels), (8, 48.0, 16));
        // OCI BM.GPU.H100.8: 16 × 200G: 16 × 24 (NVLink: 16 × 24 × 7/8 = 336 ≤ 370.8), ×2.
        let p = channel_plan(GpuArch::Hopper, 4, 16, 25.0, 8, h100_nvl, &d);
        assert_eq!(
            (p.search_channels, p.speed_gb_s, p.channels),
            (16, 24.0, 32)
        );
        // Slow NVLink caps the search: 100 GB/s for 8 GPUs fits 4 channels of 24 or 5 of 22.
        let p = channel_plan(GpuArch::Hopper, 4, 16, 25.0, 8, 100.0, &d);
        assert_eq!((p.search_channels, p.speed_gb_s), (5, 22.0), "{p:?}");
        // A100 with 8 × 200G: 8 × 24, postset ×2 → 16 (2 per NIC).
        let p = channel_plan(GpuArch::Ampere, 2, 8, 25.0, 8, 240.0, &d);
        assert_eq!((p.search_channels, p.channels), (8, 16));
        // One 400G NIC for 8 H100s: 1 × 48, dup (≤ 4 channels) → 2, postset → 4.
        let p = channel_plan(GpuArch::Hopper, 2, 1, 50.0, 8, h100_nvl, &d);
        assert_eq!(p.channels, 4);
        // 4 H100 GPUs with 4 × 400G: 4 × 48, dup → 8 at 24, postset → 16.
        let p = channel_plan(GpuArch::Hopper, 2, 4, 50.0, 4, h100_nvl, &d);
        assert_eq!(p.channels, 16);
        // NCCL_MAX_NCHANNELS caps, NCCL_MIN_NCHANNELS raises.
        let cap = parse_nccl_env(["NCCL_MAX_NCHANNELS=4"]).expect("valid");
        assert_eq!(
            channel_plan(GpuArch::Hopper, 4, 8, 50.0, 8, h100_nvl, &cap).channels,
            4
        );
        let raise = parse_nccl_env(["NCCL_MIN_NCHANNELS=32"]).expect("valid");
        assert_eq!(
            channel_plan(GpuArch::Hopper, 4, 8, 50.0, 8, h100_nvl, &raise).channels,
            32
        );
    }

    #[test]
    fn tuner_prefers_ll_for_small_and_simple_for_large_messages() {
        let input = TunerInput {
            collective: crate::Collective::AllReduce,
            arch: GpuArch::Hopper,
            n_ranks: 64,
            n_nodes: 8,
            channels: 16,
            graph_channels: 8,
            ring_busbw_gb_s: 384.0,
            tree_busbw_gb_s: 384.0,
            nvls_tree_busbw_gb_s: 0.0,
            nvls: None,
            collnet: None,
        };
        let cfg = NcclConfig::default();
        let (small, _) = choose(&input, &cfg, 8.0).expect("something");
        assert_eq!(small.protocol, Protocol::Ll);
        let (large, t) = choose(&input, &cfg, 8.0 * (1u64 << 30) as f64).expect("something");
        assert_eq!(large.protocol, Protocol::Simple);
        // Large messages approach the ring's bandwidth.
        let algbw = 8.0 * (1u64 << 30) as f64 / (t * 1000.0);
        assert!(algbw > 0.9 * 384.0 * 64.0 / 126.0, "{algbw}");
        // NCCL_ALGO=Tree leaves only Tree.
        let tree_only = parse_nccl_env(["NCCL_ALGO=Tree"]).expect("valid");
        let (e, _) = choose(&input, &tree_only, 1e9).expect("tree");
        assert_eq!(e.algorithm, Algorithm::Tree);
    }
}
