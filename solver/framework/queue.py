"""kube-scheduler's scheduling queue over one batch of pending pods, decided at one instant.

kube (1.36, SchedulerQueueingHints and SchedulerPopFromBackoffQ on) keeps three places:
- activeQ: pods to try, in PrioritySort order (higher priority first, then queue time);
- the unschedulable pool: a pod whose cycle failed, with its rejector plugins R(p) (its FitError's
  UnschedulablePlugins ∪ PendingPlugins). A pod that failed with an error (R(p) = ∅) goes to the error backoff
  queue instead, which only a backoff flush empties;
- backoffQ: pods a cluster event may have helped. After each cycle the batch's own events reach the queue: the
  pod bound (AssignedPodAdd), the victims a preemption deleted (AssignedPodDelete), and a nomination moved or
  cleared (an AssignedPodDelete of the nominated pod, for pods of no higher priority). An event moves a pod of the
  pool to backoffQ when some plugin r ∈ R(p) registered for it and r's queueing hint says the event may make p
  schedulable (`Plugin.queueing_hint`; the "Extender" pseudo-plugin queues on every event).

The batch is decided at one instant (the oracle freezes kube's clock the same way): no backoff expires and no flush
runs, so a pod moved to backoffQ is still backing off and is popped only when activeQ is empty, in kube's backoffQ
order — backoff expiry first, the c-th failure backing off d(c) = min(initial · 2^(c−1), max) seconds from one
whole-second window, then PrioritySort's order with the failure as the queue time. The batch ends when activeQ and
backoffQ are empty; what is left in the pool stays pending, as kube leaves it until a later event.

A pod group's cycle (kube's GenericWorkload) takes all its pods from wherever they wait (`take`, kube's
PopSpecificPod) and puts each back in backoffQ whatever the events (`failed(..., group=...)`; an error still goes
to the error queue). Such a group would come back forever; like the oracle, the batch retries it only when some
pod was bound or deleted (`changed`) since its last cycle (`group_done`, before its own victims' deletion).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable

from kplace.models.index import PodInfo

ASSIGNED_POD_ADD = "AssignedPodAdd"
ASSIGNED_POD_DELETE = "AssignedPodDelete"
EXTENDER = "Extender"  # kube's pseudo-plugin for nodes an extender rejected: every event may help

EVENTS = frozenset({ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE})

Hint = Callable[[str, str, PodInfo, PodInfo], bool]  # (plugin, event, pending pod, the event's pod) → may help


def backoff_seconds(failures: int, initial: int, maximum: int) -> int:
    """kube's calculateBackoffDuration: initial · 2^(failures − 1), capped at maximum (failures ≥ 1)."""
    shift = failures - 1
    return maximum if initial > maximum >> shift else initial << shift


class BatchQueue:
    def __init__(self, pods: Iterable[PodInfo], initial_backoff: int = 1, max_backoff: int = 10) -> None:
        self._active = deque(pods)  # already in queue order
        self._backoff: list[tuple[int, int, int, int, PodInfo]] = []  # (expiry, −priority, failed at, idx, pod)
        self._pool: dict[int, tuple[PodInfo, frozenset[str]]] = {}  # idx → (pod, R(p)), in failure order
        self._listening: dict[str, dict[int, None]] = {e: {} for e in EVENTS}  # event → pool pods it may move
        self._failures: dict[int, int] = {}
        self._failed_at: dict[int, int] = {}  # idx → the failure's rank: its queue time once put back
        self._clock = 0
        self.initial, self.maximum = initial_backoff, max_backoff
        self._errored: dict[int, PodInfo] = {}  # pods of a pod group in the error queue (a group cycle takes them)
        self._group: dict[int, str] = {}  # pod idx → its pod group, for the pods of a group that failed
        self._changes = 0  # pods bound or deleted so far
        self._group_seen: dict[str, int] = {}  # pod group → `_changes` when its last cycle ended

    def pop(self) -> PodInfo | None:
        if self._active:
            return self._active.popleft()
        if any(self._group_seen.get(self._group.get(e[-1].idx, ""), -1) != self._changes for e in self._backoff):
            return heapq.heappop(self._backoff)[-1]
        return None

    def tick(self) -> None:
        """One cycle (one pod, or one pod group) failed some pods: they share its queue time."""
        self._clock += 1

    def changed(self) -> None:
        """A pod was bound or deleted."""
        self._changes += 1

    def take(self, pods: Iterable[PodInfo]) -> list[PodInfo]:
        """Those of `pods` the queue holds, out of it wherever they wait (kube's PopSpecificPod)."""
        ids = {p.idx for p in pods}
        found = [p for p in self._active if p.idx in ids]
        found += [e[-1] for e in self._backoff if e[-1].idx in ids]
        found += [pod for idx, (pod, _) in self._pool.items() if idx in ids]
        found += [pod for idx, pod in self._errored.items() if idx in ids]
        if found:
            self._active = deque(p for p in self._active if p.idx not in ids)
            self._backoff = [e for e in self._backoff if e[-1].idx not in ids]
            heapq.heapify(self._backoff)
            for idx in ids:
                self._pool.pop(idx, None)
                self._errored.pop(idx, None)
                for listening in self._listening.values():
                    listening.pop(idx, None)
        return found

    def group_done(self, group: str) -> None:
        """A pod group's cycle ended (its pods bound or put back)."""
        self._group_seen[group] = self._changes

    def failed(self, pod: PodInfo, rejectors: frozenset[str], events: frozenset[str] = EVENTS,
               group: str | None = None) -> None:
        """The pod's cycle failed, rejected by `rejectors` (empty: an error, never retried within the batch, unless
        its pod group's cycle takes it), which register hints for `events`. A pod of `group` goes to backoffQ."""
        if group is None:
            self.tick()
        if rejectors:
            self._failures[pod.idx] = self._failures.get(pod.idx, 0) + 1
            self._failed_at[pod.idx] = self._clock
            if group is not None:
                self._group[pod.idx] = group
                self._push(pod)
                return
            self._pool[pod.idx] = (pod, rejectors)
            for e in EVENTS if EXTENDER in rejectors else events & EVENTS:
                self._listening[e][pod.idx] = None
        elif group is not None:
            self._group[pod.idx] = group
            self._errored[pod.idx] = pod

    def _push(self, pod: PodInfo) -> None:
        expiry = backoff_seconds(self._failures[pod.idx], self.initial, self.maximum)
        heapq.heappush(self._backoff, (expiry, -pod.priority, self._failed_at[pod.idx], pod.idx, pod))

    def event(self, event: str, other: PodInfo, hint: Hint, at_most: int | None = None) -> None:
        """`event` about `other` reaches the queue: the pool's pods it may help (of priority at most `at_most`, when
        given) move to backoffQ."""
        moved = [idx for idx in self._listening[event]
                 for pod, rejectors in [self._pool[idx]] if at_most is None or pod.priority <= at_most
                 if any(r == EXTENDER or hint(r, event, pod, other) for r in sorted(rejectors))]
        for idx in moved:
            pod, _ = self._pool.pop(idx)
            for listening in self._listening.values():
                listening.pop(idx, None)
            self._push(pod)

    def pending(self) -> list[PodInfo]:
        """The pods the batch leaves in the unschedulable pool."""
        return [pod for pod, _ in self._pool.values()]
