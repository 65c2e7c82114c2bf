"""Small builders for tests and examples: nodes and pods as plain dicts (wire format), compiled to a state.

    state = build_state([node("n1", cpu="4")], [pod("web", cpu="100m")])
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kplace.models.index import ClusterIndex
from kplace.models.io import _add
from kplace.models.snapshot import ClusterSnapshot, finalize
from kplace.models.workloads import expand_workloads

from .framework.state import ClusterState


def node(
    name: str,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    extra: dict[str, str] | None = None,
    images: list[tuple[str, int]] | None = None,
) -> dict[str, Any]:
    """A Ready node; `kubernetes.io/hostname` is set to the name unless labels override it."""
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"unschedulable": unschedulable, "taints": taints or []},
        "status": {
            "capacity": alloc,
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": [n], "sizeBytes": s} for n, s in (images or [])],
        },
    }


def pod(
    name: str,
    cpu: str | None = None,
    memory: str | None = None,
    namespace: str = "default",
    node_name: str = "",
    labels: dict[str, str] | None = None,
    priority: int | None = None,
    spec: dict[str, Any] | None = None,
    extra: dict[str, str] | None = None,
    image: str = "registry.k8s.io/pause:3.10",
    creation: str | None = None,
) -> dict[str, Any]:
    """A one-container pod with the given requests; `spec` entries are merged into the pod spec."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra or {})
    body: dict[str, Any] = {
        "containers": [{"name": "c", "image": image, "resources": {"requests": requests}}],
        **({"nodeName": node_name} if node_name else {}),
        **({"priority": priority} if priority is not None else {}),
        **(spec or {}),
    }
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}, "uid": f"uid-{name}"}
    if creation:
        meta["creationTimestamp"] = creation
    phase = "Running" if node_name else "Pending"
    return {"kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": phase}}


def build_snapshot(*objects: dict[str, Any] | list[dict[str, Any]]) -> ClusterSnapshot:
    snap = ClusterSnapshot()
    sources: dict[int, str] = {}
    for obj in objects:
        for o in obj if isinstance(obj, list) else [obj]:
            _add(snap, sources, o["kind"], o, "<test>")
    expand_workloads(snap, sources)
    return finalize(snap, sources)


def build_state(*objects: dict[str, Any] | list[dict[str, Any]]) -> ClusterState:
    """Compile objects (dicts or lists of dicts) into a fresh ClusterState."""
    return ClusterState(ClusterIndex(build_snapshot(*objects)))


SKIPPED = "skip"
"""What a filter-running test helper returns when the plugin's PreFilter skipped the pod."""


def assert_filter(result, want, reasons: dict) -> None:
    """A filter `result` (or SKIPPED) gives the codes `want` per node, each failing node with `reasons[code]`."""
    if want == SKIPPED:
        assert result == SKIPPED
        return
    assert result != SKIPPED
    from .framework.plugin import Code

    assert [Code(c) for c in result.code] == want
    for i, code in enumerate(want):
        assert result.reasons_of(i) == reasons.get(code, [])


def hard_model():
    """A CP-SAT model not proven optimal in seconds: an assignment with pairwise products in the objective."""
    from ortools.sat.python import cp_model

    m, n = cp_model.CpModel(), 40
    x = [[m.new_bool_var(f"x{i}_{j}") for j in range(n)] for i in range(n)]
    for i in range(n):
        m.add_exactly_one(x[i])
        m.add_exactly_one(x[j][i] for j in range(n))
    terms = []
    for i in range(n - 1):
        for j in range(n):
            b = m.new_bool_var("")
            m.add_multiplication_equality(b, [x[i][j], x[i + 1][(j * 7 + 3) % n]])
            terms.append(((i * 31 + j * 17) % 97) * b)
    m.maximize(sum(terms))
    return m


def make_certificates(tmp, server: str = "server", client: str = "client") -> None:
    """With openssl, in directory `tmp`: a CA (ca.crt, ca.key), SERVER.crt/.key for 127.0.0.1 and CLIENT.crt/.key
    for client authentication as kube-scheduler, both signed by the CA."""
    import subprocess

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
        "-keyout", f"{tmp}/ca.key", "-out", f"{tmp}/ca.crt")
    for who, cn, ext in ((server, "127.0.0.1", "subjectAltName=IP:127.0.0.1\n"),
                         (client, "kube-scheduler", "extendedKeyUsage=clientAuth\n")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={cn}", "-keyout", f"{tmp}/{who}.key",
            "-out", f"{tmp}/{who}.csr")
        Path(f"{tmp}/{who}.ext").write_text(ext)
        run("x509", "-req", "-in", f"{tmp}/{who}.csr", "-CA", f"{tmp}/ca.crt", "-CAkey", f"{tmp}/ca.key",
            "-CAcreateserial", "-days", "1", "-out", f"{tmp}/{who}.crt", "-extfile", f"{tmp}/{who}.ext")

