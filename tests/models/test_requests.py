"""A pod's resource request R, as component-helpers' PodRequests computes it."""

import pytest
from kplace.models.k8s import Pod
from kplace.models.requests import DEFAULT_MEMORY, DEFAULT_MILLI_CPU, host_ports, pod_requests

MI = 2**20


def c(cpu=None, memory=None, sidecar=False, limits=None, **extra):
    req = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None} | extra
    out = {"name": "c", "resources": {"requests": req, **({"limits": limits} if limits else {})}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def make(containers, init=(), **spec):
    return Pod.model_validate({"metadata": {"name": "p"},
                               "spec": {"containers": list(containers), "initContainers": list(init), **spec}})


CASES = [
    ("regular containers are summed",
     make([c("100m", "100Mi"), c("200m", "50Mi")]), {"cpu": 300, "memory": 150 * MI}),
    ("a large init container raises the request to its own size",
     make([c("100m", "100Mi")], init=[c("1", "10Mi")]), {"cpu": 1000, "memory": 100 * MI}),
    ("init containers run one at a time, so only the largest counts",
     make([c("100m")], init=[c("500m"), c("700m")]), {"cpu": 700}),
    ("a sidecar is added to the regular containers",
     make([c("100m")], init=[c("50m", sidecar=True)]), {"cpu": 150}),
    ("an init container after a sidecar runs beside it",
     make([c("100m")], init=[c("200m", sidecar=True), c("1")]), {"cpu": 1200}),
    ("an init container before a sidecar does not run beside it",
     make([c("100m")], init=[c("1"), c("200m", sidecar=True)]), {"cpu": 1000}),
    ("overhead is added on top of everything",
     make([c("100m", "10Mi")], overhead={"cpu": "250m", "memory": "120Mi"}), {"cpu": 350, "memory": 130 * MI}),
    ("pod-level requests replace the container sum for cpu and memory",
     make([c("100m", "10Mi"), c("100m", "10Mi")], resources={"requests": {"cpu": "1", "memory": "1Gi"}}),
     {"cpu": 1000, "memory": 1024 * MI}),
    ("pod-level requests do not replace extended resources",
     make([c("100m", **{"nvidia.com/gpu": "1"})], resources={"requests": {"cpu": "1", "nvidia.com/gpu": "4"}}),
     {"cpu": 1000, "nvidia.com/gpu": 1}),
    ("a limit without a request is requested, as API-server defaulting does",
     make([c(limits={"cpu": "2", "memory": "1Gi"})]), {"cpu": 2000, "memory": 1024 * MI}),
    ("extended resources are summed like cpu",
     make([c(**{"nvidia.com/gpu": "1"}), c(**{"nvidia.com/gpu": "2"})]), {"nvidia.com/gpu": 3}),
    ("a pod with no requests requests nothing", make([c()]), {}),
]


@pytest.mark.parametrize(("pod", "expected"), [x[1:] for x in CASES], ids=[x[0] for x in CASES])
def test_pod_requests(pod, expected):
    assert pod_requests(pod) == expected


def test_the_non_zero_variant_gives_containers_without_requests_the_scoring_defaults():
    pod = make([c(), c("300m")])
    assert pod_requests(pod, non_zero=True) == {"cpu": DEFAULT_MILLI_CPU + 300, "memory": 2 * DEFAULT_MEMORY}


def test_the_non_zero_variant_keeps_explicit_zero_requests():
    pod = make([c("0", "0")])
    assert pod_requests(pod, non_zero=True) == {"cpu": 0, "memory": 0}


def test_the_non_zero_shortcut_returns_the_plain_requests_only_when_every_container_has_cpu_and_memory():
    full = make([c("100m", "1Mi")], init=[c("1", "2Mi")])
    plain = pod_requests(full)
    assert pod_requests(full, non_zero=True, plain=plain) is plain
    partial = make([c("100m")])
    assert pod_requests(partial, non_zero=True, plain=pod_requests(partial)) == {"cpu": 100, "memory": DEFAULT_MEMORY}


def test_host_ports_come_from_regular_and_sidecar_containers_with_defaults_filled_in():
    ports = [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 53, "hostPort": 53, "protocol": "UDP",
                                                       "hostIP": "10.0.0.1"}, {"containerPort": 9090}]
    side = {**c(), "ports": [{"containerPort": 1, "hostPort": 9999}], "restartPolicy": "Always"}
    plain_init = {**c(), "ports": [{"containerPort": 1, "hostPort": 7777}]}
    pod = make([{**c(), "ports": ports}], init=[side, plain_init])
    assert host_ports(pod) == [("0.0.0.0", "TCP", 8080), ("10.0.0.1", "UDP", 53), ("0.0.0.0", "TCP", 9999)]
