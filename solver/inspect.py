"""`kplace inspect`: a summary of cluster state that people can act on."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kplace.models.index import REGION_LABELS, ZONE_LABELS, ClusterIndex, first_label

POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "node.kubernetes.io/pool",
    "node-pool",
    "pool",
)
INSTANCE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


UNITS = {"cpu": "cores", "memory": "GiB", "ephemeral-storage": "GiB"}


def in_unit(resource: str, amount: int) -> str:
    """One unit per resource, whatever the amount: cores for cpu, GiB for memory and storage, counts otherwise."""
    if resource == "cpu":
        return f"{amount / 1000:,.3f}".rstrip("0").rstrip(".")
    if resource in ("memory", "ephemeral-storage"):
        return f"{amount / 2**30:,.2f}".rstrip("0").rstrip(".")
    return f"{amount:,}"


def shape_label(instance_type: str | None, shape: tuple, pods: int) -> str:
    """`n2-standard-4: cpu 4 cores, memory 16 GiB, pods 110`: every figure named, with its unit."""
    parts = [f"{r} {in_unit(r, v)}{' ' + UNITS[r] if r in UNITS else ''}" for r, v in shape]
    return (f"{instance_type}: " if instance_type else "") + ", ".join([*parts, f"pods {pods}"])


def summarize(index: ClusterIndex) -> dict[str, Any]:
    """Everything `inspect` shows, as plain data (the JSON output is exactly this)."""
    snap = index.snapshot
    shapes: Counter[tuple] = Counter()
    zones: Counter[str] = Counter()
    pools: Counter[str] = Counter()
    taints: Counter[str] = Counter()
    for i, node in enumerate(index.nodes):
        labels = index.node_labels[i]
        shape = tuple((r, int(index.alloc[i, index.rid[r]])) for r in index.resources
                      if index.alloc[i, index.rid[r]] > 0 and r != "ephemeral-storage")
        shapes[(first_label(labels, INSTANCE_LABELS), shape, int(index.max_pods[i]))] += 1
        region, zone = first_label(labels, REGION_LABELS), first_label(labels, ZONE_LABELS)
        zones[f"{region}/{zone}" if region else (zone or "<none>")] += 1
        pools[first_label(labels, POOL_LABELS) or "<none>"] += 1
        for t in node.spec.taints:
            taints[f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"] += 1
        if node.spec.unschedulable:
            taints["(cordoned) spec.unschedulable"] += 1

    per_ns: dict[str, dict[str, int]] = {}
    per_prio: dict[int, dict[str, int]] = {}
    for pi in index.pods:
        state = "bound" if pi.node >= 0 else ("pending" if pi.pending else "other")
        if state == "other":
            continue
        per_ns.setdefault(pi.namespace, {"bound": 0, "pending": 0})[state] += 1
        per_prio.setdefault(pi.priority, {"bound": 0, "pending": 0})[state] += 1

    pending_req = index.pod_req[[pi.idx for pi in index.pending]].sum(axis=0) if index.pending else None
    resources = []
    for r in [*index.resources, "pods"]:
        if r == "pods":
            alloc, req = int(index.max_pods.sum()), int(index.pod_count.sum())
            pend = len(index.pending)
        else:
            j = index.rid[r]
            alloc, req = int(index.alloc[:, j].sum()), int(index.requested[:, j].sum())
            pend = int(pending_req[j]) if pending_req is not None else 0
        if alloc == 0 and req == 0 and pend == 0:
            continue
        resources.append({
            "resource": r,
            "allocatable": alloc,
            "requested": req,
            "pending": pend,
            "requested_ratio": round(req / alloc, 4) if alloc else None,
            "unit": UNITS.get(r, "count"),
            "display": {k: in_unit(r, v) for k, v in (("allocatable", alloc), ("requested", req), ("pending", pend))},
        })

    pdbs = []
    for pdb in snap.pdbs:
        spec = pdb.spec
        pdbs.append({
            "pdb": f"{pdb.metadata.namespace}/{pdb.metadata.name}",
            "minAvailable": spec.min_available,
            "maxUnavailable": spec.max_unavailable,
            "disruptionsAllowed": snap.pdb_disruptions_allowed(pdb),
            "fromStatus": pdb.status is not None and bool(pdb.status.expected_pods or pdb.status.disruptions_allowed),
        })

    return {
        "nodes": {
            "total": len(index.nodes),
            "schedulable": int((~index.unschedulable).sum()),
            "by_shape": [{"instance_type": inst, "allocatable": {**dict(shape), "pods": pods_max}, "nodes": n,
                          "label": shape_label(inst, shape, pods_max)}
                         for (inst, shape, pods_max), n in shapes.most_common()],
            "by_zone": dict(sorted(zones.items())),
            "by_pool": dict(sorted(pools.items())),
            "taints": dict(taints.most_common()),
        },
        "pods": {
            "bound": sum(v["bound"] for v in per_ns.values()),
            "pending": sum(v["pending"] for v in per_ns.values()),
            "by_namespace": dict(sorted(per_ns.items())),
            "by_priority": {str(k): v for k, v in sorted(per_prio.items(), reverse=True)},
        },
        "resources": resources,
        "pdbs": pdbs,
        "warnings": list(snap.warnings),
    }


def render_summary(summary: dict[str, Any]) -> None:
    """Print the summary as rich tables."""
    from kplace.solver.output import console as make_console
    from rich.table import Table

    console = make_console()
    nodes, pods = summary["nodes"], summary["pods"]
    console.print(f"[bold]{nodes['total']} nodes[/] ({nodes['schedulable']} schedulable), "
                  f"[bold]{pods['bound']} pods bound[/], [bold]{pods['pending']} pending[/]")

    def counts(title: str, data: dict[str, int], col: str) -> None:
        if not data:
            return
        t = Table(title=title, title_justify="left")
        t.add_column(col, overflow="fold")
        t.add_column("nodes", justify="right")
        for k, v in data.items():
            t.add_row(k, str(v))
        console.print(t)

    counts("Nodes by shape (allocatable)", {sh["label"]: sh["nodes"] for sh in nodes["by_shape"]}, "shape")
    counts("Nodes by zone", nodes["by_zone"], "region/zone")
    counts("Nodes by pool", nodes["by_pool"], "pool")
    counts("Node taints", nodes["taints"], "taint")

    t = Table(title="Allocatable vs requested", title_justify="left")
    for c in ("resource", "unit", "allocatable", "requested (bound)", "ratio", "pending requests"):
        t.add_column(c, justify="left" if c in ("resource", "unit") else "right")
    for r in summary["resources"]:
        d = r["display"]
        ratio = f"{r['requested_ratio']:.1%}" if r["requested_ratio"] is not None else "-"
        t.add_row(r["resource"], r["unit"], d["allocatable"], d["requested"], ratio, d["pending"])
    console.print(t)

    for title, key, col in (("Pods by namespace", "by_namespace", "namespace"),
                            ("Pods by priority", "by_priority", "priority")):
        t = Table(title=title, title_justify="left")
        t.add_column(col, overflow="fold")
        t.add_column("bound", justify="right")
        t.add_column("pending", justify="right")
        for k, v in pods[key].items():
            t.add_row(k, str(v["bound"]), str(v["pending"]))
        console.print(t)

    if summary["pdbs"]:
        t = Table(title="PodDisruptionBudgets", title_justify="left")
        for c in ("pdb", "minAvailable", "maxUnavailable", "disruptionsAllowed"):
            t.add_column(c, overflow="fold")
        for p in summary["pdbs"]:
            da = str(p["disruptionsAllowed"]) + ("" if p["fromStatus"] else " (computed)")
            def show(v: object) -> str:
                return "-" if v is None else str(v)

            t.add_row(p["pdb"], show(p["minAvailable"]), show(p["maxUnavailable"]), da)
        console.print(t)
    for w in summary["warnings"]:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
