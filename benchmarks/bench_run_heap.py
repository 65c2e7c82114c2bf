"""Where `kplace run`'s memory goes: the scheduler loop in this process against the fake API server, with the heap
trimmed after each window (as shipped) or not, sampled every 30 s.

    .venv/bin/python benchmarks/bench_run_heap.py --duration 600              # as shipped
    .venv/bin/python benchmarks/bench_run_heap.py --duration 600 --no-trim    # the heap left as glibc keeps it
    .venv/bin/python benchmarks/bench_run_heap.py --duration 300 --trace      # Python's own allocations too

The fake API server (`solver/binder/testing.py`, 200 nodes of 16 CPU and 64 Gi) runs in a child process with the
churn: every 3 s a burst of 20–80 pods for the scheduler `kplace` (seeded), and 1.5 s later 30–70 % of the live
pods deleted. Each sample line gives the windows committed, the process's RSS, tracemalloc's traced bytes (with
--trace, which slows the loop down several times), and glibc's `mallinfo2`: bytes in use and bytes free inside the
arenas. RSS rising while both the traced and the in-use bytes stay flat is memory the allocator kept, not a leak.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import logging
import random
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]


def serve(folder: Path, duration: float) -> None:
    """The child: the fake API server and the churn, for `duration` seconds."""
    from kplace.solver.binder.testing import FakeApiServer
    from kplace.solver.testing import node, pod

    rng = random.Random(0)
    api = FakeApiServer([node(f"n{i:03d}", cpu="16", memory="64Gi") for i in range(200)]).start()
    api.kubeconfig(folder)
    (folder / "ready").write_text("1")
    start, k, live = time.monotonic(), 0, []
    while time.monotonic() - start < duration:
        for _ in range(rng.randint(20, 80)):
            name = f"p{k:07d}"
            k += 1
            api.create(pod(name, cpu=f"{rng.choice([100, 250, 500, 1000])}m",
                           memory=f"{rng.choice([128, 512, 1024])}Mi", spec={"schedulerName": "kplace"},
                           labels={"app": f"a{rng.randint(0, 20)}"}))
            live.append(name)
        time.sleep(1.5)
        rng.shuffle(live)
        cut = int(len(live) * rng.uniform(0.3, 0.7))
        for name in live[:cut]:
            api.delete("Pod", name)
        live = live[cut:]
        with api.lock:  # the server's own records, not what is measured: keep them bounded
            api.requests.clear()
            if len(api.events) > 40000:
                del api.events[:-20000]
        time.sleep(1.5)
    api.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=600.0, help="seconds of churn (default 600)")
    ap.add_argument("--no-trim", action="store_true", help="do not trim the heap after each window")
    ap.add_argument("--trace", action="store_true", help="also trace Python's allocations (tracemalloc)")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.duration)
        return 0
    import kplace.solver.binder.loop as loop

    if args.no_trim:
        loop.trim_heap = lambda: False
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    logging.getLogger("kplace.run").setLevel(logging.ERROR)  # the informers complain when the server stops
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        child = subprocess.Popen([sys.executable, __file__, "--serve", str(folder), "--duration",
                                  str(args.duration + 30)])
        try:
            while not (folder / "ready").exists():
                time.sleep(0.1)
            if args.trace:
                tracemalloc.start()
            runner = loop.Runner(str(folder / "kubeconfig"), None,
                                 loop.RunOptions(port=0, bind_address="127.0.0.1", engine="cpsat"))
            thread = threading.Thread(target=runner.run, daemon=True)
            thread.start()
            start = time.monotonic()
            print(f"heap {'left as is' if args.no_trim else 'trimmed after each window'}; samples every 30 s")
            while time.monotonic() - start < args.duration:
                time.sleep(30)
                gc.collect()
                with open("/proc/self/status", encoding="ascii") as fh:
                    rss = next(int(x.split()[1]) / 1024 for x in fh if x.startswith("VmRSS"))
                traced = f"{tracemalloc.get_traced_memory()[0] / 2**20:.0f}" if args.trace else "-"
                mi = libc.mallinfo2()
                print(f"t={time.monotonic() - start:4.0f} s  windows {runner.windows:4d}  RSS {rss:6.1f} MiB  "
                      f"traced {traced} MiB  malloc in use {mi.uordblks / 2**20:4.0f} MiB  "
                      f"free in arenas {mi.fordblks / 2**20:4.0f} MiB", flush=True)
            runner.stop()
            thread.join(10)
        finally:
            child.terminate()
            child.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
