"""The side-by-side table of `kplace compare` (rich), from the comparison's JSON data only."""

from __future__ import annotations

from typing import Any


def _pct(a: float, b: float) -> str:
    return f"{a}/{b} ({a / b:.0%})" if b else "-"


def _delta(g: float | None, c: float | None, better: str | None = "higher") -> str:
    """CP-SAT − greedy; green when better, red when worse, plain where neither is better (nodes in use)."""
    if g is None or c is None or g == c:
        return ""
    d = c - g
    text = f"{d:+,}" if isinstance(d, int) else f"{d:+,.4g}"
    if better is None:
        return text
    good = d > 0 if better == "higher" else d < 0
    return f"[{'green' if good else 'red'}]{text}[/]"


def rows(data: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(figure, greedy, cpsat, cpsat − greedy) rows, in display order ('' rows are section headers)."""
    g, c = data["greedy"], data["cpsat"]
    out: list[tuple[str, str, str, str]] = []

    def add(label, gv, cv, better="higher", fmt="{:,}"):
        gs = "-" if gv is None else fmt.format(gv)
        cs = "-" if cv is None else fmt.format(cv)
        out.append((label, gs, cs, _delta(gv, cv, better)))

    def section(title):
        out.append((f"[bold]{title}[/]", "", "", ""))

    section("pods")
    add("placed", g["placement"]["placed"], c["placement"]["placed"])
    add("pending", g["placement"]["pending"], c["placement"]["pending"], "lower")
    add("evictions", g["placement"]["evictions"], c["placement"]["evictions"], "lower")
    victims = sorted({*g["placement"].get("evictions_by_priority", {}), *c["placement"].get("evictions_by_priority",
                                                                                            {})}, key=int, reverse=True)
    for p in victims:
        add(f"  evicted, priority {p}", g["placement"]["evictions_by_priority"].get(p, 0),
            c["placement"]["evictions_by_priority"].get(p, 0), "lower")
    if c["placement"].get("moves"):
        add("  moves (running pods moved)", g["placement"].get("moves", 0), c["placement"]["moves"], "lower")
    if g["placement"].get("pdb_violations") or c["placement"].get("pdb_violations"):
        add("  evictions that violate a PDB", g["placement"]["pdb_violations"], c["placement"]["pdb_violations"],
            "lower")
    prios = sorted({*g["placement"]["by_priority"], *c["placement"]["by_priority"]}, key=int, reverse=True)
    for p in prios:
        gp = g["placement"]["by_priority"].get(p, {"placed": 0, "pending": 0})
        cp = c["placement"]["by_priority"].get(p, {"placed": 0, "pending": 0})
        add(f"  placed, priority {p}", gp["placed"], cp["placed"])
    reasons = sorted({*g["placement"]["pending_by_reason"], *c["placement"]["pending_by_reason"]})
    for r in reasons:
        add(f"  pending: {r}", g["placement"]["pending_by_reason"].get(r, 0),
            c["placement"]["pending_by_reason"].get(r, 0), "lower")
    section("nodes")
    add("in use", g["nodes"]["in_use"], c["nodes"]["in_use"], None)
    add("newly used", g["nodes"]["newly_used"], c["nodes"]["newly_used"], None)
    section("allocation (requested / allocatable over nodes)")
    for res in g["allocation"]:
        ga, ca = g["allocation"][res], c["allocation"].get(res, {})
        out.append((f"  {res} mean / std / max",
                    f"{ga['mean']:.3f} / {ga['std']:.3f} / {ga['max']:.3f}",
                    f"{ca['mean']:.3f} / {ca['std']:.3f} / {ca['max']:.3f}" if ca else "-", ""))
    section("fragmentation (more pods of a common pending shape that would still fit)")
    for gf, cf in zip(g["fragmentation"], c["fragmentation"], strict=True):
        add(f"  {gf['shape']} ({gf['pending_in_input']} pending)", gf["would_fit"], cf["would_fit"])
    section("soft constraints (weight satisfied / total)")
    for key, label in (("node_affinity", "preferred node affinity"), ("pod_affinity", "preferred pod affinity"),
                       ("pod_anti_affinity", "preferred pod anti-affinity")):
        gs, cs = g["soft"][key], c["soft"][key]
        out.append((f"  {label}", _pct(gs["satisfied"], gs["total"]), _pct(cs["satisfied"], cs["total"]), ""))
    gs, cs = g["soft"]["schedule_anyway_spread"], c["soft"]["schedule_anyway_spread"]
    add("  ScheduleAnyway skew over maxSkew (sum)", gs["excess"], cs["excess"], "lower")
    add("  ScheduleAnyway largest skew", gs["max_skew"], cs["max_skew"], "lower")
    add("  PreferNoSchedule taints not tolerated", g["soft"]["prefer_no_schedule"]["taints"],
        c["soft"]["prefer_no_schedule"]["taints"], "lower")
    section("score measure (each placed pod scored by the profile as if scheduled last into the final state)")
    add("  total", g["score"]["total"], c["score"]["total"])
    add("  mean per placed pod", g["score"]["mean_per_pod"], c["score"]["mean_per_pod"], fmt="{:,.1f}")
    gm, cm = g["score"].get("per_plugin_mean", {}), c["score"].get("per_plugin_mean", {})
    for plugin in sorted({*gm, *cm}):
        add(f"  {plugin} (weighted, per pod)", gm.get(plugin), cm.get(plugin), fmt="{:,.2f}")
    if g["score"]["pods_scored"] < g["score"]["pods_placed"] or c["score"]["pods_scored"] < c["score"]["pods_placed"]:
        out.append(("  pods scored (sample)", f"{g['score']['pods_scored']}/{g['score']['pods_placed']}",
                    f"{c['score']['pods_scored']}/{c['score']['pods_placed']}", ""))
    s = c.get("solver")
    if s:
        section("CP-SAT")
        if s["bound"] is None:
            out.append(("  pods placed / goal: objective (no bound)", "",
                        f"{s['objective']:,.0f} ({s['unmodelled']} windows decided by the deadline, no model)", ""))
        else:
            out.append(("  pods placed / goal: objective / bound (gap)", "",
                        f"{s['objective']:,.0f} / {s['bound']:,.0f} ({s['gap']:.2%})", ""))
        out.append(("  objective of greedy's plan", "", f"{s['greedy_objective']:,.0f}", ""))
        out.append(("  placed stage: objective / bound", "", f"{s['placed_objective']:,.0f} / {s['placed_bound']:,.0f}",
                    ""))
        out.append(("  windows", "", ", ".join(f"{n} {k}" for k, n in s["statuses"].items()), ""))
    section("cost")
    add("  wall time (engine + verifier), s", g["wall_seconds"], c["wall_seconds"], "lower", "{:,.2f}")
    add("  peak memory, MiB", g["memory"]["peak_mib"], c["memory"]["peak_mib"], "lower", "{:,.1f}")
    add("  memory increment over start, MiB", g["memory"]["increment_mib"], c["memory"]["increment_mib"], "lower",
        "{:,.1f}")
    return out


def render_comparison(data: dict[str, Any], limit: int | None = 20, console=None) -> None:
    """The side-by-side table; `limit` pods per list (None: all, for -o wide)."""
    from kplace.solver.output import console as make_console
    from rich.table import Table

    console = console or make_console()
    limit = limit if limit is not None else 10**9
    st = data["state"]
    console.print(f"[bold]kplace compare[/]: {st['nodes']} nodes, {st['pods_pending']} pending pods, "
                  f"{st['pods_bound']} bound; CP-SAT: time limit {data['options']['time_limit']} s, window "
                  f"{data['options']['window']}, objective {data['options']['objective']}")
    t = Table(title="greedy (kube-scheduler) vs CP-SAT", title_justify="left")
    t.add_column("figure", min_width=24)
    t.add_column("greedy", justify="right", no_wrap=True)
    t.add_column("CP-SAT", justify="right", no_wrap=True)
    t.add_column("CP-SAT − greedy", justify="right", no_wrap=True)
    for r in rows(data):
        t.add_row(*r)
    console.print(t)
    d = data["diff"]
    console.print(f"{len(d['placed_only_by_cpsat'])} pods placed only by CP-SAT, {len(d['placed_only_by_greedy'])} "
                  f"only by greedy, {len(d['different_node'])} on different nodes, {d['same_node']} on the same node.")
    for key, title in (("placed_only_by_cpsat", "placed only by CP-SAT"),
                       ("placed_only_by_greedy", "placed only by greedy")):
        if d[key]:
            shown = ", ".join(d[key][:limit])
            more = f" … (+{len(d[key]) - limit})" if len(d[key]) > limit else ""
            console.print(f"  {title}: {shown}{more}", highlight=False)
    if d["different_node"]:
        t = Table(title="pods on different nodes", title_justify="left")
        for col in ("pod", "greedy", "CP-SAT"):
            t.add_column(col, overflow="fold")
        for m in d["different_node"][:limit]:
            t.add_row(m["pod"], m["greedy"], m["cpsat"])
        console.print(t)
        if len(d["different_node"]) > limit:
            console.print(f"... {len(d['different_node']) - limit} more (-o wide or -o json for all)")
    if d.get("preemptions"):
        _render_preemptions(d["preemptions"], console, limit)
    for e in ("greedy", "cpsat"):
        for w in data[e].get("warnings", []):
            console.print(f"[yellow]warning ({e}):[/] {w}", highlight=False)
    if "kube" in data:
        _render_kube(data, console, limit)


def _victims_text(side: dict[str, Any]) -> str:
    if not side["victims"]:
        return f"{side['node'] or 'pending'}: no eviction"
    names = ", ".join(f"{v['pod']} ({v['priority']}{', PDB' if v['pdb_violation'] else ''})" for v in side["victims"])
    return f"{side['node'] or 'pending'}: {names}"


def _render_preemptions(preemptions: list[dict[str, Any]], console, limit: int) -> None:
    """Per preemptor the engines treat differently: what each evicted for it. kube (greedy) picks one pod's
    victims at a time by its criteria; CP-SAT picks the window's together, by the same criteria summed."""
    from rich.table import Table

    t = Table(title="preemptions that differ: node and victims (priority)", title_justify="left",
              caption="kube picks each pod's victims alone; CP-SAT picks the window's together, by the same "
                      "criteria summed (fewest PDB violations, lowest highest priority, smallest priority sum, "
                      "fewest victims)", caption_justify="left")
    for col in ("preemptor", "greedy (kube-scheduler)", "CP-SAT"):
        t.add_column(col, overflow="fold")
    for m in preemptions[:limit]:
        t.add_row(m["pod"], _victims_text(m["greedy"]), _victims_text(m["cpsat"]))
    console.print(t)
    if len(preemptions) > limit:
        console.print(f"... {len(preemptions) - limit} more (-o wide or -o json for all)")


def _render_kube(data: dict[str, Any], console, limit: int) -> None:
    """The real kube-scheduler's placements beside both engines: agreement and what CP-SAT changes."""
    k = data["kube"]
    placed = k["placement"]["placed"]
    console.print(f"[bold]the real kube-scheduler[/] ({k['version']}, oracle): {placed} pods placed, score measure "
                  f"{k['score']['total']:,}; its plan {'verifies' if not k['violations'] else 'FAILS the verifier'}"
                  f" ({len(k['violations'])} violations).", highlight=False)
    if k["greedy_agrees"]:
        console.print("the greedy engine agrees with it on every pod.")
    else:
        shown = ", ".join(k["greedy_disagrees_on"][:limit])
        console.print(f"[yellow]the greedy engine disagrees with it on {len(k['greedy_disagrees_on'])} pods:[/] "
                      f"{shown}", highlight=False)
    d = k["cpsat_vs_kube"]
    console.print(f"CP-SAT against it: {len(d['placed_only_by_cpsat'])} pods placed only by CP-SAT, "
                  f"{len(d['placed_only_by_greedy'])} only by kube-scheduler, {len(d['different_node'])} on "
                  f"different nodes; score measure {data['cpsat']['score']['total'] - k['score']['total']:+,}.")
