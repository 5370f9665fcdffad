"""Admission order: priority class, then the team's use against its share, then arrival.

Use is re-read as the cycle grants, so one team's burst does not go first just because it
arrived first: teams take turns by how far below their share they are. A request that has waited
longer than the policy's `aging_seconds` goes ahead of the others of its priority class (oldest
first), whatever its team's use: it is decided first, so if it still cannot start, backfill holds
room for it before anything that arrived later (a stream of new requests from teams below their
share would otherwise keep taking the hold, and a large request would starve).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta

from airflow_mcsched.decision.policy import Policy
from airflow_mcsched.decision.request import PlacementRequest

UNKNOWN_PRIORITY = -(2**62)


def admission_order(
    queue: Sequence[PlacementRequest],
    policy: Policy,
    use_against_share: Callable[[str], float],
    now: datetime | None = None,
) -> Iterator[PlacementRequest]:
    """Yield requests one at a time; the next pick reads `use_against_share` after the previous decision.

    Requests with an unknown priority class come last (they are then told why they wait). Without
    `now`, nothing is aged.
    """
    aged_before = None
    if now is not None and policy.aging_seconds is not None:
        aged_before = now - timedelta(seconds=policy.aging_seconds)

    def priority(r: PlacementRequest) -> int:
        value = policy.priority_of(r.priority_class)
        return UNKNOWN_PRIORITY if value is None else value

    by_team: dict[str, list[tuple[int, datetime, str, PlacementRequest]]] = defaultdict(list)
    for r in queue:
        by_team[r.team].append((-priority(r), r.arrival, r.id, r))
    for pending in by_team.values():
        pending.sort(key=lambda t: t[:3])
        pending.reverse()  # pop() from the end takes the first in order

    def key(team: str) -> tuple:
        neg_priority, arrival, rid, _ = by_team[team][-1]
        if aged_before is not None and arrival <= aged_before:
            return (neg_priority, 0, arrival, rid)  # waited long enough: by arrival, ahead of the rest
        return (neg_priority, 1, use_against_share(team), arrival, rid)

    if len(by_team) == 1:  # one team: nothing to weigh against
        for pending in by_team.values():
            while pending:
                yield pending.pop()[3]
        return
    heap = [(key(team), team) for team in by_team]
    heapq.heapify(heap)
    while heap:
        _, team = heapq.heappop(heap)
        pending = by_team[team]
        yield pending.pop()[3]
        if pending:
            heapq.heappush(heap, (key(team), team))
