"""The real kube-scheduler beside kplace: running the oracle (`oracle/`, kube-scheduler linked as a Go library) on a
state, and comparing its cycles with the greedy engine's (`solver.trace`) in lockstep.

kplace itself stays pure Python: the oracle is a separate binary built with `make -C oracle`; everything here says
so clearly when it is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kplace.models.errors import InputError
from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.plan import Eviction, Placement, Plan

from .framework.config import SchedulerConfig
from .trace import trace

ENV = "KPLACE_ORACLE"
_BUILT = Path(__file__).resolve().parent.parent / "oracle" / "bin" / "kube-oracle"
TIMEOUT = 600.0  # seconds for one oracle run


def oracle_binary() -> Path | None:
    """The oracle: $KPLACE_ORACLE, the project's own build (oracle/bin/kube-oracle), or `kube-oracle` on PATH."""
    if os.environ.get(ENV):
        p = Path(os.environ[ENV])
        return p if p.is_file() else None
    if _BUILT.is_file():
        return _BUILT
    found = shutil.which("kube-oracle")
    return Path(found) if found else None


def require_oracle() -> Path:
    binary = oracle_binary()
    if binary is None:
        raise InputError(f"the kube-scheduler oracle is not built: run `make -C oracle` (needs Go), or set ${ENV}")
    return binary


def oracle_version(binary: Path | None = None) -> str:
    out = subprocess.run([str(binary or require_oracle()), "version"], capture_output=True, text=True,
                         timeout=60, check=True)
    return out.stdout.strip()


POD_GROUP_GATES = ("--feature-gates", "GenericWorkload=true,GangScheduling=true")  # kube's pod groups (alpha)


def oracle_flags(index: ClusterIndex) -> tuple[str, ...]:
    """The oracle flags that make kube read the state as kplace does: kube's pod-group gates when some pod names a
    PodGroup in `spec.schedulingGroup` (a cluster whose API server kept that field has them on)."""
    return POD_GROUP_GATES if any(p.pod.spec.scheduling_group is not None for p in index.pods) else ()


def run_oracle(states: Sequence[str], config: str | None = None, lockstep: str | None = None,
               binary: Path | None = None, timeout: float = TIMEOUT, extra: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The real scheduler's cycles over the pending pods of `states` (files, merged in order); `extra` are more
    flags for `kube-oracle schedule` (e.g. `--parallelism 0`)."""
    cmd = [str(binary or require_oracle()), "schedule", *states, *extra]
    if config:
        cmd += ["--config", config]
    if lockstep:
        cmd += ["--lockstep", lockstep]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise InputError(f"the kube-scheduler oracle did not finish within {timeout:g} s on {', '.join(states)}") \
            from exc
    if out.returncode != 0:
        raise InputError(f"the kube-scheduler oracle failed on {', '.join(states)}: "
                         f"{(out.stderr.strip().splitlines() or ['exit code ' + str(out.returncode)])[-1]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


@dataclass
class Comparison:
    """What a lockstep comparison found: cycles compared, and each disagreement as one line."""

    cycles: int = 0
    checks: int = 0
    differences: list[str] = field(default_factory=list)


FIELDS = ("hint", "feasible", "scores", "plugin_scores", "top", "filters", "prefilter", "message", "nominated",
          "victims", "rejectors", "preemption_walk")


def lockstep(index: ClusterIndex, config: SchedulerConfig | None, real: list[dict[str, Any]], *,
             respect_pdbs: bool = True, fields: Iterable[str] = FIELDS) -> Comparison:
    """Run the greedy engine in lockstep with the real scheduler's cycles `real` and compare them cycle by cycle.

    Each greedy cycle takes the real scheduler's node (or nominated node) when it is among greedy's tied top
    nodes, so a tie broken differently is not a difference and both continue from the same state; preemption's
    candidate walk takes kube's order and random offset when it goes over the same potential nodes (a different
    set, or a walk kube did not take, is a difference; a walk greedy skips because no node has a lower-priority
    pod finds nothing in kube's either, and is not compared). Feasible nodes
    are compared in order (the oracle runs one filter worker: kube's 16 fill the list in no fixed order); filters
    on the nodes both evaluated, their reasons as sets (kube lists extended resources in map order); the rest as
    they are.
    """
    by_cycle = {(c["pod"], c.get("attempt", 1)): c for c in real}
    seen: dict[str, int] = {}

    def follow(pod: PodInfo) -> dict[str, Any]:
        seen[pod.key] = seen.get(pod.key, 0) + 1
        return by_cycle.get((pod.key, seen[pod.key])) or {}

    mine = list(trace(index, config, respect_pdbs=respect_pdbs, follow=follow))
    out = Comparison()
    order_real = [c["pod"] for c in real]
    order_mine = [c["pod"] for c in mine]
    if order_real != order_mine:
        out.differences.append(f"queue order differs: kube {order_real} vs kplace {order_mine}")
    wanted = set(fields)
    for m in mine:
        r = by_cycle.get((m["pod"], m["attempt"]))
        if r is None:
            continue
        out.cycles += 1
        for key, a, b in _pairs(r, m, wanted):
            out.checks += 1
            if a != b:
                if isinstance(a, dict) and isinstance(b, dict):  # only the nodes that differ
                    diff = {n: {"kube": a.get(n), "kplace": b.get(n)} for n in sorted({*a, *b}) if a.get(n) != b.get(n)}
                    out.differences.append(f"{m['pod']}: {key}: {_short(diff)}")
                else:
                    out.differences.append(f"{m['pod']}: {key}: kube {_short(a)} vs kplace {_short(b)}")
        out.checks += 1
        if r.get("node") != m.get("node"):
            out.differences.append(f"{m['pod']}: node: kube {r.get('node')} vs kplace {m.get('node')} "
                                   f"(kplace's top {m.get('top')})")
    return out


def _pairs(r: dict, m: dict, wanted: set[str]):
    for key in FIELDS:
        if key not in wanted:
            continue
        a, b = r.get(key), m.get(key)
        if key in ("top", "victims"):
            a, b = sorted(a or []), sorted(b or [])
        elif key == "feasible":
            a, b = a or [], b or []
        elif key == "filters":
            both = set(r.get("feasible") or []) | set(a or {})
            both &= set(m.get("feasible") or []) | set(b or {})
            a = {n: {**s, "reasons": sorted(s["reasons"])} for n, s in (a or {}).items() if n in both}
            b = {n: {**s, "reasons": sorted(s["reasons"])} for n, s in (b or {}).items() if n in both}
        elif key == "plugin_scores":  # a plugin that skipped (or scored 0 everywhere) may be absent
            a = {n: {p: v for p, v in ps.items() if v} for n, ps in (a or {}).items()}
            b = {n: {p: v for p, v in ps.items() if v} for n, ps in (b or {}).items()}
        elif key == "scores":
            a, b = a or {}, b or {}
        elif key == "preemption_walk":
            if b is None and a is not None:
                continue  # greedy saw no lower-priority pod on any node: kube's walk found no victims
            a, b = _walk(a, b), _walk(b, a)
        yield key, a, b


def _walk(walk: dict | None, other: dict | None) -> dict | None:
    """A candidate walk as compared: its offset, how many potential nodes, and those the other walk lacks."""
    if walk is None:
        return None
    theirs = set((other or {}).get("nodes") or [])
    return {"offset": walk["offset"], "nodes": len(walk["nodes"]),
            "only here": sorted(set(walk["nodes"]) - theirs)[:10] if other else []}


def _short(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "…"


def oracle_plan(index: ClusterIndex, cycles: list[dict[str, Any]], seconds: float = 0.0) -> Plan:
    """The real scheduler's cycles as a kplace plan: each pod on its node, a preemptor on the node it was
    nominated to (kplace's plans place it there, as kube does in its next cycle) with its victims; pods that got
    no cycle (gated) stay pending. The oracle does not report which PV each delayed claim took: the plan gets
    those kplace's VolumeBinding Reserve takes on the same nodes in the same order (its filters agree with
    kube's pod after pod in the differential tests, which they would not if the PVs taken differed)."""
    from .framework.state import ClusterState
    from .plugins.volumebinding import reserve

    state = ClusterState(index)
    bindings: dict[str, dict[str, str]] = {}
    victims: dict[str, list[tuple[str, str]]] = {}  # pod → (victim, its node) of all its cycles
    for c in cycles:
        for victim in c.get("victims") or []:
            v = index.pod_by_key.get(victim)
            if v is not None and state.pod_node[v.idx] >= 0:
                state.forget(v)
        victims.setdefault(c["pod"], []).extend((v, c.get("nominated") or "") for v in c.get("victims") or [])
        node = c.get("node") or c.get("nominated")
        pod = index.pod_by_key.get(c["pod"])
        if pod is not None and state.pod_node[pod.idx] >= 0:
            state.forget(pod)  # nominated in an earlier cycle: this one decides where it goes
        if node and pod is not None and node in index.node_id:
            state.assume(pod, index.node_id[node])
            bindings[pod.key] = reserve(state, pod, index.node_id[node]) if pod.pod.spec.volumes else {}
    last = {c["pod"]: c for c in cycles}
    plan = Plan(engine="kube-scheduler", seconds=seconds)
    for pod in index.pending:
        c = last.get(pod.key)
        if c is None:
            plan.placements.append(Placement(pod.key, None, "no scheduling cycle (gated, or another scheduler's)",
                                             pod.priority))
            continue
        node = c.get("node") or c.get("nominated")
        plan.placements.append(Placement(pod.key, node, None if node else c.get("message"), pod.priority,
                                         nominated=bool(node and victims[pod.key]),
                                         volume_bindings=bindings.get(pod.key, {})))
        for victim, at in victims[pod.key]:
            v = index.pod_by_key.get(victim)
            plan.evictions.append(Eviction(victim, at, pod.key, v.priority if v else 0, False))
    return plan
