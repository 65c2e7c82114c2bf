"""Binding a placement's claims through the API as VolumeBinding's PreBind does, before the pod's Binding.

A claim bound to a PersistentVolume gets the PV's `spec.claimRef` (a merge patch with the PV's
resourceVersion as a precondition); a claim provisioned on the node gets the `volume.kubernetes.io/selected-node`
annotation. Then the claim is polled until the PV controller (or the provisioner) has bound it, up to
`bindTimeoutSeconds` (kube's default 600). What was patched stays if the claim does not bind in time, as in
kube: the PV controller finishes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kplace.models.errors import ConfigError
from kplace.models.index import ClusterIndex
from kplace.models.plan import DYNAMIC, Placement

from .objects import ANN_SELECTED_NODE, claim_ref, claim_uid, split_key
from .outcomes import BOUND, CONFLICT, PATCHED, TIMEOUT, Outcome, failure_result
from .retry import RetryPolicy, json_call

BIND_TIMEOUT = 600.0  # kube's VolumeBinding bindTimeoutSeconds default

Stop = tuple[str, int, str]  # (result, HTTP code, message) of a claim's binding that ends early


def bind_timeout_of(config) -> float:
    """VolumeBinding's `bindTimeoutSeconds` from the profiles' plugin args (the largest), else kube's 600 s."""
    found = [p.args.get("bindTimeoutSeconds") for prof in config.profiles.values() for p in prof.at("filter")
             if p.name == "VolumeBinding" and p.args.get("bindTimeoutSeconds") is not None]
    for value in found:
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"VolumeBindingArgs.bindTimeoutSeconds: must be a non-negative number, got {value!r}")
    return float(max(found)) if found else BIND_TIMEOUT


class _Calls:
    """The JSON calls of one claim's binding, each retried (`json_call`); `tries` counts every try."""

    def __init__(self, retry: RetryPolicy, sleep: Callable[[float], None]) -> None:
        self.retry, self.sleep, self.tries = retry, sleep, 0

    def __call__(self, call: Callable[[], Any]):
        body, f, n = json_call(call, self.retry, self.sleep)
        self.tries += n
        return body, f


def bound_volume(pvc: dict[str, Any]) -> str | None:
    """The volume a claim is Bound to, or None while it is unbound."""
    vol = (pvc.get("spec") or {}).get("volumeName") or ""
    return vol if vol and (pvc.get("status") or {}).get("phase") == "Bound" else None


def bind_volume(core, p: Placement, claim: str, what: str, index: ClusterIndex, *, dry_run: bool,
                retry: RetryPolicy, sleep: Callable[[float], None], timeout: float) -> Outcome:
    """VolumeBinding's PreBind for one claim: claimRef on the PV (or the selected-node annotation on the claim),
    then wait until the claim is Bound (not in a dry run: the patch is only validated there)."""
    ns, name = split_key(claim)
    dry = "All" if dry_run else None
    t0 = time.perf_counter()
    calls = _Calls(retry, sleep)

    def done(result: str, code: int = 0, msg: str = "") -> Outcome:
        return Outcome("volume", p.pod, p.node, result, code, msg, calls.tries, time.perf_counter() - t0,
                       {"claim": claim, "volume": what})

    def read_claim():
        return calls(lambda: core.read_namespaced_persistent_volume_claim(
            name, ns, _preload_content=False, _request_timeout=retry.request_timeout))

    pvc, f = read_claim()
    if f is not None:
        return done(failure_result(f), f.code, f.message)
    have = bound_volume(pvc)
    if have is not None:
        if what in (DYNAMIC, have):
            return done(BOUND, 200, f"already bound to {have}")
        return done(CONFLICT, 409, f"the claim is bound to {have}, not {what}")
    if what == DYNAMIC:
        stop = _select_node(core, calls, pvc, ns, name, p.node, dry)
    else:
        uid = (pvc.get("metadata") or {}).get("uid") or claim_uid(index, claim)
        stop = _claim_volume(core, calls, ns, name, what, uid, dry)
    if stop is not None:
        return done(*stop)
    if dry_run:
        return done(PATCHED, 200, "server-side dry run: the patch was validated, the claim was not bound")
    return done(*_wait_bound(read_claim, what, timeout, sleep))


def _select_node(core, calls: _Calls, pvc: dict[str, Any], ns: str, name: str, node: str,
                 dry: str | None) -> Stop | None:
    """Annotate an unbound claim with the node to provision on; None when patched."""
    selected = ((pvc.get("metadata") or {}).get("annotations") or {}).get(ANN_SELECTED_NODE)
    if selected not in (None, node):
        return CONFLICT, 409, f"the claim is already being provisioned on node {selected}"
    patch = {"metadata": {"annotations": {ANN_SELECTED_NODE: node}}}
    _, f = calls(lambda: core.patch_namespaced_persistent_volume_claim(
        name, ns, patch, dry_run=dry, _preload_content=False, _request_timeout=calls.retry.request_timeout))
    return None if f is None else (failure_result(f, conflict=True), f.code, f.message)


def _claim_volume(core, calls: _Calls, ns: str, name: str, volume: str, uid: str | None,
                  dry: str | None) -> Stop | None:
    """Set the PV's claimRef to the claim (`uid` its uid when known), unless the PV is claimed by another; None
    when patched."""
    pv, f = calls(lambda: core.read_persistent_volume(
        volume, _preload_content=False, _request_timeout=calls.retry.request_timeout))
    if f is not None:
        return failure_result(f), f.code, f.message
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    if ref and (ref.get("namespace"), ref.get("name")) != (ns, name):
        return CONFLICT, 409, f"PersistentVolume {volume} is bound to claim {ref.get('namespace')}/{ref.get('name')}"
    patch: dict[str, Any] = {"metadata": {"resourceVersion": (pv.get("metadata") or {}).get("resourceVersion")},
                             "spec": {"claimRef": claim_ref(ns, name, uid)}}
    if patch["metadata"]["resourceVersion"] is None:
        del patch["metadata"]
    _, f = calls(lambda: core.patch_persistent_volume(
        volume, patch, dry_run=dry, _preload_content=False, _request_timeout=calls.retry.request_timeout))
    return None if f is None else (failure_result(f, conflict=True), f.code, f.message)


def _wait_bound(read_claim: Callable[[], tuple[Any, Any]], what: str, timeout: float,
                sleep: Callable[[float], None]) -> Stop:
    """Poll the claim until it is Bound (to `what`, unless DYNAMIC) or `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        pvc, f = read_claim()
        if f is None and (have := bound_volume(pvc)) is not None:
            if what not in (DYNAMIC, have):
                return CONFLICT, 409, f"the claim was bound to {have}, not {what}"
            return BOUND, 200, ""
        if time.monotonic() >= deadline:
            why = f.message if f is not None else "the claim is not Bound"
            return TIMEOUT, 0, f"{why} after {timeout:g}s (bindTimeoutSeconds)"
        sleep(min(0.2, max(0.0, deadline - time.monotonic())) or 0.01)

