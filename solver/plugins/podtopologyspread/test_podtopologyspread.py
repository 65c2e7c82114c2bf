import numpy as np
import pytest
from kplace.models.errors import ConfigError
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.podtopologyspread import (
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from kplace.solver.plugins.podtopologyspread.spread import normalize_spread
from kplace.solver.testing import SKIPPED, assert_filter, build_state, node, pod

OK, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
SKIP = SKIPPED
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

# a1, a2 in zone a; b1 in zone b; c1 without a zone label.
NODES = [node("a1", labels={ZONE: "a"}), node("a2", labels={ZONE: "a"}), node("b1", labels={ZONE: "b"}), node("c1")]
X = {"app": "x"}


def tsc(key=ZONE, max_skew=1, hard=True, labels=X, **extra):
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway"}
    if labels is not None:
        c["labelSelector"] = {"matchLabels": labels}
    c.update(extra)
    return c


def bound(name, node_name, labels=X, namespace="default", terminating=False):
    p = pod(name, node_name=node_name, labels=labels, namespace=namespace)
    if terminating:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return p


def incoming(constraints=(), labels=X, spec=None):
    body = {"topologySpreadConstraints": list(constraints), **(spec or {})}
    return pod("incoming", labels=labels, spec=body)


def run_filter(nodes, objects, args=None):
    state = build_state(nodes, *objects)
    p = state.index.pod_by_key["default/incoming"]
    plugin, cycle = PodTopologySpread(args), CycleState()
    if plugin.pre_filter(state, p, cycle).code == Code.SKIP:
        return SKIP
    return plugin.filter(state, p, cycle, np.arange(len(nodes)))


TAINTED_B = [node("a1", labels={ZONE: "a"}), node("a2", labels={ZONE: "a"}),
             node("b1", labels={ZONE: "b"}, taints=[{"key": "foo", "effect": "NoSchedule"}])]
RACKS = [node("a1", labels={ZONE: "a", "rack": "r1"}), node("b1", labels={ZONE: "b"}),
         node("b2", labels={ZONE: "b", "rack": "r2"})]
NO_RACK_B = [node("a1", labels={ZONE: "a", "rack": "r1"}), node("b1", labels={ZONE: "b"})]

FILTER_CASES = [
    ("A pod with only ScheduleAnyway constraints is skipped in PreFilter.",
     NODES, [incoming([tsc(hard=False)])], SKIP),
    ("A pod without constraints is skipped: the System defaults are all ScheduleAnyway.",
     NODES, [{"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": X}},
             incoming()], SKIP),
    ("A node without the topology key is unresolvable.",
     NODES, [incoming([tsc()])], [OK, OK, OK, UU]),
    ("The pod counts itself when it matches its own selector: zone a with one pod exceeds maxSkew 1.",
     NODES, [bound("e", "a1"), incoming([tsc()])], [U, U, OK, UU]),
    ("A pod that does not match its own selector does not count itself.",
     NODES, [bound("e", "a1"), incoming([tsc()], labels={})], [OK, OK, OK, UU]),
    ("The global minimum is the smallest domain count.",
     NODES, [bound("e1", "a1"), bound("e2", "a2"), bound("e3", "b1"), incoming([tsc()])], [U, U, OK, UU]),
    ("Fewer domains than minDomains make the global minimum 0.",
     NODES, [bound("e1", "a1"), bound("e2", "a2"), bound("e3", "b1"), incoming([tsc(minDomains=3)])],
     [U, U, U, UU]),
    ("minDomains equal to the number of domains keeps the real global minimum.",
     NODES, [bound("e1", "a1"), bound("e2", "a2"), bound("e3", "b1"), incoming([tsc(minDomains=2)])],
     [U, U, OK, UU]),
    ("Terminating pods are not counted.",
     NODES, [bound("e", "a1", terminating=True), incoming([tsc()])], [OK, OK, OK, UU]),
    ("Pods in other namespaces are not counted.",
     NODES, [bound("e", "a1", namespace="other"), incoming([tsc()])], [OK, OK, OK, UU]),
    ("nodeAffinityPolicy Honor (the default) leaves nodes the pod's node affinity excludes out of the domains.",
     NODES, [bound("e", "a1"), incoming([tsc()], spec={"nodeSelector": {ZONE: "a"}})], [OK, OK, OK, UU]),
    ("nodeAffinityPolicy Ignore counts domains the pod's node affinity excludes.",
     NODES, [bound("e", "a1"), incoming([tsc(nodeAffinityPolicy="Ignore")], spec={"nodeSelector": {ZONE: "a"}})],
     [U, U, OK, UU]),
    ("nodeTaintsPolicy Ignore (the default) counts domains made only of untolerated tainted nodes.",
     TAINTED_B, [bound("e", "a1"), incoming([tsc()])], [U, U, OK]),
    ("nodeTaintsPolicy Honor leaves untolerated tainted nodes out of the domains.",
     TAINTED_B, [bound("e", "a1"), incoming([tsc(nodeTaintsPolicy="Honor")])], [OK, OK, OK]),
    ("nodeTaintsPolicy Honor keeps tainted nodes the pod tolerates.",
     TAINTED_B, [bound("e", "a1"), incoming([tsc(nodeTaintsPolicy="Honor")],
                                            spec={"tolerations": [{"key": "foo", "operator": "Exists"}]})],
     [U, U, OK]),
    ("Only nodes carrying every constraint's key make domains; a node missing a later key is unresolvable.",
     NO_RACK_B, [bound("e", "a1"), incoming([tsc(), tsc(key="rack", max_skew=5)])], [OK, UU]),
    ("The first failing constraint decides: a skew failure before a missing label is Unschedulable.",
     RACKS, [bound("e1", "b2"), bound("e2", "b2"), incoming([tsc(), tsc(key="rack", max_skew=5)])], [OK, U, U]),
    ("The first failing constraint decides: a missing label before a skew failure is unresolvable.",
     RACKS, [bound("e1", "b2"), bound("e2", "b2"), incoming([tsc(key="rack", max_skew=5), tsc()])], [OK, UU, U]),
    ("matchLabelKeys adds the pod's value of the key to the selector.",
     NODES, [bound("e1", "a1", {"app": "x", "ver": "1"}), bound("e2", "a2", {"app": "x", "ver": "1"}),
             incoming([tsc(matchLabelKeys=["ver"])], labels={"app": "x", "ver": "2"})], [OK, OK, OK, UU]),
    ("Without matchLabelKeys the same pods count whatever their version.",
     NODES, [bound("e1", "a1", {"app": "x", "ver": "1"}), bound("e2", "a2", {"app": "x", "ver": "1"}),
             incoming([tsc()], labels={"app": "x", "ver": "2"})], [U, U, OK, UU]),
    ("An empty labelSelector counts no pods, yet the pod still counts itself.",
     NODES, [bound("e1", "a1"), bound("e2", "a1"), incoming([tsc(labels={})])], [OK, OK, OK, UU]),
    ("A lone pod with an empty labelSelector fits every node that has the key.",
     NODES, [incoming([tsc(labels={}, max_skew=1)])], [OK, OK, OK, UU]),
    ("A missing labelSelector matches nothing, not even the pod itself.",
     NODES, [bound("e1", "a1"), bound("e2", "a1"), incoming([tsc(labels=None)])], [OK, OK, OK, UU]),
    ("A hostname constraint spreads over nodes.",
     NODES, [bound("e1", "a1"), incoming([tsc(key=HOST)])], [U, OK, OK, OK]),
]


@pytest.mark.parametrize(("name", "nodes", "objects", "want"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(name, nodes, objects, want):
    result = run_filter(nodes, objects)
    assert_filter(result, want, {U: [REASON_CONSTRAINTS_NOT_MATCH], UU: [REASON_NODE_LABEL_NOT_MATCH]})


def test_filter_follows_assume():
    """Assuming a matching pod into zone b moves the skew failure; the counts are live."""
    state = build_state(NODES, bound("e", "a1"), pod("other", labels=X), incoming([tsc()]))
    p = state.index.pod_by_key["default/incoming"]
    plugin = PodTopologySpread()
    state.assume(state.index.pod_by_key["default/other"], 2)
    cycle = CycleState()
    plugin.pre_filter(state, p, cycle)
    assert [Code(c) for c in plugin.filter(state, p, cycle, np.arange(4)).code] == [OK, OK, OK, UU]


# --- scoring ------------------------------------------------------------------------------------------

SERVICE = {"kind": "Service", "metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": X}}


def run_score(nodes, objects, feasible, args=None):
    state = build_state(nodes, *objects)
    p = state.index.pod_by_key["default/incoming"]
    plugin, cycle = PodTopologySpread(args), CycleState()
    feasible = np.array(feasible)
    if not plugin.pre_score(state, p, cycle, feasible):
        return None, None
    raw = plugin.score(state, p, cycle, feasible)
    return raw.tolist(), plugin.normalize(raw, p, cycle).tolist()


THREE = [node("a1", labels={ZONE: "a"}), node("a2", labels={ZONE: "a"}), node("b1", labels={ZONE: "b"})]
EXISTING = [bound("e1", "a1"), bound("e2", "a1"), bound("e3", "a2")]

SCORE_CASES = [
    # Zone: domains {a, b}, w = ln 4 = 1.386; counts a = 3, b = 0. raw a = round(4.159) = 4, b = 0.
    # max 4, min 0 → a: 100·(4 + 0 − 4)/4 = 0, b: 100.
    ("A zone constraint scores ln(#domains + 2) per matching pod in the node's zone.",
     THREE, [*EXISTING, incoming([tsc(hard=False)])], [0, 1, 2], None, [4, 4, 0], [0, 0, 100]),
    # Hostname maxSkew 2: size = 3 feasible nodes, w = ln 5 = 1.609; own pods 2, 1, 0.
    # raw = round(2·1.609 + 1) = 4, round(2.609) = 3, 1. max 4, min 1 → 25, 50, 100.
    ("A hostname constraint counts each node's own pods with weight ln(#feasible + 2).",
     THREE, [*EXISTING, incoming([tsc(key=HOST, max_skew=2, hard=False)])], [0, 1, 2], None, [4, 3, 1],
     [25, 50, 100]),
    # Both: a1 = 2·ln5 + 1 + 3·ln4 = 8.378 → 8, a2 = 1.609 + 1 + 4.159 = 6.768 → 7, b1 = 1.
    # max 8, min 1 → a1 100·1/8 = 12, a2 100·2/8 = 25, b1 100.
    ("Two soft constraints add up before rounding.",
     THREE, [*EXISTING, incoming([tsc(hard=False), tsc(key=HOST, max_skew=2, hard=False)])], [0, 1, 2], None,
     [8, 7, 1], [12, 25, 100]),
    # Only a1 and b1 feasible: zone domains {a, b}; counts still include a2's pod (all nodes count): a = 3.
    # Hostname size = 2 → w = ln 4. a1 = 2·1.386 + 3·1.386 = 6.93 → 7; b1 = 0. max 7 → a1 0, b1 100.
    ("Counts come from all nodes while domains and sizes come from the feasible nodes.",
     THREE, [*EXISTING, incoming([tsc(hard=False, max_skew=1), tsc(key=HOST, hard=False)])], [0, 2], None,
     [7, 0], [0, 100]),
    # Feasible a1, b1 and c1 (no zone): the pod's own constraints require all keys, so c1 is ignored (0) and
    # sizes exclude it: domains {a, b} as in the first case.
    ("A feasible node missing a key of the pod's own constraints is ignored and scores 0.",
     NODES, [*EXISTING, incoming([tsc(hard=False)])], [0, 2, 3], None, [4, 0, 0], [0, 100, 0]),
    # Only b1 and c1 feasible, c1 ignored: raw b1 = 0 → max 0 → 100 for b1, 0 for ignored c1.
    ("When the maximum raw score is 0 every non-ignored node scores 100.",
     NODES, [*EXISTING, incoming([tsc(hard=False)])], [2, 3], None, [0, 0], [100, 0]),
    # System defaults via a Service: hostname maxSkew 3 and zone maxSkew 5, requireAll false so c1 counts.
    # Zone domains among feasible: a, b and "" (c1) → w_zone = ln 5 = 1.609; hostname w = ln 6 = 1.792.
    # a1 = 2·1.792 + 2 + 3·1.609 + 4 = 14.41 → 14; a2 = 1.792 + 2 + 8.828 = 12.62 → 13; b1 = 2 + 4 = 6;
    # c1 = 2 (no zone label, no zone term). max 14, min 2 → 100·2/14 = 14, 100·3/14 = 21, 100·10/14 = 71, 100.
    ("System default constraints apply to a pod selected by a Service, and nodes without a zone still score.",
     NODES, [SERVICE, *EXISTING, incoming()], [0, 1, 2, 3], None, [14, 13, 6, 2], [14, 21, 71, 100]),
    ("A pod selected by no Service or controller gets no default constraints and is not scored.",
     NODES, [*EXISTING, incoming(labels={"app": "y"})], [0, 1, 2, 3], None, None, None),
    ("A pod that declares only DoNotSchedule constraints is not scored, defaults or not.",
     NODES, [SERVICE, *EXISTING, incoming([tsc()])], [0, 1, 2, 3], None, None, None),
    ("defaultingType List with no constraints turns the defaults off.",
     NODES, [SERVICE, *EXISTING, incoming()], [0, 1, 2, 3], {"defaultingType": "List"}, None, None),
    # List defaults: requireAll holds, so c1 (no zone) is ignored. Zone maxSkew 2: domains {a, b}, w = ln 4;
    # a = round(3·1.386 + 1) = 5, b = 1 → max 5, min 1 → 100·1/5 = 20, 100·5/5 = 100.
    ("List default constraints get the Service's selector and require all their keys.",
     NODES, [SERVICE, *EXISTING, incoming()], [0, 1, 2, 3],
     {"defaultingType": "List",
      "defaultConstraints": [{"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]},
     [5, 5, 1, 0], [20, 20, 100, 0]),
]


@pytest.mark.parametrize(("name", "nodes", "objects", "feasible", "args", "raw", "norm"), SCORE_CASES,
                         ids=[c[0] for c in SCORE_CASES])
def test_score(name, nodes, objects, feasible, args, raw, norm):
    assert run_score(nodes, objects, feasible, args) == (raw, norm)


def _replicaset(name, selector, template_labels):
    return {"kind": "ReplicaSet", "apiVersion": "apps/v1", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": selector, "template": {"metadata": {"labels": template_labels},
                                                                      "spec": {"containers": [{"name": "c"}]}}}}


def _default_selector(objects):
    from kplace.solver.plugins.podtopologyspread.spread import default_selector

    state = build_state(NODES, *objects)
    pending = state.index.pending[0]
    return default_selector(state.index, pending), state


def test_default_selector_from_replicaset_owner():
    """A pod owned by a ReplicaSet takes the ReplicaSet's selector (matchLabels and matchExpressions)."""
    sel, _ = _default_selector([_replicaset("rs", {"matchLabels": X, "matchExpressions": [
        {"key": "tier", "operator": "Exists"}]}, {"app": "x", "tier": "web"})])
    assert sel.matches({"app": "x", "tier": "web"})
    assert not sel.matches({"app": "x"})


def test_default_selector_from_deployment_template_hash():
    """A Deployment's pods get the Deployment selector plus pod-template-hash, as their ReplicaSet would have."""
    dep = _replicaset("web", {"matchLabels": X}, X) | {"kind": "Deployment"}
    sel, state = _default_selector([dep])
    h = state.index.pending[0].labels["pod-template-hash"]
    assert sel.matches({"app": "x", "pod-template-hash": h})
    assert not sel.matches({"app": "x", "pod-template-hash": "other"})


def test_default_selector_ignores_services_in_other_namespaces():
    other = {"kind": "Service", "metadata": {"name": "s", "namespace": "other"}, "spec": {"selector": X}}
    sel, _ = _default_selector([other, pod("p", labels=X)])
    assert sel.empty


NORMALIZE_CASES = [
    ("Ignored nodes score 0 and do not count for min and max.", [4, 0, 9], [False, False, True], [0, 100, 0]),
    ("Integer division truncates.", [3, 1, 2], [False, False, False], [33, 100, 66]),
    ("All ignored gives all 0.", [1, 2], [True, True], [0, 0]),
]


@pytest.mark.parametrize(("name", "raw", "ignored", "want"), NORMALIZE_CASES, ids=[c[0] for c in NORMALIZE_CASES])
def test_normalize(name, raw, ignored, want):
    assert normalize_spread(np.array(raw), np.array(ignored)).tolist() == want


ARG_CASES = [
    ("No args mean System defaulting.", None, True),
    ("List defaulting with constraints is valid.",
     {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                        "whenUnsatisfiable": "DoNotSchedule"}]}, False),
    ("System defaulting with constraints is rejected.",
     {"defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
     ConfigError),
    ("An unknown defaultingType is rejected.", {"defaultingType": "Custom"}, ConfigError),
    ("A zero maxSkew is rejected.",
     {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": ZONE,
                                                        "whenUnsatisfiable": "DoNotSchedule"}]}, ConfigError),
    ("An empty topologyKey is rejected.",
     {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "",
                                                        "whenUnsatisfiable": "DoNotSchedule"}]}, ConfigError),
    ("An unknown whenUnsatisfiable is rejected.",
     {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                        "whenUnsatisfiable": "Maybe"}]}, ConfigError),
    ("A default constraint with a labelSelector is rejected.",
     {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                        "whenUnsatisfiable": "DoNotSchedule",
                                                        "labelSelector": {}}]}, ConfigError),
    ("Two default constraints with the same key and action are rejected.",
     {"defaultingType": "List", "defaultConstraints": [
         {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
         {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}, ConfigError),
    ("An unknown field is rejected.", {"defaultConstraint": []}, ConfigError),
]


@pytest.mark.parametrize(("name", "args", "want"), ARG_CASES, ids=[c[0] for c in ARG_CASES])
def test_args(name, args, want):
    if want is ConfigError:
        with pytest.raises(ConfigError):
            PodTopologySpread(args)
    else:
        assert PodTopologySpread(args).system_defaulted is want


def test_registered():
    from kplace.solver.plugins import registry

    assert registry()["PodTopologySpread"] is PodTopologySpread


def test_cached_counts_follow_assume_and_forget():
    """Counts cached by an earlier cycle are kept current by assume and forget."""
    state = build_state(NODES, pod("other", labels=X), incoming([tsc()]))
    p = state.index.pod_by_key["default/incoming"]
    other = state.index.pod_by_key["default/other"]
    plugin = PodTopologySpread()

    def codes():
        cycle = CycleState()
        plugin.pre_filter(state, p, cycle)
        return [Code(c) for c in plugin.filter(state, p, cycle, np.arange(4)).code]

    assert codes() == [OK, OK, OK, UU]
    state.assume(other, 0)
    assert codes() == [U, U, OK, UU]
    state.forget(other)
    assert codes() == [OK, OK, OK, UU]
