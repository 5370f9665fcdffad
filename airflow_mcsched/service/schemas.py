"""Pydantic bodies of the placement service's HTTP API (the edge; domain objects stay inside)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from airflow_mcsched.access.profiles import ClusterProfile


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


class TaskRef(BaseModel):
    """The Airflow task instance a placement is for; (dag, run, task, map index, try, attempt) is
    the idempotency key: submitting the same key again returns the same placement."""

    dag_id: str = Field(min_length=1, max_length=250)
    run_id: str = Field(min_length=1, max_length=250)
    task_id: str = Field(min_length=1, max_length=250)
    map_index: int = -1
    try_number: int = Field(default=1, ge=0)


class ResourceAsk(BaseModel):
    """What a step needs: the engine's PlacementRequest without the fields the service sets
    (id, arrival). Same names, same validation (see `airflow_mcsched.decision.request`)."""

    model_config = ConfigDict(extra="forbid")

    team: str | None = Field(default=None, description="else from the DAG's params or tags")
    project: str | None = None
    kind: str = "batch"
    gpus: int = 0
    gpu_milli: int = 0
    gpu_types: list[str] = Field(default_factory=list)
    min_gpu_memory_gib: float | None = None
    cpu: float = 1.0
    memory_gib: float = 4.0
    pods: int = 1
    expected_duration_seconds: float | None = None
    interruptible: bool = False
    priority_class: str | None = None
    data: list[dict[str, Any]] = Field(default_factory=list, description="[{location, size_gib}]")
    needs_rdma: bool = False
    needs_fast_storage: bool = False
    failure_domains: list[str] = Field(default_factory=list)
    avoid_failure_domains: list[str] = Field(default_factory=list)
    avoid_clusters: list[str] = Field(default_factory=list)
    spread_group: str | None = None
    max_cost_per_hour: float | None = None
    deadline: datetime | None = None


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
