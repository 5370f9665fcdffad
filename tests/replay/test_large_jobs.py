"""Large jobs under the engine in a replay: each blocked one keeps its room, however many wait."""

from __future__ import annotations

import pytest

from airflow_mcsched.replay.fleet import fleet_from_split
from airflow_mcsched.replay.fleet_state import FleetState
from airflow_mcsched.replay.policies import REPLAY_POLICY, Mcsched
from airflow_mcsched.replay.simulator import replay
from benchmarks import replay_longest_waits as longest_waits
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
    ("heads", "large_heads", "large_after", "big2_start"),
    [
        (1, 0, None, 6500),  # only big1 is held: small jobs take onprem-a's free half at 1500 s; big2 waits them out
        (2, 0, None, 3001),  # big2 holds onprem-a from 3001 s: small jobs that would outlast that keep off it
        (1, 1, None, 3001),  # the same, from the hold kept for a large job beyond the first head
        (1, 1, 1000, 3001),  # at 1500 s big2 has waited 1480 s, past the bound: it has its hold
        (1, 1, 2000, 6500),  # not yet past it at 1500 s: the small jobs take the room
    ],
)
def test_a_second_large_job_keeps_its_room(fleet, heads, large_heads, large_after, big2_start):
    update = {"backfill_heads": heads, "backfill_large_heads": large_heads, "backfill_large_after_seconds": large_after}
    placer = Mcsched(policy=REPLAY_POLICY.model_copy(update=update))
    assert (placer.shown_waiting, placer.shown_large) == (heads, large_heads)  # the jobs it may hold room for
    runs = {r.job.name: r for r in replay(fleet, crowd(), placer).runs}
    assert (runs["big1"].start, runs["big1"].cluster) == (2002, "cloud-c")
    assert runs["big2"].start == big2_start


def test_the_longest_waits_are_traced_to_the_jobs_that_held_their_nodes(fleet):
    """The tracing tool (benchmarks/replay_longest_waits.py) on a replay with one hold: big2 waits
    for onprem-a's G2 node, which small jobs took at 1500 s."""
    policy = REPLAY_POLICY.model_copy(update={"backfill_heads": 1, "backfill_large_heads": 0})
    result = replay(fleet, crowd(), Mcsched(policy=policy))
    pools = FleetState(fleet).pools
    assert longest_waits.longest_multi_gpu_waits(result, 1)[0].job.name == "big2"
    lines = longest_waits.report(result, pools, top=1, long_seconds=4000)
    assert lines[0].startswith("big2: 8 GPUs") and "fits 2 nodes in 2 pools" in lines[0]
    held = [line for line in lines[1:] if "onprem-a/" in line]
    assert held and all("held by small" in line and "it fits 3 pools" in line for line in held)
