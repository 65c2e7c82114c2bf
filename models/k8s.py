"""The Kubernetes objects kplace reads, as pydantic v2 models holding every field kube-scheduler's plugins use.

Field names are snake_case in Python and camelCase on the wire (aliases), exactly as the API serialises
them. Unknown fields are ignored, enums are checked, quantities are parsed exactly (`models.quantity`).
API-server defaulting that matters for scheduling is applied on construction (requests default to limits,
the Equal toleration operator, TCP ports, `default-scheduler`).
"""

from __future__ import annotations

from datetime import datetime
from fractions import Fraction
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from .quantity import QuantityError, parse_quantity, quantity_text


def _quantity(raw: Any) -> Fraction:
    if isinstance(raw, Fraction):
        return raw
    try:
        value = parse_quantity(raw)
    except QuantityError:
        raise PydanticCustomError("quantity", "'{value}' is not a valid quantity", {"value": str(raw)[:60]}) from None
    if value < 0:  # the API server's validation of requests, limits, capacity and allocatable
        raise PydanticCustomError("quantity", "'{value}' must be greater than or equal to 0", {"value": raw})
    return value


# Serialised (model_dump) as an exact Kubernetes quantity string, so dumped objects load back unchanged.
Quantity = Annotated[Fraction, BeforeValidator(_quantity), PlainSerializer(quantity_text, return_type=str)]
ResourceList = dict[str, Quantity]


def _int_or_string(raw: Any) -> int | str:
    if isinstance(raw, bool):
        raise PydanticCustomError("int_or_string", "'{value}' is not an integer or a percentage", {"value": raw})
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.endswith("%") and raw[:-1].isdigit():
        return raw
    if isinstance(raw, str) and raw.isdigit():
        return int(raw)
    raise PydanticCustomError("int_or_string", "'{value}' is not an integer or a percentage", {"value": raw})


IntOrPercent = Annotated[int | str, BeforeValidator(_int_or_string)]


class K8s(BaseModel):
    """Base: camelCase aliases, unknown fields ignored, populate by either name."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", arbitrary_types_allowed=True
    )


# --- metadata -------------------------------------------------------------------------------------


class OwnerReference(K8s):
    api_version: str = ""
    kind: str
    name: str
    uid: str = ""
    controller: bool = False


class ObjectMeta(K8s):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    resource_version: str | None = None


# --- selectors ------------------------------------------------------------------------------------


class LabelSelectorRequirement(K8s):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise PydanticCustomError("selector", "values must be non-empty for operator {op}", {"op": self.operator})
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise PydanticCustomError("selector", "values must be empty for operator {op}", {"op": self.operator})
        return self


class LabelSelector(K8s):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


class NodeSelectorRequirement(K8s):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list)


class NodeSelectorTerm(K8s):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(K8s):
    node_selector_terms: list[NodeSelectorTerm]


class PreferredSchedulingTerm(K8s):
    weight: int = Field(ge=0, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(K8s):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class PodAffinityTerm(K8s):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    topology_key: str = Field(min_length=1)
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = Field(default_factory=list)
    mismatch_label_keys: list[str] = Field(default_factory=list)


class WeightedPodAffinityTerm(K8s):
    weight: int = Field(ge=1, le=100)
    pod_affinity_term: PodAffinityTerm


class PodAffinity(K8s):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(default_factory=list)
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class Affinity(K8s):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


# --- pods -----------------------------------------------------------------------------------------

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Toleration(K8s):
    key: str = ""
    operator: Literal["Equal", "Exists", "Lt", "Gt", ""] = "Equal"
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] = ""
    toleration_seconds: int | None = None

    @model_validator(mode="after")
    def _numeric_comparisons(self) -> Toleration:
        if self.operator in ("Lt", "Gt") and not self.value.lstrip("-").isdigit():
            raise PydanticCustomError("invalid", "value: must be an integer for operator {op}, got '{value}'",
                                      {"op": self.operator, "value": self.value[:60]})
        return self


class Taint(K8s):
    key: str
    value: str = ""
    effect: TaintEffect


class ResourceRequirements(K8s):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)

    @model_validator(mode="after")
    def _requests_default_to_limits(self) -> ResourceRequirements:
        # API-server defaulting: a resource with a limit and no request requests its limit.
        for name, lim in self.limits.items():
            self.requests.setdefault(name, lim)
        return self


class ContainerPort(K8s):
    container_port: int = Field(default=0, ge=0, le=65535)
    host_port: int = Field(default=0, ge=0, le=65535)
    host_ip: str = Field(default="", alias="hostIP")
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"


class Container(K8s):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = Field(default_factory=list)
    restart_policy: Literal["Always"] | None = None


class PVCSource(K8s):
    claim_name: str
    read_only: bool = False


class GCEPersistentDisk(K8s):
    pd_name: str
    read_only: bool = False


class AWSElasticBlockStore(K8s):
    volume_id: str = Field(alias="volumeID")
    read_only: bool = False


class RBDVolume(K8s):
    monitors: list[str] = Field(default_factory=list)
    image: str
    pool: str = "rbd"
    read_only: bool = False


class ISCSIVolume(K8s):
    target_portal: str
    iqn: str
    lun: int = 0
    read_only: bool = False


class CSIVolumeSource(K8s):
    driver: str
    volume_attributes: dict[str, str] = Field(default_factory=dict)


class EphemeralVolume(K8s):
    volume_claim_template: dict[str, Any] | None = None  # {metadata, spec}: a PersistentVolumeClaim template


class Volume(K8s):
    name: str
    persistent_volume_claim: PVCSource | None = None
    gce_persistent_disk: GCEPersistentDisk | None = None
    aws_elastic_block_store: AWSElasticBlockStore | None = None
    rbd: RBDVolume | None = None
    iscsi: ISCSIVolume | None = None
    csi: CSIVolumeSource | None = None
    ephemeral: EphemeralVolume | None = None
    empty_dir: dict[str, Any] | None = None
    host_path: dict[str, Any] | None = None


class TopologySpreadConstraint(K8s):
    max_skew: int = Field(ge=1)
    topology_key: str = Field(min_length=1)
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: int | None = Field(default=None, ge=1)
    node_affinity_policy: Literal["Honor", "Ignore"] | None = None
    node_taints_policy: Literal["Honor", "Ignore"] | None = None
    match_label_keys: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _min_domains_with_do_not_schedule(self) -> TopologySpreadConstraint:
        if self.min_domains is not None and self.when_unsatisfiable != "DoNotSchedule":
            raise PydanticCustomError("invalid", "minDomains: can only be set when whenUnsatisfiable is "
                                      "DoNotSchedule, got {w}", {"w": self.when_unsatisfiable})
        return self


class SchedulingGate(K8s):
    name: str


class PodSpec(K8s):
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    overhead: ResourceList = Field(default_factory=dict)
    resources: ResourceRequirements | None = None
    node_name: str = ""
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    priority: int | None = Field(default=None, ge=-(2**31), le=2**31 - 1)  # int32
    priority_class_name: str = ""
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = None
    scheduler_name: str = "default-scheduler"
    scheduling_gates: list[SchedulingGate] = Field(default_factory=list)
    volumes: list[Volume] = Field(default_factory=list)
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    resource_claims: list[dict[str, Any]] = Field(default_factory=list)  # DRA: read only to say it is not modelled
    host_network: bool = False
    termination_grace_period_seconds: int | None = None
    scheduling_group: PodSchedulingGroup | None = None  # kube 1.36's Workload API (GenericWorkload)


class PodSchedulingGroup(K8s):
    pod_group_name: str = ""


class PodCondition(K8s):
    type: str
    status: str = "True"
    reason: str = ""


class PodStatus(K8s):
    phase: str = ""
    nominated_node_name: str = ""
    conditions: list[PodCondition] = Field(default_factory=list)
    start_time: datetime | None = None


class Pod(K8s):
    kind: Literal["Pod"] = "Pod"
    metadata: ObjectMeta
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)


class PodTemplateSpec(K8s):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


# --- nodes ----------------------------------------------------------------------------------------


class NodeSpec(K8s):
    unschedulable: bool = False
    taints: list[Taint] = Field(default_factory=list)
    provider_id: str = Field(default="", alias="providerID")


class NodeCondition(K8s):
    type: str
    status: str = "Unknown"


class ContainerImage(K8s):
    names: list[str] = Field(default_factory=list)
    size_bytes: int = 0


class NodeStatus(K8s):
    capacity: ResourceList = Field(default_factory=dict)
    allocatable: ResourceList = Field(default_factory=dict)
    conditions: list[NodeCondition] = Field(default_factory=list)
    images: list[ContainerImage] = Field(default_factory=list)


class Node(K8s):
    kind: Literal["Node"] = "Node"
    metadata: ObjectMeta
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def allocatable(self) -> dict[str, Fraction]:
        """`status.allocatable`, falling back to `status.capacity` for resources it omits."""
        return {**self.status.capacity, **self.status.allocatable}


# --- policy and cluster-scoped objects ------------------------------------------------------------


class PDBSpec(K8s):
    selector: LabelSelector | None = None
    min_available: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None
    unhealthy_pod_eviction_policy: Literal["IfHealthyBudget", "AlwaysAllow"] | None = None

    @model_validator(mode="after")
    def _one_budget(self) -> PDBSpec:
        if self.min_available is not None and self.max_unavailable is not None:
            raise PydanticCustomError("invalid", "minAvailable and maxUnavailable cannot be both set", {})
        for name, v in (("minAvailable", self.min_available), ("maxUnavailable", self.max_unavailable)):
            if (isinstance(v, int) and v < 0) or (isinstance(v, str) and int(v[:-1]) > 100):
                raise PydanticCustomError("invalid", "{name}: {value} must be between 0 and 100% or a "
                                          "non-negative integer", {"name": name, "value": v})
        return self


class PDBStatus(K8s):
    current_healthy: int = 0
    desired_healthy: int = 0
    disruptions_allowed: int = 0
    expected_pods: int = 0
    disrupted_pods: dict[str, Any] = Field(default_factory=dict)


class PodDisruptionBudget(K8s):
    kind: Literal["PodDisruptionBudget"] = "PodDisruptionBudget"
    metadata: ObjectMeta
    spec: PDBSpec = Field(default_factory=PDBSpec)
    status: PDBStatus | None = None


POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"  # scheduler-plugins' coscheduling: the pod's group
KUBE_POD_GROUP_GROUP = "scheduling.k8s.io/"  # the API group of kube's own PodGroup (v1alpha2 in 1.36)
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"  # Kueue: the group's pods in one domain of this key
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"  # Kueue: as few domains of this key as can be


class GangPolicy(K8s):
    min_count: int = Field(ge=1)


class PodGroupSchedulingPolicy(K8s):
    gang: GangPolicy | None = None


class TopologyConstraint(K8s):
    key: str = Field(min_length=1)


class PodGroupSchedulingConstraints(K8s):
    topology: list[TopologyConstraint] = Field(default_factory=list)


class PodGroupSpec(K8s):
    min_member: int | None = Field(default=None, ge=1)  # scheduling.x-k8s.io/v1alpha1 (coscheduling)
    scheduling_policy: PodGroupSchedulingPolicy | None = None  # scheduling.k8s.io/v1alpha2 (kube 1.36)
    scheduling_constraints: PodGroupSchedulingConstraints | None = None


class PodGroup(K8s):
    """A gang: kube 1.36's PodGroup (scheduling.k8s.io/v1alpha2, `schedulingPolicy.gang.minCount`, pods naming it
    in `spec.schedulingGroup.podGroupName`) or scheduler-plugins' (scheduling.x-k8s.io/v1alpha1, `minMember`, pods
    labelled scheduling.x-k8s.io/pod-group). At least `min_count` of its pods are placed, or none."""

    kind: Literal["PodGroup"] = "PodGroup"
    api_version: str = ""
    metadata: ObjectMeta
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)

    @property
    def min_count(self) -> int | None:
        """The gang's minimum, or None for a group without a gang policy (its pods are scheduled one by one)."""
        if self.spec.min_member is not None:
            return self.spec.min_member
        policy = self.spec.scheduling_policy
        return policy.gang.min_count if policy is not None and policy.gang is not None else None

    @property
    def kube(self) -> bool:
        """kube's own PodGroup (scheduling.k8s.io), which pods name in `spec.schedulingGroup`."""
        return self.api_version.startswith(KUBE_POD_GROUP_GROUP)

    @property
    def topology_key(self) -> str | None:
        c = self.spec.scheduling_constraints
        return c.topology[0].key if c is not None and c.topology else None


def pod_group_name(pod: Pod) -> str | None:
    """The name of the PodGroup the pod belongs to (in its namespace), by kube's field or coscheduling's label."""
    if pod.spec.scheduling_group is not None and pod.spec.scheduling_group.pod_group_name:
        return pod.spec.scheduling_group.pod_group_name
    return pod.metadata.labels.get(POD_GROUP_LABEL) or None


HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000


class PriorityClass(K8s):
    kind: Literal["PriorityClass"] = "PriorityClass"
    metadata: ObjectMeta
    value: int = Field(ge=-(2**31), le=2**31 - 1)
    global_default: bool = False
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = None

    @model_validator(mode="after")
    def _user_definable(self) -> PriorityClass:
        if self.value > HIGHEST_USER_DEFINABLE_PRIORITY and not self.metadata.name.startswith("system-"):
            raise PydanticCustomError("invalid", "value: must be no greater than {hi} (only system- classes "
                                      "may go higher), got {v}", {"hi": HIGHEST_USER_DEFINABLE_PRIORITY,
                                                                  "v": self.value})
        return self


class Namespace(K8s):
    kind: Literal["Namespace"] = "Namespace"
    metadata: ObjectMeta


class PVSpec(K8s):
    capacity: ResourceList = Field(default_factory=dict)
    access_modes: list[str] = Field(default_factory=list)
    storage_class_name: str = ""
    node_affinity: dict[str, NodeSelector | None] | None = None
    claim_ref: dict[str, Any] | None = None
    gce_persistent_disk: GCEPersistentDisk | None = None
    aws_elastic_block_store: AWSElasticBlockStore | None = None
    rbd: RBDVolume | None = None
    iscsi: ISCSIVolume | None = None
    csi: dict[str, Any] | None = None
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolume(K8s):
    kind: Literal["PersistentVolume"] = "PersistentVolume"
    metadata: ObjectMeta
    spec: PVSpec = Field(default_factory=PVSpec)
    status: dict[str, Any] = Field(default_factory=dict)


class PVCSpec(K8s):
    access_modes: list[str] = Field(default_factory=list)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    storage_class_name: str | None = None
    volume_name: str = ""
    selector: LabelSelector | None = None
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaim(K8s):
    kind: Literal["PersistentVolumeClaim"] = "PersistentVolumeClaim"
    metadata: ObjectMeta
    spec: PVCSpec = Field(default_factory=PVCSpec)
    status: dict[str, Any] = Field(default_factory=dict)


class StorageClass(K8s):
    kind: Literal["StorageClass"] = "StorageClass"
    metadata: ObjectMeta
    provisioner: str = ""
    volume_binding_mode: Literal["Immediate", "WaitForFirstConsumer"] = "Immediate"
    allowed_topologies: list[dict[str, Any]] = Field(default_factory=list)


class CSINodeDriver(K8s):
    name: str
    node_id: str = Field(default="", alias="nodeID")
    allocatable: dict[str, int] | None = None
    topology_keys: list[str] = Field(default_factory=list)


class CSINodeSpec(K8s):
    drivers: list[CSINodeDriver] = Field(default_factory=list)


class CSINode(K8s):
    kind: Literal["CSINode"] = "CSINode"
    metadata: ObjectMeta
    spec: CSINodeSpec = Field(default_factory=CSINodeSpec)


class ServiceSpec(K8s):
    selector: dict[str, str] = Field(default_factory=dict)


class Service(K8s):
    kind: Literal["Service"] = "Service"
    metadata: ObjectMeta
    spec: ServiceSpec = Field(default_factory=ServiceSpec)


# --- workloads (expanded into pods by models.workloads) -------------------------------------------


class WorkloadSpec(K8s):
    replicas: int | None = Field(default=None, ge=0)
    selector: LabelSelector | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    service_name: str = ""
    parallelism: int | None = Field(default=None, ge=0)
    completions: int | None = Field(default=None, ge=0)
    pod_management_policy: str = "OrderedReady"


class Workload(K8s):
    """Deployment, ReplicaSet, StatefulSet, Job, DaemonSet or ReplicationController."""

    api_version: str = ""
    kind: Literal["Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet", "ReplicationController"]
    metadata: ObjectMeta
    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)
    status: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _rc_selector_is_a_map(cls, data: Any) -> Any:
        """A ReplicationController's `spec.selector` is a plain label map, not a LabelSelector."""
        if isinstance(data, dict) and data.get("kind") == "ReplicationController":
            spec = data.get("spec")
            sel = spec.get("selector") if isinstance(spec, dict) else None
            if isinstance(sel, dict) and sel and not {"matchLabels", "matchExpressions"} & set(sel):
                data = {**data, "spec": {**spec, "selector": {"matchLabels": sel}}}
        return data


MODEL_BY_KIND: dict[str, type[K8s]] = {
    "Pod": Pod,
    "Node": Node,
    "PodDisruptionBudget": PodDisruptionBudget,
    "PriorityClass": PriorityClass,
    "Namespace": Namespace,
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "Service": Service,
    "PodGroup": PodGroup,
    **{k: Workload for k in ("Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet", "ReplicationController")},
}
CLUSTER_SCOPED = {"Node", "PriorityClass", "Namespace", "PersistentVolume", "StorageClass", "CSINode"}
