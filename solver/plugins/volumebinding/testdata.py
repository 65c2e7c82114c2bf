"""Wire-format builders for volume tests and instances: StorageClasses, PVs, PVCs, CSINodes, pod volumes."""

from __future__ import annotations

from typing import Any

from kplace.models.index import HOSTNAME

Obj = dict[str, Any]


def storage_class(name: str, mode: str = "WaitForFirstConsumer", provisioner: str = "kubernetes.io/no-provisioner",
                  zones: list[str] | None = None, default: bool = False) -> Obj:
    sc: Obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
               "metadata": {"name": name, **({"annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}
                                             if default else {})},
               "provisioner": provisioner, "volumeBindingMode": mode}
    if zones:
        sc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone",
                                                               "values": zones}]}]
    return sc


def pv(name: str, size: str = "10Gi", cls: str = "local", node: str | None = None, zone: str | None = None,
       modes: tuple[str, ...] = ("ReadWriteOnce",), claim: str | None = None, phase: str = "Available",
       csi: tuple[str, str] | None = None, labels: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": cls}
    if node is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}]}}
    if claim is not None:
        ns, _, cname = claim.partition("/")
        spec["claimRef"] = {"namespace": ns, "name": cname}
        phase = "Bound"
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    meta: Obj = {"name": name, "labels": dict(labels or {})}
    if zone is not None:
        meta["labels"]["topology.kubernetes.io/zone"] = zone
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec,
            "status": {"phase": phase}}


def pvc(name: str, size: str = "5Gi", cls: str | None = "local", volume: str = "", namespace: str = "default",
        modes: tuple[str, ...] = ("ReadWriteOnce",), annotations: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if cls is not None:
        spec["storageClassName"] = cls
    meta: Obj = {"name": name, "namespace": namespace, "annotations": dict(annotations or {})}
    status: Obj = {"phase": "Pending"}
    if volume:
        spec["volumeName"] = volume
        meta["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
        status = {"phase": "Bound"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec, "status": status}


def csinode(node: str, drivers: dict[str, int | None]) -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
            "spec": {"drivers": [{"name": d, "nodeID": node, **({"allocatable": {"count": c}} if c is not None else {})}
                                 for d, c in drivers.items()]}}


def claim_volumes(*claims: str) -> Obj:
    """A pod spec fragment mounting the named claims."""
    return {"volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]}
