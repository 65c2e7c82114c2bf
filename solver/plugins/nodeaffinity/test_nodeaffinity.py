import numpy as np
import pytest
from kplace.models.errors import ConfigError
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.nodeaffinity import REASON_CONFLICT, REASON_ENFORCED, REASON_POD, NodeAffinity
from kplace.solver.plugins.nodeaffinity.helpers import parse_go_int64
from kplace.solver.testing import build_state, node, pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
OK = Code.SUCCESS


def expr(key, op, *values):
    return {"key": key, "operator": op, "values": list(values)}


def field(op, *values, key="metadata.name"):
    return {"key": key, "operator": op, "values": list(values)}


def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def preferred(*weighted):
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": t} for w, t in weighted]}}


def run_filter(labels, spec, args=None, name="n1"):
    state = build_state(node(name, labels=labels), pod("p", spec=spec))
    pl, p, cycle = NodeAffinity(args), state.index.pending[0], CycleState()
    pl.pre_filter(state, p, cycle)
    return pl.filter(state, p, cycle, np.array([0]))


FILTER = [
    ("A pod without nodeSelector or required affinity fits any node.", {}, {}, OK),
    ("A nodeSelector key the node lacks rejects the node as unresolvable.",
     {}, {"nodeSelector": {"foo": "bar"}}, UU),
    ("A nodeSelector whose keys and values all match accepts the node.",
     {"foo": "bar", "baz": "qux"}, {"nodeSelector": {"foo": "bar"}}, OK),
    ("A nodeSelector with one differing value rejects the node.",
     {"foo": "bar", "baz": "qux"}, {"nodeSelector": {"foo": "bar", "baz": "other"}}, UU),
    ("In matches a present label whose value is in the set.",
     {"zone": "a"}, {"affinity": required({"matchExpressions": [expr("zone", "In", "a", "b")]})}, OK),
    ("In does not match a value outside the set.",
     {"zone": "c"}, {"affinity": required({"matchExpressions": [expr("zone", "In", "a", "b")]})}, UU),
    ("In does not match an absent label.",
     {}, {"affinity": required({"matchExpressions": [expr("zone", "In", "a")]})}, UU),
    ("NotIn matches an absent label.",
     {}, {"affinity": required({"matchExpressions": [expr("zone", "NotIn", "a")]})}, OK),
    ("NotIn does not match a value in the set.",
     {"zone": "a"}, {"affinity": required({"matchExpressions": [expr("zone", "NotIn", "a")]})}, UU),
    ("Exists matches a present label with any value.",
     {"gpu": ""}, {"affinity": required({"matchExpressions": [expr("gpu", "Exists")]})}, OK),
    ("DoesNotExist does not match a present label.",
     {"gpu": "x"}, {"affinity": required({"matchExpressions": [expr("gpu", "DoesNotExist")]})}, UU),
    ("DoesNotExist matches an absent label.",
     {}, {"affinity": required({"matchExpressions": [expr("gpu", "DoesNotExist")]})}, OK),
    ("Gt matches a strictly greater integer label.",
     {"cores": "8"}, {"affinity": required({"matchExpressions": [expr("cores", "Gt", "4")]})}, OK),
    ("Gt is strict: an equal value does not match.",
     {"cores": "4"}, {"affinity": required({"matchExpressions": [expr("cores", "Gt", "4")]})}, UU),
    ("Lt matches a strictly smaller integer label, including negative numbers.",
     {"temp": "-3"}, {"affinity": required({"matchExpressions": [expr("temp", "Lt", "0")]})}, OK),
    ("Gt does not match a label that is not an integer.",
     {"cores": "many"}, {"affinity": required({"matchExpressions": [expr("cores", "Gt", "4")]})}, UU),
    ("Gt does not match a label beyond int64.",
     {"cores": "99999999999999999999"}, {"affinity": required({"matchExpressions": [expr("cores", "Gt", "4")]})}, UU),
    ("Gt with two values fails to parse, so its term matches nothing.",
     {"cores": "8"}, {"affinity": required({"matchExpressions": [expr("cores", "Gt", "4", "5")]})}, UU),
    ("Gt with a non-integer value fails to parse, so its term matches nothing.",
     {"cores": "8"}, {"affinity": required({"matchExpressions": [expr("cores", "Gt", "four")]})}, UU),
    ("An unparsable term does not stop another term from matching.",
     {"cores": "8"}, {"affinity": required({"matchExpressions": [expr("cores", "Gt", "x")]},
                                           {"matchExpressions": [expr("cores", "Exists")]})}, OK),
    ("Expressions within a term are ANDed.",
     {"zone": "a", "disk": "hdd"},
     {"affinity": required({"matchExpressions": [expr("zone", "In", "a"), expr("disk", "In", "ssd")]})}, UU),
    ("Terms are ORed: the second term can match when the first does not.",
     {"zone": "b"}, {"affinity": required({"matchExpressions": [expr("zone", "In", "a")]},
                                          {"matchExpressions": [expr("zone", "In", "b")]})}, OK),
    ("An empty term matches nothing.", {"zone": "a"}, {"affinity": required({})}, UU),
    ("An empty term does not stop another term from matching.",
     {"zone": "a"}, {"affinity": required({}, {"matchExpressions": [expr("zone", "Exists")]})}, OK),
    ("Required affinity without terms matches no node.", {"zone": "a"}, {"affinity": required()}, UU),
    ("matchFields metadata.name In matches the named node.", {}, {"affinity": required({"matchFields": [
        field("In", "n1")]})}, OK),
    ("matchFields metadata.name NotIn rejects the named node.", {}, {"affinity": required({"matchFields": [
        field("NotIn", "n1")]})}, UU),
    ("matchFields with two values fails to parse, so its term matches nothing.",
     {}, {"affinity": required({"matchFields": [field("In", "n1", "n2")]})}, UU),
    ("matchFields on a key other than metadata.name matches nothing.",
     {}, {"affinity": required({"matchFields": [field("In", "n1", key="metadata.uid")]})}, UU),
    ("matchExpressions and matchFields in one term are ANDed.",
     {"zone": "a"}, {"affinity": required({"matchExpressions": [expr("zone", "In", "b")],
                                           "matchFields": [field("In", "n1")]})}, UU),
    ("A matching nodeSelector does not rescue failing required affinity.",
     {"foo": "bar"}, {"nodeSelector": {"foo": "bar"},
                      "affinity": required({"matchExpressions": [expr("zone", "Exists")]})}, UU),
    ("Required affinity does not rescue a failing nodeSelector.",
     {"zone": "a"}, {"nodeSelector": {"foo": "bar"},
                     "affinity": required({"matchExpressions": [expr("zone", "Exists")]})}, UU),
]


@pytest.mark.parametrize(("name", "labels", "spec", "want"), FILTER, ids=[c[0] for c in FILTER])
def test_node_affinity_filter(name, labels, spec, want):
    result = run_filter(labels, spec)
    assert Code(result.code[0]) == want
    assert result.reasons_of(0) == ([] if want == OK else [REASON_POD])


def _pre_filter(spec, args=None, names=("n1", "n2", "n3")):
    state = build_state([node(n) for n in names], pod("p", spec=spec))
    return state, NodeAffinity(args).pre_filter(state, state.index.pending[0], CycleState())


PRE_FILTER = [
    ("PreFilter skips a pod without nodeSelector or required affinity.", {}, None, "skip", None),
    ("PreFilter skips a pod with only preferred affinity.",
     {"affinity": preferred((1, {"matchExpressions": [expr("a", "Exists")]}))}, None, "skip", None),
    ("PreFilter runs for a pod with only a nodeSelector, without restricting nodes.",
     {"nodeSelector": {"a": "b"}}, None, "ok", None),
    ("PreFilter runs for every pod when the args add required affinity.",
     {}, {"addedAffinity": required({"matchExpressions": [expr("a", "Exists")]})["nodeAffinity"]}, "ok", None),
    ("A single metadata.name In term restricts the nodes to that name.",
     {"affinity": required({"matchFields": [field("In", "n2")]})}, None, "ok", ["n2"]),
    ("Name terms are unioned across terms.",
     {"affinity": required({"matchFields": [field("In", "n1")]}, {"matchFields": [field("In", "n3")]})},
     None, "ok", ["n1", "n3"]),
    ("Name requirements are intersected within a term.",
     {"affinity": required({"matchFields": [field("In", "n1", "n2"), field("In", "n2", "n3")]})},
     None, "ok", ["n2"]),
    ("A term without a name field lifts the restriction.",
     {"affinity": required({"matchFields": [field("In", "n1")]}, {"matchExpressions": [expr("a", "Exists")]})},
     None, "ok", None),
    ("Names missing from the cluster are dropped from the subset.",
     {"affinity": required({"matchFields": [field("In", "n1")]}, {"matchFields": [field("In", "ghost")]})},
     None, "ok", ["n1"]),
    ("Conflicting name requirements in every term make the whole pod unresolvable.",
     {"affinity": required({"matchFields": [field("In", "n1"), field("In", "n2")]})}, None, "conflict", None),
]


@pytest.mark.parametrize(("name", "spec", "args", "want", "subset"), PRE_FILTER, ids=[c[0] for c in PRE_FILTER])
def test_node_affinity_pre_filter(name, spec, args, want, subset):
    state, res = _pre_filter(spec, args)
    if want == "skip":
        assert res.code == Code.SKIP
        return
    if want == "conflict":
        assert (res.code, res.reason) == (UU, REASON_CONFLICT)
        return
    assert res.code == Code.SUCCESS
    if subset is None:
        assert res.node_subset is None
    else:
        assert [state.index.node_names[i] for i in res.node_subset] == subset


def test_filter_evaluates_label_columns_for_many_nodes_at_once():
    nodes = [node(f"n{i}", labels={"zone": z}) for i, z in enumerate(["a", "b", "c", "a"])] + [node("n4")]
    spec = {"affinity": required({"matchExpressions": [expr("zone", "NotIn", "a", "c")]})}
    state = build_state(nodes, pod("p", spec=spec))
    pl, p, cycle = NodeAffinity(), state.index.pending[0], CycleState()
    result = pl.filter(state, p, cycle, np.array([4, 3, 2, 1, 0]))
    assert [Code(c) for c in result.code] == [OK, UU, UU, OK, UU]


ADDED = {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [expr("pool", "In", "batch")]}]}}}
ENFORCED = [
    ("Added required affinity rejects a node the pod would accept, with the enforced reason.",
     {"pool": "web"}, {}, [REASON_ENFORCED]),
    ("Added required affinity is checked before the pod's own and reported alone.",
     {"pool": "web"}, {"nodeSelector": {"x": "y"}}, [REASON_ENFORCED]),
    ("A node passing the added affinity is still checked against the pod's own selector.",
     {"pool": "batch"}, {"nodeSelector": {"x": "y"}}, [REASON_POD]),
    ("A node passing both fits.", {"pool": "batch", "x": "y"}, {"nodeSelector": {"x": "y"}}, []),
]


@pytest.mark.parametrize(("name", "labels", "spec", "reasons"), ENFORCED, ids=[c[0] for c in ENFORCED])
def test_added_required_affinity(name, labels, spec, reasons):
    result = run_filter(labels, spec, ADDED)
    assert Code(result.code[0]) == (UU if reasons else OK)
    assert result.reasons_of(0) == reasons


SCORE = [
    ("Matching preferred weights are summed and normalised by the maximum.",
     preferred((2, {"matchExpressions": [expr("zone", "In", "a")]}),
               (5, {"matchExpressions": [expr("disk", "In", "ssd")]})),
     None, [2, 5, 7, 0], [28, 71, 100, 0]),
    ("Terms with weight zero are ignored.",
     preferred((0, {"matchExpressions": [expr("zone", "In", "a")]}),
               (3, {"matchExpressions": [expr("disk", "Exists")]})),
     None, [0, 3, 3, 0], [0, 100, 100, 0]),
    ("An empty preference matches nothing.", preferred((4, {}), (1, {"matchExpressions": [expr("zone", "Exists")]})),
     None, [1, 0, 1, 0], [100, 0, 100, 0]),
    ("When no node matches every score stays zero.",
     preferred((4, {"matchExpressions": [expr("zone", "In", "z")]})), None, [0, 0, 0, 0], [0, 0, 0, 0]),
    ("Preferred terms can use matchFields on the node name.",
     preferred((10, {"matchFields": [field("In", "n3")]})), None, [0, 0, 0, 10], [0, 0, 0, 100]),
    ("Added preferred terms from the args add to the pod's own.",
     preferred((1, {"matchExpressions": [expr("zone", "In", "a")]})),
     {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 3, "preference": {"matchExpressions": [expr("disk", "In", "ssd")]}}]}},
     [1, 3, 4, 0], [25, 75, 100, 0]),
]
SCORE_NODES = [{"zone": "a"}, {"disk": "ssd"}, {"zone": "a", "disk": "ssd"}, {}]


@pytest.mark.parametrize(("name", "affinity", "args", "raw", "want"), SCORE, ids=[c[0] for c in SCORE])
def test_node_affinity_score(name, affinity, args, raw, want):
    state = build_state([node(f"n{i}", labels=lb) for i, lb in enumerate(SCORE_NODES)],
                        pod("p", spec={"affinity": affinity}))
    pl, p, cycle, ids = NodeAffinity(args), state.index.pending[0], CycleState(), np.arange(4)
    assert pl.pre_score(state, p, cycle, ids)
    scores = pl.score(state, p, cycle, ids)
    assert scores.tolist() == raw
    assert pl.normalize(scores, p, cycle).tolist() == want


def test_pre_score_skips_a_pod_without_preferred_terms():
    state = build_state(node("n1"), pod("p", spec={"nodeSelector": {"a": "b"}}))
    assert not NodeAffinity().pre_score(state, state.index.pending[0], CycleState(), np.array([0]))


BAD_ARGS = [
    ("An unknown argument is rejected.", {"addedAffinty": {}}, "unknown field"),
    ("A malformed addedAffinity is rejected.", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": 3}},
     "addedAffinity"),
    ("An added required term with an unparsable Gt value is rejected.",
     {"addedAffinity": required({"matchExpressions": [expr("a", "Gt", "x")]})["nodeAffinity"]}, "integer"),
    ("An added preferred term with a bad field key is rejected.",
     {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 1, "preference": {"matchFields": [field("In", "a", key="spec.x")]}}]}}, "field selector key"),
]


@pytest.mark.parametrize(("name", "args", "match"), BAD_ARGS, ids=[c[0] for c in BAD_ARGS])
def test_invalid_args(name, args, match):
    with pytest.raises(ConfigError, match=match):
        NodeAffinity(args)


INTS = [("1", 1), ("+7", 7), ("-3", -3), ("007", 7), ("", None), (" 1", None), ("1_0", None), ("9" * 20, None),
        ("٣", None)]


@pytest.mark.parametrize(("text", "want"), INTS, ids=[f"ParseInt of {t!r} gives {w}." for t, w in INTS])
def test_go_int64_parsing(text, want):
    assert parse_go_int64(text) == want
