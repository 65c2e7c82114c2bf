"""Both engines' score measure where every pod fits (issue 16): kube's priorities as they play out on the final state.

    .venv/bin/python benchmarks/bench_measure.py            # every family, seeds 0-2 (a few minutes)
    .venv/bin/python benchmarks/bench_measure.py --quick    # seed 0 only
    .venv/bin/python benchmarks/bench_measure.py --no-docs

Each state is generated (or read from instances/) and compared through `run_compare`, the library behind
`kplace compare`: both plans verified, then measured by `solver.measure` (each placed pod scored by the default
profile as if it were scheduled last into the final state), per plugin, with the final state's balance
(standard deviation and maximum of cpu allocation over nodes), the preferred (anti-)affinity weight satisfied
and the ScheduleAnyway skew over maxSkew. Rows go to benchmarks/results/measure.json and, unless --no-docs, to
the "Score measure" section of docs/benchmarks.md (between its markers). Figures per family are medians over
seeds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import machine, replace_section, write_json

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "benchmarks" / "results" / "measure.json"
BEGIN, END = "<!-- BEGIN measure (benchmarks/bench_measure.py) -->", "<!-- END measure -->"

# (family, workload or instance path, nodes, pods, params)
FAMILIES = [
    ("perf-basic 1,000 nodes, 2,000 pods", "perf-basic", 1000, 2000, {}),
    ("perf-spread 300 nodes, 300 pods", "perf-spread", 300, 300, {}),
    ("perf-preferred-spread 300 nodes, 300 pods", "perf-preferred-spread", 300, 300, {}),
    ("perf-preferred-pod-affinity 200 nodes, 200 pods", "perf-preferred-pod-affinity", 200, 200, {}),
    ("perf-preferred-pod-anti-affinity 20 nodes, 9 pods", "perf-preferred-pod-anti-affinity", 20, 9, {}),
    ("dcm 200 nodes at 50 % load, 300 pods", "dcm", 200, 300, {"fill": "50"}),
    ("preferred affinity and anti-affinity, 20 nodes, 21 pods", "preferred-affinity", 20, 21, {}),
    ("instances/demo-cluster.json", ROOT / "instances" / "demo-cluster.json", None, None, {}),
]


def run(label: str, source, nodes, pods, params, seed: int, time_limit: float) -> dict:
    from kplace.instances.generators import generate
    from kplace.solver.cli import load_index
    from kplace.solver.compare import CompareOptions, run_compare
    from kplace.solver.output import dumps

    with tempfile.TemporaryDirectory() as tmp:
        if isinstance(source, Path):
            path = source
        else:
            path = Path(tmp) / "state.json"
            path.write_text(dumps(generate(source, nodes=nodes, pods=pods, seed=seed, params=params)), encoding="utf-8")
        index, config = load_index((str(path),), None)
    data = run_compare(index, config, CompareOptions(time_limit=time_limit, seed=seed, score_limit=10**9)).data
    row = {"family": label, "seed": seed, "nodes": data["state"]["nodes"], "pods": data["state"]["pods_pending"]}
    for e in ("greedy", "cpsat"):
        d = data[e]
        soft = d["soft"]
        cpu = d["allocation"].get("cpu", {})
        row[e] = {
            "placed": d["placement"]["placed"], "placed_by_priority": d["placement"]["by_priority"],
            "measure": d["score"]["total"], "per_plugin": d["score"]["per_plugin"],
            "cpu_std": cpu.get("std"), "cpu_max": cpu.get("max"),
            "affinity": [soft["pod_affinity"]["satisfied"], soft["pod_affinity"]["total"]],
            "anti_affinity": [soft["pod_anti_affinity"]["satisfied"], soft["pod_anti_affinity"]["total"]],
            "skew_excess": soft["schedule_anyway_spread"]["excess"], "seconds": d["wall_seconds"],
            "statuses": (d.get("solver") or {}).get("statuses"),
        }
    return row


def _med(rows: list[dict], engine: str, key: str):
    vals = [r[engine][key] for r in rows if r[engine][key] is not None]
    return statistics.median(vals) if vals else None


def table(rows: list[dict]) -> str:
    out = ["| family | seeds | placed (greedy = CP-SAT) | measure greedy | measure CP-SAT | CP-SAT − greedy | "
           "higher / equal / lower | cpu std g / c | cpu max g / c | pref. affinity g / c | pref. anti-aff. g / c | "
           "skew excess g / c | wall s g / c |", "|" + "---|" * 13]
    plugins: dict[str, dict[str, list[float]]] = {}  # family → plugin → [greedy, cpsat] per pod
    for fam in dict.fromkeys(r["family"] for r in rows):
        rs = [r for r in rows if r["family"] == fam]
        same = all(r["greedy"]["placed_by_priority"] == r["cpsat"]["placed_by_priority"] for r in rs)
        diff = [r["cpsat"]["measure"] - r["greedy"]["measure"] for r in rs]
        hel = f"{sum(d > 0 for d in diff)} / {sum(d == 0 for d in diff)} / {sum(d < 0 for d in diff)}"

        def pair(key, spec="{:,.3f}", rs=rs):
            g, c = _med(rs, "greedy", key), _med(rs, "cpsat", key)
            return f"{spec.format(g) if g is not None else '-'} / {spec.format(c) if c is not None else '-'}"

        def weight(key, rs=rs):
            return " / ".join(f"{statistics.median(r[e][key][0] for r in rs):g}/{rs[0][e][key][1]}"
                              for e in ("greedy", "cpsat"))

        out.append(f"| {fam} | {len(rs)} | {'yes' if same else 'no'} | {_med(rs, 'greedy', 'measure'):,.0f} | "
                   f"{_med(rs, 'cpsat', 'measure'):,.0f} | {statistics.median(diff):+,.0f} | {hel} | "
                   f"{pair('cpu_std')} | {pair('cpu_max')} | {weight('affinity')} | {weight('anti_affinity')} | "
                   f"{pair('skew_excess', '{:g}')} | {pair('seconds', '{:.2f}')} |")
        plugins[fam] = {}
        for name in sorted({k for r in rs for k in r["greedy"]["per_plugin"]}):
            g = statistics.median(r["greedy"]["per_plugin"][name] / max(1, r["greedy"]["placed"]) for r in rs)
            c = statistics.median(r["cpsat"]["per_plugin"][name] / max(1, r["cpsat"]["placed"]) for r in rs)
            plugins[fam][name] = [g, c]
    out += ["", "Per plugin, weighted points per placed pod (medians; greedy / CP-SAT; plugins at 0 in both omitted):",
            "", "| family | per plugin |", "|---|---|"]
    for fam, per in plugins.items():
        cells = [f"{k} {v[0]:.2f} / {v[1]:.2f}" for k, v in sorted(per.items()) if v[0] or v[1]]
        out.append(f"| {fam} | {'; '.join(cells)} |")
    return "\n".join(out)


def write_docs(rows: list[dict], seconds: float, quick: bool) -> None:
    body = "\n".join([
        BEGIN,
        f"Command: `.venv/bin/python benchmarks/bench_measure.py{' --quick' if quick else ''}` ({machine()}; "
        f"{seconds:.0f} s). Both engines on the same states through `run_compare` (the default profile, CP-SAT with "
        "`--time-limit 5`); measure = `solver.measure`, each placed pod scored as if scheduled last into the final "
        "state; g = greedy (kube-scheduler), c = CP-SAT; medians over seeds.",
        "", table(rows), END])
    replace_section(DOC, BEGIN, END, body, "## Score measure where every pod fits (issue 16)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-docs", action="store_true")
    ap.add_argument("--time-limit", type=float, default=5.0)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    rows = []
    for label, source, nodes, pods, params in FAMILIES:
        for seed in (0,) if args.quick or isinstance(source, Path) else (0, 1, 2):
            row = run(label, source, nodes, pods, params, seed, args.time_limit)
            rows.append(row)
            print(f"{label} seed {seed}: measure greedy {row['greedy']['measure']:,} cpsat {row['cpsat']['measure']:,} "
                  f"(placed {row['greedy']['placed']} / {row['cpsat']['placed']}, "
                  f"{row['greedy']['seconds']:.2f} s / {row['cpsat']['seconds']:.2f} s)", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    write_json(RESULTS, rows)
    print(table(rows))
    if not args.no_docs:
        write_docs(rows, seconds, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
