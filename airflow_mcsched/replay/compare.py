"""Run several policies over one trace and fleet, repeated over seeds; medians and spread per policy.

Seed s jitters the arrivals (seed 0 keeps them as the trace has them) and seeds the policies that
draw at random, so every policy sees the same arrivals in the same run.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

from airflow_mcsched.replay.fleet import ReplayFleet, pooled
from airflow_mcsched.replay.metrics import ReplaySummary, SeededSummary, over_seeds, summarise
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.replay.policies import PLACERS
from airflow_mcsched.replay.run_store import ENGINE, RunStore
from airflow_mcsched.replay.simulator import replay
from airflow_mcsched.replay.variants import jittered


def policy_names(spec: str) -> list[str]:
    """'all', one name, or a comma-separated list; unknown names are an error naming the choices."""
    names = list(PLACERS) if spec == "all" else [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in PLACERS]
    if unknown or not names:
        raise ValueError(f"unknown policy {unknown or spec!r}; choose from {', '.join(PLACERS)} or 'all'")
    return names


def _one(
    fleet: ReplayFleet, jobs: Sequence[TraceJob], name: str, seed: int, baseline_backfill: bool = False
) -> ReplaySummary:
    """One policy over one seed's arrivals (a process of its own when runs are spread over several);
    `baseline_backfill`: a baseline runs plain EASY backfill (see replay/baselines.py)."""
    on = pooled(fleet) if name == "pooled" else fleet
    placer = PLACERS[name]
    options = {"backfill": True} if baseline_backfill and placer.takes_plain_backfill else {}
    return summarise(replay(on, jittered(jobs, seed), placer(seed=seed, **options)))


def compare(
    fleet: ReplayFleet,
    jobs: Sequence[TraceJob],
    policies: Sequence[str],
    seeds: int = 1,
    workers: int = 1,
    store: RunStore | None = None,
    baseline_backfill: bool = False,
) -> list[SeededSummary]:
    """Every policy over every seed; with `workers` > 1 the runs are spread over that many processes
    (the engine's runs first: they take longest). The figures do not depend on `workers`.

    With a `store`, runs it holds are read instead of run, and each new run is written to it as
    soon as it ends: an interrupted comparison loses only the runs under way. `baseline_backfill`:
    the baselines run plain EASY backfill (the engine's runs do not change).
    """
    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    if workers < 1:
        raise ValueError(f"--jobs must be >= 1, got {workers}")
    runs = [(name, s) for name in policies for s in range(seeds)]
    done: dict[int, ReplaySummary] = {}
    if store is not None:
        for i, (name, s) in enumerate(runs):
            known = store.get(name, s)
            if known is not None:
                done[i] = known
    todo = sorted((i for i in range(len(runs)) if i not in done), key=lambda i: runs[i][0] != ENGINE)

    def finished(i: int, summary: ReplaySummary) -> None:
        done[i] = summary
        if store is not None:
            store.put(summary, runs[i][1])

    if workers == 1:
        for i in todo:
            finished(i, _one(fleet, jobs, *runs[i], baseline_backfill))
    elif todo:
        with ProcessPoolExecutor(workers) as pool:
            futures = {pool.submit(_one, fleet, jobs, *runs[i], baseline_backfill): i for i in todo}
            for future in as_completed(futures):
                finished(futures[future], future.result())
    ordered = [done[i] for i in range(len(runs))]
    return [over_seeds(ordered[k * seeds : (k + 1) * seeds]) for k in range(len(policies))]
