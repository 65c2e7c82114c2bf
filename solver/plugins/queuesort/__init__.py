"""PrioritySort (QueueSort): higher `spec.priority` first (nil → 0), then the earlier queue timestamp.

The key is `models.index.queue_key`, the one `ClusterIndex.pending` sorts by.
"""

from __future__ import annotations

from datetime import datetime

from kplace.models.index import PodInfo, queue_key

from ...framework import Plugin

sort_key = queue_key


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
