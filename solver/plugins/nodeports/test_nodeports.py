from collections import Counter

import numpy as np
import pytest
from kplace.solver.framework import Code, CycleState
from kplace.solver.plugins.nodeports import REASON, NodePorts, conflicts
from kplace.solver.testing import build_state, node, pod

U = Code.UNSCHEDULABLE


def port(host_port, ip="", proto="TCP"):
    return {"containerPort": 80, "hostPort": host_port, "hostIP": ip, "protocol": proto}


def with_ports(name, ports, node_name="", init=False):
    c = {"name": "c", "image": "x", "ports": ports}
    spec = {"initContainers": [{**c, "restartPolicy": "Always"}], "containers": []} if init else {"containers": [c]}
    return pod(name, node_name=node_name, spec=spec)


CASES = [
    ("A pod without host ports fits a node with ports in use.", [port(8080)], [], Code.SUCCESS),
    ("Container ports without a host port never conflict.", [port(0)], [port(0)], Code.SUCCESS),
    ("The same host port and protocol conflict.", [port(8080)], [port(8080)], U),
    ("The same port on another protocol does not conflict.", [port(8080, proto="UDP")], [port(8080)], Code.SUCCESS),
    ("A different port does not conflict.", [port(8080)], [port(8081)], Code.SUCCESS),
    ("One conflicting port among several rejects the node.", [port(9000)], [port(8080), port(9000)], U),
]


@pytest.mark.parametrize(("name", "used", "wanted", "want"), CASES, ids=[c[0] for c in CASES])
def test_node_ports_filter(name, used, wanted, want):
    state = build_state(node("n1"), with_ports("bound", used, node_name="n1"), with_ports("p", wanted))
    p = next(pi for pi in state.index.pods if pi.pending)
    result = NodePorts().filter(state, p, CycleState(), np.array([0]))
    assert Code(result.code[0]) == want
    assert result.reasons_of(0) == ([] if want == Code.SUCCESS else [REASON])


ANY = "0.0.0.0"
CONFLICTS = [
    ("The same IP, protocol and port conflict.", [("10.0.0.1", "TCP", 80)], [("10.0.0.1", "TCP", 80)], True),
    ("The same port on different IPs does not conflict.", [("10.0.0.1", "TCP", 80)], [("10.0.0.2", "TCP", 80)],
     False),
    ("A wanted 0.0.0.0 port conflicts with the port in use on any IP.", [("10.0.0.1", "TCP", 80)],
     [(ANY, "TCP", 80)], True),
    ("A wanted specific IP conflicts with the port in use on 0.0.0.0.", [(ANY, "TCP", 80)],
     [("10.0.0.1", "TCP", 80)], True),
    ("0.0.0.0 on another protocol does not conflict.", [(ANY, "UDP", 80)], [("10.0.0.1", "TCP", 80)], False),
    ("A wanted 0.0.0.0 port does not conflict with another port on some IP.", [("10.0.0.1", "TCP", 81)],
     [(ANY, "TCP", 80)], False),
    ("A non-positive wanted port never conflicts.", [(ANY, "TCP", 0)], [(ANY, "TCP", 0)], False),
    ("Nothing in use never conflicts.", [], [(ANY, "TCP", 80)], False),
]


@pytest.mark.parametrize(("name", "used", "wanted", "want"), CONFLICTS, ids=[c[0] for c in CONFLICTS])
def test_conflicts(name, used, wanted, want):
    assert conflicts(Counter(used), wanted) is want


WIRE = [
    ("Host IPs from the wire (hostIP) are read: different IPs do not conflict.", "127.0.0.1", "127.0.0.2",
     Code.SUCCESS),
    ("Host IPs from the wire: the same IP conflicts.", "127.0.0.1", "127.0.0.1", U),
    ("Host IPs from the wire: a wanted 0.0.0.0 conflicts with a specific IP in use.", "10.0.0.1", "0.0.0.0", U),
]


@pytest.mark.parametrize(("name", "used_ip", "wanted_ip", "want"), WIRE, ids=[c[0] for c in WIRE])
def test_wire_host_ip(name, used_ip, wanted_ip, want):
    state = build_state(node("n1"), with_ports("bound", [port(8080, used_ip)], node_name="n1"),
                        with_ports("p", [port(8080, wanted_ip)]))
    p = next(pi for pi in state.index.pods if pi.pending)
    assert p.host_ports == [(wanted_ip, "TCP", 8080)]
    assert Code(NodePorts().filter(state, p, CycleState(), np.array([0])).code[0]) == want


def test_sidecar_init_container_ports_are_wanted_and_used():
    state = build_state([node("n1"), node("n2")], with_ports("bound", [port(7000)], node_name="n1", init=True),
                        with_ports("p", [port(7000)], init=True))
    p = next(pi for pi in state.index.pods if pi.pending)
    pl, cycle = NodePorts(), CycleState()
    assert pl.pre_filter(state, p, cycle).code == Code.SUCCESS
    assert [Code(c) for c in pl.filter(state, p, cycle, np.array([0, 1])).code] == [U, Code.SUCCESS]


def test_pre_filter_skips_a_pod_without_host_ports():
    state = build_state(node("n1"), with_ports("p", [port(0)]))
    assert NodePorts().pre_filter(state, state.index.pending[0], CycleState()).code == Code.SKIP


def test_ports_follow_assume_and_forget():
    state = build_state(node("n1"), with_ports("a", [port(8080)]), with_ports("b", [port(8080)]))
    a, b = state.index.pending
    pl, cycle, nodes = NodePorts(), CycleState(), np.array([0])
    state.assume(a, 0)
    assert Code(pl.filter(state, b, cycle, nodes).code[0]) == U
    state.forget(a)
    assert Code(pl.filter(state, b, cycle, nodes).code[0]) == Code.SUCCESS
