"""Writing results: JSON to stdout, and atomic file writes (nothing is ever half-written)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"


def dumps_as(data: Any, fmt: str) -> str:
    """`data` as JSON or YAML text (kubectl's -o json / -o yaml)."""
    if fmt == "yaml":
        import yaml

        return yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False, allow_unicode=True)
    return dumps(data)


def write_data(data: Any, fmt: str) -> None:
    sys.stdout.write(dumps_as(data, fmt))


def _mode_for(path: Path) -> int:
    """The permissions a plain `open(path, "w")` would give: the existing file's, else 0666 less the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


@contextlib.contextmanager
def _atomic_file(path: str | Path, buffering: int = -1) -> Iterator[IO[str]]:
    """A text file written beside `path`, fsynced, then renamed over it (with the permissions the file has, or would
    get from the umask: the temporary file's own 0600 never shows); removed if the writing fails."""
    path = Path(path)
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", buffering=buffering) as fh:
            yield fh
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, text: str) -> None:
    """Write `text` to `path` atomically (`_atomic_file`)."""
    with _atomic_file(path) as fh:
        fh.write(text)


def write_list(fh: IO[str], items: Iterable[dict], annotations: dict[str, str]) -> Counter:
    """A kubectl-style v1 List as JSON, item by item (one per line), its metadata last so that `annotations` may
    be filled while the items are written: (kind → objects written, and "pending" pods)."""
    kinds: Counter = Counter()
    encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    fh.write('{"apiVersion":"v1","kind":"List","items":[')
    sep = "\n"
    for item in items:
        fh.write(sep)
        fh.write(encode(item))
        sep = ",\n"
        kind = item.get("kind")
        kinds[kind] += 1
        if kind == "Pod" and not item["spec"].get("nodeName"):
            kinds["pending"] += 1
    fh.write('\n],"metadata":' + encode({"resourceVersion": "", "annotations": annotations}) + "}\n")
    return kinds


def write_list_atomic(path: str | Path, items: Iterable[dict], annotations: dict[str, str]) -> Counter:
    """`write_list` into `path` atomically (`_atomic_file`)."""
    with _atomic_file(path, buffering=1 << 20) as fh:
        return write_list(fh, items, annotations)


def quiet_broken_pipe() -> None:
    """The reader of stdout has gone (`kplace ... | head`): stop quietly with exit code 0, and point stdout at
    /dev/null so the final flush does not fail too."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(0)


PIPE_WIDTH = 200


def console(**kwargs: Any):
    """A rich Console for kplace's tables. Written to a pipe or a file (and no COLUMNS), tables are PIPE_WIDTH wide
    rather than 80, so that nothing is cut; identifiers fold rather than end in "…" on a narrow terminal. Piped
    into `head`, it stops quietly with exit code 0 (rich's own handler exits with 1)."""
    from rich.console import Console

    if "width" not in kwargs and "COLUMNS" not in os.environ and not sys.stdout.isatty():
        kwargs["width"] = PIPE_WIDTH
    class _Console(Console):
        def on_broken_pipe(self) -> None:
            quiet_broken_pipe()

    return _Console(**kwargs)
