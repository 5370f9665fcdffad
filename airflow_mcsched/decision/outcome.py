"""What the engine answers, each outcome with its explanation: "why is my step still pending" has an answer."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from airflow_mcsched.decision.reasons import Reason
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.frozen_init import quick_init


class Outcome(StrEnum):
    ADMITTED = "admitted"
    WAITING = "waiting"
    PREEMPTING = "preempting"


@quick_init
@dataclass(frozen=True, slots=True)
class Rejection:
    """One cluster (pool None) or one node pool that cannot take the request, and why.

    `lasting` rejections come from what the cluster or pool is (its state, GPU type, node size...),
    not from what is free now: waiting for running work to end will not lift them.
    """

    cluster: str
    pool: str | None
    reason: Reason
    message: str
    lasting: bool = False

    def __str__(self) -> str:
        where = self.cluster if self.pool is None else f"{self.cluster}/{self.pool}"
        return f"{where}: {self.reason}: {self.message}"


class ScorePart(NamedTuple):
    """One score plugin's say: `value` in [0, 1] (higher is better), its weight, and the raw figures.

    A named tuple, not a dataclass: every admission makes a few dozen of them.
    """

    name: str
    value: float
    weight: float
    detail: tuple[tuple[str, float | str | bool], ...] = ()

    @property
    def weighted(self) -> float:
        return self.value * self.weight


@quick_init
@dataclass(frozen=True, slots=True)
class ScoredCandidate:
    """A node pool that can take the request now: where exactly, at what price, and its score's parts."""

    cluster: str
    pool: str
    score: float
    parts: tuple[ScorePart, ...]
    price_per_gpu_hour: float
    pods: tuple[NodeAllocation, ...]

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.node for a in self.pods))

    def part(self, name: str) -> ScorePart:
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(name)


@quick_init
@dataclass(frozen=True, slots=True)
class Victim:
    """Running work to stop so a request can start, and the reason it is chosen."""

    reservation_id: str
    request_id: str
    team: str
    cluster: str
    pool: str
    reason: Reason
    message: str
    for_request: str


@quick_init
@dataclass(frozen=True, slots=True)
class ReclaimedLease:
    """A lease that lapsed: its capacity is free again for the view's next reads."""

    reservation_id: str
    request_id: str
    cluster: str
    pool: str
    reason: Reason
    message: str


@quick_init
@dataclass(frozen=True, slots=True)
class PlacementDecision:
    """The engine's answer for one request. ADMITTED carries `placement` and a new `reservation`;
    WAITING carries a rejection per cluster or pool; PREEMPTING names its `victims`."""

    request_id: str
    outcome: Outcome
    reason: Reason
    summary: str
    placement: ScoredCandidate | None = None
    runners_up: tuple[ScoredCandidate, ...] = ()
    rejections: tuple[Rejection, ...] = ()
    victims: tuple[Victim, ...] = ()
    reservation: Reservation | None = None
    expected_start: datetime | None = None

    @property
    def cluster(self) -> str | None:
        return None if self.placement is None else self.placement.cluster

    @property
    def pool(self) -> str | None:
        return None if self.placement is None else self.placement.pool

    @property
    def nodes(self) -> tuple[str, ...]:
        return () if self.placement is None else self.placement.nodes

    def rejection(self, cluster: str, pool: str | None = None) -> Rejection | None:
        """Why this cluster (or pool of it) was not chosen; cluster-wide rejections cover every pool."""
        for r in self.rejections:
            if r.cluster == cluster and (r.pool is None or pool is None or r.pool == pool):
                return r
        return None


@quick_init
@dataclass(frozen=True, slots=True)
class AdmissionResult:
    """One admission cycle: a decision per request (queue order), grants, lapsed leases, work to stop."""

    decisions: tuple[PlacementDecision, ...]
    reservations: tuple[Reservation, ...]
    reclaimed: tuple[ReclaimedLease, ...]
    preemptions: tuple[Victim, ...]

    def decision(self, request_id: str) -> PlacementDecision:
        for d in self.decisions:
            if d.request_id == request_id:
                return d
        raise KeyError(f"no decision for request {request_id!r}")

    def admitted(self) -> tuple[PlacementDecision, ...]:
        return tuple(d for d in self.decisions if d.outcome is Outcome.ADMITTED)
