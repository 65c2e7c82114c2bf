"""ROADEF test data: the set A folder (KPLACE_ROADEF_DATA, default ../shared/data/...) and a tiny instance."""

import os
import random
from pathlib import Path

import pytest
from kplace.solver.roadef.instance import parse_assignment, parse_instance, read_assignment, read_instance
from kplace.solver.roadef.scoring import score
from kplace.solver.roadef.vectorised import MoveState

DATA = Path(os.environ.get("KPLACE_ROADEF_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"
                           / "roadef2012-machine-reassignment"))
needs_data = pytest.mark.skipif(not (DATA / "model_a1_1.txt").exists(), reason=f"no ROADEF data in {DATA}")

# 2 resources (r0: load weight 10; r1: transient, load weight 100), 3 machines, 2 services, 3 processes.
#   m0: neighborhood 0, location 0, capacity 10/10, safety 8/8, move costs 0 1 2
#   m1: neighborhood 0, location 1, capacity 10/10, safety 8/8, move costs 1 0 3
#   m2: neighborhood 1, location 1, capacity 10/10, safety 5/5, move costs 2 3 0
#   s0: spreadMin 2; s1: spreadMin 1, depends on s0
#   p0: s0, needs 6/2, move cost 7; p1: s0, needs 3/3, move cost 1; p2: s1, needs 4/1, move cost 2
#   balance: r1=0, r2=1, target 2, weight 5; weights: process move 1, service move 10, machine move 100
TINY = """\
2
0 10
1 100
3
0 0 10 10 8 8 0 1 2
0 1 10 10 8 8 1 0 3
1 1 10 10 5 5 2 3 0
2
2 0
1 1 0
3
0 6 2 7
0 3 3 1
1 4 1 2
1
0 1 2 5
1 10 100
"""
INITIAL = "0 1 0\n"


def tiny_instance():
    inst = parse_instance(TINY, "tiny.txt")
    return inst, parse_assignment(INITIAL, inst, "tiny_assignment.txt")


def _kinds(violations):
    return sorted({v.split(":", 1)[0] for v in violations})


def load(name):
    """A set A instance and its initial assignment."""
    inst = read_instance(DATA / f"model_{name}.txt")
    return inst, read_assignment(DATA / f"assignment_{name}.txt", inst)


def exact(inst, a0, new):
    """The official objective of `new` and its violations."""
    obj, viol = score(inst, a0, new)
    return obj.total, viol


def random_shifts(inst, a0, moves: int, rng: random.Random) -> MoveState:
    """A MoveState `moves` random feasible shifts away from a0 (so that some processes are moved)."""
    state = MoveState(inst, a0, a0)
    while moves:
        p = rng.randrange(inst.n_processes)
        cand, _ = state.shift_deltas(p)
        if len(cand):
            state.apply_shift(p, int(cand[rng.randrange(len(cand))]))
            moves -= 1
    return state
