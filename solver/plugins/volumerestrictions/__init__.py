"""VolumeRestrictions (the classic NoDiskConflict): volumes that only one pod may use read-write.

Filter, per node, Unschedulable "node(s) had no available disk" when one of the pod's inline volumes
conflicts with a volume of a pod already on the node (`volume_conflict`):
- GCE PD: the same `pdName`, unless both mount it read-only;
- AWS EBS: the same `volumeID`, always;
- iSCSI: the same IQN, unless both are read-only;
- RBD: a shared Ceph monitor, the same pool and the same image, unless both are read-only.
ReadWriteOncePod: the pod's PVCs (PVC sources only, as kube) with access mode ReadWriteOncePod must not be
used by any pod already placed anywhere; when one is, every node fails Unschedulable "node has pod using
PersistentVolumeClaim with the same name and ReadWriteOncePod access mode" (kube counts the users at
PreFilter and adjusts the count for preemption victims; kplace reads the live count, which is the same).
PreFilter: a missing PVC is UnschedulableAndUnresolvable `persistentvolumeclaim "x" not found`; a pod
with neither inline volumes to check nor a conflicting ReadWriteOncePod claim is skipped.
"""

from __future__ import annotations

import numpy as np
from kplace.models.k8s import Pod, Volume

from ...framework import Code, CycleState, FilterResult, Plugin, PreFilterResult
from ...framework.queue import ASSIGNED_POD_DELETE
from ...framework.state import ClusterState
from ..volumebinding.claims import READ_WRITE_ONCE_POD, catalog, pvc_key

NAME = "VolumeRestrictions"
REASON_DISK_CONFLICT = "node(s) had no available disk"
REASON_RWOP_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"


def needs_check(v: Volume) -> bool:
    return v.gce_persistent_disk is not None or v.aws_elastic_block_store is not None or v.rbd is not None \
        or v.iscsi is not None


def volume_conflict(v: Volume, other: Pod) -> bool:
    """isVolumeConflict: does volume `v` conflict with any volume of pod `other`."""
    for ev in other.spec.volumes:
        if v.gce_persistent_disk is not None and ev.gce_persistent_disk is not None:
            a, b = v.gce_persistent_disk, ev.gce_persistent_disk
            if a.pd_name == b.pd_name and not (a.read_only and b.read_only):
                return True
        a_ebs, b_ebs = v.aws_elastic_block_store, ev.aws_elastic_block_store
        if a_ebs is not None and b_ebs is not None and a_ebs.volume_id == b_ebs.volume_id:
            return True
        a_iscsi, b_iscsi = v.iscsi, ev.iscsi
        if a_iscsi is not None and b_iscsi is not None and a_iscsi.iqn == b_iscsi.iqn \
                and not (a_iscsi.read_only and b_iscsi.read_only):
            return True
        if v.rbd is not None and ev.rbd is not None:
            a, b = v.rbd, ev.rbd
            if set(a.monitors) & set(b.monitors) and a.pool == b.pool and a.image == b.image \
                    and not (a.read_only and b.read_only):
                return True
    return False


def pods_conflict(pod: Pod, other: Pod) -> bool:
    """Would `pod` conflict with `other` on one node (either way round: the relation is symmetric)."""
    return any(needs_check(v) and volume_conflict(v, other) for v in pod.spec.volumes)


def rwop_claims(index, pod: Pod) -> tuple[list[str], str | None]:
    """(keys of the pod's ReadWriteOncePod PVCs, or the not-found error kube reports)."""
    pvcs = catalog(index).pvcs
    out = []
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is None:
            continue
        name = v.persistent_volume_claim.claim_name
        key = pvc_key(pod.metadata.namespace, name)
        pvc = pvcs.get(key)
        if pvc is None:
            return [], f'persistentvolumeclaim "{name}" not found'
        if READ_WRITE_ONCE_POD in pvc.spec.access_modes and key not in out:
            out.append(key)
    return out, None


class VolumeRestrictions(Plugin):
    name = NAME
    hint_events = frozenset({ASSIGNED_POD_DELETE})

    def queueing_hint(self, event: str, pod, other, index) -> bool:
        """A deleted pod of the same namespace helps when its volumes conflict with the pod's or it used one of
        the pod's PVCs (kube does not read the claim's access mode here)."""
        if other.namespace != pod.namespace:
            return False
        if pods_conflict(pod.pod, other.pod):
            return True
        claims = {v.persistent_volume_claim.claim_name for v in pod.pod.spec.volumes if v.persistent_volume_claim}
        return any(v.persistent_volume_claim and v.persistent_volume_claim.claim_name in claims
                   for v in other.pod.spec.volumes)

    def pre_filter(self, state: ClusterState, pod, cycle: CycleState) -> PreFilterResult:
        spec = pod.pod.spec
        if not spec.volumes:
            return PreFilterResult.skip()
        keys, err = rwop_claims(state.index, pod.pod)
        if err is not None:
            return PreFilterResult(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, err)
        conflicting = sum(1 for k in keys if state.pvc_users[k] > 0)
        if not any(needs_check(v) for v in spec.volumes) and conflicting == 0:
            return PreFilterResult.skip()
        cycle[NAME] = keys
        return PreFilterResult()

    def filter_reads(self, state: ClusterState, pod, cycle: CycleState, other) -> bool:
        """Only pods with volumes count (conflicts)."""
        return bool(other.pod.spec.volumes)

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        p = pod.pod
        disk = np.zeros(len(nodes), dtype=bool)
        if any(needs_check(v) for v in p.spec.volumes):
            pods = state.index.pods
            for i, n in enumerate(np.asarray(nodes).tolist()):
                disk[i] = any(pods[j].pod.spec.volumes and pods_conflict(p, pods[j].pod)
                              for j in state.node_pods[n])
        res = FilterResult.fail_where(disk, Code.UNSCHEDULABLE, REASON_DISK_CONFLICT)
        keys = cycle.get(NAME)
        if keys is None:
            keys = rwop_claims(state.index, p)[0]
        if any(state.pvc_users[k] > 0 for k in keys):
            rest = ~disk
            if rest.any():
                res.code[rest] = Code.UNSCHEDULABLE
                res.reasons.append((REASON_RWOP_CONFLICT, rest))
        return res


PLUGINS = [VolumeRestrictions]
