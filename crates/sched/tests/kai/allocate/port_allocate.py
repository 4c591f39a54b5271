#!/usr/bin/env python3
"""Extract the facts of KAI Scheduler's allocate tests (nodes, topologies, jobs, sub-groups,
expected task placements) into railyard's YAML case files.

Usage: port_allocate.py <kai bare git dir> <out dir>
Reads the test files at the commit in COMMIT with `git show`; writes allocate_*.yaml.
Hand-written notes (`difference:` lines) live in differences.yaml and are merged by case name.
"""
import json
import re
import subprocess
import sys

COMMIT = "d5bc503a146317e51037d89775d77172c6d12f71"
FILES = {
    "allocate_topology_integration": "pkg/scheduler/actions/integration_tests/allocate/allocate_topology_test.go",
    "allocate_topology": "pkg/scheduler/actions/allocate/allocateTopology_test.go",
    "allocate_fractional_gpu": "pkg/scheduler/actions/allocate/allocateFractionalGpu_test.go",
    "allocate_gpu_memory": "pkg/scheduler/actions/allocate/allocateGpuMemory_test.go",
    "allocate_elastic": "pkg/scheduler/actions/allocate/allocateElastic_test.go",
    "allocate_subgroups": "pkg/scheduler/actions/allocate/allocate_subgroups_test.go",
}

TOKEN = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|`[^`]*`|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*'
    r'|[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?|:=|\.\.\.|[{}()\[\],:&*.=+\-/<>!]',
    re.S,
)


def tokens(src):
    out = []
    for m in TOKEN.finditer(src):
        t = m.group(0)
        if t.isspace() or t.startswith("//") or t.startswith("/*"):
            continue
        out.append(t)
    return out


class Parser:
    def __init__(self, toks, env=None):
        self.t = toks
        self.i = 0
        self.env = env or {}

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else None

    def eat(self, want=None):
        t = self.t[self.i]
        if want is not None and t != want:
            raise SyntaxError(f"expected {want!r}, got {t!r} at {self.i}: {' '.join(self.t[self.i-10:self.i+10])}")
        self.i += 1
        return t

    def skip_type(self):
        # []*T, []T, map[K]V, *T, T
        while True:
            t = self.peek()
            if t == "[":
                self.eat("[")
                self.eat("]")
            elif t == "*":
                self.eat("*")
            elif t == "map":
                self.eat("map")
                self.eat("[")
                self.skip_type()
                self.eat("]")
            else:
                self.eat()
                return

    def expr(self):
        e = self.unary()
        while self.peek() in ("*", "/", "+", "-"):
            op = self.eat()
            r = self.unary()
            if isinstance(e, (int, float)) and isinstance(r, (int, float)):
                e = {"*": e * r, "/": e / r, "+": e + r, "-": e - r}[op]
            else:
                e = {"_op": op, "a": e, "b": r}
        return e

    def unary(self):
        t = self.peek()
        if t == "&":
            self.eat()
            return self.unary()
        if t == "-":
            self.eat()
            return -self.unary()
        if t == "(":
            self.eat("(")
            e = self.expr()
            self.eat(")")
            return e
        if t == "{":
            return self.composite()
        if t in ("[", "map", "*"):
            self.skip_type()
            return self.composite()
        if t == "func":
            return self.func_lit()
        if t.startswith('"'):
            self.eat()
            return json.loads(t)
        if t.startswith("`"):
            self.eat()
            return t[1:-1]
        if re.match(r"[0-9]", t):
            self.eat()
            v = float(t)
            return int(v) if v.is_integer() and "." not in t else v
        # identifier
        self.eat()
        if self.peek() == "{" and t not in ("true", "false", "nil"):
            return self.composite()
        if self.peek() == "(":
            self.eat("(")
            args = []
            while self.peek() != ")":
                args.append(self.expr())
                if self.peek() == ",":
                    self.eat(",")
            self.eat(")")
            return self.call(t, args)
        if t == "true":
            return True
        if t == "false":
            return False
        if t == "nil":
            return None
        if t in self.env:
            return self.env[t]
        return {"_ident": t}

    def call(self, name, args):
        short = name.split(".")[-1]
        if short == "NewSubGroupSet":
            return {"_sg": args[0], "topology": args[1], "children": [], "pod_sets": []}
        if short == "DefaultSubGroup":
            # KAI's jobs_fake.DefaultSubGroup(n): the root with one pod set `default` of minimum n.
            return {"_sg": "root", "topology": None, "children": [],
                    "pod_sets": [{"_ps": "default", "min": args[0], "topology": None}]}
        if short == "NewPodSet":
            return {"_ps": args[0], "min": args[1], "topology": args[2] if len(args) > 2 else None}
        if short in ("MustParse", "uint64", "int64", "int32", "float64", "int", "Int"):
            return args[0]
        if short == "ptr" or short.startswith("Ptr") or short == "To":
            return args[0]
        return {"_call": name, "args": args}

    def composite(self):
        self.eat("{")
        keyed, items = None, []
        while self.peek() != "}":
            v = self.expr()
            if self.peek() == ":":
                self.eat(":")
                k = v
                v = self.expr()
                keyed = keyed if keyed is not None else {}
                key = k if isinstance(k, str) else (k.get("_ident") if isinstance(k, dict) else str(k))
                keyed[key] = v
            else:
                items.append(v)
            if self.peek() == ",":
                self.eat(",")
        self.eat("}")
        return keyed if keyed is not None else items

    def func_lit(self):
        # func() T { stmts } ()
        self.eat("func")
        self.eat("(")
        self.eat(")")
        self.skip_type()
        self.eat("{")
        env = dict(self.env)
        result = None
        while self.peek() != "}":
            if self.peek(1) == ":=":
                name = self.eat()
                self.eat(":=")
                p = Parser(self.t, env)
                p.i = self.i
                env[name] = p.expr()
                self.i = p.i
            elif self.peek() == "return":
                self.eat()
                p = Parser(self.t, env)
                p.i = self.i
                result = p.expr()
                self.i = p.i
            else:
                # x.AddPodSet(...) / x.AddSubGroup(y)
                target, method = self.eat().rsplit(".", 1)
                self.eat("(")
                p = Parser(self.t, env)
                p.i = self.i
                arg = p.expr()
                self.i = p.i
                self.eat(")")
                if method == "AddPodSet":
                    env[target]["pod_sets"].append(arg)
                elif method == "AddSubGroup":
                    env[target]["children"].append(arg)
                elif method == "SetMinSubGroup":
                    env[target]["min_sub_group"] = arg
                else:
                    raise SyntaxError(f"unknown statement {target}.{method}")
        self.eat("}")
        self.eat("(")
        self.eat(")")
        return result


def extract(src):
    start = src.index("return []integration_tests_utils.TestTopologyMetadata{")
    toks = tokens(src[start + len("return "):])
    p = Parser(toks)
    p.skip_type()
    return p.composite()


def topo(c):
    if not c:
        return None
    out = {}
    for k, key in (("Topology", "topology"), ("RequiredLevel", "required"), ("PreferredLevel", "preferred")):
        if c.get(k):
            out[key] = c[k]
    return out or None


def sub_group(sg):
    out = {"name": sg["_sg"] if isinstance(sg["_sg"], str) else "root"}
    if sg.get("min_sub_group") is not None:
        out["min_sub_group"] = sg["min_sub_group"]
    t = topo(sg["topology"])
    if t:
        out["topology"] = t
    if sg["children"]:
        out["children"] = [sub_group(c) for c in sg["children"]]
    if sg["pod_sets"]:
        out["pod_sets"] = []
        for ps in sg["pod_sets"]:
            q = {"name": ps["_ps"], "min": ps["min"]}
            t = topo(ps["topology"])
            if t:
                q["topology"] = t
            out["pod_sets"].append(q)
    return out


def status(v):
    return v["_ident"].split(".")[-1] if isinstance(v, dict) else v


def convert(meta, kai_file):
    b = meta["TestTopologyBasic"]
    case = {"test": kai_file.split("/")[-1].replace(".go", "") + " / " + b["Name"], "case": b["Name"]}
    if b.get("Topologies"):
        case["topologies"] = [
            {"name": t["ObjectMeta"]["Name"], "levels": [l["NodeLabel"] for l in t["Spec"]["Levels"]]}
            for t in b["Topologies"]
        ]
    nodes = b.get("Nodes") or {}
    if isinstance(nodes, dict) and "_call" in nodes:
        case["nodes_from"] = f"{nodes['_call'].split('.')[-1]}{tuple(nodes['args'])}"
        args = nodes["args"]
        nodes = build_even(*args) if nodes["_call"].endswith("buildEvenlyDistributedTopologyNodes") else {}
    case["nodes"] = []
    for name in sorted(nodes, key=natural):
        n = nodes[name]
        rec = {"name": name, "gpus": n.get("GPUs", 0)}
        for k, key in (("GPUMemory", "gpu_memory_mib"), ("CPUMillis", "cpu_millis"), ("CPUMemory", "memory"), ("Labels", "labels")):
            if n.get(k) is not None:
                rec[key] = n[k]
        extra = sorted(set(n) - {"GPUs", "GPUMemory", "CPUMillis", "CPUMemory", "Labels"})
        if extra:
            rec["kai_fields"] = extra
        case["nodes"].append(rec)
    case["jobs"] = []
    for j in b.get("Jobs") or []:
        job = {"name": j["Name"], "queue": j.get("QueueName")}
        for k, key in (
            ("RequiredGPUsPerTask", "gpus_per_task"),
            ("RequiredGpuMemory", "gpu_memory_mib"),
            ("RequiredMultiFractionDevicesPerTask", "fraction_devices"),
            ("RequiredCPUsPerTask", "cpus_per_task"),
            ("RequiredMemoryPerTask", "memory_per_task"),
            ("MinAvailable", "min_available"),
        ):
            if j.get(k) is not None:
                job[key] = j[k]
        if isinstance(j.get("Priority"), dict):
            job["priority"] = j["Priority"]["_ident"].split(".")[-1]
        if j.get("RootSubGroupSet"):
            job["sub_groups"] = sub_group(j["RootSubGroupSet"])
        job["tasks"] = []
        for t in j.get("Tasks") or []:
            task = {"state": status(t.get("State"))}
            for k, key in (("NodeName", "node"), ("SubGroupName", "sub_group"), ("GPUGroups", "gpu_groups"), ("NodeAffinityNames", "node_affinity"), ("Priority", "priority"), ("RequiredGPUs", "gpus")):
                if t.get(k):
                    task[key] = t[k]
            # A task's Name is only checked to be KAI's default (<job>-<index>).
            known = {"State", "NodeName", "SubGroupName", "GPUGroups", "NodeAffinityNames", "Priority", "RequiredGPUs"}
            if t.get("Name") == f"{j['Name']}-{len(job['tasks'])}":
                known.add("Name")
            extra = sorted(set(t) - known)
            if extra:
                task["kai_fields"] = extra
            job["tasks"].append(task)
        extra = sorted(set(j) - {"Name", "QueueName", "RequiredGPUsPerTask", "RequiredGpuMemory", "RequiredMultiFractionDevicesPerTask", "RequiredCPUsPerTask", "RequiredMemoryPerTask", "MinAvailable", "Priority", "RootSubGroupSet", "Tasks"})
        if extra:
            job["kai_fields"] = extra
        case["jobs"].append(job)
    case["queues"] = [
        {k: q[k] for k in ("Name", "ParentQueue", "DeservedGPUs", "MaxAllowedGPUs", "GPUOverQuotaWeight") if k in q}
        for q in b.get("Queues") or []
    ]
    if b.get("Departments"):
        case["departments"] = [
            {k: d[k] for k in ("Name", "DeservedGPUs", "MaxAllowedGPUs") if k in d}
            for d in b["Departments"]
        ]
    conf = b.get("Mocks", {}) or {}
    sc = (b.get("SchedulerConf") or conf.get("SchedulerConf"))
    if sc:
        case["strategy"] = strategy(sc)
    exp = {}
    for name, r in sorted((b.get("TaskExpectedResults") or {}).items(), key=lambda kv: natural(kv[0])):
        e = {"status": status(r.get("Status"))}
        if r.get("NodeName"):
            e["node"] = r["NodeName"]
        if r.get("GPUsRequired") is not None:
            e["gpus"] = r["GPUsRequired"]
        if r.get("GPUGroups") and not r.get("DontValidateGPUGroup"):
            e["gpu_groups"] = r["GPUGroups"]
        exp[name] = e
    case["expect_tasks"] = exp
    jexp = {}
    for name, r in sorted((b.get("JobExpectedResults") or {}).items()):
        e = {"status": status(r.get("Status"))}
        if r.get("GPUsRequired") is not None:
            e["gpus"] = r["GPUsRequired"]
        jexp[name] = e
    if jexp:
        case["expect_jobs"] = jexp
    if meta.get("RoundsUntilMatch"):
        case["rounds"] = meta["RoundsUntilMatch"]
    return case


def strategy(sc):
    """KAI's plugin configuration reduced to what placement reads: node order for GPU pods and
    for CPU-only pods (nodeplacement), GPU order for shared pods (gpupack / gpuspread)."""
    out = {"gpu": "binpack", "cpu": "binpack", "shared_gpus": "binpack"}
    names = []
    for tier in sc.get("Tiers", []):
        for plugin in tier.get("Plugins", []):
            names.append(plugin["Name"])
            if plugin["Name"] == "nodeplacement":
                for k, v in (plugin.get("Arguments") or {}).items():
                    which = "gpu" if "GPU" in k else "cpu"
                    out[which] = "spread" if "Spread" in v["_ident"] else "binpack"
            if plugin["Name"] == "gpuspread":
                out["shared_gpus"] = "spread"
    if "nodeplacement" not in names:
        out["gpu"] = out["cpu"] = "none"
    out["plugins"] = names
    return out


def natural(s):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", s)]


def build_even(zones, spines, racks, nodes, gpus):
    # KAI's helper: numbered nodes, evenly over zones, spines per zone, racks per spine.
    out, node_id = {}, 0
    for z in range(1, zones + 1):
        for sp in range(1, spines + 1):
            spine = sp + (z - 1) * spines
            for r in range(1, racks + 1):
                rack = r + (sp - 1) * racks + (z - 1) * spines * racks
                for _ in range(nodes):
                    out[f"node{node_id}"] = {"GPUs": gpus, "Labels": {
                        "k8s.io/zone": f"zone{z}", "k8s.io/spine": f"spine{spine}", "k8s.io/rack": f"rack{rack}"}}
                    node_id += 1
    return out


def main():
    repo, out = sys.argv[1], sys.argv[2]
    try:
        notes = json.load(open(f"{out}/differences.json"))
    except FileNotFoundError:
        notes = {}
    for stem, path in FILES.items():
        src = subprocess.run(["git", "-C", repo, "show", f"{COMMIT}:{path}"], check=True, capture_output=True, text=True).stdout
        cases = [convert(m, path) for m in extract(src)]
        for c in cases:
            if c["case"] in notes.get(stem, {}):
                c["difference"] = notes[stem][c["case"]]
        with open(f"{out}/{stem}.yaml", "w") as f:
            f.write(f"# KAI Scheduler's allocate-action tests as data (facts only: inputs and expected results).\n")
            f.write(f"# Source: github.com/kai-scheduler/KAI-Scheduler at commit {COMMIT},\n# {path}\n")
            f.write("# Extracted by port_allocate.py; run by crates/sched/tests/it/kai_allocate.rs (Dialect::Kai).\n")
            f.write(json.dumps({"file": path, "cases": cases}, indent=1))
            f.write("\n")


if __name__ == "__main__":
    main()
