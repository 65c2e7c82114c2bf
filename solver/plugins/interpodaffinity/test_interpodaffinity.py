import numpy as np
import pytest
from kplace.models.errors import ConfigError
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.interpodaffinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
    normalize_min_max,
)
from kplace.solver.testing import SKIPPED, assert_filter, build_state, node, pod

OK, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
SKIP = SKIPPED
ZONE, HOST = "zone", "kubernetes.io/hostname"

# n1, n2 in zone z1; n3 in zone z2; n4 has no zone label.
NODES = [node("n1", labels={ZONE: "z1"}), node("n2", labels={ZONE: "z1"}), node("n3", labels={ZONE: "z2"}), node("n4")]


def term(labels=None, key=ZONE, namespaces=None, ns_selector=None, match_keys=None, mismatch_keys=None,
         exprs=None):
    t = {"topologyKey": key, "labelSelector": {"matchLabels": labels or {}, "matchExpressions": exprs or []}}
    if namespaces is not None:
        t["namespaces"] = namespaces
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    if match_keys:
        t["matchLabelKeys"] = match_keys
    if mismatch_keys:
        t["mismatchLabelKeys"] = mismatch_keys
    return t


def affinity(required=(), anti=(), preferred=(), preferred_anti=()):
    spec = {}
    if required or preferred:
        spec["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(required),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred
            ],
        }
    if anti or preferred_anti:
        spec["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti
            ],
        }
    return {"affinity": spec}


def bound(name, node_name, labels, namespace="default", spec=None, terminating=False):
    p = pod(name, node_name=node_name, labels=labels, namespace=namespace, spec=spec)
    if terminating:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return p


def incoming(labels=None, spec=None, namespace="default"):
    return pod("incoming", labels=labels or {}, spec=spec, namespace=namespace)


def namespace(name, labels):
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def run_filter(objects, args=None):
    state = build_state(NODES, *objects)
    p = state.index.pending[0]
    plugin, cycle = InterPodAffinity(args), CycleState()
    pre = plugin.pre_filter(state, p, cycle)
    if pre.code == Code.SKIP:
        return SKIP, None
    return plugin.filter(state, p, cycle, np.arange(4)), state


FILTER_CASES = [
    (
        "A pod without pod affinity terms is skipped when no existing pod's anti-affinity selects it.",
        [bound("e", "n1", {"app": "db"}), incoming({"app": "web"})],
        SKIP, None,
    ),
    (
        "Required affinity passes only in the zone that runs a matching pod.",
        [bound("e", "n1", {"app": "db"}), incoming(spec=affinity(required=[term({"app": "db"})]))],
        [OK, OK, UU, UU], REASON_AFFINITY,
    ),
    (
        "The first pod of a self-affine group may go to any node that has the topology key.",
        [incoming({"app": "web"}, affinity(required=[term({"app": "web"})]))],
        [OK, OK, OK, UU], REASON_AFFINITY,
    ),
    (
        "The first-pod rule does not apply when the pod does not match its own affinity terms.",
        [incoming({"app": "web"}, affinity(required=[term({"app": "db"})]))],
        [UU, UU, UU, UU], REASON_AFFINITY,
    ),
    (
        "The first-pod rule does not apply once a matching pod runs somewhere.",
        [bound("e", "n3", {"app": "web"}), incoming({"app": "web"}, affinity(required=[term({"app": "web"})]))],
        [UU, UU, OK, UU], REASON_AFFINITY,
    ),
    (
        "An existing pod counts for affinity only if it matches all the required affinity terms.",
        [bound("e1", "n1", {"app": "db"}), bound("e2", "n3", {"app": "db", "tier": "x"}),
         incoming(spec=affinity(required=[term({"app": "db"}), term({"tier": "x"})]))],
        [UU, UU, OK, UU], REASON_AFFINITY,
    ),
    (
        "Each affinity term is checked in its own topology: zone and hostname together pin the pod's node.",
        [bound("e", "n1", {"app": "db"}),
         incoming(spec=affinity(required=[term({"app": "db"}), term({"app": "db"}, key=HOST)]))],
        [OK, UU, UU, UU], REASON_AFFINITY,
    ),
    (
        "Required anti-affinity rejects the whole zone of a matching pod but not nodes without the key.",
        [bound("e", "n1", {"app": "db"}), incoming(spec=affinity(anti=[term({"app": "db"})]))],
        [U, U, OK, OK], REASON_ANTI_AFFINITY,
    ),
    (
        "Terminating pods still count for inter-pod anti-affinity.",
        [bound("e", "n3", {"app": "db"}, terminating=True), incoming(spec=affinity(anti=[term({"app": "db"})]))],
        [OK, OK, U, OK], REASON_ANTI_AFFINITY,
    ),
    (
        "A term without namespaces selects only pods in the incoming pod's own namespace.",
        [bound("e", "n1", {"app": "db"}, namespace="other"), incoming(spec=affinity(anti=[term({"app": "db"})]))],
        [OK, OK, OK, OK], None,
    ),
    (
        "A term's namespaces list selects pods in those namespaces only.",
        [bound("e1", "n1", {"app": "db"}, namespace="other"), bound("e2", "n3", {"app": "db"}),
         incoming(spec=affinity(anti=[term({"app": "db"}, namespaces=["other"])]))],
        [U, U, OK, OK], REASON_ANTI_AFFINITY,
    ),
    (
        "A namespaceSelector selects pods by their namespace's labels.",
        [namespace("team-a", {"team": "a"}), bound("e1", "n1", {"app": "db"}, namespace="team-a"),
         bound("e2", "n3", {"app": "db"}, namespace="other"),
         incoming(spec=affinity(anti=[term({"app": "db"}, ns_selector={"matchLabels": {"team": "a"}})]))],
        [U, U, OK, OK], REASON_ANTI_AFFINITY,
    ),
    (
        "An empty namespaceSelector selects pods in every namespace.",
        [bound("e1", "n1", {"app": "db"}, namespace="x"), bound("e2", "n3", {"app": "db"}, namespace="y"),
         incoming(spec=affinity(anti=[term({"app": "db"}, ns_selector={})]))],
        [U, U, U, OK], REASON_ANTI_AFFINITY,
    ),
    (
        "Namespaces and namespaceSelector are unioned.",
        [namespace("team-a", {"team": "a"}), bound("e1", "n1", {"app": "db"}, namespace="team-a"),
         bound("e2", "n3", {"app": "db"}, namespace="x"), bound("e3", "n4", {"app": "db"}),
         incoming(spec=affinity(anti=[term({"app": "db"}, key=HOST, namespaces=["x"],
                                           ns_selector={"matchLabels": {"team": "a"}})]))],
        [U, OK, U, OK], REASON_ANTI_AFFINITY,
    ),
    (
        "An existing pod's required anti-affinity rejects the incoming pod it selects (symmetry).",
        [bound("e", "n3", {"app": "db"}, spec=affinity(anti=[term({"app": "web"})])), incoming({"app": "web"})],
        [OK, OK, U, OK], REASON_EXISTING_ANTI_AFFINITY,
    ),
    (
        "An existing pod's anti-affinity that does not select the incoming pod leaves PreFilter skipping.",
        [bound("e", "n3", {"app": "db"}, spec=affinity(anti=[term({"app": "cache"})])), incoming({"app": "web"})],
        SKIP, None,
    ),
    (
        "Symmetry matches an existing pod's namespaceSelector against the incoming pod's namespace labels.",
        [namespace("team-a", {"team": "a"}),
         bound("e", "n1", {}, spec=affinity(anti=[term({"app": "web"}, key=HOST,
                                                        ns_selector={"matchLabels": {"team": "a"}})])),
         incoming({"app": "web"}, namespace="team-a")],
        [U, OK, OK, OK], REASON_EXISTING_ANTI_AFFINITY,
    ),
    (
        "Symmetry uses the existing pod's own namespace for a term without namespaces.",
        [bound("e", "n1", {}, namespace="other", spec=affinity(anti=[term({"app": "web"})])),
         incoming({"app": "web"})],
        SKIP, None,
    ),
    (
        "An affinity failure is reported before an anti-affinity failure on the same node.",
        [bound("e1", "n1", {"app": "db"}), bound("e2", "n3", {"app": "cache"}),
         incoming(spec=affinity(required=[term({"app": "db"})], anti=[term({"app": "cache"})]))],
        [OK, OK, UU, UU], REASON_AFFINITY,
    ),
    (
        "An anti-affinity failure is reported before an existing pod's anti-affinity failure.",
        [bound("e1", "n1", {"app": "db"}, spec=affinity(anti=[term({"app": "web"})])),
         incoming({"app": "web"}, affinity(anti=[term({"app": "db"})]))],
        [U, U, OK, OK], REASON_ANTI_AFFINITY,
    ),
    (
        "matchLabelKeys restricts anti-affinity to pods with the incoming pod's value of that label.",
        [bound("e1", "n1", {"app": "web", "version": "v1"}), bound("e2", "n3", {"app": "web", "version": "v2"}),
         incoming({"app": "web", "version": "v2"}, affinity(anti=[term({"app": "web"}, match_keys=["version"])]))],
        [OK, OK, U, OK], REASON_ANTI_AFFINITY,
    ),
    (
        "mismatchLabelKeys restricts affinity to pods with a different value of that label.",
        [bound("e1", "n1", {"app": "db", "tenant": "a"}), bound("e2", "n3", {"app": "db", "tenant": "b"}),
         incoming({"tenant": "a"}, affinity(required=[term({"app": "db"}, mismatch_keys=["tenant"])]))],
        [UU, UU, OK, UU], REASON_AFFINITY,
    ),
    (
        "matchLabelKeys on an existing pod's anti-affinity uses the existing pod's label value.",
        [bound("e", "n1", {"app": "web", "version": "v1"},
               spec=affinity(anti=[term({"app": "web"}, match_keys=["version"])])),
         incoming({"app": "web", "version": "v2"})],
        SKIP, None,
    ),
    (
        "A matchExpressions selector is honoured by required affinity.",
        [bound("e", "n3", {"app": "db"}),
         incoming(spec=affinity(required=[term(exprs=[{"key": "app", "operator": "In", "values": ["db", "x"]}])]))],
        [UU, UU, OK, UU], REASON_AFFINITY,
    ),
]


@pytest.mark.parametrize(("name", "objects", "want", "reason"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(name, objects, want, reason):
    result, _ = run_filter(objects)
    assert_filter(result, want, {U: [reason], UU: [reason]})


def test_symmetry_follows_assume_and_forget():
    """Placing a pod with required anti-affinity makes its zone reject selected pods; forgetting it undoes that."""
    anti_pod = pod("guard", labels={"app": "db"}, spec=affinity(anti=[term({"app": "web"})]))
    state = build_state(NODES, anti_pod, incoming({"app": "web"}))
    guard = state.index.pod_by_key["default/guard"]
    web = state.index.pod_by_key["default/incoming"]
    plugin = InterPodAffinity()
    assert plugin.pre_filter(state, web, CycleState()).code == Code.SKIP
    state.assume(guard, 2)
    cycle = CycleState()
    assert plugin.pre_filter(state, web, cycle).code == Code.SUCCESS
    assert [Code(c) for c in plugin.filter(state, web, cycle, np.arange(4)).code] == [OK, OK, U, OK]
    state.forget(guard)
    assert plugin.pre_filter(state, web, CycleState()).code == Code.SKIP


def test_many_pods_with_identical_terms_count_per_node():
    """Ten pods sharing anti-affinity terms (one dense group) reject exactly the zones they run in."""
    pods = [bound(f"e{i}", "n1" if i < 9 else "n3", {"app": "db"}, spec=affinity(anti=[term({"app": "web"})]))
            for i in range(10)]
    result, state = run_filter([*pods, incoming({"app": "web"})])
    assert len(state.live_affinity_groups(required_anti=True)) == 1
    assert [Code(c) for c in result.code] == [U, U, U, OK]


# --- scoring ------------------------------------------------------------------------------------------


def run_score(objects, nodes=(0, 1, 2, 3), args=None):
    state = build_state(NODES, *objects)
    p = state.index.pending[0]
    plugin, cycle = InterPodAffinity(args), CycleState()
    nodes = np.array(nodes)
    if not plugin.pre_score(state, p, cycle, nodes):
        return None, None
    raw = plugin.score(state, p, cycle, nodes)
    return raw.tolist(), plugin.normalize(raw, p, cycle).tolist()


SCORE_CASES = [
    (
        # T[zone]: z1 = 5 (one db), z2 = 10 (two db); T[hostname]: n2 = -3 (cache).
        # raw = [5, 2, 10, 0]: n4 has neither key. min 0, max 10 → [50, 20, 100, 0].
        "Incoming preferred terms add weight per matching pod in the pod's topology domain.",
        [bound("d1", "n1", {"app": "db"}), bound("d2", "n3", {"app": "db"}), bound("d3", "n3", {"app": "db"}),
         bound("c", "n2", {"app": "cache"}),
         incoming(spec=affinity(preferred=[(5, term({"app": "db"}))], preferred_anti=[(3, term({"app": "cache"},
                                                                                               key=HOST))]))],
        None, [5, 2, 10, 0], [50, 20, 100, 0],
    ),
    (
        # Same map, scored over n1..n3 only: raw [5, 2, 10], min 2, max 10: n1 = 100·3/8 = 37.5 → 37.
        "Normalisation uses the minimum and maximum over the scored nodes and truncates.",
        [bound("d1", "n1", {"app": "db"}), bound("d2", "n3", {"app": "db"}), bound("d3", "n3", {"app": "db"}),
         bound("c", "n2", {"app": "cache"}),
         incoming(spec=affinity(preferred=[(5, term({"app": "db"}))], preferred_anti=[(3, term({"app": "cache"},
                                                                                               key=HOST))]))],
        None, [5, 2, 10], [37, 0, 100],
    ),
    (
        "An existing pod's required affinity that selects the incoming pod scores hardPodAffinityWeight.",
        [bound("e", "n1", {}, spec=affinity(required=[term({"app": "web"})])), incoming({"app": "web"})],
        {"hardPodAffinityWeight": 4}, [4, 4, 0, 0], [100, 100, 0, 0],
    ),
    (
        "A hardPodAffinityWeight of 0 turns existing pods' required affinity off, and with it the score.",
        [bound("e", "n1", {}, spec=affinity(required=[term({"app": "web"})])), incoming({"app": "web"})],
        {"hardPodAffinityWeight": 0}, None, None,
    ),
    (
        # T[hostname][n2] = -7, T[zone][z2] = +2 → raw [0, -7, 2, 0]; min -7, max 2, diff 9:
        # n1 = 100·7/9 = 77.7 → 77, n4 likewise.
        "Existing pods' preferred affinity and anti-affinity terms that select the incoming pod score too.",
        [bound("e1", "n2", {}, spec=affinity(preferred_anti=[(7, term({"app": "web"}, key=HOST))])),
         bound("e2", "n3", {}, spec=affinity(preferred=[(2, term({"app": "web"}))])),
         incoming({"app": "web"})],
        None, [0, -7, 2, 0], [77, 0, 100, 77],
    ),
    (
        "ignorePreferredTermsOfExistingPods skips scoring a pod that has no preferred terms of its own.",
        [bound("e2", "n3", {}, spec=affinity(preferred=[(2, term({"app": "web"}))])), incoming({"app": "web"})],
        {"ignorePreferredTermsOfExistingPods": True}, None, None,
    ),
    (
        "ignorePreferredTermsOfExistingPods still scores existing pods' terms when the pod has preferred terms.",
        [bound("e2", "n3", {"app": "x"}, spec=affinity(preferred=[(2, term({"app": "web"}))])),
         incoming({"app": "web"}, affinity(preferred=[(1, term({"app": "none"}))]))],
        {"ignorePreferredTermsOfExistingPods": True}, [0, 0, 2, 0], [0, 0, 100, 0],
    ),
    (
        "Existing pods' required anti-affinity is not scored.",
        [bound("e", "n1", {}, spec=affinity(anti=[term({"app": "web"})])), incoming({"app": "web"})],
        None, None, None,
    ),
    (
        "Equal raw scores everywhere normalise to 0.",
        [bound("d1", "n1", {"app": "db"}), bound("d2", "n2", {"app": "db"}),
         incoming(spec=affinity(preferred=[(5, term({"app": "db"}))]))],
        None, [10, 10], [0, 0],
    ),
    (
        "Terms whose weights cancel out still make the plugin score (all zero).",
        [bound("d1", "n1", {"app": "db"}),
         incoming(spec=affinity(preferred=[(5, term({"app": "db"}))], preferred_anti=[(5, term({"app": "db"}))]))],
        None, [0, 0, 0, 0], [0, 0, 0, 0],
    ),
]


@pytest.mark.parametrize(("name", "objects", "args", "raw", "norm"), SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_score(name, objects, args, raw, norm):
    nodes = (0, 1, 2, 3) if raw is None or len(raw) == 4 else tuple(range(len(raw)))
    got_raw, got_norm = run_score(objects, nodes, args)
    assert got_raw == raw
    assert got_norm == norm


NORMALIZE_CASES = [
    ("Negative and positive raw scores map onto 0..100.", [-5, 0, 5], [0, 50, 100]),
    ("Fractions are truncated, not rounded.", [1, 2, 4], [0, 33, 100]),
    ("A single node scores 0.", [7], [0]),
]


@pytest.mark.parametrize(("name", "raw", "want"), NORMALIZE_CASES, ids=[c[0] for c in NORMALIZE_CASES])
def test_normalize(name, raw, want):
    assert normalize_min_max(np.array(raw)).tolist() == want


ARG_CASES = [
    ("Defaults are weight 1 and existing pods' preferred terms honoured.", None, (1, False)),
    ("A weight of 100 is allowed.", {"hardPodAffinityWeight": 100}, (100, False)),
    ("A weight of 0 is allowed.", {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True}, (0, True)),
    ("A weight above 100 is rejected.", {"hardPodAffinityWeight": 101}, ConfigError),
    ("A negative weight is rejected.", {"hardPodAffinityWeight": -1}, ConfigError),
    ("A weight given as a string is rejected.", {"hardPodAffinityWeight": "1"}, ConfigError),
    ("A non-boolean ignore flag is rejected.", {"ignorePreferredTermsOfExistingPods": "yes"}, ConfigError),
    ("An unknown field is rejected.", {"hardPodAffinityWeigth": 1}, ConfigError),
]


@pytest.mark.parametrize(("name", "args", "want"), ARG_CASES, ids=[c[0] for c in ARG_CASES])
def test_args(name, args, want):
    if want is ConfigError:
        with pytest.raises(ConfigError):
            InterPodAffinity(args)
    else:
        plugin = InterPodAffinity(args)
        assert (plugin.hard_pod_affinity_weight, plugin.ignore_preferred_terms_of_existing_pods) == want


def test_registered():
    from kplace.solver.plugins import registry

    assert registry()["InterPodAffinity"] is InterPodAffinity
