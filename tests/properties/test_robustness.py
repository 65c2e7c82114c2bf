"""One pod never stops the others: valid but unusual pods (every plugin's corner cases) and a plugin that fails on
one pod leave that pod pending with a reason, through both engines, `explain` and the extender."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from kplace.models.index import ClusterIndex
from kplace.solver.binder.extender import Extender, ExtenderOptions
from kplace.solver.cpsat import CpsatOptions, schedule_cpsat
from kplace.solver.explain import explain_pod
from kplace.solver.framework.config import default_config
from kplace.solver.greedy import schedule_greedy
from kplace.solver.plugins.tainttoleration import TaintToleration
from kplace.solver.testing import build_snapshot, build_state, node, pod
from kplace.solver.verify import verify_plan

ZONE = "topology.kubernetes.io/zone"
KEYS = (ZONE, "kubernetes.io/hostname", "rack", "missing-everywhere")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@st.composite
def corner_spec(draw) -> dict:
    spec: dict = {}
    key = draw(st.sampled_from(KEYS))
    sel = draw(st.sampled_from([{"matchLabels": {"app": "a"}}, {}, {"matchExpressions": [
        {"key": "app", "operator": "Exists"}]}]))
    kind = draw(st.integers(0, 7))
    if kind == 0:
        spec["topologySpreadConstraints"] = [{"maxSkew": draw(st.integers(1, 3)), "topologyKey": key,
                                              "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule",
                                                                                         "ScheduleAnyway"])),
                                              "labelSelector": sel}]
    elif kind == 1:
        which = draw(st.sampled_from(["podAffinity", "podAntiAffinity"]))
        term = {"labelSelector": sel, "topologyKey": key}
        if draw(st.booleans()):
            spec["affinity"] = {which: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        else:
            spec["affinity"] = {which: {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": draw(st.integers(1, 100)), "podAffinityTerm": term}]}}
    elif kind == 2:
        spec["tolerations"] = [{"key": "k", "operator": "Exists", "effect": draw(st.sampled_from(EFFECTS))}]
    elif kind == 3:
        spec["nodeSelector"] = {draw(st.sampled_from(KEYS)): "z0"}
    elif kind == 4:
        spec["initContainers"] = [{"name": "init", "image": "x", "resources": {"requests": {"cpu": "3"}}}]
    elif kind == 5:
        spec["overhead"] = {"cpu": "250m"}
    return spec


@st.composite
def corner_states(draw) -> list[dict]:
    objs = []
    n_nodes = draw(st.integers(0, 4))
    for i in range(n_nodes):
        labels = {ZONE: f"z{i % 2}"} if draw(st.booleans()) else {}
        taints = [{"key": "k", "value": "v", "effect": draw(st.sampled_from(EFFECTS))}] if draw(st.booleans()) else None
        objs.append(node(f"n{i}", cpu=draw(st.sampled_from(["1", "2"])), labels=labels, taints=taints,
                         extra={"example.com/gpu": "1"} if draw(st.booleans()) else None))
    for i in range(draw(st.integers(1, 6))):
        cpu, extra = draw(st.sampled_from([("0", None), ("500m", None), ("100m", {"example.com/gpu": "1"})]))
        objs.append(pod(f"p{i}", cpu=cpu, extra=extra, labels={"app": draw(st.sampled_from(["a", "b"]))},
                        spec=draw(corner_spec())))
    return objs


SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _index(objs) -> ClusterIndex:
    note(json.dumps(objs))
    return ClusterIndex(build_snapshot(objs))


@SETTINGS
@given(corner_states())
def test_corner_case_states_go_through_both_engines_explain_and_the_extender_without_an_exception(objs):
    index = _index(objs)
    for plan in (schedule_greedy(index), schedule_cpsat(index, options=CpsatOptions(time_limit=1, workers=1))):
        assert not verify_plan(index, plan)
        assert all(p.node or p.reason for p in plan.placements)
    for p in index.pending:
        explain_pod(index, default_config(), p.key)
    ext = Extender(build_snapshot(objs), default_config(), ExtenderOptions(engine="greedy"))
    names = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    for p in (o for o in objs if o["kind"] == "Pod"):
        out = ext.filter({"Pod": p, "NodeNames": names})
        assert "Error" not in out or out["Error"] == ""


def _failing_for(monkeypatch, bad: str) -> None:
    original = TaintToleration.filter

    def filter_(self, state, pod_, cycle, nodes):
        if pod_.name == bad:
            raise IndexError("boom")
        return original(self, state, pod_, cycle, nodes)

    monkeypatch.setattr(TaintToleration, "filter", filter_)


def test_a_plugin_failing_on_one_pod_leaves_that_pod_pending_and_schedules_the_rest(monkeypatch):
    _failing_for(monkeypatch, "bad")
    state = build_state([node("a"), node("b")], [pod("ok-1", cpu="100m"), pod("bad", cpu="200m"),
                                                  pod("ok-2", cpu="100m")])
    for plan in (schedule_greedy(state.index), schedule_cpsat(state.index, options=CpsatOptions(time_limit=1))):
        by_pod = {p.pod: p for p in plan.placements}
        assert by_pod["default/ok-1"].node and by_pod["default/ok-2"].node
        assert by_pod["default/bad"].node is None
        assert "IndexError: boom" in by_pod["default/bad"].reason
        assert "the other pods are scheduled" in by_pod["default/bad"].reason


def test_explain_reports_a_pod_it_cannot_evaluate_instead_of_raising(monkeypatch):
    _failing_for(monkeypatch, "bad")
    state = build_state([node("a")], [pod("bad", cpu="100m")])
    out = explain_pod(state.index, default_config(), "default/bad")
    assert out["selected"] is None and "IndexError: boom" in out["message"]


def test_a_spread_constraint_on_a_key_no_node_has_leaves_only_that_pod_pending_as_kube_does():
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule",
                                             "labelSelector": {"matchLabels": {"app": "r"}}}]}
    state = build_state([node("a"), node("b")], [pod("racky", labels={"app": "r"}, spec=spread), pod("plain")])
    for plan in (schedule_greedy(state.index), schedule_cpsat(state.index, options=CpsatOptions(time_limit=1))):
        by_pod = {p.pod: p for p in plan.placements}
        assert by_pod["default/plain"].node in ("a", "b")
        assert by_pod["default/racky"].node is None
        assert "missing required label" in by_pod["default/racky"].reason
    assert np.all(state.index.label_column("rack")[0] < 0)


def test_kplace_schedule_on_a_state_with_an_unsatisfiable_spread_key_schedules_the_other_pods(tmp_path):
    from click.testing import CliRunner
    from kplace.solver.cli import main
    from kplace.solver.output import dumps

    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule",
                                             "labelSelector": {"matchLabels": {"app": "r"}}}]}
    state = tmp_path / "s.json"
    state.write_text(dumps({"kind": "List", "items": [node("a"), pod("racky", labels={"app": "r"}, spec=spread),
                                                      pod("plain")]}), encoding="utf-8")
    for engine in ("greedy", "cpsat"):
        res = CliRunner().invoke(main, ["schedule", str(state), "--engine", engine, "--output", "json"])
        assert res.exit_code == 0, res.output
        by_pod = {p["pod"]: p for p in json.loads(res.output)["placements"]}
        assert by_pod["default/plain"]["node"] == "a" and by_pod["default/racky"]["node"] is None
