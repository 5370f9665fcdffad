"""Large jobs under the engine in a replay: each blocked one keeps its room, however many wait."""

from __future__ import annotations

import pytest

from airflow_mcsched.replay.fleet import fleet_from_split
from airflow_mcsched.replay.policies import REPLAY_POLICY, Mcsched
from airflow_mcsched.replay.simulator import replay
from tests.replay.test_replay import job


@pytest.fixture
def fleet(trace_dir):
    """cloud-c: one G2 node at 0.9; onprem-a: one G2 node at 0.5 and one 2-GPU T4 node at 0.2."""
    return fleet_from_split(trace_dir / "split.csv", trace_dir / "nodes.csv")


def crowd():
    """onprem-a's G2 is half free at 1500 s and whole at 3001 s; cloud-c's G2 is free at 2002 s.
    big1 (long) waits for cloud-c, big2 for onprem-a; from 1400 s, one-GPU jobs of 5000 s arrive."""
    jobs = [
        job("a-fill1", 0, 1500, gpus=4),
        job("a-fill2", 1, 3000, gpus=4),
        job("c-fill", 2, 2000, gpus=8),
        job("big1", 10, 20000, gpus=8),
        job("big2", 20, 1000, gpus=8),
    ]
    return jobs + [job(f"small{i}", 1400 + 10 * i, 5000, gpus=1, team=1) for i in range(8)]


@pytest.mark.parametrize(
    ("heads", "large_heads", "big2_start"),
    [
        (1, 0, 6500),  # only big1 is held: small jobs take onprem-a's free half at 1500 s and big2 waits them out
        (2, 0, 3001),  # big2 holds onprem-a from 3001 s: small jobs that would outlast that keep off it
        (1, 1, 3001),  # the same, from the hold kept for a large job beyond the first head
    ],
)
def test_a_second_large_job_keeps_its_room(fleet, heads, large_heads, big2_start):
    policy = REPLAY_POLICY.model_copy(update={"backfill_heads": heads, "backfill_large_heads": large_heads})
    placer = Mcsched(policy=policy)
    assert (placer.shown_waiting, placer.shown_large) == (heads, large_heads)  # the jobs it may hold room for
    runs = {r.job.name: r for r in replay(fleet, crowd(), placer).runs}
    assert (runs["big1"].start, runs["big1"].cluster) == (2002, "cloud-c")
    assert runs["big2"].start == big2_start
