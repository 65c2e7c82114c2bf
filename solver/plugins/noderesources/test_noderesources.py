import numpy as np
import pytest
from kplace.models.errors import ConfigError
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from kplace.solver.testing import build_state, node, pod

U, UU, OK = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.SUCCESS
GPU = "example.com/gpu"


def container(cpu=None, memory=None, restart=None, **extra):
    req = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None} | extra
    c = {"name": "c", "image": "x", "resources": {"requests": req}}
    return c | ({"restartPolicy": restart} if restart else {})


def bound(name, cpu=None, memory=None, **extra):
    return pod(name, cpu=cpu, memory=memory, node_name="n1", extra=extra or None)


# --- Filter ---------------------------------------------------------------------------------------

FILTER = [
    ("A pod without requests fits a node whose cpu is exhausted.",
     {}, [bound("b", cpu="4")], pod("p"), OK, []),
    ("A pod without requests still needs a free pod slot.",
     {"pods": 1}, [bound("b")], pod("p"), U, ["Too many pods"]),
    ("A cpu request beyond the free cpu is insufficient but resolvable.",
     {}, [bound("b", cpu="3500m")], pod("p", cpu="600m"), U, ["Insufficient cpu"]),
    ("A request that exactly fills the node fits.", {}, [bound("b", cpu="3500m")], pod("p", cpu="500m"), OK, []),
    ("Every failing resource is reported.",
     {"memory": "1Gi"}, [bound("b", cpu="3", memory="1Gi")], pod("p", cpu="2", memory="1Mi"), U,
     ["Insufficient cpu", "Insufficient memory"]),
    ("A request larger than the node's allocatable is unresolvable.",
     {}, [], pod("p", cpu="5"), UU, ["Insufficient cpu"]),
    ("One unresolvable resource makes the node unresolvable even if another is merely short.",
     {"memory": "1Gi"}, [bound("b", memory="1Gi")], pod("p", cpu="5", memory="1Mi"), UU,
     ["Insufficient cpu", "Insufficient memory"]),
    ("Too many pods is reported before resources and is resolvable.",
     {"pods": 1}, [bound("b", cpu="4")], pod("p", cpu="1"), U, ["Too many pods", "Insufficient cpu"]),
    ("A memory-only request ignores exhausted cpu.", {}, [bound("b", cpu="4")], pod("p", memory="1Gi"), OK, []),
    ("Ephemeral storage beyond the free amount is insufficient.",
     {"extra": {"ephemeral-storage": "10Gi"}}, [bound("b", **{"ephemeral-storage": "5Gi"})],
     pod("p", extra={"ephemeral-storage": "6Gi"}), U, ["Insufficient ephemeral-storage"]),
    ("An extended resource beyond the free amount is insufficient.",
     {"extra": {GPU: "2"}}, [bound("b", **{GPU: "2"})], pod("p", extra={GPU: "1"}), U, [f"Insufficient {GPU}"]),
    ("An extended resource the node does not have is unresolvable.",
     {}, [], pod("p", extra={GPU: "1"}), UU, [f"Insufficient {GPU}"]),
    ("Hugepages are checked like any scalar resource.",
     {"extra": {"hugepages-2Mi": "4Mi"}}, [], pod("p", extra={"hugepages-2Mi": "6Mi"}), UU,
     ["Insufficient hugepages-2Mi"]),
    ("The largest init container sets the request when it exceeds the containers' sum.",
     {}, [bound("b", cpu="1500m")],
     pod("p", spec={"initContainers": [container(cpu="3")], "containers": [container(cpu="1")]}), U,
     ["Insufficient cpu"]),
    ("Sidecar init containers add to the regular containers.",
     {}, [bound("b", cpu="1500m")],
     pod("p", spec={"initContainers": [container(cpu="1", restart="Always")], "containers": [container(cpu="2")]}),
     U, ["Insufficient cpu"]),
    ("Pod overhead adds to the request.",
     {}, [bound("b", cpu="3500m")], pod("p", cpu="400m", spec={"overhead": {"cpu": "200m"}}), U, ["Insufficient cpu"]),
]


@pytest.mark.parametrize(("name", "node_kw", "pods", "incoming", "want", "reasons"), FILTER, ids=[c[0] for c in FILTER])
def test_fit_filter(name, node_kw, pods, incoming, want, reasons):
    state = build_state(node("n1", **node_kw), *pods, incoming)
    p = next(pi for pi in state.index.pods if pi.pending)
    result = NodeResourcesFit().filter(state, p, CycleState(), np.array([0]))
    assert Code(result.code[0]) == want
    assert result.reasons_of(0) == reasons


IGNORED = [
    ("An ignored extended resource is not checked.", {"ignoredResources": [GPU]}, OK),
    ("An extended resource in an ignored group is not checked.", {"ignoredResourceGroups": ["example.com"]}, OK),
    ("Ignoring another group still checks the resource.", {"ignoredResourceGroups": ["other.io"]}, UU),
]


@pytest.mark.parametrize(("name", "args", "want"), IGNORED, ids=[c[0] for c in IGNORED])
def test_fit_filter_ignored_resources(name, args, want):
    state = build_state(node("n1"), pod("p", cpu="1", extra={GPU: "1"}))
    result = NodeResourcesFit(args).filter(state, state.index.pending[0], CycleState(), np.array([0]))
    assert Code(result.code[0]) == want


def test_ignored_resources_apply_only_to_extended_resources():
    state = build_state(node("n1"), pod("p", extra={"hugepages-2Mi": "2Mi"}))
    pl = NodeResourcesFit({"ignoredResources": ["hugepages-2Mi"]})
    assert Code(pl.filter(state, state.index.pending[0], CycleState(), np.array([0])).code[0]) == UU


def test_fit_filter_follows_assume():
    state = build_state([node("n1", cpu="1"), node("n2", cpu="1")], pod("a", cpu="600m"), pod("b", cpu="600m"))
    a, b = state.index.pending
    state.assume(a, 0)
    result = NodeResourcesFit().filter(state, b, CycleState(), np.array([0, 1]))
    assert [Code(c) for c in result.code] == [U, OK]


# --- Fit score ------------------------------------------------------------------------------------

NODES = [node("n1", cpu="4", memory="10000"), node("n2", cpu="6", memory="10000")]
REQ = {"cpu": "3", "memory": "5000"}


def weighted(*pairs, strategy="LeastAllocated"):
    return {"scoringStrategy": {"type": strategy, "resources": [{"name": n, "weight": w} for n, w in pairs]}}


RTCR_UP = {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}
RTCR_DOWN = {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
    "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}}

SCORE = [
    ("LeastAllocated averages the free share of cpu and memory with integer division.",
     NODES, [], REQ, None, [37, 50]),
    ("MostAllocated averages the used share of cpu and memory.",
     NODES, [], REQ, {"scoringStrategy": {"type": "MostAllocated"}}, [62, 50]),
    ("Resource weights weight the average.",
     NODES, [], REQ, {"scoringStrategy": {"type": "LeastAllocated", "resources": [
         {"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}}, [31, 50]),
    ("A pod without requests is scored with 100m cpu and 200Mi memory.",
     [node("n1", cpu="1", memory="1000Mi")], [], {}, None, [85]),
    ("An explicit zero request is not replaced by the default.",
     [node("n1", cpu="1", memory="1000Mi")], [], {"cpu": "0", "memory": "0"}, None, [100]),
    ("Bound pods without requests count with the non-zero defaults.",
     [node("n1", cpu="1", memory="1000Mi")], [bound("b")], {"cpu": "100m", "memory": "200Mi"}, None, [70]),
    ("A resource requested beyond allocatable scores 0 under LeastAllocated.",
     [node("n1", cpu="1", memory="10000")], [bound("b", cpu="900m", memory="0")], {"cpu": "200m", "memory": "5000"},
     None, [25]),
    ("MostAllocated caps an over-requested resource at 100.",
     [node("n1", cpu="1", memory="10000")], [bound("b", cpu="900m", memory="0")], {"cpu": "200m", "memory": "5000"},
     {"scoringStrategy": {"type": "MostAllocated"}}, [75]),
    ("A scalar resource the pod does not request is left out.",
     [node("n1", cpu="4", memory="10000", extra={GPU: "4"})], [], REQ,
     weighted(("cpu", 1), ("memory", 1), (GPU, 2)), [37]),
    ("A requested scalar resource is scored with its weight.",
     [node("n1", cpu="4", memory="10000", extra={GPU: "4"})], [], REQ | {GPU: "1"},
     weighted(("cpu", 1), ("memory", 1), (GPU, 2)), [56]),
    ("A resource the node does not have is left out.",
     [node("n1", cpu="4", memory="10000")], [], REQ | {GPU: "1"},
     weighted(("cpu", 1), (GPU, 5)), [25]),
    ("Ephemeral storage counts even when the pod requests none.",
     [node("n1", cpu="4", memory="10000", extra={"ephemeral-storage": "100Gi"})], [], REQ,
     weighted(("cpu", 1), ("ephemeral-storage", 1)), [62]),
    ("RequestedToCapacityRatio scales shape scores by 10 and rounds half up.",
     NODES, [], REQ, {"scoringStrategy": RTCR_UP}, [63, 50]),
    ("RequestedToCapacityRatio with a falling shape favours free nodes.",
     NODES, [], REQ, {"scoringStrategy": RTCR_DOWN}, [38, 50]),
    ("RequestedToCapacityRatio leaves zero-scored resources out of the weight sum.",
     NODES, [], {"cpu": "0", "memory": "5000"}, {"scoringStrategy": RTCR_UP}, [50, 50]),
    ("RequestedToCapacityRatio treats over-requested resources as 100% utilised.",
     [node("n1", cpu="1", memory="10000")], [bound("b", cpu="900m", memory="0")], {"cpu": "200m", "memory": "0"},
     {"scoringStrategy": RTCR_UP}, [100]),
    ("RequestedToCapacityRatio scores 0 when every resource scores 0.",
     NODES, [], {"cpu": "0", "memory": "0"}, {"scoringStrategy": RTCR_UP}, [0, 0]),
]


@pytest.mark.parametrize(("name", "nodes", "pods", "req", "args", "want"), SCORE, ids=[c[0] for c in SCORE])
def test_fit_score(name, nodes, pods, req, args, want):
    incoming = pod("p", spec={"containers": [container(**req)]})
    state = build_state(nodes, *pods, incoming)
    p = next(pi for pi in state.index.pods if pi.pending)
    pl, cycle, ids = NodeResourcesFit(args), CycleState(), np.arange(len(nodes))
    assert pl.pre_score(state, p, cycle, ids)
    scores = pl.score(state, p, cycle, ids)
    assert scores.tolist() == want
    assert pl.normalize(scores, p, cycle).tolist() == want


# --- BalancedAllocation ---------------------------------------------------------------------------

# kube 1.36: 50 + ⌊(50 + B_with − B_without)/2⌋ with B = trunc((1 − std)·100); an empty node has B_without = 100.
BALANCED = [
    ("Two resources use half their absolute difference as the deviation, against the empty node's balance.",
     NODES, [], REQ, None, [68, 75]),
    ("A fraction above 1 is capped at 1.", [node("n1", cpu="4", memory="10000")], [], {"cpu": "5", "memory": "5000"},
     None, [62]),
    ("Actual requests are used: a missing memory request counts as zero.",
     [node("n1", cpu="4", memory="10000")], [], {"cpu": "1"}, None, [68]),
    ("A pod that evens out a lopsided node scores above 75.",
     [node("n1", cpu="4", memory="10000")], [bound("b", cpu="1")], {"cpu": "1", "memory": "5000"}, None, [81]),
    ("A pod that leaves the balance as it was scores 75.",
     [node("n1", cpu="4", memory="10000")], [bound("b", cpu="1", memory="2500")], {"cpu": "1", "memory": "2500"},
     None, [75]),
    ("Three resources use the population standard deviation.",
     [node("n1", cpu="4", memory="10000", extra={"ephemeral-storage": "100"})], [],
     REQ | {"ephemeral-storage": "25"}, {"resources": [{"name": "cpu"}, {"name": "memory"},
                                                        {"name": "ephemeral-storage"}]}, [64]),
    ("A scalar resource the pod does not request is left out.",
     [node("n1", cpu="4", memory="10000", extra={GPU: "4"})], [], REQ,
     {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 1}]}, [68]),
    ("A single counted resource has no deviation.",
     [node("n1", cpu="4", memory="10000")], [], REQ | {GPU: "1"},
     {"resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 1}]}, [75]),
]


@pytest.mark.parametrize(("name", "nodes", "pods", "req", "args", "want"), BALANCED, ids=[c[0] for c in BALANCED])
def test_balanced_allocation(name, nodes, pods, req, args, want):
    state = build_state(nodes, *pods, pod("p", spec={"containers": [container(**req)]}))
    p = next(pi for pi in state.index.pods if pi.pending)
    pl, cycle, ids = NodeResourcesBalancedAllocation(args), CycleState(), np.arange(len(nodes))
    assert pl.pre_score(state, p, cycle, ids)
    assert pl.score(state, p, cycle, ids).tolist() == want


def test_balanced_allocation_skips_best_effort_pods():
    state = build_state(node("n1"), pod("p"))
    assert not NodeResourcesBalancedAllocation().pre_score(state, state.index.pending[0], CycleState(), np.array([0]))


def test_sanity_empty_default_node_and_default_pod():
    state = build_state(node("n1", cpu="4", memory="32Gi", pods=110), pod("p", cpu="100m", memory="500Mi"))
    p, cycle, ids = state.index.pending[0], CycleState(), np.array([0])
    assert NodeResourcesFit().score(state, p, cycle, ids).tolist() == [97]
    assert NodeResourcesBalancedAllocation().score(state, p, cycle, ids).tolist() == [74]


# --- args -----------------------------------------------------------------------------------------


def test_default_args_are_least_allocated_on_cpu_and_memory():
    cfg = NodeResourcesFit().config
    assert (cfg.strategy, cfg.resources) == ("LeastAllocated", (("cpu", 1), ("memory", 1)))


def test_a_zero_weight_defaults_to_one():
    cfg = NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}).config
    assert cfg.resources == (("cpu", 1),)


BAD_FIT = [
    ("An unknown field is rejected.", {"scoringStrategyy": {}}, "unknown field"),
    ("An unknown strategy is rejected.", {"scoringStrategy": {"type": "Packed"}}, "unsupported value 'Packed'"),
    ("A strategy without a type is rejected.", {"scoringStrategy": {"resources": []}}, "unsupported value None"),
    ("A weight above 100 is rejected.", {"scoringStrategy": {"type": "LeastAllocated", "resources": [
        {"name": "cpu", "weight": 101}]}}, r"not in valid range \(0, 100\]"),
    ("RequestedToCapacityRatio without a shape is rejected.", {"scoringStrategy": {
        "type": "RequestedToCapacityRatio"}}, "requestedToCapacityRatio: required"),
    ("An empty shape is rejected.", {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                                         "requestedToCapacityRatio": {"shape": []}}}, "at least one"),
    ("Shape utilisations must increase.", {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                                               "requestedToCapacityRatio": {"shape": [
                                                                   {"utilization": 50, "score": 1},
                                                                   {"utilization": 50, "score": 2}]}}}, "increasing"),
    ("A shape score above 10 is rejected.", {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                                                 "requestedToCapacityRatio": {"shape": [
                                                                     {"utilization": 0, "score": 11}]}}},
     r"score: not in valid range \[0, 10\]"),
    ("A shape utilisation above 100 is rejected.", {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                                                        "requestedToCapacityRatio": {"shape": [
                                                                            {"utilization": 101, "score": 1}]}}},
     r"utilization: not in valid range \[0, 100\]"),
    ("A resource group containing a slash is rejected.", {"ignoredResourceGroups": ["example.com/gpu"]},
     "can't contain '/'"),
    ("An invalid ignored resource name is rejected.", {"ignoredResources": ["bad name"]}, "not a valid resource name"),
]


@pytest.mark.parametrize(("name", "args", "match"), BAD_FIT, ids=[c[0] for c in BAD_FIT])
def test_invalid_fit_args(name, args, match):
    with pytest.raises(ConfigError, match=match):
        NodeResourcesFit(args)


BAD_BALANCED = [
    ("A weight other than 1 is rejected.", {"resources": [{"name": "cpu", "weight": 2}]}, "must be 1"),
    ("A duplicate resource is rejected.", {"resources": [{"name": "cpu"}, {"name": "cpu"}]}, "duplicate"),
    ("An unknown field is rejected.", {"resource": []}, "unknown field"),
]


@pytest.mark.parametrize(("name", "args", "match"), BAD_BALANCED, ids=[c[0] for c in BAD_BALANCED])
def test_invalid_balanced_args(name, args, match):
    with pytest.raises(ConfigError, match=match):
        NodeResourcesBalancedAllocation(args)
