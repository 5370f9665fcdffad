"""What a replay is judged by: queueing delay, GPU allocation, cost, and what could not be placed."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from airflow_mcsched.replay.simulator import ReplayRun


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """Delays in seconds. Allocation = mean allocated GPUs / fleet GPUs while the trace arrives (first to
    last arrival: the window `--load` compresses; the months-long tail of a few jobs is left out)."""

    policy: str
    jobs: int
    mean_wait: float
    mean_wait_normal: float
    """Mean wait of the jobs of priority class `normal` (the engine admits them before `low` ones)."""
    mean_wait_low: float
    """Mean wait of the interruptible best-effort jobs (priority class `low`)."""
    p50_wait: float
    p95_wait: float
    max_wait: float
    max_wait_multi_gpu: float
    """Longest wait of a pod asking 2 or more GPUs: are large jobs starved?"""
    gpu_allocation: float
    total_cost: float
    """GPU-hours at the pool's price (staging time included) plus egress."""
    egress_cost: float
    data_moved_gib: float
    unplaceable: int
    preemptions: int
    makespan_hours: float

    def as_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def summarise(run: ReplayRun) -> ReplaySummary:
    waits = sorted(r.wait for r in run.runs)
    span = max(run.last_end - run.first_arrival, 1e-9)
    arriving = max(run.last_arrival - run.first_arrival, 1e-9)
    return ReplaySummary(
        policy=run.policy,
        jobs=len(run.runs),
        mean_wait=statistics.fmean(waits) if waits else 0.0,
        mean_wait_normal=statistics.fmean([r.wait for r in run.runs if not r.job.interruptible] or [0.0]),
        mean_wait_low=statistics.fmean([r.wait for r in run.runs if r.job.interruptible] or [0.0]),
        p50_wait=_percentile(waits, 0.5),
        p95_wait=_percentile(waits, 0.95),
        max_wait=waits[-1] if waits else 0.0,
        max_wait_multi_gpu=max((r.wait for r in run.runs if r.job.gpus >= 2), default=0.0),
        gpu_allocation=run.gpu_seconds / (arriving * run.total_gpus) if run.total_gpus else 0.0,
        total_cost=sum(r.cost for r in run.runs),
        egress_cost=sum(r.staging.egress_dollars for r in run.runs),
        data_moved_gib=sum(r.staging.gib for r in run.runs),
        unplaceable=len(run.unplaceable),
        preemptions=run.preemptions,
        makespan_hours=span / 3600,
    )


INTEGER_FIELDS = ("jobs", "unplaceable", "preemptions")


def _combine(summaries: Sequence[ReplaySummary], how) -> ReplaySummary:
    first = summaries[0]
    numbers = {k: how([getattr(s, k) for s in summaries]) for k in first.as_dict() if k != "policy"}
    for k in INTEGER_FIELDS:
        numbers[k] = round(numbers[k])
    return ReplaySummary(policy=first.policy, **numbers)


def median(summaries: Sequence[ReplaySummary]) -> ReplaySummary:
    """Per figure, the median over seeds (each figure on its own: not one seed's whole row)."""
    return _combine(summaries, statistics.median)


@dataclass(frozen=True, slots=True)
class SeededSummary:
    """A policy's median over seeds, with the spread (min, max) of the figures a reader compares."""

    median: ReplaySummary
    seeds: int
    spread: dict[str, tuple[float, float]]

    def as_dict(self) -> dict[str, object]:
        return {**self.median.as_dict(), "seeds": self.seeds, "spread": {k: list(v) for k, v in self.spread.items()}}


SPREAD_FIELDS = ("mean_wait", "p95_wait", "max_wait", "max_wait_multi_gpu", "total_cost")


def over_seeds(summaries: Sequence[ReplaySummary]) -> SeededSummary:
    spread = {k: (min(getattr(s, k) for s in summaries), max(getattr(s, k) for s in summaries)) for k in SPREAD_FIELDS}
    return SeededSummary(median(summaries), len(summaries), spread)
