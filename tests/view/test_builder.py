"""Building the global view from profiles and capacity reads."""

from __future__ import annotations

from datetime import timedelta

from airflow_mcsched.access.capacity import ClusterObservation, NodeObservation
from airflow_mcsched.access.profiles import ClusterState
from airflow_mcsched.view import build_view
from tests.decision.fleet_factory import NOW, cluster, observe, pool, view_of


def test_pool_carries_declared_traits_and_live_capacity():
    profile = cluster(
        "a",
        pool(
            "h100",
            gpu_type="H100",
            gpus_per_node=8,
            nodes=2,
            gpu_memory_gib=80,
            interconnect=["nvlink", "infiniband"],
            storage_gbps=25,
            price_per_gpu_hour=4.0,
            spot_price_per_gpu_hour=1.5,
            gpu_sharing=True,
        ),
        region="eu",
        zone="z1",
    )
    view = view_of((profile, observe(profile, free={"h100": [8, 3]})))
    p = view.pool("a", "h100")
    assert (p.gpu_type, p.gpu_memory_gib, p.has_rdma, p.storage_gbps, p.gpu_sharing) == ("H100", 80, True, 25, True)
    assert (p.price_per_gpu_hour, p.spot_price_per_gpu_hour) == (4.0, 1.5)
    assert p.price_for(interruptible=True) == 1.5 and p.price_for(interruptible=False) == 4.0
    c = p.capacity
    assert (c.allocatable_gpus, c.whole_gpus_free, c.requested_gpus) == (16, 11, 5)
    assert c.histogram.buckets() == {1: 2, 2: 2, 4: 1, 8: 1}
    assert c.largest_whole_free_on_node == 8
    assert [n.whole_gpus_free for n in c.nodes] == [8, 3]
    assert view.cluster("a").failure_domain == "eu/z1"


def test_not_ready_and_cordoned_nodes_are_left_out_and_counted():
    profile = cluster("a", pool("gpu", nodes=3))
    obs = observe(profile, not_ready={"gpu": 1})
    nodes = list(obs.nodes)
    nodes[2] = NodeObservation(**{**{f: getattr(nodes[2], f) for f in nodes[2].__slots__}, "schedulable": False})
    obs = ClusterObservation("a", NOW, tuple(nodes))
    capacity = view_of((profile, obs)).pool("a", "gpu").capacity
    assert len(capacity.nodes) == 1
    assert capacity.nodes_excluded == 2
    assert capacity.allocatable_gpus == 8


def test_node_without_pool_label_joins_the_pool_of_its_gpu_type():
    profile = cluster("a", pool("big", gpu_type="A100"), pool("cpu", gpu_type=None))
    obs = ClusterObservation(
        "a",
        NOW,
        (
            NodeObservation("n1", None, "A100", 64000, 1024, 0, 0, (1000,) * 8),
            NodeObservation("n2", None, None, 32000, 1024, 0, 0),
            NodeObservation("n3", None, "T4", 32000, 1024, 0, 0, (1000,) * 4),
        ),
    )
    view = view_of((profile, obs))
    assert [n.name for n in view.pool("a", "big").capacity.nodes] == ["n1"]
    assert [n.name for n in view.pool("a", "cpu").capacity.nodes] == ["n2"]


def test_cpu_and_memory_free_per_node():
    profile = cluster("a", pool("gpu", nodes=1, cpu_per_node=64, memory_gib_per_node=256))
    node = view_of((profile, observe(profile, cpu_free={"gpu": [10]}))).pool("a", "gpu").capacity.nodes[0]
    assert node.cpu_milli_free == 10_000
    assert node.memory_mib_free == 256 * 1024


def test_unhealthy_read_keeps_cluster_with_error_and_no_capacity():
    profile = cluster("a")
    view = view_of((profile, observe(profile, error="connection refused")))
    c = view.cluster("a")
    assert c.error == "connection refused" and not c.healthy
    assert c.free_gpus == 0


def test_cluster_never_read_is_in_the_view_without_capacity():
    view = build_view([cluster("a")], [], NOW)
    c = view.cluster("a")
    assert c.observed_at is None and c.age(NOW) is None
    assert c.is_stale(NOW, timedelta(minutes=5))


def test_age_of_view_and_of_each_read():
    profile = cluster("a")
    view = build_view([profile], [observe(profile, at=NOW - timedelta(minutes=3))], NOW)
    later = NOW + timedelta(minutes=1)
    assert view.age(later) == timedelta(minutes=1)
    assert view.cluster("a").age(later) == timedelta(minutes=4)
    assert view.cluster("a").is_stale(later, timedelta(minutes=3))


def test_profile_state_and_reserved_gpus_reach_the_view():
    profile = cluster(
        "a",
        pool(),
        state=ClusterState.CORDONED,
        reserved=[{"gpu_type": "A100", "gpus": 4, "priority_classes": ["critical"]}],
    )
    c = view_of(profile).cluster("a")
    assert c.state is ClusterState.CORDONED
    assert c.reserved[0].gpus == 4


def test_reservation_ids_seen_are_kept_per_cluster():
    profile = cluster("a")
    view = view_of((profile, observe(profile, seen=["rsv-1"])))
    assert view.cluster("a").reservation_ids_seen == {"rsv-1"}


def test_pools_have_unique_fleet_positions_in_declared_order():
    view = view_of(cluster("a", pool("x"), pool("y")), cluster("b", pool("z")))
    assert [(p.cluster, p.name, p.ordinal) for p in view.pools] == [("a", "x", 0), ("a", "y", 1), ("b", "z", 2)]


def test_free_gpus_by_type_over_the_fleet():
    a = cluster("a", pool("x", gpu_type="A100"), pool("t", gpu_type="T4", gpus_per_node=4, nodes=1))
    b = cluster("b", pool("x", gpu_type="A100", nodes=1))
    view = view_of((a, observe(a, free={"x": [8, 2]})), b)
    assert view.free_gpus_by_type() == {"A100": 18, "T4": 4}
