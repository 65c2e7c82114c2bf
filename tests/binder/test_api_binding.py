"""--bind api against the strict fake API server: DefaultBinder's POST, outcomes, retries, evictions, dry run."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner
from kplace.models import compile_index
from kplace.models.plan import Eviction, Placement, Plan
from kplace.solver.binder import commit
from kplace.solver.binder.api import commit_api
from kplace.solver.binder.kube import new_client
from kplace.solver.binder.retry import RetryPolicy
from kplace.solver.binder.testing import FakeApiServer
from kplace.solver.cli import EXIT_COMMIT, main
from kplace.solver.output import dumps
from kplace.solver.testing import build_snapshot, node, pod

FAST = RetryPolicy(attempts=4, base=0.01, cap=0.05, timeout=0.5)


def _objects():
    return [node("a"), node("b"), *(pod(n) for n in ("p", "q", "r", "s"))]


def _commit(api, plan, objects=None, sleep=lambda s: None, **kw):
    index = compile_index(build_snapshot(*(objects or _objects())))
    client = new_client(api.kubeconfig_path)
    try:
        return commit_api(plan, index, client, retry=FAST, sleep=sleep, **kw)
    finally:
        client.close()


def _post(api, path, body, token="test-token"):
    return api.request("POST", path, body, token=token)


def test_each_binding_is_posted_to_pods_binding_exactly_as_default_binder_builds_it(fake_api):
    api = fake_api(_objects())
    summary = _commit(api, Plan("greedy", [Placement("default/p", "a"), Placement("default/q", "b")]))
    assert summary["placed"] == 2 and summary["counts"] == {"bind:bound": 2}
    calls = sorted(api.calls("POST"), key=lambda c: c["path"])  # posted concurrently: arrival order varies
    assert [c["path"] for c in calls] == ["/api/v1/namespaces/default/pods/p/binding",
                                          "/api/v1/namespaces/default/pods/q/binding"]
    assert json.loads(calls[0]["body"]) == {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "a"}}
    assert api.get("Pod", "p")["spec"]["nodeName"] == "a"
    assert {"type": "PodScheduled", "status": "True"} in api.get("Pod", "q")["status"]["conditions"]


def test_409_and_404_are_reported_not_counted_and_release_their_capacity_and_the_rest_still_bind(fake_api):
    api = fake_api(_objects())
    api.update("Pod", "q", **{"spec.nodeName": "b"})  # bound by someone else meanwhile
    api.delete("Pod", "r")  # gone
    api.delete("Pod", "s")
    api.create({**pod("s"), "metadata": {**pod("s")["metadata"], "uid": "recreated"}})  # same name, new uid
    plan = Plan("greedy", [Placement(f"default/{n}", "a") for n in ("p", "q", "r", "s")])
    summary = _commit(api, plan)
    by_pod = {o["pod"]: o for o in summary["outcomes"]}
    assert by_pod["default/p"]["result"] == "bound"
    assert (by_pod["default/q"]["result"], by_pod["default/q"]["code"]) == ("conflict", 409)
    assert "already assigned to node \"b\"" in by_pod["default/q"]["message"]
    assert (by_pod["default/r"]["result"], by_pod["default/r"]["code"]) == ("not-found", 404)
    assert (by_pod["default/s"]["result"], by_pod["default/s"]["code"]) == ("conflict", 409)
    assert "Precondition failed: UID in precondition: uid-s" in by_pod["default/s"]["message"]
    assert summary["placed"] == 1
    assert {r["pod"] for r in summary["released"]} == {"default/q", "default/r", "default/s"}
    assert summary["released"][0]["node"] == "a"
    assert api.get("Pod", "s")["spec"].get("nodeName") is None


def test_429_5xx_and_timeouts_are_retried_with_backoff_then_reported(fake_api):
    api = fake_api(_objects())
    api.fail("/pods/p/binding", 500, times=2)
    api.fail("/pods/q/binding", 429, retry_after=1)
    api.fail("/pods/r/binding", 0, delay=1.0)  # stalls past the client's 0.5 s timeout, then hangs up
    api.fail("/pods/s/binding", 503, times=10)  # never recovers
    sleeps: list[float] = []
    plan = Plan("greedy", [Placement(f"default/{n}", "b") for n in ("p", "q", "r", "s")])
    summary = _commit(api, plan, sleep=sleeps.append, concurrency=4)
    by_pod = {o["pod"]: o for o in summary["outcomes"]}
    assert (by_pod["default/p"]["result"], by_pod["default/p"]["attempts"]) == ("bound", 3)
    assert (by_pod["default/q"]["result"], by_pod["default/q"]["attempts"]) == ("bound", 2)
    assert by_pod["default/r"]["result"] == "bound" and by_pod["default/r"]["attempts"] >= 2
    assert (by_pod["default/s"]["result"], by_pod["default/s"]["code"], by_pod["default/s"]["attempts"]) == (
        "failed", 503, 4)
    assert summary["placed"] == 3
    assert 0.05 in sleeps  # Retry-After 1 s, capped by the policy
    assert api.get("Pod", "s")["spec"].get("nodeName") is None


def test_a_retry_after_a_lost_answer_that_finds_the_pod_bound_to_our_node_counts_as_bound(fake_api):
    api = fake_api(_objects())
    # The first POST is applied but its answer never arrives (a stall past the timeout), the retry gets 409.
    real = api._fault

    def applied_then_lost(method, path, query=""):
        if path.endswith("/pods/p/binding") and not api.get("Pod", "p")["spec"].get("nodeName"):
            api.update("Pod", "p", **{"spec.nodeName": "a"})
            from kplace.solver.binder.testing import Fault
            return Fault(path, code=0, delay=1.0)
        return real(method, path, query)

    api._fault = applied_then_lost
    summary = _commit(api, Plan("greedy", [Placement("default/p", "a")]))
    [o] = summary["outcomes"]
    assert (o["result"], o["attempts"]) == ("bound", 2)


def test_dry_run_sends_dryRun_All_and_changes_nothing(fake_api):
    api = fake_api(_objects())
    summary = _commit(api, Plan("greedy", [Placement("default/p", "a")]), dry_run=True)
    assert summary["placed"] == 1 and summary["dry_run"] is True
    assert api.calls("POST")[0]["query"] == {"dryRun": ["All"]}
    assert api.get("Pod", "p")["spec"].get("nodeName") is None


def test_evictions_go_first_and_a_pdb_refusal_skips_only_the_binding_that_needed_it(fake_api):
    objects = [node("a"), pod("p"), pod("q"),
               pod("v1", node_name="a", labels={"app": "free"}), pod("v2", node_name="a", labels={"app": "guarded"}),
               {"kind": "PodDisruptionBudget", "metadata": {"name": "guard", "namespace": "default"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
                "status": {"disruptionsAllowed": 0, "expectedPods": 1, "currentHealthy": 1, "desiredHealthy": 1}}]
    api = fake_api(objects)
    plan = Plan("greedy", [Placement("default/p", "a", nominated=True), Placement("default/q", "a", nominated=True)],
                evictions=[Eviction("default/v1", "a", "default/p"), Eviction("default/v2", "a", "default/q")])
    summary = _commit(api, plan, objects=objects)
    results = [(o["step"], o["pod"], o["result"]) for o in summary["outcomes"]]
    assert results == [("evict", "default/v1", "evicted"), ("evict", "default/v2", "refused"),
                       ("bind", "default/p", "bound"), ("bind", "default/q", "skipped")]
    refused = summary["outcomes"][1]
    assert refused["code"] == 429 and "disruption budget" in refused["message"]
    assert "eviction of default/v2 refused" in summary["outcomes"][3]["message"]
    paths = [c["path"] for c in api.calls("POST")]
    assert paths[-1] == "/api/v1/namespaces/default/pods/p/binding"  # no binding for q was sent
    assert api.get("Pod", "v1") is None and api.get("Pod", "v2") is not None


def test_the_fake_server_is_strict_about_bindings(fake_api):
    api = fake_api([pod("p")])
    path = "/api/v1/namespaces/default/pods/p/binding"
    good = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "namespace": "default"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "a"}}
    code, body = _post(api, path, {**good, "kind": "Pod"})
    assert code == 400 and body["kind"] == "Status" and body["reason"] == "BadRequest"
    code, body = _post(api, path, {k: v for k, v in good.items() if k != "target"})
    assert (code, body["reason"]) == (422, "Invalid") and "target.name: Required value" in body["message"]
    code, body = _post(api, path, {**good, "target": {"kind": "Pod", "name": "a"}})
    assert code == 422
    code, body = _post(api, path, {**good, "metadata": {"name": "other"}})
    assert code == 400 and "does not match" in body["message"]
    code, body = _post(api, path, good, token="wrong")
    assert code == 401
    code, body = _post(api, path + "?dryRun=Yes", good)
    assert code == 400
    code, body = _post(api, "/api/v1/namespaces/default/pods/nope/binding",
                       {**good, "metadata": {"name": "nope"}})
    assert (code, body["reason"], body["details"]["kind"]) == (404, "NotFound", "pods")
    assert _post(api, path, good) == (201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                            "status": "Success", "code": 201})
    code, body = _post(api, path, good)
    assert (code, body["reason"], body["status"]) == (409, "Conflict", "Failure")


def test_kplace_schedule_bind_api_binds_through_the_api_and_reports_outcomes(fake_api, tmp_path):
    api = fake_api([node("a", cpu="2"), pod("p", cpu="1"), pod("q", cpu="1"), pod("big", cpu="8")])
    res = CliRunner().invoke(main, ["schedule", "--kubeconfig", api.kubeconfig_path, "--engine", "greedy",
                                    "--bind", "api", "--output", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["commit"]["placed"] == 2 and data["commit"]["counts"] == {"bind:bound": 2}
    assert api.get("Pod", "p")["spec"]["nodeName"] == "a" and api.get("Pod", "big")["spec"].get("nodeName") is None
    # Files are the state, the API only receives the commit; --dry-run leaves the cluster as it was.
    state = tmp_path / "s.json"
    state.write_text(dumps({"kind": "List", "items": [node("a", cpu="2"), pod("p", cpu="1"), pod("q", cpu="1")]}))
    res = CliRunner().invoke(main, ["schedule", str(state), "--kubeconfig", api.kubeconfig_path, "--engine",
                                    "greedy", "--bind", "api", "--dry-run"])
    assert res.exit_code == EXIT_COMMIT, res.output  # both pods are bound already: nothing could be bound
    assert "(server-side dry run)" in res.output and "2 bind:conflict" in res.output


def test_commit_api_mode_needs_a_kubeconfig():
    import pytest
    from kplace.models.errors import KplaceError

    with pytest.raises(KplaceError):
        commit(Plan("greedy"), compile_index(build_snapshot(node("a"))), "api")


def test_an_unreachable_api_server_is_a_reported_failure_not_a_crash(tmp_path):
    server = FakeApiServer([pod("p")]).start()
    kc = server.kubeconfig(tmp_path)
    server.stop()
    index = compile_index(build_snapshot(node("a"), pod("p")))
    client = new_client(kc)
    summary = commit_api(Plan("greedy", [Placement("default/p", "a")]), index, client, retry=FAST,
                         sleep=lambda s: None)
    client.close()
    [o] = summary["outcomes"]
    assert (o["result"], o["code"], o["attempts"]) == ("failed", 0, 4)


def _preemption_case():
    objects = [node("a"), pod("urgent"), pod("victim", node_name="a")]
    plan = Plan("greedy", [Placement("default/urgent", "a", nominated=True)],
                evictions=[Eviction("default/victim", "a", "default/urgent")])
    return objects, plan


def test_a_preemptor_is_bound_only_after_its_victim_has_terminated(fake_api):
    objects, plan = _preemption_case()
    api = fake_api(objects, termination_seconds=0.4)
    summary = _commit(api, plan, objects, sleep=time.sleep)
    assert [(o["step"], o["result"]) for o in summary["outcomes"]] == [("evict", "evicted"), ("bind", "bound")]
    calls = [(c["method"], c["path"]) for c in api.calls()]
    bind_at = calls.index(("POST", "/api/v1/namespaces/default/pods/urgent/binding"))
    polls = [i for i, c in enumerate(calls) if c == ("GET", "/api/v1/namespaces/default/pods/victim")]
    assert len(polls) >= 2 and max(polls) < bind_at  # it saw the victim terminating, then gone, then bound


def test_a_preemptor_whose_victim_does_not_terminate_in_time_stays_unbound(fake_api):
    objects, plan = _preemption_case()
    api = fake_api(objects, termination_seconds=30)
    summary = _commit(api, plan, objects, sleep=time.sleep, victim_timeout=0.3)
    bind = summary["outcomes"][1]
    assert (bind["step"], bind["result"]) == ("bind", "skipped")
    assert "victims still terminating after 0.3s: default/victim" in bind["message"]
    assert not api.calls("POST", "/api/v1/namespaces/default/pods/urgent/binding")


def test_volume_bindings_wait_as_long_as_the_profiles_bind_timeout_seconds():
    import pytest
    from kplace.models.errors import ConfigError
    from kplace.solver.binder.volumes import BIND_TIMEOUT, bind_timeout_of
    from kplace.solver.framework.config import default_config, parse_config

    def cfg(args):
        return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                             "profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": args}]}]})

    assert bind_timeout_of(default_config()) == BIND_TIMEOUT == 600
    assert bind_timeout_of(cfg({"bindTimeoutSeconds": 30})) == 30
    with pytest.raises(ConfigError, match="bindTimeoutSeconds"):
        bind_timeout_of(cfg({"bindTimeoutSeconds": -1}))
