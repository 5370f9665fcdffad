"""One placement's recorded lineage, as the reports see it, and how much of it falls in a window.

GPU-hours are counted from the pod's start to the placement's end (a placement still running
counts up to `now`), the same rule by which the store costs a placement when it ends; time
between admission and start is *reserved*, not used.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from airflow_mcsched.governance.window import ReportParamError, TimeWindow

GroupKey = Literal["team", "project", "dag", "cluster", "pool", "gpu_type"]
GROUP_KEYS: tuple[GroupKey, ...] = get_args(GroupKey)
NONE_VALUE = ""
"""What a report shows for a placement without a project (or never placed on a cluster)."""


@dataclass(frozen=True, slots=True)
class PlacementUsage:
    """The lineage columns a report needs from one placement attempt."""

    placement_id: str
    team: str
    project: str | None
    dag_id: str
    state: str
    queued_at: datetime
    gpus: float
    cluster: str | None = None
    pool: str | None = None
    gpu_type: str | None = None
    price_per_gpu_hour: float | None = None
    admitted_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None

    def _end(self, now: datetime) -> datetime:
        return self.ended_at if self.ended_at is not None else now

    def gpu_hours_in(self, window: TimeWindow, now: datetime) -> float:
        """GPUs x the hours its pod ran inside the window (clipped at both ends; running = up to now)."""
        if self.started_at is None:
            return 0.0
        return self.gpus * window.overlap_hours(self.started_at, self._end(now))

    def cost_in(self, window: TimeWindow, now: datetime) -> float:
        return self.gpu_hours_in(window, now) * (self.price_per_gpu_hour or 0.0)

    def ran_in(self, window: TimeWindow, now: datetime) -> bool:
        return self.gpu_hours_in(window, now) > 0.0

    def reserved_gpu_hours_in(self, window: TimeWindow, now: datetime) -> float:
        """GPUs x hours held between admission and the pod's start (or the end, if it never started)."""
        if self.admitted_at is None:
            return 0.0
        end = self.started_at if self.started_at is not None else self._end(now)
        return self.gpus * window.overlap_hours(self.admitted_at, end)

    def value_of(self, key: GroupKey) -> str:
        value = self.dag_id if key == "dag" else getattr(self, key)
        return NONE_VALUE if value is None else str(value)

    def group(self, keys: tuple[GroupKey, ...]) -> tuple[str, ...]:
        return tuple(self.value_of(k) for k in keys)


def parse_group_by(
    value: str | list[str] | tuple[str, ...] | None, default: tuple[GroupKey, ...] = ("team",)
) -> tuple[GroupKey, ...]:
    """`team,project` (or a list) -> ("team", "project"); unknown or repeated keys name the fix."""
    if value is None or value == "" or value == []:
        return default
    parts = value.split(",") if isinstance(value, str) else [p for v in value for p in v.split(",")]
    keys = [p.strip() for p in parts if p.strip()]
    unknown = [k for k in keys if k not in GROUP_KEYS]
    if unknown:
        raise ReportParamError("group_by", f"unknown key(s) {unknown}; use one or more of {', '.join(GROUP_KEYS)}")
    if len(set(keys)) != len(keys):
        raise ReportParamError("group_by", f"{keys} names a key twice; name each once")
    return tuple(keys)  # type: ignore[return-value]  # checked against GROUP_KEYS above
