import json

import numpy as np
import pytest
from kplace.solver.framework import CycleState
from kplace.solver.plugins.nodepreferavoidpods import ANNOTATION, NodePreferAvoidPods
from kplace.solver.testing import build_state, node, pod


def avoiding(name, kind, uid):
    n = node(name)
    n["metadata"]["annotations"] = {ANNOTATION: json.dumps(
        {"preferAvoidPods": [{"podSignature": {"podController": {"kind": kind, "name": "x", "uid": uid}}}]})}
    return n


def owned(kind, uid):
    p = pod("p")
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": "x", "uid": uid,
                                         "controller": True}]
    return p


CASES = [
    ("A ReplicaSet's pod scores 0 on a node avoiding that ReplicaSet.", owned("ReplicaSet", "u1"), [0, 100]),
    ("A pod of another ReplicaSet scores 100 everywhere.", owned("ReplicaSet", "u2"), [100, 100]),
    ("A StatefulSet's pod is never avoided.", owned("StatefulSet", "u1"), [100, 100]),
    ("A pod without a controller scores 100 everywhere.", pod("p"), [100, 100]),
]


@pytest.mark.parametrize(("name", "p", "want"), CASES, ids=[c[0] for c in CASES])
def test_node_prefer_avoid_pods(name, p, want):
    n1 = avoiding("n1", "ReplicaSet", "u1")
    if "StatefulSet" in name:
        n1 = avoiding("n1", "StatefulSet", "u1")
    state = build_state([n1, node("n2")], p)
    assert NodePreferAvoidPods().score(state, state.index.pending[0], CycleState(), np.arange(2)).tolist() == want


def test_a_malformed_annotation_avoids_nothing():
    n = node("n1")
    n["metadata"]["annotations"] = {ANNOTATION: "{not json"}
    state = build_state(n, owned("ReplicaSet", "u1"))
    assert NodePreferAvoidPods().score(state, state.index.pending[0], CycleState(), np.arange(1)).tolist() == [100]
