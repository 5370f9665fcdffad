"""The Fleet page: every cluster's health and age of its last read, and per node pool the GPUs in use,
reserved and free, with prices.

Free GPUs are counted as the engine counts them: the last good capacity read minus the reservations
whose pods that read does not show yet. An unhealthy or stale cluster keeps its last good numbers,
marked as such, rather than dropping out of the page.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.placement_mapping import allocation_of
from airflow_mcsched.service.status_store import ClusterStatus, StatusStore
from airflow_mcsched.service.tables import ReservationRow
from airflow_mcsched.ui.access import PageCaller
from airflow_mcsched.ui.templating import render
from airflow_mcsched.view import PoolView, build_view

router = APIRouter(prefix="/ui", include_in_schema=False)


@dataclass(frozen=True)
class PoolLine:
    name: str
    gpu_type: str | None
    nodes: int
    gpus_per_node: int
    allocatable: int
    in_use: float
    reserved: float
    free: int
    price_per_gpu_hour: float
    spot_price_per_gpu_hour: float | None
    gpu_sharing: bool


@dataclass(frozen=True)
class ClusterLine:
    name: str
    kind: str
    region: str
    state: str
    health: str  # healthy | unhealthy | stale | never read
    error: str | None
    age_seconds: float | None
    nodes: int | None
    nodes_not_ready: int | None
    pods_running: int | None
    pods_pending: int | None
    pools: tuple[PoolLine, ...]


@dataclass(frozen=True)
class GpuTypeLine:
    gpu_type: str
    allocatable: int
    reserved: float
    free: int


@dataclass(frozen=True)
class FleetSummary:
    taken_at: datetime
    clusters: tuple[ClusterLine, ...]
    gpu_types: tuple[GpuTypeLine, ...]


def _gpus(pods: Iterable[dict]) -> float:
    return sum(p.get("gpus", 0) + p.get("gpu_milli", 0) / 1000 for p in pods)


def _health(status: ClusterStatus | None, now: datetime, max_age: timedelta) -> str:
    if status is None or status.last_success_at is None:
        return "never read" if status is None or status.healthy else "unhealthy"
    if not status.healthy:
        return "unhealthy"
    return "stale" if now - status.last_success_at > max_age else "healthy"


def _pool_line(pool: PoolView, held: list[ReservationRow], seen: frozenset[str]) -> PoolLine:
    unseen = [allocation_of(p) for r in held if r.id not in seen for p in r.pods]
    cap = pool.capacity
    reserved = _gpus(p for r in held for p in r.pods)
    free = cap.take(unseen, anywhere=True).whole_gpus_free
    return PoolLine(
        name=pool.name,
        gpu_type=pool.gpu_type,
        nodes=len(cap.nodes) + cap.nodes_excluded,
        gpus_per_node=pool.gpus_per_node,
        allocatable=cap.allocatable_gpus,
        in_use=max(cap.allocatable_gpus - free - reserved, 0),
        reserved=reserved,
        free=free,
        price_per_gpu_hour=pool.price_per_gpu_hour,
        spot_price_per_gpu_hour=pool.spot_price_per_gpu_hour,
        gpu_sharing=pool.gpu_sharing,
    )


def fleet_summary(session: Session, now: datetime, max_age: timedelta) -> FleetSummary:
    profiles = ClusterStore(session).list()
    statuses = StatusStore(session).all()
    view = build_view(profiles, [s.observation for s in statuses.values() if s.observation], now)
    held: dict[tuple[str, str], list[ReservationRow]] = defaultdict(list)
    for res in session.scalars(select(ReservationRow).where(ReservationRow.active.is_(True))):
        held[(res.cluster, res.pool)].append(res)
    clusters = []
    for c in view.clusters:
        status, profile = statuses.get(c.name), next(p for p in profiles if p.name == c.name)
        summary = status.summary() if status else {}
        clusters.append(
            ClusterLine(
                name=c.name,
                kind=str(profile.kind),
                region=f"{profile.region}/{profile.zone}" if profile.zone else profile.region,
                state=str(profile.state),
                health=_health(status, now, max_age),
                error=status.error if status else None,
                age_seconds=status.age_seconds(now) if status else None,
                nodes=summary.get("nodes"),
                nodes_not_ready=summary.get("nodes_not_ready"),
                pods_running=summary.get("pods_running"),
                pods_pending=summary.get("pods_pending"),
                pools=tuple(_pool_line(p, held[p.key], c.reservation_ids_seen) for p in c.pools),
            )
        )
    return FleetSummary(now, tuple(clusters), _by_gpu_type(clusters))


def _by_gpu_type(clusters: Iterable[ClusterLine]) -> tuple[GpuTypeLine, ...]:
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0])
    for c in clusters:
        for p in c.pools:
            if p.gpu_type:
                s = sums[p.gpu_type]
                s[0] += p.allocatable
                s[1] += p.reserved
                s[2] += p.free
    return tuple(GpuTypeLine(t, int(a), r, int(f)) for t, (a, r, f) in sorted(sums.items()))


@router.get("/fleet", response_class=HTMLResponse)
def fleet_page(request: Request, caller: PageCaller) -> HTMLResponse:
    from airflow.utils.session import create_session

    from airflow_mcsched.service.policy_source import current_policy

    with create_session() as session:
        summary = fleet_summary(session, datetime.now(UTC), current_policy().max_observation_age)
    return render(request, "fleet.html", fleet=summary, caller=caller, page="fleet")
