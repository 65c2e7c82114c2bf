"""The independent verifier: does a plan respect kube-scheduler's predicates against the state it was made for?

This package shares nothing with the engines: it imports only `kplace.models` (the pydantic objects and the
pure kube predicates: label and node selectors, tolerations, pod requests and host ports), never the CP-SAT
encoding or the plugins (`tests/packaging/test_imports.py`). Every rule is re-stated here from
kube-scheduler's semantics (reference §2), as plainly as possible.

Checks, by module:
- `placements`: each placement names a pending pod of the state (at most once) and, when placed, an existing
  node; `claims`: its volume bindings, once.
- `evictions`: preemption victims and PodDisruptionBudgets; `moves`: a rebalance's waves; `gangs`: minCount
  and one topology domain per gang.
- `order` and `replay`: the placed pods are bound onto the state in an order in which each passes kube's
  filters at its binding time; the filters are `nodes` (gates, cordons, nodeName, taints, node affinity),
  `usage` (host ports, resources), `volumes`, `spread` (PodTopologySpread, DoNotSchedule) and `interpod`
  (InterPodAffinity), over the domain counts of `counts`.
- `planfile` reads a plan file; `verifier.verify_plan` is the entry point; `filter_replay.FilterReplay` lends
  the filters to other independent checks.

Not checked: DynamicResources, storage capacity for provisioning, and anything a custom
KubeSchedulerConfiguration changes (disabled filters, ignoredResources, hard default spread constraints): the
verifier always applies kube's default profile.
"""

from .filter_replay import FilterReplay
from .planfile import load_plan
from .verifier import verify_plan
from .violation import Violation

__all__ = ["FilterReplay", "Violation", "load_plan", "verify_plan"]
