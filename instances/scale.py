"""`kplace generate scale`: big production-shaped clusters, streamed (50,000 nodes and 500,000 pods in well under a
minute and a few hundred MB), deterministic for a seed.

Shape:
- node pools of different sizes, each spread evenly over the zones (`zones`, default 3): general (8 CPU / 32Gi,
  55%), compute (16 / 64Gi, 25%), memory (8 / 64Gi, 15%) and gpu (32 / 256Gi and 8 `nvidia.com/gpu`, 5%, tainted
  `nvidia.com/gpu=present:NoSchedule`), labelled with hostname, zone, region, instance type and pool;
- DaemonSet pods on every node (kube-proxy and node-exporter, the device plugin on GPU nodes), bound, pinned by
  node affinity on the node's name as the DaemonSet controller does, tolerating every taint;
- Deployments (ReplicaSets) in 20 team namespaces, heavy-tailed replica counts (Pareto α = 1.1, capped at
  `max-group`, default 200): web (hostname anti-affinity required, zone spread ScheduleAnyway), service (zone
  spread DoNotSchedule, hostname spread ScheduleAnyway), worker (no constraint), batch (the lowest priority) and
  gpu (GPU requests, the taint tolerated, the gpu pool selected);
- four PriorityClasses (platform-critical for DaemonSets, prod-high, prod (the global default), batch-low) and a
  PDB (maxUnavailable 1) per web Deployment of at least 20 replicas;
- `--pods` counts every pod, DaemonSet pods included; the newest `pending` of the Deployments' pods (a fraction in
  [0, 1) or a count; default 0.2) are pending (scale-ups of running Deployments and new ones), the others are bound,
  their requests scaled as they go so that they fill about `load`% (default 60) of the CPU off the gpu pool
  (DaemonSets included; GPU pods ask a fixed 2 CPU and 16Gi per GPU), each node up to its own level
  drawn within ±20 points of it, consistently with capacity, taints and anti-affinity (zone by zone, round robin);
- `tenants` K > 1 (default 1: none): a multi-tenant cluster of K dedicated node pools. Every node belongs to one
  tenant (each pool's nodes dealt round robin, a zone's worth at a time, so every tenant has nodes of every pool it
  is big enough for, in every zone), labelled `kplace.io/tenant=tenant-k` and tainted with it (NoSchedule); team
  namespace k belongs to tenant k mod K, and its Deployments select their tenant's nodes and tolerate its taint
  (a tenant without GPU nodes runs no gpu Deployment). No pod can share a node with another tenant's, so a window
  is K independent models at least (`solver.executors` solves them side by side).

A bound pod that finds no room within a few nodes of its zone's cursor stays pending (the `kplace.io/overflow`
annotation counts them). The List's metadata comes after its items, so that its counts are the written ones.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

Obj = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
POOL = "node.kubernetes.io/pool"
INSTANCE = "node.kubernetes.io/instance-type"
GPU = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
TENANT = "kplace.io/tenant"

# name, instance type, cpu, memory Gi, pod limit, gpus, share of the nodes
POOLS = [("general", "m-8x32", 8, 32, 110, 0, 55), ("compute", "c-16x64", 16, 64, 110, 0, 25),
         ("memory", "r-8x64", 8, 64, 110, 0, 15), ("gpu", "g-32x256-8gpu", 32, 256, 110, 8, 5)]
# name, namespace, cpu m, memory Mi, only on the gpu pool
DAEMONSETS = [("kube-proxy", "kube-system", 100, 128, False), ("node-exporter", "monitoring", 50, 64, False),
              ("nvidia-device-plugin", "kube-system", 50, 64, True)]
PRIORITIES = [("platform-critical", 1000000, "DaemonSets"), ("prod-high", 10000, "customer-facing services"),
              ("prod", 1000, "everything else (global default)"), ("batch-low", 100, "batch work, first to go")]
KINDS = [("web", 35), ("service", 30), ("worker", 25), ("batch", 7), ("gpu", 3)]
CPU_M = [(100, 20), (250, 25), (500, 25), (1000, 20), (2000, 8), (4000, 2)]  # millicores, weight
MEM_PER_CPU_MI = [(1024, 20), (2048, 40), (4096, 30), (8192, 10)]  # Mi per CPU, weight
GPUS = [(1, 60), (2, 20), (4, 12), (8, 8)]
TEAMS = 20
PDB_MIN = 20
_MEAN_CPU = sum(v * w for v, w in CPU_M) / sum(w for _, w in CPU_M)


def _ts(t: int) -> str:
    return f"2024-06-{1 + t // 86400 % 28:02d}T{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}Z"


def _draw(rng: random.Random, table: list[tuple[int, int]]) -> int:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table])[0]


def _pool_sizes(n_nodes: int) -> list[int]:
    """Nodes per pool: the shares rounded, the remainder to general, at least one GPU node from 20 nodes up."""
    sizes = [n_nodes * share // 100 for *_, share in POOLS]
    if n_nodes >= 20 and sizes[3] == 0:
        sizes[3] = 1
    sizes[0] += n_nodes - sum(sizes)
    return sizes


def _pending_count(spec: float, n_app: int) -> int:
    if spec < 1:
        return round(spec * n_app)
    return min(int(spec), n_app)


def _pod(name: str, ns: str, labels: dict[str, str], req: dict[str, str], created: int, spec: Obj, priority: str,
         node: str | None, owner: tuple[str, str] | None) -> Obj:
    meta: Obj = {"name": name, "namespace": ns, "creationTimestamp": _ts(created), "labels": labels}
    body: Obj = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": req}}], "priorityClassName": priority, **spec}
    pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": "Pending"}}
    if node is not None:
        body["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": _ts(created)}
    if owner is not None and node is not None:
        kind, owner_name = owner
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": owner_name,
                                    "uid": f"uid-{kind.lower()}-{ns}-{owner_name}", "controller": True}]
    return pod


class _Cluster:
    """Free capacity per node (cpu m, memory Mi, pods, gpus, under each node's fill level) and a round-robin cursor
    per (pool, zone): where the next bound pod goes."""

    def __init__(self, rng: random.Random, n_nodes: int, zones: list[str], load: int, tenants: int = 1) -> None:
        self.names: list[str] = []
        self.tenant_of: list[int] = []
        self.pool_of: list[int] = []
        self.zone_of: list[int] = []
        self.cpu: list[int] = []
        self.mem: list[int] = []
        self.pods: list[int] = []
        self.gpu: list[int] = []
        self.cap_cpu: list[int] = []  # the node's fill level in cpu m: bound app pods stop there
        self.lists: dict[tuple[int, int], list[int]] = {}
        self.cursor: dict[tuple[int, int], int] = {}
        for p, size in enumerate(_pool_sizes(n_nodes)):
            for j in range(size):
                i = len(self.names)
                z = j % len(zones)
                self.names.append(f"{POOLS[p][0]}-{zones[z].removeprefix('zone-')}-{j:05d}")
                t = j // len(zones) % tenants
                self.pool_of.append(p)
                self.zone_of.append(z)
                self.tenant_of.append(t)
                _, _, cpu, mem, pods, gpus, _ = POOLS[p]
                self.cpu.append(cpu * 1000)
                self.mem.append(mem * 1024)
                self.pods.append(pods)
                self.gpu.append(gpus)
                level = min(100.0, max(0.0, load + rng.uniform(-20, 20))) / 100
                self.cap_cpu.append(int(cpu * 1000 * (1 - level)))  # free cpu kept back
                self.lists.setdefault((p, z, t), []).append(i)
        self.cursor = dict.fromkeys(self.lists, 0)

    def take(self, i: int, cpu: int, mem: int, gpu: int) -> None:
        self.cpu[i] -= cpu
        self.mem[i] -= mem
        self.pods[i] -= 1
        self.gpu[i] -= gpu

    def place(self, pools: list[int], zone: int, n_zones: int, cpu: int, mem: int, gpu: int,
              avoid: set[int] | None, tries: int = 24, tenant: int = 0) -> int | None:
        """The next node of `tenant` (round robin from the cursor of each (pool, zone), `zone` first) with room under
        its fill level and not in `avoid`, else with room at all; None after `tries` nodes of each, twice."""
        for level in (True, False):
            found = self._place(pools, zone, n_zones, cpu, mem, gpu, avoid, tries, level, tenant)
            if found is not None:
                return found
        return None

    def _place(self, pools: list[int], zone: int, n_zones: int, cpu: int, mem: int, gpu: int,
               avoid: set[int] | None, tries: int, level: bool, tenant: int) -> int | None:
        for dz in range(n_zones):
            z = (zone + dz) % n_zones
            for p in pools:
                key = (p, z, tenant)
                nodes = self.lists.get(key)
                if not nodes:
                    continue
                start = self.cursor[key]
                for k in range(min(tries, len(nodes))):
                    i = nodes[(start + k) % len(nodes)]
                    floor = self.cap_cpu[i] if level else 0
                    if (self.cpu[i] - cpu >= floor and self.mem[i] >= mem and self.pods[i] >= 1
                            and self.gpu[i] >= gpu and (avoid is None or i not in avoid)):
                        self.cursor[key] = (start + k + 1) % len(nodes)
                        self.take(i, cpu, mem, gpu)
                        return i
        return None


def _tenant_taint(tenant: int) -> Obj:
    return {"key": TENANT, "value": f"tenant-{tenant}", "effect": "NoSchedule"}


def _spread(key: str, app: str, hard: bool) -> Obj:
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": app}}}


def _group_spec(kind: str, app: str) -> Obj:
    if kind == "web":
        return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}]}},
            "topologySpreadConstraints": [_spread(ZONE, app, False)]}
    if kind == "service":
        return {"topologySpreadConstraints": [_spread(ZONE, app, True), _spread(HOSTNAME, app, False)]}
    if kind == "gpu":
        return {"nodeSelector": {POOL: "gpu"}, "tolerations": [{"key": GPU, "operator": "Exists",
                                                               "effect": "NoSchedule"}]}
    return {}


def scale_items(n_nodes: int, n_pods: int, seed: int, zones: int = 3, pending: float = 0.2, load: int = 60,
                max_group: int = 200, meta: dict[str, str] | None = None, tenants: int = 1) -> Iterator[Obj]:
    """The state's objects one by one (namespaces, classes, nodes, DaemonSet pods, Deployment pods, PDBs); `meta`
    receives the List's annotations once the last is out."""
    rng = random.Random(f"scale-{seed}")
    zone_names = [f"zone-{chr(ord('a') + k)}" for k in range(zones)]
    cluster = _Cluster(random.Random(f"scale-fill-{seed}"), n_nodes, zone_names, load, tenants)
    for ns in ["kube-system", "monitoring", *(f"team-{k:02d}" for k in range(TEAMS))]:
        yield {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    for name, value, desc in PRIORITIES:
        pc: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                   "value": value, "description": desc}
        if name == "prod":
            pc["globalDefault"] = True
        yield pc
    for i, name in enumerate(cluster.names):
        p = cluster.pool_of[i]
        pool, itype, cpu, mem, pods, gpus, _ = POOLS[p]
        cap = {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": str(pods), "ephemeral-storage": "100Gi"}
        if gpus:
            cap[GPU] = str(gpus)
        labels = {HOSTNAME: name, ZONE: zone_names[cluster.zone_of[i]], REGION: "region-1", INSTANCE: itype,
                  POOL: pool, "kubernetes.io/os": "linux"}
        node: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": {},
                     "status": {"capacity": cap, "allocatable": cap,
                                "conditions": [{"type": "Ready", "status": "True"}]}}
        if gpus:
            node["spec"]["taints"] = [GPU_TAINT]
        if tenants > 1:
            labels[TENANT] = f"tenant-{cluster.tenant_of[i]}"
            node["spec"]["taints"] = [*node["spec"].get("taints", []), _tenant_taint(cluster.tenant_of[i])]
        yield node
    t = 0
    ds_pods = 0
    every = [{"operator": "Exists"}]
    for i, name in enumerate(cluster.names):
        for ds, ns, cpu, mem, gpu_only in DAEMONSETS:
            if gpu_only and not cluster.gpu[i]:
                continue
            spec = {"tolerations": every, "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}}}}
            cluster.take(i, cpu, mem, 0)
            yield _pod(f"{ds}-{name}", ns, {"app": ds}, {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}, t, spec,
                       "platform-critical", name, ("DaemonSet", ds))
            ds_pods += 1
        t += 1
    n_app = max(0, n_pods - ds_pods)
    n_pending = _pending_count(pending, n_app)
    n_bound = n_app - n_pending
    app_cpu = sum(POOLS[p][2] * 1000 * s for p, s in enumerate(_pool_sizes(n_nodes)) if not POOLS[p][5])
    n_general = sum(s for p, s in enumerate(_pool_sizes(n_nodes)) if not POOLS[p][5])
    # the CPU off the gpu pool that bound pods fill, DaemonSets included
    target = app_cpu * load / 100 - n_general * sum(d[2] for d in DAEMONSETS if not d[4])
    asked = 0  # cpu m the bound Deployment pods so far ask (off the gpu pool)
    base = 1.0 if n_bound == 0 else min(8.0, max(0.1, target / n_bound / _MEAN_CPU))
    factor = base
    general = [p for p, pool in enumerate(POOLS) if not pool[5]]
    gpu_pools = [p for p, pool in enumerate(POOLS) if pool[5]]
    written = bound = overflow = groups = pdbs = 0
    pdb_list: list[Obj] = []
    gpu_nodes = Counter(t for t, g in zip(cluster.tenant_of, cluster.gpu, strict=True) if g)
    tenant_nodes = Counter(cluster.tenant_of)
    while written < n_app:
        kind = rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]
        size = min(max_group, int(2 * rng.paretovariate(1.1)), n_app - written)
        team = rng.randrange(TEAMS)
        tenant = team % tenants
        if kind == "gpu" and not gpu_nodes[tenant]:
            kind = "worker"
        if kind == "web":
            size = min(size, tenant_nodes[tenant])
        app = f"{kind}-{groups:06d}"
        ns = f"team-{team:02d}"
        groups += 1
        # requests scaled so that the bound pods' CPU heads for the target (within half to twice the mean scale);
        # pending pods ask what bound ones do on average
        factor = base
        if written < n_bound:
            left = (target - asked) / max(1, n_bound - written) / _MEAN_CPU
            factor = min(2 * base, max(base / 2, left))
        cpu = max(10, round(_draw(rng, CPU_M) * factor / 10) * 10)
        mem = max(16, round(cpu * _draw(rng, MEM_PER_CPU_MI) / 1000))
        gpu = _draw(rng, GPUS) if kind == "gpu" else 0
        if gpu:
            cpu, mem = 4000 * gpu // 2, 32768 * gpu // 2
        req = {"cpu": f"{cpu}m", "memory": f"{mem}Mi", **({GPU: str(gpu)} if gpu else {})}
        priority = {"web": "prod-high", "service": "prod", "worker": "prod", "batch": "batch-low",
                    "gpu": "prod-high"}[kind]
        spec = _group_spec(kind, app)
        if tenants > 1:
            spec["nodeSelector"] = {**spec.get("nodeSelector", {}), TENANT: f"tenant-{tenant}"}
            spec["tolerations"] = [*spec.get("tolerations", []), {"key": TENANT, "operator": "Equal",
                                                                   "value": f"tenant-{tenant}", "effect": "NoSchedule"}]
        labels = {"app": app, "tier": kind}
        owner = ("ReplicaSet", f"{app}-{rng.randrange(16**8):08x}")
        pools = gpu_pools if gpu else general
        avoid: set[int] | None = set() if kind == "web" else None
        zone = rng.randrange(zones)
        running = 0
        for r in range(size):
            node = None
            if written < n_bound:
                asked += cpu if not gpu else 0
                z = (zone + r) % zones if kind in ("web", "service") else rng.randrange(zones)
                shuffled = pools if len(pools) == 1 else rng.sample(pools, len(pools))
                i = cluster.place(shuffled, z, zones, cpu, mem, gpu, avoid, tenant=tenant)
                if i is None:
                    overflow += 1
                else:
                    node = cluster.names[i]
                    running += 1
                    if avoid is not None:
                        avoid.add(i)
            yield _pod(f"{app}-{r:04d}", ns, labels, req, t, spec, priority, node, owner)
            written += 1
            t += 1
        bound += running
        if kind == "web" and size >= PDB_MIN:
            pdbs += 1
            pdb_list.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                             "metadata": {"name": app, "namespace": ns},
                             "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": 1},
                             "status": {"currentHealthy": running, "desiredHealthy": max(0, running - 1),
                                        "expectedPods": running, "disruptionsAllowed": min(1, running)}})
    yield from pdb_list
    if meta is not None:
        meta.update({"kplace.io/generator": "scale", "kplace.io/seed": str(seed), "kplace.io/nodes": str(n_nodes),
                     "kplace.io/pods": str(ds_pods + written), "kplace.io/daemonset-pods": str(ds_pods),
                     "kplace.io/bound": str(ds_pods + bound), "kplace.io/pending": str(written - bound),
                     "kplace.io/overflow": str(overflow), "kplace.io/deployments": str(groups),
                     "kplace.io/pdbs": str(pdbs), "kplace.io/load": str(load),
                     "kplace.io/request-scale": f"{base:.3f}"})
        if tenants > 1:
            meta["kplace.io/tenants"] = str(tenants)
