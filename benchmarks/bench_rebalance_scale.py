"""Benchmark (not a test): `kplace rebalance` (pack, the neighbourhood search) on big generated clusters, issue 23
item 4: when the goal first improves and how it goes on improving up to the limit.

    .venv/bin/python benchmarks/bench_rebalance_scale.py          # 50,000 nodes, 60 s and 180 s
    .venv/bin/python benchmarks/bench_rebalance_scale.py --nodes 2000 --pods 20000 --limits 10

Per limit T, one run of the command users run, in a process of its own (its peak resident memory is its own):

    kplace rebalance STATE --time-limit T --deadline T --wall-clock -q -o json --output-file PLAN

on a state from `kplace generate scale --nodes N --pods P --pending 0` (every pod bound; seed 0). From the plan:
the seconds of the checks before the search, of the search and of the waves after (`timings`), the goal (nodes
in use) after each round (`model.stages[0].progress`), moves and violations; loading (and writing the plan) is
the rest of the wall time.
Writes benchmarks/results/rebalance-scale.json, docs/img/rebalance-scale.png (the goal over time, one line per
limit) and the "Rebalancing at 50,000 nodes" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine, replace_section, save_figure, write_json

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "rebalance-scale.json"
DOC = HERE.parent / "docs" / "benchmarks.md"
IMG = HERE.parent / "docs" / "img" / "rebalance-scale.png"
BEGIN, END = "<!-- bench_rebalance_scale:begin -->", "<!-- bench_rebalance_scale:end -->"
KPLACE = str(Path(sys.executable).with_name("kplace"))


def run(state: Path, limit: float, seed: int) -> dict:
    """One `kplace rebalance` run with time limit and deadline `limit`: its figures."""
    with tempfile.TemporaryDirectory(prefix="kplace-rebalance-") as tmp:
        out = Path(tmp) / "plan.json"
        cmd = [KPLACE, "rebalance", str(state), "--time-limit", str(limit), "--deadline", str(limit), "--wall-clock",
               "--seed", str(seed), "-q", "-o", "json", "--output-file", str(out)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak resident memory
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd)} exited with {proc.returncode}")
        plan = json.loads(out.read_text())
    stage = plan["model"]["stages"][0]
    timings = plan["timings"]
    progress = stage.get("progress", [])
    first = next((p["seconds"] for p in progress if p["goal"] < plan["model"]["goal_before"]), None)
    loading = wall - plan["seconds"]
    return {"limit": limit, "wall_s": round(wall, 1), "load_s": round(loading, 1),
            "checks_before_s": timings["checks_before"], "search_s": timings["search"],
            "waves_after_s": timings["waves_after"], "goal_before": plan["model"]["goal_before"],
            "goal_after": plan["after"]["non_empty_nodes"], "moves": len(plan["moves"]), "waves": len(plan["waves"]),
            "rounds": stage.get("rounds"), "neighbourhoods": stage.get("neighbourhoods"),
            "first_improvement_in_search_s": first,
            "first_improvement_from_start_s": None if first is None else round(loading + timings["checks_before"]
                                                                               + first, 1),
            "violations_before": plan["before"]["violations"], "violations_after": plan["after"]["violations"],
            "peak_rss_gib": round(usage.ru_maxrss / 2**20, 2), "progress": progress, "warnings": plan["warnings"]}


def render(rows: list[dict], args: argparse.Namespace) -> str:
    limits = " ".join(f"{r['limit']:g}" for r in rows)
    lines = [BEGIN, "", f"Command (`kplace generate scale --nodes {args.nodes} --pods {args.pods} --pending 0`, "
             f"seed {args.seed}; one run per limit, one after the other):", "",
             f"    .venv/bin/python benchmarks/bench_rebalance_scale.py --nodes {args.nodes} --pods {args.pods} "
             f"--limits {limits}", "", f"Machine: {machine()}.", "",
             "| --time-limit | wall (load and output + checks + search + waves) | first improvement: in the search / "
             "from the start | nodes in use before → after | moves (waves) | rounds (neighbourhoods) | violations "
             "before → after | peak RSS |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        first = ("none" if r["first_improvement_in_search_s"] is None else
                 f"{r['first_improvement_in_search_s']:.1f} s / {r['first_improvement_from_start_s']:.1f} s")
        lines.append(f"| {r['limit']:g} s | {r['wall_s']:.0f} s ({r['load_s']:.0f} + {r['checks_before_s']:.0f} + "
                     f"{r['search_s']:.0f} + {r['waves_after_s']:.0f}) | {first} | {r['goal_before']:,.0f} → "
                     f"{r['goal_after']:,} | {r['moves']:,} ({r['waves']}) | {r['rounds']} ({r['neighbourhoods']}) | "
                     f"{r['violations_before']:,} → {r['violations_after']:,} | {r['peak_rss_gib']:.1f} GiB |")
    lines += ["", "![nodes in use over the search](img/rebalance-scale.png)", "", END]
    return "\n".join(lines)


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    for r in rows:
        xs = [0.0, *(p["seconds"] for p in r["progress"])]
        ys = [r["goal_before"], *(p["goal"] for p in r["progress"])]
        ax.step(xs, ys, where="post", label=f"--time-limit {r['limit']:g}")
    ax.set_xlabel("seconds of search")
    ax.set_ylabel("nodes in use")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, IMG)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50000)
    ap.add_argument("--pods", type=int, default=500000)
    ap.add_argument("--limits", type=float, nargs="+", default=[60.0, 180.0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--state", type=Path, default=None, help="use this state instead of generating one")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md nor the plot")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kplace-scale-") as tmp:
        state = args.state or Path(tmp) / "state.json"
        if args.state is None:
            print(f"generating {args.nodes} nodes, {args.pods} pods ...", file=sys.stderr, flush=True)
            subprocess.run([KPLACE, "generate", "scale", "--nodes", str(args.nodes), "--pods", str(args.pods),
                            "--pending", "0", "--seed", str(args.seed), "--output-file", str(state)], check=True,
                           capture_output=True)
        rows = []
        for limit in args.limits:
            print(f"rebalance --time-limit {limit:g} ...", file=sys.stderr, flush=True)
            rows.append(run(state, limit, args.seed))
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "progress"}), file=sys.stderr, flush=True)
    write_json(RESULTS, {"machine": machine(), "nodes": args.nodes, "pods": args.pods, "results": rows})
    if not args.no_doc:
        plot(rows)
        replace_section(DOC, BEGIN, END, render(rows, args), heading="### Rebalancing at 50,000 nodes (issue 23)")
    print(render(rows, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
