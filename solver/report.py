"""Human-readable tables for plans (rich)."""

from __future__ import annotations

from collections import Counter

from kplace.models.plan import Plan

LEGEND = ("groups: sets of identical pods that share count variables; models: independent CP-SAT models (groups no "
          "rule ties together); objective: the last exact stage, named after it — placed: pods placed less pods "
          "evicted (weighted by priority when several), disruption: victims weighted by priority (lower is better), "
          "or the --objective goal; vs greedy: that figure minus greedy's; gap: distance to the proven bound; "
          "score measure: kube's scores of the window's pods on the plan's final state (docs/user-guide.md, Glossary); "
          "(deadline): decided after the wall-clock deadline, by greedy without a model")


def _objective_stage(window: dict) -> str | None:
    """The short name of the stage the window's objective is from: its last stage with an exact objective."""
    exact = [st["stage"] for st in window.get("stages", []) if "objective" in st and "surrogate" not in st]
    if not exact:
        return None
    name = exact[-1]
    return "disruption" if "disruption" in name else "placed" if "placed" in name else name


def render_plan(plan: Plan, limit: int = 50, wide: bool = False) -> None:
    """The plan as tables; `wide` (-o wide) lists every placement with its priority and volume bindings."""
    from kplace.solver.output import console as make_console
    from rich.table import Table

    console = make_console()
    s = plan.summary()
    moves = f"{len(plan.moves)} moves, " if plan.moves else ""
    console.print(f"[bold]{plan.engine}[/]: {s['placed']}/{s['pods']} pods placed, {s['unplaced']} unplaced, "
                  f"{moves}{s['evictions']} evictions, {s['seconds']:.3f}s")
    if plan.windows:
        t = Table(title="Windows (status of pods placed and the goal: OPTIMAL proved, FEASIBLE at least greedy's, "
                        "FALLBACK greedy's plan)",
                  title_justify="left")
        for c in ("#", "pods", "groups", "models", "status", "objective", "vs greedy", "gap", "score measure",
                  "vs greedy", "s"):
            t.add_column(c, justify="left" if c == "status" else "right")
        for i, w in enumerate(plan.windows):
            obj, bound, greedy = w["objective"], w["bound"], w["greedy_objective"]
            no_model = w["status"] == "FALLBACK" or bound is None  # greedy's plan, or no model (the deadline)
            gap = "-" if no_model else f"{abs(bound - obj) / max(1.0, abs(bound)):.2%}"
            delta = "-" if no_model else f"{obj - greedy:+g}"
            m = w.get("measure")
            measure = f"{m['cpsat']:,}" if m else "-"
            m_delta = f"{m['cpsat'] - m['greedy']:+,}" if m else "-"
            stage = _objective_stage(w)
            status = w["status"] + (" (deadline)" if w.get("deadline") else "")
            t.add_row(str(i), str(w["pods"]), str(w["groups"]), str(w["components"]), status,
                      "-" if obj is None else f"{obj:g}" + (f" ({stage})" if stage and not no_model else ""),
                      delta, gap, measure, m_delta,
                      f"{w['seconds']:.2f}")
        console.print(t)
        console.print(f"[dim]{LEGEND}[/]", highlight=False)
    t = Table(title="Placements", title_justify="left")
    t.add_column("pod", overflow="fold")  # identifiers are never cut
    t.add_column("node", overflow="fold")
    if wide:
        t.add_column("priority", justify="right")
        t.add_column("volumes", overflow="fold")
    t.add_column("reason", overflow="fold")
    shown = plan.placements if wide else plan.placements[:limit]
    for p in shown:
        node = (p.node or "[red]-[/]") + (" (preempted)" if p.nominated else "")
        extra = [str(p.priority), ", ".join(f"{k}={v}" for k, v in p.volume_bindings.items())] if wide else []
        t.add_row(p.pod, node, *extra, p.reason or "")
    console.print(t)
    if len(plan.placements) > len(shown):
        console.print(f"... {len(plan.placements) - len(shown)} more (-o wide or -o json for all)")
    unplaced = Counter(p.reason for p in plan.placements if p.node is None)
    if unplaced:
        t = Table(title="Unplaced pods by reason", title_justify="left")
        t.add_column("pods", justify="right")
        t.add_column("reason", overflow="fold")
        for reason, n in unplaced.most_common():
            t.add_row(str(n), reason or "")
        console.print(t)
    if plan.evictions:
        t = Table(title="Evictions (preemption)", title_justify="left")
        for c in ("pod", "node", "for", "PDB violated"):
            t.add_column(c, overflow="fold")
        for e in plan.evictions:
            t.add_row(e.pod, e.node, e.preemptor, "yes" if e.pdb_violation else "")
        console.print(t)
    if plan.moves:
        t = Table(title="Moves (waves run one after the other, before the placements and evictions)",
                  title_justify="left")
        for c in ("wave", "pod", "from", "to", "admits"):
            t.add_column(c, overflow="fold")
        for m in plan.moves:
            t.add_row(str(m.wave), m.pod, m.from_node, m.to, ", ".join(m.admits))
        console.print(t)
    for w in plan.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)


def render_violations(violations: list, limit: int = 100) -> None:
    """The verifier's violations as a table, or the line saying the plan verified."""
    from kplace.solver.output import console as make_console
    from rich.table import Table

    console = make_console()
    if not violations:
        console.print("plan verified: no violations")
        return
    t = Table(title=f"{len(violations)} violation(s)", title_justify="left")
    for c in ("pod", "node", "rule"):
        t.add_column(c, overflow="fold")
    t.add_column("message", overflow="fold")
    for v in violations[:limit]:
        t.add_row(v.pod, v.node or "-", v.rule, v.message)
    console.print(t)
    if len(violations) > limit:
        console.print(f"... {len(violations) - limit} more (-o json for all)")
