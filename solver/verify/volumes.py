"""The four volume filters over the replay's state, in kube's order.

- VolumeRestrictions: an inline GCE PD / EBS / iSCSI / RBD volume that a pod on the node mounts read-write
  (NoDiskConflict); a ReadWriteOncePod claim another bound pod uses.
- NodeVolumeLimits: per limit key (CSI driver), the unique volumes attached on the node plus the pod's new ones
  ≤ the CSINode's `allocatable.count` (or the node's `attachable-volumes-csi-*` allocatable). A volume is a CSI
  PV, an in-tree EBS/GCE PD migrated to CSI on a node with a CSINode, or one per unbound claim from its class's
  provisioner.
- VolumeBinding: a claim bound in the state needs its PV's node affinity; a delayed claim the plan binds needs
  the PV's node affinity, or for `(dynamic)` the class's allowedTopologies, and its first user's node for any
  later user of a provisioned volume; any other unbound claim keeps the pod out ("unbound immediate").
- VolumeZone: the zone/region labels of the PVs of bound PVC sources name the node's value.
"""

from __future__ import annotations

import hashlib
from collections import Counter

from kplace.models.index import ClusterIndex
from kplace.models.k8s import PersistentVolume, PersistentVolumeClaim, Pod, Volume
from kplace.models.plan import DYNAMIC
from kplace.models.selectors import node_term_matches

from .claims import Claim, Claims, class_of
from .records import CompiledPod

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
RWOP = "ReadWriteOncePod"
ATTACH_PREFIX = "attachable-volumes-csi-"
MIGRATED = {"kubernetes.io/aws-ebs": "ebs.csi.aws.com", "kubernetes.io/gce-pd": "pd.csi.storage.gke.io"}
ZONE_KEYS = ("failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
             "topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def pv_allows(pv: PersistentVolume, labels: dict[str, str]) -> bool:
    """The PV's required node affinity against the node's labels (no affinity: every node)."""
    req = (pv.spec.node_affinity or {}).get("required")
    return req is None or any(node_term_matches(t, labels, "") for t in req.node_selector_terms)


def topology_allows(terms: list[dict], labels: dict[str, str]) -> bool:
    """A StorageClass's allowedTopologies: no terms allow every node; terms are ORed, expressions ANDed."""
    return not terms or any(all(labels.get(e.get("key")) in (e.get("values") or [])
                                for e in (t or {}).get("matchLabelExpressions") or []) for t in terms)


def limit_key(driver: str) -> str:
    """The node allocatable name of a CSI driver's volume limit (long names are shortened with a hash)."""
    if len(ATTACH_PREFIX) + len(driver) < 63:
        return ATTACH_PREFIX + driver
    return ATTACH_PREFIX + driver[:23] + hashlib.sha1(driver.encode()).hexdigest()[:16]


def disks_conflict(a: Volume, b: Volume) -> bool:
    """Two inline volumes that one node cannot mount for two pods (NoDiskConflict)."""
    if a.gce_persistent_disk and b.gce_persistent_disk:
        x, y = a.gce_persistent_disk, b.gce_persistent_disk
        return x.pd_name == y.pd_name and not (x.read_only and y.read_only)
    if a.aws_elastic_block_store and b.aws_elastic_block_store:
        return a.aws_elastic_block_store.volume_id == b.aws_elastic_block_store.volume_id
    if a.iscsi and b.iscsi:
        return a.iscsi.iqn == b.iscsi.iqn and not (a.iscsi.read_only and b.iscsi.read_only)
    if a.rbd and b.rbd:
        x, y = a.rbd, b.rbd
        return bool(set(x.monitors) & set(y.monitors)) and (x.pool, x.image) == (y.pool, y.image) \
            and not (x.read_only and y.read_only)
    return False


def _pv_handle(pv: PersistentVolume, has_csinode: bool) -> tuple[str, str]:
    """(driver, volume handle) of a bound PV that counts against a CSI limit, else ("", "")."""
    src = pv.spec
    if src.csi is not None:
        return src.csi.get("driver", ""), src.csi.get("volumeHandle", "")
    if has_csinode and src.aws_elastic_block_store is not None:
        return MIGRATED["kubernetes.io/aws-ebs"], src.aws_elastic_block_store.volume_id.rsplit("/", 1)[-1]
    if has_csinode and src.gce_persistent_disk is not None:
        zone = pv.metadata.labels.get("topology.kubernetes.io/zone") or \
            pv.metadata.labels.get("failure-domain.beta.kubernetes.io/zone") or "UNSPECIFIED"
        return MIGRATED["kubernetes.io/gce-pd"], \
            f"projects/UNSPECIFIED/zones/{zone}/disks/{src.gce_persistent_disk.pd_name}"
    return "", ""


def _inline_handle(v: Volume, has_csinode: bool) -> tuple[str, str]:
    """(driver, volume handle) of an inline in-tree volume migrated to CSI, else ("", "")."""
    if has_csinode and v.aws_elastic_block_store is not None:
        return MIGRATED["kubernetes.io/aws-ebs"], v.aws_elastic_block_store.volume_id.rsplit("/", 1)[-1]
    if has_csinode and v.gce_persistent_disk is not None:
        return MIGRATED["kubernetes.io/gce-pd"], \
            f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{v.gce_persistent_disk.pd_name}"
    return "", ""


def _zone_fails(pv: PersistentVolume, labels: dict[str, str]) -> str | None:
    """VolumeZone for one bound PV: each zone/region label it carries (values joined by `__`) names the node's."""
    for k in ZONE_KEYS:
        value = pv.metadata.labels.get(k)
        parts = [x.strip() for x in value.split("__")] if value is not None else []
        if not parts or not all(parts):
            continue
        have = labels.get(k)
        if have is None and k.startswith("failure-domain."):
            have = labels.get("topology.kubernetes.io/" + k.rsplit("/", 1)[1])
        if have not in parts:
            return f"node(s) had no available volume zone ({k} of PV {pv.metadata.name})"
    return None


class Volumes:
    """The volume filters' state: users per claim, attached volumes per node, and the node of each delayed
    claim's first user in the replay; `bindings` (claim → PV or DYNAMIC) are the plan's, checked once."""

    def __init__(self, index: ClusterIndex, labels: list[dict[str, str]], names: list[str]) -> None:
        self.claims = Claims(index)
        self.labels, self.names = labels, names
        csinodes = {c.metadata.name: c for c in index.snapshot.csinodes}
        self.csinode = [csinodes.get(name) for name in names]
        self.bindings: dict[str, str] = {}
        self.limits: dict[int, dict[str, int]] = {}
        self.limit_key: dict[str, str] = {}  # attachable volume → its driver's limit key
        self.reset()

    def reset(self) -> None:
        self.users: Counter[str] = Counter()  # claim → pods on nodes using it
        self.attached: list[Counter[str]] = [Counter() for _ in self.names]  # node → volume handle → pods
        self.claim_node: dict[str, int] = {}  # delayed claim → node of its first user in the replay

    def handles(self, pod: Pod, n: int) -> dict[str, str]:
        """{attachable volume `driver/handle`: its limit key} for the pod's volumes on node n."""
        has_csinode = self.csinode[n] is not None
        out: dict[str, str] = {}
        claims = {v.name: (key, pvc) for v, key, pvc in self.claims.of(pod)}
        for v in pod.spec.volumes:
            if v.name not in claims:
                driver, handle = _inline_handle(v, has_csinode)
            elif claims[v.name][1] is None:
                continue
            else:
                driver, handle = self._claim_handle(*claims[v.name], has_csinode)
            if driver and handle:
                out[f"{driver}/{handle}"] = limit_key(driver)
        return out

    def _claim_handle(self, key: str, pvc: PersistentVolumeClaim, has_csinode: bool) -> tuple[str, str]:
        """A claim's bound PV, or for an unbound claim one volume from its class's provisioner."""
        pv = self.claims.pvs.get(pvc.spec.volume_name) if pvc.spec.volume_name else None
        if pv is not None:
            return _pv_handle(pv, has_csinode)
        sc = self.claims.classes.get(class_of(pvc))
        if sc is None:
            return "", ""
        driver = sc.provisioner
        if driver in MIGRATED:
            driver = MIGRATED[driver] if has_csinode else ""
        return driver, f"(claim {key})"

    def node_limits(self, n: int, alloc: dict[str, int]) -> dict[str, int]:
        """Limit key → volume count limit on node n: the node's allocatable, overridden by its CSINode."""
        hit = self.limits.get(n)
        if hit is None:
            hit = {k: v for k, v in alloc.items() if k.startswith(ATTACH_PREFIX)}
            cn = self.csinode[n]
            for d in cn.spec.drivers if cn is not None else ():
                if d.allocatable is not None and d.allocatable.get("count") is not None:
                    hit[limit_key(d.name)] = int(d.allocatable["count"])
            self.limits[n] = hit
        return hit

    def add(self, p: CompiledPod, n: int, sign: int) -> None:
        pod = p.pod
        for _, key, pvc in self.claims.of(pod):
            self.users[key] += sign
            if sign > 0 and pvc is not None and key not in self.claim_node and self.claims.delayed(pvc):
                self.claim_node[key] = n
        for h, lkey in self.handles(pod, n).items():
            self.attached[n][h] += sign
            self.limit_key[h] = lkey

    def check(self, p: CompiledPod, n: int, on_node: dict[str, CompiledPod], alloc: dict[str, int]
              ) -> tuple[str, str] | None:
        """The first volume filter that rejects `p` on node n (pods `on_node` there, allocatable `alloc`)."""
        claims = self.claims.of(p.pod)
        fail = self.restrictions_fail(p, claims, on_node)
        if fail is None:
            fail = self.limits_fail(p.pod, n, alloc)
        if fail is None:
            fail = self.binding_fails(n, claims)
        if fail is None:
            fail = self.zone_fails(n, claims)
        return fail

    def restrictions_fail(self, p: CompiledPod, claims: list[Claim], on_node: dict[str, CompiledPod]
                          ) -> tuple[str, str] | None:
        pod = p.pod
        disks = [v for v in pod.spec.volumes if v.gce_persistent_disk or v.aws_elastic_block_store or v.iscsi or v.rbd]
        for q in on_node.values():
            if disks and q.pod.spec.volumes and any(disks_conflict(a, b) for a in disks for b in q.pod.spec.volumes):
                return "VolumeRestrictions", f"node(s) had no available disk (a volume {q.key} mounts read-write)"
        for v, key, pvc in claims:
            if v.persistent_volume_claim is not None and pvc is not None and RWOP in pvc.spec.access_modes \
                    and self.users[key] > 0:
                return "VolumeRestrictions", f"ReadWriteOncePod claim {key} is already used by another pod"
        return None

    def limits_fail(self, pod: Pod, n: int, alloc: dict[str, int]) -> tuple[str, str] | None:
        limits = self.node_limits(n, alloc)
        if not limits:
            return None
        fresh: Counter[str] = Counter(k for h, k in self.handles(pod, n).items() if self.attached[n][h] <= 0)
        for lkey, want in fresh.items():
            if lkey in limits:
                have = sum(1 for h, c in self.attached[n].items() if c > 0 and self.limit_key[h] == lkey)
                if have + want > limits[lkey]:
                    return "NodeVolumeLimits", (f"node(s) exceed max volume count ({lkey}: {have} attached + "
                                                f"{want} new > {limits[lkey]})")
        return None

    def binding_fails(self, n: int, claims: list[Claim]) -> tuple[str, str] | None:
        for _, key, pvc in claims:
            if pvc is None:
                return "VolumeBinding", f"persistentvolumeclaim {key} not found"
            if pvc.status.get("phase") == "Lost" or pvc.metadata.deletion_timestamp is not None:
                return "VolumeBinding", f"persistentvolumeclaim {key} is lost or being deleted"
            why = self._bound_fails(key, pvc, n) if self.claims.fully_bound(pvc) else self._unbound_fails(key, pvc, n)
            if why is not None:
                return "VolumeBinding", why
        return None

    def _bound_fails(self, key: str, pvc: PersistentVolumeClaim, n: int) -> str | None:
        pv = self.claims.pvs.get(pvc.spec.volume_name)
        if pv is None:
            return f"claim {key} is bound to a missing PersistentVolume"
        if not pv_allows(pv, self.labels[n]):
            return f"node(s) had volume node affinity conflict (claim {key})"
        return None

    def _unbound_fails(self, key: str, pvc: PersistentVolumeClaim, n: int) -> str | None:
        labels = self.labels[n]
        if not self.claims.delayed(pvc):
            return f"pod has unbound immediate PersistentVolumeClaims ({key})"
        selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
        if selected is not None and selected != self.names[n]:
            return f"claim {key} is being provisioned on node {selected}"
        what = self.bindings.get(key)
        if what is None:
            return f"claim {key} is unbound and the plan binds it to no PersistentVolume"
        if what == DYNAMIC:
            first = self.claim_node.get(key)
            if first is not None and first != n:
                return f"claim {key} is provisioned on node {self.names[first]}"
            sc = self.claims.classes.get(class_of(pvc))
            if sc is not None and not topology_allows(sc.allowed_topologies, labels):
                return f"claim {key}: class {sc.metadata.name} cannot provision on this node"
            return None
        pv = self.claims.pvs.get(what)
        if pv is not None and not pv_allows(pv, labels):
            return f"node(s) had volume node affinity conflict (claim {key}, PV {what})"
        return None

    def zone_fails(self, n: int, claims: list[Claim]) -> tuple[str, str] | None:
        """VolumeZone, for claims bound in the state (PVC sources only)."""
        labels = self.labels[n]
        if not any(k in labels for k in ZONE_KEYS):
            return None
        for v, _, pvc in claims:
            if v.persistent_volume_claim is None or pvc is None or not pvc.spec.volume_name:
                continue
            pv = self.claims.pvs.get(pvc.spec.volume_name)
            why = _zone_fails(pv, labels) if pv is not None else None
            if why is not None:
                return "VolumeZone", why
        return None
