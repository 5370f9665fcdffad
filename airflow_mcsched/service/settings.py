"""The placement service's settings, from Airflow's configuration (`[mcsched]` section or
`AIRFLOW__MCSCHED__*` environment variables), read once when the app starts."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta

from airflow_mcsched.access.breaker import BreakerSettings
from airflow_mcsched.governance.retention import Retention, parse_age

MAX_COOL_DOWN_SECONDS = 86400  # a cluster to keep away for longer is one to disable (`mcsched clusters`)


@dataclass(frozen=True)
class ServiceSettings:
    sync_enabled: bool = True
    sync_interval_seconds: float = 15.0
    sync_timeout_seconds: float = 10.0
    sync_lease_seconds: float = 60.0
    admission_interval_seconds: float = 5.0
    breaker: BreakerSettings = field(default_factory=BreakerSettings)  # [mcsched] breaker_*
    retention: Retention = field(default_factory=Retention)  # [mcsched] placement_retention, audit_retention
    retention_interval_seconds: float = 3600.0

    @property
    def purge_interval_seconds(self) -> float:
        """How often each API server purges history on its own: the interval when history has an
        age and the interval is positive, else 0 (only `mcsched purge` purges)."""
        if self.retention.purges_anything and self.retention_interval_seconds > 0:
            return self.retention_interval_seconds
        return 0.0

    @classmethod
    def from_airflow_conf(cls) -> ServiceSettings:
        from airflow.configuration import conf

        return cls(
            sync_enabled=conf.getboolean("mcsched", "sync_enabled", fallback=True),
            sync_interval_seconds=conf.getfloat("mcsched", "sync_interval_seconds", fallback=15.0),
            sync_timeout_seconds=conf.getfloat("mcsched", "sync_timeout_seconds", fallback=10.0),
            sync_lease_seconds=conf.getfloat("mcsched", "sync_lease_seconds", fallback=60.0),
            admission_interval_seconds=conf.getfloat("mcsched", "admission_interval_seconds", fallback=5.0),
            breaker=breaker_from_airflow_conf(),
            retention=retention_from_airflow_conf(),
            retention_interval_seconds=conf.getfloat("mcsched", "retention_interval_seconds", fallback=3600.0),
        )


def retention_from_airflow_conf() -> Retention:
    """How long history is kept (`governance.retention`): `[mcsched] placement_retention` and
    `audit_retention`, ages such as 90d; unset or empty keeps it forever. A bad value raises
    AirflowConfigException naming the option and the fix, so the API server refuses to start rather
    than keep (or purge) what the operator did not mean."""
    return Retention(placements=_age("placement_retention"), audit=_age("audit_retention"))


def _age(key: str) -> timedelta | None:
    text = _configured(key)
    if not text:
        return None
    try:
        return parse_age(text, f"[mcsched] {key}")
    except ValueError as err:
        from airflow.exceptions import AirflowConfigException

        raise AirflowConfigException(
            f"{err}; fix it in airflow.cfg or AIRFLOW__MCSCHED__{key.upper()}, or remove it to keep history forever"
        ) from err


def breaker_from_airflow_conf() -> BreakerSettings:
    """The clusters' circuit breaker (`access.breaker`) as configured: `[mcsched] breaker_*`.

    A bad value raises AirflowConfigException naming the option and how to fix it, so the API
    server (or `mcsched sync`) refuses to start rather than run a breaker that never opens."""
    default = BreakerSettings()
    return BreakerSettings(
        failures_to_open=_whole_number("breaker_failures_to_open", default.failures_to_open),
        cool_down=timedelta(seconds=_cool_down_seconds("breaker_cool_down_seconds", default.cool_down)),
        successes_to_close=_whole_number("breaker_successes_to_close", default.successes_to_close),
    )


def _whole_number(key: str, default: int) -> int:
    text = _configured(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise _refused(key, text, "a whole number of at least 1", default)
    return value


def _cool_down_seconds(key: str, default: timedelta) -> float:
    text = _configured(key)
    if text is None:
        return default.total_seconds()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_COOL_DOWN_SECONDS:  # also refuses nan
        wanted = f"a number of seconds above 0 and at most {MAX_COOL_DOWN_SECONDS}"
        raise _refused(key, text, wanted, int(default.total_seconds()))
    return value


def _configured(key: str) -> str | None:
    from airflow.configuration import conf

    text = conf.get("mcsched", key, fallback=None)
    return None if text is None else text.strip()


def _refused(key: str, text: str, wanted: str, default: int) -> Exception:
    from airflow.exceptions import AirflowConfigException

    return AirflowConfigException(
        f"[mcsched] {key} is {text!r}, but it must be {wanted}; fix it in airflow.cfg or "
        f"AIRFLOW__MCSCHED__{key.upper()}, or remove it for the default ({default})"
    )
