"""The circuit breaker's logic, driven by tables of reads (True = good read, False = failed read)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_mcsched.access.breaker import Breaker, BreakerSettings, BreakerState

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
SETTINGS = BreakerSettings(failures_to_open=3, cool_down=timedelta(seconds=30), successes_to_close=3)
ROUND = timedelta(seconds=10)


def replay(reads: str) -> tuple[Breaker, datetime]:
    """Apply reads ('+' good, '-' failed) one round apart; an open breaker skips its rounds (no read)."""
    breaker, now = Breaker(), T0
    for read in reads:
        if breaker.may_read(now, SETTINGS):
            breaker = breaker.after_read(read == "+", now, SETTINGS)
        now += ROUND
    return breaker, now


@pytest.mark.parametrize(
    ("reads", "state"),
    [
        ("", BreakerState.CLOSED),
        ("--", BreakerState.CLOSED),  # below the threshold: unhealthy reads, but no breaker
        ("---", BreakerState.OPEN),
        ("--+-", BreakerState.OPEN),  # one good read does not forgive earlier failures
        ("-+-+-", BreakerState.OPEN),  # flapping adds up
        ("--+++-", BreakerState.CLOSED),  # three good reads in a row forgave the failures
        ("+++++", BreakerState.CLOSED),
    ],
)
def test_failures_open_the_breaker_unless_forgiven_by_a_run_of_good_reads(reads, state):
    breaker, now = replay(reads)
    assert breaker.state(now - ROUND, SETTINGS) is state


@pytest.mark.parametrize(
    ("after_open", "may_read", "state"),
    [
        (timedelta(0), False, BreakerState.OPEN),
        (timedelta(seconds=29), False, BreakerState.OPEN),
        (timedelta(seconds=30), True, BreakerState.HALF_OPEN),
        (timedelta(hours=1), True, BreakerState.HALF_OPEN),
    ],
)
def test_an_open_breaker_sends_no_reads_until_the_cool_down_has_passed(after_open, may_read, state):
    opened = Breaker(failures=3, opened_at=T0)
    assert opened.may_read(T0 + after_open, SETTINGS) is may_read
    assert opened.state(T0 + after_open, SETTINGS) is state


@pytest.mark.parametrize(
    ("probes", "state", "failures", "successes"),
    [
        ("+", BreakerState.HALF_OPEN, 3, 1),
        ("++", BreakerState.HALF_OPEN, 3, 2),
        ("+++", BreakerState.CLOSED, 0, 3),
        ("-", BreakerState.OPEN, 4, 0),  # a failed probe opens it again for another cool-down
        ("++-", BreakerState.OPEN, 4, 0),
    ],
)
def test_half_open_probes_close_it_only_after_a_run_of_good_reads(probes, state, failures, successes):
    breaker, now = Breaker(failures=3, opened_at=T0 - SETTINGS.cool_down), T0
    for probe in probes:
        breaker = breaker.after_read(probe == "+", now, SETTINGS)
    assert (breaker.state(now, SETTINGS), breaker.failures, breaker.successes) == (state, failures, successes)


def test_a_flapping_cluster_stays_open_until_it_has_a_run_of_good_reads():
    """Alternating reads, probed once per cool-down: every bad probe re-opens it."""
    breaker, now = replay("---")
    for probe in "+-+-+-":
        now = breaker.opened_at + SETTINGS.cool_down if breaker.opened_at else now
        breaker = breaker.after_read(probe == "+", now, SETTINGS)
        assert breaker.state(now, SETTINGS) is not BreakerState.CLOSED
    for _ in range(3):
        breaker = breaker.after_read(True, now, SETTINGS)
    assert breaker.state(now, SETTINGS) is BreakerState.CLOSED


@pytest.mark.parametrize(
    ("breaker", "words"),
    [
        (Breaker(), None),
        (Breaker(failures=3, opened_at=T0), "circuit breaker open since 12:00:00 after 3 failed reads"),
        (Breaker(failures=3, successes=1, opened_at=T0 - timedelta(minutes=5)), "half-open"),
    ],
)
def test_the_explanation_says_the_breaker_is_open_and_what_closes_it(breaker, words):
    text = breaker.explanation(T0, SETTINGS)
    if words is None:
        assert text is None
    else:
        assert words in text and "closes after 3 good reads in a row" in text
