"""What a placement's state means to a step waiting for it: go, wait (and why), or give up.

The trigger, the sensor and the operator's synchronous wait all read a placement the same way,
so "why is my step still pending" gets the same answer in every mode.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from airflow.sdk.exceptions import AirflowException

from airflow_mcsched.service.schemas import PlacementOut, PlacementState

# Rejections that heal by themselves (a cluster comes back, a read gets fresh, a cordon is lifted):
# a request turned down only for lasting reasons other than these can never be placed.
HEALABLE_REASONS = frozenset({"ClusterUnhealthy", "ClusterStale", "ClusterCordoned"})
HOPELESS_REQUEST_REASONS = frozenset({"UnknownPriorityClass"})
MAX_REJECTIONS_SHOWN = 8


class Admission(StrEnum):
    ADMITTED = "admitted"  # capacity is reserved: launch now
    WAITING = "waiting"  # still queued; the explanation says why
    UNPLACEABLE = "unplaceable"  # no cluster can ever take it as asked
    ENDED = "ended"  # cancelled, failed or expired before it was used


def judge(placement: PlacementOut) -> Admission:
    if placement.state is PlacementState.ADMITTED:
        return Admission.ADMITTED
    if placement.state is not PlacementState.PENDING:
        return Admission.ENDED
    return Admission.UNPLACEABLE if _hopeless(placement) else Admission.WAITING


def _hopeless(placement: PlacementOut) -> bool:
    explanation = placement.explanation
    if explanation is None:
        return False
    if explanation.reason in HOPELESS_REQUEST_REASONS:
        return True
    rejections = explanation.rejections
    return (
        explanation.reason == "NoFeasibleCluster"
        and bool(rejections)
        and all(r.lasting and r.reason not in HEALABLE_REASONS for r in rejections)
    )


def why_waiting(placement: PlacementOut) -> str:
    """One line: the decision's summary, then each rejected cluster or pool with its reason."""
    explanation = placement.explanation
    if explanation is None:
        return "not decided yet (the next admission cycle takes it)"
    parts = [explanation.summary or explanation.reason]
    for r in explanation.rejections[:MAX_REJECTIONS_SHOWN]:
        where = r.cluster if r.pool is None else f"{r.cluster}/{r.pool}"
        parts.append(f"{where}: {r.reason} ({r.message})")
    hidden = len(explanation.rejections) - MAX_REJECTIONS_SHOWN
    if hidden > 0:
        parts.append(f"... and {hidden} more")
    return "; ".join(parts)


class PlacementNotGranted(AirflowException):
    """The step got no capacity: the placement ended, can never be placed, or the wait timed out."""


def refusal(placement: PlacementOut, verdict: Admission | str) -> PlacementNotGranted:
    if verdict == Admission.UNPLACEABLE:
        return PlacementNotGranted(
            f"placement {placement.id} can never be admitted as asked: {why_waiting(placement)}. "
            "Change the request (GPU types, memory, RDMA, priority class ...) or the fleet."
        )
    if verdict == Admission.ENDED:
        return PlacementNotGranted(
            f"placement {placement.id} is {placement.state.value} before the step could use it: "
            f"{placement.end_reason or why_waiting(placement)}"
        )
    return PlacementNotGranted(
        f"placement {placement.id} was not admitted in time; last word: {why_waiting(placement)}"
    )


def event_for(placement: PlacementOut, verdict: Admission | str) -> dict[str, Any]:
    """The trigger's event payload: JSON only, enough for the resumed task to act on."""
    return {
        "status": str(verdict),
        "placement_id": placement.id,
        "state": placement.state.value,
        "cluster": placement.cluster,
        "message": why_waiting(placement) if verdict != Admission.ADMITTED else "admitted",
    }


def granted_placement_id(event: dict[str, Any]) -> str:
    """The placement id of an `admitted` event; any other event becomes the task's error."""
    if event.get("status") == Admission.ADMITTED:
        return str(event["placement_id"])
    raise PlacementNotGranted(
        f"placement {event.get('placement_id')} was not granted ({event.get('status')}): {event.get('message')}"
    )
