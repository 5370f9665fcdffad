"""Tentative allocations: the overlay changes what the engine sees, never the view itself."""

from __future__ import annotations

from airflow_mcsched.view import CapacityOverlay, NodeAllocation
from tests.decision.fleet_factory import cluster, pool, view_of


def test_overlay_sees_its_allocations_and_the_view_stays_as_it_was():
    view = view_of(cluster("a", pool("x", nodes=1)))
    p = view.pool("a", "x")
    overlay = CapacityOverlay(view)
    overlay.take(p, [NodeAllocation("a-x-0", gpus=6)])
    assert overlay.capacity(p).whole_gpus_free == 2
    assert p.capacity.whole_gpus_free == 8
    assert overlay.version == 1


def test_snapshot_is_a_new_view_sharing_untouched_clusters():
    view = view_of(cluster("a", pool("x", nodes=1)), cluster("b"))
    overlay = CapacityOverlay(view)
    overlay.take(view.pool("a", "x"), [NodeAllocation("a-x-0", gpus=8)])
    snap = overlay.snapshot()
    assert snap.pool("a", "x").capacity.whole_gpus_free == 0
    assert snap.cluster("b") is view.cluster("b")
    assert view.pool("a", "x").capacity.whole_gpus_free == 8


def test_give_back_restores_capacity():
    view = view_of(cluster("a", pool("x", nodes=1)))
    p = view.pool("a", "x")
    overlay = CapacityOverlay(view)
    overlay.take(p, [NodeAllocation("a-x-0", gpus=8)])
    overlay.give_back(p, [NodeAllocation("a-x-0", gpus=8)])
    assert overlay.capacity(p).whole_gpus_free == 8
