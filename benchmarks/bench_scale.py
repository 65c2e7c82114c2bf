"""Benchmark (not a test): kplace on big generated clusters (`kplace generate scale`), issue 23.

    .venv/bin/python benchmarks/bench_scale.py                                # the default ladder
    .venv/bin/python benchmarks/bench_scale.py --size 20000x200000x40000 --steps load,greedy,cpsat
    .venv/bin/python benchmarks/bench_scale.py --size 50000x500000x100000 --max-rss-gib 12
    .venv/bin/python benchmarks/bench_scale.py --size 50000x500000x100000 --steps load,greedy --greedy-pods 5000

A size is NODESxPODSxPENDING (every pod, DaemonSets included, and the pending ones among them). Per size, each
step runs in a process of its own, so that its peak resident memory (getrusage's ru_maxrss) is its own, under a
watchdog that kills it past `--max-rss-gib` or `--step-timeout` (the step is then reported as killed):

- generate: `kplace generate scale` into a temporary folder (streamed JSON);
- load: `load_state` + `compile_index`;
- greedy: load, then the greedy engine over every pending pod, or the first N in queue order with
  `--greedy-pods N` (pods/s over the scheduling alone), then the verifier;
- cpsat: load, then `kplace schedule`'s decision (CP-SAT with `--time-limit T`, the wall-clock deadline T,
  verification included): its wall time against T, the deadline's report, pods placed per priority against
  greedy's.

Writes benchmarks/results/scale.json and the "Scale" section of docs/benchmarks.md (ratios are between figures
of the same run).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine, replace_section, write_json

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "scale.json"
DOC = HERE.parent / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_scale:begin -->", "<!-- bench_scale:end -->"
LADDER = ["5000x50000x20000", "20000x200000x40000"]
STEPS = ("generate", "load", "greedy", "cpsat")


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- the steps, each in its own process ---------------------------------------------------------------------


def _load(path: str):
    from kplace.models import compile_index, load_state

    t0 = time.perf_counter()
    snap = load_state([path])
    t1 = time.perf_counter()
    index = compile_index(snap)
    gc.freeze()  # as `kplace schedule` does (`cli.freeze_heap`)
    t2 = time.perf_counter()
    return snap, index, {"load_s": round(t1 - t0, 2), "compile_s": round(t2 - t1, 2), "load_rss_mib": _rss_mib()}


def _by_priority(plan) -> dict[str, int]:
    return {k: v["placed"] for k, v in plan.summary()["by_priority"].items()}


def _digest(plan) -> str:
    """The plan's placements and evictions, hashed: equal digests, the same plan."""
    text = repr((sorted((p.pod, p.node) for p in plan.placements), sorted((e.pod, e.node) for e in plan.evictions)))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def step(name: str, path: str, args: argparse.Namespace) -> dict:
    if name == "generate":
        nodes, pods, pending = args.size_tuple
        t0 = time.perf_counter()
        subprocess.run([str(Path(sys.executable).with_name("kplace")), "generate", "scale", "--nodes", str(nodes),
                        "--pods", str(pods), "--pending", str(pending), "--seed", str(args.seed), "--output-file",
                        path], check=True, capture_output=True)
        return {"seconds": round(time.perf_counter() - t0, 2), "mib": round(os.path.getsize(path) / 2**20, 1),
                "rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}
    _, index, out = _load(path)
    out["nodes"], out["pending"] = len(index.nodes), len(index.pending)
    from kplace.solver.framework.config import default_config

    config = default_config()
    if name == "load":
        return out
    if name == "greedy":
        from kplace.solver.greedy import GreedyScheduler
        from kplace.solver.verify import verify_plan

        pods = index.pending[: args.greedy_pods] if args.greedy_pods else index.pending
        t0 = time.perf_counter()
        plan = GreedyScheduler(index, config).run(pods)
        t1 = time.perf_counter()
        violations = verify_plan(index, plan)
        t2 = time.perf_counter()
        out.update(schedule_s=round(t1 - t0, 2), verify_s=round(t2 - t1, 2), violations=len(violations),
                   pods=len(pods), pods_per_s=round(len(pods) / max(t1 - t0, 1e-9), 1), placed=_by_priority(plan),
                   digest=_digest(plan),
                   rss_mib=_rss_mib())
        return out
    if name == "cpsat":
        from kplace.solver.cpsat import CpsatOptions
        from kplace.solver.schedule import decide

        opts = CpsatOptions(time_limit=args.time_limit, deadline=args.time_limit, window=args.window,
                            executor=args.executor)
        t0 = time.perf_counter()
        plan = decide(index, config, "cpsat", cpsat_options=opts)
        t1 = time.perf_counter()
        out.update(decide_s=round(t1 - t0, 2), time_limit=args.time_limit, placed=_by_priority(plan),
                   deadline=plan.deadline, windows=len(plan.windows), executor=args.executor,
                   modelled=sum(1 for w in plan.windows if not w.get("deadline")), digest=_digest(plan),
                   warnings=plan.warnings,
                   statuses={s: sum(1 for w in plan.windows if w["status"] == s)
                             for s in {w["status"] for w in plan.windows}},
                   rss_mib=_rss_mib())
        return out
    raise ValueError(name)


def _run_step(name: str, path: str, args: argparse.Namespace) -> dict:
    """The step in a child process under the memory and time watchdog."""
    cmd = [sys.executable, __file__, "--worker", name, "--state", path, "--size", args.size_text,
           "--time-limit", str(args.time_limit), "--window", str(args.window), "--seed", str(args.seed),
           "--executor", args.executor,
           "--greedy-pods", str(args.greedy_pods)]
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        proc = subprocess.Popen([*cmd, "--result", out.name])
        started, peak = time.perf_counter(), 0.0
        killed = None
        while proc.poll() is None:
            time.sleep(0.5)
            rss = _child_rss_mib(proc.pid)
            peak = max(peak, rss)
            if rss > args.max_rss_gib * 1024:
                killed = f"killed at {rss / 1024:.1f} GiB resident (limit {args.max_rss_gib} GiB)"
            elif time.perf_counter() - started > args.step_timeout:
                killed = f"killed after {args.step_timeout:.0f} s"
            if killed:
                proc.kill()
                proc.wait()
                break
        wall = round(time.perf_counter() - started, 2)
        if killed or proc.returncode:
            return {"error": killed or f"exit {proc.returncode}", "wall_s": wall, "peak_rss_mib": round(peak)}
        res = json.loads(Path(out.name).read_text() or "{}")
    res["wall_s"] = wall
    return res


def _child_rss_mib(pid: int) -> float:
    """The resident memory of `pid` and its children (the generate step runs kplace as a child)."""
    total = 0.0
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            pass
    return total


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


# --- the report ---------------------------------------------------------------------------------------------


def _fmt(x, unit="") -> str:
    return "-" if x is None else f"{x:,}{unit}" if isinstance(x, int) else f"{x:,.1f}{unit}"


def render(results: list[dict], args: argparse.Namespace) -> str:
    lines = [BEGIN, "", "Command (the states are generated by `kplace generate scale`, seed "
             f"{args.seed}; each step in a process of its own, killed past {args.max_rss_gib} GiB resident or "
             f"{args.step_timeout:.0f} s):", "",
             f"    .venv/bin/python benchmarks/bench_scale.py --size {' --size '.join(r['size'] for r in results)}"
             f" --time-limit {args.time_limit:g} --steps {','.join(args.steps)}"
             + (f" --executor {args.executor}" if args.executor != "auto" else "")
             + (f" --greedy-pods {args.greedy_pods}" if args.greedy_pods else ""), "",
             f"Machine: {machine()}; shared with other work while measured (one run per figure).", "",
             "| nodes × pods (pending) | generate | load + compile | load RSS | greedy sched (pods) | greedy pods/s | "
             "greedy verify | greedy RSS | CP-SAT decision (T) | CP-SAT RSS | placed CP-SAT / greedy | deadline |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        g, ld, gr, cp = (r.get(s, {}) for s in STEPS)
        n, p, pend = r["size_tuple"]

        def cell(d, key, unit="", div=1.0):
            if "error" in d:
                return d["error"]
            v = d.get(key)
            return "-" if v is None else _fmt(v / div, unit)

        load = "-" if not ld else ld["error"] if "error" in ld else f"{ld['load_s'] + ld['compile_s']:.1f} s"
        placed = "-"
        if gr.get("placed") and cp.get("placed") and not args.greedy_pods:
            placed = f"{sum(cp['placed'].values()):,} / {sum(gr['placed'].values()):,}"
            worse = [k for k in gr["placed"] if cp["placed"].get(k, 0) < gr["placed"][k]]
            placed += " (fewer at priority " + ", ".join(worse) + ")" if worse else " (≥ per priority)"
        deadline = "-"
        if cp and "error" not in cp:
            d = cp.get("deadline")
            deadline = ("not reached" if d is None else
                        f"passed: {len(d['fallback_windows'])} of {cp['windows']} windows greedy's, "
                        f"{len(d['cut_windows'])} cut")
        sched_pods = "" if "error" in gr or not gr else f" ({gr.get('pods', pend):,})"
        cpsat = "-" if not cp else cp["error"] if "error" in cp else f"{cp['decide_s']:.1f} s ({cp['time_limit']:g} s)"
        lines.append(f"| {n:,} × {p:,} ({pend:,}) | {cell(g, 'seconds', ' s')} | {load} | "
                     f"{cell(ld, 'load_rss_mib', ' GiB', 1024)} | {cell(gr, 'schedule_s', ' s')}"
                     f"{sched_pods} | "
                     f"{cell(gr, 'pods_per_s')} | {cell(gr, 'verify_s', ' s')} | {cell(gr, 'rss_mib', ' GiB', 1024)} | "
                     f"{cpsat} | {cell(cp, 'rss_mib', ' GiB', 1024)} | {placed} | {deadline} |")
    lines += ["", END]
    return "\n".join(lines)


def _size(text: str) -> tuple[int, int, int]:
    parts = [int(x) for x in text.lower().split("x")]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"{text!r} is not NODESxPODSxPENDING")
    return parts[0], parts[1], parts[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", action="append", help=f"NODESxPODSxPENDING (repeatable; default {' '.join(LADDER)})")
    ap.add_argument("--steps", default=",".join(STEPS), help="comma-separated among " + ", ".join(STEPS))
    ap.add_argument("--time-limit", type=float, default=60.0, help="CP-SAT's --time-limit and deadline (s)")
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--executor", default="auto", help="the CP-SAT step's --executor (auto, inprocess, pool, ray)")
    ap.add_argument("--greedy-pods", type=int, default=0,
                    help="the greedy step schedules the first N pending pods only (0: all); the CP-SAT step, which "
                         "compares with greedy's pods placed, is then left out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-rss-gib", type=float, default=10.0)
    ap.add_argument("--step-timeout", type=float, default=1800.0)
    ap.add_argument("--keep", type=Path, default=None, help="keep the generated states in this folder")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--state", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.size_text = args.size[0]
        args.size_tuple = _size(args.size_text)
        res = step(args.worker, args.state, args)
        Path(args.result).write_text(json.dumps(res))
        return 0
    args.steps = [s for s in args.steps.split(",") if s and not (s == "cpsat" and args.greedy_pods)]
    results = []
    for text in args.size or LADDER:
        args.size_text, args.size_tuple = text, _size(text)
        folder = args.keep or Path(tempfile.mkdtemp(prefix="kplace-scale-"))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"scale-{text}-s{args.seed}.json"
        row: dict = {"size": text, "size_tuple": args.size_tuple}
        for name in ("generate", *[s for s in args.steps if s != "generate"]):
            if name == "generate" and path.exists() and "generate" not in args.steps:
                continue
            print(f"{text}: {name} ...", file=sys.stderr, flush=True)
            row[name] = _run_step(name, str(path), args)
            print(f"{text}: {name}: {json.dumps(row[name])}", file=sys.stderr, flush=True)
            if name == "generate" and "error" in row[name]:
                break
        results.append(row)
        if args.keep is None:
            path.unlink(missing_ok=True)
            folder.rmdir()
    write_json(RESULTS, {"machine": machine(), "time_limit": args.time_limit, "results": results})
    if not args.no_doc:
        replace_section(DOC, BEGIN, END, render(results, args), heading="## Scale (issue 23)")
    print(render(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
