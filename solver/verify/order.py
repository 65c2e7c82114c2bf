"""The search for a binding order in which every placed pod passes kube's filters at its binding time.

Greedy plans pass in plan order; CP-SAT and rebalance plans describe a final state and may need another. The
replay binds the plan's pods as a fixpoint over plan order. Binding a pod can also take a chance away: a pod
matching a group's affinity terms disables kube's first-pod rule for it. So when pods are left failing
InterPodAffinity that could seed their group, the replay is retried with each of them (up to SEED_TRIES,
kept when it leaves fewer pods) bound before all the others. The search is best-effort, not exhaustive, for
rules that binding can make worse (spread skew, the first-pod rule).
"""

from __future__ import annotations

from .records import CompiledPod
from .replay import Binding, Replay
from .violation import Violation

SEED_TRIES = 20  # replays that move a possible first-pod-rule seed to the front


def find_order(replay: Replay, bound: list[Binding], todo: list[Binding], victims: dict[str, list[CompiledPod]],
               released: list[Binding] = ()) -> list[Violation]:
    """Bind `bound` (and the `released` victims, `Replay.replay`), then the plan's `todo` in the best order found;
    each pod left is a violation, with the last rule it failed."""
    left, last = replay.replay(bound, todo, victims, released)
    front: list[Binding] = []
    tried: set[str] = set()
    while len(tried) < SEED_TRIES:
        seed = next((item for item in left if item[0].key not in tried
                     and last[item[0].key][0] == "InterPodAffinity" and replay.could_seed(item[0])), None)
        if seed is None:
            break
        tried.add(seed[0].key)
        first = {item[0].key for item in front} | {seed[0].key}
        order = [*front, seed, *(item for item in todo if item[0].key not in first)]
        left2, last2 = replay.replay(bound, order, victims, released)
        if len(left2) < len(left):
            front, left, last = [*front, seed], left2, last2
    return [Violation(p.key, replay.nodes.names[n], *last[p.key]) for p, n in left]
