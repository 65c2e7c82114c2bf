"""PodTopologySpread's filter, for DoNotSchedule constraints.

The eligible nodes of a constraint carry every topology key of the pod's hard constraints, and, by the node
inclusion policies, match the pod's node affinity (nodeAffinityPolicy Honor, the default) and tolerate its
taints (nodeTaintsPolicy Honor; default Ignore). Over the eligible nodes' domains D (values of the key), with
count(d) the pods in d that the selector (plus matchLabelKeys) selects in the pod's namespace, not
terminating: placing the pod in domain v passes when
    count(v) + [the selector selects the pod] − min_d count(d) ≤ maxSkew,
where the minimum is 0 while |D| < minDomains. An empty selector counts nothing.
"""

from __future__ import annotations

from functools import partial

from kplace.models.k8s import Pod, PodSpec, TopologySpreadConstraint
from kplace.models.selectors import Selector

from .counts import Counts, sources
from .nodes import Nodes
from .records import CompiledPod, Spread


def _eligibility(spec: PodSpec, keys: tuple[str, ...], c: TopologySpreadConstraint) -> tuple[tuple, bool, bool]:
    """(hashable description of the eligible nodes, honour node affinity, honour taints) for constraint `c` of a
    pod whose hard constraints' keys are `keys`."""
    honor_affinity = (c.node_affinity_policy or "Honor") == "Honor"
    honor_taints = (c.node_taints_policy or "Ignore") == "Honor"
    affinity_sig = taints_sig = None
    if honor_affinity:
        na = spec.affinity.node_affinity if spec.affinity else None
        req = na.required_during_scheduling_ignored_during_execution if na else None
        affinity_sig = (tuple(sorted(spec.node_selector.items())), req.model_dump_json() if req else None)
    if honor_taints:
        taints_sig = tuple(t.model_dump_json() for t in spec.tolerations)
    return (keys, affinity_sig, taints_sig), honor_affinity, honor_taints


def _node_eligible(nodes: Nodes, pod: Pod, keys: tuple[str, ...], honor_affinity: bool, honor_taints: bool,
                   n: int) -> bool:
    return (all(k in nodes.labels[n] for k in keys)
            and (not honor_affinity or nodes.node_affinity_ok(pod, n))
            and (not honor_taints or nodes.untolerated_taint(pod, n) is None))


def compile_spread(p: CompiledPod, nodes: Nodes) -> list[Spread]:
    """The pod's DoNotSchedule constraints, their eligible nodes computed once per eligibility signature."""
    hard = [c for c in p.pod.spec.topology_spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
    keys = tuple(sorted({c.topology_key for c in hard}))
    out = []
    for c in hard:
        extra = {k: p.labels[k] for k in c.match_label_keys if k in p.labels}
        sig, honor_affinity, honor_taints = _eligibility(p.pod.spec, keys, c)
        nodes.eligible(sig, partial(_node_eligible, nodes, p.pod, keys, honor_affinity, honor_taints))
        out.append(Spread(c.max_skew, c.topology_key, Selector(c.label_selector, extra), c.min_domains or 1, sig))
    return out


def spread_fails(p: CompiledPod, n: int, c: Spread, nodes: Nodes, counts: Counts) -> str | None:
    """Why placing `p` on node n breaks constraint `c`, or None."""
    value = nodes.labels[n].get(c.key)
    if value is None:
        return f"node(s) didn't match pod topology spread constraints (missing required label {c.key})"
    sel, ns = c.selector, p.ns

    def match(q: CompiledPod) -> bool:  # kube's countPodsMatchSelector: an empty selector counts nothing
        return not sel.empty and q.ns == ns and not q.terminating and sel.matches(q.labels)

    cnt = counts.count(("spread", ns, sel, c.key, c.eligibility), c.key, match, nodes.eligible_cache[c.eligibility],
                       [] if sel.empty else sources(frozenset([ns]), sel))
    low = 0 if len(cnt.domains) < c.min_domains else cnt.low
    skew = cnt.by_value[value] + int(sel.matches(p.labels)) - low
    if skew > c.max_skew:
        return (f"node(s) didn't match pod topology spread constraints ({c.key}={value}: skew {skew} > "
                f"maxSkew {c.max_skew})")
    return None
