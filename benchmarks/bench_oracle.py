"""The greedy engine's speed against the real kube-scheduler's, side by side on the same states (issue 19).

    .venv/bin/python benchmarks/bench_oracle.py              # six workloads, 3 repetitions each (a few minutes)
    .venv/bin/python benchmarks/bench_oracle.py --no-docs

kube-scheduler is the oracle (`make -C oracle`: kube-scheduler linked as a Go library, a fake clientset and
informers, no API server); its time is the sum of its scheduling cycles' wall times (`ScheduleOne`, which pops
the pod and runs the scheduling cycle, PostFilter included; the binding cycle runs asynchronously, as in kube),
with the configuration's 16 filter workers (`--parallelism 0`) and without the oracle's recording of filter
statuses and scores (`--no-record`), setup excluded. kplace's time
is the greedy engine's `run` (plan.seconds), loading excluded. Both schedule every pending pod once in queue order
(kube's preemptors bind in a later cycle that the oracle does not run; kplace's greedy places them then, so its
figure includes those cycles). Pods/s = pending pods / seconds; medians over repetitions; the ratio is
kplace ÷ kube, measured in the same run. Rows go to benchmarks/results/oracle.json and, unless --no-docs, to the
"Greedy engine against the real kube-scheduler" section of docs/benchmarks.md.
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
RESULTS = ROOT / "benchmarks" / "results" / "oracle.json"
BEGIN, END = "<!-- BEGIN oracle (benchmarks/bench_oracle.py) -->", "<!-- END oracle -->"

# (label, workload, nodes, pods, params): scheduler_perf's shapes at 1,000 nodes, and a preemption workload
WORKLOADS = [
    ("SchedulingBasic", "perf-basic", 1000, 1000, {}),
    ("SchedulingPodAffinity", "perf-pod-affinity", 1000, 1000, {}),
    ("SchedulingPodAntiAffinity", "perf-pod-anti-affinity", 1000, 1000, {}),
    ("TopologySpreading", "perf-spread", 1000, 1000, {}),
    ("PreferredTopologySpreading", "perf-preferred-spread", 1000, 1000, {}),
    ("Preemption", "priority-overload", 200, 400, {}),
]


def run(label: str, workload: str, nodes: int, pods: int, params: dict, reps: int) -> dict:
    from kplace.instances.generators import generate
    from kplace.solver.cli import load_index
    from kplace.solver.greedy import GreedyScheduler
    from kplace.solver.oracle import run_oracle
    from kplace.solver.output import dumps

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.json"
        path.write_text(dumps(generate(workload, nodes=nodes, pods=pods, seed=0, params=params)), encoding="utf-8")
        index, config = load_index((str(path),), None)
        kube, mine, kube_placed, mine_placed = [], [], set(), set()
        for _ in range(reps):
            cycles = run_oracle([str(path)], binary=None, extra=["--parallelism", "0", "--no-record"])
            kube.append(sum(c["schedule_seconds"] for c in cycles))
            last = {c["pod"]: c for c in cycles}  # a pod retried after preemption has several cycles
            kube_placed.add(sum(1 for c in last.values() if c["node"]))
            plan = GreedyScheduler(index, config).run()
            mine.append(plan.seconds)
            mine_placed.add(sum(1 for p in plan.placements if p.node is not None))
    # kube's preemption starts its candidate walk at a random offset (and 16 workers race), so what it places may vary
    assert len(mine_placed) == 1, f"{label}: kplace's pods placed vary between repetitions"
    pending = len(index.pending)
    k, m = statistics.median(kube), statistics.median(mine)
    return {"label": label, "workload": workload, "nodes": nodes, "pending": pending, "reps": reps,
            "kube_seconds": kube, "kplace_seconds": mine, "kube_pods_per_s": pending / k,
            "kplace_pods_per_s": pending / m, "ratio": k / m,
            "kube_placed": "–".join(f"{n:,}" for n in sorted({min(kube_placed), max(kube_placed)})),
            "kplace_placed": mine_placed.pop()}


def table(rows: list[dict]) -> str:
    out = ["| workload | nodes | pending pods | kube-scheduler pods/s | kplace greedy pods/s | kplace ÷ kube | "
           "placed kube / kplace |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['label']} (`{r['workload']}`) | {r['nodes']:,} | {r['pending']:,} | "
                   f"{r['kube_pods_per_s']:,.0f} | {r['kplace_pods_per_s']:,.0f} | {r['ratio']:.2f}× | "
                   f"{r['kube_placed']} / {r['kplace_placed']:,} |")
    return "\n".join(out)


def write_docs(rows: list[dict], seconds: float, version: str) -> None:
    body = "\n".join([
        BEGIN,
        f"Command: `.venv/bin/python benchmarks/bench_oracle.py` ({machine()}; kube-scheduler {version} through "
        f"`oracle/bin/kube-oracle`; {seconds:.0f} s). Medians over {rows[0]['reps']} repetitions, both measured in "
        "the same run; kube's time is its scheduling cycles' wall times (`ScheduleOne`, 16 filter workers, no "
        "recording, setup and asynchronous binding excluded), kplace's the greedy engine's run (loading "
        "excluded). "
        + ("Both place as many pods on every row (the differential tests check the nodes, pod by pod, with one "
           "filter worker and kube's candidate walk from offset 0)."
           if all(r["kube_placed"] == f"{r['kplace_placed']:,}" for r in rows)
           else "The last column shows where the two place different numbers of pods: with 16 workers and its "
                "random candidate offset, kube's preemption varies between runs (a range), kplace's does not."),
        "", table(rows), END])
    replace_section(DOC, BEGIN, END, body, "## Greedy engine against the real kube-scheduler (issue 19)")


def main(argv: list[str] | None = None) -> int:
    from kplace.solver.oracle import oracle_version, require_oracle

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-docs", action="store_true")
    args = ap.parse_args(argv)
    version = oracle_version(require_oracle())
    started = time.perf_counter()
    rows = []
    for label, workload, nodes, pods, params in WORKLOADS:
        row = run(label, workload, nodes, pods, params, args.reps)
        rows.append(row)
        print(f"{label}: kube {row['kube_pods_per_s']:,.0f} pods/s, kplace {row['kplace_pods_per_s']:,.0f} pods/s "
              f"({row['ratio']:.2f}×)", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    write_json(RESULTS, rows)
    print(table(rows))
    if not args.no_docs:
        write_docs(rows, seconds, version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
