"""Benchmark (not a test): the ROADEF/EURO 2012 solver (local search + CP-SAT LNS) on set A, against best-known values.

    .venv/bin/python benchmarks/bench_roadef.py [--time-limit 300] [--seed 0] [--instances a1_1,a2_2]
        [--searches 2] [--data ../shared/data/roadef2012-machine-reassignment] [--out-dir /tmp/roadef] [--no-docs]
        [--quiet]

For each instance: `run_roadef` from the initial assignment with the per-instance time limit (the whole run,
parsing included) and two cooperating searches (the target's 2 cores), then the written assignment is re-read and
re-scored independently with `score` (feasibility and objective). Prints one row per instance and replaces the
run table of the "ROADEF 2012 (set A)" section of docs/benchmarks.md (between its markers; unless --no-docs):
objective, best known (BK), gap to BK, the 2012 challenge's best where it matters (a2_2: 816,523,983), seconds,
moved processes, feasibility.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from common import machine, replace_section
from kplace.solver.roadef.instance import read_assignment, read_instance
from kplace.solver.roadef.portfolio import run_roadef
from kplace.solver.roadef.reference import CHALLENGE_BEST
from kplace.solver.roadef.scoring import score

SET_A = ["a1_1", "a1_2", "a1_3", "a1_4", "a1_5", "a2_1", "a2_2"]
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "roadef2012-machine-reassignment"
SECTION = "## ROADEF 2012 (set A)"
BEGIN, END = "<!-- BEGIN roadef (benchmarks/bench_roadef.py) -->", "<!-- END roadef -->"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per instance (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1, help="CP-SAT workers per subproblem (default 1)")
    ap.add_argument("--searches", type=int, default=2,
                    help="cooperating searches, one process (core) each (default 2: the target's 2 cores)")
    ap.add_argument("--instances", default=",".join(SET_A))
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out-dir", type=Path, default=None, help="where to write the new assignments")
    ap.add_argument("--no-docs", action="store_true", help="do not append the results to docs/benchmarks.md")
    ap.add_argument("--quiet", action="store_true", help="do not print each improvement (on stderr) as it comes")
    args = ap.parse_args(argv)
    out_dir = args.out_dir or Path(tempfile.mkdtemp(prefix="roadef-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in [n.strip() for n in args.instances.split(",") if n.strip()]:
        model, initial = args.data / f"model_{name}.txt", args.data / f"assignment_{name}.txt"
        out = out_dir / f"new_{name}.txt"
        summary = run_roadef(model, initial, out, time_limit=args.time_limit, seed=args.seed, workers=args.workers,
                             searches=args.searches,
                             log=None if args.quiet else lambda line, n=name: print(f"  {n} {line.strip()}",
                                                                                    file=sys.stderr, flush=True))
        inst = read_instance(model)
        obj, viol = score(inst, read_assignment(initial, inst), read_assignment(out, inst))
        assert obj.total == summary["objective"], (name, obj.total, summary["objective"])
        row = {**summary, "feasible": not viol, "violations": viol}
        rows.append(row)
        bk = row["best_known"]
        print(f"{name}: {obj.total:,} (initial {row['initial']['total']:,}, BK {bk:,}, gap {row['gap_percent']:.3f} %)"
              f" in {row['seconds']:.1f} s, {row['lns_rounds']} CP-SAT rounds, {row['anneal_steps']:,} annealing steps,"
              f" {obj.moved_processes} moved,"
              f" {'feasible' if not viol else 'INFEASIBLE'}", flush=True)
    if not args.no_docs:
        _write_docs(rows, args)
    return 0 if all(r["feasible"] for r in rows) else 1


def _write_docs(rows: list[dict], args: argparse.Namespace) -> None:
    """Replace the run table of the "ROADEF 2012 (set A)" section (between its markers) with this run's."""
    within = sum(1 for r in rows if r["gap_percent"] is not None and r["gap_percent"] <= 1.0)
    command = (f"`.venv/bin/python benchmarks/bench_roadef.py --time-limit {args.time_limit:g}"
               f"{' --seed ' + str(args.seed) if args.seed else ''}"
               f"{' --searches ' + str(args.searches) if args.searches != 2 else ''}"
               f"{' --instances ' + args.instances if args.instances != ','.join(SET_A) else ''}`")
    lines = [
        BEGIN,
        f"Command: {command} ({machine()}; seed {args.seed}, {args.searches} cooperating search(es) of "
        f"{args.workers} CP-SAT worker(s), instances one after another).",
        "",
        "| inst | initial | objective | BK | gap to BK | seconds | moved | feasible |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['instance']} | {r['initial']['total']:,} | {r['objective']:,} | {r['best_known']:,} | "
                     f"{r['gap_percent']:.3f} % | {r['seconds']:.1f} | {r['final']['moved_processes']} | "
                     f"{'yes' if r['feasible'] else '**no**'} |")
    lines += ["", f"Feasible: {sum(r['feasible'] for r in rows)}/{len(rows)}. Within 1 % of BK: {within}/{len(rows)}."]
    for r in rows:
        cb = CHALLENGE_BEST.get(r["instance"])
        if r["instance"] == "a2_2" and cb:
            verdict = "better than" if r["objective"] < cb else "**not** better than"
            lines.append(f"a2_2: {r['objective']:,} is {verdict} the 2012 challenge's best {cb:,}.")
    lines.append(END)
    replace_section(ROOT / "docs" / "benchmarks.md", BEGIN, END, "\n".join(lines), heading=SECTION)


if __name__ == "__main__":
    sys.exit(main())
