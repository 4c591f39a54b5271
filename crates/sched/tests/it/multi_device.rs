//! Shared GPUs on several devices (`GpuRequest::Fraction` / `MemoryMib` with `devices` > 1,
//! KAI's `gpu-fraction-num-devices`): the node count against exhaustive search, the GPUs each
//! dialect picks, KAI's own case, the invariant checker and release.

use sched::{
    check_gang, check_occupancy, commit, place, place_with, Dialect, GpuRequest, Job, KaiStrategy,
    Occupancy, PlaceInput, PlaceOptions, PlacementStrategy, PodAllocation, RunningJob,
    TopologyRequest,
};
use topology::{Cluster, NodeId};

use crate::{cluster, job_with};

/// A node of `used.len()` GPUs with GPU `i` holding `used[i]` thousandths (one running job per
/// used GPU).
fn node_with(used: &[u32]) -> (Cluster, Occupancy) {
    let c = cluster(&[&[1]], used.len() as u32);
    let mut occ = Occupancy::new(&c);
    for (g, &m) in used.iter().enumerate() {
        if m == 0 {
            continue;
        }
        occ.allocate(
            RunningJob {
                name: format!("busy{g}"),
                queue: "q".to_owned(),
                priority: 0,
                preemptible: true,
            },
            vec![PodAllocation {
                node: NodeId(0),
                gpu_ids: vec![g as u32],
                milli: m,
                memory_mib: m * 80 * 1024 / 1000,
            }],
        )
        .expect("fits");
    }
    (c, occ)
}

fn shares(milli: u32, devices: u32) -> GpuRequest {
    GpuRequest::Fraction { milli, devices }
}

fn kai(strategy: PlacementStrategy) -> PlaceInput {
    PlaceInput {
        options: PlaceOptions {
            dialect: Dialect::Kai,
            strategy: KaiStrategy::all(strategy),
            ..PlaceOptions::default()
        },
        ..PlaceInput::default()
    }
}

/// Reference: whether `pods` pods, each taking one share on `devices` distinct GPUs, fit GPUs
/// that take `room[i]` shares each — by trying every choice of GPUs for every pod.
fn fits_exhaustively(room: &mut [u32], pods: u32, devices: usize) -> bool {
    if pods == 0 {
        return true;
    }
    // Choose the pod's device set as an increasing sequence of GPU indices.
    fn choose(room: &mut [u32], pods: u32, devices: usize, picked: &mut Vec<usize>) -> bool {
        if picked.len() == devices {
            return fits_exhaustively(room, pods - 1, devices);
        }
        let start = picked.last().map_or(0, |&g| g + 1);
        for g in start..room.len() {
            if room[g] == 0 {
                continue;
            }
            room[g] -= 1;
            picked.push(g);
            let ok = choose(room, pods, devices, picked);
            picked.pop();
            room[g] += 1;
            if ok {
                return true;
            }
        }
        false
    }
    choose(room, pods, devices, &mut Vec::new())
}

#[test]
fn multi_device_pods_fit_exactly_when_exhaustive_search_finds_room() {
    // Every use of 4 GPUs in tenths from {0, 3, 5, 7, 10}, shares of 0.2/0.3/0.5 on 2 or 3
    // devices, 1..=7 pods: Kueue's rules place exactly the counts that fit; KAI's greedy
    // (first n GPUs in gpupack order, as KAI takes them) never places a count that does not.
    let levels = [0u32, 300, 500, 700, 1000];
    let mut checked = 0;
    for a in levels {
        for b in levels {
            for c in levels {
                for d in levels {
                    let used = [a, b, c, d];
                    let (cl, occ) = node_with(&used);
                    for milli in [200u32, 300, 500] {
                        for devices in [2u32, 3] {
                            for pods in 1..=7 {
                                let mut room: Vec<u32> =
                                    used.iter().map(|&u| (1000 - u) / milli).collect();
                                let expect = fits_exhaustively(&mut room, pods, devices as usize);
                                let j = job_with(
                                    "j",
                                    pods,
                                    shares(milli, devices),
                                    TopologyRequest::default(),
                                );
                                let got = place(&cl, &occ, &j);
                                assert_eq!(
                                    got.is_ok(),
                                    expect,
                                    "use {used:?}, {pods} pods × {devices} × {milli}/1000"
                                );
                                if let Ok(p) = got {
                                    let mut o = occ.clone();
                                    commit(&mut o, &j, &p).expect("placement commits");
                                    let alloc = &o.jobs()["j"];
                                    check_gang(&cl, &j, alloc).expect("gang");
                                    check_occupancy(&cl, &o).expect("occupancy");
                                }
                                let got_kai =
                                    place_with(&cl, &occ, &j, &kai(PlacementStrategy::Binpack));
                                if got_kai.is_ok() {
                                    assert!(expect, "KAI placed an impossible count: {used:?}");
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(checked, 625 * 3 * 2 * 7);
}

#[test]
fn kai_multi_fraction_takes_the_half_used_gpu_and_one_whole() {
    // KAI pkg/scheduler/gpu_sharing/gpuSharing_test.go at d5bc503a, Test_getNodePreferableGpuForSharing
    // "multi fraction gpu - one gpu free on node": GPU 0 half used, a pod of 0.5 on 2 devices
    // gets two GPU groups, one of them GPU 0.
    let (c, occ) = node_with(&[500, 0, 0]);
    let j = job_with("p1", 1, shares(500, 2), TopologyRequest::default());
    let p = place_with(&c, &occ, &j, &kai(PlacementStrategy::Binpack)).expect("fits");
    assert_eq!(p.pods[0].gpu_ids.len(), 2);
    assert!(p.pods[0].gpu_ids.contains(&0));
    assert_eq!(p.pods[0].milli, 500);
}

#[test]
fn kai_gpupack_takes_the_most_used_devices_and_gpuspread_the_least_used() {
    let (c, occ) = node_with(&[200, 0, 600, 400]);
    let j = job_with("p", 1, shares(300, 2), TopologyRequest::default());
    let pack = place_with(&c, &occ, &j, &kai(PlacementStrategy::Binpack)).expect("fits");
    assert_eq!(pack.pods[0].gpu_ids, vec![2, 3]);
    let spread = place_with(&c, &occ, &j, &kai(PlacementStrategy::Spread)).expect("fits");
    assert_eq!(spread.pods[0].gpu_ids, vec![1, 0]);
    // GPU memory on devices: 40 GiB of 80 on each of three GPUs; only GPUs 0, 1, 3 have room.
    let mem = job_with(
        "m",
        1,
        GpuRequest::MemoryMib {
            mib: 40 * 1024,
            devices: 3,
        },
        TopologyRequest::default(),
    );
    let p = place_with(&c, &occ, &mem, &kai(PlacementStrategy::Binpack)).expect("fits");
    assert_eq!(p.pods[0].gpu_ids, vec![3, 0, 1]);
    assert_eq!(p.pods[0].memory_mib, 40 * 1024);
    // Four devices of 40 GiB: GPU 2 holds 48 GiB, so no node has four.
    let four = job_with(
        "m4",
        1,
        GpuRequest::MemoryMib {
            mib: 40 * 1024,
            devices: 4,
        },
        TopologyRequest::default(),
    );
    assert!(place_with(&c, &occ, &four, &kai(PlacementStrategy::Binpack)).is_err());
    assert!(place(&c, &occ, &four).is_err());
}

#[test]
fn a_multi_device_pod_counts_once_per_device_and_is_released_whole() {
    let (c, mut occ) = node_with(&[0, 0]);
    let j = job_with("j", 1, shares(500, 2), TopologyRequest::default());
    assert_eq!(j.request(80 * 1024).gpu, 1.0);
    let p = place(&c, &occ, &j).expect("fits");
    commit(&mut occ, &j, &p).expect("commit");
    assert_eq!(occ.used_milli(NodeId(0), 0), 500);
    assert_eq!(occ.used_milli(NodeId(0), 1), 500);
    assert_eq!(occ.free_whole(NodeId(0)), 0);
    occ.release("j").expect("running");
    assert_eq!(occ.free_whole(NodeId(0)), 2);
}

#[test]
fn the_invariant_checker_catches_a_multi_device_pod_on_too_few_or_repeated_gpus() {
    let c = cluster(&[&[1]], 4);
    let j: Job = job_with("j", 1, shares(500, 2), TopologyRequest::default());
    for gpu_ids in [vec![0], vec![1, 1], vec![0, 1, 2]] {
        let pod = PodAllocation {
            node: NodeId(0),
            gpu_ids: gpu_ids.clone(),
            milli: 500,
            memory_mib: 40 * 1024,
        };
        let alloc = sched::Allocation {
            job: RunningJob {
                name: "j".to_owned(),
                queue: "q".to_owned(),
                priority: 0,
                preemptible: true,
            },
            pods: vec![pod.clone()],
        };
        let v = check_gang(&c, &j, &alloc).expect_err("bad shape");
        assert_eq!(v.invariant, "pod shape", "{gpu_ids:?}");
    }
    let good = sched::Allocation {
        job: RunningJob {
            name: "j".to_owned(),
            queue: "q".to_owned(),
            priority: 0,
            preemptible: true,
        },
        pods: vec![PodAllocation {
            node: NodeId(0),
            gpu_ids: vec![2, 0],
            milli: 500,
            memory_mib: 40 * 1024,
        }],
    };
    check_gang(&c, &j, &good).expect("two distinct devices");
}

#[test]
fn a_multi_device_request_needs_one_to_the_most_devices_a_node_may_have() {
    let c = cluster(&[&[1]], 4);
    for devices in [0, topology::MAX_GPUS_PER_NODE + 1] {
        let j = job_with("j", 1, shares(500, devices), TopologyRequest::default());
        let e = j.check(&c).expect_err("bad devices");
        assert!(e.message.contains("gpu devices"), "{}", e.message);
    }
    // More devices than the node has GPUs is not an error, only a job that cannot run there.
    let j = job_with("j", 1, shares(500, 5), TopologyRequest::default());
    j.check(&c).expect("valid");
    assert!(place(&c, &Occupancy::new(&c), &j).is_err());
}
