"""The state's storage objects as the volume filters read them, and the check of the plan's claim bindings.

A claim of a pod is a PVC source, or a generic ephemeral volume's claim `<pod>-<volume>` (for a pending pod
whose claim does not exist yet, the one the ephemeral volume controller would create from the template, in
the default StorageClass when it names none). A claim is *delayed* when its class binds WaitForFirstConsumer
and it has no volume yet: only those may the plan bind (`Placement.volume_bindings`), to `(dynamic)` when its
class provisions, or to an existing PV that matches it and serves no other claim.
"""

from __future__ import annotations

from kplace.models.index import ClusterIndex
from kplace.models.k8s import PersistentVolume, PersistentVolumeClaim, Pod, Volume
from kplace.models.plan import DYNAMIC, Placement
from kplace.models.selectors import selector_matches

from .violation import Violation

ANN_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")

Claim = tuple[Volume, str, PersistentVolumeClaim | None]  # (volume, claim key, the claim if it exists)


def class_of(obj: PersistentVolumeClaim | PersistentVolume) -> str:
    """The storage class: the beta annotation, else `spec.storageClassName` ("" for none)."""
    ann = obj.metadata.annotations.get(ANN_CLASS)
    return ann if ann is not None else (obj.spec.storage_class_name or "")


def _storage(q) -> int:
    return int(q) if q is not None else 0


def _pv_claim_fails(key: str, pvc: PersistentVolumeClaim, pv: PersistentVolume) -> str | None:
    """Why an unclaimed, Available PV cannot serve the claim: class, selector, access modes, attributes class."""
    if pv.status.get("phase", "Available") != "Available":
        return f"it is {pv.status.get('phase')}, not Available"
    if class_of(pv) != class_of(pvc):
        return f"its class {class_of(pv)!r} is not the claim's {class_of(pvc)!r}"
    if pvc.spec.selector is not None and not selector_matches(pvc.spec.selector, pv.metadata.labels):
        return "its labels do not match the claim's selector"
    if not set(pvc.spec.access_modes) <= set(pv.spec.access_modes):
        return "it lacks an access mode the claim asks for"
    if (pv.spec.volume_attributes_class_name or "") != (pvc.spec.volume_attributes_class_name or ""):
        return "its VolumeAttributesClass differs from the claim's"
    return None


class Claims:
    """Claims, PVs and StorageClasses of the state, by key; `taken` maps a PV to the claim naming it."""

    def __init__(self, index: ClusterIndex) -> None:
        snap = index.snapshot
        self.pvcs = {f"{c.metadata.namespace}/{c.metadata.name}": c for c in snap.pvcs}
        self.pvs = {pv.metadata.name: pv for pv in snap.pvs}
        self.classes = {sc.metadata.name: sc for sc in snap.storage_classes}
        marked = sorted((sc for sc in snap.storage_classes
                         if "true" in (sc.metadata.annotations.get(a) for a in DEFAULT_CLASS_ANNOTATIONS)),
                        key=lambda sc: (-(sc.metadata.creation_timestamp.timestamp()
                                          if sc.metadata.creation_timestamp else 0), sc.metadata.name))
        self.default_class = marked[0].metadata.name if marked else None
        self.taken = {c.spec.volume_name: k for k, c in self.pvcs.items() if c.spec.volume_name}

    def of(self, pod: Pod) -> list[Claim]:
        """(volume, claim key, claim) for each PVC-backed volume of the pod."""
        ns, out = pod.metadata.namespace, []
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is not None:
                key = f"{ns}/{v.persistent_volume_claim.claim_name}"
                out.append((v, key, self.pvcs.get(key)))
            elif v.ephemeral is not None:
                key = f"{ns}/{pod.metadata.name}-{v.name}"
                out.append((v, key, self._ephemeral(pod, v, key)))
        return out

    def _ephemeral(self, pod: Pod, v: Volume, key: str) -> PersistentVolumeClaim | None:
        """A generic ephemeral volume's claim: the existing one if the pod owns it, else (pending pod) the one
        the controller would create."""
        pvc = self.pvcs.get(key)
        if pvc is None and not pod.spec.node_name:
            tmpl = v.ephemeral.volume_claim_template or {}
            pvc = PersistentVolumeClaim.model_validate({"metadata": {"name": key.split("/", 1)[1],
                                                                     "namespace": pod.metadata.namespace},
                                                        "spec": tmpl.get("spec") or {}})
            if pvc.spec.storage_class_name is None:
                pvc.spec.storage_class_name = self.default_class
        elif pvc is not None and not any(o.controller and o.kind == "Pod" and o.name == pod.metadata.name
                                         for o in pvc.metadata.owner_references):
            pvc = None
        return pvc

    @staticmethod
    def fully_bound(pvc: PersistentVolumeClaim) -> bool:
        return bool(pvc.spec.volume_name) and (ANN_BIND_COMPLETED in pvc.metadata.annotations
                                               or pvc.status.get("phase") == "Bound")

    def delayed(self, pvc: PersistentVolumeClaim) -> bool:
        sc = self.classes.get(class_of(pvc))
        return sc is not None and sc.volume_binding_mode == "WaitForFirstConsumer" and not pvc.spec.volume_name

    def pv_mismatch(self, key: str, pvc: PersistentVolumeClaim, pv: PersistentVolume) -> str | None:
        """Why `pv` cannot be bound to claim `key`, or None. A PV whose claimRef names the claim needs only
        capacity and volume mode; any other must also be Available and match the claim."""
        ref = pv.spec.claim_ref or {}
        ns, _, name = key.partition("/")
        mine = ref.get("name") == name and ref.get("namespace") == ns and \
            (not ref.get("uid") or ref.get("uid") == (pvc.metadata.uid or ""))
        if ref and not mine:
            return f"it is bound to claim {ref.get('namespace')}/{ref.get('name')}"
        if self.taken.get(pv.metadata.name, key) != key:
            return f"claim {self.taken[pv.metadata.name]} names it as its volume"
        if pv.metadata.deletion_timestamp is not None:
            return "it is being deleted"
        if _storage(pv.spec.capacity.get("storage")) < _storage(pvc.spec.resources.requests.get("storage")):
            return "its capacity is smaller than the claim's request"
        if (pv.spec.volume_mode or "Filesystem") != (pvc.spec.volume_mode or "Filesystem"):
            return "its volume mode differs from the claim's"
        return None if mine else _pv_claim_fails(key, pvc, pv)

    def binding_fails(self, pvc: PersistentVolumeClaim, what: str, serving: dict[str, str], key: str) -> str | None:
        """Why the plan may not bind delayed claim `key` to `what` (a PV or DYNAMIC); `serving` records which
        claim each PV named so far serves."""
        if what == DYNAMIC:
            sc = self.classes.get(class_of(pvc))
            if sc is None or not sc.provisioner or sc.provisioner == NO_PROVISIONER:
                return f"its class {class_of(pvc)!r} cannot provision volumes"
            return None
        pv = self.pvs.get(what)
        if pv is None:
            return f"no PersistentVolume {what!r} in the state"
        if what in serving:
            return f"PersistentVolume {what} already serves claim {serving[what]}"
        serving[what] = key
        why = self.pv_mismatch(key, pvc, pv)
        return None if why is None else f"PersistentVolume {what} does not match: {why}"

    def check_bindings(self, placements: list[tuple[Placement, Pod]]) -> tuple[list[Violation], dict[str, str]]:
        """Each new binding names a claim of its pod that the plan may bind, and a PV that matches it and serves
        no other claim. Returns the violations and the bindings (claim → PV or DYNAMIC) the replay uses."""
        out: list[Violation] = []
        serving: dict[str, str] = {}
        bindings: dict[str, str] = {}
        for pl, pod in placements:
            mine = {key: pvc for _, key, pvc in self.of(pod)}
            for key, what in pl.volume_bindings.items():
                pvc = mine.get(key)
                if pvc is None:
                    why = "the pod does not use this claim" if key not in mine else "the claim does not exist"
                elif key in bindings:
                    why = "the plan binds it more than once"
                elif not self.delayed(pvc) or self.fully_bound(pvc):
                    why = "it is not an unbound WaitForFirstConsumer claim, so the plan cannot bind it"
                else:
                    bindings[key] = what
                    why = self.binding_fails(pvc, what, serving, key)
                if why is not None:
                    out.append(Violation(pl.pod, pl.node, "VolumeBinding", f"claim {key}: {why}"))
        return out, bindings
