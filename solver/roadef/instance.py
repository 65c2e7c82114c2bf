"""A ROADEF/EURO 2012 machine-reassignment instance: its data, the file formats, and what it means in Kubernetes.

How an instance maps onto kplace's rebalancing model:

- **machines are nodes**: each has a capacity per resource (allocatable; a hard limit) and a *safety capacity*
  (a soft limit: usage above it is paid for as *load cost*, weighted per resource); machines are grouped into
  **locations** (zones: the failure domain) and **neighborhoods** (the network domain);
- **processes are pods** with a requirement per resource (requests), bound to a machine by the initial
  assignment (the current cluster state);
- **services are owners** (Deployments): *conflict* — two processes of a service never share a machine — is
  required hostname anti-affinity; *spreadMin* — a service spans at least that many distinct locations — is a
  required topology spread over `location`; a *dependency* s → s' — every neighborhood hosting s also hosts
  s' — is required pod affinity at the `neighborhood` level;
- **transient resources** (e.g. disk being copied) count on both the old and the new machine of a moved
  process: the "moving pod counted on both nodes" rule of kplace's rebalance waves;
- **balance costs** (r1, r2, target): on each machine, free r2 should be at least target × free r1 (keep
  room in the right proportions), paid per unit short;
- **move costs** are the disruption budget: a per-process move cost (pod priority / deletion cost), a
  *service move cost* that charges the largest number of moved processes of any one service (a
  maxUnavailable-like cap per owner), and a machine-to-machine move cost (moving across zones costs more).

Formats (whitespace-separated integers): `model_*.txt` (resources, machines, services, processes, balance
objectives, the three move-cost weights, in that order) and `assignment_*.txt` (one machine index per process).
See /work/shared/data/roadef2012-machine-reassignment/SOURCE.md and the challenge's problem definition
(http://challenge.roadef.org/2012/files/problem_definition_v1.pdf). Malformed input is an InputError naming
`file:line`; a new assignment is written atomically.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from kplace.models.errors import InputError


@dataclass(frozen=True)
class Balance:
    """Balance objective: on every machine, target × available(r1) − available(r2), when positive, is paid."""

    r1: int
    r2: int
    target: int
    weight: int


@dataclass(frozen=True, eq=False)
class Instance:
    """A parsed `model_*.txt`. Arrays are int64 (bool for `transient`); indices are 0-based as in the files."""

    transient: np.ndarray  # (R,) bool
    load_weight: np.ndarray  # (R,)
    neighborhood: np.ndarray  # (M,)
    location: np.ndarray  # (M,)
    capacity: np.ndarray  # (M, R)
    safety: np.ndarray  # (M, R)
    machine_move_cost: np.ndarray  # (M, M)
    spread_min: np.ndarray  # (S,)
    dependencies: tuple[tuple[int, ...], ...]  # per service: the services it depends on
    service: np.ndarray  # (P,)
    requirement: np.ndarray  # (P, R)
    process_move_cost: np.ndarray  # (P,)
    balances: tuple[Balance, ...]
    weight_process_move: int
    weight_service_move: int
    weight_machine_move: int
    source: str = ""

    @property
    def n_resources(self) -> int:
        return len(self.load_weight)

    @property
    def n_machines(self) -> int:
        return len(self.neighborhood)

    @property
    def n_services(self) -> int:
        return len(self.spread_min)

    @property
    def n_processes(self) -> int:
        return len(self.service)


def service_links(inst: Instance) -> tuple[np.ndarray, list[list[int]], list[list[int]], np.ndarray]:
    """Per service (at least one, padded): spreadMin, the services it depends on (itself left out), the services
    that depend on it, and the S × S 0/1 matrix dep[s, d] = [s depends on d]."""
    n_s = max(1, inst.n_services)
    spread = np.concatenate([inst.spread_min, np.zeros(n_s - inst.n_services, dtype=np.int64)]).astype(np.int64)
    deps = [sorted({d for d in ds if d != s}) for s, ds in enumerate(inst.dependencies)]
    deps += [[] for _ in range(n_s - len(deps))]
    rdeps: list[list[int]] = [[] for _ in range(n_s)]
    dep = np.zeros((n_s, n_s), dtype=np.int64)
    for s, ds in enumerate(deps):
        for d in ds:
            rdeps[d].append(s)
            dep[s, d] = 1
    return spread, deps, rdeps, dep


def check_assignment(inst: Instance, a: np.ndarray, what: str) -> np.ndarray:
    """`a` as int64, after checking it has one machine of the instance per process (InputError naming `what`)."""
    a = np.asarray(a, dtype=np.int64)
    if a.shape != (inst.n_processes,):
        raise InputError(f"{a.shape[0] if a.ndim == 1 else a.shape} machines for {inst.n_processes} processes",
                         source=what)
    if len(a) and (a.min() < 0 or a.max() >= inst.n_machines):
        bad = int(np.flatnonzero((a < 0) | (a >= inst.n_machines))[0])
        raise InputError(f"process {bad}: machine {int(a[bad])} is not in 0..{inst.n_machines - 1}", source=what)
    return a


# -------------------------------------------------------------------------------------------------- parsing


class _Tokens:
    """Whitespace-separated integers with their line numbers, so errors can say `file:line`."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.toks: list[tuple[int, str]] = [
            (lineno, tok) for lineno, line in enumerate(text.splitlines(), 1) for tok in line.split()
        ]
        self.last_line = max(1, len(text.splitlines()))
        self.i = 0

    def where(self) -> str:
        line = self.toks[self.i][0] if self.i < len(self.toks) else self.last_line
        return f"{self.source}:{line}"

    def int(self, what: str, lo: int | None = 0, hi: int | None = None) -> int:
        if self.i >= len(self.toks):
            raise InputError(f"unexpected end of file: expected {what}", source=f"{self.source}:{self.last_line}")
        line, tok = self.toks[self.i]
        try:
            value = int(tok)
        except ValueError:
            raise InputError(f"expected an integer for {what}, got {tok!r}", source=f"{self.source}:{line}") from None
        if lo is not None and value < lo:
            raise InputError(f"{what} is {value}, must be ≥ {lo}", source=f"{self.source}:{line}")
        if hi is not None and value > hi:
            raise InputError(f"{what} is {value}, must be ≤ {hi}", source=f"{self.source}:{line}")
        self.i += 1
        return value

    def end(self, after: str) -> None:
        if self.i < len(self.toks):
            line, tok = self.toks[self.i]
            raise InputError(f"unexpected extra data {tok!r} after {after}", source=f"{self.source}:{line}")


def _read_text(path: str | os.PathLike[str]) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not a text file", source=str(path)) from None


def parse_instance(text: str, source: str = "<model>") -> Instance:
    """Parse the text of a `model_*.txt` file; InputError names `source:line` on malformed input."""
    t = _Tokens(text, source)
    n_res = t.int("number of resources R", lo=1)
    transient, load_weight = [], []
    for r in range(n_res):
        transient.append(bool(t.int(f"resource {r}: transient flag", lo=0, hi=1)))
        load_weight.append(t.int(f"resource {r}: load cost weight"))
    n_mach = t.int("number of machines M", lo=1)
    nbh, loc, cap, safe, mmc = [], [], [], [], []
    for m in range(n_mach):
        nbh.append(t.int(f"machine {m}: neighborhood"))
        loc.append(t.int(f"machine {m}: location"))
        cap.append([t.int(f"machine {m}: capacity of resource {r}") for r in range(n_res)])
        safe.append([t.int(f"machine {m}: safety capacity of resource {r}") for r in range(n_res)])
        mmc.append([t.int(f"machine {m}: move cost to machine {m2}") for m2 in range(n_mach)])
    n_svc = t.int("number of services S", lo=0)
    spread, deps = [], []
    for s in range(n_svc):
        spread.append(t.int(f"service {s}: spreadMin"))
        nd = t.int(f"service {s}: number of dependencies", hi=max(0, n_svc))
        deps.append(tuple(t.int(f"service {s}: dependency {k}", hi=n_svc - 1) for k in range(nd)))
    n_proc = t.int("number of processes P", lo=0)
    svc, req, pmc = [], [], []
    for p in range(n_proc):
        if n_svc == 0:
            raise InputError(f"process {p} but no services", source=t.where())
        svc.append(t.int(f"process {p}: service", hi=n_svc - 1))
        req.append([t.int(f"process {p}: requirement of resource {r}") for r in range(n_res)])
        pmc.append(t.int(f"process {p}: process move cost"))
    n_bal = t.int("number of balance objectives B", lo=0)
    balances = []
    for b in range(n_bal):
        r1 = t.int(f"balance {b}: r1", hi=n_res - 1)
        r2 = t.int(f"balance {b}: r2", hi=n_res - 1)
        target = t.int(f"balance {b}: target")
        balances.append(Balance(r1, r2, target, t.int(f"balance {b}: weight")))
    wp = t.int("process move cost weight")
    ws = t.int("service move cost weight")
    wm = t.int("machine move cost weight")
    t.end("the machine move cost weight (the last field)")
    i64 = np.int64
    return Instance(
        transient=np.array(transient, dtype=bool), load_weight=np.array(load_weight, dtype=i64),
        neighborhood=np.array(nbh, dtype=i64), location=np.array(loc, dtype=i64),
        capacity=np.array(cap, dtype=i64).reshape(n_mach, n_res),
        safety=np.array(safe, dtype=i64).reshape(n_mach, n_res),
        machine_move_cost=np.array(mmc, dtype=i64).reshape(n_mach, n_mach),
        spread_min=np.array(spread, dtype=i64), dependencies=tuple(deps),
        service=np.array(svc, dtype=i64), requirement=np.array(req, dtype=i64).reshape(n_proc, n_res),
        process_move_cost=np.array(pmc, dtype=i64), balances=tuple(balances),
        weight_process_move=wp, weight_service_move=ws, weight_machine_move=wm, source=source,
    )


def parse_assignment(text: str, instance: Instance, source: str = "<assignment>") -> np.ndarray:
    """Parse an assignment (one machine index per process, in process order)."""
    t = _Tokens(text, source)
    m_hi = instance.n_machines - 1
    out = np.array([t.int(f"machine of process {p}", hi=m_hi) for p in range(instance.n_processes)], dtype=np.int64)
    t.end(f"the {instance.n_processes} processes of the model")
    return out


def read_instance(path: str | os.PathLike[str]) -> Instance:
    return parse_instance(_read_text(path), str(path))


def read_assignment(path: str | os.PathLike[str], instance: Instance) -> np.ndarray:
    return parse_assignment(_read_text(path), instance, str(path))


def write_assignment(path: str | os.PathLike[str], assignment: Sequence[int] | np.ndarray) -> None:
    """Write an assignment in the challenge's format, atomically (temporary file in the same folder + replace)."""
    path = Path(path)
    text = " ".join(str(int(m)) for m in assignment) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def instance_name(model_path: str | os.PathLike[str]) -> str:
    """`a1_1` for `model_a1_1.txt` (the file's stem otherwise)."""
    stem = Path(model_path).stem
    return stem[len("model_"):] if stem.startswith("model_") else stem
