"""Builders for the shipped volume and seed-example instances (deterministic, no input data needed).

    .venv/bin/python -m kplace.instances.volumes      # rewrites volumes-small.json and seed-examples.json

`volumes_small()` — 6 nodes in zones a/b with CSINodes (ebs.csi.aws.com, node w-5 allows 1 attachment),
StorageClasses `local-storage` (WaitForFirstConsumer, no provisioner), `gp3` (WaitForFirstConsumer,
ebs.csi.aws.com, zone a only) and `standard` (Immediate, the default class), two local PVs on each of w-0..w-3,
a zonal gp3 PV in zone b, and pending pods that exercise every volume plugin: `db-*` take local PVs, `app-*`
provision gp3 volumes, `web-*` use generic ephemeral volumes, `legacy-*` share one GCE PD read-write, `reports`
mounts the zone-b PV, `orphan` has an unbound Immediate claim (never placeable).

`seed_examples()` — the seed's three examples on 4 nodes: two Redis masters never on one node, each master
and its replica never on one node, Elasticsearch data pods one per node.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kplace.solver.plugins.volumebinding.testdata import csinode, pv, pvc, storage_class

Obj = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
HERE = Path(__file__).resolve().parent
EBS = "ebs.csi.aws.com"


def _node(name: str, zone: str, cpu: str = "8", memory: str = "32Gi") -> Obj:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: zone}},
            "spec": {}, "status": {"capacity": alloc, "allocatable": alloc,
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, cpu: str = "500m", memory: str = "1Gi", labels: dict[str, str] | None = None,
         volumes: list[Obj] | None = None, affinity: Obj | None = None, node: str = "", created: int = 0) -> Obj:
    spec: Obj = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if volumes:
        spec["volumes"] = volumes
    if affinity:
        spec["affinity"] = affinity
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": dict(labels or {}), "uid": f"uid-{name}",
                         "creationTimestamp": f"2024-06-01T00:{created // 60:02d}:{created % 60:02d}Z"},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _claim(name: str, vol: str = "data") -> Obj:
    return {"name": vol, "persistentVolumeClaim": {"claimName": name}}


def _list(items: list[Obj], what: str) -> Obj:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"annotations": {"kplace.io/instance": what}},
            "items": items}


def volumes_small() -> Obj:
    nodes = [_node(f"w-{i}", "a" if i < 3 else "b") for i in range(6)]
    items: list[Obj] = [*nodes]
    items += [csinode(n["metadata"]["name"], {EBS: 1 if i == 5 else 25}) for i, n in enumerate(nodes)]
    items += [storage_class("local-storage"), storage_class("gp3", provisioner=EBS, zones=["a"]),
              storage_class("standard", mode="Immediate", provisioner=EBS, default=True)]
    for i in range(4):
        items += [pv(f"local-w{i}-{k}", size=f"{50 + 50 * k}Gi", cls="local-storage", node=f"w-{i}") for k in range(2)]
    items += [pv("reports-b", size="100Gi", cls="gp3", zone="b", claim="default/reports", csi=(EBS, "vol-reports")),
              pvc("reports", size="100Gi", cls="gp3", volume="reports-b")]
    # A bound pod already using a gp3 volume on w-5 (its attach limit is 1).
    items += [pv("busy-b", size="10Gi", cls="gp3", zone="b", claim="default/busy", csi=(EBS, "vol-busy")),
              pvc("busy", size="10Gi", cls="gp3", volume="busy-b"),
              _pod("busy", node="w-5", volumes=[_claim("busy")])]
    t = 0
    for i in range(5):  # five databases on eight local PVs; db-4-extra shares db-4's claim, so follows it
        items += [pvc(f"db-data-{i}", size="40Gi", cls="local-storage")]
        items.append(_pod(f"db-{i}", cpu="2", memory="8Gi", labels={"app": "db"}, volumes=[_claim(f"db-data-{i}")],
                          created=(t := t + 1)))
    items.append(_pod("db-4-extra", cpu="250m", labels={"app": "db"}, volumes=[_claim("db-data-4", "more")],
                      created=(t := t + 1)))
    for i in range(4):
        items.append(pvc(f"app-{i}", size="20Gi", cls="gp3"))
        items.append(_pod(f"app-{i}", labels={"app": "app"}, volumes=[_claim(f"app-{i}")], created=(t := t + 1)))
    eph = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "resources": {"requests": {"storage": "5Gi"}}}}}}
    items += [_pod(f"web-{i}", labels={"app": "web"}, volumes=[eph], created=(t := t + 1)) for i in range(3)]
    gce = {"name": "pd", "gcePersistentDisk": {"pdName": "legacy-disk", "fsType": "ext4"}}
    legacy_aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["w-4"]}]}]}}}
    items += [_pod(f"legacy-{i}", labels={"app": "legacy"}, volumes=[gce], affinity=legacy_aff, created=(t := t + 1))
              for i in range(2)]
    items.append(_pod("reports", labels={"app": "reports"}, volumes=[_claim("reports")], created=(t := t + 1)))
    items += [pvc("orphan", size="1Gi", cls="standard"),
              _pod("orphan", volumes=[_claim("orphan")], created=(t := t + 1))]
    return _list(items, "volumes-small")


def _anti(labels: dict[str, str]) -> Obj:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": HOSTNAME}]}}


def seed_examples() -> Obj:
    items: list[Obj] = [_node(f"node-{i}", "a" if i % 2 == 0 else "b", cpu="4", memory="16Gi") for i in range(4)]
    t = 0
    for shard in range(2):
        items.append(_pod(f"redis-master-{shard}", cpu="1", memory="2Gi",
                          labels={"app": "redis", "role": "master", "shard": str(shard)},
                          affinity=_anti({"app": "redis", "role": "master"}), created=(t := t + 1)))
    for shard in range(2):
        items.append(_pod(f"redis-replica-{shard}", cpu="1", memory="2Gi",
                          labels={"app": "redis", "role": "replica", "shard": str(shard)},
                          affinity=_anti({"app": "redis", "role": "master", "shard": str(shard)}),
                          created=(t := t + 1)))
    for i in range(4):
        items.append(_pod(f"es-data-{i}", cpu="1", memory="4Gi", labels={"app": "elasticsearch", "role": "data"},
                          affinity=_anti({"app": "elasticsearch", "role": "data"}), created=(t := t + 1)))
    return _list(items, "seed-examples")


def write(path: Path, doc: Obj) -> None:
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")


def main() -> None:  # pragma: no cover - a build step
    write(HERE / "volumes-small.json", volumes_small())
    write(HERE / "seed-examples.json", seed_examples())


if __name__ == "__main__":  # pragma: no cover
    main()
