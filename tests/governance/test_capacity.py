"""The capacity view: free and reserved GPUs per cluster and GPU type, fragmentation, flags."""

from __future__ import annotations

from datetime import timedelta

from airflow_mcsched.access.profiles import ClusterState
from airflow_mcsched.governance.capacity import capacity_now
from tests.decision.fleet_factory import NOW, cluster, observe, pool, reservation, view_of

MAX_AGE = timedelta(minutes=5)
A = cluster("a", pool("gpu", nodes=2), pool("t4", gpu_type="T4", gpus_per_node=4, nodes=1, price_per_gpu_hour=0.3))


def test_free_gpus_subtract_reservations_whose_pods_are_not_running_yet():
    held = [
        reservation("new", "a", "gpu", "a-gpu-0", gpus=4),  # granted, pod not seen: takes from the read
        reservation("seen", "a", "gpu", "a-gpu-1", gpus=6),  # its pod is in the read already
    ]
    view = view_of((A, observe(A, free={"gpu": [8, 2]}, seen=["rsv-seen"])))
    (c,) = capacity_now(view, held, NOW, MAX_AGE).clusters
    a100 = c.gpu_types[0]
    assert (a100.gpu_type, a100.gpus, a100.gpus_free) == ("A100", 16, 6)
    assert (a100.gpus_reserved, a100.gpus_reserved_not_started) == (10.0, 4.0)
    assert a100.largest_free_block == 4 and a100.free_histogram == {1: 2, 2: 2, 4: 1, 8: 0}
    assert c.flags == () and (c.gpus, c.gpus_free) == (20, 10)


def test_a_fragmented_pool_shows_no_block_for_a_whole_node_job():
    view = view_of((A, observe(A, free={"gpu": [4, 4]})))
    a100 = capacity_now(view, [], NOW, MAX_AGE).clusters[0].gpu_types[0]
    assert a100.gpus_free == 8 and a100.largest_free_block == 4 and a100.free_histogram[8] == 0


def test_unhealthy_stale_and_cordoned_clusters_are_flagged_and_not_counted_as_usable():
    b, c, d = cluster("b"), cluster("c"), cluster("d", state=ClusterState.CORDONED)
    view = view_of(
        A,
        (b, observe(b, error="connection refused")),
        (c, observe(c, at=NOW - timedelta(minutes=10))),
        d,
    )
    report = capacity_now(view, [], NOW, MAX_AGE)
    flags = {cl.cluster: cl.flags for cl in report.clusters}
    assert flags["a"] == ()
    assert flags["b"][0] == "unhealthy: connection refused"
    assert flags["c"] == ("stale: last read 600s ago (limit 300s)",)
    assert flags["d"] == ("cordoned",)
    assert report.free_by_gpu_type == {"A100": 16, "T4": 4}
