"""`kplace compare --report DIR`: a self-contained HTML page (plots are inline base64 PNGs, no network, no
scripts) and the comparison's JSON beside it.

Plots (matplotlib, Agg backend): per-node stacked allocation for both engines (what was bound before, what the
plan adds; nodes sorted by final allocation), allocation histograms, pods placed per priority, and the CP-SAT
solver's objective and bound over time (one panel per objective stage).
"""

from __future__ import annotations

import base64
import html
import io
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..output import dumps, write_atomic
from .metrics import allocation_ratios
from .render import rows

COLORS = {"greedy": "#d9822b", "cpsat": "#2b6cb0", "before": "#9aa5b1"}
LABELS = {"greedy": "greedy (kube-scheduler)", "cpsat": "CP-SAT"}


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _plot_resources(index) -> list[str]:
    res = [r for r in ("cpu", "memory") if r in index.rid]
    extra = [r for r in index.resources if r not in ("cpu", "memory", "ephemeral-storage")
             and (index.alloc[:, index.rid[r]] > 0).any()]
    return res + extra[:1]


def plot_node_allocation(cmp) -> str:
    import matplotlib.pyplot as plt

    index = cmp.index
    resources = _plot_resources(index)
    fig, axes = plt.subplots(len(resources), 2, figsize=(11, 2.6 * len(resources)), squeeze=False, sharey="row")
    for i, r in enumerate(resources):
        col = index.rid[r]
        alloc = index.alloc[:, col]
        has = alloc > 0
        before = index.requested[has, col] / alloc[has]
        for j, engine in enumerate(("greedy", "cpsat")):
            after = cmp.states[engine].requested[has, col] / alloc[has]
            order = np.argsort(-after, kind="stable")
            x = np.arange(len(order))
            ax = axes[i][j]
            ax.bar(x, before[order], width=1.0, color=COLORS["before"], label="bound before", linewidth=0)
            ax.bar(x, (after - before)[order], width=1.0, bottom=before[order], color=COLORS[engine],
                   label="placed by the plan", linewidth=0)
            ax.set_xlim(-0.5, len(order) - 0.5)
            ax.set_ylim(0, max(1.0, float(after.max()) if len(after) else 1.0) * 1.02)
            ax.set_title(f"{LABELS[engine]}: {r}", fontsize=10)
            ax.set_xlabel("nodes, by final allocation")
            if j == 0:
                ax.set_ylabel("requested / allocatable")
            ax.legend(loc="upper right", fontsize=8)
    fig.suptitle("Per-node allocation", fontsize=12)
    fig.tight_layout()
    return _png(fig)


def plot_histograms(cmp) -> str:
    import matplotlib.pyplot as plt

    ratios = {e: allocation_ratios(cmp.index, cmp.states[e]) for e in ("greedy", "cpsat")}
    resources = [r for r in _plot_resources(cmp.index) if r in ratios["greedy"]] + ["pods"]
    fig, axes = plt.subplots(1, len(resources), figsize=(3.7 * len(resources), 3.0), squeeze=False)
    for k, r in enumerate(resources):
        ax = axes[0][k]
        top = max(float(ratios[e][r].max()) for e in ratios)
        top = max(1.0, top) if r != "pods" else (top or 1.0)
        bins = np.linspace(0, top, 21)
        for e in ("greedy", "cpsat"):
            ax.hist(ratios[e][r], bins=bins, alpha=0.55, color=COLORS[e], label=LABELS[e])
        ax.set_title(r, fontsize=10)
        ax.set_xlabel("requested / allocatable")
        if k == 0:
            ax.set_ylabel("nodes")
        ax.legend(fontsize=8)
    fig.suptitle("Allocation histograms", fontsize=12)
    fig.tight_layout()
    return _png(fig)


def _paired_bars(prios: list[str], bars, ylabel: str, title: str, height: float) -> str:
    """Both engines' bars side by side per priority: `bars(engine)` → (values, label, stacked values or None)."""
    import matplotlib.pyplot as plt

    x = np.arange(len(prios))
    fig, ax = plt.subplots(figsize=(max(5, 1.4 * len(prios) + 3), height))
    for k, e in enumerate(("greedy", "cpsat")):
        values, label, stacked = bars(e)
        pos = x + (k - 0.5) * 0.38
        ax.bar(pos, values, width=0.36, color=COLORS[e], label=label)
        if stacked is not None:
            ax.bar(pos, stacked, width=0.36, bottom=values, color=COLORS[e], alpha=0.25, hatch="//",
                   label=f"{LABELS[e]}: pending")
        for xi, v in zip(pos, values, strict=True):
            ax.text(xi, v, f"{v}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [f"priority {p}" for p in prios])
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=12)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return _png(fig)


def plot_priorities(data: dict[str, Any]) -> str:
    prios = sorted({*data["greedy"]["placement"]["by_priority"], *data["cpsat"]["placement"]["by_priority"]},
                   key=int)

    def bars(e):
        by = data[e]["placement"]["by_priority"]
        return ([by.get(p, {}).get("placed", 0) for p in prios], f"{LABELS[e]}: placed",
                [by.get(p, {}).get("pending", 0) for p in prios])

    return _paired_bars(prios, bars, "pods", "Pods placed per priority", 3.2)


def _stage_family(stage: str) -> str:
    base = stage.replace(" (full domains)", "")
    if base.startswith("placed"):
        return "pods placed (weighted by priority)"
    return "score (surrogate of the measure)" if base == "score" else base


def _solves(data: dict[str, Any]) -> dict[str, int]:
    """Per stage family, how many CP-SAT solves the windows ran (stages the hint settled ran none)."""
    out: dict[str, int] = {}
    for w in data["cpsat"].get("windows") or []:
        for st in w.get("stages", []):
            if not st.get("status", "").startswith("OPTIMAL (hint") and st.get("stage"):
                fam = _stage_family(st["stage"])
                out[fam] = out.get(fam, 0) + 1
    return out


def plot_timeline(data: dict[str, Any]) -> str | None:
    import matplotlib.pyplot as plt

    from ..cpsat.window import INCUMBENT

    events = [e for e in data["cpsat"].get("timeline") or [] if e[3] != INCUMBENT]  # not an objective value
    if not events:
        return None
    families: dict[str, list] = {}
    for t, obj, bound, stage in events:
        families.setdefault(_stage_family(stage), []).append((t, obj, bound, stage))
    solves = _solves(data)
    fig, axes = plt.subplots(len(families), 1, figsize=(10, 2.8 * len(families)), squeeze=False)
    for ax, (fam, evs) in zip(axes[:, 0], families.items(), strict=True):
        # one run of consecutive events per solve: a new solve starts when the stage name changes or time
        # goes back to the start of a new objective (a new component or window)
        runs: list[list] = []
        for ev in evs:
            if not runs or ev[3] != runs[-1][-1][3] or _new_solve(runs[-1], ev):
                runs.append([])
            runs[-1].append(ev)
        for k, run in enumerate(runs):
            t = [e[0] for e in run]
            ax.step(t, [e[1] for e in run], where="post", color=COLORS["cpsat"], label="objective" if k == 0 else None)
            ax.step(t, [e[2] for e in run], where="post", color="#c53030", linestyle="--",
                    label="proven bound" if k == 0 else None)
            ax.plot(t, [e[1] for e in run], "o", color=COLORS["cpsat"], markersize=3)
        if fam.startswith("pods placed"):
            reported = (data["cpsat"].get("solver") or {}).get("placed_bound")
            if reported is not None:  # the table's bound: valid for whole domains, summed over windows
                ax.axhline(reported, color="#718096", linestyle=":", label="bound reported (all windows)")
        n = solves.get(fam, len(runs))
        ax.set_title(f"CP-SAT stage: {fam} ({n} solve{'s' if n != 1 else ''}; the dashed line is each solve's bound "
                     "within its model)", fontsize=10)
        ax.set_xlabel("seconds since the CP-SAT engine started")
        ax.legend(fontsize=8)
    fig.suptitle("CP-SAT objective and bound over time", fontsize=12)
    fig.tight_layout()
    return _png(fig)


def _new_solve(run: list, ev: tuple) -> bool:
    """Within one stage name, a solve ends with its final report (objective == bound or not); a later event
    whose bound is looser than the run's last bound belongs to a new solve (another component or window)."""
    last = run[-1]
    maximise = last[2] >= last[1]
    return ev[2] > last[2] if maximise else ev[2] < last[2]


_TAG = re.compile(r"\[/?[a-z ]*\]")


def _plain(text: str) -> str:
    return _TAG.sub("", text)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1180px;color:#1a202c}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #e2e8f0}
table{border-collapse:collapse;font-size:13px} td,th{padding:3px 10px;border-bottom:1px solid #edf2f7}
th{background:#f7fafc;text-align:left} td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.sec td{font-weight:600;background:#f7fafc} .muted{color:#718096;font-size:13px}
img{max-width:100%;border:1px solid #e2e8f0;margin:8px 0} .better{color:#2f855a} .worse{color:#c53030}
code{background:#edf2f7;padding:1px 4px;border-radius:3px}
"""


def _table_html(data: dict[str, Any]) -> str:
    out = ["<table><tr><th>figure</th><th>greedy (kube-scheduler)</th><th>CP-SAT</th><th>CP-SAT − greedy</th></tr>"]
    for label, g, c, d in rows(data):
        if not g and not c and not d:
            out.append(f"<tr class='sec'><td colspan='4'>{html.escape(_plain(label))}</td></tr>")
            continue
        cls = "better" if "[green]" in d else "worse" if "[red]" in d else ""
        out.append(f"<tr><td>{html.escape(_plain(label)).replace('  ', '&nbsp;&nbsp;')}</td>"
                   f"<td class='n'>{html.escape(g)}</td><td class='n'>{html.escape(c)}</td>"
                   f"<td class='n {cls}'>{html.escape(_plain(d))}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def _diff_html(diff: dict[str, Any], limit: int = 100) -> str:
    parts = [f"<p>{len(diff['placed_only_by_cpsat'])} pods placed only by CP-SAT, "
             f"{len(diff['placed_only_by_greedy'])} only by greedy, {len(diff['different_node'])} on different nodes, "
             f"{diff['same_node']} on the same node.</p>"]
    for key, title in (("placed_only_by_cpsat", "Placed only by CP-SAT"),
                       ("placed_only_by_greedy", "Placed only by greedy")):
        if diff[key]:
            more = f" … and {len(diff[key]) - limit} more" if len(diff[key]) > limit else ""
            parts.append(f"<p><b>{title}:</b> {html.escape(', '.join(diff[key][:limit]))}{more}</p>")
    if diff["different_node"]:
        parts.append("<table><tr><th>pod</th><th>greedy</th><th>CP-SAT</th></tr>")
        for m in diff["different_node"][:limit]:
            parts.append(f"<tr><td>{html.escape(m['pod'])}</td><td>{html.escape(m['greedy'])}</td>"
                         f"<td>{html.escape(m['cpsat'])}</td></tr>")
        parts.append("</table>")
        if len(diff["different_node"]) > limit:
            parts.append(f"<p class='muted'>… and {len(diff['different_node']) - limit} more in compare.json</p>")
    return "\n".join(parts)


def _kube_html(data: dict[str, Any]) -> str:
    """The real kube-scheduler's section (`--baseline kube-scheduler`): agreement with the greedy engine, and how
    CP-SAT's plan differs from kube's."""
    k = data.get("kube")
    if not k:
        return ""
    agree = ("<p><b>The greedy engine agrees with the real kube-scheduler on every pod.</b></p>" if k["greedy_agrees"]
             else f"<p><b>The greedy engine disagrees with the real kube-scheduler on {len(k['greedy_disagrees_on'])} "
                  f"pods:</b> {html.escape(', '.join(k['greedy_disagrees_on'][:100]))}</p>")
    d = k["cpsat_vs_kube"]
    return (f"<h2>The real kube-scheduler ({html.escape(k['version'])})</h2>"
            f"<p>{k['placement']['placed']} pods placed, score measure {k['score']['total']:,}; its plan "
            f"{'verifies' if not k['violations'] else 'fails the verifier'}.</p>{agree}"
            f"<p>CP-SAT against it: {len(d['placed_only_by_cpsat'])} pods placed only by CP-SAT, "
            f"{len(d['placed_only_by_greedy'])} only by kube-scheduler, {len(d['different_node'])} on different nodes; "
            f"score measure {data['cpsat']['score']['total'] - k['score']['total']:+,}.</p>")


def plot_victims(data: dict[str, Any]) -> str | None:
    """Victims per priority, both engines side by side; None when neither evicts."""
    by = {e: data[e]["placement"].get("evictions_by_priority", {}) for e in ("greedy", "cpsat")}
    prios = sorted({*by["greedy"], *by["cpsat"]}, key=int)
    if not prios:
        return None
    return _paired_bars(prios, lambda e: ([by[e].get(p, 0) for p in prios], LABELS[e], None), "pods evicted",
                        "Preemption victims per priority", 3.0)


def build_html(cmp, title: str = "kplace compare") -> str:
    import matplotlib

    matplotlib.use("Agg", force=True)
    data = cmp.data
    st, opts = data["state"], data["options"]
    figures = [("Pods placed per priority", plot_priorities(data)),
               ("Per-node allocation", plot_node_allocation(cmp)),
               ("Allocation histograms", plot_histograms(cmp))]
    victims = plot_victims(data)
    if victims:
        figures.insert(1, ("Preemption victims per priority", victims))
    timeline = plot_timeline(data)
    if timeline:
        figures.append(("CP-SAT objective and bound over time", timeline))
    imgs = "\n".join(f"<h2>{html.escape(t)}</h2>\n<img alt='{html.escape(t)}' src='data:image/png;base64,{b64}'>"
                     for t, b64 in figures)
    mem = html.escape(data["cpsat"]["memory"]["method"])
    warnings = "".join(f"<li>{html.escape(e)}: {html.escape(w)}</li>" for e in ("greedy", "cpsat")
                       for w in data[e].get("warnings", []))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{html.escape(title)}: greedy (kube-scheduler) vs CP-SAT</h1>
<p class="muted">{st['nodes']} nodes, {st['pods_pending']} pending pods, {st['pods_bound']} bound;
resources {html.escape(', '.join(st['resources']))}. CP-SAT: time limit {opts['time_limit']} s, window {opts['window']},
{opts['workers']} workers, objective <code>{html.escape(opts['objective'])}</code>, seed {opts['seed']}. Every figure is
computed from the two verified plans by one metrics module. Memory: {mem}. Full figures: <code>compare.json</code>.</p>
<h2>Side by side</h2>
{_table_html(data)}
{imgs}
<h2>Differences between the plans</h2>
{_diff_html(data['diff'])}
{_kube_html(data)}
{f'<h2>Warnings</h2><ul>{warnings}</ul>' if warnings else ''}
</body></html>
"""


def write_report(cmp, directory: str | Path, title: str = "kplace compare") -> dict[str, Path]:
    """Write DIR/index.html and DIR/compare.json (atomically); return their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    page, js = out / "index.html", out / "compare.json"
    write_atomic(js, dumps(cmp.data))
    write_atomic(page, build_html(cmp, title))
    return {"html": page, "json": js}
