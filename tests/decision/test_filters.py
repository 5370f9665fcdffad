"""Every filter and its stable reason code: one minimal fleet per case, one request asked alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from airflow_mcsched.access.profiles import ClusterState, WorkKind
from airflow_mcsched.decision import Outcome, Policy, Reason, decide
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


@dataclass
class Case:
    reason: Reason
    profile: object
    request: dict
    observe: dict = field(default_factory=dict)
    policy: Policy = DEFAULT_POLICY
    reservations: list = field(default_factory=list)
    pool: str | None = "gpu"
    words: str = ""


CASES = {
    "cordoned": Case(
        Reason.CLUSTER_CORDONED, cluster("a", pool(), state=ClusterState.CORDONED), {"gpus": 1}, pool=None
    ),
    "maintenance": Case(
        Reason.CLUSTER_CORDONED, cluster("a", pool(), state=ClusterState.MAINTENANCE), {"gpus": 1}, pool=None
    ),
    "unhealthy": Case(
        Reason.CLUSTER_UNHEALTHY, cluster("a", pool()), {"gpus": 1}, {"error": "401 Unauthorized"}, pool=None
    ),
    "stale": Case(
        Reason.CLUSTER_STALE, cluster("a", pool()), {"gpus": 1}, {"at": NOW - timedelta(minutes=10)}, pool=None
    ),
    "avoided cluster": Case(
        Reason.FAILURE_DOMAIN_EXCLUDED, cluster("a", pool()), {"gpus": 1, "avoid_clusters": ["a"]}, pool=None
    ),
    "avoided domain": Case(
        Reason.FAILURE_DOMAIN_EXCLUDED,
        cluster("a", pool(), region="eu", zone="z1"),
        {"gpus": 1, "avoid_failure_domains": ["eu/z1"]},
        pool=None,
    ),
    "domain not allowed": Case(
        Reason.FAILURE_DOMAIN_EXCLUDED, cluster("a", pool()), {"gpus": 1, "failure_domains": ["us/z9"]}, pool=None
    ),
    "spread group member there": Case(
        Reason.FAILURE_DOMAIN_EXCLUDED,
        cluster("a", pool()),
        {"gpus": 1, "spread_group": "svc"},
        reservations=[reservation("old", "a", "gpu", "a-gpu-0", spread_group="svc")],
        pool=None,
        words="spread group svc",
    ),
    "not suited (hard)": Case(
        Reason.NOT_SUITED_FOR_WORK,
        cluster("a", pool(), suited_for=[WorkKind.INFERENCE]),
        {"gpus": 1, "kind": "training"},
        policy=Policy(work_kind_is_hard=True),
        pool=None,
    ),
    "data far away": Case(
        Reason.DATA_FAR_AWAY,
        cluster("a", pool(), data={"ingress_gbps": 10}),
        {"gpus": 1, "data": [{"location": "s3://far/x", "size_gib": 1000}]},
        policy=Policy(max_staging_seconds=60),
        pool=None,
        words="859s",
    ),
    "no matching type": Case(Reason.NO_MATCHING_GPU_TYPE, cluster("a", pool()), {"gpus": 1, "gpu_types": ["H100"]}),
    "cpu pool for gpu work": Case(
        Reason.NO_MATCHING_GPU_TYPE, cluster("a", pool("cpu", gpu_type=None)), {"gpus": 1}, pool="cpu"
    ),
    "gpu memory": Case(
        Reason.INSUFFICIENT_GPU_MEMORY,
        cluster("a", pool(gpu_type="L4", gpu_memory_gib=24)),
        {"gpus": 1, "min_gpu_memory_gib": 40},
    ),
    "no sharing": Case(Reason.NO_GPU_SHARING, cluster("a", pool()), {"gpu_milli": 500}),
    "no rdma": Case(Reason.NO_RDMA, cluster("a", pool(interconnect=["ethernet"])), {"gpus": 8, "needs_rdma": True}),
    "slow storage": Case(
        Reason.SLOW_STORAGE, cluster("a", pool(storage_gbps=1)), {"gpus": 1, "needs_fast_storage": True}
    ),
    "cost ceiling": Case(
        Reason.COST_CEILING, cluster("a", pool(price_per_gpu_hour=2.0)), {"gpus": 8, "max_cost_per_hour": 10}
    ),
    "pod larger than nodes": Case(Reason.DOES_NOT_FIT_ON_ONE_NODE, cluster("a", pool()), {"gpus": 16}),
    "two nodes of 4 do not make 8": Case(
        Reason.DOES_NOT_FIT_ON_ONE_NODE, cluster("a", pool()), {"gpus": 8}, {"free": {"gpu": [4, 4]}}
    ),
    "all gpus kept for a class": Case(
        Reason.RESERVED_FOR_PRIORITY,
        cluster("a", pool(), reserved=[{"gpu_type": "A100", "priority_classes": ["critical"]}]),
        {"gpus": 1},
    ),
    "some gpus kept for a team": Case(
        Reason.RESERVED_FOR_PRIORITY,
        cluster("a", pool(), reserved=[{"gpu_type": "A100", "gpus": 8, "teams": ["prod"]}]),
        {"gpus": 8, "pods": 2},
    ),
    "quota": Case(
        Reason.QUOTA_EXCEEDED,
        cluster("a", pool()),
        {"gpus": 8},
        policy=Policy(quotas=[{"team": "ml", "nominal": {"A100": 4}}]),
    ),
    "no free gpus": Case(Reason.INSUFFICIENT_FREE_GPUS, cluster("a", pool()), {"gpus": 1}, {"free": {"gpu": [0, 0]}}),
    "no gpu with that share": Case(
        Reason.INSUFFICIENT_FREE_GPUS,
        cluster("a", pool(gpu_sharing=True, gpus_per_node=2)),
        {"gpu_milli": 600},
        {"shares": {"gpu": [[500, 0], [300, 100]]}},
    ),
    "gang": Case(
        Reason.GANG_DOES_NOT_FIT, cluster("a", pool(nodes=3)), {"gpus": 3, "pods": 3}, {"free": {"gpu": [4, 4, 1]}}
    ),
    "cpu": Case(Reason.INSUFFICIENT_CPU, cluster("a", pool(cpu_per_node=64)), {"gpus": 1, "cpu": 100}),
    "cpu on the node with the gpus": Case(
        Reason.INSUFFICIENT_CPU,
        cluster("a", pool()),
        {"gpus": 8, "cpu": 16},
        {"free": {"gpu": [8, 0]}, "cpu_free": {"gpu": [2, 64]}},
    ),
    "memory": Case(
        Reason.INSUFFICIENT_MEMORY, cluster("a", pool(memory_gib_per_node=256)), {"gpus": 1, "memory_gib": 1000}
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_filter_rejects_with_its_reason(case: Case):
    view = view_of((case.profile, observe(case.profile, **case.observe)))
    decision = decide_one(view, request(**case.request), case.reservations, case.policy)
    assert decision.outcome is Outcome.WAITING
    rejection = decision.rejection("a", case.pool)
    assert rejection is not None, decision.rejections
    assert rejection.reason is case.reason, rejection
    assert (rejection.pool is None) == (case.pool is None)
    assert rejection.message
    assert case.words in rejection.message


def test_entitled_requests_use_reserved_gpus():
    profile = cluster("a", pool(), reserved=[{"gpu_type": "A100", "priority_classes": ["critical"]}])
    decision = decide_one(view_of(profile), request(gpus=1, priority_class="critical"))
    assert decision.outcome is Outcome.ADMITTED


def test_gpus_kept_for_others_count_what_entitled_work_already_holds():
    """8 A100 kept for team prod, prod already holds 8 of them: the rest is free for everyone."""
    profile = cluster("a", pool(), reserved=[{"gpu_type": "A100", "gpus": 8, "teams": ["prod"]}])
    view = view_of((profile, observe(profile, free={"gpu": [0, 8]}, seen=["rsv-p"])))
    held = [reservation("p", "a", "gpu", "a-gpu-0", gpus=8, team="prod")]
    assert decide_one(view, request(gpus=8), held).outcome is Outcome.ADMITTED
    assert decide_one(view, request(gpus=8), []).outcome is Outcome.WAITING


def test_gpus_kept_for_others_follow_the_entitled_work_the_cycle_grants():
    """8 A100 kept for team prod: a request of ml for all 16 is refused them; prod's request then takes
    8, which count toward the kept ones, so ml's next request of the same cycle may take the other 8
    (what is kept for others is worked out once per cycle while the running work is unchanged)."""
    profile = cluster("a", pool(), reserved=[{"gpu_type": "A100", "gpus": 8, "teams": ["prod"]}])
    queue = [
        request("ml-all", gpus=8, pods=2, arrival=NOW - timedelta(minutes=3)),
        request("prod", gpus=8, team="prod", arrival=NOW - timedelta(minutes=2)),
        request("ml-half", gpus=8, arrival=NOW - timedelta(minutes=1)),
    ]
    result = decide(view_of(profile), queue, [], Policy(backfill=False), NOW)
    outcomes = {d.request_id: d.outcome for d in result.decisions}
    assert outcomes == {"ml-all": Outcome.WAITING, "prod": Outcome.ADMITTED, "ml-half": Outcome.ADMITTED}
    assert result.decision("ml-all").rejection("a", "gpu").reason is Reason.RESERVED_FOR_PRIORITY


def test_cpu_only_work_may_use_any_pool():
    decision = decide_one(view_of(cluster("a", pool())), request(cpu=4))
    assert decision.outcome is Outcome.ADMITTED
