"""Carrying a rebalancing plan out against a cluster, wave by wave, through the Eviction API (policy/v1).

Per wave: every move's pod is evicted (POST pods/{name}/eviction); then, until `timeout` seconds have passed,
the pods of each moved pod's controller that were not there before the wave are its replacements: those
whose `schedulerName` is kplace's (`scheduler_name`) are bound to the planned nodes (POST pods/{name}/binding,
as kube-scheduler's DefaultBinder does), the others are left to their scheduler; planned placements of pending
pods are bound the same way. The next wave starts only when every replacement is bound and Running.
It stops, and reports what was done, at the first surprise: a PodDisruptionBudget refusal (429), any other API
error, a pod already gone, a replacement that landed elsewhere than planned, or the timeout.

The request bodies are the binder's (`binder.eviction_object` with a uid precondition, `binder.binding_object`);
the calls go through the official `kubernetes` client.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from kplace.models.index import ClusterIndex

from ..binder import BOUND, RetryPolicy, eviction_object, pod_uid, post_binding, split_key
from ..binder.kube import api as kube_api
from ..binder.kube import new_client


def _pod_owner(p) -> str | None:
    for o in p.metadata.owner_references or []:
        if o.controller:
            return o.uid or f"{o.kind}/{o.name}"
    return None


def apply_plan(plan: dict[str, Any], index: ClusterIndex, kubeconfig: str, context: str | None = None, *,
               timeout: float = 300.0, scheduler_name: str = "kplace", poll: float = 0.5) -> dict[str, Any]:
    """Execute `plan` (from `plan_rebalance`); returns a report {completed, waves_done, stopped, events}."""
    client = new_client(kubeconfig, context)
    try:
        return _apply(plan, index, kube_api(client, "CoreV1Api"), timeout, scheduler_name, poll)
    finally:
        client.close()


def _apply(plan: dict[str, Any], index: ClusterIndex, api, timeout: float, scheduler_name: str,
           poll: float) -> dict[str, Any]:
    from kubernetes.client.rest import ApiException

    events: list[dict[str, Any]] = []
    report: dict[str, Any] = {"completed": False, "waves_done": 0, "stopped": None, "events": events}
    waves = max([m["wave"] for m in plan["moves"]] + [p["wave"] or 0 for p in plan["placements"]], default=0)

    def stop(why: str) -> dict[str, Any]:
        report["stopped"] = why
        return report

    for w in range(1, waves + 1):
        moves = [m for m in plan["moves"] if m["wave"] == w]
        places = [p for p in plan["placements"] if p.get("wave") == w and p["node"]]
        namespaces = sorted({split_key(m["pod"])[0] for m in moves} | {split_key(p["pod"])[0] for p in places})
        try:
            before = {ns: {p.metadata.name for p in api.list_namespaced_pod(ns).items} for ns in namespaces}
        except ApiException as exc:
            return stop(f"wave {w}: listing pods failed: HTTP {exc.status} {exc.reason}")
        want: dict[str, list[str]] = defaultdict(list)  # owner → planned nodes of its replacements
        for m in moves:
            ns, name = split_key(m["pod"])
            body = eviction_object(ns, name, pod_uid(index, m["pod"]))
            try:
                api.create_namespaced_pod_eviction(name, ns, body)
            except ApiException as exc:
                if exc.status == 429:
                    return stop(f"wave {w}: eviction of {m['pod']} refused (429, a PodDisruptionBudget); stopped "
                                "safely, later moves not attempted")
                return stop(f"wave {w}: eviction of {m['pod']} failed: HTTP {exc.status} {exc.reason}")
            events.append({"wave": w, "action": "evicted", "pod": m["pod"], "from": m["from"]})
            pi = index.pod_by_key.get(m["pod"])
            owner = _pod_owner(pi.pod) if pi is not None else None
            if owner is None:
                return stop(f"wave {w}: {m['pod']} has no controller, so nothing will replace it")
            want[f"{ns}|{owner}"].append(m["to"])
        for p in list(places):
            ns, name = split_key(p["pod"])
            pi = index.pod_by_key.get(p["pod"])
            if pi is None or (pi.spec.scheduler_name or "default-scheduler") != scheduler_name:
                events.append({"wave": w, "action": "left to its scheduler", "pod": p["pod"], "node": p["node"]})
                places.remove(p)
                continue
            err = _bind(api, ns, name, pi.pod.metadata.uid, p["node"])
            if err:
                return stop(f"wave {w}: {err}")
            events.append({"wave": w, "action": "bound", "pod": p["pod"], "node": p["node"]})
        deadline = time.monotonic() + timeout
        handled: set[str] = set()
        while True:
            done = True
            try:
                current = {ns: api.list_namespaced_pod(ns).items for ns in namespaces}
            except ApiException as exc:
                return stop(f"wave {w}: listing pods failed: HTTP {exc.status} {exc.reason}")
            for key, nodes in want.items():
                ns, owner = key.split("|", 1)
                new = sorted((p for p in current[ns] if p.metadata.name not in before[ns]
                              and _pod_owner(p) == owner and p.metadata.deletion_timestamp is None),
                             key=lambda p: p.metadata.name)
                if len(new) < len(nodes):
                    done = False
                    continue
                free = list(nodes)
                for p in new:
                    if p.spec.node_name and p.spec.node_name in free:
                        free.remove(p.spec.node_name)
                for p in new[: len(nodes)]:
                    full = f"{ns}/{p.metadata.name}"
                    if not p.spec.node_name:
                        done = False
                        if full in handled or (p.spec.scheduler_name or "default-scheduler") != scheduler_name:
                            continue
                        dst = free.pop(0)
                        err = _bind(api, ns, p.metadata.name, p.metadata.uid, dst)
                        if err:
                            return stop(f"wave {w}: {err}")
                        handled.add(full)
                        events.append({"wave": w, "action": "bound replacement", "pod": full, "node": dst})
                    elif p.status.phase != "Running":
                        done = False
                    elif p.spec.node_name not in nodes and full not in handled:
                        handled.add(full)
                        events.append({"wave": w, "action": "replacement elsewhere", "pod": full,
                                       "node": p.spec.node_name})
            for p in places:
                ns, name = split_key(p["pod"])
                mine = next((q for q in current[ns] if q.metadata.name == name), None)
                if mine is None or mine.status.phase != "Running":
                    done = False
            if done:
                break
            if time.monotonic() > deadline:
                return stop(f"wave {w}: replacements not bound and Running within {timeout:g}s; stopped")
            time.sleep(poll)
        report["waves_done"] = w
    report["completed"] = True
    return report


def _bind(api, ns: str, name: str, uid: str | None, node: str) -> str | None:
    """One DefaultBinder POST, no retries (the wave stops on any surprise); None when bound, else why not."""
    result, code, message, _ = post_binding(api, ns, name, uid, node, RetryPolicy(attempts=1), time.sleep)
    return None if result == BOUND else f"binding {ns}/{name} to {node} failed: HTTP {code} {result}: {message}"
