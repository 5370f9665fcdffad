"""The time window a report covers, and the instants people type for it ("7d", "2026-01-05", ISO).

Reports cover [since, until): a placement that overlaps the window counts only for the part
inside it, so adjacent windows add up to the window that spans both.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

DEFAULT_SPAN = timedelta(days=7)
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_UNIT = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class ReportParamError(ValueError):
    """A report parameter that cannot be used; `field` names it, the message says the fix."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")

    @property
    def message(self) -> str:
        return str(self).split(": ", 1)[1]


def parse_instant(value: str | datetime | None, field: str, now: datetime) -> datetime | None:
    """An aware UTC datetime from ISO text (naive = UTC), a date (midnight UTC), `now`, or an age
    such as `7d`, `12h`, `90m` (that long before `now`); None stays None."""
    if value is None or isinstance(value, datetime):
        return _aware(value) if value is not None else None
    text = value.strip()
    if not text:
        return None
    if text == "now":
        return now
    m = _RELATIVE.match(text)
    try:
        if m:
            return now - timedelta(**{_UNIT[m.group(2)]: float(m.group(1))})
        return _aware(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except OverflowError:  # an age of a million years, or year 1 moved to UTC: not a time we can hold
        raise ReportParamError(field, f"{value[:40]!r} is outside the years 1 to 9999; use a nearer time") from None
    except ValueError:
        raise ReportParamError(
            field,
            f"{value!r} is not a time; use ISO 8601 (2026-01-05 or 2026-01-05T12:00:00Z), 'now', or an age like 7d",
        ) from None


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """[since, until) in UTC."""

    since: datetime
    until: datetime

    def __post_init__(self) -> None:
        if self.since.tzinfo is None or self.until.tzinfo is None:
            raise ReportParamError("since", "times must be timezone-aware (UTC)")
        if self.since >= self.until:
            raise ReportParamError(
                "since", f"{self.since.isoformat()} is not before until={self.until.isoformat()}; swap them"
            )

    @classmethod
    def parse(
        cls, since: str | datetime | None, until: str | datetime | None, now: datetime, span: timedelta = DEFAULT_SPAN
    ) -> TimeWindow:
        """From request parameters: `until` defaults to now, `since` to `span` before `until`."""
        end = parse_instant(until, "until", now) or now
        try:
            start = parse_instant(since, "since", now) or end - span
        except OverflowError:
            raise ReportParamError(
                "until", f"{end.isoformat()} leaves no room for the default window; give since"
            ) from None
        return cls(start, end)

    @property
    def hours(self) -> float:
        return (self.until - self.since).total_seconds() / 3600.0

    def overlap_hours(self, start: datetime | None, end: datetime | None) -> float:
        """Hours of [start, end) inside the window; 0 when either end is missing or they do not meet."""
        if start is None or end is None:
            return 0.0
        lo, hi = max(start, self.since), min(end, self.until)
        return max(0.0, (hi - lo).total_seconds() / 3600.0)

    def until_now(self, now: datetime) -> TimeWindow | None:
        """The part of the window that has happened by `now` (None if it lies wholly ahead)."""
        end = min(self.until, now)
        return TimeWindow(self.since, end) if end > self.since else None

    def days(self) -> Iterator[tuple[date, TimeWindow]]:
        """The window cut at UTC midnights: (day, the part of the window on that day)."""
        day = self.since.date()
        while True:
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            end = start + timedelta(days=1)
            lo, hi = max(start, self.since), min(end, self.until)
            if lo >= self.until:
                return
            yield day, TimeWindow(lo, hi)
            day += timedelta(days=1)
