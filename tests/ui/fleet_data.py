"""Real data for the page tests: the example fleet recorded with its capacity, a few days of finished
placements written through the placement store with a simulated clock (known GPUs, durations and
prices, hence hand-computable costs), and today's placements submitted through the HTTP API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.decision import Policy
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.placement_store import PlacementStore
from airflow_mcsched.service.schemas import PlacementSubmit

FLEET_FILE = Path(__file__).resolve().parents[2] / "examples" / "fleet.yaml"
FLEET = load_fleet_file(FLEET_FILE)
A100, H100, T4 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "Tesla-T4"
PRICE = {A100: 1.20, H100: 4.10, T4: 0.35}  # examples/fleet.yaml, on-demand prices
HISTORY_DAYS = 4


@dataclass(frozen=True)
class Job:
    team: str
    project: str
    task_id: str
    kind: str
    gpus: int
    gpu_type: str
    hours: float

    def cost(self) -> float:
        return self.gpus * self.hours * PRICE[self.gpu_type]


# one run per day, back to back from 08:00 UTC (each ends before the next is queued)
NIGHTLY = (
    Job("nlp", "llm", "pretrain", "training", 8, A100, 3.0),
    Job("vision", "cars", "detector", "batch", 4, T4, 2.0),
    Job("recsys", "ranking", "finetune", "fine-tune", 4, H100, 1.5),
)


def expected_cost(team: str, days: int = HISTORY_DAYS) -> float:
    """By hand: GPUs x hours x the pool's price, once per day of history."""
    return days * sum(j.cost() for j in NIGHTLY if j.team == team)


def submit_body(dag_id: str, run_id: str, task_id: str, **ask: Any) -> dict[str, Any]:
    return {
        "task": {"dag_id": dag_id, "run_id": run_id, "task_id": task_id},
        "ask": {"cpu": 4, "memory_gib": 32, **ask},
    }


def apply_fleet(session: Session) -> None:
    ClusterStore(session).apply(FLEET, "ui-tests")


def record_history(session_scope: Callable[[], Any], now: datetime, days: int = HISTORY_DAYS) -> None:
    """Finished nightly runs on each of the `days` days before `now`, through the store's own
    submit / admission cycle / start / release, at the times they would have happened."""
    today = datetime.combine(now.date(), time(0), tzinfo=UTC)
    for back in range(days, 0, -1):
        clock = today - timedelta(days=back) + timedelta(hours=8)
        run_id = f"scheduled__{clock.date().isoformat()}T00:00:00+00:00"
        for job in NIGHTLY:
            body = submit_body(
                "nightly_training", run_id, job.task_id,
                team=job.team, project=job.project, kind=job.kind, gpus=job.gpus, gpu_types=[job.gpu_type],
            )  # fmt: skip
            with session_scope() as session:
                store = PlacementStore(session, Policy())
                row = store.submit(PlacementSubmit.model_validate(body), "scheduler", clock)
                store.run_cycle(clock)
                store.start(row.id, f"{job.task_id}-{back}", clock + timedelta(minutes=1))
                clock += timedelta(minutes=1, hours=job.hours)
                store.release(row.id, "succeeded", "", clock, "scheduler")
            clock += timedelta(minutes=5)


TODAY_RUN = "manual__ui-test"
TODAY = (
    # an 8-GPU step that A100 and H100 pools can take: one is chosen, the other is the runner-up
    ("retraining_pipeline", "train", {"team": "nlp", "project": "llm", "kind": "training", "gpus": 8,
                                      "gpu_types": [A100, H100]}),
    ("retraining_pipeline", "evaluate", {"team": "nlp", "project": "llm", "kind": "eval", "gpus": 1,
                                         "gpu_types": [T4]}),
    # more GPUs than any node has: waits, every cluster says why
    ("retraining_pipeline", "giant", {"team": "vision", "project": "cars", "kind": "training", "gpus": 16,
                                      "gpu_types": [A100]}),
)  # fmt: skip


def submit_today(post: Callable[[str, dict[str, Any]], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Today's steps through the placement API (as a person with edit rights); answers by task id."""
    return {
        task: post("/mcsched/api/v1/placements", submit_body(dag, TODAY_RUN, task, **ask)) for dag, task, ask in TODAY
    }
