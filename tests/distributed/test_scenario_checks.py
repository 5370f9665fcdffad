"""The Celery scenario's invariants, on rows made by hand: an over-commit is named with who held what."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow_mcsched.service.tables import PlacementRow, ReservationRow
from tests.distributed.celery_scenario import FLEET_FILE, Outcome, load_fleet_file, violations

T0 = datetime(2026, 12, 5, 17, 6, 8, tzinfo=UTC)


def held(pid: str, task: str, node: str, start: float, end: float) -> tuple[PlacementRow, ReservationRow]:
    placement = PlacementRow(
        id=pid, run_id="run", task_id=task, cluster="cloud-h100", pool="l4", gpus=4.0, state="released",
        admitted_at=T0 + timedelta(seconds=start), ended_at=T0 + timedelta(seconds=end),
    )  # fmt: skip
    reservation = ReservationRow(id=f"rsv-{pid}", placement_id=pid, pods=[{"node": node, "gpus": 4}], active=False)
    reservation.ended_at = placement.ended_at
    return placement, reservation


def test_an_over_committed_pool_is_reported_with_the_placements_and_nodes_that_held_it():
    rows = [
        held("aaaaaaaa1", "shard_b", "cloud-h100-l4-0", 0.0, 4.7),
        held("bbbbbbbb2", "shard_a", "cloud-h100-l4-1", 0.1, 4.5),
        held("cccccccc3", "shard_b", "cloud-h100-l4-1", 0.6, 8.6),  # while both nodes were held
    ]
    outcome = Outcome({"run": "success"}, {}, [p for p, _ in rows], [r for _, r in rows], 9.0)
    (problem,) = [v for v in violations(outcome, load_fleet_file(FLEET_FILE)) if v.startswith("cloud-h100/l4")]
    assert problem.startswith("cloud-h100/l4 held 12 GPUs at once, capacity 8: ")
    assert "aaaaaaaa (run/shard_b) 4 GPUs on cloud-h100-l4-0 from 17:06:08.000000 to 17:06:12.700000" in problem
    assert "cccccccc (run/shard_b) 4 GPUs on cloud-h100-l4-1" in problem and "bbbbbbbb" in problem
