"""Benchmark cluster-state generators (`kplace generate WORKLOAD`): each returns a kubectl-style v1 `List`.

    from kplace.instances.generators import generate, list_workloads
    state = generate("perf-basic", nodes=500, pods=1000, seed=0, params={})

Every generator is deterministic for a seed and builds plain wire-format dicts (what `kubectl get ... -o json`
prints), so `kplace` loads the result like any export. Workloads:

- `perf-*`: kube-scheduler's own scheduler_perf workloads (SchedulingBasic, SchedulingNodeAffinity,
  SchedulingPodAffinity, SchedulingPodAntiAffinity, the Preferred* variants, TopologySpreading,
  PreferredTopologySpreading, PreemptionBasic and PreemptionAsync), with the init pods already bound consistently
  with their constraints and the measured pods pending (PreemptionAsync's churned high-priority pods among them).
- `dcm`: DCM's Kubernetes protocol (replica groups, a fraction with hostname anti-affinity to their own group).
- `fragmentation`, `spread-zones`, `priority-overload`: traps for greedy placement.
- `openb`: Alibaba's real openb GPU cluster and pod list (needs the data folder).
- `vbp`: one Panigrahy vector bin-packing instance (needs the data folder).

The node and pod template values of the `perf-*` workloads come from kubernetes/kubernetes,
test/integration/scheduler_perf (templates/*.yaml, affinity/, misc/ and topology_spreading/
performance-config.yaml), Apache-2.0, copyright The Kubernetes Authors.
"""

from __future__ import annotations

import copy
import csv
import math
import random
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from kplace.models.errors import InputError

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
_EPOCH = datetime(2024, 6, 1, tzinfo=UTC)
_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DEFAULT_OPENB = _DATA / "alibaba-gpu-v2023-openb"
DEFAULT_VBP = _DATA / "vbp-panigrahy-vectorpack"

Obj = dict[str, Any]


# --- wire-format helpers ------------------------------------------------------------------------------------


def _ts(seconds: int) -> str:
    return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node(name: str, capacity: dict[str, str], labels: dict[str, str] | None = None,
          taints: list[Obj] | None = None) -> Obj:
    node: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, **(labels or {})}},
        "spec": {},
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity),
                   "conditions": [{"type": "Ready", "status": "True"}], "phase": "Running"},
    }
    if taints:
        node["spec"]["taints"] = taints
    return node


def _owner_of(name: str, labels: dict[str, str] | None) -> tuple[str, str]:
    """The controller a running pod of a real cluster has: a ReplicaSet named after its app (or its name's stem)."""
    app = (labels or {}).get("app") or (labels or {}).get("k8s-app") or name.rstrip("0123456789").rstrip("-")
    return "ReplicaSet", f"{app}-{zlib.crc32(app.encode()) % 10**6:06d}"


def _pod(name: str, namespace: str, requests: dict[str, str], *, created: int, labels: dict[str, str] | None = None,
         node: str | None = None, limits: dict[str, str] | None = None, extra_spec: Obj | None = None,
         annotations: dict[str, str] | None = None, image: str = "registry.k8s.io/pause:3.10",
         owner: tuple[str, str] | None = None) -> Obj:
    """A pod; a running one (`node`) is owned by `owner` (kind, name), by default a ReplicaSet of its app, as
    controllers own nearly every running pod of a real cluster (so the rebalancer may move it)."""
    container: Obj = {"name": "pause", "image": image, "resources": {"requests": dict(requests)}}
    if limits:
        container["resources"]["limits"] = dict(limits)
    meta: Obj = {"name": name, "namespace": namespace, "creationTimestamp": _ts(created)}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"containers": [container], **copy.deepcopy(extra_spec or {})},
                "status": {"phase": "Pending"}}
    if node is not None:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": _ts(created)}  # a started pod always reports it
        kind, owner_name = owner or _owner_of(name, labels)
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": owner_name,
                                    "uid": f"uid-{kind.lower()}-{namespace}-{owner_name}", "controller": True}]
    return pod


def _namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _priority_class(name: str, value: int, description: str) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": description}


def _pdb(app: str, namespace: str, size: int, budget: int) -> Obj:
    """A PDB named after `app` selecting its `size` running pods with maxUnavailable `budget`, its status as the
    disruption controller writes it (kube-scheduler reads the status, not the spec)."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": app, "namespace": namespace},
            "spec": {"selector": _selector({"app": app}), "maxUnavailable": budget},
            "status": {"currentHealthy": size, "desiredHealthy": max(0, size - budget), "expectedPods": size,
                       "disruptionsAllowed": min(size, budget)}}


def _as_list(items: list[Obj], annotations: dict[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "List",
            "metadata": {"resourceVersion": "", "annotations": dict(annotations)}, "items": items}


def _selector(labels: dict[str, str]) -> Obj:
    return {"matchLabels": dict(labels)}


# --- parameters ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    name: str
    help: str
    parse: Callable[[str], Any]
    default: Any = None


def _int_in(lo: int, hi: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
        if value < lo or (hi is not None and value > hi):
            raise ValueError(f"{value} is outside {lo}..{hi if hi is not None else '∞'}")
        return value

    return parse


def _choice(*options: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in options:
            raise ValueError(f"{text!r} is not one of {', '.join(options)}")
        return text

    return parse


def _parse_params(workload: str, spec: list[Param], given: dict[str, str]) -> dict[str, Any]:
    known = {p.name: p for p in spec}
    for key in given:
        if key not in known:
            valid = ", ".join(sorted(known)) or "none"
            raise InputError(f"workload {workload!r} has no parameter {key!r} (valid: {valid})")
    out: dict[str, Any] = {}
    for p in spec:
        if p.name in given:
            try:
                out[p.name] = p.parse(given[p.name])
            except ValueError as exc:
                raise InputError(f"workload {workload!r}: parameter {p.name}={given[p.name]!r}: {exc}") from None
        else:
            out[p.name] = p.default
    return out


# --- scheduler_perf templates -------------------------------------------------------------------------------
# Values of kubernetes/kubernetes test/integration/scheduler_perf/templates/*.yaml (Apache-2.0): node-default
# (capacity pods 110, cpu 4, memory 32Gi) and the pod templates below (pause image, containerPort 80,
# requests = limits = 100m / 500Mi). Namespaces as the affinity workloads create them: init pods in sched-0,
# measured pods in sched-1; the (anti-)affinity terms name both.

PERF_NODE_CAPACITY = {"pods": "110", "cpu": "4", "memory": "32Gi"}
_PERF_NAMESPACES = ["sched-1", "sched-0"]


def _perf_term(color: str, key: str) -> Obj:
    return {"labelSelector": _selector({"color": color}), "topologyKey": key, "namespaces": list(_PERF_NAMESPACES)}


def _perf_spread(when: str) -> Obj:
    return {"topologySpreadConstraints": [{"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": when,
                                           "labelSelector": _selector({"color": "blue"})}]}


# template name → (generateName, labels, spec fields besides containers)
PERF_POD_TEMPLATES: dict[str, tuple[str, dict[str, str], Obj]] = {
    "pod-default": ("pod-", {}, {}),
    "pod-with-node-affinity": ("node-affinity-", {}, {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}]}}}}),
    "pod-with-pod-affinity": ("affinity-pod-", {"color": "blue"}, {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_perf_term("blue", ZONE)]}}}),
    "pod-with-pod-anti-affinity": ("anti-affinity-pod-", {"color": "green"}, {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_perf_term("green", HOSTNAME)]}}}),
    "pod-with-preferred-pod-affinity": ("preferred-affinity-pod-", {"color": "red"}, {"affinity": {"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"podAffinityTerm": _perf_term("red", HOSTNAME), "weight": 1}]}}}),
    "pod-with-preferred-pod-anti-affinity": ("preferred-anti-affinity-pod-", {"color": "yellow"}, {"affinity": {
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"podAffinityTerm": _perf_term("yellow", HOSTNAME), "weight": 1}]}}}),
    "pod-with-topology-spreading": ("spreading-pod-", {"color": "blue"}, _perf_spread("DoNotSchedule")),
    "pod-with-preferred-topology-spreading": ("spreading-pod-", {"color": "blue"}, _perf_spread("ScheduleAnyway")),
    "pod-low-priority": ("pod-", {}, {}),
    "pod-high-priority": ("pod-high-priority-", {}, {"priority": 10}),
}
_PERF_POD_CPU_M = {"pod-low-priority": 900, "pod-high-priority": 3000}  # millicores; the others ask 100m
_PERF_POD_MEM_MI = 500


@dataclass(frozen=True)
class PerfWorkload:
    upstream: str  # test case / workload name in scheduler_perf
    template: str  # pod template of init and measured pods
    init_template: str
    zones: tuple[str, ...] | None  # labelNodePrepareStrategy values (None: no zone label)
    nodes: int
    init: Callable[[int], int]  # default init pods for a node count
    pods: int
    threshold: int  # kube's CI floor (pods/s) for the 5000-node workload
    one_per_node: bool = False  # init pods carry hostname anti-affinity against each other
    churn: str | None = None  # a template created every 200 ms while the measured pods schedule (churn opcode)


PERF: dict[str, PerfWorkload] = {
    "perf-basic": PerfWorkload("SchedulingBasic/5000Nodes_10000Pods", "pod-default", "pod-default",
                               ("zone1", "zone2", "zone3"), 5000, lambda n: n // 5, 10000, 680),
    "perf-node-affinity": PerfWorkload("SchedulingNodeAffinity/5000Nodes_10000Pods", "pod-with-node-affinity",
                                       "pod-with-node-affinity", ("zone1",), 5000, lambda n: n, 10000, 220),
    "perf-pod-affinity": PerfWorkload("SchedulingPodAffinity/5000Nodes_5000Pods", "pod-with-pod-affinity",
                                      "pod-with-pod-affinity", ("zone1",), 5000, lambda n: n, 5000, 35),
    "perf-pod-anti-affinity": PerfWorkload("SchedulingPodAntiAffinity/5000Nodes_2000Pods",
                                           "pod-with-pod-anti-affinity", "pod-with-pod-anti-affinity", None, 5000,
                                           lambda n: n // 5, 2000, 60, one_per_node=True),
    "perf-preferred-pod-affinity": PerfWorkload("SchedulingPreferredPodAffinity/5000Nodes_5000Pods",
                                                "pod-with-preferred-pod-affinity", "pod-with-preferred-pod-affinity",
                                                None, 5000, lambda n: n, 5000, 90),
    "perf-preferred-pod-anti-affinity": PerfWorkload(
        "SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods", "pod-with-preferred-pod-anti-affinity",
        "pod-with-preferred-pod-anti-affinity", None, 5000, lambda n: n, 5000, 90),
    "perf-spread": PerfWorkload("TopologySpreading/5000Nodes_5000Pods", "pod-with-topology-spreading", "pod-default",
                                ("moon-1", "moon-2", "moon-3"), 5000, lambda n: n, 5000, 460),
    "perf-preferred-spread": PerfWorkload("PreferredTopologySpreading/5000Nodes_5000Pods",
                                          "pod-with-preferred-topology-spreading", "pod-default",
                                          ("moon-1", "moon-2", "moon-3"), 5000, lambda n: n, 5000, 340),
    # Each node holds 4 low-priority pods (3.6 of 4 CPU); a high-priority pod (3 CPU) must preempt 3 of them.
    "perf-preemption-basic": PerfWorkload("PreemptionBasic/1000Nodes", "pod-high-priority", "pod-low-priority",
                                          None, 1000, lambda n: 4 * n, 1000, 0),
    "perf-preemption-async": PerfWorkload("PreemptionAsync/5000Nodes", "pod-default", "pod-low-priority", None, 5000,
                                          lambda n: 4 * n, 5000, 570, churn="pod-high-priority"),
}


def perf_pod(template: str, name: str, namespace: str, created: int, node: str | None = None) -> Obj:
    _, labels, spec = PERF_POD_TEMPLATES[template]
    res = {"cpu": f"{_PERF_POD_CPU_M.get(template, 100)}m", "memory": f"{_PERF_POD_MEM_MI}Mi"}
    pod = _pod(name, namespace, res, limits=res, created=created, labels=labels, node=node, extra_spec=spec,
               image="registry.k8s.io/pause:3.10.1")
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    return pod


def perf_nodes(count: int, zones: tuple[str, ...] | None) -> list[Obj]:
    """node-default × count, named as generateName `scheduler-perf-` + index, zones assigned round-robin."""
    width = max(5, len(str(count - 1)))
    out = []
    for i in range(count):
        labels = {ZONE: zones[i % len(zones)]} if zones else {}
        out.append(_node(f"scheduler-perf-{i:0{width}d}", PERF_NODE_CAPACITY, labels))
    return out


def _perf(name: str, nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    w = PERF[name]
    n_nodes = w.nodes if nodes is None else nodes
    spec = [Param("init", "bound init pods", _int_in(0))]
    if w.churn:
        spec.append(Param("churn", "churned pods (default: one per 200 ms of the measured pods at kube's threshold)",
                          _int_in(0)))
    p = _parse_params(name, spec, params)
    n_init = w.init(n_nodes) if p["init"] is None else p["init"]
    n_pods = w.pods if pods is None else pods
    n_churn = 0
    if w.churn:
        n_churn = math.ceil(n_pods / w.threshold * 5) if p["churn"] is None else p["churn"]
    if w.one_per_node and n_init > n_nodes:
        raise InputError(f"workload {name!r}: init={n_init} pods with hostname anti-affinity need at least as many "
                         f"nodes (got {n_nodes})")
    per_node = math.ceil(n_init / n_nodes) if n_nodes else 0
    if per_node * _PERF_POD_CPU_M.get(w.init_template, 100) > 4000:
        raise InputError(f"workload {name!r}: init={n_init} pods do not fit on {n_nodes} nodes")
    node_objs = perf_nodes(n_nodes, w.zones)
    names = [n["metadata"]["name"] for n in node_objs]
    gen_init = PERF_POD_TEMPLATES[w.init_template][0]
    gen = PERF_POD_TEMPLATES[w.template][0]
    width = max(5, len(str(max(n_init, n_pods))))
    # Init pods as the scheduler would have spread them (LeastAllocated on identical nodes): round-robin,
    # which also keeps hostname anti-affinity (one per node) and the spread skew (equal zones) satisfied.
    init = [perf_pod(w.init_template, f"init-{gen_init}{i:0{width}d}", "sched-0", i, node=names[i % n_nodes])
            for i in range(n_init)]
    measured = [perf_pod(w.template, f"{gen}{i:0{width}d}", "sched-1", n_init + i) for i in range(n_pods)]
    if n_churn:  # created among the measured pods, evenly, as the 200 ms churn interleaves them
        step = max(1, n_pods // n_churn)
        gen_churn = PERF_POD_TEMPLATES[w.churn][0]
        for k in range(n_churn):
            churned = perf_pod(w.churn, f"{gen_churn}{k:0{width}d}", "sched-1", n_init + k * step)
            measured.insert(k * (step + 1), churned)
    items = [_namespace("sched-0"), _namespace("sched-1"), *node_objs, *init, *measured]
    return _as_list(items, {"kplace.io/generator": name, "kplace.io/upstream": f"scheduler_perf {w.upstream}",
                            "kplace.io/kube-threshold-pods-per-second": str(w.threshold), "kplace.io/seed": str(seed)})


# --- DCM ----------------------------------------------------------------------------------------------------
# DCM (Suresh et al., OSDI 2020) evaluated kube-scheduler on replica groups drawn from Azure's VM traces, with
# a fraction F of the groups carrying affinity constraints. Here: small nodes (2 CPU / 2000Mi / 110 pods) each
# running one system pod, group sizes from a heavy-tailed (Pareto α = 1.1) distribution capped at `max-group`,
# Azure-like small requests per group, and F% of groups with required hostname anti-affinity to themselves.

_DCM_CPU = [(100, 35), (200, 30), (250, 15), (500, 15), (1000, 5)]  # millicores, weight
_DCM_MEM = [(100, 30), (200, 30), (250, 15), (500, 20), (1000, 5)]  # Mi, weight


def _weighted(rng: random.Random, table: list[tuple[int, int]]) -> int:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table])[0]


def _dcm_fill(rng: random.Random, fill: int) -> list[dict[str, str]]:
    """Requests of the running pods on one node: DCM-sized pods added while both cpu and memory stay under a
    level drawn uniformly within ±25 points of `fill`% of what the system pod leaves (1900m, 1900Mi)."""
    level = min(100.0, max(0.0, fill + rng.uniform(-25, 25))) / 100
    room_cpu, room_mem = 1900 * level, 1900 * level
    out: list[dict[str, str]] = []
    misses = 0
    while misses < 3:
        cpu, mem = _weighted(rng, _DCM_CPU), _weighted(rng, _DCM_MEM)
        if cpu <= room_cpu and mem <= room_mem:
            room_cpu, room_mem = room_cpu - cpu, room_mem - mem
            out.append({"cpu": f"{cpu}m", "memory": f"{mem}Mi"})
        else:
            misses += 1
    return out


def _dcm(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    p = _parse_params("dcm", [Param("fraction", "percent of groups with anti-affinity", _int_in(0, 100), 0),
                              Param("max-group", "largest group size", _int_in(1)),
                              Param("fill", "percent of each node already used by running pods", _int_in(0, 100),
                                    0)], params)
    n_nodes = 500 if nodes is None else nodes
    n_pods = 4 * n_nodes if pods is None else pods
    cap = min(n_nodes, p["max-group"] or 100)
    rng = random.Random(seed)
    fill_rng = random.Random(f"dcm-fill-{seed}")
    node_objs = [_node(f"dcm-node-{i:04d}", {"cpu": "2", "memory": "2000Mi", "pods": "110"}) for i in range(n_nodes)]
    items: list[Obj] = [_namespace("dcm"), *node_objs]
    for i, n in enumerate(node_objs):
        name = n["metadata"]["name"]
        items.append(_pod(f"system-{name}", "kube-system", {"cpu": "100m", "memory": "100Mi"}, created=i,
                          labels={"k8s-app": "system"}, node=name, owner=("DaemonSet", "system-agent")))
        if p["fill"]:
            for k, req in enumerate(_dcm_fill(fill_rng, p["fill"])):
                items.append(_pod(f"running-{name}-{k}", "dcm", req, created=i, labels={"app": "running"},
                                  node=name))
    sizes: list[int] = []
    while sum(sizes) < n_pods:
        sizes.append(min(cap, int(rng.paretovariate(1.1)), n_pods - sum(sizes)))
    n_anti = round(len(sizes) * p["fraction"] / 100)
    anti = set(rng.sample(range(len(sizes)), n_anti))
    t = n_nodes
    for g, size in enumerate(sizes):
        app = f"group-{g:04d}"
        req = {"cpu": f"{_weighted(rng, _DCM_CPU)}m", "memory": f"{_weighted(rng, _DCM_MEM)}Mi"}
        spec: Obj = {}
        if g in anti:
            spec = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": _selector({"app": app}), "topologyKey": HOSTNAME}]}}}
        for r in range(size):
            items.append(_pod(f"{app}-{r:03d}", "dcm", req, created=t, labels={"app": app}, extra_spec=spec))
            t += 1
    return _as_list(items, {"kplace.io/generator": "dcm", "kplace.io/dcm-fraction": str(p["fraction"]),
                            "kplace.io/dcm-fill": str(p["fill"]),
                            "kplace.io/groups": str(len(sizes)), "kplace.io/anti-affinity-groups": str(n_anti),
                            "kplace.io/seed": str(seed)})


# --- fragmentation ------------------------------------------------------------------------------------------
# Nodes of 8 CPU / 32Gi. First (earlier in the queue) many small pods of about 1 CPU: LeastAllocated spreads
# them two per node, leaving about 6 CPU free everywhere. Then large 7-CPU pods: none fits any more, while a
# packing that puts the small pods 8 to a node on a quarter of the nodes leaves the rest empty for them.


def _fragmentation(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    p = _parse_params("fragmentation", [Param("large", "number of large pods", _int_in(0))], params)
    n_nodes = 40 if nodes is None else nodes
    n_pods = n_nodes * 5 // 2 if pods is None else pods
    n_large = min(n_pods, n_pods // 5 if p["large"] is None else p["large"])
    n_small = n_pods - n_large
    rng = random.Random(seed)
    items: list[Obj] = [_namespace("frag")]
    items += [_node(f"frag-node-{i:04d}", {"cpu": "8", "memory": "32Gi", "pods": "110"}) for i in range(n_nodes)]
    for i in range(n_small):
        cpu = rng.choice([750, 1000, 1000, 1250])
        items.append(_pod(f"small-{i:05d}", "frag", {"cpu": f"{cpu}m", "memory": "2Gi"}, created=i,
                          labels={"app": "small"}))
    for i in range(n_large):
        items.append(_pod(f"large-{i:05d}", "frag", {"cpu": "7", "memory": "8Gi"}, created=n_small + i,
                          labels={"app": "large"}))
    return _as_list(items, {"kplace.io/generator": "fragmentation", "kplace.io/small-pods": str(n_small),
                            "kplace.io/large-pods": str(n_large), "kplace.io/seed": str(seed)})


# --- preferred-affinity -------------------------------------------------------------------------------------
# Every pod fits (about half the cluster's cpu): where pods go is decided by kube's scores alone. Three zones;
# `web` replicas prefer other hosts than their siblings (hostname anti-affinity, weight 100); `api` pods,
# queued before the caches they want, prefer a zone with a `cache` pod (weight 80); `batch` pods prefer hosts
# without `web` (weight 50). Node sizes and pod requests vary with the seed.


def _preferred(app: str, key: str, weight: int, anti: bool) -> Obj:
    kind = "podAntiAffinity" if anti else "podAffinity"
    return {"affinity": {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}}]}}}


def _preferred_affinity(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    _parse_params("preferred-affinity", [], params)
    n_nodes = 20 if nodes is None else nodes
    n_pods = n_nodes if pods is None else pods
    rng = random.Random(seed)
    items: list[Obj] = [_namespace("pref")]
    for i in range(n_nodes):
        cpu = rng.choice([4, 8, 8, 16])
        items.append(_node(f"pref-node-{i:04d}", {"cpu": str(cpu), "memory": f"{4 * cpu}Gi", "pods": "110"},
                           {ZONE: f"zone-{i % 3}"}))
    share = {"web": 0.4, "api": 0.2, "cache": 0.15, "batch": 0.25}
    counts = dict(zip(share, _split(max(n_pods, 4), list(map(lambda f: round(100 * f), share.values()))),
                      strict=True))
    specs = {"web": _preferred("web", HOSTNAME, 100, True), "api": _preferred("cache", ZONE, 80, False),
             "cache": {}, "batch": _preferred("web", HOSTNAME, 50, True)}
    k = 0
    for app in ("web", "api", "cache", "batch"):
        for i in range(counts[app]):
            cpu = rng.choice([250, 500, 1000, 2000])
            items.append(_pod(f"{app}-{i:04d}", "pref", {"cpu": f"{cpu}m", "memory": f"{cpu // 2}Mi"}, created=k,
                              labels={"app": app}, extra_spec=specs[app]))
            k += 1
    return _as_list(items, {"kplace.io/generator": "preferred-affinity", "kplace.io/seed": str(seed)})


# --- spread-zones -------------------------------------------------------------------------------------------
# Zones of very different sizes (node counts ∝ zones, zones−1, ..., 1); the smaller half of the zones is
# nearly full of bound filler pods. Pending apps spread over zones with DoNotSchedule (maxSkew 1 or 2), some
# also over hostnames (ScheduleAnyway); some apps already have replicas bound, skewed to the biggest zone.


def _split(total: int, weights: list[int]) -> list[int]:
    """Largest-remainder split of `total` by `weights`, at least 1 each."""
    s = sum(weights)
    raw = [total * w / s for w in weights]
    out = [max(1, int(r)) for r in raw]
    order = sorted(range(len(weights)), key=lambda i: raw[i] - int(raw[i]), reverse=True)
    k = 0
    while sum(out) < total:
        out[order[k % len(order)]] += 1
        k += 1
    while sum(out) > total:
        i = max(range(len(out)), key=lambda j: out[j])
        out[i] -= 1
    return out


def _spread_zones(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    p = _parse_params("spread-zones", [Param("zones", "number of zones", _int_in(2, 26), 4)], params)
    n_zones = p["zones"]
    n_nodes = 100 if nodes is None else nodes
    if n_nodes < n_zones:
        raise InputError(f"workload 'spread-zones': {n_nodes} nodes cannot cover {n_zones} zones")
    n_pods = 3 * n_nodes if pods is None else pods
    rng = random.Random(seed)
    zones = [f"zone-{chr(ord('a') + z)}" for z in range(n_zones)]
    counts = _split(n_nodes, list(range(n_zones, 0, -1)))
    items: list[Obj] = [_namespace("apps"), _namespace("filler")]
    node_zone: list[tuple[str, int]] = []
    for z, c in enumerate(counts):
        for k in range(c):
            name = f"{zones[z]}-node-{k:04d}"
            node_zone.append((name, z))
            items.append(_node(name, {"cpu": "4", "memory": "16Gi", "pods": "110"}, {ZONE: zones[z]}))
    t = 0
    full = set(range((n_zones + 1) // 2, n_zones))
    for name, z in node_zone:
        if z in full:  # 3.0–3.5 of 4 CPU used
            for f in range(rng.choice([6, 7])):
                items.append(_pod(f"filler-{name}-{f}", "filler", {"cpu": "500m", "memory": "1Gi"}, created=t,
                                  labels={"app": "filler"}, node=name))
                t += 1
    big = [name for name, z in node_zone if z == 0]
    made, a = 0, 0
    while made < n_pods:
        app = f"app-{a:03d}"
        replicas = min(n_pods - made, rng.randint(3, 30))
        skew = rng.choice([1, 1, 2])
        constraints = [{"maxSkew": skew, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": _selector({"app": app})}]
        if rng.random() < 0.3:
            constraints.append({"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway",
                                "labelSelector": _selector({"app": app})})
        req = {"cpu": rng.choice(["250m", "500m"]), "memory": rng.choice(["512Mi", "1Gi"])}
        spec = {"topologySpreadConstraints": constraints}
        if rng.random() < 0.3:  # already running: a few replicas, all in the biggest zone
            for r in range(min(skew, rng.randint(1, 3))):
                items.append(_pod(f"{app}-running-{r}", "apps", req, created=t, labels={"app": app},
                                  node=rng.choice(big), extra_spec=spec))
                t += 1
        for r in range(replicas):
            items.append(_pod(f"{app}-{r:03d}", "apps", req, created=t, labels={"app": app}, extra_spec=spec))
            t += 1
        made += replicas
        a += 1
    return _as_list(items, {"kplace.io/generator": "spread-zones",
                            "kplace.io/zone-nodes": ",".join(f"{z}={c}" for z, c in zip(zones, counts, strict=True)),
                            "kplace.io/nearly-full-zones": ",".join(zones[z] for z in sorted(full)),
                            "kplace.io/seed": str(seed)})


# --- priority-overload --------------------------------------------------------------------------------------
# Three PriorityClasses; low-priority pods already bound fill 75–90% of every node; pending pods of all three
# classes ask for more than the whole cluster (about 1.2× its CPU), so high-priority pods must preempt.

_PRIORITIES = [("low-priority", 100, "batch work, first to go"), ("medium-priority", 1000, "services"),
               ("high-priority", 10000, "critical services, may preempt both others")]


def _priority_overload(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    p = _parse_params("priority-overload", [Param("overload", "pending CPU demand, percent of cluster CPU",
                                                   _int_in(1, 1000), 120)], params)
    n_nodes = 50 if nodes is None else nodes
    rng = random.Random(seed)
    items: list[Obj] = [_namespace("prio"), *(_priority_class(*pc) for pc in _PRIORITIES)]
    names = [f"prio-node-{i:04d}" for i in range(n_nodes)]
    items += [_node(n, {"cpu": "4", "memory": "16Gi", "pods": "110"}) for n in names]
    t = 0
    for name in names:
        used, target = 0, rng.randint(3000, 3600)
        while used < target:
            cpu = min(rng.choice([250, 500, 1000]), 4000 - used)
            items.append(_pod(f"low-running-{t:05d}", "prio", {"cpu": f"{cpu}m", "memory": f"{cpu}Mi"}, created=t,
                              labels={"tier": "low"}, node=name, extra_spec={"priorityClassName": "low-priority",
                                                                              "priority": 100}))
            used += cpu
            t += 1
    demand = n_nodes * 4000 * p["overload"] // 100
    made, total = 0, 0
    while (pods is None and total < demand) or (pods is not None and made < pods):
        cls, value, _ = _PRIORITIES[rng.choices([0, 1, 2], weights=[2, 4, 4])[0]]
        cpu = rng.choice([500, 1000, 1500])
        tier = cls.split("-")[0]
        items.append(_pod(f"{tier}-{made:05d}", "prio", {"cpu": f"{cpu}m", "memory": f"{cpu}Mi"}, created=t,
                          labels={"tier": tier}, extra_spec={"priorityClassName": cls, "priority": value}))
        made, total, t = made + 1, total + cpu, t + 1
    return _as_list(items, {"kplace.io/generator": "priority-overload", "kplace.io/pending-cpu-millicores":
                            str(total), "kplace.io/cluster-cpu-millicores": str(n_nodes * 4000),
                            "kplace.io/seed": str(seed)})


# --- preemption-pdb -----------------------------------------------------------------------------------------
# A full cluster: every node holds low-priority replicas of 10-pod Deployments (each with a PodDisruptionBudget
# allowing `budget` disruptions) and a medium-priority service pod; a batch of high-priority pods asks for
# `demand`% of the cluster's CPU, so nearly every one must preempt, and the budgets are shared by the batch.


def _preemption_pdb(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    p = _parse_params("preemption-pdb", [
        Param("demand", "pending CPU demand, percent of cluster CPU", _int_in(1, 100), 30),
        Param("budget", "disruptions each Deployment's PDB allows", _int_in(0, 10), 2)], params)
    n_nodes = 40 if nodes is None else nodes
    rng = random.Random(seed)
    items: list[Obj] = [_namespace("prio"), *(_priority_class(*pc) for pc in _PRIORITIES)]
    names = [f"pdb-node-{i:04d}" for i in range(n_nodes)]
    items += [_node(n, {"cpu": "8", "memory": "32Gi", "pods": "110"}) for n in names]
    t, low = 0, 0
    for name in names:
        used = 1000
        items.append(_pod(f"medium-running-{t:05d}", "prio", {"cpu": "1000m", "memory": "1Gi"}, created=t,
                          labels={"tier": "medium", "app": "svc"}, node=name,
                          extra_spec={"priorityClassName": "medium-priority", "priority": 1000}))
        t += 1
        while used < 8000:
            cpu = min(rng.choice([500, 1000, 2000]), 8000 - used)
            app = f"batch-{low // 10:03d}"
            items.append(_pod(f"low-running-{low:05d}", "prio", {"cpu": f"{cpu}m", "memory": f"{cpu}Mi"},
                              created=t, labels={"tier": "low", "app": app}, node=name,
                              extra_spec={"priorityClassName": "low-priority", "priority": 100}))
            used, low, t = used + cpu, low + 1, t + 1
    for k in range((low + 9) // 10):
        items.append(_pdb(f"batch-{k:03d}", "prio", min(10, low - 10 * k), p["budget"]))
    demand = n_nodes * 8000 * p["demand"] // 100
    made, total = 0, 0
    while (pods is None and total < demand) or (pods is not None and made < pods):
        cpu = rng.choice([1000, 2000, 3000])
        items.append(_pod(f"high-{made:05d}", "prio", {"cpu": f"{cpu}m", "memory": f"{cpu}Mi"}, created=t,
                          labels={"tier": "high"},
                          extra_spec={"priorityClassName": "high-priority", "priority": 10000}))
        made, total, t = made + 1, total + cpu, t + 1
    return _as_list(items, {"kplace.io/generator": "preemption-pdb", "kplace.io/pending-cpu-millicores": str(total),
                            "kplace.io/cluster-cpu-millicores": str(n_nodes * 8000), "kplace.io/seed": str(seed)})


# --- fragmented-moves ---------------------------------------------------------------------------------------
# Every node has 3 of 8 CPU free: a 4 CPU base pod and one 1 CPU replica of a 5-pod Deployment (under a PDB
# allowing `budget` disruptions) run there; the pending pods ask 4 CPU each. None fits anywhere, yet moving one
# replica off a node lets one in (another node takes the replica). With preempt=1 the pending pods outrank the
# replicas, so kube evicts one per pending pod; with preempt=0 they stay pending.


def _fragmented_moves(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    p = _parse_params("fragmented-moves", [
        Param("preempt", "1: the pending pods outrank the replicas (kube preempts), 0: equal priority", _int_in(0, 1),
              1),
        Param("budget", "disruptions each Deployment's PDB allows", _int_in(0, 5), 1)], params)
    n_nodes = 20 if nodes is None else nodes
    n_pending = max(1, n_nodes // 3) if pods is None else pods
    rng = random.Random(seed)
    items: list[Obj] = [_namespace("frag"), *(_priority_class(*pc) for pc in _PRIORITIES)]
    names = [f"frag-node-{i:04d}" for i in range(n_nodes)]
    items += [_node(n, {"cpu": "8", "memory": "32Gi", "pods": "110"}) for n in names]
    low = ("low-priority", 100)
    t = 0
    for i, name in enumerate(rng.sample(names, len(names))):
        items.append(_pod(f"base-{i:05d}", "frag", {"cpu": "4", "memory": "8Gi"}, created=t, node=name,
                          labels={"app": "base"}, extra_spec={"priorityClassName": "high-priority", "priority": 10000},
                          owner=("StatefulSet", "base")))
        app = f"svc-{i // 5:03d}"
        items.append(_pod(f"replica-{i:05d}", "frag", {"cpu": "1", "memory": "1Gi"}, created=t + 1, node=name,
                          labels={"app": app}, extra_spec={"priorityClassName": low[0], "priority": low[1]}))
        t += 2
    for k in range((n_nodes + 4) // 5):
        items.append(_pdb(f"svc-{k:03d}", "frag", min(5, n_nodes - 5 * k), p["budget"]))
    cls, value = ("medium-priority", 1000) if p["preempt"] else low
    for k in range(n_pending):
        items.append(_pod(f"job-{k:05d}", "frag", {"cpu": "4", "memory": "4Gi"}, created=t, labels={"app": "job"},
                          extra_spec={"priorityClassName": cls, "priority": value}))
        t += 1
    return _as_list(items, {"kplace.io/generator": "fragmented-moves", "kplace.io/seed": str(seed)})


# --- gangs --------------------------------------------------------------------------------------------------
# A fragmented cluster (running pods leave 10-60% of each node free, in pieces) and jobs whose workers form gangs
# (kube 1.36's PodGroup with schedulingPolicy.gang.minCount) of 4-64 pods, minCount the whole gang or 3/4 of it,
# queued worker by worker with single pods in between; `zone=1` requires each gang in one zone.


def _gangs(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    p = _parse_params("gangs", [Param("jobs", "gangs", _int_in(1, 1000), 12),
                                Param("zone", "1: each gang in one zone; 2: each prefers one (Kueue's "
                                      "podset-preferred-topology)", _int_in(0, 2), 0)], params)
    n_nodes = 60 if nodes is None else nodes
    rng = random.Random(seed)
    zones = ["zone-a", "zone-b", "zone-c"]
    items: list[Obj] = [_namespace("jobs")]
    names = [f"gang-node-{i:04d}" for i in range(n_nodes)]
    items += [_node(n, {"cpu": "16", "memory": "64Gi", "pods": "110"}, labels={ZONE: zones[i % 3]})
              for i, n in enumerate(names)]
    t = 0
    for name in names:
        used, target = 0, rng.randint(6400, 14400)
        while used < target:
            cpu = min(rng.choice([1000, 2000, 3000]), 16000 - used)
            items.append(_pod(f"running-{t:05d}", "jobs", {"cpu": f"{cpu}m", "memory": f"{cpu}Mi"}, created=t,
                              labels={"app": "service"}, node=name))
            used, t = used + cpu, t + 1
    made = 0
    for j in range(p["jobs"]):
        size = rng.choice([4, 8, 16, 32, 64])
        group = f"job-{j:03d}"
        spec: Obj = {"schedulingPolicy": {"gang": {"minCount": size if rng.random() < 0.5 else size * 3 // 4}}}
        if p["zone"] == 1:
            spec["schedulingConstraints"] = {"topology": [{"key": ZONE}]}
        prefer = {"kueue.x-k8s.io/podset-preferred-topology": ZONE} if p["zone"] == 2 else None
        items.append({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                      "metadata": {"name": group, "namespace": "jobs"}, "spec": spec})
        cpu = rng.choice([1000, 2000, 4000])
        for w in range(size):
            if pods is not None and made >= pods:
                break
            items.append(_pod(f"{group}-worker-{w:02d}", "jobs", {"cpu": f"{cpu}m", "memory": f"{cpu}Mi"}, created=t,
                              labels={"app": group}, extra_spec={"schedulingGroup": {"podGroupName": group}},
                              annotations=prefer))
            made, t = made + 1, t + 1
            if rng.random() < 0.2:
                items.append(_pod(f"single-{t:05d}", "jobs", {"cpu": "1000m", "memory": "1Gi"}, created=t,
                                  labels={"app": "single"}))
                t += 1
    return _as_list(items, {"kplace.io/generator": "gangs", "kplace.io/seed": str(seed)})


# --- openb --------------------------------------------------------------------------------------------------
# Alibaba cluster-trace-gpu-v2023 (openb), see ../shared/data/alibaba-gpu-v2023-openb/SOURCE.md. Nodes from
# openb_node_list_all_node.csv: cpu_milli, memory_mib, GPUs as the extended resource nvidia.com/gpu, GPU model
# as the label alibabacloud.com/gpu-card-model. Pods from one openb_pod_list_*.csv, all pending, queued by
# creation_time: gpu_spec ("A|B") becomes required node affinity on that label. GPU sharing (num_gpu = 1 with
# gpu_milli < 1000) cannot be expressed with an integer extended resource: `share=whole` (default) asks for one
# whole GPU (a conservative overcommit of the trace's GPU demand) and keeps the fraction in the annotation
# kplace.io/gpu-milli; `share=skip` leaves those pods out.

GPU = "nvidia.com/gpu"
GPU_MODEL = "alibabacloud.com/gpu-card-model"


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise InputError("no such file (is the data folder present? pass --param data=PATH)", source=str(path))
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _openb(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    p = _parse_params("openb", [Param("data", "openb folder", str, str(DEFAULT_OPENB)),
                                Param("pods", "pod list file", str, "openb_pod_list_default.csv"),
                                Param("share", "GPU-sharing pods", _choice("whole", "skip"), "whole")], params)
    folder = Path(p["data"])
    node_rows = _read_csv(folder / "openb_node_list_all_node.csv")
    pod_file = Path(p["pods"])
    pod_rows = _read_csv(pod_file if pod_file.is_absolute() else folder / pod_file)
    if nodes is not None:
        node_rows = node_rows[:nodes]
    items: list[Obj] = [_namespace("openb")]
    for r in node_rows:
        cap = {"cpu": f"{int(r['cpu_milli'])}m", "memory": f"{int(r['memory_mib'])}Mi", "pods": "110"}
        labels = {}
        if int(r["gpu"] or 0) > 0:
            cap[GPU] = str(int(r["gpu"]))
        if r.get("model"):
            labels[GPU_MODEL] = r["model"]
        items.append(_node(r["sn"], cap, labels))
    order = sorted(range(len(pod_rows)), key=lambda i: (int(pod_rows[i].get("creation_time") or 0), i))
    kept, shared = 0, 0
    for i in order:
        if pods is not None and kept >= pods:
            break
        r = pod_rows[i]
        req = {"cpu": f"{int(r['cpu_milli'])}m", "memory": f"{int(r['memory_mib'])}Mi"}
        n_gpu, milli = int(r["num_gpu"] or 0), int(r["gpu_milli"] or 0)
        annotations = {}
        if n_gpu > 0:
            if n_gpu == 1 and 0 < milli < 1000:
                shared += 1
                if p["share"] == "skip":
                    continue
                annotations["kplace.io/gpu-milli"] = str(milli)
            req[GPU] = str(n_gpu)
        spec: Obj = {}
        models = [m for m in (r.get("gpu_spec") or "").split("|") if m]
        if models:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": GPU_MODEL, "operator": "In", "values": models}]}]}}}
        labels = {"app": "openb"}
        if r.get("qos"):
            labels["openb/qos"] = r["qos"]
        created = int(r.get("creation_time") or 0) if r.get("creation_time") else i
        items.append(_pod(r["name"], "openb", req, created=created, labels=labels, extra_spec=spec,
                          annotations=annotations or None))
        kept += 1
    return _as_list(items, {"kplace.io/generator": "openb", "kplace.io/pod-list": pod_file.name,
                            "kplace.io/gpu-share": p["share"], "kplace.io/gpu-sharing-pods": str(shared),
                            "kplace.io/source": "alibaba/clusterdata cluster-trace-gpu-v2023 (openb)"})


# --- vbp ----------------------------------------------------------------------------------------------------
# One `.vbp` file (VPSolver format) of the Panigrahy classes, see ../shared/data/vbp-panigrahy-vectorpack/
# SOURCE.md: identical bins become nodes, items become pods. Dimension 1 is cpu (millicores), dimension 2
# memory (Mi), further dimensions the extended resources vbp.kplace.io/dim-K; sizes are integers already.
# The node pod limit is set high enough never to bind. Nodes default to one per item (always feasible; minimise
# nodes used with `--objective pack`); LB, OPT (when known) and the best heuristic values go in annotations.


def _vbp_known(folder: Path, instance: str) -> dict[str, str]:
    table = folder / "Panigrahy_summary_known.csv"
    if not table.is_file():
        return {}
    with table.open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    head = rows[0]
    for row in rows[1:]:
        if row and row[0] == instance:
            return dict(zip(head, row, strict=False))
    return {}


def _vbp(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    p = _parse_params("vbp", [Param("file", "a .vbp instance", str)], params)
    if not p["file"]:
        raise InputError("workload 'vbp' needs --param file=PATH (a .vbp file, e.g. "
                         f"{DEFAULT_VBP}/class1/class1_20_3_0.vbp)")
    path = Path(p["file"])
    if not path.is_file():
        raise InputError("no such file", source=str(path))
    try:
        nums = [int(x) for x in path.read_text(encoding="utf-8").split()]
        d = nums[0]
        caps = nums[1:1 + d]
        n_types = nums[1 + d]
        rows = [nums[2 + d + k * (d + 1): 2 + d + (k + 1) * (d + 1)] for k in range(n_types)]
        if d < 1 or len(caps) != d or any(len(r) != d + 1 for r in rows):
            raise ValueError
    except (ValueError, IndexError):
        raise InputError("not a VPSolver .vbp file (d, capacities, n, then n rows of d sizes and a demand)",
                         source=str(path)) from None
    sizes = [r[:d] for r in rows for _ in range(r[d])]
    if pods is not None:
        sizes = sizes[:pods]
    dims = ["cpu", "memory", *(f"vbp.kplace.io/dim-{k + 1}" for k in range(2, d))]

    def quantities(values: list[int]) -> dict[str, str]:
        out = {}
        for name, v in zip(dims, values, strict=True):
            out[name] = f"{v}m" if name == "cpu" else f"{v}Mi" if name == "memory" else str(v)
        return out

    n_nodes = len(sizes) if nodes is None else nodes
    cap = quantities(caps)
    cap["pods"] = str(max(110, len(sizes)))
    items: list[Obj] = [_namespace("vbp")]
    items += [_node(f"bin-{i:04d}", cap) for i in range(n_nodes)]
    items += [_pod(f"item-{j:04d}", "vbp", quantities(s), created=j, labels={"app": "vbp"})
              for j, s in enumerate(sizes)]
    instance = path.stem
    known = _vbp_known(path.parent.parent, instance)
    ann = {"kplace.io/generator": "vbp", "kplace.io/vbp-instance": instance, "kplace.io/vbp-dimensions": str(d)}
    if pods is None and known:
        ann["kplace.io/vbp-lower-bound"] = known.get("LB", "")
        if known.get("OPT", "-1") != "-1":
            ann["kplace.io/vbp-optimum"] = known["OPT"]
        ann["kplace.io/vbp-best-known"] = known.get("best_overall", "")
        ann["kplace.io/vbp-best-item-centric"] = known.get("best_IC", "")
    return _as_list(items, ann)


# --- volumes ------------------------------------------------------------------------------------------------
# Stateful workloads on zoned nodes: two local PVs per node of uneven sizes (WaitForFirstConsumer, so the claim
# binds where its pod lands), zonal gp3 volumes provisioned on demand under a per-node CSI attach limit, and
# some bound pods already holding gp3 volumes. Databases need local PVs big enough for their claims; apps
# provision gp3 volumes in the zones the class allows.

EBS_DRIVER = "ebs.csi.aws.com"


def _volumes(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    from kplace.solver.plugins.volumebinding.testdata import csinode, pv, pvc, storage_class

    p = _parse_params("volumes", [Param("zones", "number of zones", _int_in(1, 26), 3),
                                  Param("db", "percent of pending pods that need a local PV", _int_in(0, 100), 60)],
                      params)
    n_nodes = 30 if nodes is None else nodes
    n_pods = 3 * n_nodes if pods is None else pods
    zones = [f"zone-{chr(ord('a') + i)}" for i in range(p["zones"])]
    rng = random.Random(seed)
    items: list[Obj] = [_namespace("stateful"),
                        storage_class("local-storage"),
                        storage_class("gp3", provisioner=EBS_DRIVER, zones=zones[:-1] or zones),
                        storage_class("standard", mode="Immediate", provisioner=EBS_DRIVER, default=True)]
    t = 0
    for i in range(n_nodes):
        name = f"vol-node-{i:04d}"
        zone = zones[i % len(zones)]
        items.append(_node(name, {"cpu": "8", "memory": "32Gi", "pods": "110"}, {ZONE: zone}))
        limit = rng.choice([2, 4, 8, 25])
        items.append(csinode(name, {EBS_DRIVER: limit}))
        for k in range(2):
            items.append(pv(f"local-{i:04d}-{k}", size=f"{rng.choice([50, 100, 200, 400])}Gi", cls="local-storage",
                            node=name))
        if rng.random() < 0.3:  # a running pod already holding a gp3 volume here
            vol = f"held-{i:04d}"
            items += [pv(vol, size="20Gi", cls="gp3", zone=zone, claim=f"stateful/{vol}", csi=(EBS_DRIVER, vol)),
                      pvc(vol, size="20Gi", cls="gp3", volume=vol, namespace="stateful"),
                      _pod(vol, "stateful", {"cpu": "500m", "memory": "1Gi"}, created=(t := t + 1), node=name,
                           labels={"app": "held"},
                           extra_spec={"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": vol}}]})]
    for i in range(n_pods):
        t += 1
        if rng.random() * 100 < p["db"]:
            claim, size, cls, app = f"db-data-{i:05d}", f"{rng.choice([40, 80, 150, 300])}Gi", "local-storage", "db"
            cpu = rng.choice(["1", "2", "4"])
        else:
            claim, size, cls, app = f"app-data-{i:05d}", "20Gi", "gp3", "app"
            cpu = rng.choice(["250m", "500m", "1"])
        items.append(pvc(claim, size=size, cls=cls, namespace="stateful"))
        items.append(_pod(f"{app}-{i:05d}", "stateful", {"cpu": cpu, "memory": "2Gi"}, created=t, labels={"app": app},
                          extra_spec={"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}))
    return _as_list(items, {"kplace.io/generator": "volumes", "kplace.io/seed": str(seed)})


from .corners import corners  # noqa: E402  (a generator of its own module)
from .scale import scale_items  # noqa: E402  (a generator of its own module)


def _fraction_or_count(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if value < 0 or (value >= 1 and value != int(value)):
        raise ValueError(f"{text!r} is neither a fraction in [0, 1) nor a whole count")
    return value


_SCALE_PARAMS = [Param("zones", "number of zones", _int_in(1, 26), 3),
                 Param("pending", "pending Deployment pods: a fraction in [0, 1) or a count", _fraction_or_count, 0.2),
                 Param("load", "percent of the cluster's CPU the bound pods fill", _int_in(0, 100), 60),
                 Param("max-group", "largest Deployment", _int_in(1), 200),
                 Param("tenants", "dedicated, tainted node pools, one per tenant (1: none)", _int_in(1, 20), 1)]


def _scale_stream(nodes: int | None, pods: int | None, seed: int, params: dict[str, str],
                  meta: dict[str, str]) -> Iterator[Obj]:
    p = _parse_params("scale", _SCALE_PARAMS, params)
    n_nodes = 1000 if nodes is None else nodes
    n_pods = 10 * n_nodes if pods is None else pods
    return scale_items(n_nodes, n_pods, seed, zones=p["zones"], pending=p["pending"], load=p["load"],
                       max_group=p["max-group"], meta=meta, tenants=p["tenants"])


def _scale(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    meta: dict[str, str] = {}
    items = list(_scale_stream(nodes, pods, seed, params, meta))
    return _as_list(items, meta)

# --- registry -----------------------------------------------------------------------------------------------


_GENERATORS: dict[str, tuple[str, Callable[..., Obj]]] = {
    **{name: (f"scheduler_perf {w.upstream}: {w.nodes} nodes, {w.init(w.nodes)} init (bound), {w.pods} measured "
              f"{w.template} pods (param init)",
              partial(_perf, name))
       for name, w in PERF.items()},
    "dcm": ("DCM protocol: 2 CPU/2000Mi nodes with a system pod, heavy-tailed replica groups, "
            "param fraction=F% of groups with hostname anti-affinity (0/50/100), max-group, fill=P% of each "
            "node already used by running pods (±25 points per node)", _dcm),
    "fragmentation": ("trap: small ~1 CPU pods first (spread two per 8-CPU node), then 7-CPU pods that only fit on "
                      "emptier nodes (param large)", _fragmentation),
    "preferred-affinity": ("every pod fits; web replicas prefer separate hosts, api pods prefer a zone with a cache "
                           "pod (queued after them), batch pods prefer hosts without web", _preferred_affinity),
    "spread-zones": ("zone spread (DoNotSchedule) over unequal zones, the smaller ones nearly full (param zones)",
                     _spread_zones),
    "priority-overload": ("3 PriorityClasses, bound low-priority pods, pending demand beyond capacity "
                          "(param overload=%)", _priority_overload),
    "gangs": ("a fragmented cluster and jobs whose workers form gangs of 4-64 pods (PodGroup minCount; params jobs, "
              "zone=1 for one zone per gang, zone=2 for a preferred zone)", _gangs),
    "preemption-pdb": ("a full cluster of low-priority Deployments under PDBs (param budget) and a batch of "
                       "high-priority pods (param demand=% of cluster CPU) that must preempt", _preemption_pdb),
    "fragmented-moves": ("every node 3 of 8 CPU free, pending 4 CPU pods: one move per pod lets it in (params "
                         "preempt=1 pending outranks the movable replicas, budget=PDB disruptions)", _fragmented_moves),
    "openb": ("Alibaba openb GPU cluster (1523 nodes) and a real pod list (params data, pods, share=whole|skip)",
              _openb),
    "vbp": ("Panigrahy vector bin-packing instance: bins as nodes, items as pods (param file)", _vbp),
    "volumes": ("stateful pods on local PVs (WaitForFirstConsumer) and zonal gp3 volumes under CSI attach limits "
                "(params zones, db=%)", _volumes),
    "corners": ("random small states in the plugins' corners (taints of every effect, sidecars, overhead, empty "
                "selectors, missing topology keys, preemption, ...; 100+ nodes on one seed in ten)", corners),
    "scale": ("big production shapes, streamed (50,000 nodes / 500,000 pods): node pools of different sizes over "
              "zones, tainted GPU nodes, DaemonSet pods on every node, Deployments with spread and hostname "
              "anti-affinity, 4 PriorityClasses, PDBs; --pods counts every pod; params pending=fraction|count "
              "(default 0.2), load=% of CPU bound (60), zones (3), max-group (200), tenants=K dedicated tainted node "
              "pools that the teams' Deployments select (1: none)", _scale),
}


def list_workloads() -> dict[str, str]:
    """Workload name → one-line description."""
    return {name: desc for name, (desc, _) in _GENERATORS.items()}


_STREAMING = {"scale": _scale_stream}


def stream(workload: str, *, nodes: int | None = None, pods: int | None = None, seed: int = 0,
           params: dict[str, str] | None = None) -> tuple[Iterator[Obj], dict[str, str]]:
    """The named workload's objects one by one and its List's annotations (complete once the objects are all
    out): without the whole List in memory for the workloads that build it as they go (`scale`)."""
    if workload not in _STREAMING:
        data = generate(workload, nodes=nodes, pods=pods, seed=seed, params=params)
        return iter(data["items"]), data.get("metadata", {}).get("annotations", {})
    _check(workload, nodes, pods)
    meta: dict[str, str] = {}
    return _STREAMING[workload](nodes, pods, seed, dict(params or {}), meta), meta


def _check(workload: str, nodes: int | None, pods: int | None) -> None:
    if workload not in _GENERATORS:
        raise InputError(f"unknown workload {workload!r} (valid: {', '.join(_GENERATORS)})")
    if nodes is not None and nodes < 1:
        raise InputError(f"workload {workload!r}: nodes must be at least 1 (got {nodes})")
    if pods is not None and pods < 0:
        raise InputError(f"workload {workload!r}: pods must be at least 0 (got {pods})")


def generate(workload: str, *, nodes: int | None = None, pods: int | None = None, seed: int = 0,
             params: dict[str, str] | None = None) -> Obj:
    """Build the named workload as a kubectl-style v1 List (deterministic for `seed`)."""
    _check(workload, nodes, pods)
    return _GENERATORS[workload][1](nodes, pods, seed, dict(params or {}))
