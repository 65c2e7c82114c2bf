"""Regenerate the shipped instances from the raw data in ../shared/data (run: `python -m kplace.instances.build`).

Every instance is written as one kubectl-style v1 `List` (items carry `kind` and `apiVersion`), exactly what
`kubectl get nodes,pods,pdb,priorityclasses,namespaces,storageclasses -A -o json` prints, so `kplace` reads
it like any export. Workloads are expanded into pods by kplace's own loader (`models.workloads`); pods the
cluster would already be running are bound, the applications to place are left pending.

When ../shared/data is absent (a fresh clone), the builder says so and exits 0: the shipped files stay.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from kplace.models.io import _add, _documents, _objects
from kplace.models.k8s import K8s, Pod
from kplace.models.requests import pod_requests
from kplace.models.selectors import required_node_affinity_matches
from kplace.models.snapshot import ClusterSnapshot, finalize
from kplace.models.tolerations import tolerated_by_any
from kplace.models.workloads import expand_workloads, pinned_node
from kplace.solver.binder.kube import LIST_KINDS

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"
_API_VERSION = {kind: api_version for kind, (_, _, api_version) in LIST_KINDS.items()}
ZONE = "topology.kubernetes.io/zone"


# --- serialisation: pydantic objects back to the wire format ------------------------------------------------


def _wire(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


def to_wire(obj: K8s) -> dict[str, Any]:
    kind = obj.kind  # type: ignore[attr-defined]
    body = obj.model_dump(by_alias=True, exclude_defaults=True, exclude_none=True)
    body.pop("kind", None)
    return {"apiVersion": _API_VERSION[kind], "kind": kind, **_wire(body)}


BUILT_KINDS = ("namespaces", "priority_classes", "storage_classes", "nodes", "pods", "pdbs")
# every kind a snapshot holds (workloads are already expanded into their pods), dependencies first
ALL_KINDS = ("namespaces", "priority_classes", "storage_classes", "pvs", "pvcs", "csinodes", "services", "nodes",
             "pods", "pdbs")


def as_list(snapshot: ClusterSnapshot, extra: list[dict[str, Any]] | None = None,
            kinds: tuple[str, ...] = BUILT_KINDS) -> dict[str, Any]:
    items = [to_wire(o) for attr in kinds for o in getattr(snapshot, attr)]
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [*items, *(extra or [])]}


# --- helpers ------------------------------------------------------------------------------------------------


def _read(paths: list[Path]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    scratch = ClusterSnapshot()
    for source, doc in _documents([str(p) for p in paths]):
        for kind, item in _objects(doc, source, scratch):
            out.append({**item, "kind": kind})
    return out


def _snapshot(objects: list[dict[str, Any]]) -> ClusterSnapshot:
    snap = ClusterSnapshot()
    sources: dict[int, str] = {}
    for o in objects:
        _add(snap, sources, o["kind"], o, "<build>")
    expand_workloads(snap, sources)
    return finalize(snap, sources)


def _fits_statically(pod: Pod, node) -> bool:
    """nodeSelector, required node affinity and NoSchedule/NoExecute taints (enough to pre-bind system pods)."""
    spec = pod.spec
    if not required_node_affinity_matches(spec, node.metadata.labels, node.metadata.name):
        return False
    return all(tolerated_by_any(spec.tolerations, t) for t in node.spec.taints if t.effect != "PreferNoSchedule")


def bind_first_fit(snapshot: ClusterSnapshot, pods: list[Pod]) -> None:
    """Bind `pods` in order to the first node with room (cpu, memory, pod count): a plausible running state."""
    free = {}
    for n in snapshot.nodes:
        a = n.allocatable
        free[n.metadata.name] = [int(a.get("cpu", 0) * 1000), int(a.get("memory", 0)), int(a.get("pods", 0))]
    for p in snapshot.pods:
        if p.spec.node_name in free:
            r = pod_requests(p)
            f = free[p.spec.node_name]
            f[0] -= r.get("cpu", 0)
            f[1] -= r.get("memory", 0)
            f[2] -= 1
    for p in pods:
        r = pod_requests(p)
        for n in snapshot.nodes:
            f = free[n.metadata.name]
            if f[0] >= r.get("cpu", 0) and f[1] >= r.get("memory", 0) and f[2] >= 1 and _fits_statically(p, n):
                f[0] -= r.get("cpu", 0)
                f[1] -= r.get("memory", 0)
                f[2] -= 1
                p.spec.node_name = n.metadata.name
                p.status.phase = "Running"
                break


def _pdb(name: str, ns: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": labels}, **spec}}


def _pc(name: str, value: int, description: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": description, **extra}


# --- instances ----------------------------------------------------------------------------------------------


def demo_cluster(data: Path) -> dict[str, Any]:
    """open-simulator demo_1 (4 nodes, control plane, kube-proxy, coredns, metrics-server) + simple + complicate."""
    ex = data / "open-simulator-examples" / "example"
    cluster = _read([ex / "cluster" / "demo_1"])
    apps = _read([ex / "application" / "simple", ex / "application" / "complicate"])
    # complicate/node.yaml is the simulator's "new node" template, not part of the cluster.
    apps = [o for o in apps if o["kind"] != "Node"]
    for o in apps:  # priorities added by hand so that queue order and preemption have something to work on
        spec = o.get("spec", {}).get("template", {}).get("spec")
        name = o.get("metadata", {}).get("name", "")
        if spec is not None and name.startswith("database"):
            spec["priorityClassName"] = "business-critical"
        elif spec is not None and o["kind"] == "Job":
            spec["priorityClassName"] = "batch-low"
    classes = [
        _pc("business-critical", 100000, "databases: scheduled first, may preempt"),
        _pc("batch-low", -100, "batch jobs: never preempt", preemptionPolicy="Never"),
        _pc("default-priority", 0, "everything else", globalDefault=True),
    ]
    running = _snapshot([*classes, *cluster])
    for p in running.pods:
        node = pinned_node(p)
        if node and not p.spec.node_name:
            p.spec.node_name, p.status.phase = node, "Running"
    bind_first_fit(running, [p for p in running.pods if not p.spec.node_name])
    # The applications to place: pending pods of their controllers (loaded next to the running cluster).
    snap = _snapshot([*(to_wire(o) for o in running.priority_classes), *(to_wire(o) for o in running.storage_classes),
                      *(to_wire(o) for o in running.nodes), *(to_wire(p) for p in running.pods), *apps])
    pdbs = [
        _pdb("coredns", "kube-system", {"k8s-app": "kube-dns"}, maxUnavailable=1),
        _pdb("metrics-server", "kube-system", {"k8s-app": "metrics-server"}, minAvailable=1),
        _pdb("webapp", "default", {"app": "webapp"}, minAvailable="75%"),
        _pdb("database", "default", {"app": "database"}, maxUnavailable="25%"),
    ]
    return as_list(snap, pdbs)


def _template(data: Path, name: str) -> dict[str, Any]:
    return _read([data / "k8s-scheduler-perf" / "templates" / f"{name}.yaml"])[0]


def _perf_nodes(data: Path, count: int, tainted: int = 0) -> list[dict[str, Any]]:
    """scheduler_perf's node templates, named and labelled as its labelNodePrepareStrategy does (3 zones)."""
    templates = {name: _template(data, name) for name in ("node-default", "node-with-taint")}
    out = []
    for i in range(count):
        t = copy.deepcopy(templates["node-with-taint" if i >= count - tainted else "node-default"])
        name = f"{t['metadata'].pop('generateName')}{i:03d}"
        t["metadata"].update(name=name, labels={"kubernetes.io/hostname": name, ZONE: f"zone{i % 3 + 1}"})
        t["status"]["allocatable"] = t["status"]["capacity"]
        out.append(t)
    return out


def _perf_pods(data: Path, template: str, count: int, ns: str, prefix: str, nodes: list[str] | None = None,
               labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    base = _template(data, template)
    out = []
    for i in range(count):
        p = copy.deepcopy(base)
        p["metadata"].pop("generateName", None)
        p["metadata"].update(name=f"{prefix}-{i:04d}", namespace=ns,
                             creationTimestamp=f"2024-06-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z")
        if labels:
            p["metadata"]["labels"] = {**p["metadata"].get("labels", {}), **labels}
        if nodes:
            p["spec"]["nodeName"] = nodes[i % len(nodes)]
            p["status"] = {"phase": "Running"}
        out.append(p)
    return out


def perf_basic_small(data: Path) -> dict[str, Any]:
    """SchedulingBasic, scaled down: 50 default nodes in 3 zones, 200 bound pods, 300 pending pod-default pods."""
    nodes = _perf_nodes(data, 50)
    names = [n["metadata"]["name"] for n in nodes]
    pods = [*_perf_pods(data, "pod-default", 200, "sched-0", "init-pod", nodes=names),
            *_perf_pods(data, "pod-default", 300, "sched-1", "pod")]
    return as_list(_snapshot([*nodes, *pods]))


def affinity_small(data: Path) -> dict[str, Any]:
    """Affinity, anti-affinity and spread templates mixed on 20 nodes (2 tainted), in 3 zones."""
    nodes = _perf_nodes(data, 20, tainted=2)
    names = [n["metadata"]["name"] for n in nodes[:18]]
    pods = [
        *_perf_pods(data, "pod-with-pod-anti-affinity-label", 6, "sched-0", "green-init", nodes=names[:6]),
        *_perf_pods(data, "pod-default", 40, "sched-0", "init-pod", nodes=names),
        *_perf_pods(data, "pod-with-pod-anti-affinity", 16, "sched-1", "anti-affinity-pod"),
        *_perf_pods(data, "pod-with-pod-affinity", 12, "sched-1", "affinity-pod"),
        *_perf_pods(data, "pod-with-preferred-pod-affinity", 8, "sched-1", "preferred-affinity-pod"),
        *_perf_pods(data, "pod-with-preferred-pod-anti-affinity", 8, "sched-1", "preferred-anti-affinity-pod"),
        *_perf_pods(data, "pod-with-topology-spreading", 24, "sched-0", "spreading-pod"),
        *_perf_pods(data, "pod-with-preferred-topology-spreading", 12, "sched-0", "preferred-spreading-pod"),
        *_perf_pods(data, "pod-with-node-affinity", 10, "sched-1", "node-affinity-pod"),
        *_perf_pods(data, "pod-high-priority", 2, "sched-1", "high-priority-pod"),
    ]
    return as_list(_snapshot([*nodes, *pods]))


INSTANCES = {
    "demo-cluster.json": demo_cluster,
    "perf-basic-small.json": perf_basic_small,
    "affinity-small.json": affinity_small,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=HERE, help="where to write the instances (default: %(default)s)")
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        print(f"{args.data} is absent; the shipped instances are kept as they are", file=sys.stderr)
        return 0
    for filename, build in INSTANCES.items():
        doc = build(args.data)
        text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
        (args.out / filename).write_text(text, encoding="utf-8")
        print(f"wrote {args.out / filename}: {len(doc['items'])} objects, {len(text) // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
