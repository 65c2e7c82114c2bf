"""Benchmark (not a test): how long a unit of counted work takes in the ROADEF search, per kind of phase.

    .venv/bin/python benchmarks/bench_roadef_work.py [--time-limit 60] [--instances a2_1,a2_2,a1_4] [--seed 0]

`RoadefLNS` chooses the kind of each phase by its gain per unit of *counted* work (units of about 0.5 ms, see its
docstring), so that the search is deterministic for a seed. That choice, and the exchanges of cooperating searches
(every two phases), are only as good as the units are close to time. For each instance this runs one search (one
core) for the time limit and times every phase: per kind, the phases run, the median seconds of one, and the median
milliseconds per counted unit (0.5 where the counting is right).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from kplace.solver.roadef.instance import read_assignment, read_instance
from kplace.solver.roadef.search import RoadefLNS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "roadef2012-machine-reassignment"


def phase_times(search: RoadefLNS, time_limit: float) -> dict[str, list[tuple[float, int]]]:
    """(seconds, counted units) of every phase of `search` run for `time_limit`, by kind."""
    current: dict[str, object] = {}
    plain = {name: getattr(search, name) for name in ("anneal", "rearrange", "lns_round")}

    def anneal(deadline, steps, soft=False):
        current.update(kind="soft" if soft else "anneal", units=steps)
        return plain["anneal"](deadline, steps, soft=soft)

    def rearrange(deadline, attempts):
        current.update(kind="bpr", units=attempts * search.BPR_WORK)
        return plain["rearrange"](deadline, attempts)

    def lns_round(deadline):
        current["kind"] = "lns"
        current["units"] = int(current.get("units", 0)) + search.LNS_WORK
        return plain["lns_round"](deadline)

    search.anneal, search.rearrange, search.lns_round = anneal, rearrange, lns_round
    out: dict[str, list[tuple[float, int]]] = {}
    search.begin(time.monotonic() + time_limit)
    while True:
        current.clear()
        t = time.monotonic()
        if not search.phase():
            return out
        if current:
            out.setdefault(str(current["kind"]), []).append((time.monotonic() - t, int(current["units"])))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds of search per instance (default 60)")
    ap.add_argument("--instances", default="a2_1,a2_2,a1_4")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args(argv)
    print("| inst | kind | phases | s per phase (median) | ms per counted unit (median) |")
    print("|---|---|---|---|---|")
    for name in [n.strip() for n in args.instances.split(",") if n.strip()]:
        inst = read_instance(args.data / f"model_{name}.txt")
        search = RoadefLNS(inst, read_assignment(args.data / f"assignment_{name}.txt", inst), seed=args.seed)
        for kind, runs in sorted(phase_times(search, args.time_limit).items()):
            per_phase = statistics.median(s for s, _ in runs)
            per_unit = statistics.median(1000 * s / max(1, u) for s, u in runs)
            print(f"| {name} | {kind} | {len(runs)} | {per_phase:.2f} | {per_unit:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
