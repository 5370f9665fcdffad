"""Demand forecast (seasonal-naive weekly mean) on synthetic histories with a known answer."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from airflow_mcsched.governance.forecast import METHOD, forecast_demand
from airflow_mcsched.governance.window import ReportParamError

MONDAY = date(2026, 1, 5)


def weeks_of(*weeks: list[float]) -> list[float]:
    return [v for week in weeks for v in week]


def test_each_coming_day_gets_the_mean_of_its_weekday_over_the_last_weeks():
    """Working days use 10 GPU-hours on average (Mondays 4, 8, 12, 16), weekends 2."""
    history = weeks_of(*([monday, 10, 10, 10, 10, 2, 2] for monday in (4, 8, 12, 16)))
    (line,) = forecast_demand({"team-a/A100": history}, MONDAY, horizon_days=7, weeks=4)
    assert line.days[0] == MONDAY + timedelta(weeks=4) and line.days[0].weekday() == 0
    assert line.gpu_hours == (10.0, 10.0, 10.0, 10.0, 10.0, 2.0, 2.0)
    assert (line.total_gpu_hours, line.history_days, line.method) == (54.0, 28, METHOD)


def test_only_the_most_recent_weeks_count():
    old, recent = [100.0] * 7, [1, 2, 3, 4, 5, 6, 7]
    (line,) = forecast_demand({"k": weeks_of(old, old, recent, recent)}, MONDAY, horizon_days=7, weeks=2)
    assert line.gpu_hours == (1, 2, 3, 4, 5, 6, 7)


def test_a_partial_week_at_the_start_is_left_out_and_the_weekdays_stay_aligned():
    history = [50.0, 50.0, *weeks_of([7, 1, 1, 1, 1, 1, 1])]  # starts on a Saturday
    (line,) = forecast_demand({"k": history}, MONDAY - timedelta(days=2), horizon_days=8, weeks=4)
    assert line.days[0].weekday() == 0 and line.gpu_hours == (7, 1, 1, 1, 1, 1, 1, 7)


def test_less_than_a_week_of_history_forecasts_its_mean_day():
    (line,) = forecast_demand({"k": [2.0, 4.0, 6.0]}, MONDAY, horizon_days=3)
    assert line.gpu_hours == (4.0, 4.0, 4.0)


def test_a_group_with_no_use_gets_no_forecast():
    assert forecast_demand({"idle": [0.0] * 14}, MONDAY) == []


@pytest.mark.parametrize(("kw", "field"), [({"horizon_days": 0}, "days"), ({"weeks": 0}, "weeks")])
def test_bad_horizon_or_history_names_the_field(kw, field):
    with pytest.raises(ReportParamError) as err:
        forecast_demand({"k": [1.0]}, MONDAY, **kw)
    assert err.value.field == field
