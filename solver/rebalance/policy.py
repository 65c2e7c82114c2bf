"""The rebalancing policy: which pods may move (the descheduler's DefaultEvictor), thresholds, costs and caps.

A policy file is YAML, either kplace's own form::

    apiVersion: kplace.io/v1alpha1
    kind: RebalancePolicy
    evictor:                       # the descheduler's DefaultEvictor arguments (same names, same defaults)
      evictSystemCriticalPods: false
      evictLocalStoragePods: false
      evictDaemonSetPods: false
      ignorePvcPods: false
      evictBarePods: false         # kplace: pods with no controller (the descheduler never evicts them)
      priorityThreshold: {value: 10000}   # or {name: some-class}: pods at or above never move
      labelSelector: {matchLabels: {...}}  # only pods it selects may move
      namespaces: {include: [...], exclude: [...]}
    balance:                       # LowNodeUtilization's arguments (percent of allocatable)
      thresholds: {cpu: 20, memory: 20, pods: 20}
      targetThresholds: {cpu: 50, memory: 50, pods: 50}
      useDeviationThresholds: false
    pack:
      thresholds: {cpu: 20, memory: 20}   # HighNodeUtilization's (used by the baseline)
    ownerMaxUnavailable: 25%       # per workload, moves in one wave (int or percent of its pods, at least 1)

or a descheduler `DeschedulerPolicy` (descheduler/v1alpha2), from whose first profile the DefaultEvictor,
LowNodeUtilization and HighNodeUtilization plugin arguments are read. Unknown keys are errors.

Never moved unless the policy says so (DefaultEvictor's defaults): mirror and static pods, DaemonSet pods,
pods with no controller, system-critical pods (priority ≥ 2000000000), pods with local storage (emptyDir or
hostPath volumes), terminating pods, pods annotated `descheduler.alpha.kubernetes.io/evict: "false"` or
`cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`. As in the descheduler, a pod annotated
`descheduler.alpha.kubernetes.io/evict: "true"` may move whatever else holds (terminating pods excepted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kplace.models.errors import ConfigError
from kplace.models.index import PodInfo
from kplace.models.k8s import LabelSelector
from kplace.models.selectors import selector_matches

SYSTEM_CRITICAL = 2000000000
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
CONFIG_SOURCE = "kubernetes.io/config.source"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
RESOURCES = ("cpu", "memory", "pods")


@dataclass
class Evictor:
    evict_system_critical: bool = False
    evict_local_storage: bool = False
    evict_daemonset: bool = False
    ignore_pvc: bool = False
    evict_bare: bool = False
    priority_threshold: int | None = None
    priority_threshold_name: str | None = None
    label_selector: LabelSelector | None = None
    include_namespaces: list[str] = field(default_factory=list)
    exclude_namespaces: list[str] = field(default_factory=list)


@dataclass
class Thresholds:
    thresholds: dict[str, float] = field(default_factory=dict)  # percent
    target: dict[str, float] = field(default_factory=dict)  # percent
    deviation: bool = False


@dataclass
class Policy:
    evictor: Evictor = field(default_factory=Evictor)
    balance: Thresholds | None = None
    pack: Thresholds = field(default_factory=lambda: Thresholds({"cpu": 20, "memory": 20}))
    owner_max_unavailable: int | str = "25%"
    source: str = "<default policy>"

    def owner_cap(self, replicas: int) -> int:
        mu = self.owner_max_unavailable
        if isinstance(mu, str):
            return max(1, math.ceil(int(mu[:-1]) * replicas / 100))
        return max(1, mu)


def is_daemonset_pod(pi: PodInfo) -> bool:
    return any(o.kind == "DaemonSet" for o in pi.pod.metadata.owner_references)


def is_mirror_or_static(pi: PodInfo) -> bool:
    meta = pi.pod.metadata
    if MIRROR_ANNOTATION in meta.annotations or meta.annotations.get(CONFIG_SOURCE, "api") != "api":
        return True
    return any(o.kind == "Node" for o in meta.owner_references)


def is_node_bound_daemon(pi: PodInfo) -> bool:
    """Pods that belong to their node (DaemonSet, mirror, static): a node holding only these counts as empty."""
    return is_daemonset_pod(pi) or is_mirror_or_static(pi)


def deletion_cost(pi: PodInfo) -> int:
    raw = pi.pod.metadata.annotations.get(DELETION_COST)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def move_cost(pi: PodInfo) -> int:
    """What moving this pod costs in the objective: 10, plus its priority / 1000 and pod-deletion-cost / 100
    (kube's ReplicaSet deletes pods of lower deletion cost first), clamped to 1..1000."""
    return max(1, min(1000, 10 + max(0, pi.priority) // 1000 + deletion_cost(pi) // 100))


def never_move_reason(policy: Policy, pi: PodInfo, priority_by_class: dict[str, int] | None = None) -> str | None:
    """Why DefaultEvictor (as configured) would not evict this bound pod, or None when it may move."""
    ev = policy.evictor
    meta, spec = pi.pod.metadata, pi.pod.spec
    if pi.terminating:
        return "terminating"
    if is_mirror_or_static(pi):
        return "mirror or static pod"
    ann = meta.annotations
    if ann.get(EVICT_ANNOTATION, "").lower() == "false":
        return f"annotated {EVICT_ANNOTATION}: false"
    if ann.get(SAFE_TO_EVICT, "").lower() == "false":
        return f"annotated {SAFE_TO_EVICT}: false"
    forced = ann.get(EVICT_ANNOTATION, "").lower() == "true"
    if ev.include_namespaces and pi.namespace not in ev.include_namespaces:
        return "namespace not included by the policy"
    if pi.namespace in ev.exclude_namespaces:
        return "namespace excluded by the policy"
    if ev.label_selector is not None and not selector_matches(ev.label_selector, pi.labels):
        return "not selected by the policy's labelSelector"
    if forced:
        return None
    if is_daemonset_pod(pi) and not ev.evict_daemonset:
        return "DaemonSet pod"
    if not any(o.controller for o in meta.owner_references) and not ev.evict_bare:
        return "no controller (bare pod)"
    threshold = ev.priority_threshold
    if threshold is None and ev.priority_threshold_name and priority_by_class is not None:
        threshold = priority_by_class.get(ev.priority_threshold_name)
    if threshold is not None and pi.priority >= threshold:
        return f"priority {pi.priority} at or above the policy's threshold {threshold}"
    if pi.priority >= SYSTEM_CRITICAL and not ev.evict_system_critical:
        return "system-critical priority"
    if not ev.evict_local_storage and any(v.empty_dir is not None or v.host_path is not None for v in spec.volumes):
        return "local storage (emptyDir or hostPath)"
    if ev.ignore_pvc and any(v.persistent_volume_claim is not None for v in spec.volumes):
        return "uses a PersistentVolumeClaim (ignorePvcPods)"
    return None


# --- reading a policy file ------------------------------------------------------------------------


def _fail(source: str, where: str, what: str) -> ConfigError:
    return ConfigError(f"{source}: {where}: {what}" if where else f"{source}: {what}")


def _mapping(raw: Any, source: str, where: str) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(source, where, "must be a mapping")
    return raw


def _known(raw: dict, allowed: set[str], source: str, where: str) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        prefix = f"{where}." if where else ""
        raise _fail(source, f"{prefix}{extra[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")


def _bool(raw: dict, key: str, source: str, where: str) -> bool:
    v = raw.get(key, False)
    if not isinstance(v, bool):
        raise _fail(source, f"{where}.{key}", f"must be true or false, got {v!r}")
    return v


def _percentages(raw: Any, source: str, where: str) -> dict[str, float]:
    raw = _mapping(raw, source, where)
    out = {}
    for k, v in raw.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 100:
            raise _fail(source, f"{where}.{k}", f"must be a percentage 0..100, got {v!r}")
        out[str(k)] = float(v)
    return out


def parse_evictor(raw: Any, source: str, where: str) -> Evictor:
    raw = _mapping(raw, source, where)
    _known(raw, {"evictSystemCriticalPods", "evictLocalStoragePods", "evictDaemonSetPods", "ignorePvcPods",
                 "evictBarePods", "evictFailedBarePods", "priorityThreshold", "labelSelector", "namespaces",
                 "nodeFit", "minReplicas", "minPodAge"}, source, where)
    ev = Evictor(
        evict_system_critical=_bool(raw, "evictSystemCriticalPods", source, where),
        evict_local_storage=_bool(raw, "evictLocalStoragePods", source, where),
        evict_daemonset=_bool(raw, "evictDaemonSetPods", source, where),
        ignore_pvc=_bool(raw, "ignorePvcPods", source, where),
        evict_bare=_bool(raw, "evictBarePods", source, where),
    )
    pt = _mapping(raw.get("priorityThreshold"), source, f"{where}.priorityThreshold")
    _known(pt, {"value", "name"}, source, f"{where}.priorityThreshold")
    if "value" in pt:
        if isinstance(pt["value"], bool) or not isinstance(pt["value"], int):
            raise _fail(source, f"{where}.priorityThreshold.value", f"must be an integer, got {pt['value']!r}")
        ev.priority_threshold = pt["value"]
    if "name" in pt:
        ev.priority_threshold_name = str(pt["name"])
    if raw.get("labelSelector") is not None:
        try:
            ev.label_selector = LabelSelector.model_validate(raw["labelSelector"])
        except Exception as exc:  # pydantic's message, first line
            raise _fail(source, f"{where}.labelSelector", str(exc).splitlines()[0]) from None
    ns = _mapping(raw.get("namespaces"), source, f"{where}.namespaces")
    _known(ns, {"include", "exclude"}, source, f"{where}.namespaces")
    for key in ("include", "exclude"):
        vals = ns.get(key, [])
        if not isinstance(vals, list) or not all(isinstance(x, str) for x in vals):
            raise _fail(source, f"{where}.namespaces.{key}", "must be a list of namespace names")
        setattr(ev, f"{key}_namespaces", vals)
    return ev


def parse_thresholds(raw: Any, source: str, where: str, need_target: bool) -> Thresholds:
    raw = _mapping(raw, source, where)
    _known(raw, {"thresholds", "targetThresholds", "useDeviationThresholds", "numberOfNodes",
                 "evictableNamespaces"}, source, where)
    t = Thresholds(_percentages(raw.get("thresholds"), source, f"{where}.thresholds"),
                   _percentages(raw.get("targetThresholds"), source, f"{where}.targetThresholds"),
                   _bool(raw, "useDeviationThresholds", source, where))
    for k in (*t.thresholds, *t.target):
        if k not in RESOURCES and "/" not in k:
            raise _fail(source, f"{where}", f"unknown resource {k!r} (use cpu, memory, pods or a scalar resource)")
    if need_target:
        if not t.thresholds or not t.target:
            raise _fail(source, where, "needs both thresholds and targetThresholds")
        if set(t.thresholds) != set(t.target):
            raise _fail(source, where, "thresholds and targetThresholds must name the same resources")
        for k, v in t.thresholds.items():
            if v > t.target[k]:
                raise _fail(source, f"{where}.thresholds.{k}", f"{v} is above targetThresholds.{k} "
                                                              f"{t.target[k]}")
    return t


def parse_policy(raw: Any, source: str) -> Policy:
    if not isinstance(raw, dict):
        raise _fail(source, "", "a policy is a YAML mapping (kind RebalancePolicy or DeschedulerPolicy)")
    kind = raw.get("kind")
    policy = Policy(source=source)
    if kind == "DeschedulerPolicy":
        profiles = raw.get("profiles") or []
        if not isinstance(profiles, list) or not profiles or not isinstance(profiles[0], dict):
            raise _fail(source, "profiles", "must be a non-empty list of profiles")
        configs = profiles[0].get("pluginConfig") or []
        if not isinstance(configs, list):
            raise _fail(source, "profiles[0].pluginConfig", "must be a list")
        for i, pc in enumerate(configs):
            where = f"profiles[0].pluginConfig[{i}]"
            if not isinstance(pc, dict) or "name" not in pc:
                raise _fail(source, where, "must be a mapping with name and args")
            name, args = pc["name"], pc.get("args")
            if name == "DefaultEvictor":
                policy.evictor = parse_evictor(args, source, f"{where}.args")
            elif name == "LowNodeUtilization":
                policy.balance = parse_thresholds(args, source, f"{where}.args", need_target=True)
            elif name == "HighNodeUtilization":
                policy.pack = parse_thresholds(args, source, f"{where}.args", need_target=False)
        return policy
    if kind not in ("RebalancePolicy", None):
        raise _fail(source, "kind", f"must be RebalancePolicy or DeschedulerPolicy, got {kind!r}")
    _known(raw, {"apiVersion", "kind", "evictor", "balance", "pack", "ownerMaxUnavailable"}, source, "")
    policy.evictor = parse_evictor(raw.get("evictor"), source, "evictor")
    if raw.get("balance") is not None:
        policy.balance = parse_thresholds(raw["balance"], source, "balance", need_target=True)
    if raw.get("pack") is not None:
        policy.pack = parse_thresholds(raw["pack"], source, "pack", need_target=False)
    mu = raw.get("ownerMaxUnavailable", "25%")
    ok = (isinstance(mu, int) and not isinstance(mu, bool) and mu >= 1) or (
        isinstance(mu, str) and mu.endswith("%") and mu[:-1].isdigit() and 0 < int(mu[:-1]) <= 100)
    if not ok:
        raise _fail(source, "ownerMaxUnavailable", f"must be a positive integer or a percentage like 25%, got {mu!r}")
    policy.owner_max_unavailable = mu
    return policy


def load_policy(path: str | None) -> Policy:
    if path is None:
        return Policy()
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from None
    return parse_policy(raw, path)
