"""The manifest binder: the plan as Kubernetes objects in commit order, written atomically for `kubectl`.

v1 `Binding` objects in queue (plan) order, YAML (multi-document) or JSON (a v1 List). Evictions the plan needs
come as `policy/v1` `Eviction` objects just before the Binding of the pod that needs them (the preemptor). The
claims a placement binds (`Placement.volume_bindings`) come just before its Binding too, as partial objects
for `kubectl apply -f` (merged into the live objects): a `PersistentVolume` carrying only `spec.claimRef`
(namespace, name, uid), or, for a claim provisioned on the node, a `PersistentVolumeClaim` carrying only the
`volume.kubernetes.io/selected-node` annotation. A plan with moves is refused: the replacements' names are
known only once their controllers create them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from kplace.models.errors import KplaceError
from kplace.models.index import ClusterIndex
from kplace.models.plan import Plan

from .objects import binding_object, claim_uid, eviction_object, pod_uid, split_key, volume_object
from .order import commit_order


def manifest_objects(plan: Plan, index: ClusterIndex) -> list[dict[str, Any]]:
    """The plan as Kubernetes objects, in commit order."""
    out = []
    for step, item in commit_order(plan):
        ns, name = split_key(item[0].pod if step == "volume" else item.pod)
        if step == "evict":
            out.append(eviction_object(ns, name, pod_uid(index, item.pod)))
        elif step == "volume":
            p, claim, what = item
            out.append(volume_object(claim, what, p.node, claim_uid(index, claim)))
        else:
            out.append(binding_object(ns, name, pod_uid(index, item.pod), item.node))
    return out


def render_manifest(objects: list[dict[str, Any]], fmt: str) -> str:
    """`objects` as multi-document YAML (`fmt` "yaml") or a v1 List in JSON ("json")."""
    if fmt == "json":
        from kplace.solver.output import dumps

        return dumps({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects})
    if fmt != "yaml":
        raise ValueError(f"unknown manifest format {fmt!r}")
    import yaml

    if not objects:
        return "# kplace: the plan binds no pod\n"
    return yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True)


@dataclass
class ManifestBinder:
    """Writes the plan to `out_file` ("-": standard output) in `fmt`; the summary counts the objects written."""

    out_file: str
    fmt: str = "yaml"

    def commit(self, plan: Plan, index: ClusterIndex) -> dict[str, Any]:
        if plan.moves:
            raise KplaceError("a plan with moves cannot be written as a manifest: the replacements' names are known "
                              "only once their controllers create them; commit it with --bind api")
        objects = manifest_objects(plan, index)
        text = render_manifest(objects, self.fmt)
        if self.out_file == "-":
            sys.stdout.write(text)
        else:
            from kplace.solver.output import write_atomic

            write_atomic(self.out_file, text)
        kinds = [o["kind"] for o in objects]
        out = {"mode": "manifest", "file": self.out_file, "format": self.fmt, "bindings": kinds.count("Binding"),
               "evictions": kinds.count("Eviction")}
        volumes = kinds.count("PersistentVolume") + kinds.count("PersistentVolumeClaim")
        if volumes:
            out["volumes"] = volumes
        return out
