"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable, on the node.

PreFilter (kube's `podHasPVCs`, `GetPodVolumeClaims`, `GetEligibleNodes`):
- a pod without PVC-backed volumes (PVC sources or generic ephemeral volumes) is skipped;
- a missing claim, a claim in phase Lost, a claim being deleted, or an ephemeral claim another owner holds
  rejects the pod (UnschedulableAndUnresolvable, kube's message);
- a claim that is not fully bound and is not a WaitForFirstConsumer claim without `volumeName` (an
  Immediate claim, a claim of a missing class, a pre-bound claim) is "unbound immediate":
  UnschedulableAndUnresolvable "pod has unbound immediate PersistentVolumeClaims";
- nothing narrows the nodes (kube 1.36's PreFilter returns no node subset).
A claim that Reserve gave a PV earlier in the run is bound to it from then on (kube's assume cache).
Filter (`FindPodVolumes`), per node, UnschedulableAndUnresolvable with every reason that applies, in order:
1. "node(s) didn't match PersistentVolume's node affinity": a bound claim's PV node affinity rejects the node;
2. "node(s) didn't find available persistent volumes to bind": a delayed claim already has a selected node
   (annotation, or assumed earlier in the run) that is another node; or some delayed claim has no matching
   PV (`claims.find_matching_pv`, claims taken smallest request first, a PV serving one claim only) and
   cannot be provisioned here (its class has no provisioner or `kubernetes.io/no-provisioner`, or the
   node's labels fail the class's allowedTopologies);
3. "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)".
Storage capacity (CSIStorageCapacity) is not modelled: provisioning always has room.
Score: kube's default feature gates leave the scorer off (StorageCapacityScoring is alpha), so PreScore is
Skip and the plugin adds 0. Reserve (`reserve`) records the PV each delayed claim takes, or the node a
provisioned claim is given, in the ClusterState, as kube's AssumePodVolumes does in its assume cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from kplace.models.index import ClusterIndex, PodInfo
from kplace.models.k8s import PersistentVolume, PersistentVolumeClaim

from ...framework import Code, CycleState, FilterResult, Plugin, PreFilterResult
from ...framework.state import ClusterState
from .claims import (
    ANN_SELECTED_NODE,
    DYNAMIC,
    NOT_SUPPORTED_PROVISIONER,
    ClaimUse,
    candidate_pvs,
    catalog,
    claim_class,
    is_fully_bound,
    pod_claims,
    pv_affinity_mask,
    storage_request,
    topology_terms_match,
)

NAME = "VolumeBinding"
REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@dataclass
class PodVolumeClaims:
    """A pod's claims split as kube's binder splits them."""

    bound: list[ClaimUse] = field(default_factory=list)
    delayed: list[ClaimUse] = field(default_factory=list)
    assumed: dict[str, str] = field(default_factory=dict)  # bound claims' PV names that Reserve gave (claim key)
    immediate: list[ClaimUse] = field(default_factory=list)
    error: str | None = None


def classify_claims(index: ClusterIndex, pod: PodInfo, state: ClusterState | None = None) -> PodVolumeClaims | None:
    """None for a pod without PVC-backed volumes; else its claims split into bound / delayed / immediate,
    or the first error kube's `podHasPVCs` would report. With `state`, a delayed claim Reserve gave a PV is
    bound to it."""
    uses = pod_claims(index, pod.pod, pending=True)
    if not uses:
        return None
    out = PodVolumeClaims()
    for u in uses:
        if u.error is not None:
            out.error = u.error
            return out
        pvc = u.pvc
        assert pvc is not None
        if pvc.status.get("phase") == "Lost":
            out.error = f'persistentvolumeclaim "{u.name}" bound to non-existent persistentvolume ' \
                        f'"{pvc.spec.volume_name}"'
            return out
        if pvc.metadata.deletion_timestamp is not None:
            out.error = f'persistentvolumeclaim "{u.name}" is being deleted'
            return out
    classes = catalog(index).classes
    reserved = {key: pv for pv, key in state.pv_claims.items()} if state is not None and state.pv_claims else {}
    for u in uses:
        pvc = u.pvc
        if is_fully_bound(pvc):
            out.bound.append(u)
            continue
        if u.key in reserved:
            out.bound.append(u)
            out.assumed[u.key] = reserved[u.key]
            continue
        sc = classes.get(claim_class(pvc))
        delayed = sc is not None and sc.volume_binding_mode == "WaitForFirstConsumer"
        (out.delayed if delayed and not pvc.spec.volume_name else out.immediate).append(u)
    return out


def selected_node(state: ClusterState, use: ClaimUse) -> str | None:
    sn = state.pvc_selected_node.get(use.key)
    return sn if sn is not None else use.pvc.metadata.annotations.get(ANN_SELECTED_NODE)


def provisionable(index: ClusterIndex, pvc: PersistentVolumeClaim, node: int) -> bool:
    """checkVolumeProvisions for one claim: the class provisions, and allows the node's topology."""
    sc = catalog(index).classes.get(claim_class(pvc))
    if sc is None or not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
        return False
    return topology_terms_match(sc.allowed_topologies, index.node_labels[node])


@dataclass
class NodeVolumes:
    """FindPodVolumes on one node: the reasons it fails, the PV each delayed claim takes, the claims to
    provision (keys)."""

    reasons: list[str]
    bindings: dict[str, str]
    provisions: list[str]


def find_pod_volumes(state: ClusterState, claims: PodVolumeClaims, node: int,
                     cands: dict[str, tuple[PersistentVolume | None, list[PersistentVolume]]] | None = None
                     ) -> NodeVolumes:
    """kube's FindPodVolumes for one node (pure given the state). `cands` caches `candidate_pvs` per claim."""
    index = state.index
    pvs = catalog(index).pvs
    bound_ok, found = True, True
    for u in claims.bound:
        pv = pvs.get(claims.assumed.get(u.key) or u.pvc.spec.volume_name)
        if pv is None:
            found = False
            break
        if not pv_affinity_mask(index, pv)[node]:
            bound_ok = False
            break
    unbound_ok = True
    bindings: dict[str, str] = {}
    provisions: list[str] = []
    if claims.delayed:
        name = index.node_names[node]
        to_find, to_provision = [], []
        for u in claims.delayed:
            sn = selected_node(state, u)
            if sn is None:
                to_find.append(u)
            elif sn != name:
                unbound_ok = False
                break
            else:
                to_provision.append(u)
        if unbound_ok:
            chosen: set[str] = set()
            for u in sorted(to_find, key=lambda c: storage_request(c.pvc)):
                bound_pv, pv_list = cands[u.key] if cands and u.key in cands else candidate_pvs(index, u.pvc, state)
                pick = None
                if bound_pv is not None and bound_pv.metadata.name not in chosen:
                    pick = bound_pv.metadata.name if pv_affinity_mask(index, bound_pv)[node] else None
                else:
                    pick = next((pv.metadata.name for pv in pv_list if pv.metadata.name not in chosen
                                 and pv_affinity_mask(index, pv)[node]), None)
                if pick is None:
                    unbound_ok = False
                    to_provision.append(u)
                else:
                    chosen.add(pick)
                    bindings[u.key] = pick
            if to_provision:
                unbound_ok = all(provisionable(index, u.pvc, node) for u in to_provision)
                if unbound_ok:
                    provisions = [u.key for u in to_provision]
    reasons = []
    if not bound_ok:
        reasons.append(REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(REASON_BIND_CONFLICT)
    if not found:
        reasons.append(REASON_PV_NOT_EXIST)
    return NodeVolumes(reasons, bindings if not reasons else {}, provisions if not reasons else [])


def reserve(state: ClusterState, pod: PodInfo, node: int) -> dict[str, str]:
    """kube's Reserve (AssumePodVolumes): after `pod` is assumed on `node`, record the PV each delayed claim
    takes and the node each provisioned claim is given; returns {claim key: PV name or DYNAMIC}."""
    claims = classify_claims(state.index, pod, state)
    if claims is None or claims.error or claims.immediate or not claims.delayed:
        return {}
    got = find_pod_volumes(state, claims, node)
    if got.reasons:
        return {}
    name = state.index.node_names[node]
    out: dict[str, str] = {}
    for key, pv in got.bindings.items():
        if state.pv_claims.get(pv) != key:  # a PV reserved to this claim earlier in the run is not new
            state.pv_claims[pv] = key
            out[key] = pv
    for key in got.provisions:
        if state.pvc_selected_node.get(key) != name:
            state.pvc_selected_node[key] = name
            out[key] = DYNAMIC
    return out


class VolumeBinding(Plugin):
    name = NAME

    def pre_filter(self, state: ClusterState, pod, cycle: CycleState) -> PreFilterResult:
        claims = classify_claims(state.index, pod, state)
        if claims is None:
            return PreFilterResult.skip()
        if claims.error is not None:
            return PreFilterResult(UU, claims.error)
        if claims.immediate:
            return PreFilterResult(UU, REASON_UNBOUND_IMMEDIATE)
        cycle[NAME] = (claims, {u.key: candidate_pvs(state.index, u.pvc, state) for u in claims.delayed})
        return PreFilterResult()

    def filter_reads(self, state: ClusterState, pod, cycle: CycleState, other) -> bool:
        """Only pods with volumes count (reserved volumes)."""
        return bool(other.pod.spec.volumes)

    def filter(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        got = cycle.get(NAME)
        if got is None:
            pre = self.pre_filter(state, pod, CycleState())
            if pre.code != Code.SUCCESS:
                return FilterResult.success(len(nodes))
            got = (classify_claims(state.index, pod, state), None)
        claims, cands = got
        code = np.zeros(len(nodes), dtype=np.int8)
        masks: dict[str, np.ndarray] = {}
        for i, n in enumerate(np.asarray(nodes).tolist()):
            reasons = find_pod_volumes(state, claims, n, cands).reasons
            if reasons:
                code[i] = UU
                for r in reasons:
                    masks.setdefault(r, np.zeros(len(nodes), dtype=bool))[i] = True
        return FilterResult(code, list(masks.items()))

    def pre_score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> bool:
        return False  # the scorer needs the StorageCapacityScoring feature gate (alpha, off by default)

    def score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        return np.zeros(len(nodes), dtype=np.int64)


PLUGINS = [VolumeBinding]
