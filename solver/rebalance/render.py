"""A plan (from `plan.plan_rebalance`, with `apply` when carried out) as rich tables on the console: a summary line,
before → after measures, the moves, the pending pods (--goal admit), what never moves, dropped steps, warnings,
and the apply outcome or what the dry run simulated."""

from __future__ import annotations

from typing import Any

SHOWN = 200  # rows of a table; -o json has them all
MEASURES = [("non-empty nodes", "non_empty_nodes"), ("peak utilisation %", "peak_utilisation_percent"),
            ("utilisation spread %", "utilisation_spread_percent"), ("violations", "violations"),
            ("pending unplaced", "pending_unplaced"), ("overutilised nodes", "overutilised_nodes"),
            ("underutilised nodes", "underutilised_nodes")]


def render_table(plan: dict[str, Any]) -> None:
    from kplace.solver.output import console as make_console

    console = make_console()
    console.print(f"[bold]goal[/bold] {plan['goal']}  ·  {len(plan['moves'])} move(s) in {len(plan['waves'])} "
                  f"wave(s)  ·  {sum(1 for p in plan['placements'] if p['node'])} pending pod(s) placed  ·  "
                  f"model {plan['model']['status']}  ·  {plan['seconds']}s")
    console.print(_measures(plan))
    if plan["moves"]:
        console.print(_moves(plan["moves"]))
        if len(plan["moves"]) > SHOWN:
            console.print(f"... {len(plan['moves']) - SHOWN} more (-o json for all)")
    if plan["goal"] == "admit" and plan["placements"]:
        console.print(_pending(plan["placements"]))
    for line in _notes(plan):
        console.print(line)


def _measures(plan: dict[str, Any]):
    from rich.table import Table

    t = Table(title="before → after", title_justify="left")
    t.add_column("metric")
    t.add_column("before", justify="right")
    t.add_column("after", justify="right")
    b, a = plan["before"], plan["after"]
    for label, key in MEASURES:
        if key in b:
            t.add_row(label, str(b[key]), str(a[key]))
    t.add_row("cpu stdev %", str(b["utilisation_percent"]["cpu"]["stdev"]),
              str(a["utilisation_percent"]["cpu"]["stdev"]))
    return t


def _moves(moves: list[dict[str, Any]]):
    from rich.table import Table

    mt = Table(title="moves", title_justify="left")
    admits = any(m["admits"] for m in moves)
    for c in ("wave", "pod", "from", "to", *(["admits"] if admits else [])):
        mt.add_column(c, overflow="fold")
    for m in moves[:SHOWN]:
        mt.add_row(str(m["wave"]), m["pod"], m["from"], m["to"], *([", ".join(m["admits"])] if admits else []))
    return mt


def _pending(placements: list[dict[str, Any]]):
    from rich.table import Table

    pt = Table(title="pending pods", title_justify="left")
    for c in ("pod", "node", "wave"):
        pt.add_column(c, overflow="fold")
    for p in placements[:SHOWN]:
        pt.add_row(p["pod"], p["node"] or "[red]stays pending[/]", str(p["wave"] or ""))
    return pt


def _notes(plan: dict[str, Any]) -> list[str]:
    """The lines after the tables: never moved, dropped, warnings, then the apply outcome or the dry run's note."""
    out = []
    if plan["never_moved"]:
        out.append("never moved: " + ", ".join(f"{n} {r}" for r, n in plan["never_moved"].items()))
    out += [f"[yellow]dropped[/yellow] {d['pod']} {d['from']} → {d['to']}: {d['reason']}" for d in plan["dropped"]]
    out += [f"[yellow]warning[/yellow] {w}" for w in plan["warnings"]]
    if "apply" in plan:
        ap = plan["apply"]
        state = "completed" if ap["completed"] else f"STOPPED: {ap['stopped']}"
        out.append(f"apply: {state} ({ap['waves_done']} wave(s) done, {len(ap['events'])} action(s))")
    else:
        out.append(f"[dim]{plan['simulated']}[/dim]")
    return out
