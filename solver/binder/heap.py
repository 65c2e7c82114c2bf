"""Giving a long-running process's freed heap back to the system after each decision.

CP-SAT's search threads allocate from glibc arenas of their own, and the pages a window's model freed stay in those
arenas: without a trim, the resident size of `kplace run` or the extender creeps up window after window while the
memory in use stays flat. glibc's `malloc_trim(0)` returns them; elsewhere (musl, macOS, Windows) there is nothing
to trim.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache


@cache
def _malloc_trim():
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


def trim_heap() -> bool:
    """Release the free memory at the top and inside of every malloc arena; whether any was released."""
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False
