//! `railyard doctor`: check one node for what most often makes multi-node training fail or crawl
//! (RDMA devices and ports, RoCE MTU, host-name resolution, PCIe links, rail balance), reading
//! `/sys`, `/proc` and `/etc` under `--root` so that it runs on fixture trees as well as on a node.
//!
//! Reading ([`collect`]) is separate from judging ([`check`]): `collect` turns the tree into
//! [`NodeFacts`], recording every file it could not parse instead of stopping; `check` is a pure
//! function from facts to [`Finding`]s.

use std::net::IpAddr;
use std::path::Path;

use serde::Serialize;
use topology::roce::{active_mtu, IB_MTUS, ROCE_OVERHEAD_BYTES};

use formats::FormatError;

pub use crate::Severity;

/// One result of one check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// skipped (the check did not run; `seen` says why), info (the check passed), warning or
    /// error; any error makes `doctor` exit 1.
    pub severity: Severity,
    /// Which check: `rdma.devices`, `rdma.port`, `roce.mtu`, `hostname`, `pcie.link`,
    /// `rails.balance`, `sysfs.read`.
    pub check: &'static str,
    /// What was looked at (a device, a port, a file).
    pub subject: String,
    /// What was seen.
    pub seen: String,
    /// Why it matters.
    pub why: String,
    /// What to do (`nothing` for `info` findings).
    pub action: String,
}

/// Everything `doctor` read from the tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeFacts {
    /// RDMA devices (`sys/class/infiniband/*`), sorted by name; `None` when the directory is
    /// missing (no RDMA stack loaded).
    pub rdma: Option<Vec<RdmaDevice>>,
    /// The host name and where it came from.
    pub hostname: Option<(String, String)>,
    /// `etc/hosts` entries in file order; `None` when the file is missing.
    pub hosts: Option<Vec<HostsEntry>>,
    /// GPUs and RDMA NICs on the PCI bus, by address.
    pub pci: Vec<PciDevice>,
    /// Files that exist but could not be read or parsed: (path under the root, what was wrong).
    pub unreadable: Vec<(String, String)>,
    /// Files doctor refused to open or follow: not regular files (FIFOs, devices), larger than
    /// the bound, or a name read from a file that would lead outside the tree. A fail: the tree
    /// is not what the kernel shows.
    pub refused: Vec<(String, String)>,
}

/// An RDMA device (`mlx5_0`) and its ports.
#[derive(Clone, Debug, PartialEq)]
pub struct RdmaDevice {
    /// Device name.
    pub name: String,
    /// Ports, by number.
    pub ports: Vec<RdmaPort>,
}

/// One port of an RDMA device.
#[derive(Clone, Debug, PartialEq)]
pub struct RdmaPort {
    /// Port number as in sysfs (`1`).
    pub port: String,
    /// Logical state name (`ACTIVE`, `DOWN`, `INIT`, `ARMED`), from `"4: ACTIVE"`.
    pub state: Option<String>,
    /// Physical state name (`LinkUp`, `Disabled`, `Polling`), from `"5: LinkUp"`.
    pub phys_state: Option<String>,
    /// `Ethernet` (RoCE) or `InfiniBand`.
    pub link_layer: Option<String>,
    /// The netdevs behind the port (RoCE), with their MTU when readable.
    pub netdevs: Vec<(String, Option<u32>)>,
}

/// A line of `/etc/hosts`.
#[derive(Clone, Debug, PartialEq)]
pub struct HostsEntry {
    /// The address as written.
    pub address: String,
    /// Its names.
    pub names: Vec<String>,
}

/// What a PCI function is, for doctor's purposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PciKind {
    /// NVIDIA (0x10de) display or 3D controller (class 0x03).
    Gpu,
    /// Mellanox/NVIDIA networking (0x15b3) network or InfiniBand controller (class 0x02).
    Nic,
}

/// A GPU or NIC PCI function and its link.
#[derive(Clone, Debug, PartialEq)]
pub struct PciDevice {
    /// Bus address, `0000:18:00.0`.
    pub address: String,
    /// GPU or NIC.
    pub kind: PciKind,
    /// Current link speed, GT/s.
    pub current_gt_s: Option<f64>,
    /// Current link width, lanes.
    pub current_width: Option<u32>,
    /// Maximum link speed, GT/s.
    pub max_gt_s: Option<f64>,
    /// Maximum link width, lanes.
    pub max_width: Option<u32>,
    /// RDMA devices on this function (`<address>/infiniband/*`), for NICs.
    pub rdma_devices: Vec<String>,
}

/// Read the tree under `root` and check it.
pub fn diagnose(root: &Path, hostname: Option<&str>) -> Result<Vec<Finding>, FormatError> {
    let facts = collect(root, hostname)?;
    Ok(check(&facts))
}

/// [`diagnose`], plus [`check_shape`] when the node's shape is given.
pub fn diagnose_shape(
    root: &Path,
    hostname: Option<&str>,
    shape: Option<&str>,
) -> Result<Vec<Finding>, FormatError> {
    let facts = collect(root, hostname)?;
    let mut out = check(&facts);
    if let Some(shape) = shape {
        out.extend(check_shape(&facts, shape));
    }
    Ok(out)
}

/// The node's RDMA devices against the NCCL device list its shape's vendor publishes
/// ([`crate::nccl_shapes`]): every listed device present with an ACTIVE port (fail otherwise:
/// NCCL would be pointed at a device that is not there or not up), and the devices present but
/// not listed named (usually front-end NICs, which NCCL must not use). An unknown shape is one
/// warning saying there is nothing to check against.
pub fn check_shape(facts: &NodeFacts, shape: &str) -> Vec<Finding> {
    let Some(row) = crate::nccl_shapes::for_shape(shape) else {
        return vec![Finding {
            severity: Severity::Warning,
            check: "nccl.devices",
            subject: shape.to_owned(),
            seen: "no published NCCL settings for this shape".to_owned(),
            why: "doctor checks the RDMA device names against the vendor's NCCL_IB_HCA list"
                .to_owned(),
            action: "check NCCL_IB_HCA by hand against `ibv_devices`".to_owned(),
        }];
    };
    let devices = facts.rdma.as_deref().unwrap_or_default();
    let active = |d: &RdmaDevice| d.ports.iter().any(|p| p.state.as_deref() == Some("ACTIVE"));
    let mut missing = Vec::new();
    let mut down = Vec::new();
    for h in row.hcas {
        match devices.iter().find(|d| d.name == *h) {
            None => missing.push(*h),
            Some(d) if !active(d) => down.push(*h),
            Some(_) => {}
        }
    }
    let extra: Vec<&str> = devices
        .iter()
        .filter(|d| !row.hcas.contains(&d.name.as_str()))
        .map(|d| d.name.as_str())
        .collect();
    let mut out = Vec::new();
    let subject = format!("{shape} NCCL_IB_HCA ({} devices)", row.hcas.len());
    if missing.is_empty() && down.is_empty() {
        out.push(Finding {
            severity: Severity::Info,
            check: "nccl.devices",
            subject: subject.clone(),
            seen: format!("all {} listed devices present and ACTIVE", row.hcas.len()),
            why: format!("the list `launch` writes for this shape ({})", row.source),
            action: "nothing".to_owned(),
        });
    } else {
        let mut seen = Vec::new();
        if !missing.is_empty() {
            seen.push(format!("missing: {}", missing.join(", ")));
        }
        if !down.is_empty() {
            seen.push(format!("not ACTIVE: {}", down.join(", ")));
        }
        out.push(Finding {
            severity: Severity::Error,
            check: "nccl.devices",
            subject: subject.clone(),
            seen: seen.join("; "),
            why: format!(
                "NCCL would be told to use these devices ({}); a missing or down device fails or slows every job on this node",
                row.source
            ),
            action: "check the NIC, its driver and cabling (`ibv_devinfo`), or pass `launch --hca` with the devices this node has".to_owned(),
        });
    }
    if !extra.is_empty() {
        out.push(Finding {
            severity: Severity::Info,
            check: "nccl.devices",
            subject,
            seen: format!("not for NCCL: {}", extra.join(", ")),
            why: "devices the vendor's list leaves out (front-end NICs carry the VCN, not RDMA training traffic)".to_owned(),
            action: "nothing".to_owned(),
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Reading the tree

/// Most bytes `doctor` reads of a sysfs or procfs file: attributes are at most a page.
pub const MAX_SYSFS_BYTES: u64 = 64 * 1024;

/// Most bytes `doctor` reads of `/etc/hosts` or `/etc/hostname`.
pub const MAX_ETC_BYTES: u64 = 1 << 20;

/// Files under the root; records what it could not read instead of failing. Every file is
/// checked with `metadata` before it is opened (FIFOs, sockets and devices are never opened, so
/// nothing blocks) and read through a bound, so nothing grows without end.
struct Tree<'a> {
    root: &'a Path,
    unreadable: Vec<(String, String)>,
    refused: Vec<(String, String)>,
}

/// How reading one file went.
enum Outcome {
    Text(String),
    Missing,
    /// Recorded as unreadable (`bool`: refused outright, a fail).
    Problem(String, bool),
}

impl Tree<'_> {
    /// Read `rel` with the bound for its place, without recording anything.
    fn read_raw(&self, rel: &str) -> Outcome {
        let path = self.root.join(rel);
        let limit = if rel.starts_with("etc/") {
            MAX_ETC_BYTES
        } else {
            MAX_SYSFS_BYTES
        };
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Missing,
            Err(e) => return Outcome::Problem(e.to_string(), false),
        };
        if !meta.is_file() {
            let what = file_type_word(&meta);
            return Outcome::Problem(format!("{what}, not a regular file; not opened"), true);
        }
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) => return Outcome::Problem(e.to_string(), false),
        };
        let mut bytes = Vec::new();
        if let Err(e) =
            std::io::Read::read_to_end(&mut std::io::Read::take(file, limit + 1), &mut bytes)
        {
            return Outcome::Problem(e.to_string(), false);
        }
        if bytes.len() as u64 > limit {
            return Outcome::Problem(
                format!("larger than {} KiB; not read further", limit / 1024),
                true,
            );
        }
        match String::from_utf8(bytes) {
            Ok(s) => Outcome::Text(s.trim().to_owned()),
            Err(_) => Outcome::Problem("not UTF-8 text".to_owned(), false),
        }
    }

    /// A file's trimmed text; `None` when it does not exist. Unreadable files are recorded.
    fn read(&mut self, rel: &str) -> Option<String> {
        match self.read_raw(rel) {
            Outcome::Text(s) => Some(s),
            Outcome::Missing => None,
            Outcome::Problem(what, refused) => {
                self.record(rel, what, refused);
                None
            }
        }
    }

    fn record(&mut self, rel: &str, what: String, refused: bool) {
        if refused {
            self.refused.push((rel.to_owned(), what));
        } else {
            self.unreadable.push((rel.to_owned(), what));
        }
    }

    /// A file's trimmed text, or `None` when missing or unreadable, without recording anything:
    /// for files the kernel refuses to read in normal operation (an unused GID table entry
    /// answers EINVAL). Files that are not regular or are too large are still recorded.
    fn read_quiet(&mut self, rel: &str) -> Option<String> {
        match self.read_raw(rel) {
            Outcome::Text(s) => Some(s),
            Outcome::Problem(what, true) => {
                self.record(rel, what, true);
                None
            }
            _ => None,
        }
    }

    /// A file parsed with `parse`; a parse failure is recorded with `expected`.
    fn parse<T>(
        &mut self,
        rel: &str,
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let text = self.read(rel)?;
        let v = parse(&text);
        if v.is_none() {
            self.unreadable.push((
                rel.to_owned(),
                format!("expected {expected}, got \"{}\"", shorten(&text)),
            ));
        }
        v
    }

    /// Sorted entry names of a directory; `None` when it does not exist.
    fn list(&mut self, rel: &str) -> Option<Vec<String>> {
        let path = self.root.join(rel);
        match std::fs::read_dir(&path) {
            Ok(entries) => {
                let mut names: Vec<String> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                names.sort_by(|a, b| natural_cmp(a, b));
                Some(names)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                self.unreadable.push((rel.to_owned(), e.to_string()));
                None
            }
        }
    }

    fn exists(&self, rel: &str) -> bool {
        self.root.join(rel).exists()
    }
}

fn file_type_word(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// Whether `name` (read from a file) is a Linux network interface name, and so safe to put in a
/// path: 1–15 bytes, not `.` or `..`, no `/`, `:`, whitespace or control characters (the
/// kernel's `dev_valid_name`).
pub fn is_netdev_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 16
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control())
}

/// Read everything `doctor` looks at under `root`. Errors only when `root` itself is not a
/// directory tree with a `sys/` directory; anything odd inside is recorded in the facts.
pub fn collect(root: &Path, hostname: Option<&str>) -> Result<NodeFacts, FormatError> {
    let shown = root.display().to_string();
    if !root.is_dir() {
        return Err(FormatError::input(&shown, "--root: expected a directory"));
    }
    if !root.join("sys").is_dir() {
        return Err(FormatError::input(
            &shown,
            "--root: no sys/ directory here; expected a root file system tree (sys/, proc/, etc/)",
        ));
    }
    let mut tree = Tree {
        root,
        unreadable: Vec::new(),
        refused: Vec::new(),
    };
    let rdma = collect_rdma(&mut tree);
    let hostname = match hostname {
        Some(h) => Some((h.to_owned(), "--hostname".to_owned())),
        None => ["proc/sys/kernel/hostname", "etc/hostname"]
            .iter()
            .find_map(|rel| {
                tree.read(rel)
                    .filter(|s| !s.is_empty())
                    .map(|s| (s, format!("/{rel}")))
            }),
    };
    let hosts = tree.read("etc/hosts").map(|t| parse_hosts(&t));
    let pci = collect_pci(&mut tree);
    Ok(NodeFacts {
        rdma,
        hostname,
        hosts,
        pci,
        unreadable: tree.unreadable,
        refused: tree.refused,
    })
}

fn collect_rdma(tree: &mut Tree<'_>) -> Option<Vec<RdmaDevice>> {
    let names = tree.list("sys/class/infiniband")?;
    let mut devices = Vec::new();
    for name in names {
        let base = format!("sys/class/infiniband/{name}");
        let mut ports = Vec::new();
        for port in tree.list(&format!("{base}/ports")).unwrap_or_default() {
            let p = format!("{base}/ports/{port}");
            let state = tree.parse(&format!("{p}/state"), "\"N: NAME\"", state_name);
            let phys_state = tree.parse(&format!("{p}/phys_state"), "\"N: NAME\"", state_name);
            let link_layer = tree.read(&format!("{p}/link_layer"));
            // The netdevs behind a RoCE port: per port from the GID table, else per device.
            let mut netdev_names: Vec<String> = Vec::new();
            for idx in tree
                .list(&format!("{p}/gid_attrs/ndevs"))
                .unwrap_or_default()
            {
                let rel = format!("{p}/gid_attrs/ndevs/{idx}");
                if let Some(n) = tree.read_quiet(&rel) {
                    if !n.is_empty() && !is_netdev_name(&n) {
                        tree.record(
                            &rel,
                            format!(
                                "\"{}\" is not a network interface name; not followed",
                                shorten(&n)
                            ),
                            true,
                        );
                        continue;
                    }
                    if !n.is_empty() && !netdev_names.contains(&n) {
                        netdev_names.push(n);
                    }
                }
            }
            if netdev_names.is_empty() {
                netdev_names = tree.list(&format!("{base}/device/net")).unwrap_or_default();
            }
            netdev_names.sort_by(|a, b| natural_cmp(a, b));
            let netdevs = netdev_names
                .into_iter()
                .map(|n| {
                    let mtu =
                        tree.parse(&format!("sys/class/net/{n}/mtu"), "an integer", parse_mtu);
                    (n, mtu)
                })
                .collect();
            ports.push(RdmaPort {
                port,
                state,
                phys_state,
                link_layer,
                netdevs,
            });
        }
        devices.push(RdmaDevice { name, ports });
    }
    Some(devices)
}

fn collect_pci(tree: &mut Tree<'_>) -> Vec<PciDevice> {
    let mut out = Vec::new();
    for address in tree.list("sys/bus/pci/devices").unwrap_or_default() {
        let base = format!("sys/bus/pci/devices/{address}");
        let Some(vendor) = tree.parse(&format!("{base}/vendor"), "a hex vendor ID", parse_hex)
        else {
            continue;
        };
        let class = tree
            .parse(&format!("{base}/class"), "a hex class code", parse_hex)
            .unwrap_or(0);
        let kind = match (vendor, class >> 16) {
            (0x10de, 0x03) => PciKind::Gpu,
            (0x15b3, 0x02) => PciKind::Nic,
            _ => continue,
        };
        if tree.exists(&format!("{base}/physfn")) {
            continue; // an SR-IOV virtual function: its link is the physical function's
        }
        let speed = parse_link_speed;
        let width = parse_link_width;
        let current_gt_s = tree
            .parse(&format!("{base}/current_link_speed"), "\"N GT/s\"", speed)
            .flatten();
        let current_width =
            tree.parse(&format!("{base}/current_link_width"), "a lane count", width);
        let max_gt_s = tree
            .parse(&format!("{base}/max_link_speed"), "\"N GT/s\"", speed)
            .flatten();
        let max_width = tree.parse(&format!("{base}/max_link_width"), "a lane count", width);
        let rdma_devices = if kind == PciKind::Nic {
            tree.list(&format!("{base}/infiniband")).unwrap_or_default()
        } else {
            Vec::new()
        };
        out.push(PciDevice {
            address,
            kind,
            current_gt_s,
            current_width,
            max_gt_s,
            max_width,
            rdma_devices,
        });
    }
    out
}

// The per-file parsers below are pure functions of the file's trimmed text (public so the fuzz
// targets in `fuzz/` call exactly what `collect` calls).

/// `sys/class/net/*/mtu`: the netdev MTU.
pub fn parse_mtu(s: &str) -> Option<u32> {
    s.parse::<u32>().ok()
}

/// `sys/bus/pci/devices/*/vendor` and `class`: `0x10de`, `0x030200`.
pub fn parse_hex(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// `current_link_width`, `max_link_width`: a lane count.
pub fn parse_link_width(s: &str) -> Option<u32> {
    s.parse::<u32>().ok()
}

/// `current_link_speed`, `max_link_speed`: `Some(Some(GT/s))`, or `Some(None)` for `Unknown`,
/// what the kernel shows for a link it cannot read (a device in D3cold): a fact for the PCIe
/// check, not a malformed file.
pub fn parse_link_speed(s: &str) -> Option<Option<f64>> {
    (s == "Unknown")
        .then_some(None)
        .or_else(|| parse_gt_s(s).map(Some))
}

/// `"4: ACTIVE"` → `ACTIVE`.
pub fn state_name(s: &str) -> Option<String> {
    let (num, name) = s.split_once(':')?;
    num.trim().parse::<u32>().ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// `"16.0 GT/s PCIe"`, `"2.5 GT/s"` → GT/s. `"Unknown"` (a device in a low-power state) → None.
pub fn parse_gt_s(s: &str) -> Option<f64> {
    let mut words = s.split_whitespace();
    let v: f64 = words.next()?.parse().ok()?;
    (words.next() == Some("GT/s") && v.is_finite() && v > 0.0).then_some(v)
}

/// PCIe generation of a link speed.
fn pcie_gen(gt_s: f64) -> Option<u32> {
    [
        (2.5, 1),
        (5.0, 2),
        (8.0, 3),
        (16.0, 4),
        (32.0, 5),
        (64.0, 6),
    ]
    .iter()
    .find(|(v, _)| (gt_s - v).abs() < 0.01)
    .map(|&(_, g)| g)
}

fn fmt_link(gt_s: Option<f64>, width: Option<u32>) -> String {
    let speed = match gt_s {
        Some(v) => match pcie_gen(v) {
            Some(g) => format!("Gen{g}"),
            None => format!("{v} GT/s"),
        },
        None => "speed unknown".to_owned(),
    };
    match width {
        Some(w) => format!("{speed} x{w}"),
        None => format!("{speed} width unknown"),
    }
}

/// `/etc/hosts` lines: address then names; `#` starts a comment.
pub fn parse_hosts(text: &str) -> Vec<HostsEntry> {
    text.lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("");
            let mut words = line.split_whitespace();
            let address = words.next()?.to_owned();
            let names: Vec<String> = words.map(str::to_owned).collect();
            (!names.is_empty()).then_some(HostsEntry { address, names })
        })
        .collect()
}

/// Compare names so that `mlx5_2` sorts before `mlx5_10`.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn key(s: &str) -> (String, u64, String) {
        let digits_at = s
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_digit())
            .last()
            .map(|(i, _)| i);
        match digits_at {
            Some(i) if s[i..].len() < 19 => {
                (s[..i].to_owned(), s[i..].parse().unwrap_or(0), s.to_owned())
            }
            _ => (s.to_owned(), 0, s.to_owned()),
        }
    }
    key(a).cmp(&key(b))
}

fn shorten(s: &str) -> String {
    formats::excerpt(&formats::one_line(s))
}

// ---------------------------------------------------------------------------------------------
// Judging

/// Judge the facts. Findings come in a fixed order: read problems, RDMA devices, ports, MTU,
/// host name, PCIe, rail balance.
pub fn check(facts: &NodeFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for (path, what) in &facts.unreadable {
        out.push(Finding {
            severity: Severity::Warning,
            check: "sysfs.read",
            subject: format!("/{path}"),
            seen: what.clone(),
            why: "doctor could not judge what this file describes".to_owned(),
            action: "check the file by hand; on a live node a driver may be in a bad state"
                .to_owned(),
        });
    }
    for (path, what) in &facts.refused {
        out.push(Finding {
            severity: Severity::Error,
            check: "sysfs.read",
            subject: format!("/{path}"),
            seen: what.clone(),
            why: "a sysfs file that is a FIFO, a device, oversized or names a path outside the tree is not what the kernel shows; doctor cannot vouch for this node"
                .to_owned(),
            action: "check --root: it should be a real root or a copy of one".to_owned(),
        });
    }
    check_rdma_devices(facts, &mut out);
    check_ports(facts, &mut out);
    check_hostname(facts, &mut out);
    check_pcie(facts, &mut out);
    check_rails(facts, &mut out);
    out
}

fn check_rdma_devices(facts: &NodeFacts, out: &mut Vec<Finding>) {
    let devices = facts.rdma.as_deref().unwrap_or_default();
    if devices.is_empty() {
        out.push(Finding {
            severity: Severity::Error,
            check: "rdma.devices",
            subject: "/sys/class/infiniband".to_owned(),
            seen: if facts.rdma.is_none() {
                "missing: no RDMA stack loaded".to_owned()
            } else {
                "no RDMA devices".to_owned()
            },
            why: "NCCL finds no InfiniBand/RoCE device and falls back to TCP sockets, an order \
                  of magnitude slower"
                .to_owned(),
            action: "check the NICs are present (lspci -d 15b3:), load mlx5_core and mlx5_ib, \
                     or on Kubernetes check the Network Operator's driver pod on this node"
                .to_owned(),
        });
    } else {
        let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
        out.push(Finding {
            severity: Severity::Info,
            check: "rdma.devices",
            subject: "/sys/class/infiniband".to_owned(),
            seen: format!(
                "{} RDMA device{}: {}",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            ),
            why: "NCCL can use InfiniBand/RoCE instead of TCP sockets".to_owned(),
            action: "nothing".to_owned(),
        });
    }
    let lag = has_roce_lag(facts);
    for nic in facts.pci.iter().filter(|d| d.kind == PciKind::Nic) {
        if nic.rdma_devices.is_empty() && lag {
            out.push(Finding {
                severity: Severity::Warning,
                check: "rdma.devices",
                subject: format!("PCI {}", nic.address),
                seen: "Mellanox/NVIDIA NIC with no RDMA device of its own, on a node with a \
                       RoCE LAG (mlx5_bond_*)"
                    .to_owned(),
                why: "in a RoCE LAG only the first function of the bond carries the RDMA \
                      device; any other function without one has lost its rail"
                    .to_owned(),
                action: "check with `rdma link` that this function is a member of a bond"
                    .to_owned(),
            });
        } else if nic.rdma_devices.is_empty() {
            out.push(Finding {
                severity: Severity::Error,
                check: "rdma.devices",
                subject: format!("PCI {}", nic.address),
                seen: "Mellanox/NVIDIA NIC with no RDMA device".to_owned(),
                why: "this NIC's rail is invisible to NCCL: its traffic moves to the other rails \
                      or to TCP, and the job runs at a fraction of its bandwidth"
                    .to_owned(),
                action: "check `rdma link` and dmesg for mlx5_ib errors on this function; \
                         reload mlx5_ib or the driver container, check firmware (mlxfwmanager)"
                    .to_owned(),
            });
        }
    }
}

/// Whether the node bonds RoCE ports (RoCE LAG): the RDMA device is then `mlx5_bond_N` on the
/// bond's first PCI function and the other functions have none.
fn has_roce_lag(facts: &NodeFacts) -> bool {
    facts
        .rdma
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|d| d.name.contains("_bond_"))
}

/// A check that did not run, and why: distinct from one that passed.
fn skipped(check: &'static str, subject: &str, reason: &str, needs: &str) -> Finding {
    Finding {
        severity: Severity::Skipped,
        check,
        subject: subject.to_owned(),
        seen: format!("skipped: {reason}"),
        why: format!("this check needs {needs}"),
        action: "nothing, if this node has none; otherwise see why they are not visible".to_owned(),
    }
}

const NO_RDMA: &str = "no RDMA devices (see rdma.devices)";
const NO_GPU: &str = "no NVIDIA GPU on the PCI bus (vendor 0x10de, display class)";

fn check_ports(facts: &NodeFacts, out: &mut Vec<Finding>) {
    if facts.rdma.as_deref().unwrap_or_default().is_empty() {
        out.push(skipped("rdma.port", "RDMA ports", NO_RDMA, "RDMA devices"));
        out.push(skipped("roce.mtu", "RoCE ports", NO_RDMA, "RoCE ports"));
        return;
    }
    let mut mtu_findings = Vec::new();
    for dev in facts.rdma.as_deref().unwrap_or_default() {
        if dev.ports.is_empty() {
            out.push(Finding {
                severity: Severity::Error,
                check: "rdma.port",
                subject: dev.name.clone(),
                seen: "no ports".to_owned(),
                why: "an RDMA device without ports cannot carry traffic".to_owned(),
                action: "check dmesg for mlx5 errors; reload the driver".to_owned(),
            });
        }
        for port in &dev.ports {
            let subject = format!("{} port {}", dev.name, port.port);
            let layer = port.link_layer.as_deref().unwrap_or("link layer unknown");
            match port.state.as_deref() {
                Some("ACTIVE") => out.push(Finding {
                    severity: Severity::Info,
                    check: "rdma.port",
                    subject: subject.clone(),
                    seen: format!("ACTIVE, {layer}"),
                    why: "NCCL uses only ACTIVE ports".to_owned(),
                    action: "nothing".to_owned(),
                }),
                Some(state) => out.push(Finding {
                    severity: Severity::Error,
                    check: "rdma.port",
                    subject: subject.clone(),
                    seen: format!(
                        "{state} (physical state {}), {layer}",
                        port.phys_state.as_deref().unwrap_or("unknown")
                    ),
                    why: "NCCL uses only ACTIVE ports: this rail is lost and the job either \
                          fails to connect or runs on fewer rails"
                        .to_owned(),
                    action: "check the cable and the switch port (ibstat / `rdma link`); INIT on \
                             InfiniBand means no subnet manager has configured the port"
                        .to_owned(),
                }),
                None => out.push(Finding {
                    severity: Severity::Warning,
                    check: "rdma.port",
                    subject: subject.clone(),
                    seen: "state unknown".to_owned(),
                    why: "doctor cannot tell whether NCCL can use this port".to_owned(),
                    action: "run `ibstat` or `rdma link` on the node".to_owned(),
                }),
            }
            if port.link_layer.as_deref() == Some("Ethernet") {
                check_mtu(&subject, port, &mut mtu_findings);
            }
        }
    }
    out.extend(mtu_findings);
}

fn check_mtu(subject: &str, port: &RdmaPort, out: &mut Vec<Finding>) {
    let best = IB_MTUS[IB_MTUS.len() - 1];
    let needed = best + ROCE_OVERHEAD_BYTES;
    if port.netdevs.is_empty() {
        out.push(Finding {
            severity: Severity::Warning,
            check: "roce.mtu",
            subject: subject.to_owned(),
            seen: "RoCE port with no netdev found".to_owned(),
            why: "RoCE needs a netdev with an IP address for its GIDs; without one the port \
                  cannot carry RoCEv2 traffic"
                .to_owned(),
            action: "check `rdma link` shows a netdev for the port and that it has an IP address"
                .to_owned(),
        });
    }
    for (netdev, mtu) in &port.netdevs {
        let Some(mtu) = *mtu else {
            out.push(Finding {
                severity: Severity::Warning,
                check: "roce.mtu",
                subject: format!("{subject} ({netdev})"),
                seen: "netdev MTU unknown".to_owned(),
                why: format!("RoCE runs IB MTU {best} only if the netdev MTU is at least {needed}"),
                action: format!("check `ip link show {netdev}`"),
            });
            continue;
        };
        let active = active_mtu(mtu);
        let active_text = active.map_or_else(
            || "no RoCE MTU at all".to_owned(),
            |m| format!("active RoCE MTU {m}"),
        );
        if active == Some(best) {
            out.push(Finding {
                severity: Severity::Info,
                check: "roce.mtu",
                subject: format!("{subject} ({netdev})"),
                seen: format!("netdev MTU {mtu}: {active_text}"),
                why: "RoCE carries the largest IB MTU, 4096, when the netdev MTU is at least 4192"
                    .to_owned(),
                action: "nothing".to_owned(),
            });
        } else {
            out.push(Finding {
                severity: Severity::Warning,
                check: "roce.mtu",
                subject: format!("{subject} ({netdev})"),
                seen: format!("netdev MTU {mtu}: {active_text}"),
                why: format!(
                    "RoCE carries IB MTU {best} only when the netdev MTU is at least \
                     {best} + {ROCE_OVERHEAD_BYTES} = {needed} (Linux iboe_get_mtu); smaller \
                     packets cost bandwidth, and the whole job runs at the smallest MTU of any \
                     node"
                ),
                action: format!(
                    "set the MTU of {netdev} to 9000 (or at least {needed}) on every node and \
                     switch port of the fabric, e.g. `ip link set {netdev} mtu 9000` and persist \
                     it in the network configuration"
                ),
            });
        }
    }
}

fn check_hostname(facts: &NodeFacts, out: &mut Vec<Finding>) {
    let Some((name, source)) = &facts.hostname else {
        out.push(Finding {
            severity: Severity::Warning,
            check: "hostname",
            subject: "host name".to_owned(),
            seen: "unknown: no /proc/sys/kernel/hostname or /etc/hostname".to_owned(),
            why: "doctor cannot check how this node's name resolves".to_owned(),
            action: "pass --hostname NAME".to_owned(),
        });
        return;
    };
    let subject = format!("{name} (from {source})");
    let short = name.split('.').next().unwrap_or(name);
    let hit = facts.hosts.as_deref().unwrap_or_default().iter().find(|e| {
        e.names
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name) || n.eq_ignore_ascii_case(short))
    });
    let rendezvous_why = "torchrun's c10d rendezvous and NCCL's bootstrap advertise the address \
                          the host name resolves to; other nodes then connect to a loopback \
                          address (themselves) or cannot resolve the name at all, and the job \
                          hangs at start-up";
    let rendezvous_do = "give torchrun the rank-0 node's IP address (`railyard launch` does), \
                         and map the name to the node's own address in /etc/hosts or DNS";
    match hit {
        Some(e) if is_loopback(&e.address) => out.push(Finding {
            severity: Severity::Warning,
            check: "hostname",
            subject,
            seen: format!("resolves to {} in /etc/hosts", e.address),
            why: rendezvous_why.to_owned(),
            action: rendezvous_do.to_owned(),
        }),
        Some(e) => out.push(Finding {
            severity: Severity::Info,
            check: "hostname",
            subject,
            seen: format!("resolves to {} in /etc/hosts", e.address),
            why: "other nodes reach this node under its name (the rendezvous endpoint should still be an IP address)".to_owned(),
            action: "nothing".to_owned(),
        }),
        None => out.push(Finding {
            severity: Severity::Warning,
            check: "hostname",
            subject,
            seen: if facts.hosts.is_none() {
                "no /etc/hosts; resolution is left to DNS, which doctor does not query".to_owned()
            } else {
                "not in /etc/hosts; resolution is left to DNS, which doctor does not query"
                    .to_owned()
            },
            why: "with host networking other nodes often cannot resolve a node's name, so a \
                  rendezvous endpoint given by name fails"
                .to_owned(),
            action: rendezvous_do.to_owned(),
        }),
    }
}

fn is_loopback(address: &str) -> bool {
    address.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn check_pcie(facts: &NodeFacts, out: &mut Vec<Finding>) {
    for kind in [PciKind::Gpu, PciKind::Nic] {
        let what = match kind {
            PciKind::Gpu => "GPU",
            PciKind::Nic => "NIC",
        };
        let mut full: Vec<String> = Vec::new();
        if !facts.pci.iter().any(|d| d.kind == kind) {
            let reason = match kind {
                PciKind::Gpu => NO_GPU,
                PciKind::Nic => "no Mellanox/NVIDIA NIC on the PCI bus (vendor 0x15b3)",
            };
            out.push(skipped(
                "pcie.link",
                &format!("{what}s"),
                reason,
                &format!("{what}s on the PCI bus"),
            ));
            continue;
        }
        for d in facts.pci.iter().filter(|d| d.kind == kind) {
            let current = fmt_link(d.current_gt_s, d.current_width);
            let max = fmt_link(d.max_gt_s, d.max_width);
            let subject = format!("{what} {}", d.address);
            let (Some(cs), Some(cw), Some(ms), Some(mw)) =
                (d.current_gt_s, d.current_width, d.max_gt_s, d.max_width)
            else {
                out.push(Finding {
                    severity: Severity::Warning,
                    check: "pcie.link",
                    subject,
                    seen: format!("link {current}, maximum {max}"),
                    why: "a device in a deep power state or with a failed link does not \
                          report its link"
                        .to_owned(),
                    action: "check `lspci -vv -s ADDRESS` (LnkSta) under load".to_owned(),
                });
                continue;
            };
            if cw < mw {
                out.push(Finding {
                    severity: Severity::Warning,
                    check: "pcie.link",
                    subject,
                    seen: format!("link {current}, maximum {max}: running on fewer lanes"),
                    why: format!(
                        "a narrower link than the slot supports is usually a seating, riser or \
                         slot problem rather than power saving, and caps the {what}'s \
                         host bandwidth (GPUDirect RDMA traffic crosses this link)"
                    ),
                    action: "check again under load; if it stays narrow, reseat the card or \
                             check the riser and BIOS slot settings"
                        .to_owned(),
                });
            } else if cs + 0.01 < ms {
                out.push(Finding {
                    severity: Severity::Warning,
                    check: "pcie.link",
                    subject,
                    seen: format!("link {current}, maximum {max}"),
                    why: format!(
                        "{what}s lower their PCIe link speed when idle to save power: at idle \
                         this is not a fault. It is one only if it persists under load, when \
                         it caps host-to-device and GPUDirect RDMA bandwidth"
                    ),
                    action: "check again while a job or nccl-tests runs (`nvidia-smi -q -d \
                             PCIE`, or `lspci -vv` LnkSta); if it stays low, check the slot, \
                             riser and BIOS PCIe settings"
                        .to_owned(),
                });
            } else {
                full.push(current);
            }
        }
        if !full.is_empty() {
            let mut kinds = full.clone();
            kinds.dedup();
            out.push(Finding {
                severity: Severity::Info,
                check: "pcie.link",
                subject: format!("{what}s"),
                seen: format!(
                    "{} at their maximum link ({})",
                    full.len(),
                    kinds.join(", ")
                ),
                why: "a full-speed link carries host-to-device and GPUDirect RDMA traffic without a cap".to_owned(),
                action: "nothing".to_owned(),
            });
        }
    }
}

fn check_rails(facts: &NodeFacts, out: &mut Vec<Finding>) {
    let gpus = facts.pci.iter().filter(|d| d.kind == PciKind::Gpu).count();
    let nics = facts.rdma.as_deref().map_or(0, <[RdmaDevice]>::len);
    if nics == 0 {
        let reason = if gpus == 0 {
            format!("{NO_GPU} and {NO_RDMA}")
        } else {
            NO_RDMA.to_owned()
        };
        out.push(skipped(
            "rails.balance",
            "GPUs and RDMA devices",
            &reason,
            "GPUs and RDMA devices to pair",
        ));
        return;
    }
    if gpus == 0 {
        out.push(Finding {
            severity: Severity::Warning,
            check: "rails.balance",
            subject: "GPUs and RDMA devices".to_owned(),
            seen: format!("no NVIDIA GPU on the PCI bus, {nics} RDMA devices"),
            why: "a GPU node without visible GPUs cannot run its share of a job".to_owned(),
            action: "check `nvidia-smi` and `lspci -d 10de:`".to_owned(),
        });
        return;
    }
    let nic_functions = if has_roce_lag(facts) {
        0 // bonded functions share one RDMA device: the function count says nothing
    } else {
        facts.pci.iter().filter(|d| d.kind == PciKind::Nic).count()
    };
    let mut seen = format!(
        "{gpus} GPUs, {nics} RDMA device{}",
        if nics == 1 { "" } else { "s" }
    );
    if nic_functions > nics {
        seen.push_str(&format!(" ({nic_functions} RDMA NICs on the PCI bus)"));
    }
    if (gpus % nics == 0 || nics % gpus == 0) && nic_functions <= nics {
        let ratio = if nics >= gpus {
            format!("{} per GPU", nics / gpus)
        } else {
            format!("one per {} GPUs", gpus / nics)
        };
        out.push(Finding {
            severity: Severity::Info,
            check: "rails.balance",
            subject: "GPUs and RDMA devices".to_owned(),
            seen: format!("{seen}: {ratio}"),
            why: "each GPU has a whole number of NICs (or each NIC a whole number of GPUs), so no rail carries more than its share".to_owned(),
            action: "nothing".to_owned(),
        });
    } else {
        out.push(Finding {
            severity: Severity::Warning,
            check: "rails.balance",
            subject: "GPUs and RDMA devices".to_owned(),
            seen: if nic_functions > nics {
                format!("{seen}: a rail is missing")
            } else {
                format!("{seen}: not a whole number per GPU")
            },
            why: "NCCL pairs each GPU with its nearest NIC; with an uneven count some rails \
                  carry two GPUs' traffic and become the bottleneck, or a front-end NIC is \
                  taken for a rail"
                .to_owned(),
            action: "list only the rail NICs in NCCL_IB_HCA (exclude the front-end NIC with \
                     `=`-exact names) and check no NIC is missing"
                .to_owned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_values() {
        assert_eq!(state_name("4: ACTIVE").as_deref(), Some("ACTIVE"));
        assert_eq!(state_name("5: LinkUp").as_deref(), Some("LinkUp"));
        assert_eq!(state_name("ACTIVE"), None);
        assert_eq!(parse_gt_s("16.0 GT/s PCIe"), Some(16.0));
        assert_eq!(parse_gt_s("2.5 GT/s"), Some(2.5));
        assert_eq!(parse_gt_s("Unknown"), None);
        assert_eq!(parse_gt_s("NaN GT/s"), None);
        assert_eq!(pcie_gen(32.0), Some(5));
        assert_eq!(pcie_gen(2.5), Some(1));
    }

    #[test]
    fn natural_order_of_device_names() {
        let mut v = vec!["mlx5_10", "mlx5_2", "mlx5_1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["mlx5_1", "mlx5_2", "mlx5_10"]);
    }

    #[test]
    fn roce_lag_function_without_device_is_a_warning() {
        let nic = |address: &str, devs: &[&str]| PciDevice {
            address: address.to_owned(),
            kind: PciKind::Nic,
            current_gt_s: Some(32.0),
            current_width: Some(16),
            max_gt_s: Some(32.0),
            max_width: Some(16),
            rdma_devices: devs.iter().map(|d| (*d).to_owned()).collect(),
        };
        let facts = NodeFacts {
            rdma: Some(vec![RdmaDevice {
                name: "mlx5_bond_0".to_owned(),
                ports: Vec::new(),
            }]),
            pci: vec![
                nic("0000:18:00.0", &["mlx5_bond_0"]),
                nic("0000:18:00.1", &[]),
            ],
            ..NodeFacts::default()
        };
        let findings = check(&facts);
        let f = findings
            .iter()
            .find(|f| f.subject == "PCI 0000:18:00.1")
            .expect("a finding for the bonded function");
        assert_eq!(f.severity, Severity::Warning);
    }

    #[test]
    fn hosts_file_with_comments() {
        let e = parse_hosts("127.0.0.1 localhost # me\n# all\n\n10.0.0.5 gpu-1 gpu-1.example\n");
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].address, "10.0.0.5");
        assert_eq!(e[1].names, ["gpu-1", "gpu-1.example"]);
    }
}
