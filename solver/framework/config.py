"""Profiles from a KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`), merged as kube does.

Without a file: kube's default profile (one multiPoint list, reference §1). With a file, per profile:
1. multiPoint: `disabled` removes default plugins (`*` removes all); `enabled` replaces a default in place
   (its weight) or is appended.
2. each extension point E: `disabled` there removes plugins (`*` all); the order is kube's — plugins
   enabled at E that also come from multiPoint (overrides) first, then multiPoint-only plugins that
   implement E, then plugins enabled only at E.
3. score weights: the weight given at `score`, else the multiPoint weight, else 1 (0 means unset).
`pluginConfig[].args` go to the plugin's constructor; `percentageOfNodesToScore` is per profile, falling
back to the global one (0 = adaptive).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kplace.models.errors import ConfigError

from .plugin import Plugin

DEFAULT_MULTIPOINT: list[tuple[str, int]] = [
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
]
# Upstream plugins kplace knows by name but does not implement yet: accepted in configs, and reported
# (never silently ignored) when a pod actually needs them.
NOT_IMPLEMENTED = {
    "DynamicResources": "resource claims (DRA)",
}
BUILTIN_NO_OP = {"DefaultBinder", "DefaultPreemption"}  # handled by the engines, not as filter/score plugins
POINTS = ("queueSort", "preEnqueue", "preFilter", "filter", "postFilter", "preScore", "score",
          "reserve", "permit", "preBind", "bind", "postBind")
_PY_POINT = {"preEnqueue": "pre_enqueue", "preFilter": "pre_filter", "filter": "filter",
             "preScore": "pre_score", "score": "score"}
DEFAULT_SCHEDULER = "default-scheduler"

MAX_WEIGHT = 2**31 - 1  # Weight is an int32 in KubeSchedulerConfiguration


@dataclass
class Profile:
    """One scheduling profile: instantiated plugins per extension point, score weights, sampling."""

    scheduler_name: str
    plugins: dict[str, list[Plugin]]
    weights: dict[str, int]
    percentage_of_nodes_to_score: int | None
    enabled: list[str] = field(default_factory=list)
    post_filters: list[str] = field(default_factory=list)  # PostFilter plugins in order (preemption among them)

    @property
    def preemption(self) -> bool:
        return "DefaultPreemption" in self.post_filters

    def at(self, point: str) -> list[Plugin]:
        return self.plugins.get(point, [])

    def plugin(self, name: str) -> Plugin | None:
        """The profile's instance of plugin `name` at any extension point, or None."""
        return next((p for ps in self.plugins.values() for p in ps if p.name == name), None)


@dataclass
class SchedulerConfig:
    profiles: dict[str, Profile]
    percentage_of_nodes_to_score: int = 0
    extenders: list[dict[str, Any]] = field(default_factory=list)
    source: str = "<default>"
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10

    def profile_for(self, scheduler_name: str) -> Profile | None:
        return self.profiles.get(scheduler_name)


def _implements(cls: type[Plugin] | None, name: str, point: str) -> bool:
    if point == "queueSort":
        return name == "PrioritySort"
    if point == "postFilter":
        return name in ("DefaultPreemption", "DynamicResources")
    if point == "bind":
        return name == "DefaultBinder"
    py = _PY_POINT.get(point)
    if cls is None or py is None:
        return False
    if point in ("preScore", "score"):
        return cls.has("score")
    if point == "preFilter":
        return cls.has("filter") or cls.has("pre_filter")
    return cls.has(py)


def _plugin_set(raw: Any, where: str) -> tuple[list[tuple[str, int]], set[str]]:
    if raw is None:
        return [], set()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a mapping with 'enabled' and/or 'disabled'")
    enabled, disabled = [], set()
    for key, out in (("enabled", enabled), ("disabled", disabled)):
        items = raw.get(key) or []
        if not isinstance(items, list):
            raise ConfigError(f"{where}.{key}: must be a list of {{name: ...}}")
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ConfigError(f"{where}.{key}[{i}]: each entry needs a 'name'")
            if key == "enabled":
                w = item.get("weight", 0) or 0
                if isinstance(w, bool) or not isinstance(w, int) or w < 0:
                    raise ConfigError(f"{where}.{key}[{i}].weight: must be a positive integer, got {w!r}")
                if w > MAX_WEIGHT:
                    raise ConfigError(f"{where}.{key}[{i}].weight: {w} is more than the largest weight, {MAX_WEIGHT}")
                out.append((item["name"], w))
            else:
                out.add(item["name"])
    return enabled, disabled


def _check_name(name: str, registry: dict[str, type[Plugin]], where: str) -> None:
    known = set(registry) | set(NOT_IMPLEMENTED) | BUILTIN_NO_OP | {n for n, _ in DEFAULT_MULTIPOINT}
    if name not in known:
        raise ConfigError(f"{where}: unknown plugin {name!r}; valid plugins: {', '.join(sorted(known))}")


_REGISTRY: list[Callable[[], dict[str, type[Plugin]]]] = []


def use_registry(provider: Callable[[], dict[str, type[Plugin]]]) -> None:
    """Give the framework its plugin registry (name → class), as kube's scheduler hands one to its framework;
    `kplace.solver.plugins` registers the in-tree plugins when it is imported."""
    _REGISTRY[:] = [provider]


def _registry() -> dict[str, type[Plugin]]:
    if not _REGISTRY:
        raise RuntimeError("no plugin registry: import kplace.solver.plugins (or call use_registry) first")
    return _REGISTRY[0]()


def build_profile(raw: dict[str, Any], where: str) -> Profile:
    registry = _registry()
    name = raw.get("schedulerName") or DEFAULT_SCHEDULER
    plugins_raw = raw.get("plugins") or {}
    if not isinstance(plugins_raw, dict):
        raise ConfigError(f"{where}.plugins: must be a mapping of extension points")
    for key in plugins_raw:
        if key not in (*POINTS, "multiPoint"):
            raise ConfigError(f"{where}.plugins: unknown extension point {key!r}")

    mp_enabled, mp_disabled = _plugin_set(plugins_raw.get("multiPoint"), f"{where}.plugins.multiPoint")
    multipoint: list[tuple[str, int]] = [] if "*" in mp_disabled else [
        (n, w) for n, w in DEFAULT_MULTIPOINT if n not in mp_disabled
    ]
    for n, w in mp_enabled:
        _check_name(n, registry, f"{where}.plugins.multiPoint.enabled")
        idx = next((i for i, (m, _) in enumerate(multipoint) if m == n), None)
        if idx is None:
            multipoint.append((n, w))
        else:
            multipoint[idx] = (n, w)

    args: dict[str, dict[str, Any]] = {}
    for i, pc in enumerate(raw.get("pluginConfig") or []):
        if not isinstance(pc, dict) or not isinstance(pc.get("name"), str):
            raise ConfigError(f"{where}.pluginConfig[{i}]: needs a 'name'")
        _check_name(pc["name"], registry, f"{where}.pluginConfig[{i}]")
        a = pc.get("args") or {}
        if not isinstance(a, dict):
            raise ConfigError(f"{where}.pluginConfig[{i}].args: must be a mapping")
        args[pc["name"]] = {k: v for k, v in a.items() if k not in ("apiVersion", "kind")}

    instances: dict[str, Plugin] = {}

    def instance(n: str) -> Plugin | None:
        cls = registry.get(n)
        if cls is None:
            return None
        if n not in instances:
            try:
                instances[n] = cls(args.get(n))
            except ConfigError as exc:
                raise ConfigError(f"{where}.pluginConfig[{n}]: {exc}") from None
        return instances[n]

    points: dict[str, list[str]] = {}
    weights: dict[str, int] = {}
    mp_weight = dict(multipoint)
    for point in POINTS:
        enabled, disabled = _plugin_set(plugins_raw.get(point), f"{where}.plugins.{point}")
        for n, _ in enabled:
            _check_name(n, registry, f"{where}.plugins.{point}.enabled")
        specific = [n for n, _ in enabled]
        from_mp = [n for n, _ in multipoint if n not in specific and "*" not in disabled and n not in disabled
                   and _implements(registry.get(n), n, point)]
        overrides = [n for n in specific if n in mp_weight]
        only_specific = [n for n in specific if n not in mp_weight]
        points[point] = [*overrides, *from_mp, *only_specific]
        if point == "score":
            for n in points[point]:
                w = dict(enabled).get(n) or mp_weight.get(n) or 1
                weights[n] = w

    pct = raw.get("percentageOfNodesToScore")
    if pct is not None and (not isinstance(pct, int) or not 0 <= pct <= 100):
        raise ConfigError(f"{where}.percentageOfNodesToScore: must be an integer 0..100, got {pct!r}")
    built: dict[str, list[Plugin]] = {}
    for point, names in points.items():
        py = _PY_POINT.get(point)
        if py is None:
            continue
        built[point] = [p for n in names if (p := instance(n)) is not None]
    enabled_names = sorted({n for names in points.values() for n in names})
    return Profile(
        scheduler_name=name,
        plugins=built,
        weights=weights,
        percentage_of_nodes_to_score=pct,
        enabled=enabled_names,
        post_filters=list(points.get("postFilter", [])),
    )


def default_config() -> SchedulerConfig:
    return SchedulerConfig(profiles={DEFAULT_SCHEDULER: build_profile({}, "profiles[0]")})


def parse_config(raw: Any, source: str = "<config>") -> SchedulerConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a KubeSchedulerConfiguration mapping")
    kind, api = raw.get("kind"), raw.get("apiVersion")
    if kind != "KubeSchedulerConfiguration":
        raise ConfigError(f"{source}: kind must be KubeSchedulerConfiguration, got {kind!r}")
    if api not in ("kubescheduler.config.k8s.io/v1", None):
        raise ConfigError(f"{source}: apiVersion {api!r} is not supported; use kubescheduler.config.k8s.io/v1")
    pct = raw.get("percentageOfNodesToScore", 0) or 0
    if not isinstance(pct, int) or not 0 <= pct <= 100:
        raise ConfigError(f"{source}: percentageOfNodesToScore must be an integer 0..100, got {pct!r}")
    profiles_raw = raw.get("profiles") or [{}]
    if not isinstance(profiles_raw, list):
        raise ConfigError(f"{source}: profiles must be a list")
    profiles: dict[str, Profile] = {}
    for i, pr in enumerate(profiles_raw):
        if not isinstance(pr, dict):
            raise ConfigError(f"{source}: profiles[{i}] must be a mapping")
        prof = build_profile(pr, f"{source}: profiles[{i}]")
        if prof.scheduler_name in profiles:
            raise ConfigError(f"{source}: profiles[{i}]: duplicate schedulerName {prof.scheduler_name!r}")
        profiles[prof.scheduler_name] = prof
    extenders = raw.get("extenders") or []
    if not isinstance(extenders, list):
        raise ConfigError(f"{source}: extenders must be a list")
    initial, maximum = raw.get("podInitialBackoffSeconds", 1), raw.get("podMaxBackoffSeconds", 10)
    if not isinstance(initial, int) or isinstance(initial, bool) or initial <= 0:
        raise ConfigError(f"{source}: podInitialBackoffSeconds must be an integer greater than 0, got {initial!r}")
    if not isinstance(maximum, int) or isinstance(maximum, bool) or maximum < initial:
        raise ConfigError(f"{source}: podMaxBackoffSeconds must be an integer no less than podInitialBackoffSeconds"
                          f" ({initial}), got {maximum!r}")
    return SchedulerConfig(profiles=profiles, percentage_of_nodes_to_score=pct, extenders=extenders, source=source,
                           pod_initial_backoff_seconds=initial, pod_max_backoff_seconds=maximum)


def load_config(path: str | None, embedded: dict | None = None, policy_path: str | None = None) -> SchedulerConfig:
    """Read `--config FILE`, or a legacy `--policy-config-file FILE` (kind: Policy, YAML or JSON; see
    `policy.parse_policy`), not both; without either, a config embedded in the state (simulator export),
    else defaults."""
    if policy_path is not None:
        if path is not None:
            raise ConfigError(f"{policy_path}: a Policy file and a KubeSchedulerConfiguration ({path}) cannot be "
                              "used together; give one of them")
        return parse_policy(_read_yaml(policy_path), policy_path)
    if path is None:
        return parse_config(embedded, "<state schedulerConfig>") if embedded else default_config()
    return parse_config(_read_yaml(path), path)


def parse_policy(raw: Any, source: str = "<policy>") -> SchedulerConfig:
    """A legacy `kind: Policy` mapping → its SchedulerConfig (`policy.translate_policy`, read as a --config)."""
    from .policy import translate_policy

    return parse_config(translate_policy(raw, source), source)


def _read_yaml(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
        return yaml.safe_load(text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from None
