"""Every figure `kplace compare` shows, computed from a verified plan and the state — never from an engine's
own bookkeeping — so that both engines are measured by the same code.

The final state of a plan is the input state, minus the pods the plan evicts, plus every placement
(`final_state`). From it:

- **placed**: pods placed, in total and per priority; pods left pending grouped by reason (kube's FitError text
  with the node counts taken out, so "3 Insufficient cpu" and "5 Insufficient cpu" are one reason).
- **nodes**: nodes with at least one pod; nodes that were empty and now hold a pod (`pack` minimises those).
- **allocation**: per resource (cpu, memory, every extended resource, and the pod count), over the nodes that
  have some of it allocatable, the mean, standard deviation and maximum of requested / allocatable (numpy).
- **fragmentation**: for each of the most common pending pod shapes (request vectors), how many more such
  pods would still fit by resources and pod slots alone, summed over schedulable nodes (Σ_n min_r ⌊free/req⌋).
- **soft constraints**, over the pods the plan places:
  - preferred node affinity: Σ weight of preferred terms the pod's node matches, out of Σ weight of all terms;
  - preferred pod affinity (anti-affinity): Σ weight of terms for which some other pod (no pod) matching the
    term is in the pod's topology domain in the final state, out of Σ weight;
  - ScheduleAnyway spread: per distinct constraint (selector, namespace, topology key) of placed pods, the skew
    max − min of matching pods over the domains of the nodes that carry the key (and match the pod's node
    selector / required node affinity, nodeAffinityPolicy Honor, kube's default); reported as the sum over
    constraints of the excess over maxSkew, and the largest skew;
  - PreferNoSchedule: taints on a placed pod's node that the pod does not tolerate (and how many pods).
- **score**: the plan's score measure (`solver.measure`: each placed pod scored by the profile as if it were
  scheduled last into the final state), in total, per plugin and per pod. Large plans score an evenly spaced
  sample of `score_limit` placed pods; `pods_scored` says how many, and the totals are then null.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.plan import Plan
from kplace.models.selectors import Selector, node_term_matches
from kplace.models.tolerations import tolerated_by_any

from ..framework.config import SchedulerConfig
from ..framework.state import ClusterState
from ..measure import final_state, measure, sample
from ..plugins.interpodaffinity.terms import pod_terms, resolve_namespaces
from ..plugins.podtopologyspread.spread import node_affinity_mask

SCORE_LIMIT = 3000  # placed pods scored per plan; beyond that an evenly spaced sample
SHAPES = 3  # most common pending pod shapes for fragmentation


# --- the final state (`measure.final_state`) ------------------------------------------------------------------


def placed_pods(index: ClusterIndex, plan: Plan) -> list[tuple[PodInfo, int]]:
    return [(index.pod_by_key[p.pod], index.node_id[p.node]) for p in plan.placements if p.node is not None]


# --- placed and pending ---------------------------------------------------------------------------------------

_COUNT = re.compile(r"^\d+ ")
_SEP = re.compile(r"[,;] ")


def _strip_counts(text: str) -> str:
    head, sep, rest = text.partition(" nodes are available: ")
    if not sep or not head.startswith("0/"):
        return text.strip()
    parts = [_COUNT.sub("", part.strip()) for part in _SEP.split(rest.strip().rstrip("."))]
    return "; ".join(sorted({p.rstrip(".") for p in parts if p}))


def reason_group(reason: str | None) -> str:
    """kube's FitError text without node counts: `0/5 nodes are available: 3 Insufficient cpu, 2 X.` → `Insufficient
    cpu; X`, and what PostFilter added (`no new claims to deallocate, preemption: ...`, likewise) after ` | `.
    Other texts are kept as they are."""
    if not reason:
        return "(no reason given)"
    main, sep, post = reason.partition(". ")
    out = _strip_counts(main)
    if not sep or not main.startswith("0/"):
        return _strip_counts(reason)
    head, found, pre = post.partition("preemption: ")
    parts = [h for h in [head.strip().rstrip(",").strip()] if h]
    if found:
        parts.append(f"preemption: {_strip_counts(pre)}")
    return f"{out} | {'; '.join(parts)}" if parts else out


def placement_metrics(plan: Plan) -> dict[str, Any]:
    by_prio: dict[int, dict[str, int]] = {}
    for p in plan.placements:
        slot = by_prio.setdefault(p.priority, {"placed": 0, "pending": 0})
        slot["placed" if p.node is not None else "pending"] += 1
    pending = Counter(reason_group(p.reason) for p in plan.placements if p.node is None)
    placed = sum(1 for p in plan.placements if p.node is not None)
    return {
        "pods": len(plan.placements),
        "placed": placed,
        "pending": len(plan.placements) - placed,
        "evictions": len(plan.evictions),
        "evictions_by_priority": {str(k): v for k, v in sorted(Counter(e.priority for e in plan.evictions).items(),
                                                               reverse=True)},
        "pdb_violations": sum(e.pdb_violation for e in plan.evictions),
        "moves": len(plan.moves),
        "by_priority": {str(k): v for k, v in sorted(by_prio.items(), reverse=True)},
        "pending_by_reason": dict(pending.most_common()),
    }


# --- nodes and allocation -------------------------------------------------------------------------------------


def node_metrics(index: ClusterIndex, state: ClusterState) -> dict[str, Any]:
    used = state.pod_count > 0
    return {"total": len(index.nodes), "in_use": int(used.sum()),
            "newly_used": int((used & (index.pod_count == 0)).sum())}


def allocation_ratios(index: ClusterIndex, state: ClusterState) -> dict[str, np.ndarray]:
    """Per resource, requested / allocatable over the nodes that have some of it allocatable (and `pods`)."""
    out: dict[str, np.ndarray] = {}
    for r, name in enumerate(index.resources):
        alloc = index.alloc[:, r]
        has = alloc > 0
        if has.any():
            out[name] = state.requested[has, r] / alloc[has]
    has = index.max_pods > 0
    if has.any():
        out["pods"] = state.pod_count[has] / index.max_pods[has]
    return out


def allocation_metrics(index: ClusterIndex, state: ClusterState) -> dict[str, dict[str, float]]:
    return {name: {"nodes": len(ratio), "mean": round(float(ratio.mean()), 4), "std": round(float(ratio.std()), 4),
                   "max": round(float(ratio.max()), 4)}
            for name, ratio in allocation_ratios(index, state).items()}


# --- fragmentation --------------------------------------------------------------------------------------------


def pending_shapes(index: ClusterIndex, k: int = SHAPES) -> list[tuple[tuple[int, ...], int]]:
    """The k most common request vectors among the input's pending pods, with their counts."""
    shapes = Counter(tuple(int(x) for x in index.pod_req[p.idx]) for p in index.pending)
    return shapes.most_common(k)


def shape_label(index: ClusterIndex, shape: tuple[int, ...]) -> str:
    parts = []
    for r, v in zip(index.resources, shape, strict=True):
        if v:
            if r == "cpu":
                parts.append(f"cpu={v}m")
            elif r in ("memory", "ephemeral-storage"):
                parts.append(f"{r}={v / 2**20:g}Mi")
            else:
                parts.append(f"{r}={v}")
    return ",".join(parts) or "best-effort"


def fragmentation_metrics(index: ClusterIndex, state: ClusterState,
                          shapes: list[tuple[tuple[int, ...], int]]) -> list[dict[str, Any]]:
    free = state.free()
    slots = np.maximum(index.max_pods - state.pod_count, 0)
    schedulable = ~index.unschedulable
    out = []
    for shape, count in shapes:
        req = np.array(shape, dtype=np.int64)
        fit = slots.copy()
        for r in np.flatnonzero(req > 0).tolist():
            fit = np.minimum(fit, np.maximum(free[:, r], 0) // req[r])
        fit = np.where(schedulable, fit, 0)
        out.append({"shape": shape_label(index, shape), "pending_in_input": count, "would_fit": int(fit.sum()),
                    "nodes_with_room": int((fit > 0).sum())})
    return out


# --- soft constraints -----------------------------------------------------------------------------------------


def _domain_count(index: ClusterIndex, counts: np.ndarray, key: str, node: int) -> int:
    """Pods counted in `counts` (per node) within `node`'s domain of topology `key`."""
    ids, _ = index.label_column(key)
    if ids[node] < 0:
        return 0
    return int(counts[ids == ids[node]].sum())


def soft_metrics(index: ClusterIndex, state: ClusterState, placed: list[tuple[PodInfo, int]]) -> dict[str, Any]:
    na = {"satisfied": 0, "total": 0, "pods": 0}
    pa = {"satisfied": 0, "total": 0, "pods": 0}
    anti = {"satisfied": 0, "total": 0, "pods": 0}
    pns = {"taints": 0, "pods": 0}
    spread: dict[tuple, dict[str, Any]] = {}
    for pod, n in placed:
        aff = pod.spec.affinity
        if aff and aff.node_affinity and aff.node_affinity.preferred_during_scheduling_ignored_during_execution:
            na["pods"] += 1
            for t in aff.node_affinity.preferred_during_scheduling_ignored_during_execution:
                na["total"] += t.weight
                if node_term_matches(t.preference, index.node_labels[n], index.node_names[n]):
                    na["satisfied"] += t.weight
        terms = pod_terms(index, pod)
        for preferred, acc, want in ((terms.preferred_affinity, pa, True), (terms.preferred_anti, anti, False)):
            if not preferred:
                continue
            acc["pods"] += 1
            for t in preferred:
                acc["total"] += t.weight
                names = resolve_namespaces(index, t)
                others = _domain_count(index, state.matching_counts_view(names, t.selector), t.topology_key, n)
                if t.selector.matches(pod.labels) and (names is None or pod.namespace in names):
                    others -= 1  # the pod itself does not satisfy its own term
                if (others > 0) == want:
                    acc["satisfied"] += t.weight
        taints = [t for t in index.node_taints[n] if t.effect == "PreferNoSchedule"
                  and not tolerated_by_any(pod.tolerations, t)]
        if taints:
            pns["taints"] += len(taints)
            pns["pods"] += 1
        for c in pod.spread_constraints:
            if c.when_unsatisfiable != "ScheduleAnyway":
                continue
            extra = {k: pod.labels[k] for k in c.match_label_keys if k in pod.labels}
            sel = Selector(c.label_selector, extra) if c.label_selector is not None else Selector(None)
            policy = c.node_affinity_policy or "Honor"
            key = (pod.namespace, sel, c.topology_key, c.max_skew,
                   _affinity_signature(pod) if policy == "Honor" else None)
            if key not in spread:
                spread[key] = {"pod": pod, "sel": sel, "c": c, "honor": policy == "Honor"}
    skews = []
    for (ns, sel, tkey, max_skew, _), info in spread.items():
        ids, _vals = index.label_column(tkey)
        eligible = ids >= 0
        if info["honor"]:
            eligible &= node_affinity_mask(index, info["pod"])
        if not eligible.any():
            continue
        counts = state.matching_counts_view(frozenset([ns]), sel)
        dom = ids[eligible]
        per_domain = np.bincount(dom, weights=counts[eligible], minlength=int(dom.max()) + 1)[np.unique(dom)]
        skew = int(per_domain.max() - per_domain.min())
        skews.append((skew, max_skew))
    spread_out = {"constraints": len(skews), "excess": sum(max(0, s - m) for s, m in skews),
                  "violated": sum(1 for s, m in skews if s > m), "max_skew": max((s for s, _ in skews), default=0)}
    return {"node_affinity": na, "pod_affinity": pa, "pod_anti_affinity": anti, "schedule_anyway_spread": spread_out,
            "prefer_no_schedule": pns}


def _affinity_signature(pod: PodInfo) -> str:
    aff = pod.spec.affinity
    na = aff.node_affinity.model_dump_json() if aff and aff.node_affinity else ""
    return f"{sorted(pod.spec.node_selector.items())}|{na}"


# --- score ----------------------------------------------------------------------------------------------------


def score_metrics(index: ClusterIndex, config: SchedulerConfig, state: ClusterState,
                  placed: list[tuple[PodInfo, int]], limit: int = SCORE_LIMIT) -> dict[str, Any]:
    """The plan's score measure (`solver.measure`) in total, per plugin and per pod. Plans placing more than
    `limit` pods are measured on an evenly spaced sample of them (the totals are then null)."""
    scored = sample(placed, limit)
    m = measure(config, state, scored)
    whole = len(scored) == len(placed)
    return {"total": m.total if whole else None, "mean_per_pod": round(m.mean, 3),
            "per_plugin": {k: v if whole else None for k, v in sorted(m.per_plugin.items())},
            "per_plugin_mean": {k: round(v / m.pods, 3) if m.pods else 0.0 for k, v in sorted(m.per_plugin.items())},
            "pods_scored": m.pods, "pods_placed": len(placed)}


# --- CP-SAT's own figures -------------------------------------------------------------------------------------


def solver_metrics(plan: Plan) -> dict[str, Any] | None:
    """CP-SAT's objective, proven bound and gap (summed over windows, final stage: the score, or the goal with
    the score), the placed stage's objective and bound (weighted by priority level as the model is; in pods
    when every window pod has one priority), and the window statuses. None for a greedy plan. Windows the deadline
    decided without a model have no objective or bound: the sums are over the others (`unmodelled` counts them),
    and the run has no bound or gap then (None)."""
    if not plan.windows:
        return None
    modelled = [w for w in plan.windows if w.get("bound") is not None]
    unmodelled = len(plan.windows) - len(modelled)
    obj = sum(float(w.get("objective", 0)) for w in modelled)
    bound = sum(float(w["bound"]) for w in modelled)
    greedy = sum(float(w.get("greedy_objective", 0)) for w in modelled)
    statuses = Counter(w.get("status", "?") for w in plan.windows)
    placed_obj = placed_bound = 0.0
    for w in plan.windows:
        if w.get("status") == "FALLBACK":
            continue
        o, b = _placed_stage(w.get("stages", []))
        placed_obj += o
        placed_bound += b
    return {
        "objective": obj, "bound": None if unmodelled else bound, "greedy_objective": greedy,
        "gap": None if unmodelled else round(abs(bound - obj) / max(1.0, abs(bound)), 6), "unmodelled": unmodelled,
        "placed_objective": placed_obj, "placed_bound": placed_bound,
        "windows": len(plan.windows), "statuses": dict(sorted(statuses.items())),
    }


def _placed_stage(stages: list[dict[str, Any]]) -> tuple[float, float]:
    """Σ over the window's components of the last solve of the placed stage(s) (objective, bound)."""
    comps: list[list[dict[str, Any]]] = []
    prev_placed = False
    for s in stages:
        is_placed = s["stage"].startswith("placed")
        full = s["stage"].endswith("(full domains)")
        if is_placed and not prev_placed and not full:
            comps.append([])
        if comps:
            comps[-1].append(s)
        prev_placed = is_placed
    obj = bound = 0.0
    for comp in comps:
        use = [s for s in comp if s["stage"].startswith("placed") and "objective" in s]
        full = [s for s in use if s["stage"].endswith("(full domains)")]
        use = full or use
        # a per-priority split has one stage per level; the weights are then 1 per level
        obj += sum(float(s["objective"]) for s in use)
        bound += sum(float(s["bound"]) for s in use)
    return obj, bound


# --- all of it ------------------------------------------------------------------------------------------------


def plan_metrics(index: ClusterIndex, config: SchedulerConfig, plan: Plan,
                 shapes: list[tuple[tuple[int, ...], int]] | None = None, score_limit: int = SCORE_LIMIT,
                 state: ClusterState | None = None) -> dict[str, Any]:
    """Every figure for one verified plan (see the module doc)."""
    state = state or final_state(index, plan)
    placed = placed_pods(index, plan)
    shapes = pending_shapes(index) if shapes is None else shapes
    return {
        "placement": placement_metrics(plan),
        "nodes": node_metrics(index, state),
        "allocation": allocation_metrics(index, state),
        "fragmentation": fragmentation_metrics(index, state, shapes),
        "soft": soft_metrics(index, state, placed),
        "score": score_metrics(index, config, state, placed, score_limit),
        "solver": solver_metrics(plan),
    }


def plan_diff(greedy: Plan, cpsat: Plan) -> dict[str, Any]:
    """Pods placed by one engine and not the other, and pods both placed on different nodes."""
    g = {p.pod: p for p in greedy.placements}
    c = {p.pod: p for p in cpsat.placements}
    only_g = sorted(k for k, p in g.items() if p.node is not None and (k not in c or c[k].node is None))
    only_c = sorted(k for k, p in c.items() if p.node is not None and (k not in g or g[k].node is None))
    moved = sorted(({"pod": k, "greedy": p.node, "cpsat": c[k].node} for k, p in g.items()
                    if p.node is not None and k in c and c[k].node is not None and c[k].node != p.node),
                   key=lambda d: d["pod"])
    same = sum(1 for k, p in g.items() if p.node is not None and k in c and c[k].node == p.node)
    evicted_g = {e.pod for e in greedy.evictions}
    evicted_c = {e.pod for e in cpsat.evictions}
    return {"placed_only_by_greedy": only_g, "placed_only_by_cpsat": only_c, "different_node": moved,
            "same_node": same, "evicted_only_by_greedy": sorted(evicted_g - evicted_c),
            "evicted_only_by_cpsat": sorted(evicted_c - evicted_g), "preemptions": preemption_diff(greedy, cpsat)}


def preemption_diff(greedy: Plan, cpsat: Plan) -> list[dict[str, Any]]:
    """Per pod that preempts in either plan and not identically in both: where each engine put it and which
    victims (with their priorities and PDB violations) each evicted for it."""
    def by_preemptor(plan: Plan) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for e in plan.evictions:
            out.setdefault(e.preemptor, []).append({"pod": e.pod, "node": e.node, "priority": e.priority,
                                                    "pdb_violation": e.pdb_violation})
        return out

    g, c = by_preemptor(greedy), by_preemptor(cpsat)
    nodes = {e: {p.pod: p.node for p in plan.placements} for e, plan in (("greedy", greedy), ("cpsat", cpsat))}
    out = []
    for pod in sorted({*g, *c}):
        sides = {"greedy": sorted(g.get(pod, []), key=lambda v: v["pod"]),
                 "cpsat": sorted(c.get(pod, []), key=lambda v: v["pod"])}
        if sides["greedy"] == sides["cpsat"] and nodes["greedy"].get(pod) == nodes["cpsat"].get(pod):
            continue
        out.append({"pod": pod, **{e: {"node": nodes[e].get(pod), "victims": v} for e, v in sides.items()}})
    return out
