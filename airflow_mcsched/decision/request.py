"""What a DAG step asks for: the placement request, validated at the edge with errors that name the fix."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from airflow_mcsched.access.capacity import MILLI_PER_GPU
from airflow_mcsched.access.fleet_file import describe_validation_error
from airflow_mcsched.access.profiles import WorkKind

# Bounds that refuse nonsense before it costs anything (no queue row, no admission cycle). They are
# far above any node of a real fleet; what a fleet cannot run waits with a reason instead.
MAX_GPUS_PER_POD = 64
MAX_PODS = 1024
MAX_CPU_PER_POD = 1024.0
MAX_MEMORY_GIB_PER_POD = 16384.0  # 16 TiB
MAX_LIST_ITEMS = 64  # gpu_types, data, failure domains: a request naming more is a mistake


class RequestError(ValueError):
    """A request that cannot be used; one line per problem, each naming the field and the fix."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid placement request\n" + "\n".join(f"  - {p}" for p in problems))


class DataLocation(BaseModel):
    """A dataset name or storage path the work reads, and how much of it must be staged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    location: str = Field(min_length=1, description="dataset name or storage path, e.g. s3://ml-eu/x")
    size_gib: float = Field(default=0.0, ge=0)


class PlacementRequest(BaseModel):
    """One step's needs. Per-pod fields (gpus, gpu_milli, cpu, memory_gib) times `pods` make the gang.

    A fractional share (`gpu_milli` 1..999) is a share of one GPU on a pool that offers sharing;
    `gpus=1, gpu_milli=460` (the openb trace's way) means the same as `gpu_milli=460`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    arrival: datetime
    team: str = Field(min_length=1)
    project: str | None = None
    kind: WorkKind = WorkKind.BATCH
    gpus: int = Field(default=0, ge=0, le=MAX_GPUS_PER_POD, description="whole GPUs per pod")
    gpu_milli: int = Field(default=0, ge=0, le=MILLI_PER_GPU, description="share of one GPU per pod")
    gpu_types: tuple[str, ...] = Field(
        default=(), max_length=MAX_LIST_ITEMS, description="acceptable GPU types; empty = any"
    )
    min_gpu_memory_gib: float | None = Field(default=None, gt=0)
    cpu: float = Field(default=1.0, gt=0, le=MAX_CPU_PER_POD, description="cores per pod")
    memory_gib: float = Field(default=4.0, gt=0, le=MAX_MEMORY_GIB_PER_POD, description="memory per pod")
    pods: int = Field(default=1, ge=1, le=MAX_PODS, description="pods of the gang, all started together")
    expected_duration: timedelta | None = None
    interruptible: bool = False
    priority_class: str | None = Field(default=None, description="None = the policy's default class")
    data: tuple[DataLocation, ...] = Field(default=(), max_length=MAX_LIST_ITEMS)
    needs_rdma: bool = False
    needs_fast_storage: bool = False
    failure_domains: tuple[str, ...] = Field(
        default=(), max_length=MAX_LIST_ITEMS, description="only these domains; empty = any"
    )
    avoid_failure_domains: tuple[str, ...] = Field(default=(), max_length=MAX_LIST_ITEMS)
    avoid_clusters: tuple[str, ...] = ()
    spread_group: str | None = Field(default=None, description="members go to distinct failure domains")
    max_cost_per_hour: float | None = Field(default=None, gt=0)
    deadline: datetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise_share(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        milli = data.get("gpu_milli") or 0
        gpus = data.get("gpus") or 0
        if isinstance(milli, int) and isinstance(gpus, int):
            if milli == MILLI_PER_GPU:  # a "share" of a whole GPU is a whole GPU
                data = {**data, "gpu_milli": 0, "gpus": max(gpus, 1)}
            elif 0 < milli < MILLI_PER_GPU and gpus == 1:
                data = {**data, "gpus": 0}
        return data

    @field_validator("expected_duration")
    @classmethod
    def _positive_duration(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value <= timedelta(0):
            raise ValueError("must be positive, e.g. 'PT2H' or 7200 (seconds); leave it out if unknown")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> PlacementRequest:
        if self.gpu_milli and self.gpus:
            raise ValueError(
                "gpu_milli is a share of one GPU; ask either gpus=N whole GPUs or gpu_milli=1..999 (with gpus 0 or 1)"
            )
        if (self.gpu_types or self.min_gpu_memory_gib) and not (self.gpus or self.gpu_milli):
            raise ValueError("gpu_types / min_gpu_memory_gib are set but no GPUs are asked; set gpus or gpu_milli")
        if self.deadline is not None and self.deadline <= self.arrival:
            raise ValueError("deadline must be after arrival; leave it out if there is none")
        clash = set(self.failure_domains) & set(self.avoid_failure_domains)
        if clash:
            raise ValueError(f"failure domains {sorted(clash)} are both required and avoided; keep one")
        return self

    @property
    def needs_gpu(self) -> bool:
        return bool(self.gpus or self.gpu_milli)

    @property
    def gpu_equivalent(self) -> float:
        """GPUs of the whole gang, a share counting as its fraction of one GPU."""
        return self.pods * (self.gpus + self.gpu_milli / MILLI_PER_GPU)


def parse_request(data: Any) -> PlacementRequest:
    """Validate raw input (JSON body, DAG params) into a request, or raise `RequestError` listing every problem."""
    if not isinstance(data, dict):
        raise RequestError(["request must be a mapping of fields (id, arrival, team, gpus, ...)"])
    try:
        return PlacementRequest.model_validate(data)
    except ValidationError as err:
        raise RequestError(describe_validation_error(err, data)) from None
