"""One root exception; every message names the file, the object and the field."""

from __future__ import annotations


class KplaceError(Exception):
    """Root of every error kplace reports to a user as one line, exiting with `exit_code` (2 unless a subclass
    says otherwise)."""

    exit_code = 2


class InputError(KplaceError):
    """Bad input: `file: Kind namespace/name: field.path: what is wrong`."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        obj: str | None = None,
        field: str | None = None,
    ) -> None:
        self.source, self.obj, self.field, self.detail = source, obj, field, message
        parts = [p for p in (source, obj, field) if p]
        super().__init__(": ".join([*parts, message]))


class ConfigError(KplaceError):
    """An invalid KubeSchedulerConfiguration or policy file."""


class NotImplementedFeature(KplaceError):
    """A feature the input asks for that kplace does not implement (said plainly, never faked)."""
