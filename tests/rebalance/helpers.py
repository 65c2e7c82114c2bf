"""Builders for rebalancing tests: pods owned by a ReplicaSet (movable by default), PDBs, states."""

from __future__ import annotations

from typing import Any

from kplace.models.index import ClusterIndex
from kplace.solver.framework.config import default_config
from kplace.solver.rebalance import Policy, RebalanceOptions, plan_rebalance
from kplace.solver.testing import build_snapshot, node, pod

__all__ = ["apply_plan", "build_index", "node", "owned", "pdb", "pod", "run"]


def owned(name: str, owner: str = "web", *, kind: str = "ReplicaSet", annotations: dict | None = None,
          **kw: Any) -> dict[str, Any]:
    """A pod controlled by `kind/owner` (labels app=owner unless given)."""
    kw.setdefault("labels", {"app": owner})
    p = pod(name, **kw)
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": owner,
                                         "uid": f"uid-{owner}", "controller": True}]
    if annotations:
        p["metadata"]["annotations"] = annotations
    return p


def pdb(name: str, app: str, *, max_unavailable: int | None = None, min_available: int | None = None,
        namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": app}}}
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def build_index(*objects) -> ClusterIndex:
    return ClusterIndex(build_snapshot(*objects))


def run(objects, policy: Policy | None = None, **opts) -> dict[str, Any]:
    opts.setdefault("time_limit", 10)
    opts.setdefault("workers", 1)
    return plan_rebalance(build_index(*objects), default_config(), policy or Policy(), RebalanceOptions(**opts))


def apply_plan(objects: list[dict[str, Any]], plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects with every move and placement of `plan` applied (pods rebound to their new nodes)."""
    where = {m["pod"]: m["to"] for m in plan["moves"]}
    where.update({p["pod"]: p["node"] for p in plan["placements"] if p["node"]})
    out = []
    for o in objects:
        if o.get("kind") == "Pod":
            key = f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}"
            if key in where:
                o = {**o, "spec": {**o["spec"], "nodeName": where[key]}, "status": {"phase": "Running"}}
        out.append(o)
    return out
