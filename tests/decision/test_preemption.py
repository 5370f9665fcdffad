"""Preemption of lower-priority interruptible work: only when it makes the request fit, fewest then cheapest."""

from __future__ import annotations

from airflow_mcsched.decision import Outcome, Policy, Reason, decide
from tests.decision.fleet_factory import DEFAULT_POLICY, NOW, cluster, observe, pool, request, reservation, view_of

LOW = 0
HIGH = 1000


def full_fleet(*running, nodes=2):
    profile = cluster("a", pool("gpu", nodes=nodes))
    used: dict[str, int] = {}
    for r in running:
        for a in r.pods:
            used[a.node] = used.get(a.node, 0) + a.gpus
    free = [8 - used.get(f"a-gpu-{i}", 0) for i in range(nodes)]
    return view_of((profile, observe(profile, free={"gpu": free}, seen=[r.id for r in running])))


def low(rid, node, gpus=8, price=2.0, interruptible=True, priority=LOW):
    return reservation(rid, "a", "gpu", node, gpus=gpus, priority=priority, interruptible=interruptible, price=price)


def urgent(rid="urgent", **kw):
    return request(rid, gpus=8, priority_class="high", **kw)


def test_higher_priority_preempts_lower_priority_interruptible_work():
    running = [low("l0", "a-gpu-0"), low("l1", "a-gpu-1", price=1.0)]
    result = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW)
    d = result.decision("urgent")
    assert d.outcome is Outcome.PREEMPTING
    (victim,) = d.victims
    assert victim.reservation_id == "rsv-l1"  # the cheaper of two equally few
    assert victim.reason is Reason.PREEMPTED_BY_PRIORITY and victim.for_request == "urgent"
    assert "priority 0 is below 1000" in victim.message
    assert result.preemptions == d.victims
    assert "l1 (PreemptedByPriority)" in d.summary


def test_fewest_victims_before_cheapest():
    small = [low(f"s{i}", "a-gpu-1", gpus=1, price=0.1) for i in range(8)]
    big = low("big", "a-gpu-0", price=5.0)
    running = [big, *small]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert [v.reservation_id for v in d.victims] == ["rsv-big"]


def test_work_that_must_not_stop_is_never_a_victim():
    running = [low("l0", "a-gpu-0", interruptible=False), low("l1", "a-gpu-1", interruptible=False)]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert (d.outcome, d.reason) == (Outcome.WAITING, Reason.WAITING_FOR_CAPACITY)


def test_equal_priority_does_not_preempt():
    running = [low("l0", "a-gpu-0", priority=1000), low("l1", "a-gpu-1", priority=1000)]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert d.outcome is Outcome.WAITING


def test_no_preemption_when_stopping_the_candidates_would_not_make_room():
    """Only 2 GPUs per node are held by low-priority work; the other 6 by work that must not stop."""
    running = [
        low("keep0", "a-gpu-0", gpus=6, priority=HIGH, interruptible=False),
        low("keep1", "a-gpu-1", gpus=6, priority=HIGH, interruptible=False),
        low("l0", "a-gpu-0", gpus=2),
        low("l1", "a-gpu-1", gpus=2),
    ]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert d.outcome is Outcome.WAITING and not d.victims


def test_victims_already_stopping_are_waited_for_not_replaced():
    """Next cycle: the victim's pod still shows; the preemptor waits for it instead of choosing more."""
    stopping = reservation("l0", "a", "gpu", "a-gpu-0", gpus=8, priority=LOW, interruptible=True, preempted_by="urgent")
    other = low("l1", "a-gpu-1")
    running = [stopping, other]
    d = decide(full_fleet(*running), [urgent()], running, DEFAULT_POLICY, NOW).decision("urgent")
    assert d.outcome is Outcome.PREEMPTING and d.victims == ()
    assert "waiting on a/gpu for 1 preempted" in d.summary


def test_freed_capacity_is_held_for_the_preemptor_within_the_cycle():
    running = [low("l0", "a-gpu-0"), low("l1", "a-gpu-1")]
    queue = [urgent(), request("later", gpus=8, priority_class="low")]
    result = decide(full_fleet(*running), queue, running, DEFAULT_POLICY, NOW)
    assert result.decision("urgent").outcome is Outcome.PREEMPTING
    assert result.decision("later").outcome is Outcome.WAITING


def test_preemption_can_be_turned_off():
    running = [low("l0", "a-gpu-0"), low("l1", "a-gpu-1")]
    d = decide(full_fleet(*running), [urgent()], running, Policy(preemption=False), NOW).decision("urgent")
    assert d.outcome is Outcome.WAITING
