//! The doctor's per-file parsers (`/sys`, `/proc`, `/etc` files) and its checks. The input is
//! the text of the files it reads, separated by lines `--`: port state, physical state, link
//! layer, netdev MTU, PCI vendor, class, current speed, current width, maximum speed, maximum
//! width, host name, `/etc/hosts`. The facts go through `check` and both renderers.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use ops::doctor::{self, NodeFacts, PciDevice, PciKind, RdmaDevice, RdmaPort};

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let files: Vec<&str> = text.split("\n--\n").map(str::trim).collect();
    let f = |i: usize| files.get(i).copied().unwrap_or("");
    let mut names: Vec<&str> = files.clone();
    names.sort_by(|a, b| doctor::natural_cmp(a, b));
    let vendor = doctor::parse_hex(f(4));
    let class = doctor::parse_hex(f(5)).unwrap_or(0);
    let kind = match (vendor, class >> 16) {
        (Some(0x10de), 0x03) => PciKind::Gpu,
        _ => PciKind::Nic,
    };
    let facts = NodeFacts {
        rdma: Some(vec![RdmaDevice {
            name: "mlx5_0".into(),
            ports: vec![RdmaPort {
                port: "1".into(),
                state: doctor::state_name(f(0)),
                phys_state: doctor::state_name(f(1)),
                link_layer: Some(f(2).to_owned()).filter(|s| !s.is_empty()),
                netdevs: vec![("eth0".into(), doctor::parse_mtu(f(3)))],
            }],
        }]),
        hostname: Some(f(10).to_owned())
            .filter(|s| !s.is_empty())
            .map(|h| (h, "/etc/hostname".to_owned())),
        hosts: Some(doctor::parse_hosts(f(11))),
        pci: vec![PciDevice {
            address: "0000:18:00.0".into(),
            kind,
            current_gt_s: doctor::parse_link_speed(f(6)).flatten(),
            current_width: doctor::parse_link_width(f(7)),
            max_gt_s: doctor::parse_link_speed(f(8)).flatten(),
            max_width: doctor::parse_link_width(f(9)),
            rdma_devices: vec!["mlx5_0".into()],
        }],
        unreadable: Vec::new(),
        refused: Vec::new(),
    };
    let findings = doctor::check(&facts);
    let _ = railyard::commands::doctor::render_text(&findings);
    let _ = railyard::commands::doctor::render_json(&findings);
});
