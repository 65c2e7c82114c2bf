"""Running a profile's plugins for one pod, as kube-scheduler's framework runtime does.

Filters run in profile order; the first plugin that does not return Success decides a node's status,
and later plugins are not run on that node (`run_filters(all_plugins=True)` runs every plugin on every
node instead, for `kplace explain`). A PreFilter Skip turns off that plugin's Filter; a PreScore Skip
adds 0 for that plugin. `total(n) = Σ_p weight_p · normalize_p(score_p(n))`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from kplace.models.index import PodInfo

from .config import Profile
from .plugin import MAX_NODE_SCORE, Code, CycleState, FilterResult, Plugin
from .state import ClusterState


@dataclass
class PreFilterOutcome:
    code: Code = Code.SUCCESS
    plugin: str = ""
    reason: str = ""
    nodes: np.ndarray | None = None  # node ids to consider (None: all)
    skipped: set[str] = field(default_factory=set)
    narrowed_by: list[str] = field(default_factory=list)  # plugins that returned a node subset

    def candidates(self, nodes: np.ndarray) -> np.ndarray:
        """`nodes` (in their order) restricted to the PreFilter node subset, if any."""
        return nodes if self.nodes is None else nodes[np.isin(nodes, self.nodes)]

    @property
    def absent_reason(self) -> str:
        """Status kube gives nodes left out by a PreFilter node subset (UnschedulableAndUnresolvable)."""
        return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(self.narrowed_by))}]"


@dataclass
class FilterOutcome:
    """Per node of `nodes`: the deciding status, which plugin decided, and that plugin's reasons."""

    nodes: np.ndarray
    code: np.ndarray  # int8 Code per node
    plugin: np.ndarray  # index into `plugins` of the deciding plugin, -1 for success
    plugins: list[str]
    results: dict[str, FilterResult] = field(default_factory=dict)  # name → result over `nodes`

    def deciders(self, where: np.ndarray | None = None) -> list[int]:
        """The plugin indices that decided some node (of those `where` marks), ascending (a count per plugin:
        far cheaper than `np.unique` over every node)."""
        decided = self.plugin if where is None else self.plugin[where]
        return np.flatnonzero(np.bincount(decided + 1, minlength=len(self.plugins) + 1)[1:]).tolist()

    def reasons(self, i: int) -> list[str]:
        p = int(self.plugin[i])
        return [] if p < 0 else self.results[self.plugins[p]].reasons_of(i)

    def copy_nodes(self, i: np.ndarray, other: FilterOutcome, j: np.ndarray) -> None:
        """Nodes i take the statuses of nodes j of `other` (same profile): code, deciding plugin and reasons.
        The results' arrays may be shared with the plugins, so they are copied, not written in place."""
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        self.code[i], self.plugin[i] = other.code[j], other.plugin[j]
        for name in {*self.results, *other.results}:
            mine, theirs = self.results.get(name), other.results.get(name)
            code = mine.code.copy() if mine else np.zeros(len(self.nodes), dtype=np.int8)
            reasons = {t: m.copy() for t, m in mine.reasons} if mine else {}
            for m in reasons.values():
                m[i] = False
            code[i] = theirs.code[j] if theirs else 0
            for text, mask in theirs.reasons if theirs else ():
                if mask[j].any():
                    reasons.setdefault(text, np.zeros(len(self.nodes), dtype=bool))[i] = mask[j]
            self.results[name] = FilterResult(code, list(reasons.items()))


def run_pre_filter(profile: Profile, state: ClusterState, pod: PodInfo, cycle: CycleState) -> PreFilterOutcome:
    out = PreFilterOutcome()
    for plugin in profile.at("preFilter"):
        res = plugin.pre_filter(state, pod, cycle)
        if res.code == Code.SKIP:
            out.skipped.add(plugin.name)
            continue
        if res.code != Code.SUCCESS:
            out.code, out.plugin, out.reason = res.code, plugin.name, res.reason
            return out
        if res.node_subset is not None:
            subset = np.asarray(res.node_subset, dtype=np.int64)
            out.nodes = subset if out.nodes is None else np.intersect1d(out.nodes, subset)
            out.narrowed_by.append(plugin.name)
            if len(out.nodes) == 0:
                names = out.narrowed_by
                out.code, out.plugin = Code.UNSCHEDULABLE, plugin.name
                out.reason = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1 else
                              f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously")
                return out
    return out


def update_pre_filter(profile: Profile, state: ClusterState, pod: PodInfo, cycle: CycleState, skipped: set[str],
                      other: PodInfo, node: int, delta: int) -> None:
    """kube's RunPreFilterExtensionAddPod (delta +1) / RemovePod (−1) over the PreFilter plugins that did not
    skip."""
    for plugin in profile.at("preFilter"):
        if plugin.name not in skipped:
            plugin.update_pre_filter(state, pod, cycle, other, node, delta)


def pod_reading_filters(profile: Profile, skipped: set[str]) -> list:
    """The filters the pod runs (not `skipped`) that may read other pods (`Plugin.filter_reads`), NodeResourcesFit
    aside: callers decide it by arithmetic on the node's room."""
    return [p for p in profile.at("filter") if p.name not in skipped and p.name != "NodeResourcesFit" and p.reads_pods]


def inert(reading: list, state: ClusterState, pod: PodInfo, cycle: CycleState, others: list[PodInfo]) -> bool:
    """Whether adding or removing any of `others` on a node leaves the verdict there of each filter in `reading`
    (`pod_reading_filters`) as it is."""
    return not any(f.filter_reads(state, pod, cycle, q) for q in others for f in reading)


def run_filters(
    profile: Profile,
    state: ClusterState,
    pod: PodInfo,
    cycle: CycleState,
    nodes: np.ndarray,
    skipped: set[str],
    all_plugins: bool = False,
) -> FilterOutcome:
    plugins = profile.at("filter")
    names = [p.name for p in plugins]
    code = np.zeros(len(nodes), dtype=np.int8)
    decider = np.full(len(nodes), -1, dtype=np.int64)
    results: dict[str, FilterResult] = {}
    alive = np.arange(len(nodes))
    for k, plugin in enumerate(plugins):
        if plugin.name in skipped:
            continue
        if all_plugins:
            res = plugin.filter(state, pod, cycle, nodes)
            results[plugin.name] = res
            fail = (res.code != 0) & (decider < 0)
            code[fail], decider[fail] = res.code[fail], k
            continue
        if len(alive) == 0:
            break
        if len(alive) == len(nodes):  # nothing failed yet: the plugin's answer is already over `nodes`
            res = plugin.filter(state, pod, cycle, nodes)
            full = FilterResult(res.code.astype(np.int8, copy=False),
                                [(t, np.asarray(m, dtype=bool)) for t, m in res.reasons])
        else:
            res = plugin.filter(state, pod, cycle, nodes[alive])
            full = FilterResult(np.zeros(len(nodes), dtype=np.int8))
            full.code[alive] = res.code
            for text, mask in res.reasons:
                m = np.zeros(len(nodes), dtype=bool)
                m[alive] = mask
                full.reasons.append((text, m))
        results[plugin.name] = full
        failed = res.code != 0
        if failed.any():
            idx = alive[failed]
            code[idx], decider[idx] = res.code[failed], k
            alive = alive[~failed]
    return FilterOutcome(nodes=nodes, code=code, plugin=decider, plugins=names, results=results)


def run_scores(
    profile: Profile, state: ClusterState, pod: PodInfo, cycle: CycleState, nodes: np.ndarray, at: int | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Normalised (0..100) score per plugin over `nodes`, and the weighted total. With `at`, only position `at` of
    the arrays is wanted: a plugin whose score is node-local (`Plugin.node_local_score`) and not normalised is
    scored at nodes[at] alone (its other entries are 0); every other plugin still scores all `nodes`, which its
    normalisation needs."""
    per_plugin: dict[str, np.ndarray] = {}
    total = np.zeros(len(nodes), dtype=np.int64)
    for plugin in profile.at("score"):
        if not plugin.pre_score(state, pod, cycle, nodes):
            per_plugin[plugin.name] = np.zeros(len(nodes), dtype=np.int64)
            continue
        if at is not None and plugin.node_local_score and type(plugin).normalize is Plugin.normalize:
            norm = np.zeros(len(nodes), dtype=np.int64)
            norm[at] = np.asarray(plugin.score(state, pod, cycle, nodes[at : at + 1]), dtype=np.int64)[0]
        else:
            raw = np.asarray(plugin.score(state, pod, cycle, nodes), dtype=np.int64)
            norm = np.asarray(plugin.normalize(raw, pod, cycle), dtype=np.int64)
        if len(norm) and (norm.min() < 0 or norm.max() > MAX_NODE_SCORE):
            raise RuntimeError(f"plugin {plugin.name} returned a score outside [0, 100] for pod {pod.key}")
        per_plugin[plugin.name] = norm
        total += norm * profile.weights.get(plugin.name, 1)
    return per_plugin, total


def score_at(profile: Profile, state: ClusterState, pod: PodInfo, node: int,
             static: dict[str, int | None] | None = None) -> tuple[dict[str, int], int] | None:
    """`run_scores(...)[at]` for `pod` at `node`, normalised per plugin and weighted in total, when it needs no
    other node: every score plugin skips (PreScore), scores node-locally with no normalisation, or scores
    statically and the same on every node (`Plugin.static_score`: its normalisation over any nodes that pass the
    filters is then the normalisation of that one value). None when a plugin's value at `node` depends on which
    other nodes pass the filters. `static`: the static plugins' values (None: not the same everywhere) already
    found for pods identical to `pod` (`framework.identical`), filled as found."""
    one = np.array([node], dtype=np.int64)
    cycle, parts, total = CycleState(), {}, 0
    for plugin in profile.at("score"):
        if not plugin.pre_score(state, pod, cycle, one):
            parts[plugin.name] = 0
            continue
        if plugin.node_local_score and type(plugin).normalize is Plugin.normalize:
            value = int(np.asarray(plugin.score(state, pod, cycle, one), dtype=np.int64)[0])
        elif plugin.static_score:
            if static is not None and plugin.name in static:
                value = static[plugin.name]
            else:
                value = _static_value(plugin, state, pod, cycle)
                if static is not None:
                    static[plugin.name] = value
            if value is None:
                return None
        else:
            return None
        if not 0 <= value <= MAX_NODE_SCORE:
            raise RuntimeError(f"plugin {plugin.name} returned a score outside [0, 100] for pod {pod.key}")
        weight = profile.weights.get(plugin.name, 1)
        parts[plugin.name] = value * weight
        total += value * weight
    return parts, total


def _static_value(plugin: Plugin, state: ClusterState, pod: PodInfo, cycle: CycleState) -> int | None:
    """A static plugin's normalised score when it is the same on every node, else None."""
    raw = np.asarray(plugin.score(state, pod, cycle, state.index.tree_order), dtype=np.int64)
    if len(raw) and raw.min() != raw.max():
        return None
    return int(np.asarray(plugin.normalize(raw[:1] if len(raw) else np.zeros(1, np.int64), pod, cycle),
                          dtype=np.int64)[0])


def fit_error_message(n_nodes: int, reasons: Counter[str], prefilter_reason: str = "") -> str:
    """kube's FitError text: `0/N nodes are available: 3 Insufficient cpu, 2 node(s) had ... .`

    Each reason is counted over nodes; the "<count> <reason>" strings are sorted as strings (Go's
    sort.Strings), exactly as kube's FitError does.
    """
    if prefilter_reason:
        return f"0/{n_nodes} nodes are available: {prefilter_reason}."
    parts = sorted(f"{count} {text}" for text, count in reasons.items())
    return f"0/{n_nodes} nodes are available: {', '.join(parts)}."


def count_reasons(outcome: FilterOutcome) -> Counter[str]:
    """Per reason text, the failed nodes whose deciding plugin gives it (`FilterOutcome.reasons`, summed over nodes;
    counted per deciding plugin with its masks, not node by node)."""
    counts: Counter[str] = Counter()
    failed = outcome.code != 0
    for k in outcome.deciders(failed):
        decided = failed & (outcome.plugin == k)
        for text, mask in outcome.results[outcome.plugins[k]].reasons:
            c = int(np.count_nonzero(decided & mask))
            if c:
                counts[text] += c
    return counts


def internal_error(exc: BaseException) -> str:
    """The pending reason of a pod whose evaluation failed unexpectedly (the failure is logged with its traceback)."""
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return (f"kplace could not evaluate this pod ({type(exc).__name__}{': ' + text if text else ''}); it is left "
            "pending and the other pods are scheduled")
