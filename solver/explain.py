"""`kplace explain`: every filter plugin's verdict and every score plugin's score for one pod on each node.

All filter plugins run on all candidate nodes (no stop at the first failure). Scores are normalised over
the scored set: the feasible nodes (as kube does), or every candidate (`all`, as kube's plugin unit tests
do). `selected` is the node kube-scheduler would choose (it follows the greedy engine's sampling).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kplace.models.errors import InputError
from kplace.models.index import ClusterIndex

from .framework.config import SchedulerConfig
from .framework.plugin import Code, CycleState
from .framework.runtime import run_filters, run_pre_filter, run_scores
from .framework.state import ClusterState
from .greedy import GreedyScheduler


def explain_pod(
    index: ClusterIndex, config: SchedulerConfig, pod_key: str, candidates: str = "feasible"
) -> dict[str, Any]:
    pod = index.pod_by_key.get(pod_key)
    if pod is None:
        raise InputError(f"no pod {pod_key!r} in the state", obj="Pod " + pod_key)
    profile = config.profile_for(pod.spec.scheduler_name)
    if profile is None:
        raise InputError(f"pod uses schedulerName {pod.spec.scheduler_name!r}, which no profile handles",
                         obj="Pod " + pod_key, field="spec.schedulerName")
    state = ClusterState(index)
    if pod.node >= 0:
        state.forget(pod)  # explain a bound pod as if it were being scheduled again
    if candidates in ("feasible", "all"):
        nodes = index.tree_order
    else:
        names = [n.strip() for n in candidates.split(",") if n.strip()]
        unknown = [n for n in names if n not in index.node_id]
        if unknown:
            raise InputError(f"unknown node(s): {', '.join(unknown)}", field="--candidates")
        nodes = np.array([index.node_id[n] for n in names], dtype=np.int64)

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
    if pre.nodes is not None:
        outside = ~np.isin(nodes, pre.nodes)
        for n in nodes[outside].tolist():
            per_node[n]["filters"]["PreFilter"] = {
                "code": "UnschedulableAndUnresolvable", "reasons": [pre.absent_reason]}
    feasible_mask = out.code == 0
    if pre.nodes is not None:
        feasible_mask &= np.isin(nodes, pre.nodes)
    for i, n in enumerate(nodes.tolist()):
        per_node[n]["feasible"] = bool(feasible_mask[i])
    scored = nodes if candidates == "all" else nodes[feasible_mask]
    if len(scored):
        scores, totals = run_scores(profile, state, pod, cycle, scored)
        for i, n in enumerate(scored.tolist()):
            per_node[n]["scores"] = {name: int(v[i]) for name, v in scores.items()}
            per_node[n]["total"] = int(totals[i])

    # The node kube would pick: run the real greedy attempt on a fresh state.
    sched = GreedyScheduler(index, config)
    if pod.node >= 0:
        sched.state.forget(pod)
    attempt = sched.schedule_one(pod)
    selected = index.node_names[attempt.node] if attempt.node is not None else None
    result: dict[str, Any] = {"pod": pod_key, "selected": selected}
    if attempt.reason:
        result["message"] = attempt.reason
    result["nodes"] = list(per_node.values())
    return result


def render_explain(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    nodes = result["nodes"]
    filter_names = list(nodes[0]["filters"]) if nodes else []
    score_names = sorted({k for n in nodes for k in n["scores"]}, key=lambda k: k)
    t = Table(title=f"Pod {result['pod']}", title_justify="left")
    t.add_column("node")
    t.add_column("feasible")
    for f in filter_names:
        t.add_column(f, overflow="fold")
    for s in score_names:
        t.add_column(s, justify="right")
    t.add_column("total", justify="right")
    short = {"Success": "[green]ok[/]", "Skip": "-", "Unschedulable": "[red]U[/]",
             "UnschedulableAndUnresolvable": "[red]UU[/]"}
    for n in nodes:
        row = [("[bold]" + n["name"] + " *[/]") if n["name"] == result["selected"] else n["name"],
               "yes" if n["feasible"] else "no"]
        for f in filter_names:
            st = n["filters"].get(f, {"code": "Skip", "reasons": []})
            cell = short.get(st["code"], st["code"])
            if st["reasons"]:
                cell += " " + "; ".join(st["reasons"])
            row.append(cell)
        row += [str(n["scores"].get(s, "")) for s in score_names]
        row.append(str(n["total"]) if n["scores"] else "")
        t.add_row(*row)
    console.print(t)
    console.print(f"selected: [bold]{result['selected'] or '(none)'}[/]")
    if result.get("message"):
        console.print(f"[yellow]{result['message']}[/]", highlight=False)
