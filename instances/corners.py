"""Random small states that push kube-scheduler's plugins into their corners, for differential tests against the
real scheduler (`oracle/`) and for anyone who wants awkward inputs: empty and absent selectors, nodes missing
topology keys, taints of every effect, init containers and restartable sidecars, pod overhead, zero and
extended-resource requests, many equal scores, host ports, node-affinity operators, pod (anti-)affinity across
namespaces, topology spread with minDomains and node policies, unschedulable nodes, images, priorities with
bound lower-priority pods and PDBs (preemption), scheduling gates; some states have 100+ nodes (sampling).
"""

from __future__ import annotations

import random
from typing import Any

Obj = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
GPU = "example.com/gpu"
APPS = ("a", "b", "c")
NAMESPACES = ("default", "team-x")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
IMAGES = ("registry.k8s.io/pause:3.10", "nginx:1.27", "redis:7", "busybox")


def _ts(t: int) -> str:
    return f"2024-06-01T{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}Z"


def _node(rng: random.Random, i: int, zones: list[str], big: bool) -> Obj:
    name = f"node-{i:03d}"
    labels = {HOSTNAME: name, "disk": rng.choice(["ssd", "hdd"]), "rank": str(rng.randint(0, 9))}
    if rng.random() < 0.85:  # some nodes miss the zone (and region) label
        labels[ZONE] = rng.choice(zones)
        labels[REGION] = "r1"
    cpu = rng.choice(["2", "4", "4", "8"] if not big else ["4"])
    mem = rng.choice(["4Gi", "8Gi", "16Gi"] if not big else ["8Gi"])
    cap = {"cpu": cpu, "memory": mem, "pods": str(rng.choice([4, 8, 16, 110])), "ephemeral-storage": "50Gi"}
    if rng.random() < 0.25:
        cap[GPU] = str(rng.choice([1, 2, 4]))
    node: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                 "spec": {}, "status": {"capacity": dict(cap), "allocatable": dict(cap),
                                        "conditions": [{"type": "Ready", "status": "True"}]}}
    if rng.random() < 0.3:
        node["spec"]["taints"] = [{"key": rng.choice(["dedicated", "gpu", "spot"]), "value": rng.choice(["x", "y"]),
                                   "effect": rng.choice(EFFECTS)} for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.05:
        node["spec"]["unschedulable"] = True
    if rng.random() < 0.4:
        node["status"]["images"] = [{"names": [img], "sizeBytes": rng.choice([5, 50, 400, 900]) * 2**20}
                                    for img in rng.sample(IMAGES, rng.randint(1, 3))]
    return node


def _requests(rng: random.Random) -> Obj:
    shape = rng.random()
    if shape < 0.15:
        return {}  # no requests: scoring counts kube's non-zero defaults
    if shape < 0.25:
        return {"cpu": "0", "memory": "0"}
    req = {"cpu": rng.choice(["100m", "250m", "500m", "1", "1500m"]),
           "memory": rng.choice(["64Mi", "256Mi", "1Gi", "3Gi"])}
    if rng.random() < 0.3:
        del req[rng.choice(["cpu", "memory"])]
    if rng.random() < 0.1:
        req[GPU] = "1"
    return req


def _selector(rng: random.Random) -> Obj | None:
    r = rng.random()
    if r < 0.1:
        return {}  # the empty selector: matches every pod (in affinity terms)
    if r < 0.2:
        return {"matchExpressions": [{"key": "app", "operator": rng.choice(["Exists", "DoesNotExist"])}]}
    if r < 0.3:
        return {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [rng.choice(APPS)]}]}
    return {"matchLabels": {"app": rng.choice(APPS)}}


def _term(rng: random.Random, key: str) -> Obj:
    term: Obj = {"topologyKey": key}
    sel = _selector(rng)
    if sel is not None:
        term["labelSelector"] = sel
    r = rng.random()
    if r < 0.15:
        term["namespaces"] = [rng.choice(NAMESPACES)]
    elif r < 0.25:
        term["namespaceSelector"] = {}  # every namespace
    return term


def _node_affinity(rng: random.Random, zones: list[str]) -> Obj:
    op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    key = {"Gt": "rank", "Lt": "rank"}.get(op, rng.choice([ZONE, "disk"]))
    expr: Obj = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = rng.sample(zones if key == ZONE else ["ssd", "hdd"], 1)
    elif op in ("Gt", "Lt"):
        expr["values"] = [str(rng.randint(1, 8))]
    out: Obj = {}
    if rng.random() < 0.5:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
    else:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [expr]}}]
    return out


def _spread(rng: random.Random, app: str) -> Obj:
    c: Obj = {"maxSkew": rng.randint(1, 3), "topologyKey": rng.choice([ZONE, ZONE, HOSTNAME]),
              "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
              "labelSelector": {"matchLabels": {"app": app}}}
    if c["whenUnsatisfiable"] == "DoNotSchedule" and rng.random() < 0.3:
        c["minDomains"] = rng.randint(1, 4)
    if rng.random() < 0.2:
        c["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
    if rng.random() < 0.2:
        c["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
    if rng.random() < 0.15:
        c["matchLabelKeys"] = ["pod-template-hash"]
    return c


def _pod_spec(rng: random.Random, app: str, zones: list[str], pending: bool) -> Obj:
    containers = [{"name": "main", "image": rng.choice(IMAGES), "resources": {"requests": _requests(rng)}}]
    if rng.random() < 0.15:
        containers.append({"name": "side", "image": "busybox", "resources": {"requests": _requests(rng)}})
    spec: Obj = {"containers": containers}
    r = rng.random()
    if r < 0.1:
        spec["initContainers"] = [{"name": "init", "image": "busybox", "resources": {"requests": _requests(rng)}}]
    elif r < 0.2:  # a restartable sidecar: its requests add to the containers'
        spec["initContainers"] = [{"name": "sidecar", "image": "busybox", "restartPolicy": "Always",
                                   "resources": {"requests": _requests(rng)}}]
    if rng.random() < 0.1:
        spec["overhead"] = {"cpu": "100m", "memory": "64Mi"}
    if rng.random() < 0.35:
        tol: Obj = {"key": rng.choice(["dedicated", "gpu", "spot"]), "operator": rng.choice(["Exists", "Equal"]),
                    "effect": rng.choice([*EFFECTS, ""])}
        if tol["operator"] == "Equal":
            tol["value"] = rng.choice(["x", "y"])
        spec["tolerations"] = [tol]
        if rng.random() < 0.1:
            spec["tolerations"] = [{"operator": "Exists"}]  # tolerates everything
    if not pending:
        return spec
    if rng.random() < 0.15:
        spec["nodeSelector"] = {"disk": rng.choice(["ssd", "hdd"])}
    aff: Obj = {}
    if rng.random() < 0.25:
        aff["nodeAffinity"] = _node_affinity(rng, zones)
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < 0.2:
            key = rng.choice([ZONE, HOSTNAME, "example.com/missing"])
            if rng.random() < 0.5:
                aff[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(rng, key)]}
            else:
                aff[kind] = {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng, key)}]}
    if aff:
        spec["affinity"] = aff
    if rng.random() < 0.25:
        spec["topologySpreadConstraints"] = [_spread(rng, app)]
    if rng.random() < 0.1:
        containers[0]["ports"] = [{"containerPort": 80, "hostPort": rng.choice([80, 8080])}]
    if rng.random() < 0.1:
        spec["preemptionPolicy"] = "Never"
    return spec


def corners(nodes: int | None, pods: int | None, seed: int, params: dict[str, str]) -> Obj:
    """One random corner-case state (a v1 List), deterministic for `seed`: `nodes`/`pods` fix the sizes (default
    2–12 nodes, or 100–250 on one seed in ten, and 1–20 pending pods)."""
    rng = random.Random(seed)
    big = nodes is None and rng.random() < 0.1
    n_nodes = nodes or (rng.randint(100, 250) if big else rng.randint(2, 12))
    n_pending = pods if pods is not None else rng.randint(1, 20)
    zones = [f"zone-{c}" for c in "abc"[: rng.randint(1, 3)]]
    items: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": ns}}}
                        for ns in NAMESPACES]
    levels = rng.choice([[0], [0, 1000], [0, 100, 1000]])
    for v in levels:
        items.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{v}"},
                      "value": v})
    nodes_ = [_node(rng, i, zones, big) for i in range(n_nodes)]
    items += nodes_
    t = 0
    for i in range(rng.randint(0, 2 * n_nodes if not big else n_nodes)):  # bound pods, lower priorities
        app = rng.choice(APPS)
        node = rng.choice(nodes_)["metadata"]["name"]
        t += 1
        items.append(_pod(rng, f"run-{i:03d}", app, node, min(levels), t, zones))
    if rng.random() < 0.3:
        items.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                      "metadata": {"name": "pdb", "namespace": "default"},
                      "spec": {"selector": {"matchLabels": {"app": rng.choice(APPS)}},
                               "maxUnavailable": rng.randint(0, 1)},
                      "status": {"disruptionsAllowed": rng.randint(0, 1)}})
    for i in range(n_pending):
        t += rng.choice([0, 1, 1, 2])  # equal creation times happen: the file's order breaks them
        items.append(_pod(rng, f"pod-{i:03d}", rng.choice(APPS), None, rng.choice(levels), t, zones))
    return {"apiVersion": "v1", "kind": "List",
            "metadata": {"resourceVersion": "", "annotations": {"kplace.io/generator": "corners",
                                                                 "kplace.io/seed": str(seed)}},
            "items": items}


def _pod(rng: random.Random, name: str, app: str, node: str | None, priority: int, t: int, zones: list[str]) -> Obj:
    ns = NAMESPACES[0] if rng.random() < 0.8 else NAMESPACES[1]
    labels = {"app": app, "pod-template-hash": rng.choice(["h1", "h2"])}
    if rng.random() < 0.1:
        labels = {}
    spec = _pod_spec(rng, app, zones, node is None)
    spec["priorityClassName"] = f"p{priority}"
    spec["priority"] = priority
    pod: Obj = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns, "labels": labels, "creationTimestamp": _ts(t),
                             "uid": f"uid-{ns}-{name}"},
                "spec": spec, "status": {"phase": "Pending"}}
    if node is not None:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": _ts(t)}
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-rs",
                                               "uid": f"uid-rs-{app}", "controller": True}]
    elif rng.random() < 0.05:
        pod["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    return pod
