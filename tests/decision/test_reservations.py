"""Reservations count as used until released or expired, never twice, never forgotten."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_mcsched.decision import Outcome, Reason, decide
from tests.decision.fleet_factory import (
    DEFAULT_POLICY,
    NOW,
    cluster,
    decide_one,
    observe,
    pool,
    request,
    reservation,
    view_of,
)

PROFILE = cluster("a", pool(nodes=1))


def test_reservation_whose_pod_is_not_seen_yet_takes_capacity():
    view = view_of(PROFILE)
    held = reservation("early", "a", "gpu", "a-gpu-0", gpus=8)
    assert decide_one(view, request(gpus=1), [held]).outcome is Outcome.WAITING


def test_reservation_is_not_counted_twice_once_its_pod_shows():
    """The read already shows the pod (4 GPUs used) and its reservation id: 4 are still free."""
    view = view_of((PROFILE, observe(PROFILE, free={"gpu": [4]}, seen=["rsv-early"])))
    held = reservation("early", "a", "gpu", "a-gpu-0", gpus=4)
    assert decide_one(view, request(gpus=4), [held]).outcome is Outcome.ADMITTED


def test_reservation_whose_pod_waits_for_a_node_still_takes_capacity():
    """From raw Kubernetes objects: 8 GPUs, one pod of 4 running, the other reservation's pod created
    but not yet bound by the cluster's scheduler. A third 4-GPU request must wait."""
    from airflow_mcsched.access import kube_reader

    def pod(reservation: str, node: str | None) -> dict:
        limits = {"nvidia.com/gpu": "4"}
        return {
            "metadata": {"name": reservation, "labels": {"mcsched.io/reservation": reservation}},
            "spec": {"nodeName": node, "containers": [{"name": "base", "resources": {"limits": limits}}]},
            "status": {"phase": "Running" if node else "Pending"},
        }

    labels = {"mcsched.io/node-pool": "gpu", "nvidia.com/gpu.product": "A100"}
    allocatable = {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": "8"}
    node = {"metadata": {"name": "a-gpu-0", "labels": labels}, "spec": {}, "status": {"allocatable": allocatable}}
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    read = kube_reader.observe("a", [node], [pod("rsv-running", "a-gpu-0"), pod("rsv-bound-soon", None)], PROFILE, NOW)
    held = [reservation(r, "a", "gpu", "a-gpu-0", gpus=4) for r in ("running", "bound-soon")]
    view = view_of((PROFILE, read))
    assert decide_one(view, request(gpus=4), held).outcome is Outcome.WAITING
    assert held[1].pod_alive(view) and not held[1].pod_visible(view)


def test_unseen_reservation_whose_node_holds_another_of_ours_takes_the_free_node():
    """What two Celery workers once met: a pool of two 4-GPU nodes, `a` granted node 0 and `b` node
    1. The cluster's scheduler (the pod names the pool, not the node) bound `b`'s pod to node 0;
    `a`'s pod is not there yet. The read shows node 0 busy with `b` and node 1 free. Taking `a`
    from node 0 alone would find nothing to take there, and grant node 1 a second time."""
    profile = cluster("c", pool("l4", "L4", gpus_per_node=4, nodes=2))
    view = view_of((profile, observe(profile, free={"l4": [0, 4]}, seen=["rsv-b"])))
    held = [reservation(r, "c", "l4", f"c-l4-{i}", gpus=4, gpu_type="L4") for i, r in enumerate("ab")]
    decision = decide_one(view, request(gpus=4), held)
    assert decision.outcome is Outcome.WAITING
    assert decision.rejection("c", "l4").reason is Reason.INSUFFICIENT_FREE_GPUS


def test_expired_lease_is_reclaimed_and_its_capacity_is_free_again():
    view = view_of(PROFILE)
    lapsed = reservation("late", "a", "gpu", "a-gpu-0", gpus=8, expires_in=timedelta(seconds=-1))
    result = decide(view, [request(gpus=8)], [lapsed], DEFAULT_POLICY, NOW)
    assert result.decisions[0].outcome is Outcome.ADMITTED
    (reclaimed,) = result.reclaimed
    assert (reclaimed.reservation_id, reclaimed.reason) == ("rsv-late", Reason.LEASE_EXPIRED)
    assert "before its pod appeared" in reclaimed.message


def test_expired_lease_of_a_running_pod_is_reported_but_the_pod_still_holds_its_gpus():
    view = view_of((PROFILE, observe(PROFILE, free={"gpu": [0]}, seen=["rsv-late"])))
    lapsed = reservation("late", "a", "gpu", "a-gpu-0", gpus=8, expires_in=timedelta(seconds=-1))
    result = decide(view, [request(gpus=1)], [lapsed], DEFAULT_POLICY, NOW)
    assert "still runs" in result.reclaimed[0].message
    assert result.decisions[0].outcome is Outcome.WAITING


def test_admission_hands_out_a_reservation_with_a_lease():
    decision = decide_one(view_of(PROFILE), request("r9", gpus=2, expected_duration=timedelta(hours=3)))
    r = decision.reservation
    assert (r.id, r.request_id, r.cluster, r.pool, r.nodes) == ("rsv-r9", "r9", "a", "gpu", ("a-gpu-0",))
    assert r.expires_at == NOW + DEFAULT_POLICY.lease
    assert r.expected_end == NOW + timedelta(hours=3)
    assert (r.team, r.priority, r.priority_class, r.gpu_type, r.gpu_equivalent) == ("ml", 100, "normal", "A100", 2)


def test_queue_sees_what_earlier_requests_in_the_same_cycle_took():
    result = decide(view_of(PROFILE), [request("r1", gpus=6), request("r2", gpus=4)], [], DEFAULT_POLICY, NOW)
    assert [d.outcome for d in result.decisions] == [Outcome.ADMITTED, Outcome.WAITING]
    assert [r.request_id for r in result.reservations] == ["r1"]


def test_reservation_on_a_pool_that_left_the_fleet_is_ignored_for_capacity():
    held = reservation("old", "gone", "gpu", "gone-gpu-0", gpus=8)
    assert decide_one(view_of(PROFILE), request(gpus=8), [held]).outcome is Outcome.ADMITTED


def test_a_queue_naming_one_request_twice_is_refused_with_the_id():
    """Its grants would share one reservation id, and the running work keeps one of them: the other's
    GPUs would look free. The cycle refuses the queue instead, and names the id and the fix."""
    queue = [request("r1", gpus=4), request("r2", gpus=1), request("r1", gpus=4)]
    with pytest.raises(ValueError, match=r"^queue: request id 'r1' appears more than once; give each pending"):
        decide(view_of(PROFILE), queue, [], DEFAULT_POLICY, NOW)


@pytest.mark.parametrize(
    "expires_in",
    [(timedelta(hours=1), timedelta(hours=1)), (timedelta(hours=1), -timedelta(seconds=1))],
    ids=["both running", "one lapsed"],
)
def test_running_work_naming_one_reservation_twice_is_refused_with_the_id(expires_in):
    running = [
        reservation("x", "a", "gpu", "a-gpu-0", gpus=4, expires_in=expires_in[0]),
        reservation("y", "a", "gpu", "a-gpu-0", gpus=1),
        reservation("x", "a", "gpu", "a-gpu-0", gpus=4, expires_in=expires_in[1]),
    ]
    with pytest.raises(ValueError, match=r"^reservations: reservation id 'rsv-x' appears more than once; pass"):
        decide(view_of(PROFILE), [request(gpus=1)], running, DEFAULT_POLICY, NOW)


def test_several_ids_named_twice_are_all_named():
    queue = [request(name, gpus=1) for name in ("a", "b", "a", "b", "c")]
    with pytest.raises(ValueError, match=r"request ids 'a', 'b' appear more than once"):
        decide(view_of(PROFILE), queue, [], DEFAULT_POLICY, NOW)
