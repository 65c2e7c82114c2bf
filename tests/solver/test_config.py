"""Profiles from KubeSchedulerConfiguration, merged as kube-scheduler merges them."""

import pytest
from kplace.models.errors import ConfigError
from kplace.solver.framework.config import default_config, load_config, parse_config


def _cfg(profiles, **top):
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": profiles, **top}


def _names(profile, point):
    return [p.name for p in profile.at(point)]


def test_the_default_profile_has_kubes_score_weights():
    prof = default_config().profile_for("default-scheduler")
    for name, weight in {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2, "InterPodAffinity": 2,
                         "NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}.items():
        assert name in _names(prof, "score")
        assert prof.weights[name] == weight
    assert prof.preemption


def test_a_multipoint_disable_removes_a_plugin_from_every_extension_point():
    prof = parse_config(_cfg([{"plugins": {"multiPoint": {"disabled": [{"name": "NodeUnschedulable"}]}}}]))
    prof = prof.profile_for("default-scheduler")
    assert "NodeUnschedulable" not in _names(prof, "filter")


def test_disabling_everything_at_filter_keeps_only_plugins_enabled_there():
    raw = _cfg([{"plugins": {"filter": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeUnschedulable"}]}}}])
    prof = parse_config(raw).profile_for("default-scheduler")
    assert _names(prof, "filter") == ["NodeUnschedulable"]


def test_a_score_weight_given_at_the_score_point_overrides_the_multipoint_weight():
    raw = _cfg([{"plugins": {"score": {"enabled": [{"name": "TaintToleration", "weight": 7}]}}}])
    prof = parse_config(raw).profile_for("default-scheduler")
    assert "TaintToleration" in _names(prof, "score")
    assert prof.weights["TaintToleration"] == 7


def test_disabling_default_preemption_turns_preemption_off():
    raw = _cfg([{"plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}])
    assert not parse_config(raw).profile_for("default-scheduler").preemption


def test_several_profiles_are_chosen_by_scheduler_name():
    cfg = parse_config(_cfg([{"schedulerName": "default-scheduler"}, {"schedulerName": "batch"}]))
    assert set(cfg.profiles) == {"default-scheduler", "batch"}


def test_percentage_of_nodes_to_score_is_read_per_profile():
    cfg = parse_config(_cfg([{"percentageOfNodesToScore": 30}], percentageOfNodesToScore=10))
    assert cfg.percentage_of_nodes_to_score == 10
    assert cfg.profile_for("default-scheduler").percentage_of_nodes_to_score == 30


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "Policy"}, "kind must be KubeSchedulerConfiguration"),
        (_cfg([{"plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}]), "unknown plugin 'NoSuchPlugin'"),
        (_cfg([{"plugins": {"scores": {}}}]), "unknown extension point 'scores'"),
        (_cfg([{}, {}]), "duplicate schedulerName 'default-scheduler'"),
        (_cfg([{}], percentageOfNodesToScore=150), "percentageOfNodesToScore must be an integer 0..100"),
        (_cfg([{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": -1}]}}}]),
         "weight: must be a positive integer"),
    ],
    ids=["wrong kind", "unknown plugin", "unknown extension point", "duplicate profile", "bad percentage",
         "negative weight"],
)
def test_an_invalid_configuration_is_a_clear_error(raw, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        parse_config(raw, "sched.yaml")


def test_a_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(str(tmp_path / "nope.yaml"))
