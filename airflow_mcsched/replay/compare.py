"""Run several policies over one trace and fleet, seeds averaged where a policy draws at random."""

from __future__ import annotations

from collections.abc import Sequence

from airflow_mcsched.replay.fleet import ReplayFleet, pooled
from airflow_mcsched.replay.metrics import ReplaySummary, average, summarise
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.replay.policies import PLACERS, RandomCluster
from airflow_mcsched.replay.simulator import replay

RANDOMISED = frozenset({RandomCluster.name})


def policy_names(spec: str) -> list[str]:
    """'all', one name, or a comma-separated list; unknown names are an error naming the choices."""
    names = list(PLACERS) if spec == "all" else [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in PLACERS]
    if unknown or not names:
        raise ValueError(f"unknown policy {unknown or spec!r}; choose from {', '.join(PLACERS)} or 'all'")
    return names


def compare(
    fleet: ReplayFleet, jobs: Sequence[TraceJob], policies: Sequence[str], seeds: int = 1
) -> list[ReplaySummary]:
    out = []
    for name in policies:
        runs = range(seeds if name in RANDOMISED else 1)
        on = pooled(fleet) if name == "pooled" else fleet
        out.append(average([summarise(replay(on, jobs, PLACERS[name](seed=s))) for s in runs]))
    return out
