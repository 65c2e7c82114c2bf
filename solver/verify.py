"""The independent verifier: does a plan respect kube-scheduler's predicates against the state it was made for?

This module shares nothing with the engines: it imports neither the CP-SAT encoding (`solver/cpsat`) nor the
plugins (`solver/plugins`, `solver/framework`). It reads the pydantic objects and uses only the pure kube
predicates of `kplace.models` (label and node selectors, tolerations, pod requests and host ports). Every
rule is re-stated here from kube-scheduler's semantics (reference §2), as plainly as possible.

Checks:
1. Each placement names a pending pod of the state (at most once) and, when placed, an existing node.
2. Each eviction names a pod bound to that node with strictly lower priority than its preemptor, which the
   plan places on that node; no eviction may take a PodDisruptionBudget below zero (PDBs in the victim's
   namespace whose non-empty selector matches it; budget `snapshot.pdb_disruptions_allowed`, one per
   eviction) unless the user allowed it and the plan says that eviction violates one.
3. Gangs (PodGroups with a gang policy): the plan places none of a gang's pods, or enough to reach its minCount
   with those still running, all in one domain of its topology key when it has one.
4. Replay. The state starts as the bound pods. The plan's placed pods are bound in plan order, as a fixpoint:
   each sweep binds every not-yet-bound pod whose checks pass against the current state, until a sweep binds
   nothing; the pods left are violations, each with the last rule it failed. Binding a pod can also take a
   chance away (a pod matching a group's affinity terms disables kube's first-pod rule for it), so when pods
   are left failing InterPodAffinity that could seed their group, the replay is retried with each of them
   (up to SEED_TRIES, kept when it helps) bound first. An accepted plan therefore always has an order in
   which every pod passes kube's filters at its binding time (greedy plans pass in plan order; CP-SAT plans
   describe a final state and may need another order); the search for that order is best-effort, not
   exhaustive, for rules that binding can make worse (spread skew, the first-pod rule). A preemptor's victims
   leave the state when the preemptor binds (as kube's preemption does), so pods bound earlier saw them.
   Per pod, in kube's filter order: SchedulingGates, NodeUnschedulable, NodeName, TaintToleration,
   NodeAffinity, NodePorts, NodeResourcesFit, VolumeRestrictions (inline GCE PD / EBS / iSCSI / RBD volumes
   mounted read-write by a pod on the node; a ReadWriteOncePod claim another placed pod uses), NodeVolumeLimits
   (per CSI driver, unique volumes attached on the node plus the pod's new ones within the CSINode's
   `allocatable.count`), VolumeBinding (claims bound in the state: their PV's node affinity; claims the plan
   binds: the PV's node affinity, or for `(dynamic)` the class's allowedTopologies, and every user of a claim
   where its first user's binding allows — one node for a local or provisioned volume; any other unbound claim
   fails), VolumeZone (bound PVs' zone/region labels), PodTopologySpread (DoNotSchedule), InterPodAffinity
   (required affinity with the first-pod rule, required anti-affinity both ways).
5. Volume bindings (`Placement.volume_bindings`), once: each names a claim of its pod that is an unbound
   WaitForFirstConsumer claim, bound by one placement only, to `(dynamic)` (a class that provisions) or to an
   existing PV that serves no other claim and matches it (capacity, volume mode, not being deleted, and unless
   its claimRef already names the claim: Available, the claim's class, selector, access modes and
   VolumeAttributesClass).

Not checked: DynamicResources, storage capacity for provisioning, and anything a custom
KubeSchedulerConfiguration changes (disabled filters, ignoredResources, hard default spread constraints): the
verifier always applies kube's default profile.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kplace.models.errors import InputError
from kplace.models.index import ClusterIndex
from kplace.models.io import parse_json
from kplace.models.k8s import (
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    Taint,
    Volume,
)
from kplace.models.plan import DYNAMIC, Eviction, Move, Placement, Plan
from kplace.models.quantity import canonical
from kplace.models.requests import host_ports, pod_requests
from kplace.models.selectors import Selector, node_term_matches, required_node_affinity_matches, selector_matches
from kplace.models.snapshot import gangs
from kplace.models.tolerations import tolerated_by_any

HARD_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
NATIVE = ("cpu", "memory", "ephemeral-storage")
SEED_TRIES = 20  # replays that move a possible first-pod-rule seed to the front


@dataclass
class Violation:
    pod: str
    node: str | None
    rule: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- loading a plan -------------------------------------------------------------------------------


def _want(cond: bool, path: str, where: str, what: str) -> None:
    if not cond:
        raise InputError(what, source=path, field=where)


def _strings(obj: dict, names: tuple[str, ...], src: str, at: str) -> None:
    for name in names:
        _want(isinstance(obj.get(name), str) and obj[name] != "", src, f"{at}.{name}", "must be a non-empty string")


def load_plan(path: str | Path) -> Plan:
    """Read the JSON `kplace schedule --output json` writes. Bad files raise InputError naming file and field."""
    src = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the plan: {exc.strerror or exc}", source=src) from None
    except UnicodeDecodeError:
        raise InputError("the plan is not UTF-8 text", source=src) from None
    data = parse_json(text, src)
    _want(isinstance(data, dict), src, "", "a plan is a JSON object with `placements`")
    _want("placements" in data, src, "placements", "missing")
    engine = data.get("engine", "unknown")
    _want(isinstance(engine, str), src, "engine", "must be a string")
    plan = Plan(engine=engine)
    raw = data["placements"]
    _want(isinstance(raw, list), src, "placements", "must be a list")
    for i, p in enumerate(raw):
        at = f"placements[{i}]"
        _want(isinstance(p, dict), src, at, "must be an object with `pod` and `node`")
        pod, node = p.get("pod"), p.get("node")
        _want(isinstance(pod, str) and "/" in pod, src, f"{at}.pod", "must be a string `namespace/name`")
        _want("node" in p, src, f"{at}.node", "missing (null for an unplaced pod)")
        _want(node is None or (isinstance(node, str) and node != ""), src, f"{at}.node",
              "must be a node name or null")
        reason = p.get("reason")
        _want(reason is None or isinstance(reason, str), src, f"{at}.reason", "must be a string or null")
        nominated = p.get("nominated", False)
        _want(isinstance(nominated, bool), src, f"{at}.nominated", "must be true or false")
        vb = p.get("volume_bindings", {})
        _want(isinstance(vb, dict) and all(isinstance(k, str) and "/" in k and isinstance(v, str) and v
                                           for k, v in vb.items()), src, f"{at}.volume_bindings",
              "must map claims `namespace/name` to a PV name or \"(dynamic)\"")
        plan.placements.append(Placement(pod, node, reason, 0, nominated, dict(vb)))
    raw = data.get("evictions", [])
    _want(isinstance(raw, list), src, "evictions", "must be a list")
    for i, e in enumerate(raw):
        at = f"evictions[{i}]"
        _want(isinstance(e, dict), src, at, "must be an object with `pod`, `node` and `preemptor`")
        _strings(e, ("pod", "node", "preemptor"), src, at)
        prio = e.get("priority", 0)
        _want(isinstance(prio, int) and not isinstance(prio, bool), src, f"{at}.priority", "must be an integer")
        pdb = e.get("pdb_violation", False)
        _want(isinstance(pdb, bool), src, f"{at}.pdb_violation", "must be true or false")
        plan.evictions.append(Eviction(e["pod"], e["node"], e["preemptor"], prio, pdb))
    raw = data.get("moves", [])
    _want(isinstance(raw, list), src, "moves", "must be a list")
    for i, m in enumerate(raw):
        at = f"moves[{i}]"
        _want(isinstance(m, dict), src, at, "must be an object with `pod`, `from`, `to` and `wave`")
        _strings(m, ("pod", "from", "to"), src, at)
        wave = m.get("wave", 1)
        _want(isinstance(wave, int) and not isinstance(wave, bool) and wave >= 1, src, f"{at}.wave",
              "must be an integer ≥ 1")
        admits = m.get("admits", [])
        _want(isinstance(admits, list) and all(isinstance(a, str) for a in admits), src, f"{at}.admits",
              "must be a list of `namespace/name`")
        plan.moves.append(Move(m["pod"], m["from"], m["to"], wave, list(admits)))
    return plan


# --- the objects the replay works on --------------------------------------------------------------


@dataclass(eq=False)
class _Pod:
    key: str
    pod: Pod
    ns: str
    labels: dict[str, str]
    priority: int
    requests: dict[str, int]
    ports: list[tuple[str, str, int]]
    terminating: bool


def _pod(pod: Pod) -> _Pod:
    m = pod.metadata
    return _Pod(f"{m.namespace}/{m.name}", pod, m.namespace, m.labels, pod.spec.priority or 0, pod_requests(pod),
                host_ports(pod), m.deletion_timestamp is not None)


@dataclass(frozen=True)
class _Term:
    """A required pod (anti-)affinity term: namespaces ∪ namespaceSelector, label selector, topology key."""

    names: frozenset[str]
    ns_selector: Selector
    selector: Selector
    key: str


def _term(owner: _Pod, t: PodAffinityTerm) -> _Term:
    """Namespaces default to the owner's; matchLabelKeys / mismatchLabelKeys merge into the label selector
    (`key In / NotIn [owner's value]`, for keys the owner carries), as the API server does on creation."""
    own = not t.namespaces and t.namespace_selector is None
    sel = t.label_selector
    if sel is not None and (t.match_label_keys or t.mismatch_label_keys):
        extra = [LabelSelectorRequirement(key=k, operator=op, values=[owner.labels[k]])
                 for keys, op in ((t.match_label_keys, "In"), (t.mismatch_label_keys, "NotIn"))
                 for k in keys if k in owner.labels]
        sel = LabelSelector(match_labels=sel.match_labels, match_expressions=[*sel.match_expressions, *extra])
    names = frozenset([owner.ns]) if own else frozenset(t.namespaces)
    return _Term(names, Selector(t.namespace_selector), Selector(sel), t.topology_key)


def _required(pod: Pod, anti: bool) -> list[PodAffinityTerm]:
    a = pod.spec.affinity
    pa = (a.pod_anti_affinity if anti else a.pod_affinity) if a else None
    return pa.required_during_scheduling_ignored_during_execution if pa else []


@dataclass(frozen=True)
class _Spread:
    max_skew: int
    key: str
    selector: Selector
    min_domains: int
    eligibility: tuple  # hashable description of the eligible nodes


class _Count:
    """Pods matching `match`, per value of node label `key`, over the `eligible` nodes (which must carry `key`).

    Kept current from the state's event logs (appended on every bind and eviction), lazily: each query first
    applies the events it has not seen. `sources` names the logs to read: the global log (None), or, when the
    matcher can only select pods of some namespaces carrying some label `k=v`, the per-(namespace, k, v) logs
    (a pure pre-filter: `match` still decides). `low` is the minimum over the domains (values of eligible nodes),
    maintained through a histogram of the per-domain counts.
    """

    def __init__(self, key: str, match: Callable[[_Pod], bool], eligible: list[bool], domains: set[str],
                 sources: list[tuple | None]) -> None:
        self.key, self.match, self.eligible, self.sources = key, match, eligible, sources
        self.by_value: Counter[str] = Counter()
        self.total = 0
        self.domains = domains
        self.hist: Counter[int] = Counter({0: len(domains)})
        self.low = 0
        self.seen = dict.fromkeys(sources, 0)

    def bump(self, value: str, delta: int) -> None:
        old = self.by_value[value]
        self.by_value[value] = old + delta
        self.total += delta
        if value in self.domains:
            self.hist[old] -= 1
            self.hist[old + delta] += 1
            if delta < 0:
                self.low = min(self.low, old + delta)
            while self.hist[self.low] == 0:
                self.low += 1


# --- volumes --------------------------------------------------------------------------------------


ANN_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
RWOP = "ReadWriteOncePod"
ATTACH_PREFIX = "attachable-volumes-csi-"
MIGRATED = {"kubernetes.io/aws-ebs": "ebs.csi.aws.com", "kubernetes.io/gce-pd": "pd.csi.storage.gke.io"}
ZONE_KEYS = ("failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
             "topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def _class_of(obj: PersistentVolumeClaim | PersistentVolume) -> str:
    ann = obj.metadata.annotations.get(ANN_CLASS)
    return ann if ann is not None else (obj.spec.storage_class_name or "")


def _storage(q) -> int:
    return int(q) if q is not None else 0


def _pv_allows(pv: PersistentVolume, labels: dict[str, str]) -> bool:
    """The PV's required node affinity against the node's labels (no affinity: every node)."""
    req = (pv.spec.node_affinity or {}).get("required")
    return req is None or any(node_term_matches(t, labels, "") for t in req.node_selector_terms)


def _limit_key(driver: str) -> str:
    if len(ATTACH_PREFIX) + len(driver) < 63:
        return ATTACH_PREFIX + driver
    return ATTACH_PREFIX + driver[:23] + hashlib.sha1(driver.encode()).hexdigest()[:16]


def _disks_conflict(a: Volume, b: Volume) -> bool:
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


class _Volumes:
    """The four volume filters over the replay's state, plus the plan's claim bindings.

    A claim of a placed pod is either fully bound in the state (its PV's node affinity must hold), or a
    WaitForFirstConsumer claim without a volume that the plan binds (`volume_bindings`: a PV, or `(dynamic)`
    for provisioning on the node): the first pod of the replay that uses it binds it there; later users need
    the PV's affinity (a local PV: the same node) or, provisioned, the same node. Any other unbound claim
    keeps the pod out, as kube does ("unbound immediate").
    """

    def __init__(self, index: ClusterIndex, labels: list[dict[str, str]], names: list[str]) -> None:
        snap = index.snapshot
        self.labels, self.names = labels, names
        self.pvcs = {f"{c.metadata.namespace}/{c.metadata.name}": c for c in snap.pvcs}
        self.pvs = {pv.metadata.name: pv for pv in snap.pvs}
        self.classes = {sc.metadata.name: sc for sc in snap.storage_classes}
        csinodes = {c.metadata.name: c for c in snap.csinodes}
        self.csinode = [csinodes.get(name) for name in names]
        marked = sorted((sc for sc in snap.storage_classes if "true" in (
            sc.metadata.annotations.get("storageclass.kubernetes.io/is-default-class"),
            sc.metadata.annotations.get("storageclass.beta.kubernetes.io/is-default-class"))),
            key=lambda sc: (-(sc.metadata.creation_timestamp.timestamp() if sc.metadata.creation_timestamp else 0),
                            sc.metadata.name))
        self.default_class = marked[0].metadata.name if marked else None
        self.taken = {c.spec.volume_name: k for k, c in self.pvcs.items() if c.spec.volume_name}
        self.bindings: dict[str, str] = {}  # claim → PV or DYNAMIC, from the plan
        self.limits: dict[int, dict[str, int]] = {}
        self.limit_key: dict[str, str] = {}  # attachable volume → its driver's limit key
        self.reset()

    def reset(self) -> None:
        self.users: Counter[str] = Counter()  # claim → pods on nodes using it
        self.attached: list[Counter[str]] = [Counter() for _ in self.names]  # node → volume handle → pods
        self.claim_node: dict[str, int] = {}  # delayed claim → node of its first user in the replay

    # --- a pod's claims -------------------------------------------------------------------------------

    def claims(self, pod: Pod) -> list[tuple[Volume, str, PersistentVolumeClaim | None]]:
        """(volume, claim key, claim) for each PVC-backed volume: PVC sources and generic ephemeral volumes
        (a pending pod's missing ephemeral claim is the one the ephemeral volume controller would create)."""
        ns, out = pod.metadata.namespace, []
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is not None:
                key = f"{ns}/{v.persistent_volume_claim.claim_name}"
                out.append((v, key, self.pvcs.get(key)))
            elif v.ephemeral is not None:
                key = f"{ns}/{pod.metadata.name}-{v.name}"
                pvc = self.pvcs.get(key)
                if pvc is None and not pod.spec.node_name:
                    tmpl = v.ephemeral.volume_claim_template or {}
                    pvc = PersistentVolumeClaim.model_validate({"metadata": {"name": key.split("/", 1)[1],
                                                                             "namespace": ns},
                                                                "spec": tmpl.get("spec") or {}})
                    if pvc.spec.storage_class_name is None:
                        pvc.spec.storage_class_name = self.default_class
                elif pvc is not None and not any(o.controller and o.kind == "Pod" and o.name == pod.metadata.name
                                                 for o in pvc.metadata.owner_references):
                    pvc = None
                out.append((v, key, pvc))
        return out

    @staticmethod
    def fully_bound(pvc: PersistentVolumeClaim) -> bool:
        return bool(pvc.spec.volume_name) and (ANN_BIND_COMPLETED in pvc.metadata.annotations
                                               or pvc.status.get("phase") == "Bound")

    def delayed(self, pvc: PersistentVolumeClaim) -> bool:
        sc = self.classes.get(_class_of(pvc))
        return sc is not None and sc.volume_binding_mode == "WaitForFirstConsumer" and not pvc.spec.volume_name

    # --- the plan's bindings, checked once ------------------------------------------------------------

    def pv_mismatch(self, key: str, pvc: PersistentVolumeClaim, pv: PersistentVolume) -> str | None:
        """Why `pv` cannot be bound to claim `key`, or None."""
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
        if mine:
            return None
        if pv.status.get("phase", "Available") != "Available":
            return f"it is {pv.status.get('phase')}, not Available"
        if _class_of(pv) != _class_of(pvc):
            return f"its class {_class_of(pv)!r} is not the claim's {_class_of(pvc)!r}"
        if pvc.spec.selector is not None and not selector_matches(pvc.spec.selector, pv.metadata.labels):
            return "its labels do not match the claim's selector"
        if not set(pvc.spec.access_modes) <= set(pv.spec.access_modes):
            return "it lacks an access mode the claim asks for"
        if (pv.spec.volume_attributes_class_name or "") != (pvc.spec.volume_attributes_class_name or ""):
            return "its VolumeAttributesClass differs from the claim's"
        return None

    def check_bindings(self, placements: list[tuple[Placement, Pod]]) -> list[Violation]:
        """Each new binding names a claim of its pod that the plan may bind, and a PV that matches it and serves
        no other claim; records the bindings for the replay."""
        out: list[Violation] = []
        serving: dict[str, str] = {}
        self.bindings = {}
        for pl, pod in placements:
            mine = {key: pvc for _, key, pvc in self.claims(pod)}
            for key, what in pl.volume_bindings.items():
                def bad(msg: str, key=key, pl=pl) -> None:
                    out.append(Violation(pl.pod, pl.node, "VolumeBinding", f"claim {key}: {msg}"))

                pvc = mine.get(key)
                if pvc is None:
                    bad("the pod does not use this claim" if key not in mine else "the claim does not exist")
                    continue
                if key in self.bindings:
                    bad("the plan binds it more than once")
                    continue
                if not self.delayed(pvc) or self.fully_bound(pvc):
                    bad("it is not an unbound WaitForFirstConsumer claim, so the plan cannot bind it")
                    continue
                self.bindings[key] = what
                if what == DYNAMIC:
                    sc = self.classes.get(_class_of(pvc))
                    if sc is None or not sc.provisioner or sc.provisioner == NO_PROVISIONER:
                        bad(f"its class {_class_of(pvc)!r} cannot provision volumes")
                    continue
                pv = self.pvs.get(what)
                if pv is None:
                    bad(f"no PersistentVolume {what!r} in the state")
                    continue
                if what in serving:
                    bad(f"PersistentVolume {what} already serves claim {serving[what]}")
                    continue
                serving[what] = key
                why = self.pv_mismatch(key, pvc, pv)
                if why is not None:
                    bad(f"PersistentVolume {what} does not match: {why}")
        return out

    # --- the replay -----------------------------------------------------------------------------------

    def handles(self, pod: Pod, n: int) -> dict[str, str]:
        """{attachable volume: its limit key}: CSI PVs, in-tree EBS/GCE PDs migrated to CSI on nodes with a
        CSINode, and one volume per unbound claim from its class's provisioner."""
        has_csinode = self.csinode[n] is not None
        out: dict[str, str] = {}
        claims = {v.name: (key, pvc) for v, key, pvc in self.claims(pod)}
        for v in pod.spec.volumes:
            driver = handle = ""
            if v.name in claims:
                key, pvc = claims[v.name]
                if pvc is None:
                    continue
                pv = self.pvs.get(pvc.spec.volume_name) if pvc.spec.volume_name else None
                if pv is not None:
                    src = pv.spec
                    if src.csi is not None:
                        driver, handle = src.csi.get("driver", ""), src.csi.get("volumeHandle", "")
                    elif has_csinode and src.aws_elastic_block_store is not None:
                        driver, handle = MIGRATED["kubernetes.io/aws-ebs"], \
                            src.aws_elastic_block_store.volume_id.rsplit("/", 1)[-1]
                    elif has_csinode and src.gce_persistent_disk is not None:
                        zone = pv.metadata.labels.get("topology.kubernetes.io/zone") or \
                            pv.metadata.labels.get("failure-domain.beta.kubernetes.io/zone") or "UNSPECIFIED"
                        driver = MIGRATED["kubernetes.io/gce-pd"]
                        handle = f"projects/UNSPECIFIED/zones/{zone}/disks/{src.gce_persistent_disk.pd_name}"
                else:
                    sc = self.classes.get(_class_of(pvc))
                    if sc is not None:
                        driver = sc.provisioner
                        if driver in MIGRATED:
                            driver = MIGRATED[driver] if has_csinode else ""
                        handle = f"(claim {key})"
            elif has_csinode and v.aws_elastic_block_store is not None:
                driver = MIGRATED["kubernetes.io/aws-ebs"]
                handle = v.aws_elastic_block_store.volume_id.rsplit("/", 1)[-1]
            elif has_csinode and v.gce_persistent_disk is not None:
                driver = MIGRATED["kubernetes.io/gce-pd"]
                handle = f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{v.gce_persistent_disk.pd_name}"
            if driver and handle:
                out[f"{driver}/{handle}"] = _limit_key(driver)
        return out

    def node_limits(self, n: int, alloc: dict[str, int]) -> dict[str, int]:
        hit = self.limits.get(n)
        if hit is None:
            hit = {k: v for k, v in alloc.items() if k.startswith(ATTACH_PREFIX)}
            cn = self.csinode[n]
            for d in cn.spec.drivers if cn is not None else ():
                if d.allocatable is not None and d.allocatable.get("count") is not None:
                    hit[_limit_key(d.name)] = int(d.allocatable["count"])
            self.limits[n] = hit
        return hit

    def add(self, p: _Pod, n: int, sign: int) -> None:
        pod = p.pod
        for _, key, pvc in self.claims(pod):
            self.users[key] += sign
            if sign > 0 and pvc is not None and key not in self.claim_node and self.delayed(pvc):
                self.claim_node[key] = n
        for h, lkey in self.handles(pod, n).items():
            self.attached[n][h] += sign
            self.limit_key[h] = lkey

    def check(self, p: _Pod, n: int, on_node: dict[str, _Pod], alloc: dict[str, int]) -> tuple[str, str] | None:
        pod, labels, name = p.pod, self.labels[n], self.names[n]
        # VolumeRestrictions
        disks = [v for v in pod.spec.volumes if v.gce_persistent_disk or v.aws_elastic_block_store or v.iscsi or v.rbd]
        for q in on_node.values():
            if disks and q.pod.spec.volumes and any(_disks_conflict(a, b) for a in disks for b in q.pod.spec.volumes):
                return "VolumeRestrictions", f"node(s) had no available disk (a volume {q.key} mounts read-write)"
        claims = self.claims(pod)
        for v, key, pvc in claims:
            if v.persistent_volume_claim is not None and pvc is not None and RWOP in pvc.spec.access_modes \
                    and self.users[key] > 0:
                return "VolumeRestrictions", (f"ReadWriteOncePod claim {key} is already used by another pod")
        # NodeVolumeLimits
        limits = self.node_limits(n, alloc)
        if limits:
            fresh: Counter[str] = Counter(k for h, k in self.handles(pod, n).items() if self.attached[n][h] <= 0)
            for lkey, want in fresh.items():
                if lkey in limits:
                    have = sum(1 for h, c in self.attached[n].items() if c > 0 and self.limit_key[h] == lkey)
                    if have + want > limits[lkey]:
                        return "NodeVolumeLimits", (f"node(s) exceed max volume count ({lkey}: {have} attached + "
                                                    f"{want} new > {limits[lkey]})")
        # VolumeBinding
        for _, key, pvc in claims:
            if pvc is None:
                return "VolumeBinding", f"persistentvolumeclaim {key} not found"
            if pvc.status.get("phase") == "Lost" or pvc.metadata.deletion_timestamp is not None:
                return "VolumeBinding", f"persistentvolumeclaim {key} is lost or being deleted"
            if self.fully_bound(pvc):
                pv = self.pvs.get(pvc.spec.volume_name)
                if pv is None:
                    return "VolumeBinding", f"claim {key} is bound to a missing PersistentVolume"
                if not _pv_allows(pv, labels):
                    return "VolumeBinding", f"node(s) had volume node affinity conflict (claim {key})"
                continue
            if not self.delayed(pvc):
                return "VolumeBinding", f"pod has unbound immediate PersistentVolumeClaims ({key})"
            selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is not None and selected != name:
                return "VolumeBinding", f"claim {key} is being provisioned on node {selected}"
            what = self.bindings.get(key)
            if what is None:
                return "VolumeBinding", f"claim {key} is unbound and the plan binds it to no PersistentVolume"
            if what == DYNAMIC:
                first = self.claim_node.get(key)
                if first is not None and first != n:
                    return "VolumeBinding", f"claim {key} is provisioned on node {self.names[first]}"
                sc = self.classes.get(_class_of(pvc))
                if sc is not None and not _topology_allows(sc.allowed_topologies, labels):
                    return "VolumeBinding", f"claim {key}: class {sc.metadata.name} cannot provision on this node"
                continue
            pv = self.pvs.get(what)
            if pv is not None and not _pv_allows(pv, labels):
                return "VolumeBinding", f"node(s) had volume node affinity conflict (claim {key}, PV {what})"
        # VolumeZone (claims bound in the state; PVC sources only)
        if any(k in labels for k in ZONE_KEYS):
            for v, _, pvc in claims:
                if v.persistent_volume_claim is None or pvc is None or not pvc.spec.volume_name:
                    continue
                pv = self.pvs.get(pvc.spec.volume_name)
                for k in ZONE_KEYS if pv is not None else ():
                    value = pv.metadata.labels.get(k)
                    parts = [x.strip() for x in value.split("__")] if value is not None else []
                    if not parts or not all(parts):
                        continue
                    have = labels.get(k)
                    if have is None and k.startswith("failure-domain."):
                        have = labels.get("topology.kubernetes.io/" + k.rsplit("/", 1)[1])
                    if have not in parts:
                        return "VolumeZone", f"node(s) had no available volume zone ({k} of PV {pv.metadata.name})"
        return None


def _topology_allows(terms: list[dict], labels: dict[str, str]) -> bool:
    """A StorageClass's allowedTopologies: no terms allow every node; terms are ORed, expressions ANDed."""
    return not terms or any(all(labels.get(e.get("key")) in (e.get("values") or [])
                                for e in (t or {}).get("matchLabelExpressions") or []) for t in terms)


# --- the verifier ---------------------------------------------------------------------------------


class _Verifier:
    def __init__(self, index: ClusterIndex, allow_pdb_violations: bool = False) -> None:
        self.index = index
        self.allow_pdb_violations = allow_pdb_violations
        self.nodes: list[Node] = list(index.nodes)
        self.node_id = {n.metadata.name: i for i, n in enumerate(self.nodes)}
        self.labels = [n.metadata.labels for n in self.nodes]
        self.ns_labels = index.namespace_labels
        self.alloc = [{r: canonical(r, q) for r, q in n.allocatable.items()} for n in self.nodes]
        self.eligible_cache: dict[tuple, list[bool]] = {}
        self.compiled: dict[str, tuple] = {}
        self.volumes = _Volumes(index, self.labels, [n.metadata.name for n in self.nodes])
        self.reset()

    def reset(self) -> None:
        """An empty cluster: no pods on any node, no counts."""
        # The state: per-node pods, requested resources, host ports; the event log the counts follow.
        self.on_node: list[dict[str, _Pod]] = [{} for _ in self.nodes]
        self.used: list[Counter[str]] = [Counter() for _ in self.nodes]
        self.ports: list[Counter[tuple[str, str, int]]] = [Counter() for _ in self.nodes]
        self.log: list[tuple[_Pod, int, int]] = []
        self.logs: dict[tuple, list[tuple[_Pod, int, int]]] = {}  # per (namespace, label key, label value)
        self.counts: dict[tuple, _Count] = {}
        # Existing pods' required anti-affinity: per term, how many pods carry it per value of its key.
        self.anti_terms: dict[_Term, Counter[str]] = {}
        self.anti_order: list[_Term] = []
        self.anti_match: dict[tuple, tuple[int, list[_Term]]] = {}
        self.volumes.reset()

    # --- the state ---------------------------------------------------------------------------------

    def add(self, p: _Pod, n: int, sign: int = 1) -> None:
        if sign > 0:
            self.on_node[n][p.key] = p
        else:
            del self.on_node[n][p.key]
        self.used[n].update({r: sign * v for r, v in p.requests.items()})
        self.ports[n].update({t: sign for t in p.ports})
        self.log.append((p, n, sign))
        if p.pod.spec.volumes:
            self.volumes.add(p, n, sign)
        for k, v in p.labels.items():
            self.logs.setdefault((p.ns, k, v), []).append((p, n, sign))
        for t in self.terms(p)[1]:
            value = self.labels[n].get(t.key)
            if value is not None:
                if t not in self.anti_terms:
                    self.anti_terms[t] = Counter()
                    self.anti_order.append(t)
                self.anti_terms[t][value] += sign

    def terms(self, p: _Pod) -> tuple[list[_Term], list[_Term], list[_Spread]]:
        """(required affinity, required anti-affinity, DoNotSchedule spread constraints), compiled once."""
        hit = self.compiled.get(p.key)
        if hit is None:
            aff = [_term(p, t) for t in _required(p.pod, anti=False)]
            anti = [_term(p, t) for t in _required(p.pod, anti=True)]
            hit = self.compiled[p.key] = (aff, anti, self.spread_constraints(p))
        return hit

    def spread_constraints(self, p: _Pod) -> list[_Spread]:
        hard = [c for c in p.pod.spec.topology_spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
        keys = tuple(sorted({c.topology_key for c in hard}))
        spec = p.pod.spec
        na = spec.affinity.node_affinity if spec.affinity else None
        req = na.required_during_scheduling_ignored_during_execution if na else None
        affinity_sig = (tuple(sorted(spec.node_selector.items())), req.model_dump_json() if req else None)
        taints_sig = tuple(t.model_dump_json() for t in spec.tolerations)
        out = []
        for c in hard:
            extra = {k: p.labels[k] for k in c.match_label_keys if k in p.labels}
            honor_affinity = (c.node_affinity_policy or "Honor") == "Honor"
            honor_taints = (c.node_taints_policy or "Ignore") == "Honor"
            sig = (keys, affinity_sig if honor_affinity else None, taints_sig if honor_taints else None)
            if sig not in self.eligible_cache:
                self.eligible_cache[sig] = [
                    all(k in self.labels[n] for k in keys)
                    and (not honor_affinity or self.node_affinity_ok(p.pod, n))
                    and (not honor_taints or self.untolerated_taint(p.pod, n) is None)
                    for n in range(len(self.nodes))
                ]
            out.append(_Spread(c.max_skew, c.topology_key, Selector(c.label_selector, extra), c.min_domains or 1, sig))
        return out

    def count(self, sig: tuple, key: str, match: Callable[[_Pod], bool], eligible: list[bool],
              sources: list[tuple | None]) -> _Count:
        c = self.counts.get(sig)
        if c is None:
            domains = {self.labels[n][key] for n in range(len(self.nodes)) if eligible[n]}
            c = self.counts[sig] = _Count(key, match, eligible, domains, sources)
        for src in c.sources:
            log = self.log if src is None else self.logs.get(src, [])
            for p, n, sign in log[c.seen[src]:]:
                if c.eligible[n] and c.match(p):
                    c.bump(self.labels[n][key], sign)
            c.seen[src] = len(log)
        return c

    @staticmethod
    def sources(names: frozenset[str] | None, sel: Selector) -> list[tuple | None]:
        """The logs that can hold every pod in `names` (None: any namespace) that `sel` selects."""
        if sel.nothing:
            return []
        pair = sel.labels[0] if sel.labels else next(
            ((k, next(iter(vals))) for k, op, vals in sel.exprs if op == "In" and len(vals) == 1), None)
        if names is None or pair is None:
            return [None]
        return [(ns, *pair) for ns in sorted(names)]

    def has_key(self, key: str) -> list[bool]:
        sig = ("has", key)
        if sig not in self.eligible_cache:
            self.eligible_cache[sig] = [key in labels for labels in self.labels]
        return self.eligible_cache[sig]

    def term_matches(self, t: _Term, q: _Pod) -> bool:
        return ((q.ns in t.names or t.ns_selector.matches(self.ns_labels.get(q.ns, {})))
                and t.selector.matches(q.labels))

    def term_count(self, terms: list[_Term], key: str) -> _Count:
        """Pods matching every term of `terms`, per value of `key` (on nodes carrying `key`)."""
        terms_t = tuple(terms)
        t0 = terms_t[0]
        sources = self.sources(t0.names if t0.ns_selector.nothing else None, t0.selector)
        return self.count(("terms", terms_t, key), key,
                          lambda q: all(self.term_matches(t, q) for t in terms_t), self.has_key(key), sources)

    # --- node-local predicates ---------------------------------------------------------------------

    def untolerated_taint(self, pod: Pod, n: int) -> Taint | None:
        for taint in self.nodes[n].spec.taints:
            if taint.effect in HARD_EFFECTS and not tolerated_by_any(pod.spec.tolerations, taint):
                return taint
        return None

    def node_affinity_ok(self, pod: Pod, n: int) -> bool:
        return required_node_affinity_matches(pod.spec, self.labels[n], self.nodes[n].metadata.name)

    # --- one pod on one node -----------------------------------------------------------------------

    def check(self, p: _Pod, n: int) -> tuple[str, str] | None:
        """The first failing rule (kube's filter order) for binding `p` to node `n` now, or None."""
        pod, node, labels = p.pod, self.nodes[n], self.labels[n]
        spec = pod.spec
        if spec.scheduling_gates:
            return "SchedulingGates", "the pod has scheduling gates, so it is not schedulable"
        if node.spec.unschedulable and not tolerated_by_any(spec.tolerations, UNSCHEDULABLE_TAINT):
            return "NodeUnschedulable", "node(s) were unschedulable"
        if spec.node_name and spec.node_name != node.metadata.name:
            return "NodeName", f"the pod's spec.nodeName is {spec.node_name!r}"
        taint = self.untolerated_taint(pod, n)
        if taint is not None:
            return "TaintToleration", f"untolerated taint {{{taint.key}: {taint.value}}} ({taint.effect})"
        if not self.node_affinity_ok(pod, n):
            return "NodeAffinity", "node(s) didn't match Pod's node affinity/selector"
        for ip, proto, port in p.ports:
            for (uip, uproto, uport), k in self.ports[n].items():
                if k > 0 and (uproto, uport) == (proto, port) and (uip == ip or "0.0.0.0" in (ip, uip)):
                    return "NodePorts", f"host port {ip}:{port}/{proto} conflicts with {uip}:{port}/{proto}"
        if len(self.on_node[n]) + 1 > self.alloc[n].get("pods", 0):
            return "NodeResourcesFit", "Too many pods"
        for r, v in sorted(p.requests.items()):
            checked = r in NATIVE or "/" in r or r.startswith(("hugepages-", "attachable-volumes-"))
            if v > 0 and checked and v > self.alloc[n].get(r, 0) - self.used[n][r]:
                return "NodeResourcesFit", (f"Insufficient {r}: requests {v}, free "
                                            f"{self.alloc[n].get(r, 0) - self.used[n][r]} of {self.alloc[n].get(r, 0)}")
        if spec.volumes:
            fail = self.volumes.check(p, n, self.on_node[n], self.alloc[n])
            if fail is not None:
                return fail
        aff, anti, spread = self.terms(p)
        for c in spread:
            fail = self.spread_fails(p, n, c)
            if fail:
                return "PodTopologySpread", fail
        if aff:
            fail = self.affinity_fails(p, n, aff)
            if fail:
                return "InterPodAffinity", fail
        for t in anti:
            value = labels.get(t.key)
            if value is not None and self.term_count([t], t.key).by_value[value] > 0:
                return "InterPodAffinity", f"node(s) didn't satisfy the pod's anti-affinity rule ({t.key}={value})"
        for t in self.existing_anti_matching(p):
            value = labels.get(t.key)
            if value is not None and self.anti_terms[t][value] > 0:
                return "InterPodAffinity", (f"node(s) didn't satisfy existing pods' anti-affinity rules "
                                            f"({t.key}={value})")
        return None

    def spread_fails(self, p: _Pod, n: int, c: _Spread) -> str | None:
        value = self.labels[n].get(c.key)
        if value is None:
            return f"node(s) didn't match pod topology spread constraints (missing required label {c.key})"
        sel, ns = c.selector, p.ns

        def match(q: _Pod) -> bool:  # kube's countPodsMatchSelector: an empty selector counts nothing
            return not sel.empty and q.ns == ns and not q.terminating and sel.matches(q.labels)

        cnt = self.count(("spread", ns, sel, c.key, c.eligibility), c.key, match, self.eligible_cache[c.eligibility],
                         [] if sel.empty else self.sources(frozenset([ns]), sel))
        low = 0 if len(cnt.domains) < c.min_domains else cnt.low
        skew = cnt.by_value[value] + int(sel.matches(p.labels)) - low
        if skew > c.max_skew:
            return (f"node(s) didn't match pod topology spread constraints ({c.key}={value}: skew {skew} > "
                    f"maxSkew {c.max_skew})")
        return None

    def affinity_fails(self, p: _Pod, n: int, aff: list[_Term]) -> str | None:
        labels = self.labels[n]
        for t in aff:
            if t.key not in labels:
                return f"node(s) didn't match pod affinity rules (missing topology key {t.key})"
        counts = [self.term_count(aff, t.key) for t in aff]
        if all(c.by_value[labels[t.key]] > 0 for c, t in zip(counts, aff, strict=True)):
            return None
        if all(c.total == 0 for c in counts) and all(self.term_matches(t, p) for t in aff):
            return None  # kube's first-pod rule
        return "node(s) didn't match pod affinity rules"

    def existing_anti_matching(self, p: _Pod) -> list[_Term]:
        """Existing pods' anti-affinity terms that select `p` (cached per namespace and label set)."""
        key = (p.ns, frozenset(p.labels.items()))
        done, terms = self.anti_match.get(key, (0, []))
        if done < len(self.anti_order):
            terms = terms + [t for t in self.anti_order[done:] if self.term_matches(t, p)]
            self.anti_match[key] = (len(self.anti_order), terms)
        return terms

    # --- the plan ----------------------------------------------------------------------------------

    def run(self, plan: Plan) -> list[Violation]:
        out: list[Violation] = []
        infos = {pi.key: pi for pi in self.index.pods}
        pods: dict[str, _Pod] = {}

        def get(key: str) -> _Pod:
            if key not in pods:
                pods[key] = _pod(infos[key].pod)
            return pods[key]

        # the running pods, where they are once the plan's moves are done
        running = {pi.key: (get(pi.key), int(pi.node)) for pi in self.index.pods if pi.node >= 0 and not pi.pending}
        out.extend(self.check_moves(plan.moves, infos, get, running))
        moved = {m.pod for m in plan.moves}
        bound = list(running.values())

        # 1. placements
        todo: list[tuple[_Pod, int]] = []
        with_volumes: list[tuple[Placement, Pod]] = []
        placed_on: dict[str, str] = {}
        seen: set[str] = set()
        for pl in plan.placements:
            pi = infos.get(pl.pod)
            if pi is None:
                out.append(Violation(pl.pod, pl.node, "UnknownPod", "no such pod in the state"))
                continue
            if not pi.pending:
                where = f"bound to {pi.pod.spec.node_name}" if pi.pod.spec.node_name else "terminating"
                out.append(Violation(pl.pod, pl.node, "NotPending", f"the pod is not pending ({where})"))
                continue
            if pl.pod in seen:
                out.append(Violation(pl.pod, pl.node, "DuplicatePod", "the pod appears more than once in the plan"))
                continue
            seen.add(pl.pod)
            if pl.node is None:
                continue
            if pl.node not in self.node_id:
                out.append(Violation(pl.pod, pl.node, "UnknownNode", f"no node {pl.node!r} in the state"))
                continue
            placed_on[pl.pod] = pl.node
            todo.append((get(pl.pod), self.node_id[pl.node]))
            if pl.volume_bindings:
                with_volumes.append((pl, pi.pod))
        out.extend(self.volumes.check_bindings(with_volumes))

        # 2. evictions
        victims: dict[str, list[_Pod]] = {}
        evicted: set[str] = set()
        snap = self.index.snapshot
        budget = {i: snap.pdb_disruptions_allowed(pdb) for i, pdb in enumerate(snap.pdbs)}
        for e in plan.evictions:
            pi = infos.get(e.pod)
            if pi is None or pi.pending or pi.node < 0 or pi.pod.spec.node_name != e.node:
                where = "not a bound pod of the state" if pi is None or pi.node < 0 or pi.pending else (
                    f"bound to {pi.pod.spec.node_name}")
                out.append(Violation(e.pod, e.node, "Preemption", f"the victim is {where}, not on {e.node}"))
                continue
            if e.pod in evicted:
                out.append(Violation(e.pod, e.node, "Preemption", "the victim is evicted more than once"))
                continue
            if e.pod in moved:
                out.append(Violation(e.pod, e.node, "Preemption", "the victim is also moved by the plan"))
                continue
            evicted.add(e.pod)
            victim = get(e.pod)
            for i, pdb in enumerate(snap.pdbs):
                if _pdb_selects(pdb, victim):
                    budget[i] -= 1
                    if budget[i] < 0 and not (self.allow_pdb_violations and e.pdb_violation):
                        out.append(Violation(e.pod, e.node, "PodDisruptionBudget",
                                             f"evicting it takes PodDisruptionBudget {pdb.metadata.namespace}/"
                                             f"{pdb.metadata.name} below zero disruptions allowed"))
            if placed_on.get(e.preemptor) != e.node:
                out.append(Violation(e.pod, e.node, "Preemption",
                                     f"its preemptor {e.preemptor} is not placed on {e.node} by the plan"))
                continue
            preemptor = get(e.preemptor)
            if victim.priority >= preemptor.priority:
                out.append(Violation(e.pod, e.node, "Preemption",
                                     f"the victim's priority {victim.priority} is not lower than its preemptor "
                                     f"{e.preemptor}'s {preemptor.priority}"))
                continue
            victims.setdefault(e.preemptor, []).append(victim)

        out.extend(self.check_gangs(placed_on, evicted))

        # 3. replay in plan order; if pods are left that could start their affinity group by kube's first-pod
        # rule, try each of them (one at a time, kept when it helps) bound before all the others.
        left, last = self.replay(bound, todo, victims)
        front: list[tuple[_Pod, int]] = []
        tried: set[str] = set()
        while len(tried) < SEED_TRIES:
            seed = next((item for item in left if item[0].key not in tried
                         and last[item[0].key][0] == "InterPodAffinity" and self.could_seed(item[0])), None)
            if seed is None:
                break
            tried.add(seed[0].key)
            first = {item[0].key for item in front} | {seed[0].key}
            order = [*front, seed, *(item for item in todo if item[0].key not in first)]
            left2, last2 = self.replay(bound, order, victims)
            if len(left2) < len(left):
                front, left, last = [*front, seed], left2, last2
        for p, n in left:
            rule, message = last[p.key]
            out.append(Violation(p.key, self.nodes[n].metadata.name, rule, message))
        return out

    def check_moves(self, moves: list[Move], infos: dict[str, Any], get: Callable[[str], _Pod],
                    running: dict[str, tuple[_Pod, int]]) -> list[Violation]:
        """0. Moves, wave by wave. Each moves a pod running on `from` and owned by a controller (evicting any
        other pod deletes it), once. In a wave, every replacement (the pod without its nodeName, as its
        controller recreates it) passes the filters on `to` with the wave's other arrivals there and every
        departing pod still on its old node (both copies count), and no PodDisruptionBudget loses more pods
        than it allows (the replacements run again before the next wave). `running` becomes the state after
        the last wave."""
        out: list[Violation] = []
        valid: list[Move] = []
        seen: set[str] = set()
        for m in moves:
            pi = infos.get(m.pod)
            if pi is None or pi.pending or pi.node < 0 or pi.pod.spec.node_name != m.from_node:
                out.append(Violation(m.pod, m.from_node, "Move", f"the pod is not running on {m.from_node}"))
            elif m.pod in seen:
                out.append(Violation(m.pod, m.from_node, "Move", "the pod is moved more than once"))
            elif not any(o.controller for o in pi.pod.metadata.owner_references):
                out.append(Violation(m.pod, m.from_node, "Move", "the pod has no controller to recreate it"))
            elif m.to not in self.node_id:
                out.append(Violation(m.pod, m.to, "UnknownNode", f"no node {m.to!r} in the state"))
            else:
                valid.append(m)
                seen.add(m.pod)
        if not valid:
            return out
        snap = self.index.snapshot
        allowed = [snap.pdb_disruptions_allowed(pdb) for pdb in snap.pdbs]
        self.reset()
        for p, n in running.values():
            self.add(p, n)
        for w in sorted({m.wave for m in valid}):
            wave = [m for m in valid if m.wave == w]
            for i, pdb in enumerate(snap.pdbs):
                hit = [m for m in wave if _pdb_selects(pdb, get(m.pod))]
                for m in hit[max(0, allowed[i]):]:
                    out.append(Violation(m.pod, m.from_node, "PodDisruptionBudget",
                                         f"wave {w} moves {len(hit)} pods of PodDisruptionBudget "
                                         f"{pdb.metadata.namespace}/{pdb.metadata.name}, which allows "
                                         f"{max(0, allowed[i])}"))
            arrivals = []
            for m in wave:
                pod = infos[m.pod].pod
                rep = _pod(pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": ""})}))
                n = self.node_id[m.to]
                fail = self.check(rep, n)
                if fail is not None:
                    out.append(Violation(m.pod, m.to, fail[0], f"wave {w}: its replacement does not fit: {fail[1]}"))
                self.add(rep, n)
                arrivals.append((m, rep, n))
            for m, rep, n in arrivals:
                old, src = running[m.pod]
                self.add(old, src, -1)
                running[m.pod] = (rep, n)
        return out

    def check_gangs(self, placed_on: dict[str, str], evicted: set[str]) -> list[Violation]:
        """4. Gangs: a gang's pods the plan places, with those still running, reach its minCount, or it places
        none; with a topology key, all in one domain of it."""
        out = []
        pods = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in self.index.snapshot.pods}
        for gang in gangs(self.index.snapshot):
            mine = [k for k in gang.members if k in placed_on]
            if not mine:
                continue
            running = [k for k in gang.members if k not in placed_on and k not in evicted
                       and pods[k].spec.node_name in self.node_id]
            if len(mine) + len(running) < gang.min_count:
                out += [Violation(k, placed_on[k], "GangScheduling", f"PodGroup {gang.key} places "
                                  f"{len(mine) + len(running)} of its minCount {gang.min_count} pods")
                        for k in mine]
            elif gang.topology_key is not None:
                nodes = [placed_on[k] for k in mine] + [pods[k].spec.node_name for k in running]
                domains = {self.labels[self.node_id[n]].get(gang.topology_key) for n in nodes}
                if len(domains) != 1 or None in domains:
                    out += [Violation(k, placed_on[k], "GangScheduling", f"PodGroup {gang.key}'s pods are not "
                                      f"in one {gang.topology_key} domain") for k in mine]
        return out

    def could_seed(self, p: _Pod) -> bool:
        aff = self.terms(p)[0]
        return bool(aff) and all(self.term_matches(t, p) for t in aff)

    def replay(self, bound: list[tuple[_Pod, int]], todo: list[tuple[_Pod, int]], victims: dict[str, list[_Pod]]
               ) -> tuple[list[tuple[_Pod, int]], dict[str, tuple[str, str]]]:
        """Bind `bound` (pod, node), then `todo` as a fixpoint over the order; returns (pods left, their last
        failure)."""
        self.reset()
        for p, n in bound:
            self.add(p, n)
        last: dict[str, tuple[str, str]] = {}
        while todo:
            left = []
            for p, n in todo:
                gone = victims.get(p.key, [])
                for v in gone:
                    self.add(v, self.node_id[v.pod.spec.node_name], -1)
                fail = self.check(p, n)
                if fail is None:
                    self.add(p, n)
                    continue
                for v in gone:
                    self.add(v, self.node_id[v.pod.spec.node_name])
                last[p.key] = fail
                left.append((p, n))
            if len(left) == len(todo):
                break
            todo = left
        return todo, last


def _pdb_selects(pdb, p: _Pod) -> bool:
    """The PDB's (non-empty) selector selects the pod, in its namespace."""
    sel = pdb.spec.selector
    return (pdb.metadata.namespace == p.ns and sel is not None and bool(sel.match_labels or sel.match_expressions)
            and selector_matches(sel, p.labels))


class FilterReplay:
    """The verifier's filters over a state the caller builds, for other independent checks (the rebalancer's
    before/after and per-wave checks): `compile` a pod once, `add`/`remove` it on nodes, and `check` whether
    kube's filters admit it on a node against everything else placed. `running=True` judges pods already
    running: cordons and the `spec.nodeName` that bound them do not count against them.
    """

    def __init__(self, index: ClusterIndex, running: bool = False) -> None:
        self._v = _Verifier(index)
        self._running = running
        if running:
            self._v.nodes = [n.model_copy(update={"spec": n.spec.model_copy(update={"unschedulable": False})})
                             if n.spec.unschedulable else n for n in self._v.nodes]

    def compile(self, pod: Pod) -> _Pod:
        if self._running and pod.spec.node_name:
            pod = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": ""})})
        return _pod(pod)

    def reset(self) -> None:
        self._v.reset()

    def add(self, pod: _Pod, node: int) -> None:
        self._v.add(pod, node)

    def remove(self, pod: _Pod, node: int) -> None:
        self._v.add(pod, node, -1)

    def check(self, pod: _Pod, node: int) -> tuple[str, str] | None:
        """(rule, message) of the first filter that rejects `pod` on `node`, or None."""
        return self._v.check(pod, node)


def verify_plan(index: ClusterIndex, plan: Plan, allow_pdb_violations: bool = False) -> list[Violation]:
    """Every violation of the plan against the state (an empty list: the plan verifies); with
    `allow_pdb_violations` an eviction may take a PodDisruptionBudget below zero when the plan declares it."""
    return _Verifier(index, allow_pdb_violations).run(plan)
