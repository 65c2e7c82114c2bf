"""kube-scheduler's plugins, one folder each, named as upstream's folders.

Each folder's `__init__` lists its plugin classes in `PLUGINS`; `registry()` collects them by name.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from ..framework import Plugin


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
