"""Benchmark (not a test): a window's independent components searched in this process, in a local process pool and
on a local Ray instance (issue 23 item 1): the same plan on each, and the wall time it takes.

    .venv/bin/python benchmarks/bench_executors.py [--runs 3] [--nodes 1000] [--pods 8000] [--pending 800]
        [--tenants 6] [--workers 1] [--time-limit 8] [--executors inprocess,pool,ray]

`kplace generate scale --param tenants=K` (seed 0; K dedicated tainted node pools, so a window holds at least K
independent models) is loaded and compiled once (not timed); each run is a fresh `schedule_cpsat` (one window,
deterministic, `--workers` CP-SAT workers per search, no deadline) per executor. Printed per executor: the median
wall time of the run (Ray's includes starting a local Ray instance, timed apart as `ray.init`), its ratio to
in-process, and whether the plan equals the in-process one. The pool and Ray run `usable cores // workers`
searches at a time: with --workers 2 on two cores, one (no speed-up to expect).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from kplace.instances.generators import generate
from kplace.models import compile_index, load_state
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.executors import usable_cores


def _run(index, executor: str, args) -> tuple[float, list, dict]:
    opts = CpsatOptions(time_limit=args.time_limit, workers=args.workers, seed=0, executor=executor)
    started = time.perf_counter()
    plan = schedule_cpsat(index, options=opts)
    return time.perf_counter() - started, [(p.pod, p.node) for p in plan.placements], plan.windows[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=8000)
    ap.add_argument("--pending", default="800")
    ap.add_argument("--tenants", type=int, default=6)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=8.0)
    ap.add_argument("--executors", default="inprocess,pool,ray")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.json"
        doc = generate("scale", nodes=args.nodes, pods=args.pods, seed=0,
                       params={"tenants": str(args.tenants), "pending": args.pending})
        path.write_text(json.dumps(doc))
        index = compile_index(load_state([str(path)]))
    names = args.executors.split(",")
    print(f"scale: {args.nodes} nodes, {args.pods} pods ({len(index.pending)} pending), tenants={args.tenants}; "
          f"--workers {args.workers} --time-limit {args.time_limit:g}; {usable_cores()} usable cores")
    times: dict[str, list[float]] = {n: [] for n in names}
    plans: dict[str, list] = {}
    init: list[float] = []
    for _ in range(args.runs):
        for name in names:
            if name == "ray":
                import ray

                t = time.perf_counter()
                ray.init(num_cpus=usable_cores(), include_dashboard=False, log_to_driver=False)
                init.append(time.perf_counter() - t)
            try:
                seconds, placements, window = _run(index, name, args)
            finally:
                if name == "ray":
                    ray.shutdown()
            times[name].append(seconds + (init[-1] if name == "ray" else 0.0))
            plans.setdefault(name, placements)
            assert plans[name] == placements, f"{name}: another plan on a rerun"
    base = statistics.median(times[names[0]])
    print(f"window: {window['components']} components, status {window['status']}")
    print(f"{'executor':10} {'median s':>9} {'ratio':>6}  same plan as {names[0]}")
    for name in names:
        med = statistics.median(times[name])
        print(f"{name:10} {med:9.2f} {med / base:6.2f}  {plans[name] == plans[names[0]]}"
              + (f"  (ray.init {statistics.median(init):.2f} s of it)" if name == "ray" else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
