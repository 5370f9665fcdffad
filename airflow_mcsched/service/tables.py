"""The project's tables in the Airflow metadata DB, all prefixed `mcsched_`.

They live on their own MetaData (not Airflow's), so Airflow's own `create_all` never touches
them; our DB manager creates them on a fresh DB and our Alembic migrations upgrade them.
The tables map domain objects (profiles, observations); they do not replace them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

T = TypeVar("T")

TABLE_PREFIX = "mcsched_"
VERSION_TABLE = "alembic_version_mcsched"

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UtcDateTime(TypeDecorator):
    """Timezone-aware UTC timestamps on every backend (SQLite stores naive datetimes)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column; pass an aware datetime")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else as_utc(value)


def as_utc(value: datetime) -> datetime:
    """A time read from a UTC column: SQLite's come back naive."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


PAGE = 500
"""Rows or keys per statement where one statement would take them all: SQLite limits the
parameters of one statement, and PostgreSQL takes a page of rows as one parameter."""


def in_pages(items: Sequence[T]) -> Iterator[Sequence[T]]:
    for i in range(0, len(items), PAGE):
        yield items[i : i + PAGE]


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class ClusterRow(Base):
    """A cluster profile; `spec` holds the whole validated ClusterProfile, columns the searchable parts."""

    __tablename__ = "mcsched_cluster"

    name: Mapped[str] = mapped_column(String(63), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    region: Mapped[str] = mapped_column(String(128))
    zone: Mapped[str] = mapped_column(String(128))
    failure_domain: Mapped[str] = mapped_column(String(256))
    connection_id: Mapped[str] = mapped_column(String(250))
    namespace: Mapped[str] = mapped_column(String(63))
    state: Mapped[str] = mapped_column(String(32), index=True)
    spec: Mapped[dict] = mapped_column(JSON)
    generation: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)

    pools: Mapped[list[NodePoolRow]] = relationship(
        back_populates="cluster", cascade="all, delete-orphan", order_by="NodePoolRow.name"
    )


class NodePoolRow(Base):
    """One node pool of a cluster, kept as rows so that reports can group by GPU type and price."""

    __tablename__ = "mcsched_node_pool"

    cluster_name: Mapped[str] = mapped_column(
        String(63), ForeignKey("mcsched_cluster.name", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(63), primary_key=True)
    gpu_type: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    gpus_per_node: Mapped[int] = mapped_column(Integer)
    nodes: Mapped[int] = mapped_column(Integer)
    price_per_gpu_hour: Mapped[float] = mapped_column(Float)
    spot_price_per_gpu_hour: Mapped[float | None] = mapped_column(Float, nullable=True)

    cluster: Mapped[ClusterRow] = relationship(back_populates="pools")


class ClusterStatusRow(Base):
    """The last capacity read of a cluster, its health, and the sync lease (one syncer per cluster)."""

    __tablename__ = "mcsched_cluster_status"

    cluster_name: Mapped[str] = mapped_column(
        String(63), ForeignKey("mcsched_cluster.name", ondelete="CASCADE"), primary_key=True
    )
    observed_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    last_success_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    healthy: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    sync_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    observation: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    lease_owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # the circuit breaker (airflow_mcsched.access.breaker): unforgiven failures, good reads in a row, opened
    breaker_failures: Mapped[int] = mapped_column(Integer, default=0)
    breaker_successes: Mapped[int] = mapped_column(Integer, default=0)
    breaker_opened_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class AuditRow(Base):
    """Who did what and when: cluster changes, quota changes, decisions, preemptions, reclaims."""

    __tablename__ = "mcsched_audit"
    __table_args__ = (Index("ix_mcsched_audit_subject", "subject_kind", "subject"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(250))
    action: Mapped[str] = mapped_column(String(64), index=True)
    subject_kind: Mapped[str] = mapped_column(String(32))
    subject: Mapped[str] = mapped_column(String(250))
    details: Mapped[dict] = mapped_column(JSON, default=dict)


class PlacementRow(Base):
    """One placement attempt of one task try: the queue entry, its decision, and its lineage and cost.

    Pending rows are the queue; the admission cycle decides them. The unique key makes submission
    idempotent across worker restarts and retries of the same try.
    """

    __tablename__ = "mcsched_placement"
    __table_args__ = (
        UniqueConstraint(
            "dag_id", "run_id", "task_id", "map_index", "try_number", "attempt", name="uq_mcsched_placement_attempt_key"
        ),
        Index("ix_mcsched_placement_run", "dag_id", "run_id"),
        Index("ix_mcsched_placement_team_queued", "team", "queued_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    dag_id: Mapped[str] = mapped_column(String(250))
    run_id: Mapped[str] = mapped_column(String(250))
    task_id: Mapped[str] = mapped_column(String(250))
    map_index: Mapped[int] = mapped_column(Integer, default=-1)
    try_number: Mapped[int] = mapped_column(Integer, default=1)
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    ti_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    holder_task_id: Mapped[str | None] = mapped_column(String(250), nullable=True)
    team: Mapped[str] = mapped_column(String(128))
    project: Mapped[str | None] = mapped_column(String(128), nullable=True)
    priority_class: Mapped[str | None] = mapped_column(String(64), nullable=True)
    kind: Mapped[str] = mapped_column(String(32))
    interruptible: Mapped[bool] = mapped_column(Boolean, default=False)
    state: Mapped[str] = mapped_column(String(16), index=True)
    ask: Mapped[dict] = mapped_column(JSON)
    request: Mapped[dict] = mapped_column(JSON)
    submitted_by: Mapped[str] = mapped_column(String(250))
    queued_at: Mapped[datetime] = mapped_column(UtcDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    admitted_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    cluster: Mapped[str | None] = mapped_column(String(63), nullable=True, index=True)
    pool: Mapped[str | None] = mapped_column(String(63), nullable=True)
    nodes: Mapped[list | None] = mapped_column(JSON, nullable=True)
    gpu_type: Mapped[str | None] = mapped_column(String(128), nullable=True)
    gpus: Mapped[float] = mapped_column(Float, default=0.0)
    price_per_gpu_hour: Mapped[float | None] = mapped_column(Float, nullable=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    explanation: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    rejections_digest: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    """The explanation's rejections, kept once in `mcsched_rejection_list` (None: they are inline in
    `explanation`, as rows decided before revision 0005 keep them)."""
    pod_name: Mapped[str | None] = mapped_column(String(253), nullable=True)
    end_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    gpu_hours: Mapped[float | None] = mapped_column(Float, nullable=True)
    cost: Mapped[float | None] = mapped_column(Float, nullable=True)


class ReservationRow(Base):
    """Capacity granted to a placement under a lease; it counts as used until released or expired."""

    __tablename__ = "mcsched_reservation"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    placement_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("mcsched_placement.id", ondelete="CASCADE"), unique=True
    )
    cluster: Mapped[str] = mapped_column(String(63), index=True)
    pool: Mapped[str] = mapped_column(String(63))
    pods: Mapped[list] = mapped_column(JSON)
    team: Mapped[str] = mapped_column(String(128))
    project: Mapped[str | None] = mapped_column(String(128), nullable=True)
    priority: Mapped[int] = mapped_column(Integer)
    priority_class: Mapped[str | None] = mapped_column(String(64), nullable=True)
    interruptible: Mapped[bool] = mapped_column(Boolean)
    gpu_type: Mapped[str | None] = mapped_column(String(128), nullable=True)
    price_per_gpu_hour: Mapped[float] = mapped_column(Float)
    spread_group: Mapped[str | None] = mapped_column(String(128), nullable=True)
    granted_at: Mapped[datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    expected_end: Mapped[datetime] = mapped_column(UtcDateTime)
    preempted_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True, index=True)
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class RejectionListRow(Base):
    """One list of rejections (every pool a decision ruled out, and why), kept once for all the
    placements whose explanation gives it. Requests alike share one list in a cycle, and usually
    the same list from cycle to cycle; inline, it was most of a row's explanation (some 22 KB of
    25 KB at 100 clusters), written again for every row of every cycle. The admission cycle, the
    only writer, adds lists under their digest and drops those no placement names any more."""

    __tablename__ = "mcsched_rejection_list"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    """sha256 of the list's JSON text."""
    rejections: Mapped[list] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class AdmissionLockRow(Base):
    """One row; every admission cycle updates it first, so cycles from any number of API-server
    processes run one at a time (a row lock on PostgreSQL, the single writer on SQLite)."""

    __tablename__ = "mcsched_admission_lock"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cycles: Mapped[int] = mapped_column(Integer, default=0)
    last_cycle_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


metadata = Base.metadata


def include_only_ours(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic filter: the metadata DB is shared with Airflow, so only `mcsched_` tables are ours."""
    return type_ != "table" or bool(name and name.startswith(TABLE_PREFIX))
