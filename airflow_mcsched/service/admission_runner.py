"""One admission cycle at a time per API-server process, shared by everyone who needs one (group commit).

A write that changes what the queue waits on (a submission, a release, a cluster fault) commits
first, then asks for a cycle that *begins after* its commit, and waits for it. If no cycle is
running, the caller runs it at once on its own thread; if one is running (it may have read the
queue before the caller's commit), the caller waits for the next one, which one of the waiting
callers runs for all of them. So under load one cycle decides every request queued meanwhile,
instead of each request paying for a cycle of its own, and an idle server still decides a lone
request immediately. Cycles of different processes (API-server workers or replicas) serialise on
the admission lock row in the DB; this only keeps one process from queueing on that lock with
many threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class AdmissionRunner:
    def __init__(self, cycle: Callable[[], object], wait_seconds: float = 5.0) -> None:
        self._cycle = cycle
        self.wait_seconds = wait_seconds
        self._cond = threading.Condition()
        self._running = False
        self._begun = 0  # cycles begun in this process
        self._ended = 0  # cycles ended (done or failed)

    @property
    def cycles(self) -> int:
        return self._ended

    def decide_after_change(self, wait_seconds: float | None = None) -> bool:
        """Run or await one cycle begun after this call; False when none ended within the wait
        (the change is in the DB: the admission timer or the next caller decides it)."""
        deadline = time.monotonic() + (self.wait_seconds if wait_seconds is None else wait_seconds)
        with self._cond:
            needed = self._begun + 1  # the first cycle to begin from now on
            while self._ended < needed:
                if not self._running:
                    self._running = True
                    self._begun += 1
                    mine = self._begun
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._cond.wait(remaining):
                    return self._ended >= needed
            else:
                return True
        try:
            started = time.perf_counter()
            self._cycle()
            log.debug("admission cycle %d took %.1f ms", mine, (time.perf_counter() - started) * 1000)
            decided = True
        except Exception:
            # the change is committed and stays queued: the admission timer or the next caller
            # decides it; the caller gets its placement as it stands instead of a 500
            log.exception("admission cycle failed; the queue is decided again on the next cycle")
            decided = False
        finally:
            with self._cond:
                self._running = False
                self._ended = mine
                self._cond.notify_all()
        return decided


def _one_cycle() -> None:
    from airflow.utils.session import create_session

    from airflow_mcsched.service.placement_store import PlacementStore
    from airflow_mcsched.service.policy_source import current_policy

    with create_session() as session:
        PlacementStore(session, current_policy()).run_cycle()


_runner = AdmissionRunner(_one_cycle)


def admission_runner() -> AdmissionRunner:
    """This process's runner (the routes, the admission timer and the capacity sync share it)."""
    return _runner
