"""Pure NodeResourcesFit / BalancedAllocation maths, vectorised over node ids.

Resource classes follow kube: cpu, memory, ephemeral-storage are native; *scalar* resources are extended
(`domain/name` outside `kubernetes.io/`), `hugepages-*`, `attachable-volumes-*` and prefixed native names
(`kubernetes.io/...`). Any other name is ignored by kube's NodeInfo, so it is ignored here too.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
from kplace.models.index import ClusterIndex

from ...framework import Code, FilterResult
from ...framework.state import ClusterState

NATIVE = ("cpu", "memory", "ephemeral-storage")
TOO_MANY_PODS = "Too many pods"


def is_prefixed_native(name: str) -> bool:
    return "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """IsExtendedResourceName: has a domain, not kubernetes.io, not a quota `requests.` name."""
    return "/" in name and not is_prefixed_native(name) and not name.startswith("requests.")


def is_scalar(name: str) -> bool:
    """IsScalarResourceName."""
    return (is_extended(name) or name.startswith("hugepages-") or is_prefixed_native(name)
            or name.startswith("attachable-volumes-"))


def is_ignored(name: str, ignored: Collection[str], groups: Collection[str]) -> bool:
    """Extended resources listed in ignoredResources, or whose domain is in ignoredResourceGroups."""
    return is_extended(name) and (name in ignored or name.split("/", 1)[0] in groups)


def checked_columns(index: ClusterIndex, pod_idx: int, ignored: Collection[str], groups: Collection[str]) -> list[int]:
    """Resource columns the Filter compares: the pod requests them (> 0), kube tracks them, not ignored."""
    req = index.pod_req[pod_idx]
    return [
        c for c in np.flatnonzero(req > 0).tolist()
        if (index.resources[c] in NATIVE or is_scalar(index.resources[c]))
        and not is_ignored(index.resources[c], ignored, groups)
    ]


def _rows(matrix: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """matrix[nodes] (every column): `np.take` gathers rows several times faster than fancy indexing."""
    return np.take(matrix, nodes, axis=0)


def checked_requests(index: ClusterIndex, pod_idx: int, ignored: Collection[str], groups: Collection[str]
             ) -> tuple[np.ndarray, np.ndarray]:
    """`checked_columns` as an array and the pod's requests there, computed once per pod and filter arguments
    (a pod's requests never change)."""
    cache = index.cache.setdefault(f"NodeResourcesFit.checked/{sorted(ignored)}/{sorted(groups)}", {})
    hit = cache.get(pod_idx)
    if hit is None:
        cols = np.asarray(checked_columns(index, pod_idx, ignored, groups), dtype=np.int64)
        hit = cache[pod_idx] = (cols, index.pod_req[pod_idx, cols])
    return hit


def fit_filter(
    state: ClusterState, pod_idx: int, nodes: np.ndarray, ignored: Collection[str] = (), groups: Collection[str] = ()
) -> FilterResult:
    """kube's fitsRequest for every node at once.

    Fail "Too many pods" if pods_on_node + 1 > allocatable pods; for each resource r the pod requests (R_r > 0),
    fail "Insufficient r" if R_r > alloc_r − requested_r. All failing resources are reported. The node is
    Unschedulable, or UnschedulableAndUnresolvable when some failing resource has R_r > alloc_r (no
    preemption can help).
    """
    index = state.index
    nodes = np.asarray(nodes, dtype=np.int64)
    reasons: list[tuple[str, np.ndarray]] = []
    fail = state.pod_count[nodes] + 1 > index.max_pods[nodes]
    if fail.any():
        reasons.append((TOO_MANY_PODS, fail.copy()))
    code = fail.astype(np.int8)  # Code.UNSCHEDULABLE is 1
    cols, want = checked_requests(index, pod_idx, ignored, groups)
    if len(cols):
        alloc = _rows(index.alloc, nodes)[:, cols]
        short = want > alloc - _rows(state.requested, nodes)[:, cols]
        failing = short.any(axis=0)
        if failing.any():
            for j in np.flatnonzero(failing).tolist():
                reasons.append((f"Insufficient {index.resources[cols[j]]}", short[:, j]))
            code[short.any(axis=1)] = Code.UNSCHEDULABLE
            code[(short & (want > alloc)).any(axis=1)] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return FilterResult(code, reasons)


def _columns(index: ClusterIndex, resources: Sequence[str], non_zero: bool) -> tuple:
    """Per named resource, computed once per index: its column in alloc/requested (0 when kube does not track
    it), whether it is tracked, its column in the non-zero arrays (−1 unless cpu/memory with `non_zero`),
    whether it is scalar; and a per-pod cache of `pod_requests`."""
    key = f"noderesources.columns/{non_zero}/{'/'.join(resources)}"
    hit = index.cache.get(key)
    if hit is None:
        tracked = np.array([r in index.rid and (r in NATIVE or is_scalar(r)) for r in resources], dtype=bool)
        cols = np.array([index.rid[r] if t else 0 for r, t in zip(resources, tracked, strict=True)], dtype=np.int64)
        nz = np.array([("cpu", "memory").index(r) if non_zero and r in ("cpu", "memory") else -1 for r in resources],
                      dtype=np.int64)
        hit = index.cache[key] = (cols, tracked, nz, np.array([is_scalar(r) for r in resources], dtype=bool), {})
    return hit


def pod_requests(index: ClusterIndex, pod_idx: int, resources: Sequence[str], non_zero: bool) -> np.ndarray:
    """The pod's request per named resource; cpu/memory use the non-zero defaults when `non_zero`."""
    cols, tracked, nz, _, per_pod = _columns(index, resources, non_zero)
    p = per_pod.get(pod_idx)
    if p is None:
        actual = np.where(tracked, index.pod_req[pod_idx, cols], 0)
        p = per_pod[pod_idx] = np.where(nz >= 0, index.pod_nonzero[pod_idx, np.maximum(nz, 0)], actual)
        p.flags.writeable = False  # shared by every caller
    return p


def allocation(
    state: ClusterState, pod_idx: int, nodes: np.ndarray, resources: Sequence[str], non_zero: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(requested, allocatable, included), each (len(nodes), len(resources)).

    requested = node's requested + pod's request, where cpu/memory use NonZeroRequested and the non-zero pod
    request when `non_zero` (NodeResourcesFit scoring), actual requests otherwise (BalancedAllocation).
    A resource is left out for a node when its allocatable is 0, or when it is scalar and the pod requests none.
    Resources kube does not track count 0 requested of 0 allocatable.
    """
    index = state.index
    nodes = np.asarray(nodes, dtype=np.int64)
    cols, tracked, nz, scalar, _ = _columns(index, resources, non_zero)
    p = pod_requests(index, pod_idx, resources, non_zero)
    if (nz < 0).all():
        used = _rows(state.requested, nodes)[:, cols]
    elif (nz >= 0).all():
        used = _rows(state.nonzero_requested, nodes)[:, nz]
    else:
        used = np.where(nz >= 0, _rows(state.nonzero_requested, nodes)[:, np.maximum(nz, 0)],
                        _rows(state.requested, nodes)[:, cols])
    alloc = _rows(index.alloc, nodes)[:, cols]
    req = used + p
    if not tracked.all():
        alloc = alloc * tracked
        req = req * tracked
    included = (alloc > 0) & ~(scalar & (p == 0))
    return req, alloc, included

