#!/usr/bin/env python3
"""Write the Slurm and Kueue trace samples the tests read, in the exact formats those tools print.

Job sizes, submission times and run times are the first rows of the bundled Philly week
(data/philly-week-2017-10-01.csv); waits, accounts, end states and the few jobs that never ran
are made up, deterministically (a fixed seed), to cover every case the readers handle.
Usage: scripts/scheduler-trace-samples.py  (from the repository root; rewrites the fixtures).
"""
import csv
import datetime as dt
import json
import random

rng = random.Random(20261130)
rows = list(csv.DictReader(open("data/philly-week-2017-10-01.csv")))
rows = sorted(rows[:400], key=lambda r: r["timestamp"])


def ts(s):
    return dt.datetime.strptime(s, "%Y-%m-%d %H:%M:%S")


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S")


# ---- Slurm: sacct --allusers --allocations --parsable2 -o <SACCT_FIELDS> ----
fields = "JobID|JobName|Partition|Account|AllocTRES|NNodes|Submit|Start|End|State"
out = [fields]
accounts = ["nlp", "vision", "speech", "rl"]
for i, r in enumerate(rows[:300]):
    gpus = int(r["num_gpus"])
    nodes = max(1, (gpus + 7) // 8)
    submit = ts(r["timestamp"])
    wait = dt.timedelta(seconds=int(rng.expovariate(1 / 900)))
    start = submit + wait
    end = start + dt.timedelta(seconds=int(float(r["duration"])))
    job_id = str(41000 + i)
    name = rng.choice(["train", "finetune", "eval", "sweep"])
    account = accounts[i % len(accounts)]
    gres = f"gres/gpu={gpus}"
    if i % 5 == 0:  # typed GRES as Slurm prints it with a GPU type configured
        gres += f",gres/gpu:a100={gpus}"
    tres = f"billing={gpus * 4},cpu={gpus * 4},{gres},mem={gpus * 64}G,node={nodes}"
    state = rng.choices(
        ["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 1042", "NODE_FAIL", "OUT_OF_MEMORY"],
        [80, 8, 4, 4, 2, 2],
    )[0]
    if i % 37 == 5:  # cancelled while pending: Start None
        out.append(f"{job_id}|{name}|gpu|{account}||{nodes}|{iso(submit)}|None|{iso(start)}|CANCELLED by 1042")
        continue
    if i % 53 == 7:  # still pending
        out.append(f"{job_id}|{name}|gpu|{account}||{nodes}|{iso(submit)}|Unknown|Unknown|PENDING")
        continue
    if i % 71 == 9:  # still running
        out.append(f"{job_id}|{name}|gpu|{account}|{tres}|{nodes}|{iso(submit)}|{iso(start)}|Unknown|RUNNING")
        continue
    out.append(f"{job_id}|{name}|gpu|{account}|{tres}|{nodes}|{iso(submit)}|{iso(start)}|{iso(end)}|{state}")
open("crates/railyard/tests/fixtures/traces/sacct-sample.txt", "w").write("\n".join(out) + "\n")

# ---- Kueue: kubectl get workloads -A -o json ----
items = []
for i, r in enumerate(rows[:200]):
    gpus = int(r["num_gpus"])
    pods, per_pod = (gpus // 8, 8) if gpus >= 8 else (1, gpus)
    submit = ts(r["timestamp"])
    admitted = submit + dt.timedelta(seconds=int(rng.expovariate(1 / 600)))
    finished = admitted + dt.timedelta(seconds=int(float(r["duration"])))
    ns = ["team-a", "team-b", "team-c"][i % 3]
    job = f"train-{i:03d}"
    conds = [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
         "message": f"Quota reserved in ClusterQueue {ns}", "lastTransitionTime": iso(admitted) + "Z"},
        {"type": "Admitted", "status": "True", "reason": "Admitted",
         "message": "The workload is admitted", "lastTransitionTime": iso(admitted) + "Z"},
    ]
    if i % 41 != 3:  # the rest are still running
        conds.append({"type": "Finished", "status": "True", "reason": "Succeeded",
                      "message": "Job finished successfully", "lastTransitionTime": iso(finished) + "Z"})
    if i % 43 == 4:  # never admitted: still pending
        conds = [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                  "message": "couldn't assign flavors to pod set main", "lastTransitionTime": iso(submit) + "Z"}]
    pod_set = {
        "name": "main",
        "count": pods,
        "template": {"metadata": {}, "spec": {"restartPolicy": "Never", "containers": [{
            "name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
            "resources": {"requests": {"cpu": str(per_pod * 4), "memory": f"{per_pod * 64}Gi", "nvidia.com/gpu": str(per_pod)},
                          "limits": {"nvidia.com/gpu": str(per_pod)}}}]}},
    }
    if pods > 1:
        pod_set["topologyRequest"] = {"preferred": "cloud.provider.com/topology-rack"}
    items.append({
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"name": f"job-{job}-{i:05x}", "namespace": ns, "creationTimestamp": iso(submit) + "Z",
                     "labels": {"kueue.x-k8s.io/job-uid": f"uid-{i}"},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": f"uid-{i}",
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"active": True, "queueName": f"{ns}-queue", "priority": [0, 100, 1000][i % 3],
                 "priorityClassSource": "", "podSets": [pod_set]},
        "status": {"conditions": conds},
    })
json.dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}},
          open("crates/railyard/tests/fixtures/traces/kueue-workloads-sample.json", "w"), indent=1)
