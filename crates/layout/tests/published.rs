//! railyard's step model against published training throughput: Megatron-LM SC '21 Table 1 and
//! its 162B (TP, PP) sweep on Selene, Llama 3 405B (Dubey et al. 2024, Table 4) on Meta's RoCE
//! cluster. `cargo test -p layout --test published -- --nocapture` prints the tables of the book's
//! training-step page (`docs/src/layouts.md`).

mod common;

use layout::{preset, Layout, Optimizer, Precision, Recompute, Training};

/// Megatron-LM SC '21 (Narayanan et al., arXiv 2104.04473), Table 1: model, TP, PP, GPUs,
/// global batch, achieved TFLOP/s per GPU.
const MEGATRON_TABLE_1: [(&str, u32, u32, u32, u32, f64); 10] = [
    ("megatron-1.7b", 1, 1, 32, 512, 137.0),
    ("megatron-3.6b", 2, 1, 64, 512, 138.0),
    ("megatron-7.5b", 4, 1, 128, 512, 142.0),
    ("megatron-18b", 8, 1, 256, 1024, 135.0),
    ("megatron-39b", 8, 2, 512, 1536, 138.0),
    ("megatron-76b", 8, 4, 1024, 1792, 140.0),
    ("megatron-145b", 8, 8, 1536, 2304, 148.0),
    ("megatron-310b", 8, 16, 1920, 2160, 155.0),
    ("megatron-530b", 8, 35, 2520, 2520, 163.0),
    ("megatron-1t", 8, 64, 3072, 3072, 163.0),
];

/// Megatron SC '21's runs: FP16, micro-batch 1, full recomputation, plain DP without overlap,
/// 1F1B (§5: the Table 1 runs; the code of April 2021 had no gradient overlap).
fn megatron(name: &str, tp: u32, pp: u32, gpus: u32, batch: u32) -> Training {
    let layout = Layout {
        tp,
        pp,
        dp: gpus / (tp * pp),
        ..Layout::default()
    };
    Training {
        global_batch: batch,
        precision: Precision::Fp16,
        recompute: Recompute::Full,
        ..Training::new(preset(name).unwrap(), layout)
    }
}

#[test]
fn megatron_table_1_within_10_percent_on_8_of_10_rows() {
    let selene = common::selene();
    println!("| model | TP | PP | GPUs | batch | published TFLOP/s | railyard | error | bubble | exposed comm |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut within = 0;
    for (name, tp, pp, gpus, batch, published) in MEGATRON_TABLE_1 {
        let step = common::price(&selene, &megatron(name, tp, pp, gpus, batch), None);
        let err = step.tflops_per_gpu / published - 1.0;
        within += usize::from(err.abs() <= 0.10);
        println!(
            "| {} | {tp} | {pp} | {gpus} | {batch} | {published} | {:.0} | {:+.1}% | {:.1}% | {:.1}% |",
            name.trim_start_matches("megatron-"),
            step.tflops_per_gpu,
            err * 100.0,
            step.bubble_s / step.step_s * 100.0,
            step.exposed_s / step.step_s * 100.0
        );
    }
    assert!(within >= 8, "{within} of 10 rows within ±10%");
}

/// The A100 efficiency is the one that reproduces its row (SC '21 Table 1, 145B: 148 TFLOP/s).
#[test]
fn a100_efficiency_reproduces_its_row() {
    let (name, tp, pp, gpus, batch, published) = MEGATRON_TABLE_1[6];
    let step = common::price(
        &common::selene(),
        &megatron(name, tp, pp, gpus, batch),
        None,
    );
    println!("145B row: {:.2} TFLOP/s", step.tflops_per_gpu);
    assert!((step.tflops_per_gpu / published - 1.0).abs() < 0.005);
}

/// SC '21 §5.4.1, Figure 13: the 162.2B model on 64 GPUs, batch 128, over (TP, PP) with
/// TP × PP = 64. Published: throughput peaks at TP = 8 (one DGX) and falls once TP crosses
/// hosts. railyard must order the five the same way: rising to TP 8, falling after.
#[test]
fn megatron_162b_sweep_peaks_at_tp_8() {
    let selene = common::selene();
    let mut rows = Vec::new();
    for (tp, pp) in [(2, 32), (4, 16), (8, 8), (16, 4), (32, 2)] {
        let step = common::price(&selene, &megatron("megatron-162b", tp, pp, 64, 128), None);
        rows.push((tp, pp, step.tflops_per_gpu));
    }
    let best = rows.iter().map(|r| r.2).fold(0.0, f64::max);
    println!("| (TP, PP) | railyard TFLOP/s | ratio to TP 8 |");
    println!("|---|---|---|");
    for (tp, pp, x) in &rows {
        println!("| ({tp}, {pp}) | {x:.0} | {:.2} |", x / best);
    }
    assert_eq!(rows[2].2, best, "peak at TP = 8: {rows:?}");
    assert!(rows[0].2 < rows[1].2 && rows[1].2 < rows[2].2, "{rows:?}");
    assert!(rows[2].2 > rows[3].2 && rows[3].2 > rows[4].2, "{rows:?}");
}

/// Dubey et al. 2024 (arXiv 2407.21783), Table 4: 405B, TP 8, PP 16, sequences of 8,192
/// (131,072 with CP 16), 16M tokens a step; BF16; order [TP, CP, PP, DP] (§3.3.2), FSDP-style
/// sharding of optimizer state and gradients with overlap (distributed optimizer here).
fn llama3(cp: u32, dp: u32, seq: u32) -> Training {
    let mut model = preset("llama3-405b").unwrap();
    model.seq = seq;
    let layout = Layout {
        tp: 8,
        cp,
        pp: 16,
        dp,
        vp: LLAMA3_VP,
        order: layout::layout::PP_INNER_ORDER,
        ..Layout::default()
    };
    Training {
        global_batch: (16 * 1024 * 1024 / seq),
        optimizer: Optimizer::Distributed,
        overlap_dp: true,
        ..Training::new(model, layout)
    }
}

/// Virtual stages: not published; 126 layers over 16 stages is ~8 layers a rank, taken as 4
/// chunks of 2.
const LLAMA3_VP: u32 = 4;

/// E-ECMP (Dubey et al. §3.3.1: the switches hash on more RoCE header fields and NCCLX spreads
/// a connection over several QPs) modelled as adaptive routing.
fn meta_routing() -> fabric::RoutingConfig {
    fabric::RoutingConfig {
        mode: fabric::RoutingMode::Adaptive,
        ..fabric::RoutingConfig::default()
    }
}

#[test]
#[ignore]
fn print_calibration() {
    let (name, tp, pp, gpus, batch, published) = MEGATRON_TABLE_1[6];
    let t = megatron(name, tp, pp, gpus, batch);
    let cfg = fabric::RoutingConfig::default();
    println!(
        "A100: {:.4}",
        common::calibrate(&common::selene(), &t, &cfg, published)
    );
    println!(
        "H100: {:.4}",
        common::calibrate(
            &common::meta_roce(),
            &llama3(1, 64, 8192),
            &meta_routing(),
            430.0
        )
    );
}

#[test]
fn llama3_table_4_within_10_percent_and_both_directions_right() {
    let meta = common::meta_roce();
    let rows = [
        (8192, 1, 64, 8192, 430.0),
        (16_384, 1, 128, 8192, 400.0),
        (16_384, 16, 8, 131_072, 380.0),
    ];
    println!("| GPUs | TP | CP | PP | DP | seq | published TFLOP/s | railyard | error | bubble | exposed comm |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut got = Vec::new();
    for (gpus, cp, dp, seq, published) in rows {
        let step = common::price_with(&meta, &llama3(cp, dp, seq), None, &meta_routing());
        let err = step.tflops_per_gpu / published - 1.0;
        println!(
            "| {gpus} | 8 | {cp} | 16 | {dp} | {seq} | {published} | {:.0} | {:+.1}% | {:.1}% | {:.1}% |",
            step.tflops_per_gpu,
            err * 100.0,
            step.bubble_s / step.step_s * 100.0,
            step.exposed_s / step.step_s * 100.0
        );
        for c in &step.comms {
            println!(
                "    {} {}: {:.3} s, exposed {:.3} s, {} busbw {:.0} GB/s (ideal alone {:.0}) {}",
                c.kind.name(),
                c.op.name(),
                c.time_s,
                c.exposed_s,
                c.tier,
                c.busbw_gb_s,
                c.ideal_busbw_gb_s,
                c.algorithm
            );
        }
        assert!(err.abs() <= 0.10, "{gpus} GPUs, cp {cp}: {err:+.3}");
        got.push(step.tflops_per_gpu);
    }
    assert!(got[1] < got[0], "8K → 16K GPUs lowers TFLOP/s");
    assert!(got[2] < got[1], "CP 16 at 131k tokens lowers TFLOP/s");
}
