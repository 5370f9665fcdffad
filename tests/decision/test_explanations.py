"""Every outcome carries its explanation: "why is my step still pending" always has an answer."""

from __future__ import annotations

import subprocess
import sys

from airflow_mcsched.access.profiles import ClusterState
from airflow_mcsched.decision import Outcome, Reason
from tests.decision.fleet_factory import cluster, decide_one, observe, pool, request, view_of


def mixed_fleet():
    busy = cluster("busy", pool("a100"), pool("t4", gpu_type="T4", gpus_per_node=4, nodes=1))
    return view_of(
        (busy, observe(busy, free={"a100": [2, 0]})),
        cluster("closed", pool("a100"), state=ClusterState.CORDONED),
        cluster("small", pool("l4", gpu_type="L4", gpus_per_node=4, nodes=1)),
    )


def test_waiting_names_a_reason_for_every_cluster_or_pool():
    d = decide_one(mixed_fleet(), request(gpus=8, gpu_types=("A100", "L4")))
    assert d.outcome is Outcome.WAITING
    by_place = {(r.cluster, r.pool): r.reason for r in d.rejections}
    assert by_place == {
        ("busy", "a100"): Reason.INSUFFICIENT_FREE_GPUS,
        ("busy", "t4"): Reason.NO_MATCHING_GPU_TYPE,
        ("closed", None): Reason.CLUSTER_CORDONED,
        ("small", "l4"): Reason.DOES_NOT_FIT_ON_ONE_NODE,
    }
    assert d.reason is Reason.WAITING_FOR_CAPACITY
    assert "1 x InsufficientFreeGpus" in d.summary and "1 x ClusterCordoned" in d.summary


def test_waiting_for_something_no_wait_will_fix_says_so():
    d = decide_one(mixed_fleet(), request(gpus=1, gpu_types=("H100",)))
    assert d.reason is Reason.NO_FEASIBLE_CLUSTER
    assert all(r.lasting for r in d.rejections)


def test_a_waiting_sentence_said_again_names_its_own_start_and_deadline():
    """The first sentence of a waiting request is kept by reason, demand and tally (`explain._NOWHERE`);
    what follows it is each request's own: a start held for it, a deadline it will miss."""
    from datetime import UTC, datetime, timedelta

    from airflow_mcsched.decision import explain
    from airflow_mcsched.decision.demand import Demand

    d = decide_one(mixed_fleet(), request(gpus=8, gpu_types=("A100", "L4")))
    demand, at = Demand(1, 8, 0, 1000, 4096), datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    plain = explain.waiting(d.reason, demand, d.rejections)
    held = explain.waiting(d.reason, demand, d.rejections, at, at, at + timedelta(hours=1))
    assert held.startswith(plain) and "Expected to start by 2026-01-05T12:00:00+00:00" in held
    assert "will miss its deadline" in held
    assert explain.waiting(d.reason, demand, d.rejections) == plain  # nothing of the other kept
    other = explain.waiting(Reason.NO_FEASIBLE_CLUSTER, demand, d.rejections)
    assert other != plain and other.startswith(f"Waiting ({Reason.NO_FEASIBLE_CLUSTER})")


def test_admitted_names_pool_nodes_price_score_parts_and_runners_up():
    d = decide_one(mixed_fleet(), request(gpus=1))
    assert d.outcome is Outcome.ADMITTED and d.reason is Reason.ADMITTED
    assert (d.cluster, d.pool, d.nodes) == (d.reservation.cluster, d.reservation.pool, d.reservation.nodes)
    assert d.placement.price_per_gpu_hour == 2.0
    assert {p.name for p in d.placement.parts} >= {"price", "fragmentation", "load", "suitability"}
    assert all(p.detail for p in d.placement.parts)
    assert [(c.cluster, c.pool) for c in d.runners_up] == [("busy", "t4"), ("small", "l4")]
    assert all(c.score <= d.placement.score for c in d.runners_up)
    assert d.cluster in d.summary and "runners-up" in d.summary


def test_admitted_also_names_every_cluster_and_pool_ruled_out():
    d = decide_one(mixed_fleet(), request(gpus=1, gpu_types=("A100",)))
    assert d.outcome is Outcome.ADMITTED and (d.cluster, d.pool) == ("busy", "a100")
    assert {(r.cluster, r.pool): r.reason for r in d.rejections} == {
        ("busy", "t4"): Reason.NO_MATCHING_GPU_TYPE,
        ("closed", None): Reason.CLUSTER_CORDONED,
        ("small", "l4"): Reason.NO_MATCHING_GPU_TYPE,
    }


def test_decision_is_per_node_pool():
    d = decide_one(mixed_fleet(), request(gpus=4, gpu_types=("T4",)))
    assert (d.cluster, d.pool) == ("busy", "t4")


def test_engine_imports_nothing_from_airflow_fastapi_sqlalchemy_or_kubernetes():
    code = (
        "import sys, airflow_mcsched.decision, airflow_mcsched.view;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'airflow', 'fastapi', 'sqlalchemy', 'kubernetes'});"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
