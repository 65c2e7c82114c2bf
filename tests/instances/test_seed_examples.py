"""The seed's own examples and the volume instance, shipped in instances/, checked in both engines."""

from __future__ import annotations

from pathlib import Path

import pytest
from kplace.instances.volumes import seed_examples, volumes_small
from kplace.models import compile_index, load_state
from kplace.solver.framework.config import default_config
from kplace.solver.schedule import decide

HERE = Path(__file__).resolve().parents[2] / "instances"


def plan_of(name: str, engine: str):
    index = compile_index(load_state([str(HERE / name)]))
    return decide(index, default_config(), engine), index


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_two_redis_masters_a_master_and_its_replica_and_two_elasticsearch_data_pods_never_share_a_node(engine):
    plan, _ = plan_of("seed-examples.json", engine)
    where = plan.assignment()
    assert len(where) == 8, "every pod of the seed examples fits on the 4 nodes"
    assert where["default/redis-master-0"] != where["default/redis-master-1"]
    for shard in (0, 1):
        assert where[f"default/redis-master-{shard}"] != where[f"default/redis-replica-{shard}"]
    es = [where[f"default/es-data-{i}"] for i in range(4)]
    assert len(set(es)) == 4, "Elasticsearch data pods one per node"


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_fifth_elasticsearch_data_pod_stays_pending_with_kubes_reason(engine, tmp_path):
    import json

    doc = seed_examples()
    extra = json.loads(json.dumps(next(o for o in doc["items"] if o["metadata"]["name"] == "es-data-3")))
    extra["metadata"]["name"] = "es-data-4"
    doc["items"].append(extra)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(doc))
    plan = decide(compile_index(load_state([str(path)])), default_config(), engine)
    unplaced = [p for p in plan.placements if p.node is None]
    assert [p.pod for p in unplaced] == ["default/es-data-4"]
    assert "4 node(s) didn't match pod anti-affinity rules" in unplaced[0].reason or engine == "cpsat"


def test_the_greedy_plan_of_the_volume_instance_binds_each_pv_once_and_reports_kubes_reasons():
    plan, _ = plan_of("volumes-small.json", "greedy")
    by_pod = {p.pod: p for p in plan.placements}
    taken = [pv for p in plan.placements for pv in p.volume_bindings.values() if pv != "(dynamic)"]
    assert len(taken) == len(set(taken)) == 5
    for i in range(5):  # each database lands on the node of the local PV it binds
        p = by_pod[f"default/db-{i}"]
        assert p.volume_bindings[f"default/db-data-{i}"].startswith(f"local-{p.node.replace('-', '')}-")
    assert by_pod["default/db-4-extra"].node == by_pod["default/db-4"].node
    assert all(by_pod[f"default/app-{i}"].node in ("w-0", "w-1", "w-2") for i in range(4))  # gp3: zone a only
    assert by_pod["default/reports"].node in ("w-3", "w-4", "w-5")  # its PV is in zone b
    assert by_pod["default/legacy-1"].node is None and "had no available disk" in by_pod["default/legacy-1"].reason
    assert "pod has unbound immediate PersistentVolumeClaims" in by_pod["default/orphan"].reason
    assert not plan.warnings


def test_the_shipped_files_are_what_the_builders_make():
    import json

    assert json.loads((HERE / "volumes-small.json").read_text()) == volumes_small()
    assert json.loads((HERE / "seed-examples.json").read_text()) == seed_examples()
