"""Demand forecast: GPU-hours per team and GPU type for the next days, from the recorded history.

Method: **seasonal-naive weekly mean**. The forecast for a coming day is the mean of the
GPU-hours used on the same weekday in the last `weeks` complete weeks of history (a weekday with
no use counts as 0). Work on GPU fleets follows the working week, which this keeps; it makes no
claim about trends or growth, and it needs at least one full week of history (with less, every
day is forecast as the mean day of the history there is). A team that used nothing in the
history gets no forecast line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta

from pydantic import BaseModel, ConfigDict

from airflow_mcsched.governance.cost import DIGITS
from airflow_mcsched.governance.window import ReportParamError

METHOD = "seasonal-naive weekly mean"


class DemandForecast(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    """The group, e.g. `team-a/NVIDIA-A100-SXM4-80GB`."""
    days: tuple[date, ...]
    gpu_hours: tuple[float, ...]
    total_gpu_hours: float
    history_days: int
    method: str = METHOD


def forecast_key(history: Sequence[float], first_day: date, horizon_days: int, weeks: int) -> list[float]:
    """The forecast for the `horizon_days` days after the history, which starts on `first_day`."""
    n = len(history)
    if n == 0:
        return [0.0] * horizon_days
    if n < 7:
        mean = sum(history) / n
        return [mean] * horizon_days
    usable = min(weeks * 7, n - n % 7)  # whole weeks only, the most recent ones
    recent = history[n - usable :]
    recent_first = first_day + timedelta(days=n - usable)
    by_weekday: dict[int, list[float]] = {}
    for i, value in enumerate(recent):
        by_weekday.setdefault((recent_first + timedelta(days=i)).weekday(), []).append(value)
    start = first_day + timedelta(days=n)
    return [
        sum(by_weekday[d.weekday()]) / len(by_weekday[d.weekday()])
        for d in (start + timedelta(days=i) for i in range(horizon_days))
    ]


def forecast_demand(
    daily_gpu_hours: Mapping[str, Sequence[float]], first_day: date, horizon_days: int = 7, weeks: int = 4
) -> list[DemandForecast]:
    """One forecast per key of `daily_gpu_hours` (each a value per day, from `first_day`, no gaps)."""
    if not 1 <= horizon_days <= 366:
        raise ReportParamError("days", f"{horizon_days} is out of range; forecast 1 to 366 days ahead")
    if weeks < 1:
        raise ReportParamError("weeks", f"{weeks} weeks of history is too few; use 1 or more")
    out = []
    for key, history in sorted(daily_gpu_hours.items()):
        if not any(history):
            continue
        values = [round(v, DIGITS) for v in forecast_key(history, first_day, horizon_days, weeks)]
        start = first_day + timedelta(days=len(history))
        out.append(
            DemandForecast(
                key=key,
                days=tuple(start + timedelta(days=i) for i in range(horizon_days)),
                gpu_hours=tuple(values),
                total_gpu_hours=round(sum(values), DIGITS),
                history_days=len(history),
            )
        )
    return out
