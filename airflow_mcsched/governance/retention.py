"""How long placement history and the audit trail are kept: ages as operators write them, and the
cutoffs they give at one instant.

History is kept forever unless an age is set. Placement rows are the lineage and the source of
the cost reports, so a report covers only what is kept; the audit trail is the governance record
and has an age of its own (often longer, or none). Work that is still queued, admitted or running
is never purged, however old: only placements in a final state age out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

_AGE = re.compile(r"\s*([0-9]+)\s*([smhdw])\s*")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
MIN_AGE = timedelta(hours=1)
"""Younger than this, a purge could drop rows a task still reads (a sensor's handover, a retry)."""


def parse_age(text: str, field: str) -> timedelta:
    """'90d', '12h', '2w', '30m' or '3600s' as a timedelta of at least `MIN_AGE`; a ValueError that
    names `field` and the fix otherwise."""
    match = _AGE.fullmatch(text or "")
    if match is None:
        raise ValueError(
            f"{field} is {text!r}; write a whole number and a unit: s, m, h, d or w (for example 90d or 12h)"
        )
    age = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    if age < MIN_AGE:
        raise ValueError(f"{field} is {text!r}; keep history at least 1h (a task may still read its placement)")
    return age


def describe_age(age: timedelta) -> str:
    """An age in the largest unit it is a whole number of: '180 days', '2 weeks', '1 hour'."""
    seconds = int(age.total_seconds())
    for unit, size in (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


@dataclass(frozen=True)
class Retention:
    """Ages after which final placements and audit entries are purged; None keeps them forever."""

    placements: timedelta | None = None
    audit: timedelta | None = None

    @property
    def purges_anything(self) -> bool:
        return self.placements is not None or self.audit is not None

    def cutoffs(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """(placements that ended before it go, audit entries made before it go), None for kept forever."""
        return (
            None if self.placements is None else now - self.placements,
            None if self.audit is None else now - self.audit,
        )
