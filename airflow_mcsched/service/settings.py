"""The placement service's settings, from Airflow's configuration (`[mcsched]` section or
`AIRFLOW__MCSCHED__*` environment variables), read once when the app starts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServiceSettings:
    sync_enabled: bool = True
    sync_interval_seconds: float = 15.0
    sync_timeout_seconds: float = 10.0
    sync_lease_seconds: float = 60.0
    admission_interval_seconds: float = 5.0

    @classmethod
    def from_airflow_conf(cls) -> ServiceSettings:
        from airflow.configuration import conf

        return cls(
            sync_enabled=conf.getboolean("mcsched", "sync_enabled", fallback=True),
            sync_interval_seconds=conf.getfloat("mcsched", "sync_interval_seconds", fallback=15.0),
            sync_timeout_seconds=conf.getfloat("mcsched", "sync_timeout_seconds", fallback=10.0),
            sync_lease_seconds=conf.getfloat("mcsched", "sync_lease_seconds", fallback=60.0),
            admission_interval_seconds=conf.getfloat("mcsched", "admission_interval_seconds", fallback=5.0),
        )
