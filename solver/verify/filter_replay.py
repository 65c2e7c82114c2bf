"""The verifier's filters over a state the caller builds, for other independent checks (the rebalancer's
before/after and per-wave checks)."""

from __future__ import annotations

from kplace.models.index import ClusterIndex
from kplace.models.k8s import Pod

from .records import CompiledPod, compile_pod
from .replay import Failure, Replay


class FilterReplay:
    """`compile` a pod once, `add`/`remove` it on nodes, and `check` whether kube's filters admit it on a node
    against everything else placed. `running=True` judges pods already running: cordons and the `spec.nodeName`
    that bound them do not count against them.
    """

    def __init__(self, index: ClusterIndex, running: bool = False) -> None:
        self._replay = Replay(index, ignore_cordons=running)
        self._running = running

    def compile(self, pod: Pod) -> CompiledPod:
        if self._running and pod.spec.node_name:
            pod = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": ""})})
        return compile_pod(pod)

    def reset(self) -> None:
        self._replay.reset()

    def add(self, pod: CompiledPod, node: int) -> None:
        self._replay.add(pod, node)

    def remove(self, pod: CompiledPod, node: int) -> None:
        self._replay.add(pod, node, -1)

    def check(self, pod: CompiledPod, node: int) -> Failure | None:
        """(rule, message) of the first filter that rejects `pod` on `node`, or None."""
        return self._replay.check(pod, node)
