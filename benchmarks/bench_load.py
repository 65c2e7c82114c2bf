"""Benchmark (not a test): load + compile a 5,000-node, 50,000-pod kubectl-style JSON state.

    .venv/bin/python benchmarks/bench_load.py [--nodes 5000] [--pods 50000] [--runs 3] [--profile]

Generates a realistic `kubectl get nodes,pods,pdb,priorityclasses,namespaces -A -o json` export (zones,
pools, instance types, taints on some nodes, pods owned by ReplicaSets with labels and requests, most bound,
some pending), writes it to a temporary file, then times `load_state` and `compile_index` separately and
measures peak Python memory (tracemalloc) over the whole load. Prints the median of `--runs` runs.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from kplace.models import compile_index, load_state

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
POOLS = [  # (pool, instance type, cpu, memory, pods, taint)
    ("general", "m5.2xlarge", "8", "32Gi", 58, None),
    ("general-large", "m5.4xlarge", "16", "64Gi", 110, None),
    ("memory", "r5.2xlarge", "8", "64Gi", 58, None),
    ("gpu", "p3.2xlarge", "8", "61Gi", 58, {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}),
]
NAMESPACES = [f"team-{i:02d}" for i in range(20)] + ["kube-system", "monitoring"]
CPU_SIZES = ["50m", "100m", "250m", "500m", "1", "1500m", "2"]
MEM_SIZES = ["64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"]


def make_node(i: int, rng: random.Random) -> dict:
    pool, itype, cpu, mem, pods, taint = POOLS[0 if i % 10 < 6 else 1 if i % 10 < 8 else 2 if i % 10 < 9 else 3]
    name = f"ip-10-{i // 250}-{i % 250}-{rng.randrange(1, 255)}.ec2.internal"
    zone = ZONES[i % len(ZONES)]
    alloc_cpu = f"{int(cpu) * 1000 - 90}m"
    capacity = {"cpu": cpu, "memory": mem, "pods": str(pods), "ephemeral-storage": "104845292Ki"}
    alloc = {"cpu": alloc_cpu, "memory": mem, "pods": str(pods), "ephemeral-storage": "95551679124"}
    if pool == "gpu":
        capacity["nvidia.com/gpu"] = alloc["nvidia.com/gpu"] = "1"
    taints = [taint] if taint else []
    if i % 97 == 0:
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"node-uid-{i}",
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": itype,
                "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": zone,
                "eks.amazonaws.com/nodegroup": pool,
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"providerID": f"aws:///{zone}/i-{i:017x}", "taints": taints, "unschedulable": i % 97 == 0},
        "status": {
            "capacity": capacity,
            "allocatable": alloc,
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "DiskPressure", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
            "images": [
                {"names": [f"registry.example.com/app-{k}@sha256:{k:064x}", f"registry.example.com/app-{k}:v1"],
                 "sizeBytes": 50_000_000 + k * 1_000_000}
                for k in range(i % 5, i % 5 + 4)
            ],
            "nodeInfo": {"kubeletVersion": "v1.30.2", "osImage": "Amazon Linux 2"},
        },
    }


def make_pod(j: int, nodes: list[dict], rng: random.Random, pending: bool) -> dict:
    app = j // 25  # 25 replicas per ReplicaSet
    ns = NAMESPACES[app % len(NAMESPACES)]
    rs = f"app-{app}-7d9f8c6b5"
    name = f"{rs}-{j:05x}"
    cpu, mem = CPU_SIZES[app % len(CPU_SIZES)], MEM_SIZES[app % len(MEM_SIZES)]
    node = "" if pending else nodes[rng.randrange(len(nodes))]["metadata"]["name"]
    containers = [{
        "name": "app",
        "image": f"registry.example.com/app-{app % 9}:v1",
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": cpu, "memory": mem}, "limits": {"memory": mem}},
        "env": [{"name": "LOG_LEVEL", "value": "info"}],
        "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
    }]
    if app % 4 == 0:
        containers.append({"name": "sidecar", "image": "registry.example.com/envoy:v1.30",
                           "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}})
    spec: dict = {
        "containers": containers,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "priority": 0,
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
        ],
        "volumes": [{"name": "kube-api-access", "projected": {"sources": []}}],
    }
    if node:
        spec["nodeName"] = node
    if app % 7 == 0:
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100,
            "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": f"app-{app}"}},
                                "topologyKey": "kubernetes.io/hostname"}}]}}
    if app % 11 == 0:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "ScheduleAnyway",
                                              "labelSelector": {"matchLabels": {"app": f"app-{app}"}}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"pod-uid-{j}",
            "creationTimestamp": f"2024-05-02T{(j // 3600) % 24:02d}:{(j // 60) % 60:02d}:{j % 60:02d}Z",
            "labels": {"app": f"app-{app}", "pod-template-hash": "7d9f8c6b5", "tier": ["web", "api", "db"][app % 3]},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-05-02T00:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                 "uid": f"rs-uid-{app}", "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": spec,
        "status": {"phase": "Pending" if pending else "Running",
                   **({} if pending else {"startTime": "2024-05-02T00:00:01Z"})},
    }


def generate(n_nodes: int, n_pods: int, pending_share: float = 0.1, seed: int = 1) -> dict:
    rng = random.Random(seed)
    nodes = [make_node(i, rng) for i in range(n_nodes)]
    schedulable = [n for n in nodes if not n["spec"]["taints"]]
    n_pending = int(n_pods * pending_share)
    pods = [make_pod(j, schedulable, rng, pending=j >= n_pods - n_pending) for j in range(n_pods)]
    extras = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in NAMESPACES]
    extras += [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch-low"},
         "value": -10, "globalDefault": False},
    ]
    extras += [
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": {"name": f"app-{a}", "namespace": NAMESPACES[a % len(NAMESPACES)]},
         "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": f"app-{a}"}}}}
        for a in range(0, n_pods // 25, 10)
    ]
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": [*nodes, *pods, *extras]}


def run_once(path: str) -> tuple[float, float, float]:
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    snap = load_state([path])
    t1 = time.perf_counter()
    index = compile_index(snap)
    t2 = time.perf_counter()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(index.pods) > 0
    return t1 - t0, t2 - t1, peak / 2**20


def run_untraced(path: str) -> tuple[float, float]:
    gc.collect()
    t0 = time.perf_counter()
    snap = load_state([path])
    t1 = time.perf_counter()
    compile_index(snap)
    return t1 - t0, time.perf_counter() - t1


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one load + compile")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "state.json")
        t = time.perf_counter()
        state = generate(args.nodes, args.pods)
        Path(path).write_text(json.dumps(state))
        size = Path(path).stat().st_size
        del state
        print(f"generated {args.nodes} nodes, {args.pods} pods: {size / 2**20:.1f} MiB of JSON "
              f"in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            compile_index(load_state([path]))
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(35)
            return
        timings = [run_untraced(path) for _ in range(args.runs)]
        mems = [run_once(path)[2] for _ in range(args.runs)]
    load = statistics.median(t[0] for t in timings)
    comp = statistics.median(t[1] for t in timings)
    rows = [
        ("load_state", f"{load:.2f} s"),
        ("compile_index", f"{comp:.2f} s"),
        ("total", f"{load + comp:.2f} s"),
        ("peak Python memory (tracemalloc)", f"{statistics.median(mems):.0f} MiB"),
    ]
    print(f"{args.nodes} nodes, {args.pods} pods, {size / 2**20:.1f} MiB JSON; median of {args.runs} runs")
    width = max(len(r[0]) for r in rows)
    print(f"{'step':<{width}}  value")
    for name, val in rows:
        print(f"{name:<{width}}  {val}")


if __name__ == "__main__":
    main()
