"""A hand-computed lineage: placements with known times, GPUs and prices, and what reports must say.

P1 team-a/proj-x dag d1 on c1 A100: 2 GPUs x 1.5 h x $2.00 = 3 GPU-h, $6.00  (admitted 09:30, ran 10:00-11:30)
P2 team-a/proj-y dag d2 on c2 H100: 4 GPUs x 0.5 h x $4.00 = 2 GPU-h, $8.00  (ran 12:00-12:30)
P3 team-b/proj-x dag d1 on c1 A100: 1 GPU  x 4.0 h x $2.00 = 4 GPU-h, $8.00  (ran 09:00-13:00)
P4 team-b, still pending since 11:00: no GPU-hours
P5 team-c/no project on c2 H100:    2 GPUs x $1.00 spot, running since 13:00 (at NOW = 13:30: 1 GPU-h, $1.00)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow_mcsched.governance.usage import PlacementUsage

DAY = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday
NOW = DAY + timedelta(hours=13, minutes=30)


def at(hours: float) -> datetime:
    return DAY + timedelta(hours=hours)


A100, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"

CASES: list[dict[str, Any]] = [
    dict(placement_id="p1", team="team-a", project="proj-x", dag_id="d1", state="released", queued_at=at(9),
         gpus=2.0, cluster="c1", pool="a100", gpu_type=A100, price_per_gpu_hour=2.0,
         admitted_at=at(9.5), started_at=at(10), ended_at=at(11.5)),
    dict(placement_id="p2", team="team-a", project="proj-y", dag_id="d2", state="released", queued_at=at(11.9),
         gpus=4.0, cluster="c2", pool="h100", gpu_type=H100, price_per_gpu_hour=4.0,
         admitted_at=at(12), started_at=at(12), ended_at=at(12.5)),
    dict(placement_id="p3", team="team-b", project="proj-x", dag_id="d1", state="released", queued_at=at(8.9),
         gpus=1.0, cluster="c1", pool="a100", gpu_type=A100, price_per_gpu_hour=2.0,
         admitted_at=at(9), started_at=at(9), ended_at=at(13)),
    dict(placement_id="p4", team="team-b", project="proj-x", dag_id="d1", state="pending", queued_at=at(11),
         gpus=8.0),
    dict(placement_id="p5", team="team-c", project=None, dag_id="d3", state="running", queued_at=at(12.95),
         gpus=2.0, cluster="c2", pool="h100", gpu_type=H100, price_per_gpu_hour=1.0,
         admitted_at=at(13), started_at=at(13)),
]  # fmt: skip

FINISHED = [c for c in CASES if c["placement_id"] in ("p1", "p2", "p3")]
CLUSTER_GPUS = {"c1": 8, "c2": 8}


def usages(cases: list[dict[str, Any]] = CASES) -> list[PlacementUsage]:
    return [PlacementUsage(**c) for c in cases]


def placement_rows(cases: list[dict[str, Any]] = CASES) -> list:
    """The cases as rows of the lineage table, as the placement store would have left them."""
    from airflow_mcsched.service.tables import PlacementRow

    rows = []
    for c in cases:
        fields = {k: v for k, v in c.items() if k != "placement_id"}
        hours = 0.0
        if c.get("started_at") and c.get("ended_at"):
            hours = c["gpus"] * (c["ended_at"] - c["started_at"]).total_seconds() / 3600
        rows.append(
            PlacementRow(
                id=c["placement_id"], run_id="r", task_id=c["placement_id"], kind="training", ask={}, request={},
                submitted_by="tests", gpu_hours=hours if c.get("ended_at") else None,
                cost=hours * c["price_per_gpu_hour"] if c.get("ended_at") else None, **fields,
            )
        )  # fmt: skip
    return rows
