"""Quota use now: per team and quota entry, the GPUs its active reservations hold against its nominal.

Counted exactly as the engine counts them (`QuotaLedger`): a '*' entry covers every GPU type the
team holds, and `borrowed` is what it uses beyond its nominal share (lent by its cohort). Teams
without a quota entry are listed per GPU type with no nominal, so nobody's use is hidden.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from airflow_mcsched.decision import Reservation, TeamQuota
from airflow_mcsched.decision.quota import QuotaLedger


class QuotaUse(BaseModel):
    model_config = ConfigDict(frozen=True)

    team: str
    gpu_type: str
    """A GPU type, or '*' for the team's quota over all types."""
    used: float
    nominal: float | None
    """None: the team has no quota (unlimited)."""
    borrowed: float
    cohort: str | None = None
    borrowing_limit: float | None = None
    used_share: float | None = None
    """used / nominal; above 1 while borrowing."""


def quota_use(quotas: Iterable[TeamQuota], reservations: Iterable[Reservation]) -> list[QuotaUse]:
    quotas = tuple(quotas)
    ledger = QuotaLedger(quotas)
    unlimited: dict[tuple[str, str], float] = defaultdict(float)
    for r in reservations:
        if ledger.limits(r.team):
            ledger.add(r.team, r.gpu_type, r.gpu_equivalent)
        elif r.gpu_type:
            unlimited[(r.team, r.gpu_type)] += r.gpu_equivalent
    lines = []
    for q in sorted(quotas, key=lambda q: q.team):
        for key, nominal in sorted(q.nominal.items()):
            used = ledger.used(q.team, key)
            lines.append(
                QuotaUse(
                    team=q.team,
                    gpu_type=key,
                    used=used,
                    nominal=nominal,
                    borrowed=max(0.0, used - nominal),
                    cohort=q.cohort,
                    borrowing_limit=q.borrowing_limit,
                    used_share=round(used / nominal, 6) if nominal > 0 else None,
                )
            )
    lines += [
        QuotaUse(team=team, gpu_type=gpu_type, used=used, nominal=None, borrowed=0.0)
        for (team, gpu_type), used in sorted(unlimited.items())
    ]
    return lines
