import json

import pytest
from kplace.models.errors import ConfigError
from kplace.solver.framework.config import load_config, parse_policy


def names(profile, point):
    return [p.name for p in profile.at(point)]


def test_predicates_and_priorities_become_filters_and_weighted_scores_in_kubes_order():
    cfg = parse_policy({"kind": "Policy", "predicates": [{"name": "MatchInterPodAffinity"},
                                                         {"name": "PodFitsResources"},
                                                         {"name": "NoVolumeZoneConflict"}],
                        "priorities": [{"name": "MostRequestedPriority", "weight": 3},
                                       {"name": "SelectorSpreadPriority", "weight": 2},
                                       {"name": "ServiceSpreadingPriority", "weight": 5},
                                       {"name": "EqualPriority", "weight": 1}]})
    prof = cfg.profiles["default-scheduler"]
    assert names(prof, "filter") == ["NodeUnschedulable", "NodeResourcesFit", "TaintToleration", "VolumeZone",
                                     "InterPodAffinity"]
    assert names(prof, "score") == ["NodeResourcesFit", "SelectorSpread"]
    assert prof.weights == {"NodeResourcesFit": 3, "SelectorSpread": 5}
    assert prof.at("score")[0].args == {"scoringStrategy": {"type": "MostAllocated"}}
    assert prof.preemption


def test_general_predicates_expand_and_absent_lists_take_kubes_defaults():
    prof = parse_policy({"kind": "Policy", "predicates": [{"name": "GeneralPredicates"}], "priorities": []}).profiles[
        "default-scheduler"]
    assert names(prof, "filter") == ["NodeUnschedulable", "NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity",
                                     "TaintToleration"]
    assert names(prof, "score") == []
    default = parse_policy({"kind": "Policy"}).profiles["default-scheduler"]
    assert default.weights["NodePreferAvoidPods"] == 10000 and "VolumeBinding" in names(default, "filter")


def test_node_condition_predicates_and_symmetric_weight_and_extenders_carry_over():
    cfg = parse_policy({"kind": "Policy", "predicates": [{"name": "CheckNodeMemoryPressure"},
                                                         {"name": "CheckNodeCondition"}],
                        "hardPodAffinitySymmetricWeight": 7, "extenders": [{"urlPrefix": "http://x"}],
                        "priorities": [{"name": "InterPodAffinityPriority", "weight": 1}]})
    prof = cfg.profiles["default-scheduler"]
    assert names(prof, "filter")[:2] == ["CheckNodeCondition", "NodeUnschedulable"]
    assert "CheckNodeMemoryPressure" in names(prof, "filter")
    assert prof.at("score")[0].args == {"hardPodAffinityWeight": 7}
    assert cfg.extenders == [{"urlPrefix": "http://x"}]


ERRORS = [
    ("An unknown predicate is an error listing the valid ones.", {"predicates": [{"name": "Nope"}]},
     "unknown predicate 'Nope'; valid predicates: CheckNodeCondition"),
    ("An unknown priority is an error listing the valid ones.", {"priorities": [{"name": "Nope", "weight": 1}]},
     "unknown priority 'Nope'; valid priorities: BalancedResourceAllocation"),
    ("A priority weight must be positive.", {"priorities": [{"name": "EqualPriority", "weight": 0}]},
     "must be a positive integer"),
    ("Predicates that need an argument are not supported.", {"predicates": [{"name": "CheckNodeLabelPresence"}]},
     "is not supported"),
    ("Two NodeResourcesFit strategies cannot be combined.",
     {"priorities": [{"name": "LeastRequestedPriority", "weight": 1}, {"name": "MostRequestedPriority", "weight": 1}]},
     "both set NodeResourcesFit's scoring strategy"),
    ("The kind must be Policy.", {"kind": "KubeSchedulerConfiguration"}, "kind must be Policy"),
]


@pytest.mark.parametrize(("name", "raw", "message"), ERRORS, ids=[c[0] for c in ERRORS])
def test_policy_errors(name, raw, message):
    with pytest.raises(ConfigError) as exc:
        parse_policy({"kind": "Policy", **raw}, "p.yaml")
    assert message in str(exc.value) and str(exc.value).startswith("p.yaml")


def test_load_config_reads_a_policy_file_and_refuses_it_with_a_config(tmp_path):
    f = tmp_path / "policy.json"
    f.write_text(json.dumps({"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "PodFitsHostPorts"}],
                             "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}))
    cfg = load_config(None, policy_path=str(f))
    assert names(cfg.profiles["default-scheduler"], "filter") == ["NodeUnschedulable", "NodePorts", "TaintToleration"]
    with pytest.raises(ConfigError, match="cannot be used together"):
        load_config(str(f), policy_path=str(f))


def test_a_policy_file_given_on_the_command_line_changes_the_profile(tmp_path):
    import json

    from click.testing import CliRunner
    from kplace.solver.cli import main
    from kplace.solver.testing import node, pod

    state = tmp_path / "state.json"
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    state.write_text(json.dumps({"kind": "List", "items": [node("tainted", taints=taint), pod("p")]}))
    policy = tmp_path / "policy.json"
    # Only the resource predicate: without PodToleratesNodeTaints the taint would not matter, but kube's
    # legacy translation always keeps TaintToleration and NodeUnschedulable on, so the pod stays pending.
    policy.write_text(json.dumps({"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "PodFitsResources"}],
                                  "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}))
    out = CliRunner().invoke(main, ["schedule", str(state), "--engine", "greedy", "--policy-config-file", str(policy),
                                    "-o", "json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["placements"][0]["node"] is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "Policy", "predicates": [{"name": "NoSuchPredicate"}]}))
    out = CliRunner().invoke(main, ["schedule", str(state), "--policy-config-file", str(bad)])
    assert out.exit_code == 2 and "NoSuchPredicate" in out.output and "Traceback" not in out.output
