"""Report windows: what people type, what is refused (naming the field), and how days are cut."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from airflow_mcsched.governance.window import ReportParamError, TimeWindow, parse_instant

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-01", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T06:30:00Z", datetime(2026, 1, 1, 6, 30, tzinfo=UTC)),
        ("2026-01-01T08:30:00+02:00", datetime(2026, 1, 1, 6, 30, tzinfo=UTC)),
        ("2026-01-01T06:30", datetime(2026, 1, 1, 6, 30, tzinfo=UTC)),  # naive = UTC
        ("now", NOW),
        ("7d", NOW - timedelta(days=7)),
        ("12h", NOW - timedelta(hours=12)),
        ("90m", NOW - timedelta(minutes=90)),
        ("2w", NOW - timedelta(weeks=2)),
    ],
)
def test_instants_people_type(text, expected):
    assert parse_instant(text, "since", NOW) == expected


def test_a_bad_instant_names_the_field_and_the_forms_it_takes():
    with pytest.raises(ReportParamError, match=r"^until: 'yesterday' is not a time; use ISO 8601") as err:
        parse_instant("yesterday", "until", NOW)
    assert err.value.field == "until"


def test_defaults_are_the_last_seven_days():
    window = TimeWindow.parse(None, None, NOW)
    assert (window.since, window.until) == (NOW - timedelta(days=7), NOW)


def test_since_after_until_is_refused():
    with pytest.raises(ReportParamError, match=r"since: .* is not before until"):
        TimeWindow.parse("2026-01-05", "2026-01-04", NOW)


def test_overlap_is_clipped_at_both_ends():
    window = TimeWindow(datetime(2026, 1, 5, 10, tzinfo=UTC), datetime(2026, 1, 5, 12, tzinfo=UTC))
    assert window.overlap_hours(datetime(2026, 1, 5, 9, tzinfo=UTC), datetime(2026, 1, 5, 11, tzinfo=UTC)) == 1.0
    assert window.overlap_hours(datetime(2026, 1, 5, 9, tzinfo=UTC), datetime(2026, 1, 5, 13, tzinfo=UTC)) == 2.0
    assert window.overlap_hours(datetime(2026, 1, 5, 12, tzinfo=UTC), datetime(2026, 1, 5, 13, tzinfo=UTC)) == 0.0
    assert window.overlap_hours(None, datetime(2026, 1, 5, 11, tzinfo=UTC)) == 0.0


def test_days_cut_the_window_at_utc_midnight():
    window = TimeWindow(datetime(2026, 1, 5, 20, tzinfo=UTC), datetime(2026, 1, 7, 2, tzinfo=UTC))
    days = [(d, part.hours) for d, part in window.days()]
    assert days == [(date(2026, 1, 5), 4.0), (date(2026, 1, 6), 24.0), (date(2026, 1, 7), 2.0)]
