"""Admission-time resolution and cross-checks: priorities, PDB budgets, workloads expanded into pods."""

import pytest
from kplace.models import InputError
from kplace.models.io import _add
from kplace.models.snapshot import ClusterSnapshot, finalize
from kplace.models.workloads import expand_workloads, pinned_node


def build(*objects):
    snap, sources = ClusterSnapshot(), {}
    for o in objects:
        _add(snap, sources, o["kind"], o, "state.yaml")
    expand_workloads(snap, sources)
    return finalize(snap, sources)


def node(name, labels=None, taints=None):
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or []}, "status": {"allocatable": {"cpu": "4", "pods": "110"}}}


def pod(name, ns="default", labels=None, node_name="", phase="", **spec):
    s = {"containers": [{"name": "c"}], **spec}
    if node_name:
        s["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": s,
            "status": {"phase": phase or ("Running" if node_name else "Pending")}}


def pc(name, value, default=False, policy=None):
    out = {"kind": "PriorityClass", "metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy:
        out["preemptionPolicy"] = policy
    return out


# --- priority --------------------------------------------------------------------------------------------


def test_a_pod_naming_a_priority_class_gets_its_value_and_preemption_policy():
    snap = build(pc("batch", -5, policy="Never"), pod("p", priorityClassName="batch"))
    assert (snap.pods[0].spec.priority, snap.pods[0].spec.preemption_policy) == (-5, "Never")


def test_a_pod_without_a_class_gets_the_global_default_class():
    snap = build(pc("normal", 7, default=True), pod("p"))
    assert (snap.pods[0].spec.priority, snap.pods[0].spec.priority_class_name) == (7, "normal")


def test_a_pod_without_a_class_and_no_global_default_gets_priority_zero():
    assert build(pc("high", 1000), pod("p")).pods[0].spec.priority == 0


@pytest.mark.parametrize(("name", "value"), [("system-node-critical", 2000001000),
                                             ("system-cluster-critical", 2000000000)])
def test_the_system_classes_exist_even_when_the_export_omits_them(name, value):
    assert build(pod("p", priorityClassName=name)).pods[0].spec.priority == value


def test_a_pod_naming_a_missing_class_is_rejected_as_admission_would():
    with pytest.raises(InputError) as err:
        build(pod("p", priorityClassName="gold"))
    assert str(err.value) == ("state.yaml: Pod default/p: spec.priorityClassName: "
                              "no PriorityClass with name 'gold' was found")


def test_an_admitted_pod_keeps_its_resolved_priority_when_its_class_is_missing_from_the_export():
    snap = build(pc("other", 1), pod("p", priorityClassName="gold", priority=50))
    assert snap.pods[0].spec.priority == 50
    assert snap.warnings == ["Pod default/p: PriorityClass 'gold' is not in the state; using spec.priority=50"]


def test_an_explicit_spec_priority_wins_over_the_class_value():
    assert build(pc("gold", 100), pod("p", priorityClassName="gold", priority=42)).pods[0].spec.priority == 42


# --- PDBs ------------------------------------------------------------------------------------------------


def pdb(name, labels, status=None, **spec):
    out = {"kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
           "spec": {"selector": {"matchLabels": labels}, **spec}}
    if status is not None:
        out["status"] = status
    return out


WEB = [pod(f"web-{i}", labels={"app": "web"}, node_name="n") for i in range(4)] + [
    pod("web-pending", labels={"app": "web"}), pod("other", labels={"app": "db"}, node_name="n")]

PDB_CASES = [
    ("minAvailable as a count leaves the rest disruptible", {"minAvailable": 2}, 2),
    ("maxUnavailable as a count subtracts from the expected pods", {"maxUnavailable": 1}, 0),
    ("minAvailable as a percentage rounds up", {"minAvailable": "50%"}, 1),
    ("maxUnavailable as a percentage rounds up", {"maxUnavailable": "30%"}, 1),
    ("minAvailable above the healthy count allows nothing", {"minAvailable": 9}, 0),
    ("an empty spec means minAvailable 1", {}, 3),
]


@pytest.mark.parametrize(("spec", "allowed"), [c[1:] for c in PDB_CASES], ids=[c[0] for c in PDB_CASES])
def test_disruptions_allowed_is_computed_as_the_disruption_controller_does(spec, allowed):
    # 4 healthy bound web pods and 1 pending: expected 5.
    snap = build(node("n"), *WEB, pdb("web", {"app": "web"}, **spec))
    assert snap.pdb_disruptions_allowed(snap.pdbs[0]) == allowed


def test_disruptions_allowed_is_taken_from_the_exported_status_when_present():
    status = {"currentHealthy": 4, "desiredHealthy": 4, "disruptionsAllowed": 0, "expectedPods": 4}
    snap = build(node("n"), *WEB, pdb("web", {"app": "web"}, status=status, minAvailable=1))
    assert snap.pdb_disruptions_allowed(snap.pdbs[0]) == 0


# --- workloads -------------------------------------------------------------------------------------------

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}


def workload(kind, name="web", **spec):
    return {"apiVersion": "batch/v1" if kind == "Job" else "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE, **spec}}


def test_a_deployment_becomes_pending_pods_owned_by_its_replicaset_with_the_template_hash():
    snap = build(workload("Deployment", replicas=3))
    assert len(snap.pods) == 3
    p = snap.pods[0]
    h = p.metadata.labels["pod-template-hash"]
    owner = p.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.controller, owner.api_version) == ("ReplicaSet", f"web-{h}", True, "apps/v1")
    assert all(x.metadata.name.startswith(f"web-{h}-") and len(x.metadata.name) == len(f"web-{h}-") + 5
               for x in snap.pods)
    assert len({x.metadata.name for x in snap.pods}) == 3
    assert all(not x.spec.node_name and x.status.phase == "Pending" for x in snap.pods)


def test_a_deployment_without_replicas_gets_one_pod():
    assert len(build(workload("Deployment")).pods) == 1


def test_a_replicaset_owns_its_pods_directly():
    snap = build(workload("ReplicaSet", replicas=2))
    assert {(o.kind, o.name, o.uid) for p in snap.pods for o in p.metadata.owner_references} == {
        ("ReplicaSet", "web", "uid-web")}


def test_a_statefulset_names_its_pods_by_ordinal_with_the_identity_labels():
    snap = build(workload("StatefulSet", replicas=3))
    assert [p.metadata.name for p in snap.pods] == ["web-0", "web-1", "web-2"]
    assert snap.pods[2].metadata.labels["statefulset.kubernetes.io/pod-name"] == "web-2"
    assert snap.pods[2].metadata.labels["apps.kubernetes.io/pod-index"] == "2"


def test_a_statefulset_fills_in_only_the_missing_ordinals():
    existing = {**pod("web-0", labels={"app": "web"}, node_name="n")}
    existing["metadata"]["ownerReferences"] = [{"kind": "StatefulSet", "name": "web", "controller": True}]
    snap = build(node("n"), existing, workload("StatefulSet", replicas=3))
    assert sorted(p.metadata.name for p in snap.pods) == ["web-0", "web-1", "web-2"]


@pytest.mark.parametrize(("spec", "count"), [({}, 1), ({"parallelism": 4}, 4),
                                             ({"parallelism": 4, "completions": 2}, 2)],
                         ids=["parallelism defaults to one", "parallelism pods run at once",
                              "no more pods than completions"])
def test_a_job_runs_min_of_parallelism_and_completions_pods(spec, count):
    snap = build(workload("Job", **spec))
    assert len(snap.pods) == count
    assert snap.pods[0].metadata.labels["job-name"] == "web"
    assert snap.pods[0].metadata.labels["batch.kubernetes.io/job-name"] == "web"


def test_existing_pods_of_a_workload_are_not_doubled():
    running = [pod(f"web-abc-{i}", labels={"app": "web"}, node_name="n") for i in range(2)]
    for r in running:
        r["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web-abc", "controller": True}]
    snap = build(node("n"), *running, workload("Deployment", replicas=3))
    assert len(snap.pods) == 3


def test_pods_owned_by_another_controller_do_not_count_towards_a_workload():
    other = pod("x", labels={"app": "web"}, node_name="n")
    other["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web-api-xyz", "controller": True}]
    snap = build(node("n"), other, workload("ReplicaSet", replicas=2))
    assert len(snap.pods) == 3


def test_orphans_matching_the_selector_are_adopted():
    snap = build(node("n"), pod("stray", labels={"app": "web"}, node_name="n"), workload("ReplicaSet", replicas=2))
    assert len(snap.pods) == 2


DS_NODES = [
    node("worker-1", {"role": "worker"}),
    node("worker-2", {"role": "worker"}, taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
    node("gpu-1", {"role": "worker"}, taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
    node("soft-1", {"role": "worker"}, taints=[{"key": "x", "effect": "PreferNoSchedule"}]),
    node("master-1", {"role": "master"}),
]


def test_a_daemonset_gets_one_pod_per_eligible_node_pinned_by_match_fields():
    ds = workload("DaemonSet")
    ds["spec"]["template"] = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "nodeSelector": {"role": "worker"}}}
    snap = build(*DS_NODES, ds)
    # gpu-1's taint is not tolerated; master-1 fails the nodeSelector; the cordon taint and
    # PreferNoSchedule are tolerated (the controller adds the unschedulable toleration).
    assert sorted(pinned_node(p) for p in snap.pods) == ["soft-1", "worker-1", "worker-2"]
    p = snap.pods[0]
    terms = p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert len(terms) == 1 and terms[0].match_fields[0].key == "metadata.name" and not p.spec.node_name
    assert {"node.kubernetes.io/not-ready", "node.kubernetes.io/unschedulable"} <= {t.key for t in p.spec.tolerations}
    assert p.metadata.owner_references[0].kind == "DaemonSet"


def test_a_daemonset_respects_required_node_affinity_and_replaces_it_with_the_pin():
    ds = workload("DaemonSet")
    ds["spec"]["template"] = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "role", "operator": "In", "values": ["master"]}]}]}}}}}
    snap = build(*DS_NODES, ds)
    assert [pinned_node(p) for p in snap.pods] == ["master-1"]


def test_a_daemonset_with_a_running_or_pending_pod_on_a_node_adds_none_there():
    first = build(node("a"), node("b"), workload("DaemonSet"))
    pending_pin = next(p for p in first.pods if pinned_node(p) == "a")
    running = pod("web-run", labels={"app": "web"}, node_name="b")
    running["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "web", "controller": True}]
    pending = pending_pin.model_dump(by_alias=True, exclude_none=True)
    snap = build(node("a"), node("b"), pending, running, workload("DaemonSet"))
    assert len(snap.pods) == 2


def test_a_pdb_without_a_selector_selects_no_pods_and_an_empty_one_selects_all():
    from kplace.models.snapshot import pdb_health

    null = {"kind": "PodDisruptionBudget", "metadata": {"name": "none", "namespace": "default"},
            "spec": {"maxUnavailable": 1}}
    snap = build(node("n"), *WEB, null, pdb("all", {}, maxUnavailable=1))
    assert pdb_health(snap, snap.pdbs[0]) == (0, 0)
    assert pdb_health(snap, snap.pdbs[1]) == (5, 6)  # every pod of the namespace, pending ones expected too
