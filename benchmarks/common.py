"""Shared by the benchmark scripts (run as `python benchmarks/<script>.py`, so this folder is on sys.path)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    """One line naming the machine a figure was measured on."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        total = next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
        kib = int(total.split()[1])
        mem = f", {kib / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration):
        pass
    import ortools

    return (f"{os.cpu_count()} cores ({cpu}){mem}, {platform.system()} {platform.release()}, Python "
            f"{platform.python_version()}, OR-Tools {ortools.__version__}")


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file, so the file is never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def save_figure(fig, path: Path, dpi: int = 110) -> None:
    """Save a matplotlib figure to `path` through a temporary file, so the image is never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=dpi)
    tmp.replace(path)


def write_json(path: Path, data) -> None:
    import json

    write_atomic(path, json.dumps(data, indent=1))


def replace_section(doc: Path, begin: str, end: str, body: str, heading: str = "") -> None:
    """Put `body` (which starts with `begin` and ends with `end`) where the document's marked section is, or append
    it (under `heading`, when given) when the document has none yet."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    if begin in text and end in text:
        a, b = text.index(begin), text.index(end) + len(end)
        text = text[:a] + body.strip() + text[b:]
    else:
        text = text.rstrip() + "\n\n" + (f"{heading}\n\n" if heading else "") + body.strip() + "\n"
    write_atomic(doc, text)
