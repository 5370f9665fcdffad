"""The service's `[mcsched]` options as Airflow reads them (environment variables here): the circuit
breaker's settings, and a clear refusal of a value that would break it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from airflow.exceptions import AirflowConfigException

from airflow_mcsched.access.breaker import BreakerSettings
from airflow_mcsched.service.settings import ServiceSettings, breaker_from_airflow_conf

BREAKER_OPTIONS = ("breaker_failures_to_open", "breaker_cool_down_seconds", "breaker_successes_to_close")


@pytest.fixture(autouse=True)
def unset_breaker_options(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in BREAKER_OPTIONS:
        monkeypatch.delenv(f"AIRFLOW__MCSCHED__{key.upper()}", raising=False)


def configure(monkeypatch: pytest.MonkeyPatch, **options: str) -> None:
    for key, value in options.items():
        monkeypatch.setenv(f"AIRFLOW__MCSCHED__{key.upper()}", value)


def test_without_options_the_breaker_keeps_its_defaults():
    assert ServiceSettings.from_airflow_conf().breaker == BreakerSettings(3, timedelta(seconds=30), 3)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"breaker_failures_to_open": "1"}, BreakerSettings(failures_to_open=1)),
        ({"breaker_cool_down_seconds": "5"}, BreakerSettings(cool_down=timedelta(seconds=5))),
        ({"breaker_cool_down_seconds": " 0.5 "}, BreakerSettings(cool_down=timedelta(seconds=0.5))),
        ({"breaker_successes_to_close": "10"}, BreakerSettings(successes_to_close=10)),
        (
            {"breaker_failures_to_open": "2", "breaker_cool_down_seconds": "86400", "breaker_successes_to_close": "1"},
            BreakerSettings(2, timedelta(days=1), 1),
        ),
    ],
)
def test_configured_breaker_options_reach_the_settings(monkeypatch, options, expected):
    configure(monkeypatch, **options)
    assert ServiceSettings.from_airflow_conf().breaker == expected
    assert breaker_from_airflow_conf() == expected  # what `mcsched sync` runs with


@pytest.mark.parametrize(
    ("key", "value", "wanted"),
    [
        ("breaker_failures_to_open", "0", "a whole number of at least 1"),
        ("breaker_failures_to_open", "-3", "a whole number of at least 1"),
        ("breaker_failures_to_open", "1.5", "a whole number of at least 1"),
        ("breaker_failures_to_open", "three", "a whole number of at least 1"),
        ("breaker_successes_to_close", "0", "a whole number of at least 1"),
        ("breaker_successes_to_close", "", "a whole number of at least 1"),
        ("breaker_cool_down_seconds", "0", "a number of seconds above 0 and at most 86400"),
        ("breaker_cool_down_seconds", "-30", "a number of seconds above 0 and at most 86400"),
        ("breaker_cool_down_seconds", "30s", "a number of seconds above 0 and at most 86400"),
        ("breaker_cool_down_seconds", "nan", "a number of seconds above 0 and at most 86400"),
        ("breaker_cool_down_seconds", "inf", "a number of seconds above 0 and at most 86400"),
        ("breaker_cool_down_seconds", "1e12", "a number of seconds above 0 and at most 86400"),
    ],
)
def test_a_bad_breaker_option_is_refused_naming_the_option_and_the_fix(monkeypatch, key, value, wanted):
    configure(monkeypatch, **{key: value})
    with pytest.raises(AirflowConfigException) as refused:
        ServiceSettings.from_airflow_conf()
    message = str(refused.value)
    assert message.startswith(f"[mcsched] {key} is {value.strip()!r}, but it must be {wanted};"), message
    assert f"AIRFLOW__MCSCHED__{key.upper()}" in message and "remove it for the default" in message
