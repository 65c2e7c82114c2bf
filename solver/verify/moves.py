"""The plan's moves (a rebalance), wave by wave.

Each move names a pod running on `from` and owned by a controller (evicting any other pod deletes it), once,
to an existing node. In a wave, every replacement (the pod without its nodeName, as its controller recreates
it) passes the filters on `to` with the wave's other arrivals there and every departing pod still on its old
node (both copies count), and no PodDisruptionBudget loses more pods than it allows (the replacements run
again before the next wave).
"""

from __future__ import annotations

from kplace.models.index import ClusterIndex
from kplace.models.plan import Move
from kplace.models.snapshot import pdbs_disruptions_allowed

from .evictions import pdb_selects
from .records import CompiledPod, PodTable, compile_pod
from .replay import Replay
from .violation import Violation


def _move_fails(m: Move, pods: PodTable, seen: set[str], node_id: dict[str, int]) -> Violation | None:
    pi = pods.info.get(m.pod)
    if pi is None or pi.pending or pi.node < 0 or pi.pod.spec.node_name != m.from_node:
        return Violation(m.pod, m.from_node, "Move", f"the pod is not running on {m.from_node}")
    if m.pod in seen:
        return Violation(m.pod, m.from_node, "Move", "the pod is moved more than once")
    if not any(o.controller for o in pi.pod.metadata.owner_references):
        return Violation(m.pod, m.from_node, "Move", "the pod has no controller to recreate it")
    if m.to not in node_id:
        return Violation(m.pod, m.to, "UnknownNode", f"no node {m.to!r} in the state")
    return None


def _budget_violations(wave: list[Move], w: int, index: ClusterIndex, pods: PodTable, allowed: list[int]
                       ) -> list[Violation]:
    """The moves of wave `w` beyond each PodDisruptionBudget's allowance."""
    out = []
    for i, pdb in enumerate(index.snapshot.pdbs):
        hit = [m for m in wave if pdb_selects(pdb, pods(m.pod))]
        out += [Violation(m.pod, m.from_node, "PodDisruptionBudget",
                          f"wave {w} moves {len(hit)} pods of PodDisruptionBudget {pdb.metadata.namespace}/"
                          f"{pdb.metadata.name}, which allows {max(0, allowed[i])}")
                for m in hit[max(0, allowed[i]):]]
    return out


def _arrive(wave: list[Move], w: int, pods: PodTable, replay: Replay) -> tuple[list[Violation], list]:
    """Bind the wave's replacements on their target nodes, each checked against the state with the earlier
    ones; returns the violations and (move, replacement, node id) per move."""
    out, arrivals = [], []
    for m in wave:
        pod = pods.info[m.pod].pod
        rep = compile_pod(pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": ""})}))
        n = replay.nodes.id[m.to]
        fail = replay.check(rep, n)
        if fail is not None:
            out.append(Violation(m.pod, m.to, fail[0], f"wave {w}: its replacement does not fit: {fail[1]}"))
        replay.add(rep, n)
        arrivals.append((m, rep, n))
    return out, arrivals


def check_moves(moves: list[Move], index: ClusterIndex, pods: PodTable, replay: Replay,
                running: dict[str, tuple[CompiledPod, int]]) -> list[Violation]:
    """Violations of the moves; `running` (pod key → (pod, node id)) becomes the state after the last wave."""
    out: list[Violation] = []
    valid: list[Move] = []
    seen: set[str] = set()
    for m in moves:
        fail = _move_fails(m, pods, seen, replay.nodes.id)
        if fail is not None:
            out.append(fail)
        else:
            valid.append(m)
            seen.add(m.pod)
    if not valid:
        return out
    snap = index.snapshot
    allowed = pdbs_disruptions_allowed(snap)
    replay.reset()
    for p, n in running.values():
        replay.add(p, n)
    for w in sorted({m.wave for m in valid}):
        wave = [m for m in valid if m.wave == w]
        out += _budget_violations(wave, w, index, pods, allowed)
        fails, arrivals = _arrive(wave, w, pods, replay)
        out += fails
        for m, rep, n in arrivals:
            old, src = running[m.pod]
            replay.add(old, src, -1)
            running[m.pod] = (rep, n)
    return out
