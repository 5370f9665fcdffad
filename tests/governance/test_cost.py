"""Cost and GPU-hours per group against the hand-computed lineage in `lineage_cases`."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from airflow_mcsched.governance.cost import cost_report, daily_series, top_spenders
from airflow_mcsched.governance.report_format import cost_csv, cost_document, parse_cost_csv
from airflow_mcsched.governance.usage import PlacementUsage, parse_group_by
from airflow_mcsched.governance.window import ReportParamError, TimeWindow
from tests.governance.lineage_cases import A100, CASES, DAY, FINISHED, H100, NOW, at, usages

WHOLE_DAY = TimeWindow(DAY, DAY + timedelta(days=1))


def figures(report) -> dict[tuple[str, ...], tuple[float, float, int]]:
    return {line.group: (line.gpu_hours, line.cost, line.placements) for line in report.lines}


@pytest.mark.parametrize(
    ("group_by", "expected"),
    [
        (("team",), {("team-a",): (5.0, 14.0, 2), ("team-b",): (4.0, 8.0, 1)}),
        (("team", "project"), {("team-a", "proj-x"): (3.0, 6.0, 1), ("team-a", "proj-y"): (2.0, 8.0, 1),
                               ("team-b", "proj-x"): (4.0, 8.0, 1)}),
        (("dag",), {("d1",): (7.0, 14.0, 2), ("d2",): (2.0, 8.0, 1)}),
        (("cluster",), {("c1",): (7.0, 14.0, 2), ("c2",): (2.0, 8.0, 1)}),
        (("gpu_type",), {(A100,): (7.0, 14.0, 2), (H100,): (2.0, 8.0, 1)}),
        (("cluster", "gpu_type"), {("c1", A100): (7.0, 14.0, 2), ("c2", H100): (2.0, 8.0, 1)}),
    ],
)  # fmt: skip
def test_finished_placements_cost_gpus_times_hours_times_price(group_by, expected):
    report = cost_report(usages(FINISHED), WHOLE_DAY, group_by, NOW)
    assert figures(report) == expected
    assert (report.gpu_hours, report.cost) == (9.0, 22.0)


def test_lines_come_largest_cost_first():
    report = cost_report(usages(FINISHED), WHOLE_DAY, ("team", "project"), NOW)
    assert [line.cost for line in report.lines] == [8.0, 8.0, 6.0]


def test_a_placement_overlapping_the_window_counts_only_its_part_inside():
    window = TimeWindow(at(10.5), at(12.25))  # p1: 1 h of 2 GPUs; p2: 0.25 h of 4; p3: 1.75 h of 1
    report = cost_report(usages(FINISHED), window, ("team",), NOW)
    assert figures(report) == {("team-a",): (3.0, 8.0, 2), ("team-b",): (1.75, 3.5, 1)}


def test_adjacent_windows_add_up_to_the_window_spanning_both():
    first, second = TimeWindow(DAY, at(11)), TimeWindow(at(11), DAY + timedelta(days=1))
    total = sum(cost_report(usages(), w, ("team",), NOW).cost for w in (first, second))
    assert total == pytest.approx(cost_report(usages(), WHOLE_DAY, ("team",), NOW).cost)


def test_a_running_placement_counts_up_to_now_at_its_price():
    report = cost_report(usages(), WHOLE_DAY, ("team",), NOW)  # p5: 2 GPUs x 0.5 h x $1.00
    assert figures(report)[("team-c",)] == (1.0, 1.0, 1)
    until_13_15 = cost_report(usages(), TimeWindow(DAY, at(13.25)), ("team",), NOW)
    assert figures(until_13_15)[("team-c",)] == (0.5, 0.5, 1)


def test_a_pending_placement_costs_nothing_and_a_missing_project_shows_empty():
    report = cost_report(usages(), WHOLE_DAY, ("project",), NOW)
    assert ("",) in figures(report) and all(line.placements for line in report.lines)


def test_top_spenders_are_the_n_costliest():
    report = top_spenders(usages(), WHOLE_DAY, "project", 2, NOW)
    assert [(line.group, line.cost) for line in report.lines] == [(("proj-x",), 14.0), (("proj-y",), 8.0)]
    with pytest.raises(ReportParamError, match=r"^n: "):
        top_spenders(usages(), WHOLE_DAY, "team", 0, NOW)


def test_the_json_document_has_flat_rows_and_a_total():
    doc = cost_document(cost_report(usages(FINISHED), WHOLE_DAY, ("team", "project"), NOW))
    assert doc["group_by"] == ["team", "project"]
    assert doc["rows"][-1] == {"team": "team-a", "project": "proj-x", "gpu_hours": 3.0, "cost": 6.0, "placements": 1}
    assert doc["total"] == {"gpu_hours": 9.0, "cost": 22.0, "placements": 3}


def test_csv_export_round_trips_to_the_json_rows():
    uneven = [PlacementUsage(**{**CASES[0], "gpus": 3.0, "price_per_gpu_hour": 1.37}), *usages()[1:]]
    report = cost_report(uneven, TimeWindow(DAY, at(10.7)), ("team", "project", "cluster"), NOW)
    text = cost_csv(report)
    assert text.splitlines()[0] == "team,project,cluster,gpu_hours,cost,placements"
    assert parse_cost_csv(text) == cost_document(report)["rows"]


def test_group_by_names_the_field_and_the_keys_it_takes():
    assert parse_group_by("team, project") == ("team", "project")
    with pytest.raises(ReportParamError, match=r"^group_by: unknown key\(s\) \['owner'\]; use one or more of team"):
        parse_group_by("team,owner")
    with pytest.raises(ReportParamError, match="names a key twice"):
        parse_group_by("team,team")


def test_daily_series_splits_a_run_over_midnight_and_adds_up_to_the_report():
    overnight = PlacementUsage(
        placement_id="n", team="team-a", project=None, dag_id="d", state="released", queued_at=at(22),
        gpus=1.0, cluster="c1", gpu_type=A100, price_per_gpu_hour=2.0, started_at=at(23), ended_at=at(25),
    )  # fmt: skip
    window = TimeWindow(DAY, DAY + timedelta(days=2))
    series = daily_series([*usages(FINISHED), overnight], window, ("team",), NOW)
    assert series.buckets == (date(2026, 1, 5), date(2026, 1, 6))
    assert {s.key: s.values for s in series.series} == {"team-a": (16.0, 2.0), "team-b": (8.0, 0.0)}
    hours = daily_series([overnight], window, ("team", "cluster"), NOW, measure="gpu_hours")
    assert [(s.key, s.values) for s in hours.series] == [("team-a/c1", (1.0, 1.0))]
