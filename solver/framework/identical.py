"""Pods identical to the scheduler: equal in everything any plugin reads.

That is namespace, priority, scheduler, requests (actual and non-zero), host ports, tolerations, node selector,
affinity, spread constraints, images, volumes — and their values for every label key that some selector in the
state refers to. Labels no selector reads (a StatefulSet's `pod-name`, say) do not tell pods apart. Pods with
generic ephemeral volumes each own a claim, so no two of them are identical.
"""

from __future__ import annotations

import json

from kplace.models.index import ClusterIndex, PodInfo


def _selector_keys(sel) -> set[str]:
    if sel is None:
        return set()
    return set(sel.match_labels) | {r.key for r in sel.match_expressions}


def relevant_label_keys(index: ClusterIndex) -> frozenset[str]:
    """Every label key that some selector in the state reads (cached on the index)."""
    hit = index.cache.get("identical.relevant_keys")
    if hit is not None:
        return hit  # type: ignore[return-value]
    keys: set[str] = set()
    for pi in index.pods:
        spec = pi.pod.spec
        aff = spec.affinity
        for pa in (aff.pod_affinity, aff.pod_anti_affinity) if aff else ():
            if pa is None:
                continue
            terms = [*pa.required_during_scheduling_ignored_during_execution,
                     *(w.pod_affinity_term for w in pa.preferred_during_scheduling_ignored_during_execution)]
            for t in terms:
                keys |= _selector_keys(t.label_selector) | set(t.match_label_keys) | set(t.mismatch_label_keys)
        for c in spec.topology_spread_constraints:
            keys |= _selector_keys(c.label_selector) | set(c.match_label_keys)
    snap = index.snapshot
    for svc in snap.services:
        keys |= set(svc.spec.selector)
    for w in snap.workloads:
        keys |= _selector_keys(w.spec.selector)
    for pdb in snap.pdbs:
        keys |= _selector_keys(pdb.spec.selector)
    out = frozenset(keys)
    index.cache["identical.relevant_keys"] = out
    return out


def identity_key(index: ClusterIndex, pod: PodInfo, keys: frozenset[str]) -> tuple:
    spec = pod.pod.spec
    dump = json.dumps(
        spec.model_dump(
            mode="json",
            include={"tolerations", "node_selector", "affinity", "topology_spread_constraints", "volumes",
                     "scheduler_name", "preemption_policy", "overhead", "node_name", "scheduling_gates"},
        ),
        sort_keys=True,
        default=str,
    )
    # Generic ephemeral volumes give each pod its own claim (`<pod>-<volume>`): such pods are never identical.
    own_claims = tuple(f"{pod.name}-{v.name}" for v in spec.volumes if v.ephemeral is not None)
    return (
        pod.namespace,
        pod.priority,
        index.gang_of.get(pod.idx, -1),  # pods of different gangs are placed all-or-nothing apart
        own_claims,
        tuple(index.pod_req[pod.idx].tolist()),
        tuple(index.pod_nonzero[pod.idx].tolist()),
        tuple(sorted(pod.host_ports)),
        tuple(pod.images),
        tuple(sorted((k, v) for k, v in pod.labels.items() if k in keys)),
        dump,
    )
