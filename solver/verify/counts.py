"""Domain counts: how many bound pods a matcher selects per value of a node label, kept current lazily from
event logs.

Every bind (+1) and removal (−1) is appended to the global log and to one log per (namespace, label key,
label value) the pod carries. A count reads only the logs that can hold pods it may select (`sources`) and
applies, on each query, the events it has not yet seen. For PodTopologySpread it also keeps the minimum over
its domains, through a histogram of the per-domain counts (min = the lowest count with a non-zero bucket).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from kplace.models.selectors import Selector

from .records import CompiledPod

Event = tuple[CompiledPod, int, int]  # (pod, node, +1 or -1)


class DomainCount:
    """Pods matching `match`, per value of node label `key`, over the `eligible` nodes (which must carry `key`).

    `sources` names the logs to read: the global log (None), or per-(namespace, k, v) logs (a pure pre-filter:
    `match` still decides). `low` is the minimum over `domains` (the values of the eligible nodes).
    """

    def __init__(self, key: str, match: Callable[[CompiledPod], bool], eligible: list[bool], domains: set[str],
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


def sources(names: frozenset[str] | None, sel: Selector) -> list[tuple | None]:
    """The logs that can hold every pod in `names` (None: any namespace) that `sel` selects: per-namespace
    logs of one `k=v` the selector requires, else the global log; none for a selector that selects nothing."""
    if sel.nothing:
        return []
    pair = sel.labels[0] if sel.labels else next(
        ((k, next(iter(vals))) for k, op, vals in sel.exprs if op == "In" and len(vals) == 1), None)
    if names is None or pair is None:
        return [None]
    return [(ns, *pair) for ns in sorted(names)]


class Counts:
    """The event logs and the domain counts that follow them, by signature; `labels[n]` are node n's labels."""

    def __init__(self, labels: list[dict[str, str]]) -> None:
        self.labels = labels
        self.reset()

    def reset(self) -> None:
        """No pods bound: empty logs, no counts."""
        self.log: list[Event] = []
        self.logs: dict[tuple, list[Event]] = {}  # per (namespace, label key, label value)
        self.counts: dict[tuple, DomainCount] = {}
        self.values: dict[tuple[str, int], tuple[list[bool], set[str]]] = {}  # (key, id(eligible)) → its values

    def record(self, p: CompiledPod, n: int, sign: int) -> None:
        self.log.append((p, n, sign))
        for k, v in p.labels.items():
            self.logs.setdefault((p.ns, k, v), []).append((p, n, sign))

    def count(self, sig: tuple, key: str, match: Callable[[CompiledPod], bool], eligible: list[bool],
              sources: list[tuple | None]) -> DomainCount:
        """The count under `sig` (created on first use with these arguments), brought up to date."""
        c = self.counts.get(sig)
        if c is None:
            hit = self.values.get((key, id(eligible)))
            if hit is None:  # the list is kept with its values, so its id is not reused
                values = {self.labels[n][key] for n in range(len(self.labels)) if eligible[n]}
                hit = self.values[key, id(eligible)] = (eligible, values)
            c = self.counts[sig] = DomainCount(key, match, eligible, hit[1], sources)
        for src in c.sources:
            log = self.log if src is None else self.logs.get(src, [])
            for p, n, sign in log[c.seen[src]:]:
                if c.eligible[n] and c.match(p):
                    c.bump(self.labels[n][key], sign)
            c.seen[src] = len(log)
        return c
