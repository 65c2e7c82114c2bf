"""Label and node selectors with apimachinery's exact semantics (pure functions, shared by all engines)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .k8s import LabelSelector, NodeSelectorRequirement, NodeSelectorTerm


def selector_matches(sel: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector: None matches nothing, `{}` matches everything; requirements are ANDed.
    (One-off checks; loops compile a `Selector` once.)"""
    return Selector(sel).matches(labels)


_INT64 = re.compile(r"^[+-]?[0-9]+$")


def _parse_int(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): optional sign, ASCII digits only, within int64."""
    if not _INT64.match(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def node_requirement_matches(req: NodeSelectorRequirement, value: str | None) -> bool:
    """One node selector requirement against a label value (None = label absent).

    Gt/Lt need the label present, parsable as an integer, and exactly one parsable value; strict comparison.
    """
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if value is None or len(req.values) != 1:
        return False
    have, want = _parse_int(value), _parse_int(req.values[0])
    if have is None or want is None:
        return False
    return have > want if op == "Gt" else have < want


def node_term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    """A NodeSelectorTerm: matchExpressions AND matchFields; an empty term matches nothing.

    matchFields supports only `metadata.name` with In/NotIn and exactly one value; anything else fails to parse,
    which counts as no match.
    """
    if not term.match_expressions and not term.match_fields:
        return False
    for req in term.match_expressions:
        if not node_requirement_matches(req, labels.get(req.key)):
            return False
    for req in term.match_fields:
        if req.key != "metadata.name" or req.operator not in ("In", "NotIn") or len(req.values) != 1:
            return False
        if not node_requirement_matches(req, node_name):
            return False
    return True


def required_node_affinity_matches(spec, labels: Mapping[str, str], node_name: str) -> bool:
    """kube's RequiredNodeAffinity for a pod spec: every nodeSelector pair, and (when set) some required
    node affinity term, match the node."""
    if any(labels.get(k) != v for k, v in spec.node_selector.items()):
        return False
    na = spec.affinity.node_affinity if spec.affinity else None
    req = na.required_during_scheduling_ignored_during_execution if na else None
    return req is None or any(node_term_matches(t, labels, node_name) for t in req.node_selector_terms)


class Selector:
    """A compiled, hashable label selector (`None` selector → matches nothing, empty → everything).

    `extra` adds `key = value` requirements, as matchLabelKeys does for topology spread constraints.
    """

    __slots__ = ("_hash", "exprs", "labels", "nothing")

    def __init__(self, sel: LabelSelector | None, extra: Mapping[str, str] | None = None) -> None:
        self.nothing = sel is None
        labels = dict(sel.match_labels) if sel is not None else {}
        exprs: list[tuple[str, str, frozenset[str]]] = []
        if sel is not None:
            exprs = [(r.key, r.operator, frozenset(r.values)) for r in sel.match_expressions]
        if extra:
            exprs.extend((k, "In", frozenset([v])) for k, v in extra.items())
        self.labels = tuple(sorted(labels.items()))
        self.exprs = tuple(sorted(exprs, key=lambda e: (e[0], e[1], sorted(e[2]))))
        self._hash = hash((self.nothing, self.labels, self.exprs))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Selector)
            and (self.nothing, self.labels, self.exprs) == (other.nothing, other.labels, other.exprs)
        )

    @property
    def anchor(self) -> tuple[str, str] | None:
        """A label pair every pod it selects carries (its first matchLabels pair), or None: for indexing."""
        return self.labels[0] if self.labels else None

    @property
    def empty(self) -> bool:
        """True for `{}`: matches every pod."""
        return not self.nothing and not self.labels and not self.exprs

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for k, v in self.labels:
            if labels.get(k) != v:
                return False
        for key, op, values in self.exprs:
            val = labels.get(key)
            if op == "In":
                if val is None or val not in values:
                    return False
            elif op == "NotIn":
                if val is not None and val in values:
                    return False
            elif op == "Exists":
                if val is None:
                    return False
            elif val is not None:
                return False
        return True
