"""Preemption in a full cluster, moves that make room, and gangs (issue 20): kube's one-pod-at-a-time preemption
and gang handling (the greedy engine) against the CP-SAT window, which decides every victim and every gang of the
batch at once, and CP-SAT with `--allow-moves`.

    .venv/bin/python benchmarks/bench_preemption.py            # every family, seeds 0-2 (a few minutes)
    .venv/bin/python benchmarks/bench_preemption.py --quick    # seed 0 only
    .venv/bin/python benchmarks/bench_preemption.py --no-docs

Each state is generated and both engines run through `solver.schedule.decide` (engine + the independent verifier;
PDBs respected, kplace's default), one after the other in this process. Per plan: pods placed per priority,
victims per priority, PDB violations, whether the verifier accepted it, and the wall time. Rows go to
benchmarks/results/preemption.json and, unless --no-docs, to the "Preemption" section of docs/benchmarks.md
(between its markers) with docs/img/preemption-victims.png; figures per family are medians over seeds. The gang
families (`kplace generate gangs`) report pods placed, complete gangs and partial gangs (which must be 0). The move
families (`kplace generate fragmented-moves`) run CP-SAT a second time with `--allow-moves` (up to one move per
pending pod) and report moves beside victims.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from common import machine, replace_section, save_figure, write_json

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
IMG = ROOT / "docs" / "img" / "preemption-victims.png"
RESULTS = ROOT / "benchmarks" / "results" / "preemption.json"
BEGIN, END = "<!-- BEGIN preemption (benchmarks/bench_preemption.py) -->", "<!-- END preemption -->"
TIME_LIMIT = 10.0

# (family, workload, nodes, params)
FAMILIES = [
    ("priority-overload, 50 nodes, 120 % demand", "priority-overload", 50, {}),
    ("priority-overload, 100 nodes, 150 % demand", "priority-overload", 100, {"overload": "150"}),
    ("preemption-pdb, 40 nodes, 30 % demand, budget 2", "preemption-pdb", 40, {}),
    ("preemption-pdb, 80 nodes, 40 % demand, budget 1", "preemption-pdb", 80, {"demand": "40", "budget": "1"}),
]
MOVES = [
    ("fragmented-moves, 30 nodes, pending outranks the replicas", "fragmented-moves", 30, {"preempt": "1"}),
    ("fragmented-moves, 30 nodes, equal priority", "fragmented-moves", 30, {"preempt": "0"}),
    ("fragmented-moves, 60 nodes, pending outranks, budget 2", "fragmented-moves", 60,
     {"preempt": "1", "budget": "2"}),
]
GANGS = [
    ("gangs, 60 nodes, 12 jobs of 4-64 pods", "gangs", 60, {}),
    ("gangs, 60 nodes, 12 jobs, each in one zone", "gangs", 60, {"zone": "1"}),
    ("gangs, 60 nodes, 12 jobs, each preferring one zone", "gangs", 60, {"zone": "2"}),
]


def _figures(index, plan, seconds: float) -> dict:
    from kplace.solver.verify import verify_plan

    prio = {p.key: p.priority for p in index.pending}
    placed = Counter(prio[p.pod] for p in plan.placements if p.node)
    victims = Counter(e.priority for e in plan.evictions)
    on = {p.pod for p in plan.placements if p.node}
    where = {p.pod: p.node for p in plan.placements if p.node}
    zone_of = {n.metadata.name: n.metadata.labels.get("topology.kubernetes.io/zone") for n in index.snapshot.nodes}
    touched = [g for g in index.gangs if any(m in on for m in g.members)]
    return {"placed": {str(k): v for k, v in sorted(placed.items(), reverse=True)},
            "pods_placed": len(on), "gangs": len(index.gangs),
            "complete_gangs": sum(1 for g in touched if sum(m in on for m in g.members) >= g.min_count),
            "gang_zones": sum(len({zone_of.get(n) for k, n in where.items() if k in g.members}) for g in touched),
            "partial_gangs": sum(1 for g in touched if sum(m in on for m in g.members) < g.min_count),
            "victims": {str(k): v for k, v in sorted(victims.items(), reverse=True)},
            "pdb_violations": sum(e.pdb_violation for e in plan.evictions), "moves": len(plan.moves),
            "waves": max((m.wave for m in plan.moves), default=0),
            "verified": not verify_plan(index, plan), "seconds": round(seconds, 2),
            "statuses": dict(Counter(w["status"] for w in plan.windows))}


def run(label: str, workload: str, nodes: int, params: dict, seed: int, moves: bool = False) -> dict:
    from kplace.instances.generators import generate
    from kplace.solver.cli import load_index
    from kplace.solver.cpsat import CpsatOptions
    from kplace.solver.output import dumps
    from kplace.solver.schedule import decide

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.json"
        path.write_text(dumps(generate(workload, nodes=nodes, seed=seed, params=params)), encoding="utf-8")
        index, config = load_index((str(path),), None)
    row = {"family": label, "seed": seed, "nodes": len(index.nodes), "pending": len(index.pending),
           "bound": len(index.pods) - len(index.pending)}
    for engine in ("greedy", "cpsat", *(["moves"] if moves else [])):
        started = time.perf_counter()
        plan = decide(index, config, "greedy" if engine == "greedy" else "cpsat",
                      cpsat_options=CpsatOptions(time_limit=TIME_LIMIT, seed=seed),
                      allow_moves=len(index.pending) if engine == "moves" else 0)
        row[engine] = _figures(index, plan, time.perf_counter() - started)
    return row


def _levels(rows: list[dict], key: str) -> list[str]:
    return sorted({k for r in rows for e in ("greedy", "cpsat") for k in r[e][key]}, key=int, reverse=True)


def _vector(fig: dict, key: str, levels: list[str]) -> list[int]:
    return [fig[key].get(lvl, 0) for lvl in levels]


def _med(values) -> float:
    return statistics.median(values)


def render(rows: list[dict], gang_rows: list[dict], move_rows: list[dict], elapsed: float) -> str:
    lines = [BEGIN, f"Command: `.venv/bin/python benchmarks/bench_preemption.py` ({machine()}; {elapsed:.0f} s). "
             "Both engines through `decide` (engine + verifier, PDBs respected), one after the other; CP-SAT with "
             f"`--time-limit {TIME_LIMIT:g}`. Placed and victims per priority (highest first), medians over seeds; "
             "\"better\" counts the seeds where CP-SAT did better on pods placed less pods evicted, "
             "lexicographically by priority from the highest, or as well with less disruption (victims by priority, "
             "highest first).", "",
             "| family | seeds | pending | placed greedy | placed CP-SAT | victims greedy | victims CP-SAT | "
             "PDB violations g / c | better / equal / worse | verified | wall s g / c |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    families = list(dict.fromkeys(r["family"] for r in rows))
    for fam in families:
        rs = [r for r in rows if r["family"] == fam]
        placed, victims = _levels(rs, "placed"), _levels(rs, "victims")
        levels = sorted({*placed, *victims}, key=int, reverse=True)
        tally = Counter()
        for r in rs:
            g, c = r["greedy"], r["cpsat"]
            key_g, key_c = (([fig["placed"].get(lvl, 0) - fig["victims"].get(lvl, 0) for lvl in levels],
                             [-x for x in _vector(fig, "victims", victims)]) for fig in (g, c))
            tally["better" if key_c > key_g else "equal" if key_c == key_g else "worse"] += 1

        def cell(engine, key, levels, rs=rs):
            return " / ".join(f"{lvl}: {_med([r[engine][key].get(lvl, 0) for r in rs]):g}" for lvl in levels) or "0"

        lines.append(
            f"| {fam} | {len(rs)} | {_med([r['pending'] for r in rs]):g} | {cell('greedy', 'placed', placed)} | "
            f"{cell('cpsat', 'placed', placed)} | {cell('greedy', 'victims', victims)} | "
            f"{cell('cpsat', 'victims', victims)} | {_med([r['greedy']['pdb_violations'] for r in rs]):g} / "
            f"{_med([r['cpsat']['pdb_violations'] for r in rs]):g} | {tally['better']} / {tally['equal']} / "
            f"{tally['worse']} | {all(r[e]['verified'] for r in rs for e in ('greedy', 'cpsat'))} | "
            f"{_med([r['greedy']['seconds'] for r in rs]):.1f} / {_med([r['cpsat']['seconds'] for r in rs]):.1f} |")
    lines += ["", f"![victims by priority]({IMG.relative_to(DOC.parent).as_posix()})", "",
              "| gang family | seeds | pending | gangs | pods placed g / c | complete gangs g / c | "
              "partial gangs g / c | zones per running gang g / c | verified | wall s g / c |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for fam in dict.fromkeys(r["family"] for r in gang_rows):
        rs = [r for r in gang_rows if r["family"] == fam]

        def m(key, rs=rs, how=_med):
            return " / ".join(f"{how([r[e][key] for r in rs]):g}" for e in ("greedy", "cpsat"))

        ok = all(r[e]["verified"] for r in rs for e in ("greedy", "cpsat"))
        pending, gangs = _med([r["pending"] for r in rs]), _med([r["greedy"]["gangs"] for r in rs])
        per_gang = " / ".join(f"{_med([r[e]['gang_zones'] / max(1, r[e]['complete_gangs']) for r in rs]):.2f}"
                              for e in ("greedy", "cpsat"))
        lines.append(f"| {fam} | {len(rs)} | {pending:g} | {gangs:g} | {m('pods_placed')} | {m('complete_gangs')} | "
                     f"{m('partial_gangs', how=max)} | {per_gang} | {ok} | {m('seconds')} |")
    lines += ["", "| move family | seeds | pending | placed g / c / c+moves | victims g / c / c+moves | "
              "moves (waves) | admitted beyond greedy | verified | wall s g / c / c+moves |",
              "|---|---|---|---|---|---|---|---|---|"]
    for fam in dict.fromkeys(r["family"] for r in move_rows):
        rs = [r for r in move_rows if r["family"] == fam]

        def m3(key, rs=rs):
            def total(v):
                return sum(v.values()) if isinstance(v, dict) else v
            return " / ".join(f"{_med([total(r[e][key]) for r in rs]):g}" for e in ("greedy", "cpsat", "moves"))

        ok = all(r[e]["verified"] for r in rs for e in ("greedy", "cpsat", "moves"))
        beyond = _med([r["moves"]["pods_placed"] - r["greedy"]["pods_placed"] for r in rs])
        lines.append(f"| {fam} | {len(rs)} | {_med([r['pending'] for r in rs]):g} | {m3('pods_placed')} | "
                     f"{m3('victims')} | {_med([r['moves']['moves'] for r in rs]):g} "
                     f"({_med([r['moves']['waves'] for r in rs]):g}) | {beyond:g} | {ok} | "
                     f"{m3('seconds')} |")
    lines.append(END)
    return "\n".join(lines)


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = list(dict.fromkeys(r["family"] for r in rows))
    levels = _levels(rows, "victims")
    fig, axes = plt.subplots(1, len(families), figsize=(4 * len(families), 3.2), squeeze=False)
    for ax, fam in zip(axes[0], families, strict=True):
        rs = [r for r in rows if r["family"] == fam]
        for k, engine in enumerate(("greedy", "cpsat")):
            values = [_med([r[engine]["victims"].get(lvl, 0) for r in rs]) for lvl in levels]
            ax.bar([i + 0.4 * k for i in range(len(levels))], values, width=0.4,
                   label="greedy (kube)" if engine == "greedy" else "CP-SAT")
        ax.set_xticks([i + 0.2 for i in range(len(levels))], [f"prio {lvl}" for lvl in levels])
        ax.set_title(fam, fontsize=8)
        ax.set_ylabel("victims (median)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, IMG)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="seed 0 only")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = ap.parse_args()
    started = time.perf_counter()
    rows, gang_rows, move_rows = [], [], []
    seeds = (0,) if args.quick else (0, 1, 2)
    for families, out, keys in ((FAMILIES, rows, ("placed", "victims")), (GANGS, gang_rows, ("complete_gangs",)),
                                (MOVES, move_rows, ("pods_placed", "victims", "moves"))):
        for label, workload, nodes, params in families:
            for seed in seeds:
                row = run(label, workload, nodes, params, seed, moves=families is MOVES)
                shown = "; ".join(f"{e} " + ", ".join(f"{k} {row[e][k]}" for k in keys)
                                  for e in ("greedy", "cpsat", "moves") if e in row)
                print(f"{label} seed {seed}: {shown}", file=sys.stderr)
                out.append(row)
    elapsed = time.perf_counter() - started
    write_json(RESULTS, {"machine": machine(), "seconds": elapsed, "rows": rows, "gangs": gang_rows,
                         "moves": move_rows})
    if not args.no_docs:
        replace_section(DOC, BEGIN, END, render(rows, gang_rows, move_rows, elapsed),
                        heading="## Preemption and gangs (issue 20)")
        plot(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
