"""VolumeZone (the classic NoVolumeZoneConflict): bound PVs' zone and region labels must match the node's.

PreFilter collects, for each PVC source of the pod (in volume order):
- a missing PVC, PV or StorageClass: UnschedulableAndUnresolvable with kube's not-found message;
- an unbound claim: skipped when its class is WaitForFirstConsumer; without a class,
  "PersistentVolumeClaim had no pv name and storageClass name"; otherwise "PersistentVolume had no name"
  (both UnschedulableAndUnresolvable);
- a bound claim: each of the PV's labels `failure-domain.beta.kubernetes.io/{zone,region}` and
  `topology.kubernetes.io/{zone,region}` as a set of values (split on `__`; a value with an empty part is
  ignored).
No such labels: Skip. Filter: a node without any of the four labels passes (single-zone clusters);
otherwise every collected (key, values) needs the node's value for the key — for a beta key, the GA key's
value when the beta one is absent — to be in values, else UnschedulableAndUnresolvable
"node(s) had no available volume zone".
"""

from __future__ import annotations

import numpy as np
from kplace.models.index import ClusterIndex

from ...framework import Code, CycleState, FilterResult, Plugin, PreFilterResult
from ...framework.state import ClusterState
from ..volumebinding.claims import catalog, claim_class, pvc_key

NAME = "VolumeZone"
REASON = "node(s) had no available volume zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def zones_to_set(value: str) -> set[str] | None:
    """LabelZonesToSet: `a__b` → {a, b}; None when some part is empty."""
    parts = value.split("__")
    if any(not p.strip() for p in parts):
        return None
    return {p.strip() for p in parts}


def pv_topologies(index: ClusterIndex, pod) -> tuple[list[tuple[str, set[str]]], str | None]:
    """(the (label key, allowed values) pairs of the pod's bound PVs, or kube's error message)."""
    cat = catalog(index)
    out: list[tuple[str, set[str]]] = []
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is None:
            continue
        name = v.persistent_volume_claim.claim_name
        if not name:
            return [], "PersistentVolumeClaim had no name"
        pvc = cat.pvcs.get(pvc_key(pod.metadata.namespace, name))
        if pvc is None:
            return [], f'persistentvolumeclaim "{name}" not found'
        pv_name = pvc.spec.volume_name
        if not pv_name:
            cls = claim_class(pvc)
            if not cls:
                return [], "PersistentVolumeClaim had no pv name and storageClass name"
            sc = cat.classes.get(cls)
            if sc is None:
                return [], f'storageclass.storage.k8s.io "{cls}" not found'
            if sc.volume_binding_mode == "WaitForFirstConsumer":
                continue
            return [], "PersistentVolume had no name"
        pv = cat.pvs.get(pv_name)
        if pv is None:
            return [], f'persistentvolume "{pv_name}" not found'
        for key in TOPOLOGY_LABELS:
            value = pv.metadata.labels.get(key)
            if value is not None and (values := zones_to_set(value)) is not None:
                out.append((key, values))
    return out, None


def zone_mask(index: ClusterIndex, topologies: list[tuple[str, set[str]]], nodes: np.ndarray) -> np.ndarray:
    """Per node of `nodes`: True where the node fits every (key, values)."""
    ok = np.ones(len(nodes), dtype=bool)
    labels = index.node_labels
    for i, n in enumerate(np.asarray(nodes).tolist()):
        lb = labels[n]
        if not any(k in lb for k in TOPOLOGY_LABELS):
            continue
        for key, values in topologies:
            v = lb.get(key)
            if v is None and key in GA:
                v = lb.get(GA[key])
            if v is None or v not in values:
                ok[i] = False
                break
    return ok


class VolumeZone(Plugin):
    name = NAME
    reads_pods = False

    def pre_filter(self, state: ClusterState, pod, cycle: CycleState) -> PreFilterResult:
        topologies, err = pv_topologies(state.index, pod.pod)
        if err is not None:
            return PreFilterResult(UU, err)
        if not topologies:
            return PreFilterResult.skip()
        cycle[NAME] = topologies
        return PreFilterResult()

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        if not pod.pod.spec.volumes:
            return FilterResult.success(len(nodes))
        topologies = cycle.get(NAME)
        if topologies is None:
            topologies = pv_topologies(state.index, pod.pod)[0]
        return FilterResult.fail_where(~zone_mask(state.index, topologies, nodes), UU, REASON)


PLUGINS = [VolumeZone]
