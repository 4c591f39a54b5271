//! Placement files (`fabric collective --placement`, `launch --placement`) and `launch
//! --addresses` files: the text after a line `#addresses` is the addresses file. The placement
//! is checked against a small cluster and turned into a launch plan, as `launch` does.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;

use formats::placement::{self, PlacementFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let (placement_text, addresses_text) = match text.split_once("\n#addresses\n") {
        Some((p, a)) => (p, Some(a)),
        None => (text, None),
    };
    let given = addresses_text.map(|a| ops::launch::parse_addresses("hosts", a));
    let Ok(file) = formats::input::parse_typed::<PlacementFile>("placement.json", placement_text)
    else {
        return;
    };
    let cluster = common::small_cluster();
    let Ok(pods) = placement::resolve("placement.json", &file, cluster) else {
        return;
    };
    let addresses: BTreeMap<String, std::net::IpAddr> = match given {
        Some(Ok(a)) => a,
        Some(Err(_)) => return,
        None => cluster
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (
                    n.name.clone(),
                    std::net::IpAddr::from([10, 0, 0, i as u8 + 1]),
                )
            })
            .collect(),
    };
    let options = ops::launch::LaunchOptions {
        port: 29500,
        qps: Some(4),
        hca_prefix: Some("mlx5_".into()),
        hca: Vec::new(),
        socket_ifname: Some("^lo,docker".into()),
        script: "train.py".into(),
        rdzv_id: "job".into(),
        advice: Vec::new(),
        training: None,
    };
    if let Ok(plan) = ops::launch::plan(
        cluster,
        &pods,
        &addresses,
        &options,
        "placement.json",
        "addresses",
    ) {
        let _ = ops::launch::render_shell(&plan);
        let _ = ops::launch::render_hostfile(&plan);
    }
});
