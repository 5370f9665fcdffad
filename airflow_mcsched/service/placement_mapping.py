"""Between the engine's objects and the placement tables: requests, reservations, explanations.

The tables store what the engine decided; these functions are the only place that knows both.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from airflow_mcsched.decision import (
    PlacementRequest,
    Reservation,
    parse_request,
)
from airflow_mcsched.service.schemas import (
    Explanation,
    PlacementOut,
    PlacementState,
    RejectionOut,
    ResourceAsk,
    TaskRef,
)
from airflow_mcsched.service.stored_explanations import with_rejections
from airflow_mcsched.service.tables import PlacementRow, ReservationRow
from airflow_mcsched.view import NodeAllocation


def engine_request(row_id: str, ask: ResourceAsk, team: str, project: str | None, arrival) -> PlacementRequest:
    """The engine's request for an ask; raises RequestError naming each bad field and its fix."""
    fields = ask.model_dump(exclude={"team", "project", "expected_duration_seconds"})
    if ask.expected_duration_seconds is not None:
        fields["expected_duration"] = timedelta(seconds=ask.expected_duration_seconds)
    return parse_request({**fields, "id": row_id, "arrival": arrival, "team": team, "project": project})


def request_of(row: PlacementRow) -> PlacementRequest:
    return PlacementRequest.model_validate(row.request)


_ROW_COLUMNS = frozenset(ReservationRow.__mapper__.column_attrs.keys()) - {"active", "ended_at"}
"""The columns of a reservation's row that the engine's reservation is made of (all but whether
and when it ended)."""


def reservation_of(row: ReservationRow) -> Reservation:
    """The engine's reservation for an ORM row.

    Read from the row's loaded values (its `__dict__`, where the ORM keeps them), not through the
    ORM's descriptor per column: the reclaim report makes every active reservation from its row,
    and on a full fleet of 27,000 reservations the descriptors alone took about 120 ms of CPU
    (`benchmarks/bench_reservation_rebuild.py`). A row with a column not loaded (expired by a
    commit, say) is read through the ORM, which loads it. (The admission cycle reads plain rows:
    `held_reservations.py`.)"""
    values = row.__dict__
    if not values.keys() >= _ROW_COLUMNS:
        values = {name: getattr(row, name) for name in _ROW_COLUMNS}
    return reservation_from(values, tuple(map(allocation_of, values["pods"])))


def reservation_from(
    values: Mapping[str, Any], pods: tuple[NodeAllocation, ...], expires_at: datetime | None = None
) -> Reservation:
    """The engine's reservation of a row's values by column name, its pods made already (`allocation_of`);
    `expires_at` when the lease is other than the row's (renewed in the cycle that reads it)."""
    return Reservation(
        id=values["id"],
        request_id=values["placement_id"],
        cluster=values["cluster"],
        pool=values["pool"],
        pods=pods,
        team=values["team"],
        priority=values["priority"],
        interruptible=values["interruptible"],
        price_per_gpu_hour=values["price_per_gpu_hour"],
        granted_at=values["granted_at"],
        expires_at=values["expires_at"] if expires_at is None else expires_at,
        expected_end=values["expected_end"],
        gpu_type=values["gpu_type"],
        priority_class=values["priority_class"],
        project=values["project"],
        spread_group=values["spread_group"],
        preempted_by=values["preempted_by"],
    )


def allocation_of(pod: dict[str, Any]) -> NodeAllocation:
    """A pod of a reservation's row: with the GPUs the node chooser gave it, so that giving it back
    frees those GPUs (rows written before session 28 have none: given back by amount)."""
    return NodeAllocation(
        pod["node"],
        pod["gpus"],
        pod["gpu_milli"],
        pod["cpu_milli"],
        pod["memory_mib"],
        tuple(pod.get("gpu_indices", ())),
    )


def reservation_row(res: Reservation) -> ReservationRow:
    return ReservationRow(**reservation_values(res))


def reservation_values(res: Reservation) -> dict[str, Any]:
    """A granted reservation's row, as column values."""
    return {
        "id": res.id,
        "placement_id": res.request_id,
        "cluster": res.cluster,
        "pool": res.pool,
        "pods": [
            {
                "node": a.node,
                "gpus": a.gpus,
                "gpu_milli": a.gpu_milli,
                "cpu_milli": a.cpu_milli,
                "memory_mib": a.memory_mib,
                "gpu_indices": list(a.gpu_indices),
            }
            for a in res.pods
        ],
        "team": res.team,
        "project": res.project,
        "priority": res.priority,
        "priority_class": res.priority_class,
        "interruptible": res.interruptible,
        "gpu_type": res.gpu_type,
        "price_per_gpu_hour": res.price_per_gpu_hour,
        "spread_group": res.spread_group,
        "granted_at": res.granted_at,
        "expires_at": res.expires_at,
        "expected_end": res.expected_end,
        "preempted_by": res.preempted_by,
        "active": True,
    }


def placement_out(
    row: PlacementRow,
    reservation: ReservationRow | None = None,
    namespace: str | None = None,
    connection_id: str | None = None,
    rejections: list[RejectionOut] | None = None,
) -> PlacementOut:
    """The API's placement; `rejections`, the list its row names (placement_store.py)."""
    return PlacementOut(
        id=row.id,
        state=PlacementState(row.state),
        task=TaskRef(
            dag_id=row.dag_id,
            run_id=row.run_id,
            task_id=row.task_id,
            map_index=row.map_index,
            try_number=row.try_number,
        ),
        attempt=row.attempt,
        team=row.team,
        project=row.project,
        priority_class=row.priority_class,
        ask=ResourceAsk.model_validate(row.ask),
        cluster=row.cluster,
        pool=row.pool,
        nodes=list(row.nodes or []),
        gpu_type=row.gpu_type,
        connection_id=connection_id,
        namespace=namespace,
        reservation_id=None if reservation is None else reservation.id,
        price_per_gpu_hour=row.price_per_gpu_hour,
        score=row.score,
        lease_expires_at=None if reservation is None or not reservation.active else reservation.expires_at,
        queued_at=row.queued_at,
        admitted_at=row.admitted_at,
        started_at=row.started_at,
        ended_at=row.ended_at,
        gpu_hours=row.gpu_hours,
        cost=row.cost,
        pod_name=row.pod_name,
        end_reason=row.end_reason,
        holder_task_id=row.holder_task_id,
        explanation=None if row.explanation is None else _explanation(row.explanation, rejections),
    )


def _explanation(stored: dict[str, Any], rejections: list[RejectionOut] | None) -> Explanation:
    return Explanation.model_validate(stored if rejections is None else with_rejections(stored, rejections))


def json_of(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json")
