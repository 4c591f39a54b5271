//! `simulate`'s flags as runs (`ops::simulate`): policies crossed with schedulers in order,
//! which check wins when several flags are bad, bad flag values apart from bad files, and each
//! run's configuration; `--nccl`/`--qps` as one configuration.

use ops::simulate::{configs, runs, SimulateError, SimulateOptions};
use sim::engine::{Order, SimConfig};
use sim::{SimTime, TraceJob};

fn cluster() -> topology::Cluster {
    topology::build_from_spec(&topology::examples::oci_h100(256)).unwrap()
}

fn options(policies: &[&str]) -> SimulateOptions {
    SimulateOptions {
        policies: policies.iter().map(|p| p.to_string()).collect(),
        cycle_s: 10.0,
        ..SimulateOptions::default()
    }
}

fn flag_error(r: Result<Vec<ops::simulate::Run>, SimulateError>) -> String {
    match r {
        Err(SimulateError::Flag(m)) => m,
        other => panic!("expected a bad flag value, got {other:?}"),
    }
}

#[test]
fn every_policy_runs_under_every_scheduler_policy_first() {
    let c = cluster();
    let o = SimulateOptions {
        schedulers: vec!["kueue".into(), "kai".into()],
        ..options(&["fifo", "srtf"])
    };
    let names: Vec<String> = runs(&c, "c.yaml", &o)
        .unwrap()
        .into_iter()
        .map(|(p, _)| p.name)
        .collect();
    assert_eq!(
        names,
        ["fifo (kueue)", "fifo (kai)", "srtf (kueue)", "srtf (kai)"]
    );
    // No --scheduler: one unlabelled run per policy.
    let one = runs(&c, "c.yaml", &options(&["sjf"])).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(
        (one[0].0.name.as_str(), &one[0].0.order),
        ("sjf", &Order::Sjf)
    );
}

#[test]
fn bad_flag_values_are_usage_errors_policies_checked_first() {
    let c = cluster();
    let bad_cycle = |o: SimulateOptions| SimulateOptions { cycle_s: -1.0, ..o };
    let e = flag_error(runs(&c, "c.yaml", &bad_cycle(options(&["lifo"]))));
    assert!(e.starts_with("--policy: `lifo`: unknown order"), "{e}");
    let compare = SimulateOptions {
        compare: true,
        ..options(&["fifo", "tiresias:0"])
    };
    let e = flag_error(runs(&c, "c.yaml", &compare));
    assert!(e.starts_with("--compare: `tiresias:0`"), "{e}");
    let e = flag_error(runs(&c, "c.yaml", &bad_cycle(options(&["fifo"]))));
    assert_eq!(e, "--cycle-s: expected seconds in 0..=86400");
    let horizon = SimulateOptions {
        horizon_s: Some(0.0),
        ..options(&["fifo"])
    };
    let e = flag_error(runs(&c, "c.yaml", &horizon));
    assert_eq!(e, "--horizon-s: expected a positive number of seconds");
    let scheduler = SimulateOptions {
        schedulers: vec!["slurm".into()],
        ..options(&["fifo"])
    };
    assert!(matches!(
        runs(&c, "c.yaml", &scheduler),
        Err(SimulateError::Flag(_))
    ));
    // The value parsers the CLI's clap flags use say what was expected.
    assert_eq!(ops::simulate::parse_cycle_s("86400"), Ok(86_400.0));
    assert!(ops::simulate::parse_cycle_s("86401").is_err());
    assert!(ops::simulate::parse_horizon_s("0").is_err());
}

#[test]
fn a_cluster_without_gpus_is_a_file_error_naming_it() {
    let mut c = cluster();
    for n in &mut c.nodes {
        n.gpus = 0;
    }
    match runs(&c, "empty.yaml", &options(&["fifo"])) {
        Err(SimulateError::Input(e)) => {
            assert!(e
                .to_string()
                .starts_with("empty.yaml: the cluster has no GPUs"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn each_run_gets_the_flags_and_the_defaults() {
    let c = cluster();
    let o = SimulateOptions {
        horizon_s: Some(3600.0),
        check_invariants: true,
        no_network: true,
        checkpoint_interval_s: 60.0,
        restart_cost_s: 5.0,
        repair_hours: 1.0,
        ..options(&["fifo", "fair-share"])
    };
    let r = runs(&c, "c.yaml", &o).unwrap();
    let mut jobs = vec![TraceJob::new("a", 8, 100.0)];
    let (cfgs, warnings) = configs(&c, &mut jobs, "t.csv", r, &o).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(cfgs.len(), 2);
    let want = SimConfig {
        cycle: SimTime::from_secs_f64(10.0),
        horizon: Some(SimTime::from_secs_f64(3600.0)),
        check_invariants: true,
        ..SimConfig::default()
    };
    for (cfg, order) in cfgs.iter().zip([Order::Fifo, Order::FairShare]) {
        assert_eq!(cfg.policy.order, order);
        assert_eq!(cfg.cycle, want.cycle);
        assert_eq!(cfg.horizon, want.horizon);
        assert_eq!(cfg.timeline_points, 400);
        assert!(cfg.check_invariants && cfg.queues.is_none());
        assert_eq!(
            (cfg.checkpoints.interval_s, cfg.checkpoints.restart_s),
            (60.0, 5.0)
        );
    }
    // --no-network: every job's communicating share is 0.
    assert_eq!(jobs[0].comm.map(|p| p.comm_share), Some(0.0));
    // A bad checkpoint interval is refused naming its flag (a file-level input error).
    let bad = SimulateOptions {
        checkpoint_interval_s: -1.0,
        ..o.clone()
    };
    let r = runs(&c, "c.yaml", &bad).unwrap();
    let e = configs(&c, &mut jobs, "t.csv", r, &bad).unwrap_err();
    assert!(matches!(e, SimulateError::Input(_)));
    assert!(e.to_string().starts_with("--checkpoint-interval:"), "{e}");
}

#[test]
fn nccl_settings_and_qps_make_one_configuration() {
    let set = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let cfg = ops::nccl_settings::config(&set(&[]), Some(4)).unwrap();
    assert_eq!(cfg.qps_per_connection, 4);
    let cfg = ops::nccl_settings::config(&set(&["NCCL_IB_QPS_PER_CONNECTION=4"]), Some(4));
    assert_eq!(cfg.unwrap().qps_per_connection, 4);
    let e = ops::nccl_settings::config(&set(&["NCCL_IB_QPS_PER_CONNECTION=2"]), Some(4));
    assert_eq!(
        e.unwrap_err(),
        "--nccl: NCCL_IB_QPS_PER_CONNECTION=2 disagrees with --qps 4"
    );
    let e = ops::nccl_settings::config(&set(&["NCCL_FOO=1"]), None).unwrap_err();
    assert!(e.starts_with("--nccl: "), "{e}");
}
