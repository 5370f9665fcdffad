"""The API server's background work: the capacity sync, the admission timer and, when history has an
age (`[mcsched] placement_retention`, `audit_retention`), its purge, as daemon threads.

All are safe to run in every replica: the sync takes a lease per cluster, and admission cycles
(and purges) serialise on the lock row. The timer is what expires leases and admits work when nothing else
happens (no submit, release or sync to trigger a cycle).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from airflow_mcsched.governance.retention import Retention
from airflow_mcsched.service.settings import ServiceSettings

log = logging.getLogger(__name__)


def run_admission_cycle(*_: object) -> None:
    """Through this process's runner, so a timer tick joins a cycle that callers already asked for."""
    from airflow_mcsched.service.admission_runner import admission_runner

    admission_runner().decide_after_change()


def purge_history(retention: Retention) -> None:
    """Drop history past its age (`[mcsched] placement_retention`, `audit_retention`)."""
    from airflow_mcsched.service.retention_store import purge_now

    report = purge_now(retention)
    if report.anything:
        log.info("purged history: %s", report.as_dict())


def _every(interval: float, stop: threading.Event, work: Callable[[], None], what: str) -> None:
    while not stop.wait(interval):
        try:
            work()
        except Exception:
            log.exception("%s failed; trying again in %.0fs", what, interval)


@dataclass
class BackgroundWork:
    settings: ServiceSettings
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> BackgroundWork:
        if self.settings.sync_enabled:
            from airflow_mcsched.cli.sync import build_sync

            sync = build_sync(self.settings.sync_timeout_seconds, self.settings.breaker)
            sync.lease_seconds = self.settings.sync_lease_seconds
            sync.on_round = run_admission_cycle
            self._thread("mcsched-capacity-sync", sync.run, self.settings.sync_interval_seconds, self.stop)
        if self.settings.admission_interval_seconds > 0:
            self._thread(
                "mcsched-admission-timer",
                _every,
                self.settings.admission_interval_seconds,
                self.stop,
                run_admission_cycle,
                "admission cycle",
            )
        if self.settings.purge_interval_seconds:
            self._thread(
                "mcsched-retention",
                _every,
                self.settings.purge_interval_seconds,
                self.stop,
                partial(purge_history, self.settings.retention),
                "history purge",
            )
        return self

    def _thread(self, name: str, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def shutdown(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=self.settings.sync_timeout_seconds + 5)
