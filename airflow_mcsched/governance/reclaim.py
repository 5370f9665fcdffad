"""Which reservations hold capacity for nothing and are to be reclaimed, and why.

Two kinds: a lease that expired (nobody renewed it; the engine frees it in every admission
cycle), and a reservation held longer than the policy's `idle_reservation_seconds` whose pod
never started: it was admitted, but neither the task reported its pod's start nor does the
cluster's last read show the pod. Both free their GPUs for the queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from airflow_mcsched.decision import Reason, Reservation
from airflow_mcsched.view import GlobalView

RECLAIM_ACTOR = "mcsched-reclaim"
"""The audit trail's actor for every reclaim, whichever process ran the cycle."""


@dataclass(frozen=True, slots=True)
class HeldReservation:
    """An active reservation and whether its placement's pod was reported started."""

    reservation: Reservation
    started: bool


class ReclaimCandidate(BaseModel):
    model_config = ConfigDict(frozen=True)

    placement_id: str
    reservation_id: str
    team: str
    cluster: str
    pool: str
    gpu_type: str | None
    gpus: float
    reason: Reason
    message: str
    granted_at: datetime
    held_seconds: float


def _candidate(r: Reservation, reason: Reason, message: str, now: datetime) -> ReclaimCandidate:
    return ReclaimCandidate(
        placement_id=r.request_id,
        reservation_id=r.id,
        team=r.team,
        cluster=r.cluster,
        pool=r.pool,
        gpu_type=r.gpu_type,
        gpus=r.gpu_equivalent,
        reason=reason,
        message=message,
        granted_at=r.granted_at,
        held_seconds=round((now - r.granted_at).total_seconds(), 1),
    )


def is_idle(held: HeldReservation, view: GlobalView, now: datetime, idle_after: timedelta | None) -> bool:
    """Held at least `idle_after` and its pod neither reported started nor seen by the cluster (an
    expired lease is the engine's to reclaim, under its own reason)."""
    r = held.reservation
    return (
        idle_after is not None
        and not held.started
        and not r.is_expired(now)
        and now - r.granted_at >= idle_after
        and r.preempted_by is None
        and not r.pod_alive(view)
    )


def idle_message(r: Reservation, idle_after: timedelta) -> str:
    return (
        f"held {r.gpu_equivalent:g} GPUs since {r.granted_at.isoformat()} and its pod never started "
        f"(limit idle_reservation_seconds={idle_after.total_seconds():g}); capacity is free again"
    )


def find_reclaimable(
    held: Iterable[HeldReservation], view: GlobalView, now: datetime, idle_after: timedelta | None
) -> list[ReclaimCandidate]:
    """Expired leases and idle reservations, longest held first."""
    out = []
    for h in held:
        r = h.reservation
        if r.is_expired(now):
            out.append(_candidate(r, Reason.LEASE_EXPIRED, f"lease ended at {r.expires_at.isoformat()}", now))
        elif is_idle(h, view, now, idle_after):
            out.append(_candidate(r, Reason.IDLE_RESERVATION, idle_message(r, idle_after), now))  # type: ignore[arg-type]
    return sorted(out, key=lambda c: (-c.held_seconds, c.reservation_id))
