"""PrioritySort (QueueSort): higher `spec.priority` first (nil → 0), then the earlier queue timestamp.

kplace has no queue arrival times, so the timestamp is the pod's creation time (pods without one go last) and
input order breaks remaining ties — the same order as `ClusterIndex.pending`.
"""

from __future__ import annotations

from datetime import datetime

from kplace.models.index import PodInfo

from ...framework import Plugin

_FAR = datetime.max


def sort_key(pod: PodInfo) -> tuple[int, datetime, int]:
    """Ascending key: (−priority, queue timestamp, input position)."""
    ts = pod.creation.replace(tzinfo=None) if pod.creation else _FAR
    return (-pod.priority, ts, pod.seq)


def less(a: PodInfo, b: PodInfo) -> bool:
    """kube's Less: a goes first when its priority is higher, or equal with an earlier timestamp."""
    return sort_key(a) < sort_key(b)


class PrioritySort(Plugin):
    name = "PrioritySort"
    points = frozenset({"queue_sort"})

    @staticmethod
    def sort_key(pod: PodInfo) -> tuple[int, datetime, int]:
        return sort_key(pod)

    @staticmethod
    def less(a: PodInfo, b: PodInfo) -> bool:
        return less(a, b)


PLUGINS = [PrioritySort]
