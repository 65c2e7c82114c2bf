"""Where independent searches run: here, in a local process pool, or on Ray.

An `Executor` maps a function over tasks, in order; a task that raised gives its exception in its place (the caller
decides what a failed task means). The pool and Ray also `submit` one task and say which of several submitted is
`first_done`, so that a caller can send each task's successor as soon as it can. `local` executors run the tasks
in this process, as given; the others pickle them to workers, so what they run must be importable there (`kplace`
installed) and the tasks plain data.

- `InProcess`: one after another, here (the only one that keeps a search's progress callback);
- `ProcessPool`: a `concurrent.futures` pool of `usable_cores() // cpus_per_task` processes (at least one),
  started by forkserver (spawn where there is none): CP-SAT's threads make forking a process that has solved unsafe;
  kept for the process's later runs. Like any such pool it imports a script's `__main__` in its workers: a script
  that schedules guards its entry with `if __name__ == "__main__"`;
- `Ray`: one Ray task per search, each reserving `cpus_per_task` CPUs; joins the cluster at `address`
  (`--ray-address`, else RAY_ADDRESS) or starts a local instance of `usable_cores()` CPUs, and shuts down only
  an instance it started. Ray is an optional extra (`pip install 'kplace[ray]'`).

`choose` picks per window: `auto` is the pool when more than one component has a model and the pool would run
more than one at a time, else in-process.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from kplace.models.errors import KplaceError

EXECUTORS = ("auto", "inprocess", "pool", "ray")


class ExecutorError(KplaceError):
    """An executor that cannot be made (an unknown name, Ray absent or unreachable): one line for the user."""


class Executor(Protocol):
    name: str
    local: bool  # tasks run in this process (no pickling; callbacks kept)

    def map(self, fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
        """fn(task) for each task, in order; a task that raised gives its exception."""
        ...

    def close(self) -> None: ...


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS)
        return max(1, os.cpu_count() or 1)


class InProcess:
    name = "inprocess"
    local = True

    def map(self, fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
        out = []
        for task in tasks:
            try:
                out.append(fn(task))
            except Exception as exc:
                out.append(exc)
        return out

    def close(self) -> None:
        pass


IN_PROCESS = InProcess()


class ProcessPool:
    """Worker processes shared by every run of this process (a `kplace run` loop decides window after window): made
    on first use per size, kept until the interpreter exits; `close` leaves them for the next run."""

    name = "pool"
    local = False

    def __init__(self, cpus_per_task: int = 1, size: int | None = None) -> None:
        self.size = size or max(1, usable_cores() // max(1, cpus_per_task))

    def _started(self) -> ProcessPoolExecutor:
        key = (os.getpid(), self.size)  # a forked child makes its own (its parent's pool does not work there)
        pool = _POOLS.get(key)
        if pool is None:
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
            if context.get_start_method() == "forkserver":
                context.set_forkserver_preload(["kplace.solver.cpsat.clock"])
            pool = _POOLS[key] = ProcessPoolExecutor(max_workers=self.size, mp_context=context)
        return pool

    def map(self, fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
        pool = self._started()
        futures: list[Future] = [pool.submit(fn, task) for task in tasks]
        out = []
        for future in futures:
            exc = future.exception()
            out.append(exc if exc is not None else future.result())
        if any(isinstance(x, BrokenProcessPool) for x in out):  # a worker died: the next run starts a new pool
            _POOLS.pop((os.getpid(), self.size), None)
        return out

    def submit(self, fn: Callable[[Any], Any], task: Any) -> Future:
        return self._started().submit(fn, task)

    def first_done(self, handles: dict[Any, Future]) -> tuple[Any, Any]:
        """(key, result or exception) of a finished one of `handles`, which loses it."""
        done, _ = wait(list(handles.values()), return_when=FIRST_COMPLETED)
        key = next(k for k, f in handles.items() if f in done)
        future = handles.pop(key)
        exc = future.exception()
        if isinstance(exc, BrokenProcessPool):
            _POOLS.pop((os.getpid(), self.size), None)
        return key, exc if exc is not None else future.result()

    def close(self) -> None:
        pass


_POOLS: dict[tuple[int, int], ProcessPoolExecutor] = {}


@atexit.register
def _shutdown_pools() -> None:
    for (pid, _), pool in list(_POOLS.items()):
        if pid == os.getpid():
            pool.shutdown(wait=True, cancel_futures=True)
    _POOLS.clear()


class Ray:
    name = "ray"
    local = False

    def __init__(self, cpus_per_task: int = 1, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError("--executor ray needs Ray: pip install 'kplace[ray]'") from None
        self._ray = ray
        self.cpus_per_task = max(1, cpus_per_task)
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self._started = False
        self._remote: dict[Callable, Any] = {}
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                                      "log_to_driver": False, "configure_logging": True}
            if self.address is None:
                kwargs["num_cpus"] = usable_cores()
            try:
                ray.init(address=self.address, **kwargs)
            except Exception as exc:  # ConnectionError, or Ray's own for a bad address
                where = f"the Ray cluster at {self.address}" if self.address else "a local Ray instance"
                raise ExecutorError(f"could not start or join {where}: {str(exc).splitlines()[0]}") from None
            self._started = True
        self.cpus_per_task = min(self.cpus_per_task, max(1, int(ray.cluster_resources().get("CPU", 1))))

    def map(self, fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
        return [self._get(ref) for ref in [self.submit(fn, task) for task in tasks]]

    def submit(self, fn: Callable[[Any], Any], task: Any) -> Any:
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self._ray.remote(num_cpus=self.cpus_per_task, max_retries=0)(fn)
        return remote.remote(task)

    def first_done(self, handles: dict[Any, Any]) -> tuple[Any, Any]:
        """(key, result or exception) of a finished one of `handles`, which loses it."""
        (ref,), _ = self._ray.wait(list(handles.values()), num_returns=1)
        key = next(k for k, r in handles.items() if r == ref)
        return key, self._get(handles.pop(key))

    def _get(self, ref: Any) -> Any:
        ray = self._ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            return exc.as_instanceof_cause()
        except ray.exceptions.RayError as exc:  # the worker died, the cluster went away
            return exc

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False


def make(name: str, cpus_per_task: int, ray_address: str | None = None) -> Executor:
    """The executor called `name` (inprocess, pool or ray)."""
    if name == "inprocess":
        return IN_PROCESS
    if name == "pool":
        return ProcessPool(cpus_per_task)
    if name == "ray":
        return Ray(cpus_per_task, ray_address)
    raise ExecutorError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")


class Chooser:
    """The executor for each window, made once and kept until `close`: `name` (auto: the pool when more than one
    component has a model and `usable_cores() // cpus_per_task` ≥ 2, else in-process)."""

    def __init__(self, name: str, cpus_per_task: int, ray_address: str | None = None) -> None:
        if name not in EXECUTORS:
            raise ExecutorError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")
        self.name, self.cpus_per_task, self.ray_address = name, max(1, cpus_per_task), ray_address
        self._made: dict[str, Executor] = {}
        if name == "ray":  # a missing Ray or an unreachable cluster is said before any work
            self._made[name] = make(name, self.cpus_per_task, ray_address)

    def __call__(self, components: int) -> Executor:
        name = self.name
        if name == "auto":
            parallel = components > 1 and usable_cores() // self.cpus_per_task >= 2
            name = "pool" if parallel else "inprocess"
        if name not in self._made:
            self._made[name] = make(name, self.cpus_per_task, self.ray_address)
        return self._made[name]

    def close(self) -> None:
        for executor in self._made.values():
            executor.close()
        self._made.clear()
