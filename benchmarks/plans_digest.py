"""Plans of both engines and of the rebalancer on a fixed set of states, with everything that varies between runs
(timings, memory) left out, so that two revisions of kplace can be checked to decide the same plans.

    .venv/bin/python benchmarks/plans_digest.py --output-file /tmp/before.json        # at one revision
    .venv/bin/python benchmarks/plans_digest.py --output-file /tmp/after.json         # at another
    .venv/bin/python benchmarks/plans_digest.py --compare /tmp/before.json /tmp/after.json

Every case runs the `kplace` command of the interpreter's environment (so a worktree's venv checks that tree) on
a shipped instance or a generated state: `schedule` with each engine (CP-SAT deterministic, fixed seed), the
moves that make room, and `rebalance` with each goal. A restructuring that changes no behaviour keeps every
plan; `--compare` prints the cases whose plan differs (the first differing path) and exits 1 when one does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import write_json

ROOT = Path(__file__).resolve().parent.parent
KPLACE = str(Path(sys.executable).parent / "kplace")
VARYING = {"seconds", "wall_seconds", "solve_seconds", "load_seconds", "peak_rss_mb", "rss_mb", "memory", "timings"}

SHIPPED = ["demo-cluster", "affinity-small", "perf-basic-small", "volumes-small", "rebalance-demo"]
GENERATED = [  # (name, workload, nodes, pods, seed, params)
    ("dcm", "dcm", 60, 150, 1, ["fraction=50"]),
    ("spread-zones", "spread-zones", 40, 80, 0, []),
    ("preferred-affinity", "preferred-affinity", 20, None, 0, []),
    ("priority-overload", "priority-overload", 30, 80, 0, []),
    ("preemption-pdb", "preemption-pdb", 24, None, 0, []),
    ("gangs", "gangs", 40, None, 0, ["zone=1"]),
    ("fragmented-moves", "fragmented-moves", 16, None, 0, []),
    *[(f"corners-{s}", "corners", None, None, s, []) for s in range(4)],
]
# CP-SAT with no wall-clock deadline: on a loaded machine one would cut the search and give another plan
SCHEDULE = {
    "greedy": ["schedule", "--engine", "greedy"],
    "cpsat": ["schedule", "--engine", "cpsat", "--time-limit", "4", "--deadline", "0", "--seed", "0"],
}
EXTRA = {  # more commands on the states where they decide something
    "fragmented-moves": {"cpsat-moves": ["schedule", "--engine", "cpsat", "--time-limit", "4", "--deadline", "0",
                                         "--allow-moves", "8"],
                         "admit": ["rebalance", "--goal", "admit", "--time-limit", "4"]},
    "rebalance-demo": {g: ["rebalance", "--goal", g, "--time-limit", "4"] for g in ("pack", "balance", "all")},
    "dcm": {"pack": ["rebalance", "--goal", "pack", "--time-limit", "4"]},
}


def stable(obj: Any) -> Any:
    """`obj` without the keys whose values vary from run to run."""
    if isinstance(obj, dict):
        return {k: stable(v) for k, v in obj.items() if k not in VARYING}
    if isinstance(obj, list):
        return [stable(v) for v in obj]
    return obj


def states(tmp: Path) -> dict[str, Path]:
    out = {name: ROOT / "instances" / f"{name}.json" for name in SHIPPED}
    for name, workload, nodes, pods, seed, params in GENERATED:
        path = tmp / f"{name}.json"
        cmd = [KPLACE, "generate", workload, "--seed", str(seed), "--output-file", str(path)]
        cmd += (["--nodes", str(nodes)] if nodes else []) + (["--pods", str(pods)] if pods is not None else [])
        for p in params:
            cmd += ["--param", p]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
        out[name] = path
    return out


def run(state: Path, args: list[str]) -> Any:
    done = subprocess.run([KPLACE, *args, str(state), "-o", "json"], capture_output=True, text=True, timeout=600)
    if done.returncode not in (0, 5):
        return {"exit": done.returncode, "stderr": done.stderr.strip().splitlines()[-1:]}
    return stable(json.loads(done.stdout))


def digest() -> dict[str, Any]:
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in states(Path(tmp)).items():
            for label, args in {**SCHEDULE, **EXTRA.get(name, {})}.items():
                print(f"{name}: {label}", file=sys.stderr, flush=True)
                result[f"{name} {label}"] = run(path, args)
    return result


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return path or "/"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k}"
            d = first_difference(a[k], b[k], f"{path}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else path


def compare(before: Path, after: Path) -> int:
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (before, after))
    differ = 0
    for case in sorted(set(a) | set(b)):
        d = first_difference(a.get(case), b.get(case))
        if d:
            differ += 1
            print(f"DIFFERS {case}: {d}")
    print(f"{len(set(a) | set(b)) - differ} cases identical, {differ} differ")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output-file", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not args.output_file:
        ap.error("--output-file or --compare is needed")
    write_json(args.output_file, digest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
