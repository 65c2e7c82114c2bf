"""Pure helpers shared by several plugins, as upstream's `framework/plugins/helper` package.

This folder registers no plugin (it has no `PLUGINS`)."""

from .normalize_score import default_normalize_score, go_div
from .shape_score import broken_linear

__all__ = ["broken_linear", "default_normalize_score", "go_div"]
