"""SchedulingGates (PreEnqueue): a pod with any `spec.schedulingGates` is not enqueued until they are removed."""

from __future__ import annotations

from collections.abc import Sequence

from ...framework import Plugin


def gate_message(gates: Sequence[str]) -> str:
    """kube's text, Go's `%v` of a []string: `waiting for scheduling gates: [a b]`."""
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


class SchedulingGates(Plugin):
    name = "SchedulingGates"
    points = frozenset({"pre_enqueue"})

    def pre_enqueue(self, pod) -> tuple[bool, str]:
        gates = [g.name for g in pod.spec.scheduling_gates]
        if not gates:
            return True, ""
        return False, gate_message(gates)


PLUGINS = [SchedulingGates]
