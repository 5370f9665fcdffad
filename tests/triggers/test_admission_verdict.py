"""What a waiting step makes of its placement: go, wait (saying why), or give up."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from airflow_mcsched.service.schemas import Explanation, PlacementOut, RejectionOut, ResourceAsk, TaskRef
from airflow_mcsched.triggers.admission import Admission, judge, why_waiting


def rejection(reason: str, lasting: bool = True, pool: str | None = "gpu") -> RejectionOut:
    return RejectionOut(cluster="c1", pool=pool, reason=reason, message=f"because {reason}", lasting=lasting)


FULL = rejection("InsufficientFreeGpus", lasting=False)
WRONG_GPU = rejection("NoMatchingGpuType")
DOWN = rejection("ClusterUnhealthy", pool=None)


def placement(state: str = "pending", reason: str = "NoFeasibleCluster", *rejections: RejectionOut) -> PlacementOut:
    explanation = Explanation(outcome="waiting", reason=reason, summary=f"Waiting ({reason})", rejections=rejections)
    return PlacementOut(
        id="p1",
        state=state,
        task=TaskRef(dag_id="d", run_id="r", task_id="t"),
        attempt=1,
        team="ml",
        project=None,
        priority_class=None,
        ask=ResourceAsk(gpus=1),
        queued_at=datetime(2026, 1, 1, tzinfo=UTC),
        explanation=explanation,
    )


@pytest.mark.parametrize(
    ("p", "verdict"),
    [
        (placement("admitted", "Admitted"), Admission.ADMITTED),
        (placement("pending", "WaitingForCapacity", FULL), Admission.WAITING),
        (placement("pending", "NoFeasibleCluster", WRONG_GPU), Admission.UNPLACEABLE),
        (placement("pending", "NoFeasibleCluster", WRONG_GPU, DOWN), Admission.WAITING),  # it may come back
        (placement("pending", "UnknownPriorityClass"), Admission.UNPLACEABLE),
        (placement("cancelled"), Admission.ENDED),
        (placement("expired"), Admission.ENDED),
    ],
)
def test_verdicts(p, verdict):
    assert judge(p) is verdict


def test_why_waiting_names_each_rejected_cluster_or_pool_and_its_reason():
    p = placement(
        "pending", "WaitingForCapacity", rejection("InsufficientFreeGpus"), rejection("ClusterStale", pool=None)
    )
    assert why_waiting(p) == (
        "Waiting (WaitingForCapacity); c1/gpu: InsufficientFreeGpus (because InsufficientFreeGpus); "
        "c1: ClusterStale (because ClusterStale)"
    )
