"""The summary of a commit: built from the API calls' outcomes (`summarize`), judged (`commit_shortfall`: what an
API commit did not do, in one line) and shown as a table (`render_commit`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kplace.models.index import ClusterIndex

from .outcomes import BOUND, SUCCEEDED, Outcome


def summarize(outcomes: list[Outcome], index: ClusterIndex | None, *, dry_run: bool, seconds: float
              ) -> dict[str, Any]:
    """The JSON-able summary of an API commit: counts per step:result, every outcome, and the pods whose
    Binding was not made with the requests the plan held for them (`released`)."""
    counts: dict[str, int] = {}
    for o in outcomes:
        key = f"{o.step}:{o.result}"
        counts[key] = counts.get(key, 0) + 1
    released = []
    for o in outcomes:
        if o.step == "bind" and o.result != BOUND:
            pi = index.pod_by_key.get(o.pod) if index is not None else None
            released.append({"pod": o.pod, "node": o.node, "requests": dict(pi.requests) if pi else {}})
    return {
        "mode": "api",
        "dry_run": dry_run,
        "placed": sum(1 for o in outcomes if o.step == "bind" and o.result == BOUND),
        "counts": counts,
        "outcomes": [o.to_dict() for o in outcomes],
        "released": released,
        "seconds": round(seconds, 4),
    }


def _problems(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in summary["outcomes"] if o["result"] not in SUCCEEDED]


def commit_shortfall(summary: dict[str, Any]) -> str | None:
    """One line saying what an API commit did not do, or None when every call succeeded."""
    if summary.get("mode") != "api":
        return None
    if summary.get("stopped"):
        return summary["stopped"]
    problems = _problems(summary)
    if not problems:
        return None
    binds = [o for o in summary["outcomes"] if o["step"] == "bind"]
    bound = sum(1 for o in binds if o["result"] == BOUND)
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(Counter(o["result"] for o in problems).items()))
    return (f"the commit did not fully succeed: {bound} of {len(binds)} Binding(s) made; {len(problems)} call(s) "
            f"did not succeed ({kinds})")


def render_commit(summary: dict[str, Any], limit: int = 50) -> None:
    """The commit's outcomes as a table (rich)."""
    from kplace.solver.output import console as make_console

    console = make_console()
    if summary.get("mode") == "manifest":
        vols = f", {summary['volumes']} PV/PVC patch(es)" if summary.get("volumes") else ""
        console.print(f"[bold]manifest[/]: {summary['bindings']} Binding(s) and {summary['evictions']} "
                      f"Eviction(s){vols} written to {summary['file']} ({summary['format']})", highlight=False)
        return
    if summary.get("moves"):
        m = summary["moves"]
        console.print(f"[bold]moves[/]: {m['waves_done']} wave(s) done" + (f"; stopped: {m['stopped']}"
                                                                            if m.get("stopped") else ""),
                      highlight=False)
    if summary.get("stopped"):
        console.print(f"[red]{summary['stopped']}[/]", highlight=False)
        return
    dry = " (server-side dry run)" if summary.get("dry_run") else ""
    counts = ", ".join(f"{v} {k}" for k, v in sorted(summary["counts"].items())) or "nothing to commit"
    console.print(f"[bold]api{dry}[/]: {summary['placed']} pod(s) bound; {counts}; {summary['seconds']:.2f}s",
                  highlight=False)
    _render_problems(console, _problems(summary), limit)


def _render_problems(console, problems: list[dict[str, Any]], limit: int) -> None:
    """The calls that did not succeed, the first `limit` of them as a table."""
    from rich.table import Table

    if not problems:
        return
    t = Table(title="Calls that did not succeed", title_justify="left")
    for c in ("step", "pod", "node", "result", "code", "tries", "message"):
        t.add_column(c, overflow="fold")
    for o in problems[:limit]:
        t.add_row(o["step"], o["pod"], o["node"], o["result"], str(o["code"] or "-"), str(o["attempts"]),
                  o.get("message", ""))
    console.print(t)
    if len(problems) > limit:
        console.print(f"... {len(problems) - limit} more (use --output json for all)")
