"""The compiled records the replay works on: a pod's scheduling facts, its required inter-pod terms, and its
hard topology spread constraints, each computed once from the pydantic objects."""

from __future__ import annotations

from dataclasses import dataclass

from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.k8s import LabelSelector, LabelSelectorRequirement, Pod, PodAffinityTerm
from kplace.models.requests import host_ports, pod_requests
from kplace.models.selectors import Selector


@dataclass(eq=False)
class CompiledPod:
    """A pod as the filters read it: key `namespace/name`, labels, priority, requests, host ports
    (ip, protocol, port) and whether it is terminating."""

    key: str
    pod: Pod
    ns: str
    labels: dict[str, str]
    priority: int
    requests: dict[str, int]
    ports: list[tuple[str, str, int]]
    terminating: bool


def compile_pod(pod: Pod) -> CompiledPod:
    m = pod.metadata
    return CompiledPod(f"{m.namespace}/{m.name}", pod, m.namespace, m.labels, pod.spec.priority or 0,
                       pod_requests(pod), host_ports(pod), m.deletion_timestamp is not None)


class PodTable:
    """The state's pods by key (`info`), each compiled on first use and shared by every check (`pods(key)`)."""

    def __init__(self, index: ClusterIndex) -> None:
        self.info: dict[str, PodInfo] = {pi.key: pi for pi in index.pods}
        self._compiled: dict[str, CompiledPod] = {}

    def __call__(self, key: str) -> CompiledPod:
        if key not in self._compiled:
            self._compiled[key] = compile_pod(self.info[key].pod)
        return self._compiled[key]


@dataclass(frozen=True)
class Term:
    """A required pod (anti-)affinity term: namespaces ∪ namespaceSelector, label selector, topology key."""

    names: frozenset[str]
    ns_selector: Selector
    selector: Selector
    key: str


def compile_term(owner: CompiledPod, t: PodAffinityTerm) -> Term:
    """Namespaces default to the owner's; matchLabelKeys / mismatchLabelKeys merge into the label selector
    (`key In / NotIn [owner's value]`, for keys the owner carries), as the API server does on creation."""
    own = not t.namespaces and t.namespace_selector is None
    sel = t.label_selector
    if sel is not None and (t.match_label_keys or t.mismatch_label_keys):
        extra = [LabelSelectorRequirement(key=k, operator=op, values=[owner.labels[k]])
                 for keys, op in ((t.match_label_keys, "In"), (t.mismatch_label_keys, "NotIn"))
                 for k in keys if k in owner.labels]
        sel = LabelSelector(match_labels=sel.match_labels, match_expressions=[*sel.match_expressions, *extra])
    names = frozenset([owner.ns]) if own else frozenset(t.namespaces)
    return Term(names, Selector(t.namespace_selector), Selector(sel), t.topology_key)


def required_terms(pod: Pod, anti: bool) -> list[PodAffinityTerm]:
    """The pod's requiredDuringSchedulingIgnoredDuringExecution pod affinity (or anti-affinity) terms."""
    a = pod.spec.affinity
    pa = (a.pod_anti_affinity if anti else a.pod_affinity) if a else None
    return pa.required_during_scheduling_ignored_during_execution if pa else []


@dataclass(frozen=True)
class Spread:
    """A DoNotSchedule topology spread constraint; `eligibility` is a hashable description of the nodes whose
    domains count (the node inclusion policies applied to the pod's node affinity and tolerations)."""

    max_skew: int
    key: str
    selector: Selector
    min_domains: int
    eligibility: tuple
