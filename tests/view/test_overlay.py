"""Tentative allocations: the overlay changes what the engine sees, never the view itself."""

from __future__ import annotations

import pytest

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


def test_a_deferred_change_is_worked_out_once_and_only_when_the_pool_is_read():
    view = view_of(cluster("a", pool("x", nodes=1), pool("y", nodes=1)))
    x, y = view.pool("a", "x"), view.pool("a", "y")
    calls = []

    def take_six(p):
        def compute():
            calls.append(p.name)
            return p.capacity.take([NodeAllocation(f"a-{p.name}-0", gpus=6)])

        return compute

    overlay = CapacityOverlay(view)
    overlay.defer(x, take_six(x))
    overlay.defer(y, take_six(y))
    assert calls == [] and overlay.version == 2
    assert overlay.capacity(x).whole_gpus_free == 2
    assert overlay.capacity(x).whole_gpus_free == 2
    assert calls == ["x"]
    overlay.take(y, [NodeAllocation("a-y-0", gpus=1)])  # builds on the deferred change
    assert overlay.capacity(y).whole_gpus_free == 1
    assert overlay.snapshot().pool("a", "x").capacity.whole_gpus_free == 2


def test_only_an_untouched_pool_can_be_deferred():
    view = view_of(cluster("a", pool("x", nodes=1)))
    x = view.pool("a", "x")
    overlay = CapacityOverlay(view)
    overlay.take(x, [NodeAllocation("a-x-0", gpus=1)])
    with pytest.raises(ValueError, match="has changed already"):
        overlay.defer(x, lambda: x.capacity)
