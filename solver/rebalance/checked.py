"""The model's answer, accepted only when the independent check of its final state agrees.

The model (`model.solve`, behind `SolveWith`) is solved for the bound pods not pinned. Then, at most `ATTEMPTS`
solves in all:
- infeasible with movable violators (a repair with nowhere legal to go): the violators are pinned, solve again;
- infeasible otherwise: nothing moves;
- the final state (`check.StateChecker`) has violations the state before did not: the new violators that were
  movable (else every moved pod) are pinned, solve again.
When no attempt is accepted, nothing moves. Each of these outcomes leaves a warning for the plan.
"""

from __future__ import annotations

from typing import Protocol

from kplace.models.index import ClusterIndex

from .check import StateChecker
from .model import Target

ATTEMPTS = 4


class SolveWith(Protocol):
    def __call__(self, movable: set[str]) -> Target | None:
        """Where the movable and pending pods end, or None when the model is infeasible."""


def checked_target(index: ClusterIndex, checker: StateChecker, start: dict[str, int], tolerated: set[str],
                   pinned: dict[str, str], solve_with: SolveWith) -> tuple[Target, list[str]]:
    """The accepted target and the warnings on the way; the pods pinned on the way are added to `pinned`.

    `start`: {pod: node} as it is; `tolerated`: the pods violating a rule in it."""
    warnings: list[str] = []
    for _attempt in range(ATTEMPTS):
        movable = {pi.key for pi in index.bound if pi.key not in pinned}
        target = solve_with(movable)
        if target is None:
            violators = [k for k in tolerated if k in movable]
            if not violators:
                warnings.append("the model is infeasible with the pods left movable; nothing moves")
                return Target(), warnings
            warnings.append(f"{len(violators)} violating pod(s) have no legal destination together; "
                            "they stay where they are")
            pinned.update(dict.fromkeys(violators, "no legal destination for its repair"))
            continue
        new = _new_violators(checker, start, target, tolerated)
        if not new:
            return target, warnings
        culprits = (new & movable) or {k for k, _, _ in target.moves}
        warnings.append(f"the independent check found {len(new)} new violation(s) in the model's answer; "
                        f"pinning {len(culprits)} pod(s) and solving again")
        pinned.update(dict.fromkeys(culprits, "its move would break a hard rule (independent check)"))
    warnings.append("no safe plan was found; nothing moves")
    return Target(), warnings


def _new_violators(checker: StateChecker, start: dict[str, int], target: Target, tolerated: set[str]) -> set[str]:
    """The pods violating a rule in the state `target` leads to that did not in `start`."""
    trial = dict(start)
    trial.update({k: n for k, _, n in target.moves})
    trial.update({k: n for k, n in target.placements if n is not None})
    return {v.pod for v in checker.violations(trial)} - tolerated
