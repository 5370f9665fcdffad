"""Team GPU quotas per GPU type, with borrowing of idle quota inside a cohort (as Kueue's cohorts do).

A team may use its nominal GPUs of a type, plus what others in its cohort leave idle (up to its
borrowing limit). What it borrows can be taken back: when a lender asks within its nominal quota and
the cohort is full, interruptible work of borrowers is preempted (see `preemption`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from airflow_mcsched.decision.policy import ANY_GPU_TYPE, TeamQuota
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.view.frozen_init import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class QuotaVerdict:
    """Whether `amount` GPUs fit the team's quota now, and if not, in words why."""

    ok: bool
    message: str = ""
    borrowing: bool = False


_OK = QuotaVerdict(True)


def use_of(work: Iterable[Reservation]) -> dict[str, dict[str, float]]:
    """GPUs held per team and GPU type, summed in the work's order: the sums a ledger would reach by
    `QuotaLedger.add` of each in turn (floats: the order is part of the value), made in one pass."""
    used: dict[str, dict[str, float]] = {}
    for r in work:
        if r.gpu_type and r.gpu_equivalent:  # what `QuotaLedger.add` counts
            team = used.get(r.team)
            if team is None:
                team = used[r.team] = {}
            team[r.gpu_type] = team.get(r.gpu_type, 0.0) + r.gpu_equivalent
    return used


class QuotaLedger:
    """Use per team and GPU type during one admission cycle; grants add to it, evictions take away."""

    __slots__ = ("_checked", "_members", "_quotas", "_used")

    def __init__(self, quotas: Iterable[TeamQuota], used: Mapping[str, Mapping[str, float]] | None = None) -> None:
        """`used`: GPUs already in use per team and GPU type (copied: the ledger changes its own)."""
        self._quotas = {q.team: q for q in quotas}
        members: dict[str, list[str]] = defaultdict(list)
        for q in self._quotas.values():
            if q.cohort:
                members[q.cohort].append(q.team)
        self._members = {c: tuple(sorted(ts)) for c, ts in members.items()}
        self._used: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        if used:
            self._used.update((team, defaultdict(float, use)) for team, use in used.items())
        self._checked: dict[tuple[str, str, float], QuotaVerdict] = {}
        """`check`'s verdicts since use last changed: a request's scan asks it for every pool."""

    # -- bookkeeping -------------------------------------------------------------------------
    def add(self, team: str, gpu_type: str | None, gpus: float) -> None:
        if gpu_type and gpus:
            self._used[team][gpu_type] += gpus
            self._checked.clear()

    def remove(self, team: str, gpu_type: str | None, gpus: float) -> None:
        if gpu_type and gpus:
            left = self._used[team][gpu_type] - gpus
            self._used[team][gpu_type] = left if left > 1e-9 else 0.0
            self._checked.clear()

    # -- reading -----------------------------------------------------------------------------
    def check_without(self, team: str, gpu_type: str | None, gpus: float, gone: Iterable[Reservation]) -> QuotaVerdict:
        """`check` as it would answer once the work `gone` had stopped: a victim search's trial. Their
        use is taken away for the question and given back after."""
        gone = list(gone)
        for r in gone:
            self.remove(r.team, r.gpu_type, r.gpu_equivalent)
        try:
            return self.check(team, gpu_type, gpus)
        finally:
            for r in gone:
                self.add(r.team, r.gpu_type, r.gpu_equivalent)

    def limits(self, team: str) -> bool:
        """False for a team with no quota entry: its GPU use is not limited."""
        return team in self._quotas

    def _key(self, quota: TeamQuota, gpu_type: str) -> str:
        if gpu_type in quota.nominal:
            return gpu_type
        return ANY_GPU_TYPE if ANY_GPU_TYPE in quota.nominal else gpu_type

    def used(self, team: str, key: str) -> float:
        use = self._used.get(team)
        if not use:
            return 0.0
        return sum(use.values()) if key == ANY_GPU_TYPE else use.get(key, 0.0)

    def nominal(self, team: str, key: str) -> float:
        quota = self._quotas.get(team)
        return 0.0 if quota is None else quota.nominal.get(key, 0.0)

    def total_used(self, team: str) -> float:
        return self.used(team, ANY_GPU_TYPE)

    def share(self, team: str, default: float) -> float:
        """The team's fair share for queue order: its nominal GPUs, else the policy's weight."""
        quota = self._quotas.get(team)
        total = sum(quota.nominal.values()) if quota else 0.0
        return total if total > 0 else default

    def cohort_of(self, team: str) -> tuple[str, ...]:
        quota = self._quotas.get(team)
        if quota is None:
            return ()
        return self._members.get(quota.cohort, (team,)) if quota.cohort else (team,)

    def borrowed(self, team: str, gpu_type: str) -> float:
        quota = self._quotas.get(team)
        if quota is None:
            return 0.0
        key = self._key(quota, gpu_type)
        return max(0.0, self.used(team, key) - quota.nominal.get(key, 0.0))

    def within_nominal(self, team: str, gpu_type: str, gpus: float) -> bool:
        quota = self._quotas.get(team)
        if quota is None:
            return True
        key = self._key(quota, gpu_type)
        return self.used(team, key) + gpus <= quota.nominal.get(key, 0.0) + 1e-9

    def check(self, team: str, gpu_type: str | None, gpus: float) -> QuotaVerdict:
        """May `team` take `gpus` more GPUs of `gpu_type`: within nominal, or borrowed from idle cohort quota."""
        quota = self._quotas.get(team)
        if quota is None or not gpu_type or not gpus:
            return _OK
        asked = (team, gpu_type, gpus)
        verdict = self._checked.get(asked)
        if verdict is None:
            verdict = self._checked[asked] = self._verdict(quota, team, gpu_type, gpus)
        return verdict

    def _verdict(self, quota: TeamQuota, team: str, gpu_type: str, gpus: float) -> QuotaVerdict:
        key = self._key(quota, gpu_type)
        what = "GPUs" if key == ANY_GPU_TYPE else f"{key} GPUs"
        used = self.used(team, key)
        nominal = quota.nominal.get(key, 0.0)
        within_nominal = used + gpus <= nominal + 1e-9
        if not quota.cohort:
            if within_nominal:
                return _OK
            return QuotaVerdict(
                False, f"team {team} uses {used:g} of its {nominal:g} nominal {what}; {gpus:g} more asked"
            )
        limit = math.inf if quota.borrowing_limit is None else quota.borrowing_limit
        if used + gpus - nominal > limit + 1e-9:
            return QuotaVerdict(
                False,
                f"team {team} would borrow {used + gpus - nominal:g} {what} beyond its nominal {nominal:g}; "
                f"its borrowing limit is {limit:g}",
            )
        members = self._members[quota.cohort]
        cohort_nominal = sum(self.nominal(t, key) for t in members)
        cohort_used = sum(self.used(t, key) for t in members)
        if cohort_used + gpus > cohort_nominal + 1e-9:
            if within_nominal:  # its own quota is lent out: the lender may take it back (see preemption)
                return QuotaVerdict(
                    False,
                    f"team {team} asks {gpus:g} of its {nominal:g} nominal {what}, but cohort {quota.cohort} "
                    f"lent them to other teams ({cohort_used:g} of {cohort_nominal:g} in use)",
                )
            idle = max(0.0, cohort_nominal - cohort_used)
            return QuotaVerdict(
                False,
                f"team {team} uses {used:g} of its {nominal:g} nominal {what} and cohort {quota.cohort} has "
                f"{idle:g} idle in all; {gpus:g} asked",
            )
        if within_nominal:
            return _OK
        return QuotaVerdict(True, borrowing=True)
