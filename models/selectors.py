"""Label and node selectors with apimachinery's exact semantics (pure functions, shared by all engines)."""

from __future__ import annotations

from collections.abc import Mapping

from .k8s import LabelSelector, NodeSelectorRequirement, NodeSelectorTerm


def selector_matches(sel: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector: None matches nothing, `{}` matches everything; requirements are ANDed."""
    if sel is None:
        return False
    for k, v in sel.match_labels.items():
        if labels.get(k) != v:
            return False
    for req in sel.match_expressions:
        present = req.key in labels
        if req.operator == "In":
            if not present or labels[req.key] not in req.values:
                return False
        elif req.operator == "NotIn":
            if present and labels[req.key] in req.values:
                return False
        elif req.operator == "Exists":
            if not present:
                return False
        elif present:  # DoesNotExist
            return False
    return True


def _parse_int(text: str) -> int | None:
    try:
        return int(text, 10)
    except ValueError:
        return None


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
