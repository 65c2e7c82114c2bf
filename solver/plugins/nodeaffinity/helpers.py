"""Pure NodeAffinity maths, evaluated on whole label columns (one boolean per node) and cached per index.

Semantics (component-helpers `nodeaffinity`, apimachinery `labels`):
- A requirement that fails to parse makes its term match nothing (`term_parse_error`): In/NotIn need values,
  Exists/DoesNotExist none, Gt/Lt exactly one int64; keys must be qualified names and values label values.
  matchFields accept only `metadata.name` with In/NotIn and exactly one value.
- A term ANDs its requirements; an empty term matches nothing; terms are ORed.
- `nodeSelector` needs every key present with an equal value.
- Preferred terms with weight 0 or an empty preference are ignored; raw = Σ weights of matching terms.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np
from kplace.models.index import ClusterIndex
from kplace.models.k8s import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm

CACHE_KEY = "NodeAffinity/requirements"
NAME_FIELD = "metadata.name"
_INT64 = (-(2**63), 2**63 - 1)
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def parse_go_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): optional sign and decimal digits only, within int64."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    v = int(text)
    return v if _INT64[0] <= v <= _INT64[1] else None


def _label_key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME.match(name))


def _label_value_ok(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_NAME.match(value)))


def expression_parse_error(req: NodeSelectorRequirement) -> str | None:
    """Why labels.NewRequirement would reject this matchExpression, or None."""
    if not _label_key_ok(req.key):
        return f"invalid label key {req.key!r}"
    op, values = req.operator, req.values
    if op in ("In", "NotIn") and not values:
        return f"values: must be non-empty for operator {op}"
    if op in ("Exists", "DoesNotExist") and values:
        return f"values: must be empty for operator {op}"
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            return f"values: must have exactly one value for operator {op}"
        if parse_go_int64(values[0]) is None:
            return f"values[0]: must be an integer for operator {op}, got {values[0]!r}"
    for v in values:
        if not _label_value_ok(v):
            return f"values: invalid label value {v!r}"
    return None


def field_parse_error(req: NodeSelectorRequirement) -> str | None:
    """Why a matchFields requirement would be rejected, or None."""
    if req.key != NAME_FIELD:
        return f"key: not a valid field selector key {req.key!r}"
    if len(req.values) != 1:
        return "values: must have one element"
    if req.operator not in ("In", "NotIn"):
        return f"operator: not a valid selector operator {req.operator!r}"
    return None


def term_parse_error(term: NodeSelectorTerm) -> str | None:
    for req in term.match_expressions:
        if (err := expression_parse_error(req)) is not None:
            return f"matchExpressions: {err}"
    for req in term.match_fields:
        if (err := field_parse_error(req)) is not None:
            return f"matchFields: {err}"
    return None


def _cache(index: ClusterIndex) -> dict:
    return index.cache.setdefault(CACHE_KEY, {})  # type: ignore[return-value]


def expression_mask(index: ClusterIndex, req: NodeSelectorRequirement) -> np.ndarray:
    """Per node (all nodes): does the node's label satisfy the (parsable) requirement?"""
    key = ("label", req.key, req.operator, tuple(req.values))
    cache = _cache(index)
    hit = cache.get(key)
    if hit is not None:
        return hit
    ids, vocab = index.label_column(req.key)
    present = ids >= 0
    op = req.operator
    if op == "Exists":
        out = present
    elif op == "DoesNotExist":
        out = ~present
    else:
        if op in ("In", "NotIn"):
            wanted = set(req.values)
            vmask = [v in wanted for v in vocab]
        else:  # Gt / Lt, the requirement value already parsed
            bound = parse_go_int64(req.values[0])
            parsed = [parse_go_int64(v) for v in vocab]
            vmask = [p is not None and (p > bound if op == "Gt" else p < bound) for p in parsed]
        value_ok = np.array([*vmask, False], dtype=bool)[ids]  # ids == -1 (absent) picks the trailing False
        out = ~value_ok if op == "NotIn" else value_ok  # NotIn: absent, or a value outside the set
    out = np.asarray(out, dtype=bool)
    out.setflags(write=False)
    cache[key] = out
    return out


def field_mask(index: ClusterIndex, req: NodeSelectorRequirement) -> np.ndarray:
    """Per node: does metadata.name satisfy the (parsable) In/NotIn requirement?"""
    out = np.zeros(len(index.nodes), dtype=bool)
    nid = index.node_id.get(req.values[0])
    if nid is not None:
        out[nid] = True
    return out if req.operator == "In" else ~out


def term_mask(index: ClusterIndex, term: NodeSelectorTerm) -> np.ndarray:
    """Per node: does the term match? Empty or unparsable terms match nothing."""
    n = len(index.nodes)
    if (not term.match_expressions and not term.match_fields) or term_parse_error(term) is not None:
        return np.zeros(n, dtype=bool)
    out = np.ones(n, dtype=bool)
    for req in term.match_expressions:
        out &= expression_mask(index, req)
    for req in term.match_fields:
        out &= field_mask(index, req)
    return out


def node_selector_mask(index: ClusterIndex, selector: NodeSelector) -> np.ndarray:
    """Per node: does any term of the NodeSelector match (no terms: nothing matches)?"""
    out = np.zeros(len(index.nodes), dtype=bool)
    for term in selector.node_selector_terms:
        out |= term_mask(index, term)
    return out


def label_map_mask(index: ClusterIndex, labels: Mapping[str, str]) -> np.ndarray:
    """Per node: `spec.nodeSelector` — every key present with an equal value."""
    out = np.ones(len(index.nodes), dtype=bool)
    for k, v in labels.items():
        ids, vocab = index.label_column(k)
        try:
            vid = vocab.index(v)
        except ValueError:
            return np.zeros(len(index.nodes), dtype=bool)
        out &= ids == vid
    return out


def required_mask(index: ClusterIndex, node_selector: Mapping[str, str], required: NodeSelector | None) -> np.ndarray:
    """Per node: nodeSelector AND required node affinity (GetRequiredNodeAffinity(pod).Match)."""
    out = label_map_mask(index, node_selector) if node_selector else np.ones(len(index.nodes), dtype=bool)
    if required is not None:
        out &= node_selector_mask(index, required)
    return out


def node_name_union(terms: Iterable[NodeSelectorTerm]) -> set[str] | None:
    """PreFilter shortcut: if every term has `metadata.name In` fields, the union over terms of the intersection
    of their names; None when some term has no such field (no restriction)."""
    union: set[str] = set()
    any_term = False
    for term in terms:
        any_term = True
        names: set[str] | None = None
        for req in term.match_fields:
            if req.key == NAME_FIELD and req.operator == "In":
                names = set(req.values) if names is None else names & set(req.values)
        if names is None:
            return None
        union |= names
    return union if any_term else None


def preferred_scores(index: ClusterIndex, terms: Iterable[PreferredSchedulingTerm]) -> np.ndarray:
    """Per node (all nodes): Σ weight of the preferred terms that match; weight-0 and empty terms ignored."""
    out = np.zeros(len(index.nodes), dtype=np.int64)
    for t in terms:
        if t.weight == 0 or (not t.preference.match_expressions and not t.preference.match_fields):
            continue
        out += t.weight * term_mask(index, t.preference)
    return out
