"""ROADEF 2012: the parser and the exact scorer (hand-computed and published costs), every kind of violation."""

import dataclasses

import numpy as np
import pytest
from kplace.models.errors import InputError
from kplace.solver.roadef.instance import parse_assignment, parse_instance, read_instance
from kplace.solver.roadef.scoring import score

from .helpers import DATA, TINY, _kinds, load, needs_data


def test_parse_tiny(tiny):
    inst, a0 = tiny
    assert (inst.n_resources, inst.n_machines, inst.n_services, inst.n_processes) == (2, 3, 2, 3)
    assert inst.transient.tolist() == [False, True]
    assert inst.load_weight.tolist() == [10, 100]
    assert inst.neighborhood.tolist() == [0, 0, 1] and inst.location.tolist() == [0, 1, 1]
    assert inst.safety[2].tolist() == [5, 5] and inst.capacity[1].tolist() == [10, 10]
    assert inst.machine_move_cost[1].tolist() == [1, 0, 3]
    assert inst.spread_min.tolist() == [2, 1] and inst.dependencies == ((), (0,))
    assert inst.service.tolist() == [0, 0, 1] and inst.requirement[2].tolist() == [4, 1]
    assert inst.process_move_cost.tolist() == [7, 1, 2]
    b = inst.balances[0]
    assert (b.r1, b.r2, b.target, b.weight) == (0, 1, 2, 5)
    assert (inst.weight_process_move, inst.weight_service_move, inst.weight_machine_move) == (1, 10, 100)
    assert a0.tolist() == [0, 1, 0]


def test_initial_objective_by_hand(tiny):
    inst, a0 = tiny
    obj, viol = score(inst, a0, a0)
    assert viol == []
    # usage m0 = 10/3, m1 = 3/3, m2 = 0/0. Load: m0 r0 is 2 over safety 8 → 2 × 10.
    assert obj.load == 20 and obj.load_by_resource == (20, 0)
    # balance 2 × free(r0) − free(r1): m0 2·0−7 → 0, m1 2·7−7 = 7, m2 2·10−10 = 10 → 17 × 5
    assert obj.balance == 85
    assert (obj.process_move, obj.service_move, obj.machine_move) == (0, 0, 0)
    assert obj.total == 105


def test_each_move_cost_by_hand(tiny):
    inst, a0 = tiny
    # p2 m0 → m1: usage m0 6/2, m1 7/4 (no overload); balance only m2: 10 × 5; process move 2 × 1;
    # service move: 1 moved process of s1 × 10; machine move MMC(0, 1) = 1 × 100.
    obj, viol = score(inst, a0, [0, 1, 1])
    assert viol == []
    assert (obj.load, obj.balance, obj.process_move, obj.service_move, obj.machine_move) == (0, 50, 2, 10, 100)
    assert obj.total == 162 and obj.moved_processes == 1
    # p0 and p1 (both s0) swap machines: service move is the max per service (2), not the total;
    # process move 7 + 1; machine move MMC(0, 1) + MMC(1, 0) = 2 × 100.
    obj, viol = score(inst, a0, [1, 0, 0])
    assert viol == []
    assert (obj.load, obj.balance, obj.process_move, obj.service_move, obj.machine_move) == (0, 50, 8, 20, 200)
    assert obj.total == 278


def test_capacity_violation(tiny):
    inst, a0 = tiny
    cap = inst.capacity.copy()
    cap[0, 0] = 9  # m0 runs p0 + p2: 10 of r0
    _, viol = score(dataclasses.replace(inst, capacity=cap), a0, a0)
    assert _kinds(viol) == ["capacity"] and "machine 0 resource 0" in viol[0]


def test_transient_violation(tiny):
    inst, a0 = tiny
    cap = inst.capacity.copy()
    cap[1, 1] = 3  # m1 holds p1 (3 of transient r1) initially
    inst = dataclasses.replace(inst, capacity=cap)
    assert score(inst, a0, a0)[1] == []
    # p1 leaves m1 for m2 and p2 arrives on m1: plain usage 1 ≤ 3, but p1 still counts there: 1 + 3 > 3
    _, viol = score(inst, a0, [0, 2, 1])
    assert _kinds(viol) == ["transient"] and "machine 1 resource 1" in viol[0]


def test_conflict_violation(tiny):
    inst, a0 = tiny
    inst = dataclasses.replace(inst, spread_min=np.array([1, 1]))
    _, viol = score(inst, a0, [0, 0, 1])  # p0 and p1 (service 0) on m0
    assert _kinds(viol) == ["conflict"] and "service 0" in viol[0] and "machine 0" in viol[0]


def test_spread_violation(tiny):
    inst, a0 = tiny
    _, viol = score(inst, a0, [2, 1, 0])  # s0 only in location 1
    assert _kinds(viol) == ["spread"] and "service 0" in viol[0]


def test_dependency_violation(tiny):
    inst, a0 = tiny
    _, viol = score(inst, a0, [0, 1, 2])  # s1 in neighborhood 1, where s0 does not run
    assert _kinds(viol) == ["dependency"] and "neighborhood 1" in viol[0]


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        (TINY.replace("1 100\n", "x 100\n", 1), "tiny.txt:3", "expected an integer for resource 1: transient flag"),
        (TINY.replace("1 100\n", "2 100\n", 1), "tiny.txt:3", "transient flag is 2"),
        (TINY.replace("1 4 1 2\n", "5 4 1 2\n"), "tiny.txt:14", "process 2: service is 5"),
        (TINY.replace("1 1 0\n", "1 1 7\n"), "tiny.txt:10", "service 1: dependency 0 is 7"),
        (TINY.replace("0 1 2 5\n", "0 3 2 5\n"), "tiny.txt:16", "balance 0: r2 is 3"),
        (TINY.replace("1 10 100\n", "1 10\n"), "tiny.txt:17", "unexpected end of file"),
        (TINY + "4\n", "tiny.txt:18", "unexpected extra data '4'"),
        (TINY.replace("0 0 10 10 8 8", "0 0 -1 10 8 8"), "tiny.txt:5", "capacity of resource 0 is -1"),
    ],
)
def test_malformed_model_names_file_and_line(text, where, what):
    with pytest.raises(InputError) as err:
        parse_instance(text, "tiny.txt")
    assert str(err.value).startswith(where + ":") and what in str(err.value)


def test_malformed_assignment(tiny):
    inst, _ = tiny
    with pytest.raises(InputError, match=r"^a.txt:1: unexpected end of file: expected machine of process 2"):
        parse_assignment("0 1", inst, "a.txt")
    with pytest.raises(InputError, match=r"^a.txt:2: machine of process 2 is 3, must be ≤ 2"):
        parse_assignment("0 1\n3\n", inst, "a.txt")
    with pytest.raises(InputError, match=r"^a.txt:1: unexpected extra data"):
        parse_assignment("0 1 0 0", inst, "a.txt")
    with pytest.raises(InputError, match="cannot read"):
        read_instance("/nonexistent/model.txt")


def test_score_rejects_wrong_length(tiny):
    inst, a0 = tiny
    with pytest.raises(InputError, match="new assignment"):
        score(inst, a0, [0, 1])


@needs_data
@pytest.mark.parametrize("name", ["a1_1", "a1_2", "a1_3", "a1_4", "a1_5", "a2_1", "a2_2"])
def test_scorer_matches_published_original_cost(name):
    inst, a0 = load(name)
    obj, viol = score(inst, a0, a0)
    assert viol == []
    assert obj.total == int((DATA / f"original_cost_{name}.txt").read_text().split()[0])
