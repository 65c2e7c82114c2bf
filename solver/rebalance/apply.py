"""Carrying a rebalancing plan out against a cluster, wave by wave, through the Eviction API (policy/v1).

A wave has four phases:
1. the names of the pods in the wave's namespaces are listed (what is there before it);
2. every move's pod is evicted (POST pods/{name}/eviction, with a uid precondition); a pod without a
   controller stops the run, as nothing would replace it;
3. planned placements of pending pods whose `schedulerName` is kplace's (`scheduler_name`) are bound to their
   nodes (POST pods/{name}/binding, as kube-scheduler's DefaultBinder does); the others are left to their
   scheduler;
4. until `timeout` seconds have passed, the pods of each moved pod's controller that were not there before the
   wave are its replacements: those of kplace's scheduler are bound to the planned nodes the others have not
   taken, the others are left to their scheduler, and one that runs elsewhere than planned is reported. The next
   wave starts only when every replacement and every bound placement is Running.
An eviction refused by a PodDisruptionBudget (429) is retried (after its Retry-After, else every second) until
`timeout` seconds have passed: the waves are PDB-safe as planned, so a refusal usually means the disruption
controller has not yet counted the previous wave's replacements as healthy, and `kubectl drain` retries likewise.
The run stops, and reports what was done, at the first surprise: an eviction still refused at the timeout, any
other API error, a pod without a controller, or the timeout.

The request bodies are the binder's (`binder.eviction_object`, `binder.binding_object`); the calls go through
the official `kubernetes` client.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kplace.models.index import ClusterIndex

from ..binder.api import post_binding
from ..binder.kube import api as kube_api
from ..binder.kube import new_client
from ..binder.objects import eviction_object, pod_uid, split_key
from ..binder.outcomes import BOUND
from ..binder.retry import RetryPolicy

DEFAULT_SCHEDULER = "default-scheduler"


def apply_plan(plan: dict[str, Any], index: ClusterIndex, kubeconfig: str, context: str | None = None, *,
               timeout: float = 300.0, scheduler_name: str = "kplace", poll: float = 0.5) -> dict[str, Any]:
    """Execute `plan` (from `plan_rebalance`); returns a report {completed, waves_done, stopped, events}."""
    client = new_client(kubeconfig, context)
    try:
        return _apply(plan, index, kube_api(client, "CoreV1Api"), timeout, scheduler_name, poll)
    finally:
        client.close()


class Stop(Exception):
    """A surprise that ends the run; its message says what happened."""


@dataclass
class Wave:
    """One wave of the plan and what carrying it out has learnt so far."""

    number: int
    moves: list[dict[str, Any]]
    places: list[dict[str, Any]]  # placements on a node that are bound here
    namespaces: list[str]
    before: dict[str, set[str]] = field(default_factory=dict)  # pod names per namespace before the wave
    want: dict[tuple[str, str], list[str]] = field(default_factory=lambda: defaultdict(list))  # (ns, owner) → nodes
    handled: set[str] = field(default_factory=set)  # replacements bound or reported elsewhere

    @classmethod
    def of(cls, plan: dict[str, Any], w: int) -> Wave:
        moves = [m for m in plan["moves"] if m["wave"] == w]
        places = [p for p in plan["placements"] if p.get("wave") == w and p["node"]]
        namespaces = sorted({split_key(m["pod"])[0] for m in moves} | {split_key(p["pod"])[0] for p in places})
        return cls(w, moves, places, namespaces)


def wave_count(plan: dict[str, Any]) -> int:
    return max([m["wave"] for m in plan["moves"]] + [p["wave"] or 0 for p in plan["placements"]], default=0)


def _apply(plan: dict[str, Any], index: ClusterIndex, api, timeout: float, scheduler_name: str,
           poll: float) -> dict[str, Any]:
    run = Run(index, api, scheduler_name)
    report: dict[str, Any] = {"completed": False, "waves_done": 0, "stopped": None, "events": run.events}
    for w in range(1, wave_count(plan) + 1):
        wave = Wave.of(plan, w)
        try:
            wave.before = {ns: {p.metadata.name for p in pods} for ns, pods in run.pods(wave.namespaces).items()}
            run.evict(wave, timeout)
            run.bind_placements(wave)
            run.settle(wave, timeout, poll)
        except Stop as exc:
            report["stopped"] = f"wave {w}: {exc}"
            return report
        report["waves_done"] = w
    report["completed"] = True
    return report


@contextmanager
def _api_errors(what: str):
    """An API error inside becomes `Stop("<what> failed: HTTP <status> <reason>")`."""
    from kubernetes.client.rest import ApiException

    try:
        yield
    except ApiException as exc:
        raise Stop(f"{what} failed: HTTP {exc.status} {exc.reason}") from exc


def _retry_after(exc) -> float | None:
    """The Retry-After header of an API error, in seconds, when it has one."""
    try:
        return float((exc.headers or {}).get("Retry-After"))
    except (TypeError, ValueError):
        return None


def _pod_owner(p) -> str | None:
    for o in p.metadata.owner_references or []:
        if o.controller:
            return o.uid or f"{o.kind}/{o.name}"
    return None


def _scheduler(spec) -> str:
    return spec.scheduler_name or DEFAULT_SCHEDULER


@dataclass
class Run:
    """The run's connection and its log of actions (`events`, in the report)."""

    index: ClusterIndex
    api: Any
    scheduler_name: str
    events: list[dict[str, Any]] = field(default_factory=list)

    def pods(self, namespaces: list[str]) -> dict[str, list]:
        with _api_errors("listing pods"):
            return {ns: self.api.list_namespaced_pod(ns).items for ns in namespaces}

    def evict(self, wave: Wave, timeout: float) -> None:
        """Phase 2: evict the wave's moves in order (a PDB refusal retried for up to `timeout` seconds), noting each
        owner's planned nodes in `wave.want`."""
        deadline = time.monotonic() + timeout
        for m in wave.moves:
            refusals = self._evict(m["pod"], deadline, timeout)
            self.events.append({"wave": wave.number, "action": "evicted", "pod": m["pod"], "from": m["from"],
                                **({"refused_first": refusals} if refusals else {})})
            pi = self.index.pod_by_key.get(m["pod"])
            owner = _pod_owner(pi.pod) if pi is not None else None
            if owner is None:
                raise Stop(f"{m['pod']} has no controller, so nothing will replace it")
            wave.want[split_key(m["pod"])[0], owner].append(m["to"])

    def _evict(self, key: str, deadline: float, timeout: float) -> int:
        """POST the eviction of `key`, again after each PDB refusal until `deadline`; the refusals before it went."""
        from kubernetes.client.rest import ApiException

        ns, name = split_key(key)
        body = eviction_object(ns, name, pod_uid(self.index, key))
        refusals = 0
        while True:
            try:
                self.api.create_namespaced_pod_eviction(name, ns, body)
                return refusals
            except ApiException as exc:
                if exc.status != 429:
                    raise Stop(f"eviction of {key} failed: HTTP {exc.status} {exc.reason}") from exc
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Stop(f"eviction of {key} refused (429, a PodDisruptionBudget) for {timeout:g}s; stopped "
                               "safely, later moves not attempted") from exc
                refusals += 1
                time.sleep(min(left, _retry_after(exc) or 1.0))

    def bind_placements(self, wave: Wave) -> None:
        """Phase 3: bind the placements of kplace's scheduler; the others leave `wave.places`."""
        for p in list(wave.places):
            ns, name = split_key(p["pod"])
            pi = self.index.pod_by_key.get(p["pod"])
            if pi is None or _scheduler(pi.spec) != self.scheduler_name:
                self.events.append({"wave": wave.number, "action": "left to its scheduler", "pod": p["pod"],
                                    "node": p["node"]})
                wave.places.remove(p)
                continue
            self._bind(ns, name, pi.pod.metadata.uid, p["node"])
            self.events.append({"wave": wave.number, "action": "bound", "pod": p["pod"], "node": p["node"]})

    def settle(self, wave: Wave, timeout: float, poll: float) -> None:
        """Phase 4: poll every `poll` seconds until the wave's replacements and placements run, for up to
        `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            current = self.pods(wave.namespaces)
            done = True
            for (ns, owner), nodes in wave.want.items():
                done = self._replacements_run(wave, ns, owner, nodes, current[ns]) and done
            done = _placements_run(wave, current) and done
            if done:
                return
            if time.monotonic() > deadline:
                raise Stop(f"replacements not bound and Running within {timeout:g}s; stopped")
            time.sleep(poll)

    def _replacements_run(self, wave: Wave, ns: str, owner: str, nodes: list[str], pods: list) -> bool:
        """Whether `owner`'s replacements (as many as `nodes`, the planned nodes) are bound and Running; binds the
        unbound ones of kplace's scheduler to the planned nodes still free, and reports one running elsewhere."""
        new = sorted((p for p in pods if p.metadata.name not in wave.before[ns]
                      and _pod_owner(p) == owner and p.metadata.deletion_timestamp is None),
                     key=lambda p: p.metadata.name)
        if len(new) < len(nodes):
            return False
        free = list(nodes)
        for p in new:
            if p.spec.node_name and p.spec.node_name in free:
                free.remove(p.spec.node_name)
        done = True
        for p in new[: len(nodes)]:
            full = f"{ns}/{p.metadata.name}"
            if not p.spec.node_name:
                done = False
                if full in wave.handled or _scheduler(p.spec) != self.scheduler_name:
                    continue
                dst = free.pop(0)
                self._bind(ns, p.metadata.name, p.metadata.uid, dst)
                wave.handled.add(full)
                self.events.append({"wave": wave.number, "action": "bound replacement", "pod": full, "node": dst})
            elif p.status.phase != "Running":
                done = False
            elif p.spec.node_name not in nodes and full not in wave.handled:
                wave.handled.add(full)
                self.events.append({"wave": wave.number, "action": "replacement elsewhere", "pod": full,
                                    "node": p.spec.node_name})
        return done

    def _bind(self, ns: str, name: str, uid: str | None, node: str) -> None:
        """One DefaultBinder POST, no retries (the wave stops on any surprise)."""
        result, code, message, _ = post_binding(self.api, ns, name, uid, node, RetryPolicy(attempts=1), time.sleep)
        if result != BOUND:
            raise Stop(f"binding {ns}/{name} to {node} failed: HTTP {code} {result}: {message}")


def _placements_run(wave: Wave, current: dict[str, list]) -> bool:
    """Whether every placement bound in the wave is Running."""
    done = True
    for p in wave.places:
        ns, name = split_key(p["pod"])
        mine = next((q for q in current[ns] if q.metadata.name == name), None)
        if mine is None or mine.status.phase != "Running":
            done = False
    return done
