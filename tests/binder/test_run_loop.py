"""`kplace run` end to end against the fake API server: list+watch, windows, bindings, backoff, 410, stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from kplace.solver.binder.loop import Runner, RunOptions, backoff_seconds, window_budget
from kplace.solver.testing import node, pod

OURS = {"schedulerName": "kplace"}


def _opts(**kw):
    base = {"port": 0, "bind_address": "127.0.0.1", "engine": "greedy", "watch_timeout": 2, "idle_exit": 5.0,
            "sync_timeout": 10.0}
    return RunOptions(**{**base, **kw})


def _start(api, **kw):
    runner = Runner(api.kubeconfig_path, None, _opts(**kw))
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    return runner, thread


def _wait(cond, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


def _bound(api, name):
    p = api.get("Pod", name)
    return p is not None and (p.get("spec") or {}).get("nodeName")


def test_backoff_is_kubes_one_second_doubling_to_ten():
    assert [backoff_seconds(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_the_loop_binds_its_own_pending_pods_in_windows_and_leaves_other_schedulers_pods(fake_api):
    api = fake_api([node("a", cpu="2"), node("b", cpu="2"),
                    *(pod(f"p{i}", cpu="500m", spec=OURS) for i in range(5)), pod("theirs", cpu="100m")])
    runner, thread = _start(api, window=2, max_windows=3)
    thread.join(30)
    assert not thread.is_alive()
    assert all(_bound(api, f"p{i}") for i in range(5))
    assert not _bound(api, "theirs")
    assert runner.windows == 3
    posts = api.calls("POST")
    assert len(posts) == 5 and all(p["path"].endswith("/binding") for p in posts)


def test_every_window_ends_by_giving_the_freed_heap_back(fake_api, monkeypatch):
    import kplace.solver.binder.loop as loop

    trims = []
    monkeypatch.setattr(loop, "trim_heap", lambda: trims.append(time.monotonic()) or True)
    api = fake_api([node("a", cpu="2"), *(pod(f"p{i}", cpu="500m", spec=OURS) for i in range(3))])
    runner, thread = _start(api, window=1, max_windows=3)
    thread.join(30)
    assert runner.windows == 3 and len(trims) == 3


def test_trimming_the_heap_releases_what_a_thread_allocated_and_freed():
    import ctypes

    from kplace.solver.binder.heap import _malloc_trim, trim_heap

    if _malloc_trim() is None:
        pytest.skip("not glibc: there is no malloc_trim, and trim_heap does nothing")
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    kept = []

    def churn():  # 64 MiB in 16 KiB blocks (below the mmap threshold) in this thread's arena; every other one
        blocks = [libc.malloc(16 * 1024) for _ in range(4096)]  # freed, so the free half sits between live blocks
        for b in blocks:
            ctypes.memset(b, 1, 16 * 1024)
        for k, b in enumerate(blocks):
            (kept.append if k % 2 else libc.free)(b)

    def resident_mib() -> float:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    trim_heap()
    t = threading.Thread(target=churn)
    t.start()
    t.join()
    held = resident_mib()
    try:
        assert trim_heap() is True
        assert held - resident_mib() >= 16  # the free blocks' whole pages
    finally:
        for b in kept:
            libc.free(b)


def test_pods_created_later_arrive_through_the_watch_and_a_410_relists(fake_api):
    api = fake_api([node("a", cpu="4"), pod("first", cpu="1", spec=OURS)])
    runner, thread = _start(api)
    try:
        assert _wait(lambda: _bound(api, "first"))
        api.create(pod("second", cpu="1", spec=OURS))
        assert _wait(lambda: _bound(api, "second"))
        api.compact()  # open watches end; resuming from their resourceVersion gets 410 Gone → list again
        api.create(pod("third", cpu="1", spec=OURS))
        assert _wait(lambda: _bound(api, "third"))
        # "third" may still arrive on the dropped stream before the watch notices it ended; the 410 and the
        # relist follow right after, so wait for them rather than assert at once.
        assert _wait(lambda: runner.metrics.registry.get_sample_value(
            "kplace_relists_total", {"kind": "Pod"}) >= 2)
    finally:
        runner.stop()
        thread.join(15)
    assert not thread.is_alive()


def test_unschedulable_pods_and_failed_bindings_back_off_and_are_retried(fake_api):
    api = fake_api([node("a", cpu="2"), pod("huge", cpu="3", spec=OURS), pod("flaky", cpu="1", spec=OURS)])
    api.fail("/pods/flaky/binding", 500, times=5)  # the binder's 5 attempts all fail: reported, backed off
    runner, thread = _start(api, backoff_initial=0.2, backoff_max=0.4, idle_exit=None)
    try:
        assert _wait(lambda: _bound(api, "flaky"))
        assert _wait(lambda: runner.metrics.registry.get_sample_value(
            "kplace_schedule_attempts_total", {"result": "unschedulable"}) >= 3)
        m = runner.metrics.registry
        assert m.get_sample_value("kplace_schedule_attempts_total", {"result": "error"}) == 1
        assert m.get_sample_value("kplace_schedule_attempts_total", {"result": "scheduled"}) == 1
        assert m.get_sample_value("kplace_pods_scheduled_total") == 1
        assert not _bound(api, "huge")
    finally:
        runner.stop()
        thread.join(15)


def test_healthz_and_metrics_are_served(fake_api):
    api = fake_api([node("a"), pod("p", spec=OURS)])
    runner, thread = _start(api, idle_exit=None)
    try:
        assert _wait(lambda: _bound(api, "p"))
        base = f"http://127.0.0.1:{runner.port}"
        assert urllib.request.urlopen(base + "/healthz").read() == b"ok"
        text = urllib.request.urlopen(base + "/metrics").read().decode()
        for name in ("kplace_pods_scheduled_total 1.0", 'kplace_schedule_attempts_total{result="scheduled"} 1.0',
                     "kplace_window_duration_seconds_bucket", "kplace_fallbacks_total 0.0"):
            assert name in text
    finally:
        runner.stop()
        thread.join(15)


def test_a_window_gets_its_share_of_the_time_limit_by_pods_at_least_half_a_second():
    opts = RunOptions(window=100, time_limit=5.0)
    assert [window_budget(n, opts) for n in (1, 5, 10, 50, 100, 250)] == [0.5, 0.5, 0.5, 2.5, 5.0, 5.0]
    assert window_budget(1, RunOptions(window=100, time_limit=0.2)) == 0.2  # never more than the limit


def test_cpsat_windows_are_decided_with_their_pods_share_of_the_time_limit(fake_api, monkeypatch):
    """Under churn the first pods of a burst come as a small window: it must not take a full window's budget while
    the rest of the burst waits behind it."""
    api = fake_api([node("a", cpu="8"), node("b", cpu="8"), *(pod(f"p{i}", cpu="100m", spec=OURS) for i in range(5))])
    from kplace.solver import schedule

    real, limits = schedule.decide, []

    def recording_decide(index, config, engine, **kwargs):
        limits.append((len(index.pending), kwargs["cpsat_options"].time_limit))
        return real(index, config, engine, **kwargs)

    monkeypatch.setattr(schedule, "decide", recording_decide)
    runner = Runner(api.kubeconfig_path, None, _opts(engine="cpsat", window=4, time_limit=4.0, max_windows=2))
    assert runner.run() == 2
    assert limits == [(4, 4.0), (1, 1.0)]
    assert all(_bound(api, f"p{i}") for i in range(5))


def test_stopping_while_a_window_is_decided_abandons_it_and_sends_nothing(fake_api, monkeypatch):
    api = fake_api([node("a"), pod("p", spec=OURS)])
    from kplace.solver import schedule

    real = schedule.decide
    holder = {}

    def slow_decide(*args, **kwargs):
        holder["runner"].stop()  # SIGTERM arrives while the engine runs
        return real(*args, **kwargs)

    monkeypatch.setattr(schedule, "decide", slow_decide)
    runner = Runner(api.kubeconfig_path, None, _opts())
    holder["runner"] = runner
    assert runner.run() == 0
    assert api.calls("POST") == [] and not _bound(api, "p")
    assert runner.metrics.registry.get_sample_value("kplace_windows_total", {"result": "abandoned"}) == 1


def test_a_window_whose_commit_started_is_finished_before_stopping(fake_api, monkeypatch):
    api = fake_api([node("a"), *(pod(f"p{i}", spec=OURS) for i in range(4))])
    from kplace.solver.binder import api as binder_api

    real = binder_api.commit_api
    holder = {}

    def commit_then_signal(*args, **kwargs):
        holder["runner"].stop()  # SIGTERM arrives just as the bindings start
        return real(*args, **kwargs)

    monkeypatch.setattr(binder_api, "commit_api", commit_then_signal)
    runner = Runner(api.kubeconfig_path, None, _opts())
    holder["runner"] = runner
    assert runner.run() == 1
    assert all(_bound(api, f"p{i}") for i in range(4))


def test_dry_run_assumes_pods_locally_and_changes_nothing(fake_api):
    api = fake_api([node("a"), pod("p", spec=OURS)])
    runner = Runner(api.kubeconfig_path, None, _opts(dry_run=True, idle_exit=1.0))
    assert runner.run() == 1  # one window; the assumed pod is not tried again
    assert api.calls("POST")[0]["query"] == {"dryRun": ["All"]} and not _bound(api, "p")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_kplace_run_stops_cleanly_on_sigterm_and_logs_json_lines(fake_api):
    api = fake_api([node("a"), pod("p", spec=OURS)])
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kplace.solver.cli", "run", "--kubeconfig", api.kubeconfig_path,
                             "--engine", "greedy", "--port", "0", "--bind-address", "127.0.0.1"],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert _wait(lambda: _bound(api, "p"), timeout=60)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    msgs = [entry["msg"] for entry in lines]
    assert "window committed" in msgs and "signal received; stopping" in msgs and msgs[-1] == "stopped"
    committed = next(entry for entry in lines if entry["msg"] == "window committed")
    assert committed["scheduled"] == 1 and committed["level"] == "info" and "ts" in committed


def _probe(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_readyz_follows_the_api_server_through_refusals_and_black_holes_while_healthz_stays_alive(fake_api,
                                                                                                   monkeypatch):
    from kplace.solver.binder import loop

    monkeypatch.setattr(loop, "PROBE_INTERVAL", 0.1)
    monkeypatch.setattr(loop, "PROBE_TIMEOUT", 0.3)
    monkeypatch.setattr(loop, "PROBE_STALE", 0.8)
    api = fake_api([node("a"), pod("p", spec=OURS)])
    runner, thread = _start(api, idle_exit=None)
    try:
        assert _wait(lambda: runner.http is not None)
        base = f"http://127.0.0.1:{runner.port}"
        assert _wait(lambda: _probe(base + "/readyz") == 200)
        api.fail("^/version$", 503, times=40, method="GET")  # the API server refuses
        assert _wait(lambda: _probe(base + "/readyz") == 503)
        assert _probe(base + "/healthz") == 200
        assert _wait(lambda: _probe(base + "/readyz") == 200)  # it recovers
        api.fail("^/version$", 0, times=30, delay=1.0, method="GET")  # a black hole: no answer in time
        assert _wait(lambda: _probe(base + "/readyz") == 503)
        assert _probe(base + "/healthz") == 200
        assert _wait(lambda: _probe(base + "/readyz") == 200, timeout=60)
    finally:
        runner.stop()
        thread.join(15)


def test_a_failed_probe_restarts_the_open_watches_so_a_dark_connection_does_not_hide_new_pods(fake_api, monkeypatch):
    from kplace.solver.binder import loop

    monkeypatch.setattr(loop, "PROBE_INTERVAL", 0.1)
    api = fake_api([node("a"), pod("p", spec=OURS)])
    runner, thread = _start(api, idle_exit=None, watch_timeout=60)  # no watch ends on its own during the test

    def pod_watches():
        return [c for c in api.calls("GET", "^/api/v1/pods$") if c["query"].get("watch") == ["True"]]

    try:
        assert _wait(lambda: _bound(api, "p") and len(pod_watches()) == 1)
        time.sleep(0.5)
        assert len(pod_watches()) == 1
        api.fail("^/version$", 503, times=1, method="GET")
        assert _wait(lambda: len(pod_watches()) >= 2, timeout=5)  # shut down and opened again
        api.create(pod("q", spec=OURS))
        assert _wait(lambda: _bound(api, "q"))
    finally:
        runner.stop()
        thread.join(15)


def test_a_watch_black_holed_before_its_headers_fails_fast_so_new_pods_are_seen(fake_api, monkeypatch):
    """A watch request that gets no headers cannot be interrupted (there is no response to shut down): it fails
    within WATCH_HEADER_TIMEOUT, not the stream's read timeout (the watch's own timeout plus 30 s), and the
    informer lists again."""
    from kplace.solver.binder import loop

    monkeypatch.setattr(loop, "WATCH_HEADER_TIMEOUT", 0.5)
    api = fake_api([node("a"), pod("p", spec=OURS)])
    runner, thread = _start(api, idle_exit=None, watch_timeout=1)  # each watch ends after a second
    try:
        assert _wait(lambda: _bound(api, "p"))
        # the next two pod watches hang without an answer
        api.fail("^/api/v1/pods$", 0, times=2, delay=60.0, method="GET", query="watch=True")
        assert _wait(lambda: not api.faults, timeout=5)  # both were sent
        started = time.monotonic()
        api.create(pod("q", spec=OURS))
        assert _wait(lambda: _bound(api, "q"), timeout=30)
        assert time.monotonic() - started < 10
    finally:
        runner.stop()
        thread.join(15)
