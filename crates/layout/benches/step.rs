//! One step of a 16,384-GPU Llama 3 405B layout job (TP 8, PP 16, DP 128: every GPU of
//! `oci-h100-16k`) priced: groups, routing, the joint solve, the tuner (issue 28: < 1 s).

use fabric::{Fabric, Rank, RoutingConfig};
use layout::{preset, Layout, StepInput, Training};
use topology::{build_from_spec, NodeId};

fn main() {
    divan::main();
}

#[divan::bench(sample_count = 3)]
fn price_llama3_405b_16k_gpus(bencher: divan::Bencher) {
    let cluster = build_from_spec(&topology::examples::oci_h100(2048)).expect("valid preset");
    let ranks: Vec<Rank> = (0..2048u32)
        .flat_map(|n| {
            (0..8).map(move |gpu| Rank {
                node: NodeId(n),
                gpu,
            })
        })
        .collect();
    let mut t = Training::new(
        preset("llama3-405b").expect("preset"),
        Layout::parse("tp=8,pp=16,dp=128,vp=4").expect("layout"),
    );
    t.global_batch = 2048;
    let cfg = RoutingConfig::default();
    bencher.bench(|| {
        let mut fabric = Fabric::new(&cluster);
        layout::price_step(
            &mut fabric,
            StepInput {
                training: &t,
                ranks: &ranks,
                cfg: &cfg,
                running: &[],
                efficiency: None,
            },
        )
        .expect("valid job")
    });
}

/// A 1,024-GPU Megatron 76B job (TP 8, PP 4, DP 32) priced as the simulator prices a layout job
/// when it starts: on an empty `oci-h100-16k` kept between calls, without hot links. Its cost
/// should follow the job's resources, not the fabric's (design note of `Fabric::paces`).
#[divan::bench(sample_count = 5)]
fn start_pricing_megatron_76b_1k_gpus_on_16k(bencher: divan::Bencher) {
    let cluster = build_from_spec(&topology::examples::oci_h100(2048)).expect("valid preset");
    let ranks: Vec<Rank> = (0..128u32)
        .flat_map(|n| {
            (0..8).map(move |gpu| Rank {
                node: NodeId(n * 16),
                gpu,
            })
        })
        .collect();
    let mut t = Training::new(
        preset("megatron-76b").expect("preset"),
        Layout::parse("tp=8,pp=4,dp=32").expect("layout"),
    );
    t.global_batch = 1792;
    let cfg = RoutingConfig::default();
    let mut fabric = Fabric::new(&cluster);
    bencher.bench_local(|| {
        layout::price_step_without_hot_links(
            &mut fabric,
            StepInput {
                training: &t,
                ranks: &ranks,
                cfg: &cfg,
                running: &[],
                efficiency: None,
            },
        )
        .expect("valid job")
    });
}
