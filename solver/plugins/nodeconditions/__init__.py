"""The classic node-condition predicates of kube ≤ 1.16, as plugins a profile can enable (not in the default
profile: today the node lifecycle controller's taints do this job, and kplace adds those taints at load time
when an export lacks them — `models.snapshot.condition_taints`). Every failure is UnschedulableAndUnresolvable,
as the framework's predicate migration mapped them.

- CheckNodeCondition: a Ready condition whose status is not True fails "node(s) were not ready"; a
  NetworkUnavailable condition whose status is not False fails "node(s) had unavailable network"; a cordoned
  node fails "node(s) were unschedulable" (every reason that applies is reported).
- CheckNodeMemoryPressure: a BestEffort pod (no cpu or memory request or limit in any container, init
  container or pod-level resources) fails on a node whose MemoryPressure is True: "node(s) had memory pressure".
- CheckNodeDiskPressure: any pod fails where DiskPressure is True: "node(s) had disk pressure".
- CheckNodePIDPressure: any pod fails where PIDPressure is True: "node(s) had pid pressure".
"""

from __future__ import annotations

import numpy as np
from kplace.models.index import ClusterIndex
from kplace.models.k8s import Pod

from ...framework import Code, CycleState, FilterResult, Plugin
from ...framework.state import ClusterState

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
REASON_NOT_READY = "node(s) were not ready"
REASON_NETWORK = "node(s) had unavailable network"
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_MEMORY = "node(s) had memory pressure"
REASON_DISK = "node(s) had disk pressure"
REASON_PID = "node(s) had pid pressure"


def condition_mask(index: ClusterIndex, ctype: str, bad) -> np.ndarray:
    """Per node: does some condition of type `ctype` have a status for which `bad(status)` holds."""
    key = f"nodeconditions/{ctype}/{bad.__name__}"
    hit = index.cache.get(key)
    if hit is None:
        hit = index.cache[key] = np.array(
            [any(c.type == ctype and bad(c.status) for c in n.status.conditions) for n in index.nodes], dtype=bool)
    return hit


def _not_true(status: str) -> bool:
    return status != "True"


def _not_false(status: str) -> bool:
    return status != "False"


def _true(status: str) -> bool:
    return status == "True"


def is_best_effort(pod: Pod) -> bool:
    """QoS class BestEffort: no cpu or memory request or limit anywhere in the pod."""
    spec = pod.spec
    reqs = [c.resources for c in [*spec.containers, *spec.init_containers]]
    if spec.resources is not None:
        reqs.append(spec.resources)
    return not any(k in ("cpu", "memory") for r in reqs for k in (*r.requests, *r.limits))


class CheckNodeCondition(Plugin):
    name = "CheckNodeCondition"

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        index = state.index
        masks = [
            (REASON_NOT_READY, condition_mask(index, "Ready", _not_true)[nodes]),
            (REASON_NETWORK, condition_mask(index, "NetworkUnavailable", _not_false)[nodes]),
            (REASON_UNSCHEDULABLE, index.unschedulable[nodes]),
        ]
        fail = np.logical_or.reduce([m for _, m in masks])
        return FilterResult(np.where(fail, np.int8(UU), np.int8(0)).astype(np.int8),
                            [(t, m) for t, m in masks if m.any()])


class _Pressure(Plugin):
    condition = ""
    reason = ""

    def applies(self, pod) -> bool:
        return True

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        if not self.applies(pod):
            return FilterResult.success(len(nodes))
        return FilterResult.fail_where(condition_mask(state.index, self.condition, _true)[nodes], UU, self.reason)


class CheckNodeMemoryPressure(_Pressure):
    name = "CheckNodeMemoryPressure"
    condition, reason = "MemoryPressure", REASON_MEMORY

    def applies(self, pod) -> bool:
        return is_best_effort(pod.pod)


class CheckNodeDiskPressure(_Pressure):
    name = "CheckNodeDiskPressure"
    condition, reason = "DiskPressure", REASON_DISK


class CheckNodePIDPressure(_Pressure):
    name = "CheckNodePIDPressure"
    condition, reason = "PIDPressure", REASON_PID


PLUGINS = [CheckNodeCondition, CheckNodeMemoryPressure, CheckNodeDiskPressure, CheckNodePIDPressure]
