"""Reading a live cluster through the API: the same ClusterSnapshot `models.io` builds from exported files.

Every kind the scheduler reads is listed with `limit` and `continue` (client-go's pager, so 50,000 pods come
in pages of 500), then handed to `models.io.load_objects`, which validates, defaults and cross-checks them
as it does for files. Workloads (ReplicaSets, StatefulSets) are read for PodTopologySpread's system default
constraints but not expanded into pods: on a live cluster their controllers have already made the pods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kplace.models.io import load_objects
from kplace.models.snapshot import ClusterSnapshot

from .kube import LIST_KINDS, PAGE_SIZE, list_all, new_client


def read_objects(client, kinds: Iterable[str] = LIST_KINDS, *, page_size: int = PAGE_SIZE
                 ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every object of `kinds`, each with `kind` and `apiVersion` set, and each kind's list resourceVersion."""
    items: list[dict[str, Any]] = []
    versions: dict[str, str] = {}
    for kind in kinds:
        objs, rv = list_all(client, kind, page_size=page_size)
        items.extend(objs)
        versions[kind] = rv
    return items, versions


def snapshot_from_objects(items: Iterable[dict[str, Any]], source: str = "<api>") -> ClusterSnapshot:
    """A validated snapshot from live objects (wire format), workloads kept but not expanded."""
    return load_objects(((o["kind"], o) for o in items), source, expand=False)


def read_cluster(kubeconfig: str, context: str | None = None, *, page_size: int = PAGE_SIZE) -> ClusterSnapshot:
    """The cluster behind `kubeconfig` (and `context`) as a ClusterSnapshot."""
    client = new_client(kubeconfig, context)
    try:
        items, _ = read_objects(client, page_size=page_size)
    finally:
        client.close()
    return snapshot_from_objects(items, source=f"<api {kubeconfig}>")


def export_list(kubeconfig: str, context: str | None = None, *, page_size: int = PAGE_SIZE) -> dict[str, Any]:
    """The v1 List `kubectl get nodes,pods,pdb,... -A -o json` would print (items carry kind and apiVersion)."""
    client = new_client(kubeconfig, context)
    try:
        items, _ = read_objects(client, page_size=page_size)
    finally:
        client.close()
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
