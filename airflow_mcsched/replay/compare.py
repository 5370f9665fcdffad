"""Run several policies over one trace and fleet, repeated over seeds; medians and spread per policy.

Seed s jitters the arrivals (seed 0 keeps them as the trace has them) and seeds the policies that
draw at random, so every policy sees the same arrivals in the same run.
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow_mcsched.replay.fleet import ReplayFleet, pooled
from airflow_mcsched.replay.metrics import SeededSummary, over_seeds, summarise
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


def compare(
    fleet: ReplayFleet, jobs: Sequence[TraceJob], policies: Sequence[str], seeds: int = 1
) -> list[SeededSummary]:
    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    arrivals = [jittered(jobs, s) for s in range(seeds)]
    out = []
    for name in policies:
        on = pooled(fleet) if name == "pooled" else fleet
        out.append(over_seeds([summarise(replay(on, arrivals[s], PLACERS[name](seed=s))) for s in range(seeds)]))
    return out
