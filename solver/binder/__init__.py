"""Committing a verified plan the way kube-scheduler does: a Binding manifest, or the Kubernetes API.

- `manifest`: v1 `Binding` objects in queue (plan) order, YAML (multi-document) or JSON (a v1 List), written
  atomically. Evictions the plan needs come as `policy/v1` `Eviction` objects just before the Binding of the
  pod that needs them (the preemptor). The claims a placement binds (`Placement.volume_bindings`) come just
  before its Binding too, as partial objects for `kubectl apply -f` (merged into the live objects): a
  `PersistentVolume` carrying only `spec.claimRef` (namespace, name, uid), or, for a claim provisioned on the
  node, a `PersistentVolumeClaim` carrying only the `volume.kubernetes.io/selected-node` annotation.
- `api`: each Eviction through the pods/eviction subresource first, then each Binding POSTed to
  `/api/v1/namespaces/{ns}/pods/{name}/binding` exactly as kube-scheduler's DefaultBinder does, in queue
  order with bounded concurrency (`commit_api`). Before a pod's Binding, its claims are bound as
  VolumeBinding's PreBind does: the PV's `spec.claimRef` is set (a merge patch with the PV's resourceVersion as
  a precondition) or the claim annotated with the selected node, then the claim is polled until the PV
  controller (or the provisioner) has bound it, up to `bind_timeout` seconds (kube's `bindTimeoutSeconds`,
  600). A claim that does not bind in time keeps the pod's Binding back (`skipped`); what was patched stays,
  as in kube, and the PV controller finishes it.

Only placements with a node are committed; `solver.schedule.decide` has already verified the plan.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kplace.models.errors import ConfigError, KplaceError
from kplace.models.index import ClusterIndex
from kplace.models.plan import DYNAMIC, Eviction, Placement, Plan

log = logging.getLogger("kplace.binder")

# Outcomes of one API call, as reported in the summary.
BOUND, EVICTED, GONE, PATCHED, TIMEOUT = "bound", "evicted", "gone", "patched", "timeout"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_TIMEOUT = 600.0  # kube's VolumeBinding bindTimeoutSeconds default
CONFLICT, NOT_FOUND, REJECTED, REFUSED, FAILED, SKIPPED = (
    "conflict", "not-found", "rejected", "refused", "failed", "skipped")


def split_key(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return (ns, name) if name else ("default", ns)


def binding_object(namespace: str, name: str, uid: str | None, node: str) -> dict[str, Any]:
    """DefaultBinder's v1.Binding (uid only when known: the API server then checks it as a precondition)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def eviction_object(namespace: str, name: str, uid: str | None = None, *, dry_run: bool = False) -> dict[str, Any]:
    """A policy/v1 Eviction of one pod (with a uid precondition when the uid is known)."""
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": namespace}}
    opts: dict[str, Any] = {}
    if uid:
        opts["preconditions"] = {"uid": uid}
    if dry_run:
        opts["dryRun"] = ["All"]
    if opts:
        body["deleteOptions"] = {"apiVersion": "v1", "kind": "DeleteOptions", **opts}
    return body


def pod_uid(index: ClusterIndex, key: str) -> str | None:
    pi = index.pod_by_key.get(key)
    return pi.pod.metadata.uid if pi is not None else None


def claim_uid(index: ClusterIndex, key: str) -> str | None:
    ns, name = split_key(key)
    pvc = next((c for c in index.snapshot.pvcs if c.metadata.namespace == ns and c.metadata.name == name), None)
    return pvc.metadata.uid if pvc is not None else None


def claim_ref(namespace: str, name: str, uid: str | None) -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": namespace, "name": name}
    if uid:
        ref["uid"] = uid
    return ref


def volume_object(claim: str, what: str, node: str, uid: str | None) -> dict[str, Any]:
    """The partial object `kubectl apply -f` merges to bind `claim`: the PV with its claimRef, or (`what` is
    DYNAMIC) the claim annotated with the node to provision on."""
    ns, name = split_key(claim)
    if what == DYNAMIC:
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": ns, "annotations": {ANN_SELECTED_NODE: node}}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": what},
            "spec": {"claimRef": claim_ref(ns, name, uid)}}


def commit_order(plan: Plan) -> list[tuple[str, Any]]:
    """("evict", Eviction), ("volume", (Placement, claim, PV or DYNAMIC)) and ("bind", Placement) steps: each
    pod's evictions, then the claims it binds, just before its Binding.

    Evictions whose preemptor the plan does not place (none in a verified plan) come first.
    """
    by_preemptor: dict[str, list[Eviction]] = {}
    for e in plan.evictions:
        by_preemptor.setdefault(e.preemptor, []).append(e)
    placed = {p.pod for p in plan.placements if p.node is not None}
    steps: list[tuple[str, Any]] = [("evict", e) for e in plan.evictions if e.preemptor not in placed]
    for p in plan.placements:
        if p.node is None:
            continue
        steps.extend(("evict", e) for e in by_preemptor.get(p.pod, []))
        steps.extend(("volume", (p, claim, what)) for claim, what in p.volume_bindings.items())
        steps.append(("bind", p))
    return steps


def manifest_objects(plan: Plan, index: ClusterIndex) -> list[dict[str, Any]]:
    """The plan as Kubernetes objects, in commit order."""
    out = []
    for step, item in commit_order(plan):
        ns, name = split_key(item[0].pod if step == "volume" else item.pod)
        if step == "evict":
            out.append(eviction_object(ns, name, pod_uid(index, item.pod)))
        elif step == "volume":
            p, claim, what = item
            out.append(volume_object(claim, what, p.node, claim_uid(index, claim)))
        else:
            out.append(binding_object(ns, name, pod_uid(index, item.pod), item.node))
    return out


def render_manifest(objects: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        from kplace.solver.output import dumps

        return dumps({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects})
    if fmt != "yaml":
        raise ValueError(f"unknown manifest format {fmt!r}")
    import yaml

    if not objects:
        return "# kplace: the plan binds no pod\n"
    return yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True)


def bind_timeout_of(config) -> float:
    """VolumeBinding's `bindTimeoutSeconds` from the profiles' plugin args (the largest), else kube's 600 s."""
    found = [p.args.get("bindTimeoutSeconds") for prof in config.profiles.values() for p in prof.at("filter")
             if p.name == "VolumeBinding" and p.args.get("bindTimeoutSeconds") is not None]
    for value in found:
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"VolumeBindingArgs.bindTimeoutSeconds: must be a non-negative number, got {value!r}")
    return float(max(found)) if found else BIND_TIMEOUT


def commit(plan: Plan, index: ClusterIndex, mode: str, *, out_file: str | None = None, fmt: str = "yaml",
           kubeconfig: str | None = None, context: str | None = None, dry_run: bool = False,
           **api_options: Any) -> dict[str, Any]:
    """Commit `plan` (`mode`: "manifest" or "api") and return a JSON-able summary of the outcomes. A plan with
    moves carries them out first, wave by wave (`rebalance.apply`), and binds nothing unless every wave
    completed."""
    if mode == "manifest":
        if not out_file:
            raise KplaceError("--bind manifest needs an output file")
        if plan.moves:
            raise KplaceError("a plan with moves cannot be written as a manifest: the replacements' names are known "
                              "only once their controllers create them; commit it with --bind api")
        objects = manifest_objects(plan, index)
        text = render_manifest(objects, fmt)
        if out_file == "-":
            import sys

            sys.stdout.write(text)
        else:
            from kplace.solver.output import write_atomic

            write_atomic(out_file, text)
        kinds = [o["kind"] for o in objects]
        out = {"mode": "manifest", "file": out_file, "format": fmt, "bindings": kinds.count("Binding"),
               "evictions": kinds.count("Eviction")}
        volumes = kinds.count("PersistentVolume") + kinds.count("PersistentVolumeClaim")
        if volumes:
            out["volumes"] = volumes
        return out
    if mode == "api":
        if not kubeconfig:
            raise KplaceError("--bind api needs --kubeconfig")
        from .kube import new_client

        moved = None
        if plan.moves:
            if dry_run:
                raise KplaceError("--dry-run cannot simulate moves (their replacements are created by controllers)")
            from ..rebalance.apply import apply_plan

            moved = apply_plan({"moves": [{"pod": m.pod, "from": m.from_node, "to": m.to, "wave": m.wave}
                                          for m in plan.moves], "placements": []}, index, kubeconfig, context,
                               timeout=api_options.get("bind_timeout", 300.0))
            if not moved["completed"]:
                return {"mode": "api", "moves": moved, "outcomes": [],
                        "stopped": f"the moves stopped ({moved['stopped']}): nothing was bound"}
        client = new_client(kubeconfig, context, pool=api_options.get("concurrency", 8))
        try:
            out = commit_api(plan, index, client, dry_run=dry_run, **api_options)
        finally:
            client.close()
        if moved is not None:
            out["moves"] = moved
        return out
    raise ValueError(f"unknown bind mode {mode!r}")


# --- the API ---------------------------------------------------------------------------------------------


def _timeouts():
    from .kube import TIMEOUTS

    return TIMEOUTS


@dataclass
class RetryPolicy:
    """429, 5xx and timeouts are retried up to `attempts` calls in all, waiting base·2^k (capped, or the
    server's Retry-After when it is shorter than the cap) between them."""

    attempts: int = 5
    base: float = 0.25
    cap: float = 4.0
    timeout: float = field(default_factory=lambda: _timeouts().call)  # seconds per call (connect and read)
    total: float = 60.0  # seconds for all tries of one call, waits included: no try starts that could end later

    @property
    def request_timeout(self) -> tuple[float, float]:
        """The kubernetes client's `_request_timeout`: it applies only an int or a (connect, read) pair."""
        from .kube import request_timeout

        return request_timeout(self.timeout)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        d = min(self.base * 2 ** (attempt - 1), self.cap)
        if retry_after is not None:
            d = min(max(retry_after, 0.0), self.cap)
        return d


@dataclass
class Outcome:
    step: str  # "evict" or "bind"
    pod: str
    node: str
    result: str
    code: int = 0
    message: str = ""
    attempts: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {"step": self.step, "pod": self.pod, "node": self.node, "result": self.result, "code": self.code,
               "attempts": self.attempts}
        if self.message:
            out["message"] = self.message
        out.update(self.extra)
        return out


def _call_with_retries(call: Callable[[], Any], retry: RetryPolicy, sleep: Callable[[float], None],
                       *, pdb_refusal: bool = False):
    """(code, failure or None, attempts): runs `call` until it succeeds, fails for good, or runs out of tries."""
    from .kube import failure, transport_errors

    errors = transport_errors()
    attempt = 0
    started = time.monotonic()
    while True:
        attempt += 1
        try:
            resp = call()
            try:
                code = resp.status
                resp.read()  # drain the body: a connection given back with bytes unread corrupts the next call
            finally:
                resp.release_conn()
            return code, None, attempt
        except errors as exc:
            f = failure(exc)
            if pdb_refusal and f.code == 429 and _is_pdb_refusal(f):
                return f.code, f, attempt
            d = retry.delay(attempt, f.retry_after)
            if (not f.transient or attempt >= retry.attempts
                    or time.monotonic() - started + d + retry.timeout > retry.total):
                return f.code, f, attempt
            log.info("retrying after HTTP %s %s (attempt %d, waiting %.2fs)", f.code, f.reason, attempt, d)
            sleep(d)


def _is_pdb_refusal(f) -> bool:
    causes = f.causes or []
    return any(c.get("reason") == "DisruptionBudget" for c in causes if isinstance(c, dict)) or \
        "disruption budget" in f.message.lower()


def _wait_gone(core, victims: list[tuple[str, str, str | None]], timeout: float,
               sleep: Callable[[float], None]) -> str | None:
    """Poll until every victim (namespace, name, uid) is gone (404, or replaced by a pod with another uid).

    kube-scheduler does not bind a preemptor while its victims are still terminating: it nominates the node
    and binds in a later cycle, so the kubelet never sees the node over-committed. Returns None when all are
    gone, else why not.
    """
    from .kube import raw_json

    deadline = time.monotonic() + timeout
    pending = list(victims)
    while pending:
        still = []
        for ns, name, uid in pending:
            try:
                body = raw_json(core.read_namespaced_pod(name, ns, _preload_content=False)) or {}
                if uid is None or (body.get("metadata") or {}).get("uid") == uid:
                    still.append((ns, name, uid))
            except Exception as exc:  # ApiException: 404 means gone; anything else, keep waiting
                if getattr(exc, "status", None) != 404:
                    still.append((ns, name, uid))
        pending = still
        if pending and time.monotonic() >= deadline:
            names = ", ".join(f"{ns}/{name}" for ns, name, _ in pending)
            return f"victims still terminating after {timeout:g}s: {names}"
        if pending:
            sleep(0.2)
    return None


class _Body:
    """Wraps a raw response so `_call_with_retries` drains it while the JSON body is kept (`holder["body"]`)."""

    def __init__(self, resp, holder: dict[str, Any]) -> None:
        self.resp, self.holder, self.status = resp, holder, resp.status

    def read(self) -> bytes:
        import json as _json

        data = self.resp.read()
        self.holder["body"] = _json.loads(data or b"{}")
        return data

    def release_conn(self) -> None:
        self.resp.release_conn()


def _json_call(call: Callable[[], Any], retry: RetryPolicy, sleep: Callable[[float], None]):
    """(JSON body or None, failure or None, attempts) of one API call, retried as every other call."""
    holder: dict[str, Any] = {}
    _, f, n = _call_with_retries(lambda: _Body(call(), holder), retry, sleep)
    return holder.get("body"), f, n


def bind_volume(core, p: Placement, claim: str, what: str, index: ClusterIndex, *, dry_run: bool,
                retry: RetryPolicy, sleep: Callable[[float], None], timeout: float) -> Outcome:
    """VolumeBinding's PreBind for one claim: claimRef on the PV (or the selected-node annotation on the claim),
    then wait until the claim is Bound (not in a dry run: the patch is only validated there)."""
    ns, name = split_key(claim)
    dry = "All" if dry_run else None
    t0 = time.perf_counter()
    extra = {"claim": claim, "volume": what}
    tries = 0

    def done(result: str, code: int = 0, msg: str = "") -> Outcome:
        return Outcome("volume", p.pod, p.node, result, code, msg, tries, time.perf_counter() - t0, extra)

    def read_claim():
        nonlocal tries
        body, f, n = _json_call(lambda: core.read_namespaced_persistent_volume_claim(
            name, ns, _preload_content=False, _request_timeout=retry.request_timeout), retry, sleep)
        tries += n
        return body, f

    def bound(pvc: dict[str, Any]) -> str | None:
        """None while the claim is unbound; else the volume it is bound to."""
        vol = (pvc.get("spec") or {}).get("volumeName") or ""
        return vol if vol and (pvc.get("status") or {}).get("phase") == "Bound" else None

    pvc, f = read_claim()
    if f is not None:
        return done(_failure(f), f.code, f.message)
    have = bound(pvc)
    if have is not None:
        if what in (DYNAMIC, have):
            return done(BOUND, 200, f"already bound to {have}")
        return done(CONFLICT, 409, f"the claim is bound to {have}, not {what}")
    if what == DYNAMIC:
        selected = ((pvc.get("metadata") or {}).get("annotations") or {}).get(ANN_SELECTED_NODE)
        if selected not in (None, p.node):
            return done(CONFLICT, 409, f"the claim is already being provisioned on node {selected}")
        patch = {"metadata": {"annotations": {ANN_SELECTED_NODE: p.node}}}
        _, f, n = _json_call(lambda: core.patch_namespaced_persistent_volume_claim(
            name, ns, patch, dry_run=dry, _preload_content=False, _request_timeout=retry.request_timeout), retry, sleep)
    else:
        pv, f, n = _json_call(lambda: core.read_persistent_volume(
            what, _preload_content=False, _request_timeout=retry.request_timeout), retry, sleep)
        tries += n
        if f is not None:
            return done(_failure(f), f.code, f.message)
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        uid = (pvc.get("metadata") or {}).get("uid") or claim_uid(index, claim)
        if ref and (ref.get("namespace"), ref.get("name")) != (ns, name):
            return done(CONFLICT, 409, f"PersistentVolume {what} is bound to claim {ref.get('namespace')}/"
                                       f"{ref.get('name')}")
        patch = {"metadata": {"resourceVersion": (pv.get("metadata") or {}).get("resourceVersion")},
                 "spec": {"claimRef": claim_ref(ns, name, uid)}}
        if patch["metadata"]["resourceVersion"] is None:
            del patch["metadata"]
        _, f, n = _json_call(lambda: core.patch_persistent_volume(
            what, patch, dry_run=dry, _preload_content=False, _request_timeout=retry.request_timeout), retry, sleep)
    tries += n
    if f is not None:
        return done(_failure(f, conflict=True), f.code, f.message)
    if dry_run:
        return done(PATCHED, 200, "server-side dry run: the patch was validated, the claim was not bound")
    deadline = time.monotonic() + timeout
    while True:
        pvc, f = read_claim()
        if f is None and (have := bound(pvc)) is not None:
            if what not in (DYNAMIC, have):
                return done(CONFLICT, 409, f"the claim was bound to {have}, not {what}")
            return done(BOUND, 200)
        if time.monotonic() >= deadline:
            why = f.message if f is not None else "the claim is not Bound"
            return done(TIMEOUT, 0, f"{why} after {timeout:g}s (bindTimeoutSeconds)")
        sleep(min(0.2, max(0.0, deadline - time.monotonic())) or 0.01)


def _failure(f, *, conflict: bool = False) -> str:
    """The outcome of a call that failed for good: not-found on 404, conflict on 409 where the caller reads it
    so, failed when it might pass on a later try (429, 5xx, timeouts), rejected otherwise."""
    if conflict and f.code == 409:
        return CONFLICT
    if f.code == 404:
        return NOT_FOUND
    return FAILED if f.transient else REJECTED


def post_binding(core, ns: str, name: str, uid: str | None, node: str, retry: RetryPolicy,
                 sleep: Callable[[float], None], dry: str | None = None) -> tuple[str, int, str, int]:
    """POST pods/binding exactly as DefaultBinder does: (result, HTTP code, message, attempts). A 409 saying the
    pod is already on `node`, after a retry, counts as bound: the earlier attempt's answer was lost."""
    body = binding_object(ns, name, uid, node)
    code, f, n = _call_with_retries(
        lambda: core.create_namespaced_pod_binding(name, ns, body, dry_run=dry, _preload_content=False,
                                                   _request_timeout=retry.request_timeout),
        retry, sleep)
    if f is None:
        return BOUND, code, "", n
    if f.code == 409 and n > 1 and f'already assigned to node "{node}"' in f.message:
        return BOUND, code, "bound by an earlier attempt whose answer was lost", n
    return _failure(f, conflict=True), code, f.message, n


def commit_api(plan: Plan, index: ClusterIndex, client, *, dry_run: bool = False, concurrency: int = 8,
               retry: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep,
               should_stop: Callable[[], bool] | None = None, victim_timeout: float = 120.0,
               bind_timeout: float = BIND_TIMEOUT) -> dict[str, Any]:
    """Evictions, then Bindings, through the API; one pod's failure never stops the others.

    A Binding answered 201 is `bound`. 409 (already bound, uid mismatch) is `conflict` and 404 (pod gone)
    `not-found`: reported, not counted as placed, and the capacity the plan held for the pod is listed as
    released. 429, 5xx and timeouts are retried (`RetryPolicy`) and then reported as `failed`. An eviction
    refused by a PodDisruptionBudget (429 with a DisruptionBudget cause) is `refused`; the Binding of the
    pod that needed it is then `skipped`. A preemptor is bound only once its victims are gone (up to
    `victim_timeout` seconds; then its Binding is `skipped` and it stays pending for the next attempt).
    `should_stop` is consulted only between the eviction phase and the binding phase: once a window's
    bindings start they all finish, so nothing is left half-committed. The claims a placement binds are bound
    first (`bind_volume`, one `volume` outcome each); if one fails or is not Bound within `bind_timeout`
    seconds, the pod's Binding is `skipped`.
    """
    from .kube import api

    retry = retry or RetryPolicy()
    core = api(client, "CoreV1Api")
    dry = "All" if dry_run else None
    started = time.perf_counter()
    steps = commit_order(plan)
    evictions = [e for s, e in steps if s == "evict"]
    bindings = [p for s, p in steps if s == "bind"]

    def evict(e: Eviction) -> Outcome:
        ns, name = split_key(e.pod)
        body = eviction_object(ns, name, pod_uid(index, e.pod), dry_run=dry_run)
        t0 = time.perf_counter()
        code, f, n = _call_with_retries(
            lambda: core.create_namespaced_pod_eviction(name, ns, body, dry_run=dry, _preload_content=False,
                                                        _request_timeout=retry.request_timeout),
            retry, sleep, pdb_refusal=True)
        if f is None:
            result, msg = EVICTED, ""
        elif f.code == 404:
            result, msg = GONE, f.message
        elif f.code == 429 and _is_pdb_refusal(f):
            result, msg = REFUSED, f.message
        else:
            result, msg = _failure(f), f.message
        return Outcome("evict", e.pod, e.node, result, code, msg, n, time.perf_counter() - t0,
                       {"preemptor": e.preemptor})

    def bind_all(p) -> list[Outcome]:
        done = []
        for claim, what in p.volume_bindings.items():
            o = bind_volume(core, p, claim, what, index, dry_run=dry_run, retry=retry, sleep=sleep,
                            timeout=bind_timeout)
            done.append(o)
            if o.result not in (BOUND, PATCHED):
                why = f"claim {claim} {o.result}: {o.message}".strip()
                return [*done, Outcome("bind", p.pod, p.node, SKIPPED, 0, why)]
        return [*done, bind(p)]

    def bind(p) -> Outcome:
        ns, name = split_key(p.pod)
        t0 = time.perf_counter()
        result, code, msg, n = post_binding(core, ns, name, pod_uid(index, p.pod), p.node, retry, sleep, dry)
        return Outcome("bind", p.pod, p.node, result, code, msg, n, time.perf_counter() - t0)

    workers = max(1, concurrency)
    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kplace-bind") as pool:
        evicted = list(pool.map(evict, evictions))
        outcomes.extend(evicted)
        blocked: dict[str, str] = {}
        victims: dict[str, list[tuple[str, str, str | None]]] = {}
        for o in evicted:
            if o.result not in (EVICTED, GONE):
                blocked.setdefault(o.extra["preemptor"], f"eviction of {o.pod} {o.result}: {o.message}".strip())
            elif o.result == EVICTED and not dry_run:
                victims.setdefault(o.extra["preemptor"], []).append((*split_key(o.pod), pod_uid(index, o.pod)))
        for preemptor, gone in victims.items():
            if preemptor not in blocked:
                why = _wait_gone(core, gone, victim_timeout, sleep)
                if why is not None:
                    blocked[preemptor] = why
        if should_stop is not None and should_stop():
            skipped = [Outcome("bind", p.pod, p.node, SKIPPED, 0, "stopping before the bindings started")
                       for p in bindings]
            outcomes.extend(skipped)
        else:
            futures = []
            for p in bindings:
                if p.pod in blocked:
                    futures.append([Outcome("bind", p.pod, p.node, SKIPPED, 0, blocked[p.pod])])
                else:
                    futures.append(pool.submit(bind_all, p))
            for f in futures:
                outcomes.extend(f if isinstance(f, list) else f.result())
    return summarize(outcomes, index, dry_run=dry_run, seconds=time.perf_counter() - started)


def summarize(outcomes: list[Outcome], index: ClusterIndex | None, *, dry_run: bool, seconds: float
              ) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for o in outcomes:
        key = f"{o.step}:{o.result}"
        counts[key] = counts.get(key, 0) + 1
    released = []
    for o in outcomes:
        if o.step == "bind" and o.result != BOUND:
            pi = index.pod_by_key.get(o.pod) if index is not None else None
            released.append({"pod": o.pod, "node": o.node, "requests": dict(pi.requests) if pi else {}})
    return {
        "mode": "api",
        "dry_run": dry_run,
        "placed": sum(1 for o in outcomes if o.step == "bind" and o.result == BOUND),
        "counts": counts,
        "outcomes": [o.to_dict() for o in outcomes],
        "released": released,
        "seconds": round(seconds, 4),
    }


def commit_shortfall(summary: dict[str, Any]) -> str | None:
    """One line saying what an API commit did not do, or None when every call succeeded."""
    if summary.get("mode") != "api":
        return None
    if summary.get("stopped"):
        return summary["stopped"]
    problems = [o for o in summary["outcomes"] if o["result"] not in (BOUND, EVICTED, PATCHED)]
    if not problems:
        return None
    binds = [o for o in summary["outcomes"] if o["step"] == "bind"]
    bound = sum(1 for o in binds if o["result"] == BOUND)
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(Counter(o["result"] for o in problems).items()))
    return (f"the commit did not fully succeed: {bound} of {len(binds)} Binding(s) made; {len(problems)} call(s) "
            f"did not succeed ({kinds})")


def render_commit(summary: dict[str, Any], limit: int = 50) -> None:
    """The commit's outcomes as a table (rich)."""
    from kplace.solver.output import console as make_console
    from rich.table import Table

    console = make_console()
    if summary.get("mode") == "manifest":
        vols = f", {summary['volumes']} PV/PVC patch(es)" if summary.get("volumes") else ""
        console.print(f"[bold]manifest[/]: {summary['bindings']} Binding(s) and {summary['evictions']} "
                      f"Eviction(s){vols} written to {summary['file']} ({summary['format']})", highlight=False)
        return
    if summary.get("moves"):
        m = summary["moves"]
        console.print(f"[bold]moves[/]: {m['waves_done']} wave(s) done" + (f"; stopped: {m['stopped']}"
                                                                            if m.get("stopped") else ""),
                      highlight=False)
    if summary.get("stopped"):
        console.print(f"[red]{summary['stopped']}[/]", highlight=False)
        return
    dry = " (server-side dry run)" if summary.get("dry_run") else ""
    counts = ", ".join(f"{v} {k}" for k, v in sorted(summary["counts"].items())) or "nothing to commit"
    console.print(f"[bold]api{dry}[/]: {summary['placed']} pod(s) bound; {counts}; {summary['seconds']:.2f}s",
                  highlight=False)
    problems = [o for o in summary["outcomes"] if o["result"] not in (BOUND, EVICTED, PATCHED)]
    if problems:
        t = Table(title="Calls that did not succeed", title_justify="left")
        for c in ("step", "pod", "node", "result", "code", "tries", "message"):
            t.add_column(c, overflow="fold")
        for o in problems[:limit]:
            t.add_row(o["step"], o["pod"], o["node"], o["result"], str(o["code"] or "-"), str(o["attempts"]),
                      o.get("message", ""))
        console.print(t)
        if len(problems) > limit:
            console.print(f"... {len(problems) - limit} more (use --output json for all)")
