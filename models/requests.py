"""A pod's resource request, computed as component-helpers' `PodRequests` does (pure, shared by all engines).

    sumC   = Σ regular containers + Σ restartable (sidecar) init containers
    init_i = request of the i-th non-sidecar init container + Σ sidecars declared before it
    R      = max(sumC, maxᵢ init_i) + overhead          (per resource name)

Pod-level `spec.resources.requests` for cpu, memory and hugepages-* replace the container aggregate.
The *non-zero* variant (scoring only) first gives every container that omits cpu or memory a request of
100m / 200Mi; with pod-level requests the defaults apply only where the pod level is missing.
Amounts are canonical integers: millicores for cpu, `Value()` for every other resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from .k8s import Container, Pod
from .quantity import canonical

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
_CANON: dict[tuple[bool, int, int], int] = {}


def _canonical(name: str, q: Fraction) -> int:
    """`canonical`, memoised: real clusters use a few dozen distinct request sizes."""
    key = (name == "cpu", q.numerator, q.denominator)  # hashing a Fraction itself is slow
    v = _CANON.get(key)
    if v is None:
        v = canonical(name, q)
        if len(_CANON) < 65536:
            _CANON[key] = v
    return v


def _container_requests(c: Container, non_zero: bool) -> dict[str, int]:
    out = {name: _canonical(name, q) for name, q in c.resources.requests.items()}
    if non_zero:
        out.setdefault("cpu", DEFAULT_MILLI_CPU)
        out.setdefault("memory", DEFAULT_MEMORY)
    return out


def _add(acc: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        acc[k] = acc.get(k, 0) + v


def _max(acc: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > acc.get(k, 0):
            acc[k] = v


def pod_requests(pod: Pod, non_zero: bool = False, plain: dict[str, int] | None = None) -> dict[str, int]:
    """R per resource name (see module docstring). `non_zero=True` gives the scoring variant.

    `plain`, with `non_zero=True`, is the already computed plain R: it is returned as is when every container
    requests both cpu and memory (the non-zero defaults then change nothing).
    """
    spec = pod.spec
    if non_zero and plain is not None and all(
        "cpu" in c.resources.requests and "memory" in c.resources.requests
        for c in (*spec.containers, *spec.init_containers)
    ):
        return plain
    reqs: dict[str, int] = {}
    for c in spec.containers:
        _add(reqs, _container_requests(c, non_zero))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in spec.init_containers:
        cr = _container_requests(c, non_zero)
        if c.restart_policy == "Always":
            _add(reqs, cr)
            _add(sidecars, cr)
            _max(init_max, sidecars)
        else:
            tmp = dict(cr)
            _add(tmp, sidecars)
            _max(init_max, tmp)
    _max(reqs, init_max)
    pod_level: Mapping[str, Fraction] = spec.resources.requests if spec.resources else {}
    for name, q in pod_level.items():
        if name in ("cpu", "memory") or name.startswith("hugepages-"):
            reqs[name] = _canonical(name, q)
    _add(reqs, {name: _canonical(name, q) for name, q in spec.overhead.items()})
    return reqs


def host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) wanted by regular and sidecar init containers; empty IP → 0.0.0.0."""
    out = []
    for c in spec_containers(pod):
        for p in c.ports:
            if p.host_port > 0:
                out.append((p.host_ip or "0.0.0.0", p.protocol or "TCP", p.host_port))
    return out


def spec_containers(pod: Pod) -> list[Container]:
    """Regular containers plus restartable (sidecar) init containers: the ones that run alongside."""
    return [*pod.spec.containers, *(c for c in pod.spec.init_containers if c.restart_policy == "Always")]
