"""Run several policies over one trace and fleet, repeated over seeds; medians and spread per policy.

Seed s jitters the arrivals (seed 0 keeps them as the trace has them) and seeds the policies that
draw at random, so every policy sees the same arrivals in the same run.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from airflow_mcsched.replay.fleet import ReplayFleet, pooled
from airflow_mcsched.replay.metrics import ReplaySummary, SeededSummary, over_seeds, summarise
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.replay.policies import PLACERS
from airflow_mcsched.replay.simulator import replay
from airflow_mcsched.replay.variants import jittered


def policy_names(spec: str) -> list[str]:
    """'all', one name, or a comma-separated list; unknown names are an error naming the choices."""
    names = list(PLACERS) if spec == "all" else [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in PLACERS]
    if unknown or not names:
        raise ValueError(f"unknown policy {unknown or spec!r}; choose from {', '.join(PLACERS)} or 'all'")
    return names


def _one(fleet: ReplayFleet, jobs: Sequence[TraceJob], name: str, seed: int) -> ReplaySummary:
    """One policy over one seed's arrivals (a process of its own when runs are spread over several)."""
    on = pooled(fleet) if name == "pooled" else fleet
    return summarise(replay(on, jittered(jobs, seed), PLACERS[name](seed=seed)))


def compare(
    fleet: ReplayFleet, jobs: Sequence[TraceJob], policies: Sequence[str], seeds: int = 1, workers: int = 1
) -> list[SeededSummary]:
    """Every policy over every seed; with `workers` > 1 the runs are spread over that many processes
    (the engine's runs first: they take longest). The figures do not depend on `workers`."""
    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    if workers < 1:
        raise ValueError(f"--jobs must be >= 1, got {workers}")
    runs = [(name, s) for name in policies for s in range(seeds)]
    if workers == 1:
        done = [_one(fleet, jobs, name, s) for name, s in runs]
    else:
        slow_first = sorted(range(len(runs)), key=lambda i: runs[i][0] != "mcsched")
        with ProcessPoolExecutor(workers) as pool:
            futures = {i: pool.submit(_one, fleet, jobs, *runs[i]) for i in slow_first}
            done = [futures[i].result() for i in range(len(runs))]
    return [over_seeds(done[k * seeds : (k + 1) * seeds]) for k in range(len(policies))]
