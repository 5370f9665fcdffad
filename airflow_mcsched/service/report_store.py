"""Reports from the metadata DB: loads lineage, reservations and the view, and hands them to governance.

Queries are plain SQLAlchemy that run the same on SQLite and PostgreSQL. The figures are computed
in Python (`airflow_mcsched.governance`) so that clipping to the window is exact and identical for
the API, the CLI and the daily report DAG; only the placements overlapping the window are loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from airflow_mcsched.decision import Policy
from airflow_mcsched.governance.capacity import CapacityReport, capacity_now
from airflow_mcsched.governance.cost import CostReport, CostSeries, cost_report, daily_series, top_spenders
from airflow_mcsched.governance.forecast import DemandForecast, forecast_demand
from airflow_mcsched.governance.quota_use import QuotaUse, quota_use
from airflow_mcsched.governance.reclaim import HeldReservation, ReclaimCandidate, find_reclaimable
from airflow_mcsched.governance.usage import GroupKey, PlacementUsage
from airflow_mcsched.governance.utilisation import ClusterUtilisation, utilisation
from airflow_mcsched.governance.waiting import TeamWaiting, waiting_times
from airflow_mcsched.governance.window import TimeWindow
from airflow_mcsched.service.placement_mapping import reservation_of
from airflow_mcsched.service.tables import NodePoolRow, PlacementRow, ReservationRow
from airflow_mcsched.service.view_loader import load_view
from airflow_mcsched.service.visibility import EVERYTHING, Visibility

_USAGE_COLUMNS = (
    PlacementRow.id,
    PlacementRow.team,
    PlacementRow.project,
    PlacementRow.dag_id,
    PlacementRow.state,
    PlacementRow.queued_at,
    PlacementRow.gpus,
    PlacementRow.cluster,
    PlacementRow.pool,
    PlacementRow.gpu_type,
    PlacementRow.price_per_gpu_hour,
    PlacementRow.admitted_at,
    PlacementRow.started_at,
    PlacementRow.ended_at,
)


@dataclass(frozen=True, slots=True)
class CostQuery:
    """What a cost report or series is asked for: the window, the grouping, and optional filters."""

    window: TimeWindow
    group_by: tuple[GroupKey, ...] = ("team",)
    team: str | None = None
    project: str | None = None


class ReportStore:
    """Report queries within one session (read only), as `seen` may read them: the rows of teams
    hidden from the reader are folded into one `other (private)` group (see `service.visibility`)."""

    def __init__(self, session: Session, seen: Visibility = EVERYTHING) -> None:
        self.session = session
        self.seen = seen

    # -- loading -------------------------------------------------------------------------------
    def usages(self, window: TimeWindow, team: str | None = None, project: str | None = None) -> list[PlacementUsage]:
        """Placements that overlap the window: queued before its end, not ended before its start.
        Filtered by team or project, a hidden team's rows are left out rather than folded."""
        q = select(*_USAGE_COLUMNS).where(
            PlacementRow.queued_at < window.until,
            or_(PlacementRow.ended_at.is_(None), PlacementRow.ended_at >= window.since),
        )
        if team is not None:
            q = q.where(PlacementRow.team == team)
        if project is not None:
            q = q.where(PlacementRow.project == project)
        if team is not None or project is not None:
            q = self.seen.teams(q)
        return [self.seen.fold_usage(PlacementUsage(*row)) for row in self.session.execute(q)]

    def cluster_gpus(self) -> dict[str, int]:
        """GPUs per cluster as its node pools declare them (nodes x GPUs per node)."""
        q = (
            select(NodePoolRow.cluster_name, func.sum(NodePoolRow.gpus_per_node * NodePoolRow.nodes))
            .where(NodePoolRow.gpu_type.is_not(None))
            .group_by(NodePoolRow.cluster_name)
        )
        return {name: int(total or 0) for name, total in self.session.execute(q)}

    def held_reservations(self) -> list[HeldReservation]:
        q = (
            select(ReservationRow, PlacementRow.started_at)
            .join(PlacementRow, PlacementRow.id == ReservationRow.placement_id)
            .where(ReservationRow.active.is_(True))
        )
        return [HeldReservation(reservation_of(res), started is not None) for res, started in self.session.execute(q)]

    # -- reports -------------------------------------------------------------------------------
    def cost(self, query: CostQuery, now: datetime) -> CostReport:
        return cost_report(self.usages(query.window, query.team, query.project), query.window, query.group_by, now)

    def cost_series(self, query: CostQuery, now: datetime) -> CostSeries:
        return daily_series(self.usages(query.window, query.team, query.project), query.window, query.group_by, now)

    def top(self, window: TimeWindow, by: GroupKey, n: int, now: datetime) -> CostReport:
        return top_spenders(self.usages(window), window, by, n, now)

    def utilisation(self, window: TimeWindow, now: datetime) -> list[ClusterUtilisation]:
        return utilisation(self.usages(window), window, self.cluster_gpus(), now)

    def waiting(self, window: TimeWindow, now: datetime, team: str | None = None) -> list[TeamWaiting]:
        return waiting_times(self.usages(window, team), window, now)

    def quota(self, policy: Policy) -> list[QuotaUse]:
        """A hidden team's quota entries are left out and its GPUs held shown as `other (private)`."""
        quotas = [q for q in policy.quotas if self.seen.sees_team(q.team)]
        return quota_use(quotas, [self.seen.fold_reservation(h.reservation) for h in self.held_reservations()])

    def capacity(self, policy: Policy, now: datetime) -> CapacityReport:
        view = load_view(self.session, now)
        return capacity_now(view, [h.reservation for h in self.held_reservations()], now, policy.max_observation_age)

    def forecast(
        self, now: datetime, days: int = 7, weeks: int = 4, group_by: Sequence[GroupKey] = ("team", "gpu_type")
    ) -> list[DemandForecast]:
        """GPU-hours ahead per group from the last `weeks` whole days of history (today excluded)."""
        today = datetime.combine(now.date(), time(), tzinfo=UTC)
        history = TimeWindow(today - timedelta(weeks=weeks), today)
        series = daily_series(self.usages(history), history, tuple(group_by), now, measure="gpu_hours")
        return forecast_demand({s.key: s.values for s in series.series}, history.since.date(), days, weeks)

    def reclaimable(self, policy: Policy, now: datetime) -> list[ReclaimCandidate]:
        view = load_view(self.session, now)
        found = find_reclaimable(self.held_reservations(), view, now, policy.idle_reservation)
        return [c for c in found if self.seen.sees_team(c.team)]
