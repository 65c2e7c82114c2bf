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
