"""Legacy scheduler Policy files (`kind: Policy`, kube 1.16–1.23) translated to the equivalent
KubeSchedulerConfiguration (a pure translation: `config.parse_policy` reads the result as any --config).

    predicates: [{name: PodFitsResources}, ...]          # absent: kube's default predicates; [] : none
    priorities: [{name: LeastRequestedPriority, weight: 1}, ...]   # absent: the default priorities
    hardPodAffinitySymmetricWeight: 1                    # InterPodAffinity's hardPodAffinityWeight
    extenders: [...]                                     # carried over, as --config's
    alwaysCheckAllPredicates: false                      # accepted; kplace always stops at the first failure

The translation follows kube's legacy registry: each predicate enables its plugin at PreFilter and Filter,
each priority its plugin at PreScore and Score with the priority's weight (a plugin named by two priorities
keeps the larger weight). Filters run in kube's predicate order (`PREDICATE_ORDER`); CheckNodeUnschedulable
and PodToleratesNodeTaints are always on, as kube's mandatory predicates. PrioritySort, SchedulingGates,
DefaultPreemption and DefaultBinder are always on. EqualPriority scores every node alike, so it adds no
plugin. The retired in-tree volume-count predicates (MaxEBSVolumeCount, MaxGCEPDVolumeCount,
MaxAzureDiskVolumeCount, MaxCinderVolumeCount) map to NodeVolumeLimits, which counts those volumes since CSI
migration. Predicates and priorities that need an `argument` (CheckNodeLabelPresence, CheckServiceAffinity,
NodeLabelPriority, ServiceAntiAffinity) and ResourceLimitsPriority are not supported: a ConfigError says so.
"""

from __future__ import annotations

from typing import Any

from kplace.models.errors import ConfigError

GENERAL = ["NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity"]
PREDICATES: dict[str, list[str]] = {
    "CheckNodeCondition": ["CheckNodeCondition"],
    "CheckNodeUnschedulable": ["NodeUnschedulable"],
    "GeneralPredicates": GENERAL,
    "HostName": ["NodeName"],
    "PodFitsHostPorts": ["NodePorts"],
    "PodFitsPorts": ["NodePorts"],
    "MatchNodeSelector": ["NodeAffinity"],
    "PodFitsResources": ["NodeResourcesFit"],
    "NoDiskConflict": ["VolumeRestrictions"],
    "PodToleratesNodeTaints": ["TaintToleration"],
    "PodToleratesNodeNoExecuteTaints": ["TaintToleration"],
    "MaxEBSVolumeCount": ["NodeVolumeLimits"],
    "MaxGCEPDVolumeCount": ["NodeVolumeLimits"],
    "MaxCSIVolumeCountPred": ["NodeVolumeLimits"],
    "MaxAzureDiskVolumeCount": ["NodeVolumeLimits"],
    "MaxCinderVolumeCount": ["NodeVolumeLimits"],
    "CheckVolumeBinding": ["VolumeBinding"],
    "NoVolumeZoneConflict": ["VolumeZone"],
    "CheckNodeMemoryPressure": ["CheckNodeMemoryPressure"],
    "CheckNodePIDPressure": ["CheckNodePIDPressure"],
    "CheckNodeDiskPressure": ["CheckNodeDiskPressure"],
    "EvenPodsSpread": ["PodTopologySpread"],
    "MatchInterPodAffinity": ["InterPodAffinity"],
}
PREDICATE_ORDER = list(PREDICATES)  # kube's predicates.Ordering(), with the 1.16 condition predicates
MANDATORY_PREDICATES = ["CheckNodeUnschedulable", "PodToleratesNodeTaints"]
PRIORITIES: dict[str, str | None] = {
    "EqualPriority": None,
    "SelectorSpreadPriority": "SelectorSpread",
    "ServiceSpreadingPriority": "SelectorSpread",
    "InterPodAffinityPriority": "InterPodAffinity",
    "LeastRequestedPriority": "NodeResourcesFit",
    "MostRequestedPriority": "NodeResourcesFit",
    "RequestedToCapacityRatioPriority": "NodeResourcesFit",
    "BalancedResourceAllocation": "NodeResourcesBalancedAllocation",
    "NodePreferAvoidPodsPriority": "NodePreferAvoidPods",
    "NodeAffinityPriority": "NodeAffinity",
    "TaintTolerationPriority": "TaintToleration",
    "ImageLocalityPriority": "ImageLocality",
    "EvenPodsSpreadPriority": "PodTopologySpread",
}
_STRATEGY = {"LeastRequestedPriority": "LeastAllocated", "MostRequestedPriority": "MostAllocated",
             "RequestedToCapacityRatioPriority": "RequestedToCapacityRatio"}
UNSUPPORTED = {
    "CheckNodeLabelPresence": "needs the NodeLabel plugin, which kplace does not implement",
    "CheckServiceAffinity": "needs the ServiceAffinity plugin, which kplace does not implement",
    "NodeLabelPriority": "needs the NodeLabel plugin, which kplace does not implement",
    "ServiceAntiAffinity": "needs the ServiceAffinity plugin, which kplace does not implement",
    "ResourceLimitsPriority": "needs the alpha NodeResourceLimits plugin, which kplace does not implement",
}
DEFAULT_PREDICATES = ["NoVolumeZoneConflict", "MaxEBSVolumeCount", "MaxGCEPDVolumeCount", "MaxAzureDiskVolumeCount",
                      "MaxCSIVolumeCountPred", "MatchInterPodAffinity", "NoDiskConflict", "GeneralPredicates",
                      "PodToleratesNodeTaints", "CheckVolumeBinding", "CheckNodeUnschedulable", "EvenPodsSpread"]
DEFAULT_PRIORITIES = [("SelectorSpreadPriority", 1), ("InterPodAffinityPriority", 1), ("LeastRequestedPriority", 1),
                      ("BalancedResourceAllocation", 1), ("NodePreferAvoidPodsPriority", 10000),
                      ("NodeAffinityPriority", 1), ("TaintTolerationPriority", 1), ("ImageLocalityPriority", 1),
                      ("EvenPodsSpreadPriority", 2)]
_FIELDS = {"kind", "apiVersion", "predicates", "priorities", "extenders", "hardPodAffinitySymmetricWeight",
           "alwaysCheckAllPredicates"}


def _entries(raw: Any, what: str, source: str) -> list[dict[str, Any]] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ConfigError(f"{source}: {what} must be a list of {{name: ...}}")
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            raise ConfigError(f"{source}: {what}[{i}] needs a 'name'")
    return raw


def _check(name: str, known: dict, what: str, where: str) -> None:
    if name in UNSUPPORTED:
        raise ConfigError(f"{where}: {what} {name!r} is not supported: {UNSUPPORTED[name]}")
    if name not in known:
        plural = "priorities" if what == "priority" else f"{what}s"
        raise ConfigError(f"{where}: unknown {what} {name!r}; valid {plural}: {', '.join(sorted(known))}")


def _fit_args(name: str, argument: Any, where: str) -> dict[str, Any]:
    strategy: dict[str, Any] = {"type": _STRATEGY[name]}
    if name == "RequestedToCapacityRatioPriority":
        args = (argument or {}).get("requestedToCapacityRatioArguments") if isinstance(argument, dict) else None
        if not isinstance(args, dict) or not args.get("shape"):
            raise ConfigError(f"{where}: RequestedToCapacityRatioPriority needs "
                              "argument.requestedToCapacityRatioArguments.shape")
        strategy["requestedToCapacityRatio"] = {"shape": args["shape"]}
        if args.get("resources"):
            strategy["resources"] = args["resources"]
    return {"scoringStrategy": strategy}


def translate_policy(raw: Any, source: str = "<policy>") -> dict[str, Any]:
    """A legacy `kind: Policy` mapping (YAML or JSON, already parsed) → the KubeSchedulerConfiguration mapping
    with one `default-scheduler` profile equivalent to it. Raises ConfigError with `source` in the message."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a Policy mapping")
    if raw.get("kind") != "Policy":
        raise ConfigError(f"{source}: kind must be Policy, got {raw.get('kind')!r}")
    extra = sorted(set(raw) - _FIELDS)
    if extra:
        raise ConfigError(f"{source}: unknown field(s) {', '.join(extra)}; expected {', '.join(sorted(_FIELDS))}")

    preds = _entries(raw.get("predicates"), "predicates", source)
    pred_names = DEFAULT_PREDICATES if preds is None else [e["name"] for e in preds]
    for i, n in enumerate(pred_names):
        _check(n, PREDICATES, "predicate", f"{source}: predicates[{i}]")
    chosen = set(pred_names) | set(MANDATORY_PREDICATES)
    filters: list[str] = []
    for p in PREDICATE_ORDER:
        if p in chosen:
            filters.extend(n for n in PREDICATES[p] if n not in filters)

    prios = _entries(raw.get("priorities"), "priorities", source)
    prio_list = [{"name": n, "weight": w} for n, w in DEFAULT_PRIORITIES] if prios is None else prios
    scores: dict[str, int] = {}
    args: dict[str, dict[str, Any]] = {}
    strategy_from: str | None = None
    for i, e in enumerate(prio_list):
        where = f"{source}: priorities[{i}]"
        name = e["name"]
        _check(name, PRIORITIES, "priority", where)
        w = e.get("weight", 1)
        if isinstance(w, bool) or not isinstance(w, int) or w <= 0:
            raise ConfigError(f"{where}.weight: must be a positive integer, got {w!r}")
        plugin = PRIORITIES[name]
        if plugin is None:
            continue
        if name in _STRATEGY:
            if strategy_from is not None and strategy_from != name:
                raise ConfigError(f"{where}: {name} and {strategy_from} both set NodeResourcesFit's scoring "
                                  "strategy; a profile has one")
            strategy_from = name
            args["NodeResourcesFit"] = _fit_args(name, e.get("argument"), where)
        scores[plugin] = max(scores.get(plugin, 0), w)

    hard = raw.get("hardPodAffinitySymmetricWeight")
    if hard is not None:
        if isinstance(hard, bool) or not isinstance(hard, int) or not 0 <= hard <= 100:
            raise ConfigError(f"{source}: hardPodAffinitySymmetricWeight must be an integer 0..100, got {hard!r}")
        args["InterPodAffinity"] = {"hardPodAffinityWeight": hard}
    extenders = raw.get("extenders") or []
    if not isinstance(extenders, list):
        raise ConfigError(f"{source}: extenders must be a list")

    def enable(names: list[str], weights: dict[str, int] | None = None) -> dict[str, Any]:
        return {"enabled": [{"name": n, **({"weight": weights[n]} if weights else {})} for n in names]}

    profile = {
        "schedulerName": "default-scheduler",
        "plugins": {
            "multiPoint": {"disabled": [{"name": "*"}]},
            "queueSort": enable(["PrioritySort"]),
            "preEnqueue": enable(["SchedulingGates"]),
            "preFilter": enable(filters),
            "filter": enable(filters),
            "postFilter": enable(["DefaultPreemption"]),
            "preScore": enable(list(scores)),
            "score": enable(list(scores), scores),
            "bind": enable(["DefaultBinder"]),
        },
        "pluginConfig": [{"name": n, "args": a} for n, a in args.items()],
    }
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [profile], "extenders": extenders}
