"""Moves that make room: the verifier's checks of a plan's moves, `--allow-moves` and `rebalance --goal admit`."""

import json

import pytest
from click.testing import CliRunner
from kplace.instances.generators import generate
from kplace.models import compile_index, load_state
from kplace.models.index import ClusterIndex
from kplace.models.plan import Move, Placement, Plan
from kplace.solver.cli import main
from kplace.solver.cpsat import CpsatOptions
from kplace.solver.cpsat.moves import better
from kplace.solver.framework.config import default_config
from kplace.solver.schedule import decide
from kplace.solver.testing import build_snapshot, node, pod
from kplace.solver.verify import load_plan, verify_plan

from ..rebalance.helpers import owned, pdb


def _fragmented():
    """Two 4-CPU nodes, 1 CPU free on each (a 2-CPU pod and a 1-CPU replica), and a pending 2-CPU pod."""
    return [node("n1"), node("n2"),
            owned("big-1", "big", cpu="2", node_name="n1"), owned("r-1", "web", cpu="1", node_name="n1"),
            owned("big-2", "big", cpu="2", node_name="n2"), owned("r-2", "web", cpu="1", node_name="n2"),
            pod("job", cpu="2")]


def rules(objects, moves, placements=()):
    index = ClusterIndex(build_snapshot(objects))
    plan = Plan("test", [Placement(f"default/{p}", n) for p, n in placements],
                moves=[Move(f"default/{p}", a, b, w) for p, a, b, w in moves])
    return sorted((v.pod.split("/")[-1], v.rule) for v in verify_plan(index, plan))


def test_a_move_that_frees_room_for_a_placement_verifies():
    assert rules(_fragmented(), [("r-1", "n1", "n2", 1)], [("job", "n1")]) == []


def test_without_the_move_the_placement_does_not_fit():
    assert rules(_fragmented(), [], [("job", "n1")]) == [("job", "NodeResourcesFit")]


def test_a_move_of_a_pod_without_a_controller_is_rejected():
    objs = [node("n1"), node("n2"), pod("bare", cpu="1", node_name="n1")]
    assert rules(objs, [("bare", "n1", "n2", 1)]) == [("bare", "Move")]


def test_a_move_from_a_node_the_pod_is_not_on_is_rejected():
    assert rules(_fragmented(), [("r-1", "n2", "n1", 1)]) == [("r-1", "Move")]


def test_a_replacement_that_does_not_fit_its_destination_is_rejected():
    objs = [node("n1", cpu="2"), node("n2", cpu="2"), owned("a", cpu="2", node_name="n1"),
            owned("b", cpu="2", node_name="n2")]
    assert rules(objs, [("a", "n1", "n2", 1)]) == [("a", "NodeResourcesFit")]


def test_a_swap_in_one_wave_counts_both_copies_and_is_rejected():
    objs = [node("n1", cpu="2"), node("n2", cpu="2"), owned("a", cpu="2", node_name="n1"),
            owned("b", "db", cpu="2", node_name="n2")]
    got = rules(objs, [("a", "n1", "n2", 1), ("b", "n2", "n1", 1)])
    assert got == [("a", "NodeResourcesFit"), ("b", "NodeResourcesFit")]


def test_a_wave_that_moves_more_pods_than_a_pdb_allows_is_rejected_and_two_waves_are_not():
    objs = [node("n1"), node("n2"), owned("r-1", cpu="1", node_name="n1"), owned("r-2", cpu="1", node_name="n1"),
            {**pdb("web", "web", max_unavailable=1), "status": {"disruptionsAllowed": 1, "currentHealthy": 2,
                                                                 "desiredHealthy": 1, "expectedPods": 2}}]
    assert rules(objs, [("r-1", "n1", "n2", 1), ("r-2", "n1", "n2", 1)]) == [("r-2", "PodDisruptionBudget")]
    assert rules(objs, [("r-1", "n1", "n2", 1), ("r-2", "n1", "n2", 2)]) == []


def test_moves_round_trip_through_the_plan_json(tmp_path):
    plan = Plan("cpsat", [Placement("default/job", "n1")], moves=[Move("default/r-1", "n1", "n2", 1,
                                                                       ["default/job"])])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.to_dict()))
    assert load_plan(path).moves == plan.moves


@pytest.fixture(params=[0, 1], ids=["equal-priority", "pending-outranks"])
def fragmented_state(request, tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps(generate("fragmented-moves", nodes=9, pods=3, seed=0,
                                        params={"preempt": str(request.param)})))
    return request.param, path


def test_allow_moves_admits_every_pod_with_one_move_each_and_no_eviction(fragmented_state):
    preempt, path = fragmented_state
    index = compile_index(load_state([str(path)]))
    opts = CpsatOptions(time_limit=5, workers=1)
    without = decide(index, default_config(), "cpsat", cpsat_options=opts)
    with_moves = decide(index, default_config(), "cpsat", cpsat_options=opts, allow_moves=5)
    assert sum(p.node is not None for p in with_moves.placements) == 3
    assert not with_moves.evictions and len(with_moves.moves) == 3
    assert all(len(m.admits) == 1 for m in with_moves.moves)
    assert better(with_moves, without)
    # without moves: preemption is held to the two PDBs' one disruption each, or nothing outranks the replicas
    assert len(without.evictions) == (2 if preempt else 0)
    assert sum(p.node is not None for p in without.placements) == (2 if preempt else 0)


def test_allow_moves_is_bounded_by_n(fragmented_state):
    _, path = fragmented_state
    index = compile_index(load_state([str(path)]))
    plan = decide(index, default_config(), "cpsat", cpsat_options=CpsatOptions(time_limit=5, workers=1),
                  allow_moves=1)
    assert len(plan.moves) <= 1


def test_the_schedule_command_prints_the_moves_and_refuses_them_with_greedy(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps(generate("fragmented-moves", nodes=6, pods=2, seed=0, params={"preempt": "0"})))
    out = CliRunner().invoke(main, ["schedule", str(path), "--allow-moves", "4", "--time-limit", "3", "-o", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["summary"]["moves"] == len(data["moves"]) == 2
    assert {m["wave"] for m in data["moves"]} <= {1, 2}
    bad = CliRunner().invoke(main, ["schedule", str(path), "--engine", "greedy", "--allow-moves", "1"])
    assert bad.exit_code == 2 and "--allow-moves needs --engine cpsat" in bad.output


def test_a_plan_with_moves_cannot_be_written_as_a_manifest(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps(generate("fragmented-moves", nodes=6, pods=1, seed=0, params={"preempt": "0"})))
    out = CliRunner().invoke(main, ["schedule", str(path), "--allow-moves", "2", "--time-limit", "3", "--bind",
                                    "manifest", "--output-file", str(tmp_path / "b.yaml")])
    assert out.exit_code != 0
    assert "cannot be written as a manifest" in out.output and "Traceback" not in out.output


def test_rebalance_admit_moves_only_what_the_named_pending_pods_need(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps(generate("fragmented-moves", nodes=9, pods=3, seed=0, params={"preempt": "0"})))
    out = CliRunner().invoke(main, ["rebalance", str(path), "--goal", "admit", "--pods", "frag/job-00001",
                                    "--time-limit", "5", "-o", "json"])
    assert out.exit_code == 0, out.output
    plan = json.loads(out.output)
    assert [p["pod"] for p in plan["placements"] if p["node"]] == ["frag/job-00001"]
    (move,) = plan["moves"]
    assert move["admits"] == ["frag/job-00001"]
    unknown = CliRunner().invoke(main, ["rebalance", str(path), "--goal", "admit", "--pods", "frag/nope"])
    assert unknown.exit_code != 0 and "not a pending pod in the state: frag/nope" in unknown.output
