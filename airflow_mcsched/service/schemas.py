"""Pydantic bodies of the placement service's HTTP API (the edge; domain objects stay inside)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from airflow_mcsched.access.capacity import MILLI_PER_GPU
from airflow_mcsched.access.profiles import ClusterProfile, WorkKind
from airflow_mcsched.decision.request import (
    MAX_CPU_PER_POD,
    MAX_GPUS_PER_POD,
    MAX_LIST_ITEMS,
    MAX_MEMORY_GIB_PER_POD,
    MAX_PODS,
)
from airflow_mcsched.service.tables import PlacementRow


class ClusterStatusOut(BaseModel):
    healthy: bool
    error: str | None
    observed_at: datetime | None
    last_success_at: datetime | None
    consecutive_failures: int
    sync_seconds: float | None
    nodes: int | None
    nodes_not_ready: int | None
    free_gpus: int | None
    pods_running: int | None
    pods_pending: int | None


class ClusterOut(BaseModel):
    profile: ClusterProfile
    status: ClusterStatusOut | None


class ClusterList(BaseModel):
    clusters: list[ClusterOut]


# --- placements: the contract between the service and the Airflow faces (hook, operator, sensor, trigger)


class PlacementState(StrEnum):
    """A placement attempt's life: PENDING -> ADMITTED -> RUNNING -> RELEASED, or EXPIRED (lease
    lapsed, capacity reclaimed), PREEMPTED (victim, with the reason), FAILED (cluster fault: the
    next attempt is a new placement avoiding that cluster), CANCELLED (withdrawn while pending)."""

    PENDING = "pending"
    ADMITTED = "admitted"
    RUNNING = "running"
    RELEASED = "released"
    EXPIRED = "expired"
    PREEMPTED = "preempted"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def holds_capacity(self) -> bool:
        return self in (PlacementState.ADMITTED, PlacementState.RUNNING)

    @property
    def final(self) -> bool:
        return self in (
            PlacementState.RELEASED,
            PlacementState.EXPIRED,
            PlacementState.PREEMPTED,
            PlacementState.FAILED,
            PlacementState.CANCELLED,
        )


def _column_length(column: Any) -> int:
    """The width of a String column, so the API refuses what the DB (PostgreSQL) could not store."""
    return column.property.columns[0].type.length


MAX_DB_INT = 2**31 - 1  # an INTEGER column; larger numbers would fail in the DB, not at the edge
_SHORT_NAME = 250


class TaskRef(BaseModel):
    """The Airflow task instance a placement is for; (dag, run, task, map index, try, attempt) is
    the idempotency key: submitting the same key again returns the same placement."""

    model_config = ConfigDict(extra="forbid")

    dag_id: str = Field(min_length=1, max_length=_column_length(PlacementRow.dag_id))
    run_id: str = Field(min_length=1, max_length=_column_length(PlacementRow.run_id))
    task_id: str = Field(min_length=1, max_length=_column_length(PlacementRow.task_id))
    map_index: int = Field(default=-1, ge=-1, le=MAX_DB_INT)
    try_number: int = Field(default=1, ge=0, le=MAX_DB_INT)


class DataAsk(BaseModel):
    """A dataset the step reads (the engine's `DataLocation`)."""

    model_config = ConfigDict(extra="forbid")

    location: str = Field(min_length=1, max_length=1024, description="dataset name or storage path")
    size_gib: float = Field(default=0.0, ge=0)


class ResourceAsk(BaseModel):
    """What a step needs: the engine's PlacementRequest without the fields the service sets
    (id, arrival). Same names, same bounds (see `airflow_mcsched.decision.request`), so the
    OpenAPI schema tells clients the limits and a request outside them is refused before it is
    queued; the rules between fields (gpu_types need gpus, ...) are checked by the engine's model."""

    model_config = ConfigDict(extra="forbid")

    team: str | None = Field(
        default=None, min_length=1, max_length=_column_length(PlacementRow.team), description="else from the DAG"
    )
    project: str | None = Field(default=None, min_length=1, max_length=_column_length(PlacementRow.project))
    kind: WorkKind = WorkKind.BATCH
    gpus: int = Field(default=0, ge=0, le=MAX_GPUS_PER_POD, description="whole GPUs per pod")
    gpu_milli: int = Field(default=0, ge=0, le=MILLI_PER_GPU, description="share of one GPU per pod")
    gpu_types: list[Annotated[str, Field(min_length=1, max_length=_SHORT_NAME)]] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS
    )
    min_gpu_memory_gib: float | None = Field(default=None, gt=0)
    cpu: float = Field(default=1.0, gt=0, le=MAX_CPU_PER_POD, description="cores per pod")
    memory_gib: float = Field(default=4.0, gt=0, le=MAX_MEMORY_GIB_PER_POD, description="memory per pod")
    pods: int = Field(default=1, ge=1, le=MAX_PODS)
    expected_duration_seconds: float | None = Field(default=None, gt=0)
    interruptible: bool = False
    priority_class: str | None = Field(
        default=None, min_length=1, max_length=_column_length(PlacementRow.priority_class)
    )
    data: list[DataAsk] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    needs_rdma: bool = False
    needs_fast_storage: bool = False
    failure_domains: list[Annotated[str, Field(max_length=_SHORT_NAME)]] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS
    )
    avoid_failure_domains: list[Annotated[str, Field(max_length=_SHORT_NAME)]] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS
    )
    avoid_clusters: list[Annotated[str, Field(max_length=_SHORT_NAME)]] = Field(default_factory=list)
    spread_group: str | None = Field(default=None, max_length=_SHORT_NAME)
    max_cost_per_hour: float | None = Field(default=None, gt=0)
    deadline: AwareDatetime | None = None


class PlacementSubmit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: TaskRef
    ask: ResourceAsk
    attempt: int = Field(default=1, ge=1, le=20, description="placement attempt within one try (failover)")
    dag_tags: list[str] = Field(default_factory=list, description="team:/project: tags give defaults")
    dag_params: dict[str, Any] = Field(default_factory=dict, description="team/project params give defaults")


class RejectionOut(BaseModel):
    cluster: str
    pool: str | None
    reason: str
    message: str
    lasting: bool


class ScorePartOut(BaseModel):
    name: str
    value: float
    weight: float
    detail: dict[str, Any] = Field(default_factory=dict)


class CandidateOut(BaseModel):
    cluster: str
    pool: str
    score: float
    price_per_gpu_hour: float
    nodes: list[str]
    parts: list[ScorePartOut]


class Explanation(BaseModel):
    """Why the placement is where it is, or why it still waits: always present after a decision."""

    outcome: str
    reason: str
    summary: str
    decided_at: datetime | None = None
    chosen: CandidateOut | None = None
    runners_up: list[CandidateOut] = Field(default_factory=list)
    rejections: list[RejectionOut] = Field(default_factory=list)
    victims: list[dict[str, Any]] = Field(default_factory=list)
    expected_start: datetime | None = None


class PlacementOut(BaseModel):
    """A placement attempt, with where it goes (once admitted) and the lineage and cost it records."""

    id: str
    state: PlacementState
    task: TaskRef
    attempt: int
    team: str
    project: str | None
    priority_class: str | None
    ask: ResourceAsk
    cluster: str | None = None
    pool: str | None = None
    nodes: list[str] = Field(default_factory=list)
    gpu_type: str | None = None
    connection_id: str | None = None
    namespace: str | None = None
    reservation_id: str | None = Field(default=None, description="label the pod mcsched.io/reservation=<this>")
    price_per_gpu_hour: float | None = None
    score: float | None = None
    lease_expires_at: datetime | None = None
    queued_at: datetime
    admitted_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    gpu_hours: float | None = None
    cost: float | None = None
    pod_name: str | None = None
    end_reason: str | None = None
    holder_task_id: str | None = Field(default=None, description="the task the reservation was handed to")
    explanation: Explanation | None = None


class PlacementList(BaseModel):
    placements: list[PlacementOut]


class Handover(BaseModel):
    """A sensor that waited for admission hands its reservation to a downstream task of the same run."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1, max_length=250)


class StartReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pod_name: str = Field(min_length=1, max_length=253)


class EndReport(BaseModel):
    """How the step ended; `succeeded`/`failed` are the pod's outcome, `killed` a task stop."""

    model_config = ConfigDict(extra="forbid")

    outcome: Literal["succeeded", "failed", "killed"]
    message: str = Field(default="", max_length=2000)


class FaultReport(BaseModel):
    """The chosen cluster could not run the step (API down, pod never scheduled): the placement
    becomes FAILED, its capacity is freed, and the cluster's fault is counted."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=64, description="e.g. ClusterApiUnavailable, PodNotScheduled")
    message: str = Field(default="", max_length=2000)
