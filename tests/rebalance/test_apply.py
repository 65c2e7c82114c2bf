"""`kplace rebalance --apply` against the binder's fake API server on 127.0.0.1, with a fake ReplicaSet controller
and kubelet: an evicted pod is replaced by a new pending pod of the same owner; bound pods become Running."""

import json
import threading

from click.testing import CliRunner
from kplace.solver.binder.testing import FakeApiServer
from kplace.solver.cli import main

from .helpers import node, owned, pdb


class FakeControllers(threading.Thread):
    """Keeps each owner at its replica count (new pods pending, schedulerName kplace) and runs bound pods."""

    def __init__(self, server: FakeApiServer, replicas: dict[str, int]) -> None:
        super().__init__(daemon=True)
        self.server, self.replicas, self.stopped, self.made = server, replicas, threading.Event(), 0

    def run(self) -> None:
        while not self.stopped.wait(0.05):
            pods = self.server.objects("Pod")
            for p in pods:
                if p["spec"].get("nodeName") and p.get("status", {}).get("phase") != "Running":
                    self.server.update("Pod", p["metadata"]["name"], p["metadata"]["namespace"],
                                       **{"status.phase": "Running"})
            for owner, want in self.replicas.items():
                mine = [p for p in pods if p["metadata"].get("ownerReferences", [{}])[0].get("name") == owner]
                for _ in range(want - len(mine)):
                    self.made += 1
                    tmpl = mine[0] if mine else None
                    assert tmpl is not None
                    new = json.loads(json.dumps(tmpl))
                    new["kind"] = "Pod"
                    new["metadata"] = {"name": f"{owner}-r{self.made}", "namespace": "default",
                                       "labels": tmpl["metadata"]["labels"],
                                       "ownerReferences": tmpl["metadata"]["ownerReferences"]}
                    new["spec"].pop("nodeName", None)
                    new["spec"]["schedulerName"] = "kplace"
                    new["status"] = {"phase": "Pending"}
                    self.server.create(new)


def _cluster():
    objs = [node(f"n{i}", cpu="4") for i in range(4)]
    objs += [owned(f"web-{i}", cpu="1", node_name=f"n{i}") for i in range(4)]
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["schedulerName"] = "kplace"
    return objs


def _serve(objs, tmp_path):
    server = FakeApiServer([{**o, "apiVersion": o.get("apiVersion", "v1")} for o in objs]).start()
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return server, str(state), server.kubeconfig(tmp_path)


def test_apply_evicts_wave_by_wave_and_binds_replacements_to_their_planned_nodes(tmp_path):
    objs = _cluster()
    server, state, kubeconfig = _serve(objs, tmp_path)
    ctl = FakeControllers(server, {"web": 4})
    ctl.start()
    try:
        res = CliRunner().invoke(main, ["rebalance", state, "--apply", "--kubeconfig", kubeconfig, "--timeout", "10",
                                        "-o", "json", "--time-limit", "5"])
        assert res.exit_code == 0, res.output
        plan = json.loads(res.output)
        assert plan["dry_run"] is False and plan["apply"]["completed"], plan["apply"]
        assert len(plan["moves"]) == 3
        evictions = server.calls("POST")
        assert sum(1 for c in evictions if c["path"].endswith("/eviction")) == 3
        planned = sorted(m["to"] for m in plan["moves"])
        running = [p for p in server.objects("Pod") if p["status"].get("phase") == "Running"]
        assert len(running) == 4
        bound_replacements = sorted(p["spec"]["nodeName"] for p in running if "-r" in p["metadata"]["name"])
        assert bound_replacements == planned
        assert len({p["spec"]["nodeName"] for p in running}) == 1  # packed onto one node
    finally:
        ctl.stopped.set()
        server.stop()


def test_apply_stops_safely_and_reports_when_a_pdb_refuses_an_eviction(tmp_path):
    objs = _cluster()
    server, state, kubeconfig = _serve(objs, tmp_path)
    # The state file says one disruption is allowed; the live PDB has none left: the server answers 429.
    server.create({**pdb("web", "web", min_available=4), "apiVersion": "policy/v1",
                   "status": {"disruptionsAllowed": 0, "currentHealthy": 4, "desiredHealthy": 4, "expectedPods": 4}})
    ctl = FakeControllers(server, {"web": 4})
    ctl.start()
    try:
        res = CliRunner().invoke(main, ["rebalance", state, "--apply", "--kubeconfig", kubeconfig, "--timeout", "5",
                                        "-o", "json", "--time-limit", "5"])
        assert res.exit_code == 1
        plan = json.loads(res.output)
        assert not plan["apply"]["completed"]
        assert "429" in plan["apply"]["stopped"] and plan["apply"]["waves_done"] == 0
    finally:
        ctl.stopped.set()
        server.stop()


def test_schedule_with_moves_bound_through_the_api_moves_first_then_binds_the_admitted_pod(tmp_path):
    objs = [node("n0", cpu="4"), node("n1", cpu="4")]
    objs += [owned(f"big-{i}", "big", cpu="2", node_name=f"n{i}") for i in range(2)]
    objs += [owned(f"web-{i}", "web", cpu="1", node_name=f"n{i}") for i in range(2)]
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["schedulerName"] = "kplace"
    objs.append({"kind": "Pod", "metadata": {"name": "job", "namespace": "default", "uid": "uid-job"},
                 "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]},
                 "status": {"phase": "Pending"}})
    server, state, kubeconfig = _serve(objs, tmp_path)
    ctl = FakeControllers(server, {"web": 2, "big": 2})
    ctl.start()
    try:
        res = CliRunner().invoke(main, ["schedule", state, "--allow-moves", "1", "--time-limit", "3", "--bind", "api",
                                        "--kubeconfig", kubeconfig, "-o", "json"])
        assert res.exit_code == 0, res.output
        data = json.loads(res.output)
        (move,) = data["moves"]
        assert data["commit"]["moves"]["completed"]
        job = next(p for p in server.objects("Pod") if p["metadata"]["name"] == "job")
        assert job["spec"]["nodeName"] == move["from"]  # the pod lands where the move made room
        replacement = next(p for p in server.objects("Pod") if p["metadata"]["name"].startswith("web-r"))
        assert replacement["spec"]["nodeName"] == move["to"]
        posts = [c["path"] for c in server.calls("POST")]
        first_binding = next(i for i, p in enumerate(posts) if p.endswith("/binding") and "/job/" in p)
        assert any(p.endswith("/eviction") for p in posts[:first_binding])  # the move went first
    finally:
        ctl.stopped.set()
        server.stop()
