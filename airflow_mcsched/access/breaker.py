"""A circuit breaker per cluster: stop sending work to (and reading) a cluster whose API keeps failing.

One failed read already makes a cluster unhealthy for that round; the breaker is about clusters
that fail again and again, or flap. After `failures_to_open` failures that were not forgiven
(a failure is forgiven only by `successes_to_close` good reads in a row, so alternating good and
bad reads add up), the breaker opens: the cluster takes no work and is not read. After
`cool_down` it is half-open: one probe read per sync round. A failed probe opens it again for
another cool-down; it closes only after `successes_to_close` good probes in a row. Pure logic on
a small immutable record, so the status store persists it and tests drive it with tables of reads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum


class BreakerState(StrEnum):
    CLOSED = "closed"  # work goes there, every round reads it
    OPEN = "open"  # no work, no reads until the cool-down has passed
    HALF_OPEN = "half-open"  # no work yet; one probe read per round


@dataclass(frozen=True)
class BreakerSettings:
    failures_to_open: int = 3
    cool_down: timedelta = timedelta(seconds=30)
    successes_to_close: int = 3


@dataclass(frozen=True)
class Breaker:
    """What the breaker remembers of a cluster's reads (persisted with its status row)."""

    failures: int = 0  # failures not yet forgiven by `successes_to_close` good reads in a row
    successes: int = 0  # good reads in a row
    opened_at: datetime | None = None  # set while open or half-open

    def state(self, now: datetime, settings: BreakerSettings) -> BreakerState:
        if self.opened_at is None:
            return BreakerState.CLOSED
        return BreakerState.OPEN if now < self.opened_at + settings.cool_down else BreakerState.HALF_OPEN

    def may_read(self, now: datetime, settings: BreakerSettings) -> bool:
        return self.state(now, settings) is not BreakerState.OPEN

    def after_read(self, ok: bool, now: datetime, settings: BreakerSettings) -> Breaker:
        if ok:
            successes = self.successes + 1
            if successes >= settings.successes_to_close:
                return Breaker(failures=0, successes=successes, opened_at=None)
            return replace(self, successes=successes)
        failures = self.failures + 1
        reopen = self.opened_at is not None or failures >= settings.failures_to_open
        return Breaker(failures=failures, successes=0, opened_at=now if reopen else None)

    def explanation(self, now: datetime, settings: BreakerSettings) -> str | None:
        """Why the cluster takes no work, in words for the placement explanation; None when closed."""
        state = self.state(now, settings)
        if state is BreakerState.CLOSED:
            return None
        assert self.opened_at is not None
        needed = f"it closes after {settings.successes_to_close} good reads in a row ({self.successes} so far)"
        if state is BreakerState.OPEN:
            retry = self.opened_at + settings.cool_down
            return (
                f"circuit breaker open since {self.opened_at:%H:%M:%S} after {self.failures} failed reads; "
                f"no reads until {retry:%H:%M:%S}, then {needed}"
            )
        return f"circuit breaker open (half-open: probing with one read per round); {needed}"
