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
    too_many = state.pod_count[nodes] + 1 > index.max_pods[nodes]
    if too_many.any():
        reasons.append((TOO_MANY_PODS, too_many))
    fail = too_many.copy()
    unresolvable = np.zeros(len(nodes), dtype=bool)
    cols = checked_columns(index, pod_idx, ignored, groups)
    if cols:
        want = index.pod_req[pod_idx, cols]
        rows, cs = nodes[:, None], np.asarray(cols, dtype=np.int64)  # as np.ix_(nodes, cols), without its overhead
        alloc = index.alloc[rows, cs]
        short = want > alloc - state.requested[rows, cs]
        for j, c in enumerate(cols):
            if short[:, j].any():
                reasons.append((f"Insufficient {index.resources[c]}", short[:, j]))
        fail |= short.any(axis=1)
        unresolvable = (short & (want > alloc)).any(axis=1)
    code = np.where(unresolvable, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
                    np.where(fail, np.int8(Code.UNSCHEDULABLE), np.int8(0))).astype(np.int8)
    return FilterResult(code, reasons)


def pod_requests(index: ClusterIndex, pod_idx: int, resources: Sequence[str], non_zero: bool) -> np.ndarray:
    """The pod's request per named resource; cpu/memory use the non-zero defaults when `non_zero`."""
    out = np.zeros(len(resources), dtype=np.int64)
    for j, r in enumerate(resources):
        if non_zero and r in ("cpu", "memory"):
            out[j] = index.pod_nonzero[pod_idx, 0 if r == "cpu" else 1]
        elif r in index.rid and (r in NATIVE or is_scalar(r)):
            out[j] = index.pod_req[pod_idx, index.rid[r]]
    return out


def allocation(
    state: ClusterState, pod_idx: int, nodes: np.ndarray, resources: Sequence[str], non_zero: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(requested, allocatable, included), each (len(nodes), len(resources)).

    requested = node's requested + pod's request, where cpu/memory use NonZeroRequested and the non-zero pod
    request when `non_zero` (NodeResourcesFit scoring), actual requests otherwise (BalancedAllocation).
    A resource is left out for a node when its allocatable is 0, or when it is scalar and the pod requests none.
    """
    index = state.index
    nodes = np.asarray(nodes, dtype=np.int64)
    p = pod_requests(index, pod_idx, resources, non_zero)
    req = np.zeros((len(nodes), len(resources)), dtype=np.int64)
    alloc = np.zeros_like(req)
    for j, r in enumerate(resources):
        col = index.rid.get(r)
        if col is None or not (r in NATIVE or is_scalar(r)):
            continue
        alloc[:, j] = index.alloc[nodes, col]
        if non_zero and r in ("cpu", "memory"):
            used = state.nonzero_requested[nodes, 0 if r == "cpu" else 1]
        else:
            used = state.requested[nodes, col]
        req[:, j] = used + p[j]
    skip_scalar = np.array([is_scalar(r) for r in resources], dtype=bool) & (p == 0)
    included = (alloc > 0) & ~skip_scalar[None, :]
    return req, alloc, included
