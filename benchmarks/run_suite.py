"""The CP-SAT benchmark suite (issue 4's "Benchmark suite and targets"), run through `kplace compare`.

    .venv/bin/python benchmarks/run_suite.py            # the default suite (about 20 minutes on 2 cores)
    .venv/bin/python benchmarks/run_suite.py --quick    # small sizes, one seed (a couple of minutes)
    .venv/bin/python benchmarks/run_suite.py --only dcm,vbp --no-docs

Every instance is generated (`kplace.instances.generators`), written to a kubectl-style List, loaded like a user's
export, and compared with `kplace.solver.compare.run_compare` (the library behind `kplace compare`): both engines
through `decide` (engine + verifier), each in its own forked process (wall time; peak memory = that process's
peak RSS, OR-Tools included). Rows go to benchmarks/results/cpsat-suite[-quick].json; unless --no-docs, the
"CP-SAT engine" section of docs/benchmarks.md (between its BEGIN/END markers) and docs/img/cpsat-*.png are
regenerated from them. Figures per instance family are medians over seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from common import machine, replace_section, write_json

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
IMG = ROOT / "docs" / "img"
RESULTS = ROOT / "benchmarks" / "results"
BEGIN, END = "<!-- BEGIN cpsat-suite (benchmarks/run_suite.py) -->", "<!-- END cpsat-suite -->"
VBP = ROOT.parent / "shared" / "data" / "vbp-panigrahy-vectorpack"
OPENB = ROOT.parent / "shared" / "data" / "alibaba-gpu-v2023-openb"


@dataclass
class Case:
    family: str
    label: str
    workload: str
    nodes: int | None = None
    pods: int | None = None
    params: dict[str, str] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0, 1, 2)
    time_limit: float = 10.0
    window: int = 1000
    objective: str = "default"
    target: str = ""  # a named target this case measures
    score_limit: int = 200
    deterministic: bool = True


def vbp_instances(quick: bool) -> list[str]:
    """Per class, the first instance of 20 and of 40 items (quick: 20 items, classes 1 and 4) whose optimum is
    published (OPT column of Panigrahy_summary_known.csv) and whose file is present."""
    table = VBP / "Panigrahy_summary_known.csv"
    if not table.is_file():
        return []
    rows = [line.split("\t") for line in table.read_text(encoding="utf-8").splitlines()[1:] if line.strip()]
    wanted = [(c, n) for c in ((1, 4) if quick else range(1, 10)) for n in ((20,) if quick else (20, 40))]
    out = []
    for c, n in wanted:
        for r in rows:
            name = r[0]
            parts = name.split("_")
            if (parts[0] == f"class{c}" and parts[1] == str(n) and len(r) > 2 and r[2] not in ("-1", "")
                    and (VBP / parts[0] / f"{name}.vbp").is_file()):
                out.append(name)
                break
    return out


def suite(quick: bool) -> list[Case]:
    s3 = (0,) if quick else (0, 1, 2)
    tl = 2.0 if quick else 5.0
    cases: list[Case] = []
    for f in (0, 50, 100):
        cases.append(Case("dcm", f"F={f}%", "dcm", 100 if quick else 500, None, {"fraction": str(f)}, s3, tl))
    big = 1000 if quick else 5000
    cases.append(Case("dcm", f"F=100%, {big:,} nodes, one {200 if quick else 1000:,}-pod window", "dcm", big,
                      200 if quick else 1000, {"fraction": "100"}, (0,), 5.0 if quick else 10.0,
                      target="window-5000x1000"))
    # the same window on a cluster already about 80% used by running pods (±25 points per node): DCM's loaded
    # regime, where greedy's spreading leaves no node with room for the biggest pods
    cases.append(Case("dcm", f"F=100%, {big:,} nodes 80% full, one {200 if quick else 1000:,}-pod window", "dcm", big,
                      200 if quick else 1000, {"fraction": "100", "fill": "80"}, s3, 5.0 if quick else 10.0))
    cases.append(Case("fragmentation", "40 nodes", "fragmentation", 40, None, {}, s3, tl))
    if not quick:
        cases.append(Case("fragmentation", "200 nodes", "fragmentation", 200, None, {}, s3, tl))
    cases.append(Case("spread-zones", "4 zones, 100 nodes", "spread-zones", 100 if not quick else 40, None, {}, s3, tl))
    if not quick:
        cases.append(Case("spread-zones", "6 zones, 300 nodes", "spread-zones", 300, None, {"zones": "6"}, s3, 10.0))
    cases.append(Case("priority-overload", "50 nodes, 120% demand", "priority-overload", 50 if not quick else 20, None,
                      {}, s3, tl))
    if OPENB.is_dir():
        # one window over the whole pod list: the pods that fit once the GPUs run out are only known globally
        cases.append(Case("openb", "1,523 nodes, default pod list" + (" (first 1,000 pods)" if quick else "")
                          + ", one window", "openb", None, 1000 if quick else None, {}, (0,), 5.0 if quick else 60.0,
                          window=100_000))
    perf = ["perf-basic", "perf-pod-anti-affinity", "perf-spread", "perf-preferred-pod-affinity",
            "perf-node-affinity"]
    for w in perf[:2] if quick else perf:
        cases.append(Case("scheduler_perf", w, w, 200 if quick else 1000, 200 if quick else 1000, {}, (0,),
                          tl))
    # every pod fits: where pods go is decided by the profile's scores (issue 16's families)
    cases.append(Case("all-fit", "dcm, 200 nodes at 50% load, 300 pods", "dcm", 200, 300, {"fill": "50"}, s3, tl))
    cases.append(Case("all-fit", "preferred affinity and anti-affinity, 20 nodes", "preferred-affinity", 20, 21, {},
                      s3, tl))
    if not quick:
        cases.append(Case("all-fit", "perf-preferred-spread, 300 nodes", "perf-preferred-spread", 300, 300, {}, s3,
                          tl))
    cases.append(Case("dcm", "50 pods on 500 nodes, windows of 50", "dcm", 500, 500, {"fraction": "50"}, (0,),
                      5.0 if quick else 10.0, window=50, target="window-50x500"))
    if not quick:
        cases.append(Case("dcm", "F=100%, 5,000 nodes, 20,000 pods (memory)", "dcm", 5000, 20000,
                          {"fraction": "100"}, (0,), 20.0, target="memory-5000x20000"))
    for name in vbp_instances(quick):
        path = VBP / name.split("_")[0] / f"{name}.vbp"
        # wall-clock mode and a 9 s limit: the target is 10 s of wall time per instance
        cases.append(Case("vbp", name, "vbp", None, None, {"file": str(path)}, (0,), 9.0,
                          objective="pack", score_limit=0, deterministic=False))
    return cases


# --- running --------------------------------------------------------------------------------------------------


def _first_at_greedy_quality(data: dict[str, Any]) -> float | None:
    """Seconds from the CP-SAT run's start to the first solution at least as good as greedy's plan in that stage
    (the first window; stage values from the window's own record of greedy's objective)."""
    windows = data["cpsat"].get("windows") or []
    if not windows:
        return None
    greedy_by_stage = {s["stage"]: s.get("greedy") for s in windows[0].get("stages", [])}
    for t, obj, _bound, stage in data["cpsat"]["timeline"]:
        g = greedy_by_stage.get(stage)
        if g is not None and obj >= g:
            return t
    return None


def _incumbent_at(data: dict[str, Any]) -> float | None:
    """Seconds from the CP-SAT run's start until its first window holds greedy's plan (its incumbent)."""
    from kplace.solver.cpsat.window import INCUMBENT

    return next((t for t, _o, _b, stage in data["cpsat"]["timeline"] if stage == INCUMBENT), None)


def run_case(case: Case, seed: int) -> dict[str, Any]:
    from kplace.instances.generators import generate
    from kplace.solver.cli import load_index
    from kplace.solver.compare import CompareOptions, run_compare
    from kplace.solver.output import dumps

    started = time.perf_counter()
    obj = generate(case.workload, nodes=case.nodes, pods=case.pods, seed=seed, params=case.params)
    ann = obj.get("metadata", {}).get("annotations", {})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.json"
        path.write_text(dumps(obj), encoding="utf-8")
        del obj
        index, config = load_index((str(path),), None)
    opts = CompareOptions(time_limit=case.time_limit, window=case.window, objective=case.objective, seed=seed,
                          score_limit=case.score_limit, deterministic=case.deterministic)
    cmp = run_compare(index, config, opts)
    d = cmp.data
    g, c = d["greedy"], d["cpsat"]
    prios = sorted({*g["placement"]["by_priority"], *c["placement"]["by_priority"]}, key=int, reverse=True)
    gvec = [g["placement"]["by_priority"].get(p, {}).get("placed", 0) for p in prios]
    cvec = [c["placement"]["by_priority"].get(p, {}).get("placed", 0) for p in prios]
    s = c["solver"] or {}
    win_secs = [w["seconds"] for w in c.get("windows") or []]
    row = {
        "family": case.family, "label": case.label, "seed": seed, "target": case.target,
        "nodes": d["state"]["nodes"], "pods": d["state"]["pods_pending"], "bound_pods": d["state"]["pods_bound"],
        "time_limit": case.time_limit, "window": case.window, "goal": case.objective,
        "greedy_placed": g["placement"]["placed"], "cpsat_placed": c["placement"]["placed"],
        "greedy_by_priority": dict(zip(prios, gvec, strict=True)),
        "cpsat_by_priority": dict(zip(prios, cvec, strict=True)),
        "lex_at_least": cvec >= gvec, "lex_more": cvec > gvec,
        "placed_bound": s.get("placed_bound"), "placed_objective": s.get("placed_objective"),
        "single_priority": len(prios) <= 1,
        "objective": s.get("objective"), "bound": s.get("bound"), "gap": s.get("gap"),
        "greedy_objective": s.get("greedy_objective"), "statuses": s.get("statuses", {}),
        "greedy_nodes_used": g["nodes"]["in_use"], "cpsat_nodes_used": c["nodes"]["in_use"],
        "greedy_measure_per_pod": g["score"]["mean_per_pod"], "cpsat_measure_per_pod": c["score"]["mean_per_pod"],
        "greedy_seconds": g["wall_seconds"], "cpsat_seconds": c["wall_seconds"],
        "greedy_engine_seconds": g["engine_seconds"], "cpsat_engine_seconds": c["engine_seconds"],
        "greedy_peak_mib": g["memory"]["peak_mib"], "cpsat_peak_mib": c["memory"]["peak_mib"],
        "greedy_increment_mib": g["memory"]["increment_mib"], "cpsat_increment_mib": c["memory"]["increment_mib"],
        "window_seconds": win_secs, "first_greedy_quality_s": _first_at_greedy_quality(d),
        "incumbent_s": _incumbent_at(d),
        "timeline": c["timeline"] if case.target == "window-5000x1000" else None,
        "fallback_warnings": [w for w in c.get("warnings", []) if "bug" in w],
        "vbp_optimum": int(ann["kplace.io/vbp-optimum"]) if ann.get("kplace.io/vbp-optimum") else None,
        "vbp_lower_bound": int(ann["kplace.io/vbp-lower-bound"]) if ann.get("kplace.io/vbp-lower-bound") else None,
        "run_seconds": round(time.perf_counter() - started, 2),
    }
    return row


# --- the docs -------------------------------------------------------------------------------------------------


def commit() -> str:
    """The commit measured: $KPLACE_SUITE_COMMIT when the suite runs from a snapshot of it, else the work tree's."""
    if os.environ.get("KPLACE_SUITE_COMMIT"):
        return os.environ["KPLACE_SUITE_COMMIT"][:12] + " (a clean snapshot of that commit)"
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
        return head + (" (with uncommitted changes in the working tree)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _med(rows: list[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def _fmt(v, spec: str = "{:,.0f}") -> str:
    return "-" if v is None else spec.format(v)


def _groups(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        out.setdefault((r["family"], r["label"]), []).append(r)
    return out


def family_tables(rows: list[dict]) -> str:
    out = []
    fams: dict[str, list[tuple[str, list[dict]]]] = {}
    for (fam, label), rs in _groups(rows).items():
        if fam != "vbp":
            fams.setdefault(fam, []).append((label, rs))
    for fam, items in fams.items():
        out.append(f"### {fam}\n")
        out.append("| instance | seeds | nodes | pods | greedy placed | CP-SAT placed | bound (placed) | goal gap | "
                   "measure per pod, greedy / CP-SAT | windows | greedy s | CP-SAT s | greedy MiB | CP-SAT MiB |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for label, rs in items:
            statuses: dict[str, int] = {}
            for r in rs:
                for k, n in r["statuses"].items():
                    statuses[k] = statuses.get(k, 0) + n
            bound = _fmt(_med(rs, "placed_bound")) if all(r["single_priority"] for r in rs) else "weighted†"
            more = sum(r["lex_more"] for r in rs)
            ok = all(r["lex_at_least"] for r in rs)
            cp = _fmt(_med(rs, "cpsat_placed")) + ("" if ok else " ✗")
            cp += f" (more on {more}/{len(rs)})" if more else ""
            st = ", ".join(f"{n} {k}" for k, n in sorted(statuses.items()))
            out.append(
                f"| {label} | {len(rs)} | {_fmt(_med(rs, 'nodes'))} | {_fmt(_med(rs, 'pods'))} | "
                f"{_fmt(_med(rs, 'greedy_placed'))} | {cp} | {bound} | {_fmt(_med(rs, 'gap'), '{:.2%}')} | "
                f"{_fmt(_med(rs, 'greedy_measure_per_pod'), '{:.1f}')} / "
                f"{_fmt(_med(rs, 'cpsat_measure_per_pod'), '{:.1f}')} | {st} | "
                f"{_fmt(_med(rs, 'greedy_seconds'), '{:.2f}')} | {_fmt(_med(rs, 'cpsat_seconds'), '{:.2f}')} | "
                f"{_fmt(_med(rs, 'greedy_peak_mib'))} | {_fmt(_med(rs, 'cpsat_peak_mib'))} |")
        out.append("")
    return "\n".join(out)


def vbp_table(rows: list[dict]) -> tuple[str, int, int]:
    vs = [r for r in rows if r["family"] == "vbp"]
    if not vs:
        return "", 0, 0
    out = ["### vbp (`--objective pack --wall-clock --time-limit 9`; the target is 10 s of wall time each)\n",
           "| instance | items | optimum | lower bound | greedy nodes | CP-SAT nodes | = optimum | windows | "
           "CP-SAT s |",
           "|---|---|---|---|---|---|---|---|---|"]
    hit = known = 0
    for r in vs:
        opt = r["vbp_optimum"]
        at_opt = r["cpsat_nodes_used"] == opt and r["cpsat_placed"] == r["pods"]
        eq = "-" if opt is None else ("yes" if at_opt else "no")
        if opt is not None:
            known += 1
            hit += eq == "yes" and r["cpsat_seconds"] <= 10.0
        out.append(f"| {r['label']} | {r['pods']} | {_fmt(opt)} | {_fmt(r['vbp_lower_bound'])} | "
                   f"{r['greedy_nodes_used']} | {r['cpsat_nodes_used']} | {eq} | "
                   f"{', '.join(f'{n} {k}' for k, n in r['statuses'].items())} | {r['cpsat_seconds']:.2f} |")
    out.append("")
    return "\n".join(out), hit, known


def targets(rows: list[dict], hit: int, known: int) -> str:
    """The issue-4 targets table; `hit`/`known` are vbp_table's counts."""
    lines = ["| target | measured | verdict |", "|---|---|---|"]
    bad = [f"{r['family']} {r['label']} seed {r['seed']}" for r in rows if not r["lex_at_least"]]
    lines.append(f"| CP-SAT places at least what greedy places, priority by priority, on every instance | "
                 f"{len(rows) - len(bad)}/{len(rows)} runs"
                 + (f"; fewer on {', '.join(bad)}" if bad else "")
                 + f" | {'met' if not bad else 'MISSED'} |")
    for fam, pred in (("dcm", lambda r: r["label"].startswith("F=100%, 5,000 nodes")), ("fragmentation", None),
                      ("spread-zones", None), ("openb", None)):
        rs = [r for r in rows if r["family"] == fam and (pred is None or pred(r))]
        if not rs:
            lines.append(f"| strictly more on {fam} | not run | - |")
            continue
        # only a run where greedy leaves pods out can be beaten
        short = [r for r in rs if r["greedy_placed"] < r["pods"]]
        what = "DCM F=100% at 5,000 nodes" if fam == "dcm" else fam
        full = f"; greedy placed every pod in {len(rs) - len(short)} other run(s)" if len(short) < len(rs) else ""
        if not short:
            lines.append(f"| strictly more on {what} | greedy placed every pod in all {len(rs)} runs | - |")
            continue
        more = sum(r["lex_more"] for r in short)
        gain = statistics.median(r["cpsat_placed"] - r["greedy_placed"] for r in short)
        lines.append(f"| strictly more on {what} | more on {more}/{len(short)} runs where greedy left pods out "
                     f"(median {gain:+g} pods){full} | "
                     f"{'met' if more == len(short) else 'MISSED' if more == 0 else 'partly met'} |")
    if known:
        lines.append(f"| `--objective pack`: nodes = published optimum on ≥ 90% of vbp instances, within 10 s | "
                     f"{hit}/{known} ({hit / known:.0%}) | {'met' if hit >= 0.9 * known else 'MISSED'} |")
    w = next((r for r in rows if r["target"] == "window-5000x1000"), None)
    if w:
        fq, inc = w["first_greedy_quality_s"], w.get("incumbent_s")
        lines.append(f"| 5,000 nodes × 1,000-pod window: a plan at least as good as greedy within 2 s | the engine "
                     f"holds greedy's plan (its incumbent, committed if nothing better comes) at "
                     f"{_fmt(inc, '{:.2f}')} s; the first CP-SAT solution ≥ greedy at {_fmt(fq, '{:.2f}')} s "
                     f"({w['nodes']} nodes, {w['pods']} pods) | "
                     f"{'met' if inc is not None and inc <= 2 else 'MISSED'} (incumbent); "
                     f"{'met' if fq is not None and fq <= 2 else 'MISSED'} (CP-SAT) |")
        lines.append(f"| … and the final plan within 10 s with 2 workers | engine {w['cpsat_engine_seconds']:.2f} s, "
                     f"with the verifier {w['cpsat_seconds']:.2f} s | "
                     f"{'met' if w['cpsat_engine_seconds'] <= 10 else 'MISSED'} |")
    w = next((r for r in rows if r["target"] == "window-50x500"), None)
    if w and w["window_seconds"]:
        med = statistics.median(w["window_seconds"])
        lines.append(f"| 50 pods on 500 nodes: median ≤ 100 ms per window | median {med * 1000:.0f} ms over "
                     f"{len(w['window_seconds'])} windows (min {min(w['window_seconds']) * 1000:.0f}, max "
                     f"{max(w['window_seconds']) * 1000:.0f}) | {'met' if med <= 0.1 else 'MISSED'} |")
    w = next((r for r in rows if r["target"] == "memory-5000x20000"), None)
    if w:
        peak = max(w["greedy_peak_mib"] or 0, w["cpsat_peak_mib"] or 0)
        lines.append(f"| memory: 5,000 nodes, 20,000 pods under 4 GiB peak | CP-SAT process peak RSS "
                     f"{w['cpsat_peak_mib']:,.0f} MiB, greedy {w['greedy_peak_mib']:,.0f} MiB | "
                     f"{'met' if peak < 4096 else 'MISSED'} |")
    else:
        lines.append("| memory: 5,000 nodes, 20,000 pods under 4 GiB peak | not run (--quick) | - |")
    return "\n".join(lines)


def _save(fig, name: str, made: list[str]) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(IMG / name, dpi=96)
    plt.close(fig)
    made.append(name)


def _barh_pair(ax, labels: list[str], greedy: list[float], cpsat: list[float], cpsat_label: str) -> None:
    """Greedy and CP-SAT side by side, one pair of horizontal bars per instance family."""
    y = range(len(labels))
    ax.barh([i + 0.2 for i in y], greedy, height=0.4, color="#d9822b", label="greedy (kube-scheduler)")
    ax.barh([i - 0.2 for i in y], cpsat, height=0.4, color="#2b6cb0", label=cpsat_label)
    ax.set_yticks(list(y), labels, fontsize=8)
    ax.invert_yaxis()


def plots(rows: list[dict], suffix: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    IMG.mkdir(parents=True, exist_ok=True)
    made = []
    groups = [(k, rs) for k, rs in _groups(rows).items() if k[0] != "vbp"]
    labels = [f"{f}: {lab}" for (f, lab), _ in groups]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(groups) + 1.2))
    g = [100 * _med(rs, "greedy_placed") / max(1, _med(rs, "pods")) for _, rs in groups]
    c = [100 * _med(rs, "cpsat_placed") / max(1, _med(rs, "pods")) for _, rs in groups]
    _barh_pair(ax, labels, g, c, "CP-SAT")
    ax.set_xlabel("pending pods placed, % (median over seeds)")
    ax.set_xlim(max(0, min([*g, *c, 100]) - 5), 100.5)
    ax.legend(fontsize=8, loc="lower left")
    _save(fig, f"cpsat-placed{suffix}.png", made)

    fig, ax = plt.subplots(figsize=(9, 0.42 * len(groups) + 1.2))
    _barh_pair(ax, labels, [_med(rs, "greedy_seconds") for _, rs in groups],
               [_med(rs, "cpsat_seconds") for _, rs in groups], "CP-SAT (time limit split over windows)")
    ax.set_xscale("log")
    ax.set_xlabel("wall seconds, engine + verifier (median over seeds, log scale)")
    ax.legend(fontsize=8)
    _save(fig, f"cpsat-times{suffix}.png", made)

    vs = [r for r in rows if r["family"] == "vbp" and r["vbp_optimum"]]
    if vs:
        fig, ax = plt.subplots(figsize=(9, 3.2))
        x = range(len(vs))
        ax.bar([i - 0.2 for i in x], [r["greedy_nodes_used"] / r["vbp_optimum"] for r in vs], width=0.4,
               color="#d9822b", label="greedy")
        ax.bar([i + 0.2 for i in x], [r["cpsat_nodes_used"] / r["vbp_optimum"] for r in vs], width=0.4,
               color="#2b6cb0", label="CP-SAT --objective pack")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(list(x), [r["label"] for r in vs], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("nodes used / published optimum")
        ax.legend(fontsize=8)
        _save(fig, f"cpsat-vbp{suffix}.png", made)

    w = next((r for r in rows if r["target"] == "window-5000x1000" and r["timeline"]), None)
    if w:
        fig, ax = plt.subplots(figsize=(9, 3.0))
        stages = sorted({e[3] for e in w["timeline"]}, key=[e[3] for e in w["timeline"]].index)
        for st in stages:
            ev = [e for e in w["timeline"] if e[3] == st]
            ax.step([e[0] for e in ev], [e[1] for e in ev], where="post", label=f"{st}: objective")
            ax.step([e[0] for e in ev], [e[2] for e in ev], where="post", linestyle="--", label=f"{st}: bound")
        ax.set_xlabel("seconds since the CP-SAT engine started")
        ax.set_title(f"{w['family']} {w['label']}", fontsize=10)
        ax.legend(fontsize=8)
        _save(fig, f"cpsat-timeline{suffix}.png", made)
    return made


def section(rows: list[dict], quick: bool, seconds: float, images: list[str]) -> str:
    vbp, hit, known = vbp_table(rows)
    pics = "\n".join(f"![{n}](img/{n})" for n in images)
    warn = [f"{r['family']} {r['label']} seed {r['seed']}: {w}" for r in rows for w in r["fallback_warnings"]]
    return f"""{BEGIN}
## CP-SAT engine and the comparison with greedy

Generated by `benchmarks/run_suite.py{' --quick' if quick else ''}` (do not edit by hand; rerun it). Every instance
goes through `kplace compare`'s library call: both engines through `decide` (engine + verifier), each in its own
forked process; every figure below is computed from the two verified plans. Times are wall seconds of `decide`
(engine and verifier; loading excluded); memory is the engine process's peak resident set size (VmHWM, which
includes the loaded state the process shares with its parent and OR-Tools' native memory). CP-SAT runs
deterministically with 2 workers; its time limit is per instance, split over windows. Each family row is the median
over its seeds. "bound (placed)" is CP-SAT's proven upper bound on pods placed (summed over windows and components;
"weighted†" where several priorities make it a priority-weighted figure; a component solved on scoped node sets
that leaves pods out proves nothing for the whole domains, so unless its full-domain retry ends in time it
counts every pod: the trivial bound); "goal gap" is the gap of the last exact stage (pods placed, or the goal;
within the scope for scoped components); "measure per pod" is the score measure (each placed pod scored by the
profile as if scheduled last into the final state) on a sample of 200 placed pods. A ✗ marks a family where
CP-SAT placed fewer pods than greedy, priority by priority, on some seed.

Machine: {machine()}. Commit: {commit()}. Suite run time: {seconds / 60:.1f} min.

### Targets (issue 4)

{targets(rows, hit, known)}

{family_tables(rows)}
{vbp}
{pics}

{('Verifier fallbacks logged as bugs: ' + '; '.join(warn)) if warn else 'No CP-SAT plan was rejected by the verifier.'}
{END}
"""


def write_docs(all_rows: list[dict], quick: bool, seconds: float, note: str = "") -> None:
    rows = [r for r in all_rows if "error" not in r]
    failed = [f"{r['family']} {r['label']} seed {r['seed']}: {r['error']}" for r in all_rows if "error" in r]
    images = plots(rows, "-quick" if quick else "")
    text = section(rows, quick, seconds, images)
    if note:
        text = text.replace("Suite run time:", note + " Suite run time:", 1)
    if failed:
        text = text.replace(END, "Runs that failed: " + "; ".join(failed) + "\n" + END)
    replace_section(DOC, BEGIN, END, text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, one seed")
    ap.add_argument("--only", default="", help="comma-separated families (dcm, fragmentation, spread-zones, "
                                               "priority-overload, openb, scheduler_perf, vbp)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md and docs/img")
    ap.add_argument("--docs-from", default=None, help="regenerate the docs from a results JSON, without running")
    ap.add_argument("--resume", default=None, help="keep the successful runs of this results JSON, run the rest")
    ap.add_argument("--note", default="", help="a sentence added to the docs section (e.g. about the machine's load)")
    args = ap.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"cpsat-suite{'-quick' if args.quick else ''}.json"
    if args.docs_from:
        saved = json.loads(Path(args.docs_from).read_text())
        if saved.get("commit") and not os.environ.get("KPLACE_SUITE_COMMIT"):
            os.environ["KPLACE_SUITE_COMMIT"] = saved["commit"].split()[0]  # the commit measured, not this one
        write_docs(saved["rows"], saved["quick"], saved["seconds"], args.note or saved.get("note", ""))
        return 0
    only = {x for x in args.only.split(",") if x}
    cases = [c for c in suite(args.quick) if not only or c.family in only]
    rows: list[dict] = []
    done: dict[tuple, dict] = {}
    previous = 0.0
    if args.resume:
        saved = json.loads(Path(args.resume).read_text())
        done = {(r["family"], r["label"], r["seed"]): r for r in saved["rows"] if "error" not in r}
        previous = sum(r.get("run_seconds", 0) for r in done.values())
    started = time.perf_counter() - previous
    for case in cases:
        for seed in case.seeds:
            if (case.family, case.label, seed) in done:
                rows.append(done[(case.family, case.label, seed)])
                continue
            print(f"[{time.perf_counter() - started:7.1f}s] {case.family}: {case.label} seed {seed} ...", end=" ",
                  flush=True, file=sys.stderr)
            try:
                row = run_case(case, seed)
            except Exception as exc:  # a failed instance is reported, not hidden
                print(f"FAILED: {exc!r}", file=sys.stderr)
                rows.append({**asdict(case), "seed": seed, "error": repr(exc)})
                continue
            rows.append(row)
            print(f"greedy {row['greedy_placed']}/{row['pods']} ({row['greedy_seconds']:.1f}s), CP-SAT "
                  f"{row['cpsat_placed']} ({row['cpsat_seconds']:.1f}s, {row['statuses']}) "
                  f"[{row['run_seconds']:.0f}s]", file=sys.stderr)
            write_json(out, {"quick": args.quick, "seconds": time.perf_counter() - started, "note": args.note,
                             "commit": commit(), "rows": rows})
    seconds = time.perf_counter() - started
    good = [r for r in rows if "error" not in r]
    write_json(out, {"quick": args.quick, "seconds": seconds, "note": args.note, "commit": commit(), "rows": rows})
    print(f"{len(good)}/{len(rows)} runs in {seconds / 60:.1f} min; results in {out}", file=sys.stderr)
    if not args.no_docs and good:
        write_docs(rows, args.quick, seconds, args.note)
        print(f"regenerated {DOC}", file=sys.stderr)
    return 0 if len(good) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
