"""`apply._apply` against a stub CoreV1Api (no HTTP): what each phase of a wave logs, and where the run stops."""

from types import SimpleNamespace

import pytest
from kplace.solver.rebalance.apply import _apply
from kubernetes.client.rest import ApiException

from .helpers import build_index, node, owned, pod


def live(name: str, node_name: str = "", phase: str = "Running", owner: str | None = "uid-web"):
    """A pod as the kubernetes client lists it (only the fields the run reads)."""
    refs = [SimpleNamespace(controller=True, uid=owner, kind="ReplicaSet", name="web")] if owner else []
    return SimpleNamespace(metadata=SimpleNamespace(name=name, uid=f"uid-{name}", owner_references=refs,
                                                    deletion_timestamp=None),
                           spec=SimpleNamespace(node_name=node_name, scheduler_name="kplace"),
                           status=SimpleNamespace(phase=phase))


class StubApi:
    """Answers the n-th listing with `listings[n]` (the last one repeats); raises the errors it is given."""

    def __init__(self, listings, list_error=None, evict_error=None, refusals=0):
        self.listings, self.list_error, self.evict_error = listings, list_error, evict_error
        self.refusals = refusals  # the first evictions refused by a PDB (429)
        self.lists = 0
        self.evicted: list[str] = []

    def list_namespaced_pod(self, ns):
        if self.list_error is not None:
            raise self.list_error
        self.lists += 1
        return SimpleNamespace(items=self.listings[min(self.lists, len(self.listings)) - 1])

    def create_namespaced_pod_eviction(self, name, ns, body):
        if self.evict_error is not None:
            raise self.evict_error
        if self.refusals:
            self.refusals -= 1
            raise ApiException(status=429, reason="Too Many Requests")
        self.evicted.append(name)


INDEX = build_index(node("n0", cpu="4"), node("n1", cpu="4"), node("n2", cpu="4"),
                    owned("web-0", cpu="1", node_name="n0"), owned("web-1", cpu="1", node_name="n1"),
                    pod("solo", cpu="1", node_name="n0"), pod("job", cpu="1"))
BEFORE = [live("web-0", "n0"), live("web-1", "n1"), live("solo", "n0", owner=None), live("job", phase="Pending")]


def move(name: str, to: str = "n2", wave: int = 1, src: str = "n0"):
    return {"pod": f"default/{name}", "from": src, "to": to, "wave": wave}


CASES = [
    ("listing the pods before a wave fails: the run stops in that wave and evicts nothing",
     {"moves": [move("web-0")], "placements": []},
     StubApi([BEFORE], list_error=ApiException(status=500, reason="Internal")),
     "wave 1: listing pods failed: HTTP 500 Internal", [], []),
    ("a PodDisruptionBudget refusal (429) stops the run safely before the later moves",
     {"moves": [move("web-0"), move("web-1", src="n1")], "placements": []},
     StubApi([BEFORE], evict_error=ApiException(status=429, reason="Too Many Requests")),
     "wave 1: eviction of default/web-0 refused (429, a PodDisruptionBudget) for 0s; stopped safely, later moves "
     "not attempted", [], []),
    ("an eviction answered 404 (the pod is gone) stops the run with the HTTP status",
     {"moves": [move("web-0")], "placements": []},
     StubApi([BEFORE], evict_error=ApiException(status=404, reason="Not Found")),
     "wave 1: eviction of default/web-0 failed: HTTP 404 Not Found", [], []),
    ("a moved pod without a controller stops the run once evicted, as nothing will replace it",
     {"moves": [move("solo")], "placements": []},
     StubApi([BEFORE]),
     "wave 1: default/solo has no controller, so nothing will replace it", ["solo"], ["evicted"]),
    ("a replacement that never appears stops the run at the timeout",
     {"moves": [move("web-0")], "placements": []},
     StubApi([BEFORE]),
     "wave 1: replacements not bound and Running within 0s; stopped", ["web-0"], ["evicted"]),
    ("a replacement running elsewhere than planned is reported once and the wave completes",
     {"moves": [move("web-0")], "placements": []},
     StubApi([BEFORE, [*BEFORE[1:], live("web-r1", "n1")]]),
     None, ["web-0"], ["evicted", "replacement elsewhere"]),
    ("a placement of another scheduler is left to it, and the wave waits only for the replacements",
     {"moves": [move("web-0")], "placements": [{"pod": "default/job", "node": "n1", "wave": 1}]},
     StubApi([BEFORE, [*BEFORE[1:], live("web-r1", "n2")]]),
     None, ["web-0"], ["evicted", "left to its scheduler"]),
    ("the waves run in order and each counts once done",
     {"moves": [move("web-0"), move("web-1", to="n0", wave=2, src="n1")], "placements": []},
     StubApi([BEFORE, [*BEFORE[1:], live("web-r1", "n2")], [*BEFORE[1:], live("web-r1", "n2")],
              [live("web-r1", "n2"), live("web-r2", "n0")]]),
     None, ["web-0", "web-1"], ["evicted", "evicted"]),
]


@pytest.mark.parametrize(("plan", "api", "stopped", "evicted", "actions"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_wave_logs_its_actions_and_stops_at_the_first_surprise(plan, api, stopped, evicted, actions):
    report = _apply(plan, INDEX, api, timeout=0, scheduler_name="kplace", poll=0)
    assert report["stopped"] == stopped
    assert report["completed"] is (stopped is None)
    assert api.evicted == evicted
    assert [e["action"] for e in report["events"]] == actions
    waves = max(m["wave"] for m in plan["moves"])
    assert report["waves_done"] == (waves if stopped is None else 0)


def test_an_eviction_a_pdb_refuses_for_a_while_is_retried_and_the_wave_completes(monkeypatch):
    from kplace.solver.rebalance import apply

    monkeypatch.setattr(apply.time, "sleep", lambda s: None)
    api = StubApi([BEFORE, [*BEFORE[1:], live("web-r1", "n2")]], refusals=3)
    report = _apply({"moves": [move("web-0")], "placements": []}, INDEX, api, timeout=60, scheduler_name="kplace",
                    poll=0)
    assert report["completed"] and api.evicted == ["web-0"]
    assert report["events"][0] == {"wave": 1, "action": "evicted", "pod": "default/web-0", "from": "n0",
                                   "refused_first": 3}
