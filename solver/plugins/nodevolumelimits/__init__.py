"""NodeVolumeLimits (the classic MaxCSIVolumeCount): per CSI driver, a node attaches at most
`CSINode.spec.drivers[].allocatable.count` volumes.

A volume is identified as `<driver>/<volume handle>` (`pod_csi_volumes`):
- a PVC (or generic ephemeral volume's claim) bound to a PV with a `csi` source: its driver and volumeHandle;
- a PV of an in-tree plugin that CSI migration covers (AWS EBS → `ebs.csi.aws.com`, GCE PD →
  `pd.csi.storage.gke.io`) when the node has a CSINode: the migrated driver and the translated handle;
- an unbound claim (or one whose PV is missing): its class's provisioner (migrated as above) and a handle
  unique to the claim, so every unbound claim counts once; without a class, or with a missing class, it is
  not counted (such a claim binds before scheduling);
- an inline AWS EBS or GCE PD volume, when the node has a CSINode: the migrated driver and handle.
Filter: the pod's new volumes (those not already attached on the node), counted per driver, plus the unique
volumes of the pods on the node must not exceed the limit: Unschedulable "node(s) exceed max volume count".
A driver without a limit, or a node without CSINode and without `attachable-volumes-csi-<driver>`
allocatable, does not limit. A missing claim of the pod itself is UnschedulableAndUnresolvable
`persistentvolumeclaim "x" not found`; missing claims of pods on the node are not counted.
PreFilter skips pods without PVC, ephemeral or migratable inline volumes.
Not modelled: VolumeAttachment objects (kube 1.34+ also counts attachments of the driver on the node that
no pod uses); kplace's states do not carry them.
"""

from __future__ import annotations

import hashlib

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.k8s import CSINode, Pod

from ...framework import Code, CycleState, FilterResult, Plugin, PreFilterResult
from ...framework.queue import ASSIGNED_POD_DELETE
from ...framework.state import ClusterState
from ..volumebinding.claims import catalog, claim_class, pod_claims

NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"
ATTACH_PREFIX = "attachable-volumes-csi-"
EBS_PLUGIN, EBS_DRIVER = "kubernetes.io/aws-ebs", "ebs.csi.aws.com"
GCE_PLUGIN, GCE_DRIVER = "kubernetes.io/gce-pd", "pd.csi.storage.gke.io"
MIGRATED = {EBS_PLUGIN: EBS_DRIVER, GCE_PLUGIN: GCE_DRIVER}
_CLAIM_HANDLE = "kplace-unbound"  # kube uses a random per-plugin prefix; any prefix that no real handle has


def attach_limit_key(driver: str) -> str:
    """GetCSIAttachLimitKey: `attachable-volumes-csi-<driver>`, hashed when longer than 63 characters."""
    if len(ATTACH_PREFIX) + len(driver) < 63:
        return ATTACH_PREFIX + driver
    return ATTACH_PREFIX + driver[:23] + hashlib.sha1(driver.encode()).hexdigest()[:16]


def ebs_handle(volume_id: str) -> str:
    """The EBS volume ID in an in-tree `aws://<zone>/<id>` or plain `<id>` form."""
    return volume_id.rsplit("/", 1)[-1] if volume_id.startswith("aws://") else volume_id


def gce_handle(pd_name: str, zone: str = "UNSPECIFIED") -> str:
    return f"projects/UNSPECIFIED/zones/{zone}/disks/{pd_name}"


def node_limits(index: ClusterIndex, node: int, csinode: CSINode | None) -> dict[str, int]:
    """Limit per driver: node allocatable `attachable-volumes-csi-*`, overridden by CSINode counts."""
    limits: dict[str, int] = {}
    for k, v in index.nodes[node].allocatable.items():
        if k.startswith(ATTACH_PREFIX):
            limits[k] = int(v)
    if csinode is not None:
        for d in csinode.spec.drivers:
            if d.allocatable is not None and d.allocatable.get("count") is not None:
                limits[attach_limit_key(d.name)] = int(d.allocatable["count"])
    return limits


def pod_csi_volumes(index: ClusterIndex, pod: Pod, csinode: CSINode | None, pending: bool
                    ) -> tuple[dict[str, str], str | None]:
    """{`driver/handle`: limit key} of the pod's attachable volumes, and the error for a missing claim of a
    pending pod (kube's filterAttachableVolumes)."""
    cat = catalog(index)
    out: dict[str, str] = {}
    uses = {u.volume.name: u for u in pod_claims(index, pod, pending=pending)}
    for v in pod.spec.volumes:
        driver = handle = ""
        if v.persistent_volume_claim is not None or v.ephemeral is not None:
            u = uses[v.name]
            if u.error is not None or u.pvc is None:
                if pending:
                    return out, u.error or f'persistentvolumeclaim "{u.name}" not found'
                continue
            pvc = u.pvc
            pv = cat.pvs.get(pvc.spec.volume_name) if pvc.spec.volume_name else None
            if pv is not None:
                if pv.spec.csi is not None:
                    driver, handle = pv.spec.csi.get("driver", ""), pv.spec.csi.get("volumeHandle", "")
                elif csinode is not None and pv.spec.aws_elastic_block_store is not None:
                    driver, handle = EBS_DRIVER, ebs_handle(pv.spec.aws_elastic_block_store.volume_id)
                elif csinode is not None and pv.spec.gce_persistent_disk is not None:
                    zone = pv.metadata.labels.get("topology.kubernetes.io/zone") or \
                        pv.metadata.labels.get("failure-domain.beta.kubernetes.io/zone") or "UNSPECIFIED"
                    driver, handle = GCE_DRIVER, gce_handle(pv.spec.gce_persistent_disk.pd_name, zone)
            else:
                sc = cat.classes.get(claim_class(pvc))
                if sc is not None:
                    driver = sc.provisioner
                    if driver in MIGRATED:
                        driver = MIGRATED[driver] if csinode is not None else ""
                    handle = f"{_CLAIM_HANDLE}-{u.key}"
        elif csinode is not None and v.aws_elastic_block_store is not None:
            driver, handle = EBS_DRIVER, ebs_handle(v.aws_elastic_block_store.volume_id)
        elif csinode is not None and v.gce_persistent_disk is not None:
            driver, handle = GCE_DRIVER, gce_handle(v.gce_persistent_disk.pd_name)
        if driver and handle:
            out[f"{driver}/{handle}"] = attach_limit_key(driver)
    return out, None


def has_attachable(pod: Pod) -> bool:
    return any(v.persistent_volume_claim is not None or v.ephemeral is not None
               or v.aws_elastic_block_store is not None or v.gce_persistent_disk is not None
               for v in pod.spec.volumes)


def exceeds(new: dict[str, str], attached: dict[str, str], limits: dict[str, int]) -> bool:
    """Do the new volumes (minus those already attached) push some driver over its limit."""
    fresh = {k: v for k, v in new.items() if k not in attached}
    if not fresh or not limits:
        return False
    have: dict[str, int] = {}
    for key in attached.values():
        have[key] = have.get(key, 0) + 1
    want: dict[str, int] = {}
    for key in fresh.values():
        want[key] = want.get(key, 0) + 1
    return any(key in limits and have.get(key, 0) + c > limits[key] for key, c in want.items())


def attached_volumes(state: ClusterState, node: int, csinode: CSINode | None) -> dict[str, str]:
    """Unique attachable volumes of the pods on `node` (cached until the node's pods change)."""
    cache = state.plugin_cache.setdefault("NodeVolumeLimits.attached", {})
    ver = int(state.node_version[node])
    hit = cache.get(node)
    if hit is not None and hit[0] == ver:
        return hit[1]
    out: dict[str, str] = {}
    pods = state.index.pods
    for j in state.node_pods[node]:
        p: PodInfo = pods[j]
        if p.pod.spec.volumes:
            out.update(pod_csi_volumes(state.index, p.pod, csinode, pending=False)[0])
    cache[node] = (ver, out)
    return out


class NodeVolumeLimits(Plugin):
    name = NAME
    hint_events = frozenset({ASSIGNED_POD_DELETE})

    def queueing_hint(self, event: str, pod, other, index) -> bool:
        """A deleted pod helps when it had a volume that counts against attach limits."""
        return has_attachable(other.pod)

    def pre_filter(self, state: ClusterState, pod, cycle: CycleState) -> PreFilterResult:
        return PreFilterResult() if has_attachable(pod.pod) else PreFilterResult.skip()

    def filter_reads(self, state: ClusterState, pod, cycle: CycleState, other) -> bool:
        """Only pods with volumes count (attach counts)."""
        return bool(other.pod.spec.volumes)

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        index = state.index
        csinodes = catalog(index).csinodes
        code = np.zeros(len(nodes), dtype=np.int8)
        fail = np.zeros(len(nodes), dtype=bool)
        errors: dict[str, np.ndarray] = {}
        mine: dict[bool, tuple[dict[str, str], str | None]] = {}  # the pod's volumes depend on "has a CSINode"
        for i, n in enumerate(np.asarray(nodes).tolist()):
            csinode = csinodes.get(index.node_names[n])
            has = csinode is not None
            if has not in mine:
                mine[has] = pod_csi_volumes(index, pod.pod, csinode, pending=True)
            new, err = mine[has]
            if err is not None:
                code[i] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                errors.setdefault(err, np.zeros(len(nodes), dtype=bool))[i] = True
                continue
            if not new:
                continue
            limits = node_limits(index, n, csinode)
            if limits and exceeds(new, attached_volumes(state, n, csinode), limits):
                code[i], fail[i] = Code.UNSCHEDULABLE, True
        reasons = [(REASON, fail)] if fail.any() else []
        return FilterResult(code, [*reasons, *errors.items()])


PLUGINS = [NodeVolumeLimits]
