"""Run the user guide's walkthrough as written and put each command's output into the guide.

    .venv/bin/python docs/walkthrough.py           # run every step, rewrite the outputs in docs/user-guide.md
    .venv/bin/python docs/walkthrough.py --check   # run every step; fail if a command fails or an output drifted

The steps run in a fresh temporary folder holding a copy of `instances/`, through the `kplace` of this
environment, exactly as a user types them (the state comes from `kplace generate`, since no cluster is at hand).
Each step's output goes between the markers `<!-- output: NAME -->` and `<!-- end output -->` in the guide.
Figures that change from run to run (seconds, memory) are masked, so `--check` compares what is stable.
The guide shows the deterministic plans: a run in which a step says its wall-clock deadline cut the search (a
loaded machine) is run again, up to ATTEMPTS times in all, and the walkthrough fails if every attempt was cut.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kplace.solver.cpsat.window import DEADLINE_WORDS

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "user-guide.md"
KPLACE = str(Path(sys.executable).parent / "kplace")

STEPS = [  # (name, command as the guide shows it)
    ("generate", "kplace generate fragmentation --nodes 40 --output-file state.json"),
    ("inspect", "kplace inspect state.json"),
    ("compare", "kplace compare state.json --time-limit 10 --report report/"),
    ("schedule", "kplace schedule state.json -o json --output-file plan.json"),
    ("verify", "kplace verify state.json plan.json"),
    ("manifest", "kplace schedule state.json --bind manifest --output-file bindings.yaml"),
    ("rebalance", "kplace rebalance instances/rebalance-demo.json"),
]
_VOLATILE = [
    (re.compile(r"\d+\.\d+ ?s\b"), "N s"),  # durations
    (re.compile(r"\b\d+\.\d+s\b"), "Ns"),
    (re.compile(r"[\d,.]+ MiB"), "N MiB"),
]
_BLOCK = re.compile(r"(<!-- output: (?P<name>[a-z-]+) -->\n```text\n)(?P<body>.*?)(\n```\n<!-- end output -->)",
                    re.DOTALL)


ATTEMPTS = 3


def run_steps() -> dict[str, str]:
    """Every step's output, from the first attempt no deadline cut."""
    for attempt in range(1, ATTEMPTS + 1):
        out, cut = _run_once()
        if not cut:
            return out
        print(f"walkthrough: attempt {attempt}: the deadline cut step(s) {', '.join(cut)} (a loaded machine)",
              file=sys.stderr)
    raise SystemExit(f"walkthrough: the wall-clock deadline cut a search in each of {ATTEMPTS} attempts, so the "
                     "deterministic plans the guide shows were not reached; rerun on a less loaded machine")


def _run_once() -> tuple[dict[str, str], list[str]]:
    """Each step's output (its first 40 lines) and the steps whose output says the deadline cut a search."""
    out: dict[str, str] = {}
    cut: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(ROOT / "instances", Path(tmp) / "instances")
        for name, command in STEPS:
            args = [KPLACE, *shlex.split(command)[1:]]
            res = subprocess.run(args, cwd=tmp, capture_output=True, text=True, timeout=300,
                                 env={"PATH": str(Path(KPLACE).parent), "COLUMNS": "110", "HOME": tmp})
            if res.returncode != 0:
                raise SystemExit(f"walkthrough: `{command}` exited {res.returncode}:\n{res.stderr}")
            text = (res.stdout + res.stderr).rstrip()
            if DEADLINE_WORDS in text:  # the plan's warning (`kplace: warning: ...`)
                cut.append(name)
            out[name] = "\n".join(line.rstrip() for line in text.splitlines()[:40])
    return out, cut


def mask(text: str) -> str:
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    outputs = run_steps()
    guide = GUIDE.read_text(encoding="utf-8")
    shown = {m.group("name") for m in _BLOCK.finditer(guide)}
    missing = sorted(shown - set(outputs))
    if missing:
        raise SystemExit(f"walkthrough: the guide shows outputs of unknown steps: {', '.join(missing)}")
    new = _BLOCK.sub(lambda m: m.group(1) + mask(outputs[m.group("name")]) + m.group(4), guide)
    if args.check:
        if mask(new) != mask(guide):
            import difflib

            diff = difflib.unified_diff(mask(guide).splitlines(), mask(new).splitlines(), "user-guide.md", "now",
                                        lineterm="", n=1)
            print("walkthrough: the outputs in docs/user-guide.md drifted; run docs/walkthrough.py\n"
                  + "\n".join(list(diff)[:60]), file=sys.stderr)
            return 1
        print(f"walkthrough: {len(outputs)} steps ran, {len(shown)} outputs as shown")
        return 0
    GUIDE.write_text(new, encoding="utf-8")
    print(f"walkthrough: {len(outputs)} steps ran; {len(shown)} outputs written to {GUIDE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
