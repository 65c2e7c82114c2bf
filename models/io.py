"""Read cluster state: files or directories, JSON or (multi-document) YAML, `-` for stdin, freely mixed.

Accepted shapes: a v1 `List` whose items carry `kind`; typed lists (`NodeList`, `PodList`, ...) whose items
may lack it; single objects; multi-document manifests; workload manifests (expanded into pods by
`models.workloads`); and the kube-scheduler-simulator's export file (`{"pods": [...], "nodes": [...], ...}`).
"""

from __future__ import annotations

import gc
import json
import reprlib
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .errors import InputError
from .k8s import CLUSTER_SCOPED, MODEL_BY_KIND
from .snapshot import ClusterSnapshot, finalize
from .workloads import _suffix, expand_workloads

try:  # libyaml is an order of magnitude faster on big exports
    _YamlLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _YamlLoader = yaml.SafeLoader

_SUFFIXES = {".json", ".yaml", ".yml"}
_ATTR = {
    "Node": "nodes",
    "Pod": "pods",
    "PodDisruptionBudget": "pdbs",
    "PriorityClass": "priority_classes",
    "Namespace": "namespaces",
    "PersistentVolume": "pvs",
    "PersistentVolumeClaim": "pvcs",
    "StorageClass": "storage_classes",
    "CSINode": "csinodes",
    "Service": "services",
    "PodGroup": "pod_groups",
}
# The kube-scheduler-simulator's export: top-level keys and the kind of their items.
_SIMULATOR_KEYS = {
    "pods": "Pod",
    "nodes": "Node",
    "pvs": "PersistentVolume",
    "pvcs": "PersistentVolumeClaim",
    "storageClasses": "StorageClass",
    "priorityClasses": "PriorityClass",
    "namespaces": "Namespace",
}
# Kinds people commonly have in a `kubectl get all` that the scheduler does not read.
_IGNORED_QUIETLY = {"Endpoints", "EndpointSlice", "Event", "ControllerRevision", "ConfigMap", "Secret", "Lease"}


def load_state(paths: Iterable[str]) -> ClusterSnapshot:
    """Read every path (file, directory, or `-`) into one validated ClusterSnapshot."""
    snapshot = ClusterSnapshot()

    def objects() -> Iterator[tuple[str, dict, str]]:
        for source, doc in _documents(paths):
            for kind, item in _objects(doc, source, snapshot):
                yield kind, item, source
            del doc

    return _build(snapshot, objects(), expand=True)


def load_objects(objects: Iterable[tuple[str, dict]], source: str = "<api>", *,
                 expand: bool = True) -> ClusterSnapshot:
    """Build a validated ClusterSnapshot from (kind, object) pairs in wire format (camelCase dicts).

    The same path as `load_state` takes for files: validation, admission defaulting, cross-checks. With
    `expand=False` workloads are kept (PodTopologySpread's system defaults read them) but not expanded into
    pods: on a live cluster their controllers have already created the pods that exist.
    """
    snapshot = ClusterSnapshot()
    return _build(snapshot, ((kind, item, source) for kind, item in objects), expand=expand)


def _build(snapshot: ClusterSnapshot, objects: Iterable[tuple[str, dict, str]], *, expand: bool) -> ClusterSnapshot:
    # Loading allocates millions of small objects and frees none of them in cycles; the cyclic garbage
    # collector would otherwise rescan the whole growing heap again and again (3-4x slower on big exports).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        sources: dict[int, str] = {}
        for kind, item, source in objects:
            _add(snapshot, sources, kind, item, source)
        if expand:
            expand_workloads(snapshot, sources)
        return finalize(snapshot, sources)
    finally:
        if gc_was_enabled:
            gc.enable()


def _files(paths: Iterable[str]) -> Iterator[tuple[str, str]]:
    for raw in paths:
        if raw == "-":
            yield "<stdin>", sys.stdin.read()
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.suffix in _SUFFIXES and p.is_file())
            if not files:
                raise InputError("directory holds no .json, .yaml or .yml files", source=raw)
        elif path.is_file():
            files = [path]
        else:
            raise InputError("no such file or directory", source=raw)
        for f in files:
            try:
                yield str(f), f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot be read: {exc}", source=str(f)) from None


MAX_YAML_NODES = 20_000_000
"""YAML nodes a document may expand to through its aliases (a few million pods' worth): a "billion laughs"
document is refused before it is built."""


def parse_json(text: str, source: str) -> Any:
    """json.loads with every way a hostile document can fail turned into InputError (one line, the file)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=source) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", source=source) from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise InputError(f"invalid JSON: {str(exc).split(';')[0]}", source=source) from None


def _expanded_size(node, memo: dict[int, int], limit: int) -> int:
    """Nodes the YAML node graph expands to (aliases counted as many times as they are used), stopping past limit."""
    hit = memo.get(id(node))
    if hit is not None:
        return hit
    memo[id(node)] = 1  # a recursive alias counts once
    total = 1
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [x for pair in node.value for x in pair]
    else:
        children = []
    for child in children:
        total += _expanded_size(child, memo, limit)
        if total > limit:
            break
    memo[id(node)] = total
    return total


def _check_aliases(text: str, source: str) -> None:
    if "&" not in text or "*" not in text:
        return
    for node in yaml.compose_all(text, Loader=_YamlLoader):
        if node is not None and _expanded_size(node, {}, MAX_YAML_NODES) > MAX_YAML_NODES:
            raise InputError(f"YAML aliases expand to more than {MAX_YAML_NODES:,} nodes; refused", source=source)


def _documents(paths: Iterable[str]) -> Iterator[tuple[str, Any]]:
    for source, text in _files(paths):
        stripped = text.lstrip()
        if not stripped:
            raise InputError("the file is empty (kubectl writes at least an empty List)", source=source)
        if stripped.startswith(("{", "[")):
            try:
                yield source, json.loads(text)
                continue
            except json.JSONDecodeError:
                if source.endswith(".json"):
                    parse_json(text, source)  # raises with the position
            except (RecursionError, ValueError):
                parse_json(text, source)
        try:
            _check_aliases(text, source)
            for doc in yaml.load_all(text, Loader=_YamlLoader):
                if doc is not None:
                    yield source, doc
        except RecursionError:
            raise InputError("invalid YAML: nested too deeply", source=source) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InputError(f"invalid YAML{where}: {problem}", source=source) from None


def _objects(doc: Any, source: str, snapshot: ClusterSnapshot) -> Iterator[tuple[str, dict]]:
    if isinstance(doc, list):
        for item in doc:
            yield from _objects(item, source, snapshot)
        return
    if not isinstance(doc, dict):
        raise InputError(f"expected a Kubernetes object or list, found {type(doc).__name__}", source=source)
    kind = doc.get("kind")
    if kind is None and any(k in doc for k in _SIMULATOR_KEYS):
        for key, item_kind in _SIMULATOR_KEYS.items():
            items = doc.get(key) or []
            if not isinstance(items, list):
                raise InputError(f"{key} is not a list", source=source, field=key)
            for i, item in enumerate(_drain(items)):
                if not isinstance(item, dict):
                    raise InputError(f"{key}[{i}] is not an object", source=source)
                yield item_kind, item
        if isinstance(doc.get("schedulerConfig"), dict):
            snapshot.scheduler_config = doc["schedulerConfig"]
        return
    if not isinstance(kind, str):
        raise InputError("object has no 'kind'", source=source)
    if kind == "List" or (kind.endswith("List") and "items" in doc):
        item_kind = None if kind == "List" else kind[: -len("List")]
        if doc.get("items", []) is None:
            snapshot.warnings.append(f"{source}: {kind}: items is null (read as no objects; the API server "
                                     "writes [])")
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError("items is not a list", source=source, obj=kind, field="items")
        for i, item in enumerate(_drain(items)):
            if not isinstance(item, dict):
                raise InputError(f"items[{i}] is not an object", source=source)
            k = item.get("kind") or item_kind
            if k is None:
                raise InputError("item in a v1 List has no 'kind'", source=source, field=f"items[{i}]")
            yield k, item
        return
    yield kind, doc


def _drain(items: list) -> Iterator[Any]:
    """Yield a list's items, dropping each from the list once used, so raw dicts are freed as we go."""
    for i in range(len(items)):
        item = items[i]
        items[i] = None
        yield item


def _add(snapshot: ClusterSnapshot, sources: dict[int, str], kind: str, item: dict, source: str) -> None:
    model = MODEL_BY_KIND.get(kind)
    meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    ns = meta.get("namespace") or ("" if kind in CLUSTER_SCOPED else "default")
    ref = f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
    if model is None:
        if kind not in _IGNORED_QUIETLY:
            snapshot.warnings.append(f"{source}: {ref}: kind {kind} is not used for scheduling; skipped")
        return
    if item.get("kind") != kind:
        item = {**item, "kind": kind}
    try:
        obj = model.model_validate(item)
    except ValidationError as exc:
        raise _input_error(exc, source, ref) from None
    if kind not in CLUSTER_SCOPED and not obj.metadata.namespace:
        obj.metadata.namespace = "default"
    if not obj.metadata.name:
        if not obj.metadata.generate_name:
            raise InputError("metadata.name or metadata.generateName is required", source=source, obj=ref,
                             field="metadata.name")
        # The API server names the object generateName + 5 random characters; ours are derived from the
        # object's position in the input, so the same input always gives the same names.
        position = str(len(getattr(snapshot, _ATTR.get(kind, "workloads"))))
        obj.metadata.name = obj.metadata.generate_name + _suffix(source, kind, position)
    attr = _ATTR.get(kind, "workloads")
    getattr(snapshot, attr).append(obj)
    sources[id(obj)] = source


class _short:
    """A value as it is echoed in a message: its repr, cut at 120 characters."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        r = reprlib.Repr()
        r.maxstring = r.maxother = 100
        r.maxlevel = 3
        text = r.repr(self.value)
        return text if len(text) <= 120 else text[:117] + "..."


def _input_error(exc: ValidationError, source: str, ref: str) -> InputError:
    err = exc.errors(include_url=False)[0]
    path = ""
    for part in err["loc"]:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-before[_int_or_string(), union[int,str]]",) or "[" in str(part):
            continue
        else:
            path += ("." if path else "") + str(part)
    typ, value = err["type"], _short(err.get("input"))
    if typ == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        msg = f"{value!r} is not one of {expected}"
    elif typ == "missing":
        msg = "is required"
    elif typ in ("quantity", "int_or_string", "selector", "invalid"):
        msg = err["msg"]
    else:
        msg = f"{err['msg'][0].lower()}{err['msg'][1:]} (got {value!r})"
    return InputError(msg, source=source, obj=ref, field=path or None)
