"""The state checker re-checking only what a few moves can change gives the verdicts of a whole replay."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kplace.solver.rebalance.check import StateChecker

from .helpers import build_index, node, owned, pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APPS = ("a", "b", "c")


def _term(app: str, key: str) -> dict:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


@st.composite
def states(draw) -> tuple[list[dict], list[list[tuple[str, int | None]]]]:
    """3–6 nodes in 2 zones, 4–14 running pods of three apps with hostname or zone anti-affinity, zone affinity,
    zone spread (DoNotSchedule), host ports or none, and a sequence of 1–6 steps of 1–3 moves each (a pod to
    another node, or off every node)."""
    n_nodes = draw(st.integers(3, 6))
    objs = [node(f"n{i}", cpu="2", memory="4Gi", pods=draw(st.integers(3, 6)), labels={ZONE: f"z{i % 2}"})
            for i in range(n_nodes)]
    keys = []
    for i in range(draw(st.integers(4, 14))):
        app = draw(st.sampled_from(APPS))
        spec: dict = {}
        aff: dict = {}
        rule = draw(st.integers(0, 5))
        if rule == 0:
            aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app, HOST)]}
        elif rule == 1:
            other = draw(st.sampled_from(APPS))
            aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(other, ZONE)]}
        elif rule == 2:
            aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app, ZONE)]}
        elif rule == 3:
            spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE,
                                                  "whenUnsatisfiable": "DoNotSchedule",
                                                  "labelSelector": {"matchLabels": {"app": app}}}]
        if aff:
            spec["affinity"] = aff
        p = owned(f"p{i}", app, cpu=draw(st.sampled_from(["250m", "500m", "1"])), memory="512Mi",
                  node_name=f"n{draw(st.integers(0, n_nodes - 1))}", spec=spec)
        if draw(st.integers(0, 5)) == 0:
            p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        objs.append(p)
        keys.append(f"default/p{i}")
    objs.append(pod("loose", cpu="100m", node_name="n0"))
    moves = draw(st.lists(st.lists(st.tuples(st.sampled_from(keys), st.one_of(st.none(), st.integers(0, n_nodes - 1))),
                                   min_size=1, max_size=3), min_size=1, max_size=6))
    return objs, moves


def _verdicts(violations) -> list[tuple]:
    # the message of an existing pod's anti-affinity names the first term that fails, in the order terms were
    # first counted, which a long-lived replay and a fresh one may see differently
    return [(v.pod, v.node, v.rule, v.message if "existing pods" not in v.message else "") for v in violations]


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(states())
def test_moving_a_few_pods_at_a_time_gives_the_verdicts_of_a_whole_replay_of_each_state(case):
    objs, steps = case
    index = build_index(*objs)
    assign = {p.key: int(p.node) for p in index.pods if p.node >= 0}
    kept = StateChecker(index)
    kept.INCREMENTAL = 1_000  # every step below is incremental
    assert _verdicts(kept.violations(assign)) == _verdicts(StateChecker(index).violations(assign))
    for step in steps:
        for key, n in step:
            assign[key] = n
        assert _verdicts(kept.violations(assign)) == _verdicts(StateChecker(index).violations(assign)), step
