"""`kplace explain`: every filter plugin's verdict and every score plugin's score for one pod on each node.

The pod is explained against the state as given: other pending pods are not placed first (a bound pod is
explained as if it were being scheduled again). All filter plugins run on all candidate nodes (no stop at
the first failure). Scores are normalised over
the scored set: the feasible nodes (as kube does), or every candidate (`all`, as kube's plugin unit tests
do). `selected` is the node kube-scheduler would choose (it follows the greedy engine's sampling).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from kplace.models.errors import InputError
from kplace.models.index import ClusterIndex

from .framework.config import SchedulerConfig
from .framework.plugin import Code, CycleState
from .framework.runtime import internal_error, run_filters, run_pre_filter, run_scores
from .framework.state import ClusterState
from .greedy import GreedyScheduler

log = logging.getLogger(__name__)


def explain_pod(
    index: ClusterIndex, config: SchedulerConfig, pod_key: str, candidates: str = "feasible",
    state: ClusterState | None = None,
) -> dict[str, Any]:
    """The pod against `state` (the running cluster when None; a bound pod is taken out first)."""
    pod = index.pod_by_key.get(pod_key)
    if pod is None:
        raise InputError(f"no pod {pod_key!r} in the state", obj="Pod " + pod_key)
    profile = config.profile_for(pod.spec.scheduler_name)
    if profile is None:
        raise InputError(f"pod uses schedulerName {pod.spec.scheduler_name!r}, which no profile handles",
                         obj="Pod " + pod_key, field="spec.schedulerName")
    state = ClusterState(index) if state is None else state
    if state.pod_node[pod.idx] >= 0:
        state.forget(pod)  # explain a placed pod as if it were being scheduled again
    if candidates in ("feasible", "all"):
        nodes = index.tree_order
    else:
        names = [n.strip() for n in candidates.split(",") if n.strip()]
        unknown = [n for n in names if n not in index.node_id]
        if unknown:
            raise InputError(f"unknown node(s): {', '.join(unknown)}", field="--candidates")
        nodes = np.array([index.node_id[n] for n in names], dtype=np.int64)

    try:
        return _explain(index, config, profile, state, pod, nodes, candidates)
    except Exception as exc:  # the pod's evaluation failed: say so, as the engines do, instead of a traceback
        log.exception("explaining pod %s failed", pod_key)
        return {"pod": pod_key, "selected": None, "message": internal_error(exc), "nodes": []}


def _explain(index: ClusterIndex, config: SchedulerConfig, profile, state: ClusterState, pod, nodes: np.ndarray,
             candidates: str) -> dict[str, Any]:
    pod_key = pod.key
    cycle = CycleState()
    pre = run_pre_filter(profile, state, pod, cycle)
    per_node: dict[int, dict[str, Any]] = {
        int(n): {"name": index.node_names[n], "feasible": False, "filters": {}, "scores": {}, "total": 0}
        for n in nodes
    }
    if pre.code != Code.SUCCESS:
        for entry in per_node.values():
            entry["filters"][pre.plugin] = {"code": Code(pre.code).label, "reasons": [pre.reason]}
        return {"pod": pod_key, "selected": None, "message": pre.reason, "nodes": list(per_node.values())}

    out = run_filters(profile, state, pod, cycle, nodes, pre.skipped, all_plugins=True)
    for plugin in profile.at("filter"):
        res = out.results.get(plugin.name)
        for i, n in enumerate(nodes.tolist()):
            entry = per_node[n]["filters"]
            if res is None:
                entry[plugin.name] = {"code": "Skip", "reasons": []}
            else:
                entry[plugin.name] = {"code": Code(int(res.code[i])).label, "reasons": res.reasons_of(i)}
    feasible_mask = out.code == 0
    if pre.nodes is not None:
        inside = np.isin(nodes, pre.nodes)
        for n in nodes[~inside].tolist():
            per_node[n]["filters"]["PreFilter"] = {
                "code": "UnschedulableAndUnresolvable", "reasons": [pre.absent_reason]}
        feasible_mask &= inside
    for i, n in enumerate(nodes.tolist()):
        per_node[n]["feasible"] = bool(feasible_mask[i])
    scored = nodes if candidates == "all" else nodes[feasible_mask]
    if len(scored):
        scores, totals = run_scores(profile, state, pod, cycle, scored)
        for i, n in enumerate(scored.tolist()):
            per_node[n]["scores"] = {name: int(v[i]) for name, v in scores.items()}
            per_node[n]["total"] = int(totals[i])

    # The node kube would pick: the real greedy attempt (filters and scores left the state unchanged).
    attempt = GreedyScheduler(index, config, state=state, keep_candidates=True).schedule_one(pod)
    selected = index.node_names[attempt.node] if attempt.node is not None else None
    result: dict[str, Any] = {"pod": pod_key, "selected": selected}
    if attempt.reason:
        result["message"] = attempt.reason
    if attempt.nominated:
        result["preemption"] = _preemption(index, attempt)
    result["nodes"] = list(per_node.values())
    return result


def _preemption(index: ClusterIndex, attempt) -> dict[str, Any]:
    """kube's preemption for the pod: the node it nominates, its victims, and every candidate its walk
    considered with kube's criteria (smaller is better, in order), best first."""
    ranked = sorted(attempt.candidates, key=lambda c: c.key())
    return {
        "node": index.node_names[attempt.node],
        "victims": [{"pod": v.key, "priority": v.priority, "pdb_violation": bad} for v, bad in attempt.evictions],
        "candidates": [{"node": index.node_names[c.node], "chosen": c.node == attempt.node,
                        "pdb_violations": len(c.violating), "highest_priority": max(v.priority for v in c.victims),
                        "priority_sum": sum(v.priority for v in c.victims), "victims": len(c.victims),
                        "pods": [v.key for v in c.victims]} for c in ranked],
    }


def explain_in_plan(index: ClusterIndex, config: SchedulerConfig, pod_key: str, plan, candidates: str = "feasible"
                    ) -> dict[str, Any]:
    """The pod's outcome in `plan`: its filters and scores on the plan's final state (every other placement made,
    every eviction done), which nodes the plan's other pods took from it (feasible alone, not in the plan) and by
    which pods, and beside it the pod alone against the running cluster."""
    from .measure import final_state

    alone = explain_pod(index, config, pod_key, candidates)
    placements = [(p.pod, p.node) for p in plan.placements if p.node is not None]
    in_plan = explain_pod(index, config, pod_key, candidates, state=final_state(index, plan))
    mine = next((p for p in plan.placements if p.pod == pod_key), None)
    by_node: dict[str, list[str]] = {}
    for key, node in placements:
        if key != pod_key:
            by_node.setdefault(node, []).append(key)
    feasible_alone = {n["name"] for n in alone["nodes"] if n["feasible"]}
    taken = {n["name"]: by_node.get(n["name"], []) for n in in_plan["nodes"]
             if not n["feasible"] and n["name"] in feasible_alone}
    victims = [{"pod": e.pod, "node": e.node, "priority": e.priority, "pdb_violation": e.pdb_violation}
               for e in plan.evictions if e.preemptor == pod_key]
    return {"pod": pod_key, "plan": {"node": mine.node if mine else None, "reason": mine.reason if mine else None,
                                     "engine": plan.engine, "victims": victims},
            "in_plan": in_plan, "taken_by_other_pods": taken, "alone": alone}


def render_in_plan(result: dict[str, Any], limit: int = 40) -> None:
    from kplace.solver.output import console as make_console
    from rich.table import Table

    console = make_console()
    outcome = result["plan"]
    where = f"on [bold]{outcome['node']}[/]" if outcome["node"] else f"[red]pending[/]: {outcome['reason'] or ''}"
    console.print(f"[bold]In the {outcome['engine']} plan[/], pod {result['pod']} is {where}", highlight=False)
    if result["taken_by_other_pods"]:
        t = Table(title="Nodes it fits alone that the plan's other pods took", title_justify="left")
        t.add_column("node", overflow="fold")
        t.add_column("pods the plan puts there", overflow="fold")
        for node, pods in list(result["taken_by_other_pods"].items())[:limit]:
            t.add_row(node, ", ".join(pods) or "(evictions or volumes)")
        console.print(t)
    if outcome["victims"] or result["alone"].get("preemption"):
        console.print(_victims_line(outcome, result["alone"].get("preemption")), highlight=False)
    console.print("[bold]On the plan's final state[/] (every other placement made):")
    render_explain(result["in_plan"], limit)
    console.print("[bold]Alone against the running cluster[/] (no other pending pod placed):")
    render_explain(result["alone"], limit)


def _names(victims: list[dict[str, Any]]) -> str:
    return ", ".join(f"{v['pod']} (priority {v['priority']}{', violates a PDB' if v['pdb_violation'] else ''})"
                     for v in victims) or "nothing"


def _victims_line(outcome: dict[str, Any], kube: dict[str, Any] | None) -> str:
    """What the plan evicted for the pod beside what kube, scheduling it alone now, would evict."""
    mine = f"The plan evicts {_names(outcome['victims'])} for it"
    if outcome["engine"] == "cpsat" and outcome["victims"]:
        mine += " (chosen with the window's other pods: fewest PDB violations, lowest highest priority, smallest " \
                "priority sum and fewest victims over the window)"
    if kube is None:
        return mine + "; kube-scheduler, scheduling it alone now, would evict nothing."
    return mine + f"; kube-scheduler, scheduling it alone now, would evict {_names(kube['victims'])} on {kube['node']}."


def render_preemption(preemption: dict[str, Any], limit: int) -> None:
    """kube's preemption candidates for the pod, best first, with its criteria."""
    from kplace.solver.output import console as make_console
    from rich.table import Table

    t = Table(title=f"Preemption: kube nominates {preemption['node']}, evicting {_names(preemption['victims'])}; "
                    "candidates by kube's criteria, best first", title_justify="left",
              caption="ties: the candidate whose highest-priority victims started latest, then the first in kube's "
                      "walk", caption_justify="left")
    for col in ("node", "PDB violations", "highest priority", "priority sum", "victims", "pods"):
        t.add_column(col, justify="left" if col in ("node", "pods") else "right", overflow="fold")
    for c in preemption["candidates"][:limit]:
        t.add_row(c["node"] + (" [bold]*[/]" if c["chosen"] else ""), str(c["pdb_violations"]),
                  str(c["highest_priority"]), str(c["priority_sum"]), str(c["victims"]), ", ".join(c["pods"]))
    make_console().print(t)


SHORT = {
    "TaintToleration": "Taint",
    "NodeAffinity": "NodeAff",
    "NodeResourcesFit": "Fit",
    "NodeResourcesBalancedAllocation": "Balanced",
    "ImageLocality": "Image",
    "InterPodAffinity": "PodAff",
    "PodTopologySpread": "Spread",
}
_CODE = {"Unschedulable": "U", "UnschedulableAndUnresolvable": "UU"}


def render_explain(result: dict[str, Any], limit: int = 40) -> None:
    """Two tables: each node's verdict with the failing plugins and kube's reasons, then the scores."""
    from kplace.solver.output import console as make_console
    from rich.table import Table

    console = make_console()
    nodes = sorted(result["nodes"], key=lambda n: (n["name"] != result["selected"], not n["feasible"],
                                                   -n["total"], n["name"]))
    t = Table(title=f"Filters for pod {result['pod']} (U: unschedulable, UU: unresolvable)", title_justify="left")
    t.add_column("node", overflow="fold")
    t.add_column("verdict")
    t.add_column("failing plugins", overflow="fold")
    for n in nodes[:limit]:
        failing = [f"{name} {_CODE.get(st['code'], st['code'])}: {'; '.join(st['reasons'])}"
                   for name, st in n["filters"].items() if st["code"] not in ("Success", "Skip")]
        verdict = "[green]feasible[/]" if n["feasible"] else "[red]rejected[/]"
        t.add_row(n["name"] + (" [bold]*[/]" if n["name"] == result["selected"] else ""), verdict,
                  "\n".join(failing) or "all passed")
    console.print(t)
    scored = [n for n in nodes if n["scores"]]
    if scored:
        names = list(scored[0]["scores"])
        t = Table(title="Scores (normalised 0-100, before weights) and weighted total", title_justify="left")
        t.add_column("node", overflow="fold")
        for name in names:
            t.add_column(SHORT.get(name, name), justify="right")
        t.add_column("total", justify="right")
        for n in scored[:limit]:
            t.add_row(n["name"], *(str(n["scores"][k]) for k in names), f"[bold]{n['total']}[/]")
        console.print(t)
    if len(nodes) > limit:
        console.print(f"... {len(nodes) - limit} more nodes (-o json for all)")
    if result.get("preemption"):
        render_preemption(result["preemption"], limit)
    console.print(f"selected: [bold]{result['selected'] or '(none)'}[/]")
    if result.get("message"):
        console.print(f"[yellow]{result['message']}[/]", highlight=False)
