"""EASY backfill: the head of the queue gets a start time; later, smaller work must not delay it."""

from __future__ import annotations

from datetime import timedelta

from airflow_mcsched.decision import Outcome, Policy, Reason, decide
from tests.decision.fleet_factory import DEFAULT_POLICY, NOW, cluster, observe, pool, request, reservation, view_of

HOUR = timedelta(hours=1)


def fleet(*extra_pools, free=(0, 4), running_ends=(2 * HOUR, HOUR)):
    """Node 0 is full until its 8-GPU job ends; node 1 runs a 4-GPU job (4 free)."""
    profile = cluster("a", pool("gpu", nodes=len(free)), *extra_pools)
    running = [
        reservation(f"run{i}", "a", "gpu", f"a-gpu-{i}", gpus=8 - f, ends_in=end)
        for i, (f, end) in enumerate(zip(free, running_ends, strict=True))
        if f < 8
    ]
    obs = observe(profile, free={"gpu": list(free)}, seen=[r.id for r in running])
    return view_of((profile, obs)), running


def head(**kw):
    return request("head", gpus=8, gpu_types=("A100",), arrival=NOW - timedelta(minutes=10), **kw)


def small(rid, minutes, **kw):
    return request(rid, gpus=2, expected_duration=timedelta(minutes=minutes), arrival=NOW - timedelta(minutes=5), **kw)


def test_head_gets_an_expected_start_from_running_work_ends():
    view, running = fleet()
    d = decide(view, [head()], running, DEFAULT_POLICY, NOW).decision("head")
    assert (d.outcome, d.reason) == (Outcome.WAITING, Reason.WAITING_FOR_CAPACITY)
    assert d.expected_start == NOW + HOUR
    assert "capacity is held for it" in d.summary


def test_small_job_that_ends_before_the_head_starts_backfills():
    view, running = fleet()
    result = decide(view, [head(), small("short", 30)], running, DEFAULT_POLICY, NOW)
    assert result.decision("short").outcome is Outcome.ADMITTED


def test_small_job_that_would_delay_the_head_waits_behind_it():
    view, running = fleet()
    result = decide(view, [head(), small("long", 180)], running, DEFAULT_POLICY, NOW)
    d = result.decision("long")
    assert (d.outcome, d.reason) == (Outcome.WAITING, Reason.WAITING_BEHIND_HEAD)
    assert "held for head" in d.rejection("a", "gpu").message


def test_long_job_runs_where_the_head_needs_nothing():
    """Node 2 is busy for 5 hours with 2 GPUs free: the head will use node 1, so node 2 is fair game."""
    view, running = fleet(free=(0, 4, 2), running_ends=(2 * HOUR, HOUR, 5 * HOUR))
    result = decide(view, [head(), small("long", 180)], running, DEFAULT_POLICY, NOW)
    d = result.decision("long")
    assert d.outcome is Outcome.ADMITTED and d.nodes == ("a-gpu-2",)


def test_long_job_goes_to_a_pool_the_head_cannot_use():
    view, running = fleet(pool("t4", gpu_type="T4", gpus_per_node=4, nodes=1, price_per_gpu_hour=9.0))
    result = decide(view, [head(), small("long", 180)], running, DEFAULT_POLICY, NOW)
    assert result.decision("long").pool == "t4"


def test_large_gang_is_not_starved_by_a_stream_of_small_jobs():
    view, running = fleet()
    gang = request("gang", gpus=8, pods=2, arrival=NOW - timedelta(minutes=10))
    stream = [small(f"s{i}", 240) for i in range(4)]
    result = decide(view, [gang, *stream], running, DEFAULT_POLICY, NOW)
    assert result.decision("gang").expected_start == NOW + 2 * HOUR
    assert all(result.decision(f"s{i}").reason is Reason.WAITING_BEHIND_HEAD for i in range(4))


def test_without_backfill_small_jobs_take_what_is_free():
    view, running = fleet()
    result = decide(view, [head(), small("long", 180)], running, Policy(backfill=False), NOW)
    assert result.decision("long").outcome is Outcome.ADMITTED
    assert result.decision("head").expected_start is None


def test_head_without_any_running_work_of_ours_to_wait_for_gets_no_start():
    """Others' pods (not ours) fill the nodes: no known end, so no start time and no held capacity."""
    profile = cluster("a", pool("gpu", nodes=1))
    view = view_of((profile, observe(profile, free={"gpu": [4]})))
    result = decide(view, [head(), small("long", 180)], [], DEFAULT_POLICY, NOW)
    assert result.decision("head").expected_start is None
    assert result.decision("long").outcome is Outcome.ADMITTED


def test_waiting_summary_warns_when_the_deadline_will_be_missed():
    view, running = fleet()
    late = head(expected_duration=2 * HOUR, deadline=NOW + 2 * HOUR)
    d = decide(view, [late], running, DEFAULT_POLICY, NOW).decision("head")
    assert "miss its deadline" in d.summary
