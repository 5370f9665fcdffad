"""Time spent queued per team: how long placements admitted in the window waited for admission.

Waiting = admitted_at - queued_at. The 95th percentile is the nearest-rank one (the smallest
wait at or above 95 % of the waits), so it is always a wait that happened. Placements still
pending at the window's end are counted apart, with the longest wait so far.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from airflow_mcsched.governance.usage import PlacementUsage
from airflow_mcsched.governance.window import TimeWindow

PENDING = "pending"


class TeamWaiting(BaseModel):
    model_config = ConfigDict(frozen=True)

    team: str
    admitted: int
    mean_seconds: float | None
    p95_seconds: float | None
    max_seconds: float | None
    pending: int
    longest_pending_seconds: float | None


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The q-quantile (0 < q <= 1) by nearest rank of non-empty `values`."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def waiting_times(usages: Iterable[PlacementUsage], window: TimeWindow, now: datetime) -> list[TeamWaiting]:
    end = min(window.until, now)
    waits: dict[str, list[float]] = defaultdict(list)
    pending: dict[str, list[float]] = defaultdict(list)
    for u in usages:
        if u.admitted_at is not None and window.since <= u.admitted_at < window.until:
            waits[u.team].append((u.admitted_at - u.queued_at).total_seconds())
        elif u.state == PENDING and u.queued_at < end:
            pending[u.team].append((end - u.queued_at).total_seconds())
    lines = []
    for team in sorted(set(waits) | set(pending)):
        w, p = waits.get(team, []), pending.get(team, [])
        lines.append(
            TeamWaiting(
                team=team,
                admitted=len(w),
                mean_seconds=round(sum(w) / len(w), 3) if w else None,
                p95_seconds=nearest_rank(w, 0.95) if w else None,
                max_seconds=max(w) if w else None,
                pending=len(p),
                longest_pending_seconds=max(p) if p else None,
            )
        )
    return lines
