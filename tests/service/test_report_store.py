"""Reports from the lineage table on real metadata DBs (SQLite and PostgreSQL), hand-computed figures."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.governance.window import TimeWindow
from airflow_mcsched.service.report_store import CostQuery, ReportStore
from airflow_mcsched.service.tables import NodePoolRow
from tests.governance.lineage_cases import CASES, DAY, NOW, at, placement_rows


@pytest.fixture
def lineage(metadata_session_factory):
    with metadata_session_factory() as s:
        s.add_all(placement_rows())
    return metadata_session_factory


def test_cost_per_team_and_project_from_the_db(lineage):
    with lineage() as s:
        report = ReportStore(s).cost(CostQuery(TimeWindow(DAY, NOW), ("team", "project")), NOW)
    assert [(r["team"], r["project"], r["gpu_hours"], r["cost"], r["placements"]) for r in report.rows()] == [
        ("team-a", "proj-y", 2.0, 8.0, 1),
        ("team-b", "proj-x", 4.0, 8.0, 1),
        ("team-a", "proj-x", 3.0, 6.0, 1),
        ("team-c", "", 1.0, 1.0, 1),
    ]
    assert (report.gpu_hours, report.cost) == (10.0, 23.0)


def test_only_placements_overlapping_the_window_are_loaded_and_they_are_clipped(lineage):
    window = TimeWindow(at(10.5), at(12.25))
    with lineage() as s:
        store = ReportStore(s)
        loaded = {u.placement_id for u in store.usages(window)}
        report = store.cost(CostQuery(window, ("cluster",), team="team-a"), NOW)
    assert loaded == {"p1", "p2", "p3", "p4"}  # p5 was queued after the window
    assert [(line.group, line.gpu_hours, line.cost) for line in report.lines] == [
        (("c1",), 2.0, 4.0),  # equal costs: by group
        (("c2",), 1.0, 4.0),
    ]


def test_a_window_before_any_work_is_empty(lineage):
    with lineage() as s:
        report = ReportStore(s).cost(CostQuery(TimeWindow(DAY - timedelta(days=2), DAY)), NOW)
    assert (report.lines, report.cost) == ((), 0.0)


def test_the_recorded_cost_of_a_finished_placement_equals_its_reported_cost(lineage):
    with lineage() as s:
        report = ReportStore(s).cost(CostQuery(TimeWindow(DAY, NOW), ("dag",)), NOW)
    recorded = sum(r.cost for r in placement_rows() if r.cost is not None and r.dag_id == "d1")
    assert dict((line.group[0], line.cost) for line in report.lines)["d1"] == pytest.approx(recorded) == 14.0


def test_utilisation_uses_the_gpus_the_node_pools_declare(lineage):
    with lineage() as s:
        from airflow_mcsched.service.tables import ClusterRow

        for name in ("c1", "c2"):
            s.add(ClusterRow(name=name, kind="on-prem", region="r", zone="z", failure_domain="r/z",
                             connection_id="c", namespace="n", state="active", spec={}))  # fmt: skip
        s.flush()
        s.add_all([NodePoolRow(cluster_name="c1", name="a100", gpu_type=CASES[0]["gpu_type"], gpus_per_node=8,
                               nodes=1, price_per_gpu_hour=2.0),
                   NodePoolRow(cluster_name="c2", name="cpu", gpu_type=None, gpus_per_node=0, nodes=4,
                               price_per_gpu_hour=0.0)])  # fmt: skip
    with lineage() as s:
        store = ReportStore(s)
        assert store.cluster_gpus() == {"c1": 8}
        lines = {u.cluster: u for u in store.utilisation(TimeWindow(at(8), at(14)), NOW)}
    assert (lines["c1"].capacity_gpu_hours, lines["c1"].used_gpu_hours, lines["c1"].reserved_gpu_hours) == (
        44.0, 7.0, 1.0,
    )  # fmt: skip


def test_waiting_per_team_from_the_db(lineage):
    with lineage() as s:
        lines = {w.team: w for w in ReportStore(s).waiting(TimeWindow(DAY, NOW), NOW)}
    assert (lines["team-a"].admitted, lines["team-a"].max_seconds) == (2, 1800.0)  # p1 queued 09:00, admitted 09:30
    assert (lines["team-b"].pending, lines["team-b"].longest_pending_seconds) == (1, 2.5 * 3600)


def test_forecast_from_two_weeks_of_daily_use(metadata_session_factory):
    """team-a ran 1 GPU for 2 h every day of the last 14 days: 2 GPU-hours forecast for each coming day."""
    today = DAY + timedelta(days=14)
    history = [
        dict(placement_id=f"h{i}", team="team-a", project=None, dag_id="daily", state="released",
             queued_at=DAY + timedelta(days=i, hours=1), gpus=1.0, cluster="c1", pool="a100",
             gpu_type="A100", price_per_gpu_hour=2.0, admitted_at=DAY + timedelta(days=i, hours=1),
             started_at=DAY + timedelta(days=i, hours=1), ended_at=DAY + timedelta(days=i, hours=3))
        for i in range(14)
    ]  # fmt: skip
    with metadata_session_factory() as s:
        s.add_all(placement_rows(history))
    with metadata_session_factory() as s:
        (line,) = ReportStore(s).forecast(today + timedelta(hours=9), days=3, weeks=2)
    assert line.key == "team-a/A100" and line.gpu_hours == (2.0, 2.0, 2.0) and line.history_days == 14
