"""Leader election over a coordination.k8s.io/v1 Lease (client-go's protocol) against the fake API server, with a
controlled clock: create, renew, expiry judged from when a candidate saw the record change, optimistic
concurrency on resourceVersion, the renew deadline, release; and `kplace run` replicas that only bind as leader."""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from kplace.models.errors import KplaceError
from kplace.solver.binder.kube import new_client
from kplace.solver.binder.leader import LeaderElectionOptions, LeaderElector, LeaseError, LeaseLock
from kplace.solver.binder.loop import Runner, RunOptions
from kplace.solver.testing import node, pod

MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
OURS = {"schedulerName": "kplace"}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def wall(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self.t)


@pytest.fixture
def lease_api(fake_api):
    api = fake_api([])
    clients = []

    def candidate(identity: str, clock: Clock, **opts) -> LeaderElector:
        client = new_client(api.kubeconfig_path)
        clients.append(client)
        o = LeaderElectionOptions(identity=identity, **{"lease_duration": 15, "renew_deadline": 10,
                                                        "retry_period": 2, **opts})
        return LeaderElector(LeaseLock(client, o.resource_namespace, o.resource_name), o, clock=clock,
                             now=getattr(clock, "wall", lambda: datetime.now(UTC)))

    api.candidate = candidate
    yield api
    for c in clients:
        c.close()


def test_the_options_are_checked_as_client_go_checks_them():
    LeaderElectionOptions().validate()  # kube-scheduler's defaults: 15 s, 10 s, 2 s
    with pytest.raises(KplaceError, match=r"lease-duration .* must be greater than --leader-elect-renew-deadline"):
        LeaderElectionOptions(lease_duration=10, renew_deadline=10).validate()
    with pytest.raises(KplaceError, match=r"renew-deadline .* must be greater than 1\.2"):
        LeaderElectionOptions(renew_deadline=2.3, retry_period=2).validate()
    assert re.match(r"^.+_[0-9a-f-]{36}$", LeaderElectionOptions().identity)  # hostname_uuid


def test_the_first_candidate_creates_the_lease_and_a_second_waits_a_full_lease_duration_from_its_own_view(
        lease_api):
    ca, cb = Clock(), Clock()
    a, b = lease_api.candidate("a", ca), lease_api.candidate("b", cb)
    assert a.try_acquire_or_renew()
    spec = lease_api.lease("kplace")["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15 and spec["leaseTransitions"] == 0
    assert MICRO.match(spec["acquireTime"]) and spec["acquireTime"] == spec["renewTime"]

    assert not b.try_acquire_or_renew() and b.leader == "a"
    cb.t += 14.9  # a has not renewed, but b saw the record change less than 15 s ago
    assert not b.try_acquire_or_renew()
    ca.t += 5
    assert a.try_acquire_or_renew()  # a renews: same acquireTime and transitions, a later renewTime
    renewed = lease_api.lease("kplace")["spec"]
    assert renewed["acquireTime"] == spec["acquireTime"] and renewed["renewTime"] > spec["renewTime"]
    assert renewed["leaseTransitions"] == 0
    cb.t += 0.2  # 15.1 s after b first saw it, but the record changed since: b's wait starts again
    assert not b.try_acquire_or_renew()
    cb.t += 15.0
    assert b.try_acquire_or_renew()  # a's renewal stopped: b takes the lease over
    taken = lease_api.lease("kplace")["spec"]
    assert taken["holderIdentity"] == "b" and taken["leaseTransitions"] == 1
    assert taken["acquireTime"] == taken["renewTime"] != renewed["acquireTime"]
    assert not a.try_acquire_or_renew() and a.leader == "b"  # a sees b's record and does not renew over it


def test_of_two_candidates_updating_the_same_version_only_one_wins(lease_api):
    ca, cb, cc = Clock(), Clock(), Clock()
    a, b, c = (lease_api.candidate(n, k) for n, k in (("a", ca), ("b", cb), ("c", cc)))
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew() and not c.try_acquire_or_renew()
    cb.t += 16
    cc.t += 16
    stale = c.lock.get(5)
    c.lock.get = lambda timeout: stale  # c read the Lease before b wrote it
    assert b.try_acquire_or_renew()
    assert not c.try_acquire_or_renew()  # its PUT carries the old resourceVersion: 409
    assert lease_api.lease("kplace")["spec"]["holderIdentity"] == "b"
    with pytest.raises(LeaseError, match="HTTP 409 Conflict"):
        c.lock.update({"holderIdentity": "c"}, stale[1], 5)


def test_the_leader_stops_being_leader_at_the_renew_deadline_even_while_a_renewal_hangs(lease_api):
    clock = Clock()
    a = lease_api.candidate("a", clock)
    assert a.try_acquire_or_renew()
    a._became(True)
    clock.t += 9.9
    assert a.is_leader()
    assert a._call_timeout() == pytest.approx(0.1)  # a call never runs past the deadline
    clock.t += 0.1
    assert not a.is_leader()


def test_the_renew_loop_gives_up_after_the_deadline_when_the_api_server_fails(lease_api):
    a = lease_api.candidate("a", time.monotonic, lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)
    events = []
    a.on_started, a.on_stopped = (lambda: events.append("started")), (lambda: events.append("stopped"))
    stop = threading.Event()
    t = threading.Thread(target=a.run, args=(stop,), daemon=True)
    t.start()
    try:
        assert _wait(lambda: events == ["started"]) and a.is_leader()
        lease_api.fail("/leases/kplace$", 500, times=10**6, method="GET")
        assert _wait(lambda: events == ["started", "stopped"], timeout=3)
        assert not a.is_leader()
        lease_api.faults.clear()
        assert _wait(lambda: events == ["started", "stopped", "started"], timeout=3)  # still our record: renewed
    finally:
        stop.set()
        t.join(5)
    assert a.release()
    spec = lease_api.lease("kplace")["spec"]
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1 and spec["leaseTransitions"] == 0


def test_a_released_lease_is_taken_at_the_next_attempt_without_waiting_out_the_duration(lease_api):
    ca, cb = Clock(), Clock()
    a, b = lease_api.candidate("a", ca), lease_api.candidate("b", cb)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.release()
    assert b.try_acquire_or_renew()
    spec = lease_api.lease("kplace")["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert a.release()  # a no longer holds it: nothing to do, and b keeps it
    assert lease_api.lease("kplace")["spec"]["holderIdentity"] == "b"


def _wait(cond, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def _bound(api, name):
    p = api.get("Pod", name)
    return p is not None and (p.get("spec") or {}).get("nodeName")


def _replica(api, identity):
    le = LeaderElectionOptions(identity=identity, lease_duration=1.5, renew_deadline=1.0, retry_period=0.2)
    runner = Runner(api.kubeconfig_path, None, RunOptions(port=0, bind_address="127.0.0.1", engine="greedy",
                                                          watch_timeout=2, sync_timeout=10.0, leader_election=le))
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    return runner, thread


def _gauge(runner):
    return runner.metrics.registry.get_sample_value("leader_election_master_status", {"name": "kplace"})


def test_only_the_leader_binds_and_a_standby_takes_over_when_the_leader_stops(fake_api):
    api = fake_api([node("a", cpu="8"), *(pod(f"p{i}", cpu="500m", spec=OURS) for i in range(3))])
    r1, t1 = _replica(api, "one")
    assert _wait(lambda: all(_bound(api, f"p{i}") for i in range(3)))
    r2, t2 = _replica(api, "two")
    try:
        assert _wait(lambda: r2.healthy)
        assert _gauge(r1) == 1 and _gauge(r2) == 0 and not r2.leading()
        api.create(pod("q0", cpu="500m", spec=OURS))
        assert _wait(lambda: _bound(api, "q0"))
        time.sleep(0.5)
        assert r1.metrics.scheduled._value.get() == 4 and r2.metrics.scheduled._value.get() == 0
        r1.stop()
        t1.join(10)
        assert api.lease("kplace")["spec"]["holderIdentity"] in ("", "two")  # released at the stop
        assert _wait(lambda: r2.leading(), timeout=3) and _gauge(r2) == 1
        api.create(pod("q1", cpu="500m", spec=OURS))
        assert _wait(lambda: _bound(api, "q1"))
        assert _wait(lambda: r2.metrics.scheduled._value.get() == 1, timeout=3)  # counted once the commit returns
        binds = [c["path"] for c in api.calls("POST") if c["path"].endswith("/binding")]
        assert len(binds) == len(set(binds)) == 5  # every pod bound exactly once
    finally:
        r1.stop()
        r2.stop()
        t2.join(10)


def test_a_leader_that_cannot_renew_sends_nothing_more(fake_api):
    api = fake_api([node("a", cpu="8"), pod("p0", cpu="500m", spec=OURS)])
    r1, t1 = _replica(api, "one")
    try:
        assert _wait(lambda: _bound(api, "p0"))
        api.fail("/leases/kplace$", 503, times=10**6, method="GET")
        assert _wait(lambda: not r1.leading(), timeout=3) and _gauge(r1) == 0
        api.create(pod("p1", cpu="500m", spec=OURS))
        time.sleep(1.0)
        assert not _bound(api, "p1")  # the standby decides nothing
        api.faults.clear()
        assert _wait(lambda: _bound(api, "p1"), timeout=5)  # the Lease is still ours: renewed, binding again
    finally:
        r1.stop()
        t1.join(10)


def test_a_binding_being_retried_is_not_sent_again_once_the_lease_is_lost(fake_api):
    from kplace.solver.binder.api import NOT_LEADER, post_binding
    from kplace.solver.binder.kube import api as typed
    from kplace.solver.binder.outcomes import SKIPPED
    from kplace.solver.binder.retry import RetryPolicy

    api = fake_api([node("a"), pod("p", spec=OURS)])
    api.fail("/pods/p/binding$", 503, times=5)
    answers = iter([True, True, False])  # leading for two tries, then the lease is lost
    client = new_client(api.kubeconfig_path)
    try:
        result, code, msg, _ = post_binding(typed(client, "CoreV1Api"), "default", "p", None, "a",
                                            RetryPolicy(base=0.01), lambda s: None, leading=lambda: next(answers))
    finally:
        client.close()
    assert (result, code, msg) == (SKIPPED, 0, NOT_LEADER)
    assert len(api.calls("POST", "/binding$")) == 2 and not _bound(api, "p")
