"""Benchmark (not a test): the CP-SAT engine's latency per small window (issue 16's target: 50 pods on 500 nodes,
median ≤ 100 ms per window).

    .venv/bin/python benchmarks/bench_window.py [--runs 3] [--nodes 500] [--pods 500] [--window 50]

`kplace generate dcm` (seed 0) is loaded and compiled once (not timed); each run is a fresh in-process
`schedule_cpsat` with `--window W --time-limit 10` (deterministic, 2 workers). Per run: the median of the windows'
`seconds` (a window's whole decision: greedy's baselines, the model, the solve, both plans' score measures);
printed with the windows' statuses and greedy's whole run over the same pods for scale.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from kplace.instances.generators import generate
from kplace.models import compile_index, load_state
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.greedy import GreedyScheduler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--window", type=int, default=50)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.json"
        path.write_text(json.dumps(generate("dcm", nodes=args.nodes, pods=args.pods, seed=0, params={})))
        index = compile_index(load_state([str(path)]))
    medians = []
    for run in range(args.runs):
        plan = schedule_cpsat(index, None, CpsatOptions(window=args.window, time_limit=10, workers=2, seed=0))
        ms = [w["seconds"] * 1000 for w in plan.windows]
        greedy = GreedyScheduler(index).run().seconds * 1000
        medians.append(statistics.median(ms))
        print(f"run {run}: {len(ms)} windows, median {medians[-1]:.0f} ms (min {min(ms):.0f}, max {max(ms):.0f}), "
              f"statuses {dict(Counter(w['status'] for w in plan.windows))}; greedy's whole run {greedy:.0f} ms",
              file=sys.stderr)
    print(f"median of run medians: {statistics.median(medians):.0f} ms per {args.window}-pod window "
          f"on {args.nodes} nodes (target 100 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
