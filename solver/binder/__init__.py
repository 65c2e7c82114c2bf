"""Committing a verified plan the way kube-scheduler does, behind one small Protocol (`Binder`: a plan and its
index in, a JSON-able summary of the outcomes out), one implementation per file:

- `manifest.ManifestBinder`: v1 Binding (and Eviction, PV/PVC) objects in commit order, written atomically;
- `api.ApiBinder`: Evictions, then waiting for the victims, then the claims and pods/binding through the API.

The shared pieces: `objects` (the v1 objects, key and uid helpers), `order` (the commit order), `retry` (the
retry policy), `outcomes` (what each call came to), `volumes` (VolumeBinding's PreBind), `summary` (the
summary, its shortfall and its table). `kplace run` (`loop`) and the extender's bind verb (`extender`) commit
through `api` too. Only placements with a node are committed; `solver.schedule.decide` has already verified
the plan.
"""

from __future__ import annotations

from typing import Any, Protocol

from kplace.models.errors import KplaceError
from kplace.models.index import ClusterIndex
from kplace.models.plan import Plan

from .api import ApiBinder
from .kube import new_client
from .manifest import ManifestBinder

# `commit` and `Binder`; the pieces are imported from their modules.
__all__ = ["Binder", "commit"]


class Binder(Protocol):
    """Commits a verified plan and returns a JSON-able summary of what was done."""

    def commit(self, plan: Plan, index: ClusterIndex) -> dict[str, Any]: ...


def commit(plan: Plan, index: ClusterIndex, mode: str, *, out_file: str | None = None, fmt: str = "yaml",
           kubeconfig: str | None = None, context: str | None = None, dry_run: bool = False,
           **api_options: Any) -> dict[str, Any]:
    """Commit `plan` (`mode`: "manifest" or "api") and return a JSON-able summary of the outcomes. A plan with
    moves carries them out first, wave by wave (`rebalance.apply`), and binds nothing unless every wave
    completed."""
    if mode == "manifest":
        if not out_file:
            raise KplaceError("--bind manifest needs an output file")
        return ManifestBinder(out_file, fmt).commit(plan, index)
    if mode == "api":
        if not kubeconfig:
            raise KplaceError("--bind api needs --kubeconfig")
        return _commit_api(plan, index, kubeconfig, context, dry_run, api_options)
    raise ValueError(f"unknown bind mode {mode!r}")


def _commit_api(plan: Plan, index: ClusterIndex, kubeconfig: str, context: str | None, dry_run: bool,
                api_options: dict[str, Any]) -> dict[str, Any]:
    """The plan's moves (if any, and only if all complete), then an `ApiBinder` on a client of its own."""
    moved = None
    if plan.moves:
        if dry_run:
            raise KplaceError("--dry-run cannot simulate moves (their replacements are created by controllers)")
        from ..rebalance.apply import apply_plan

        moved = apply_plan({"moves": [{"pod": m.pod, "from": m.from_node, "to": m.to, "wave": m.wave}
                                      for m in plan.moves], "placements": []}, index, kubeconfig, context,
                           timeout=api_options.get("bind_timeout", 300.0))
        if not moved["completed"]:
            return {"mode": "api", "moves": moved, "outcomes": [],
                    "stopped": f"the moves stopped ({moved['stopped']}): nothing was bound"}
    client = new_client(kubeconfig, context, pool=api_options.get("concurrency", 8))
    try:
        binder: Binder = ApiBinder(client, dry_run=dry_run, **api_options)
        out = binder.commit(plan, index)
    finally:
        client.close()
    if moved is not None:
        out["moves"] = moved
    return out
