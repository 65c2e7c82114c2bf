"""kube-scheduler's plugins, one folder each, named as upstream's folders.

Each folder's `__init__` lists its plugin classes in `PLUGINS`; `registry()` collects them by name.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from functools import cache

from ..framework import Plugin
from ..framework.config import use_registry


@cache
def registry() -> dict[str, type[Plugin]]:
    """Plugin name (as in KubeSchedulerConfiguration) → class."""
    out: dict[str, type[Plugin]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for cls in getattr(module, "PLUGINS", ()):
            out[cls.name] = cls
    return out


@cache
def encodings() -> dict[str, object]:
    """Plugin name → its CP-SAT encoding (`framework.encoding.PluginEncoding`), from each folder's
    `encoding.ENCODINGS`, in folder order. Plugins without one have only node-local filters and static scores."""
    out: dict[str, object] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.ispkg and importlib.util.find_spec(f"{__name__}.{info.name}.encoding") is not None:
            out.update(getattr(importlib.import_module(f"{__name__}.{info.name}.encoding"), "ENCODINGS", {}))
    return out


use_registry(registry)
