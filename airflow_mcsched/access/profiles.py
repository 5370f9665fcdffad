"""Cluster profiles: every cluster, whatever it runs on, described as one kind of object (layer 1).

A profile is what an operator declares about a cluster (its node pools, prices, data, policy
hints); live capacity comes from the cluster's Kubernetes API and is kept apart, in the view.
"""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def check_dns1123_label(value: str, what: str = "name") -> str:
    """Cluster and pool names become label values and connection ids, so they follow DNS-1123."""
    if len(value) > 63 or not DNS1123_LABEL.match(value):
        raise ValueError(
            f"{what} {value!r} must be a DNS-1123 label: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters (e.g. 'onprem-a')"
        )
    return value


def _require_unique(names: list[str], what: str) -> None:
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{what} must be unique; rename or remove the repeated {dupes}")


class ClusterKind(StrEnum):
    ON_PREM = "on-prem"
    CLOUD = "cloud"
    BARE_METAL = "bare-metal"
    OTHER_CHIPS = "other-chips"


class ClusterState(StrEnum):
    """Operator-set state; `cordoned` and `maintenance` take no new work, running work stays."""

    ACTIVE = "active"
    CORDONED = "cordoned"
    MAINTENANCE = "maintenance"


class WorkKind(StrEnum):
    TRAINING = "training"
    FINE_TUNE = "fine-tune"
    EVAL = "eval"
    BATCH = "batch"
    INFERENCE = "inference"
    EXPERIMENT = "experiment"


class Interconnect(StrEnum):
    NVLINK = "nvlink"
    INFINIBAND = "infiniband"
    ROCE = "roce"
    ETHERNET = "ethernet"


RDMA_INTERCONNECTS = frozenset({Interconnect.INFINIBAND, Interconnect.ROCE})


class _Strict(BaseModel):
    """Profiles refuse unknown fields: a typo in a fleet file must not be silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class NodePool(_Strict):
    """A set of identical nodes in one cluster; prices and GPU types differ per pool."""

    name: str
    gpu_type: str | None = Field(
        default=None, description="GPU product as in the node label nvidia.com/gpu.product; None = CPU pool"
    )
    gpu_memory_gib: float = Field(default=0, ge=0)
    gpus_per_node: int = Field(default=0, ge=0, le=64)
    nodes: int = Field(ge=1, le=10_000)
    cpu_per_node: float = Field(default=64, gt=0, description="cores")
    memory_gib_per_node: float = Field(default=256, gt=0)
    interconnect: list[Interconnect] = Field(default_factory=list)
    storage_gbps: float = Field(default=1.0, ge=0, description="read bandwidth to fast storage")
    price_per_gpu_hour: float = Field(default=0.0, ge=0, description="on-demand price")
    spot_price_per_gpu_hour: float | None = Field(
        default=None, ge=0, description="price for interruptible work; None = no spot offer"
    )
    gpu_sharing: bool = Field(default=False, description="fractional GPUs (time slicing / MPS) offered")
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_dns1123_label(value, "node pool name")

    @model_validator(mode="after")
    def _gpu_consistency(self) -> NodePool:
        if self.gpu_type and self.gpus_per_node == 0:
            raise ValueError(f"node pool {self.name!r} names gpu_type {self.gpu_type!r}; set gpus_per_node >= 1")
        if self.gpus_per_node and not self.gpu_type:
            raise ValueError(f"node pool {self.name!r} has GPUs; set gpu_type (e.g. 'A100-80GB')")
        if self.spot_price_per_gpu_hour is not None and self.spot_price_per_gpu_hour > self.price_per_gpu_hour:
            raise ValueError(f"node pool {self.name!r}: spot_price_per_gpu_hour must not exceed price_per_gpu_hour")
        return self

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def has_rdma(self) -> bool:
        return any(i in RDMA_INTERCONNECTS for i in self.interconnect)


class DataLocality(_Strict):
    """Datasets and storage prefixes close to the cluster, and what pulling data in costs."""

    datasets: list[str] = Field(default_factory=list)
    storage_prefixes: list[str] = Field(default_factory=list, description="e.g. s3://bucket/path")
    ingress_gbps: float = Field(default=10.0, gt=0, description="bandwidth for staging remote data")
    egress_price_per_gib: float = Field(default=0.0, ge=0, description="price to move a GiB out to another site")

    def holds(self, location: str) -> bool:
        """True when the dataset name or storage path is local to this cluster."""
        return location in self.datasets or any(location.startswith(p) for p in self.storage_prefixes)


class GpuReservation(_Strict):
    """GPUs of a type kept for given priority classes or teams; others may not take them."""

    gpu_type: str
    gpus: int | None = Field(default=None, ge=1, description="None = all GPUs of that type")
    priority_classes: list[str] = Field(default_factory=list)
    teams: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _someone(self) -> GpuReservation:
        if not self.priority_classes and not self.teams:
            raise ValueError(f"reserved {self.gpu_type!r} GPUs: list priority_classes or teams they are kept for")
        return self


class ClusterProfile(_Strict):
    """One cluster of the fleet: where it is, what it has, what it costs, how it may be used."""

    name: str
    kind: ClusterKind = ClusterKind.ON_PREM
    region: str = "default"
    zone: str = "default"
    failure_domain: str | None = Field(default=None, description="defaults to region/zone")
    connection_id: str | None = Field(default=None, description="Airflow kubernetes connection; default mcsched_<name>")
    namespace: str = "default"
    state: ClusterState = ClusterState.ACTIVE
    suited_for: list[WorkKind] = Field(default_factory=lambda: list(WorkKind))
    node_pools: list[NodePool] = Field(min_length=1)
    data: DataLocality = Field(default_factory=DataLocality)
    labels: dict[str, str] = Field(default_factory=dict)
    reserved: list[GpuReservation] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_dns1123_label(value, "cluster name")

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        return check_dns1123_label(value, "namespace")

    @field_validator("node_pools")
    @classmethod
    def _pools_unique(cls, pools: list[NodePool]) -> list[NodePool]:
        _require_unique([p.name for p in pools], "node pool names")
        return pools

    @property
    def conn_id(self) -> str:
        return self.connection_id or f"mcsched_{self.name.replace('-', '_')}"

    @property
    def domain(self) -> str:
        return self.failure_domain or f"{self.region}/{self.zone}"

    @property
    def gpu_types(self) -> list[str]:
        return sorted({p.gpu_type for p in self.node_pools if p.gpu_type})

    @property
    def total_gpus(self) -> int:
        return sum(p.total_gpus for p in self.node_pools)

    def pool(self, name: str) -> NodePool:
        for p in self.node_pools:
            if p.name == name:
                return p
        raise KeyError(f"cluster {self.name!r} has no node pool {name!r}")


class FleetSpec(_Strict):
    """The whole fleet as declared in a fleet file."""

    clusters: list[ClusterProfile] = Field(min_length=1)

    @field_validator("clusters")
    @classmethod
    def _clusters_unique(cls, clusters: list[ClusterProfile]) -> list[ClusterProfile]:
        _require_unique([c.name for c in clusters], "cluster names")
        return clusters

    def cluster(self, name: str) -> ClusterProfile:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(f"fleet has no cluster {name!r}")
