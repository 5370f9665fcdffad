"""The placement a running step holds: reports its pod's start, keeps its lease, and always ends it.

Every way out of a step ends its placement exactly once: released (succeeded, failed or killed)
with its GPU-hours and cost, or reported as a cluster fault so the next attempt goes elsewhere.
Only a deferral keeps it open, because the resumed task ends it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from airflow.sdk.exceptions import AirflowSkipException, TaskDeferred

from airflow_mcsched.hooks.placement import PlacementHook, PlacementServiceError, PlacementServiceUnavailable
from airflow_mcsched.operators.launch_failure import ClusterLaunchFailure
from airflow_mcsched.operators.lineage import ending_line
from airflow_mcsched.service.schemas import PlacementOut, PlacementState

MIN_RENEW_SECONDS = 5.0
MAX_RENEW_SECONDS = 60.0
PlacementCallError = (PlacementServiceError, PlacementServiceUnavailable)


def renew_interval(placement: PlacementOut, now: datetime | None = None) -> float:
    """A third of the lease that is left, within [5 s, 60 s]: three chances before it lapses."""
    if placement.lease_expires_at is None:
        return MAX_RENEW_SECONDS
    left = (placement.lease_expires_at - (now or datetime.now(UTC))).total_seconds()
    return min(MAX_RENEW_SECONDS, max(MIN_RENEW_SECONDS, left / 3))


def _first_line(err: BaseException) -> str:
    """KPO's failures carry the whole pod after their first line; the lineage keeps the gist."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}".rstrip(": ")


class LeaseKeeper:
    """Renews the lease in a background thread while the pod runs (sync mode) and notices preemption."""

    def __init__(
        self,
        hook: PlacementHook,
        placement: PlacementOut,
        on_preempted: Callable[[str], None],
        log: logging.Logger,
        interval: float | None = None,
    ) -> None:
        self.hook = hook
        self.placement = placement
        self.on_preempted = on_preempted
        self.log = log
        self.interval = interval or renew_interval(placement)
        self.preempted_reason: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"mcsched-lease-{placement.id}", daemon=True)

    def start(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                placement = self.hook.renew(self.placement.id)
            except PlacementCallError as err:
                self.log.warning("Could not renew the lease of placement %s: %s", self.placement.id, err)
                continue
            if placement.state is PlacementState.PREEMPTED:
                self.preempted_reason = placement.end_reason or "preempted"
                self.log.warning(
                    "Placement %s was preempted: %s; stopping its pod", placement.id, self.preempted_reason
                )
                self.on_preempted(self.preempted_reason)
                return
            if placement.state.final:
                self.log.warning("Placement %s is %s: %s", placement.id, placement.state.value, placement.end_reason)
                return


class HeldPlacement:
    def __init__(self, hook: PlacementHook, placement: PlacementOut, log: logging.Logger) -> None:
        self.hook = hook
        self.placement = placement
        self.log = log
        self.keeper: LeaseKeeper | None = None
        self.ended = False

    @property
    def preempted_reason(self) -> str | None:
        return self.keeper.preempted_reason if self.keeper else None

    def started(
        self, pod_name: str, on_preempted: Callable[[str], None] | None = None, renew_every: float | None = None
    ) -> None:
        """The pod exists: count time from now; with `on_preempted` (sync mode) renew until the end."""
        self.placement = self.hook.start(self.placement.id, pod_name)
        self.log.info("Placement %s runs pod %s", self.placement.id, pod_name)
        if on_preempted is not None and self.keeper is None:
            self.keeper = LeaseKeeper(self.hook, self.placement, on_preempted, self.log, renew_every).start()

    def release(self, outcome: str, message: str = "") -> None:
        self._end(lambda: self.hook.release(self.placement.id, outcome, message))

    def fault(self, failure: ClusterLaunchFailure) -> None:
        self._end(lambda: self.hook.fault(self.placement.id, failure.reason, failure.message))

    def _end(self, call: Callable[[], PlacementOut]) -> None:
        if self.keeper is not None:
            self.keeper.stop()
        if self.ended:
            return
        self.ended = True
        try:
            self.placement = call()
            self.log.info(ending_line(self.placement))
        except PlacementCallError as err:
            self.log.error("Could not end placement %s (its lease will lapse): %s", self.placement.id, err)

    @contextmanager
    def until_done(self) -> Iterator[HeldPlacement]:
        """End the placement however the block ends, except by deferral (the resumed task ends it)."""
        try:
            yield self
        except TaskDeferred:
            raise
        except ClusterLaunchFailure as failure:
            self.fault(failure)
            raise
        except AirflowSkipException:
            self.release("succeeded", "skipped")
            raise
        except Exception as err:
            self.release("failed", _first_line(err))
            raise
        except BaseException as err:
            self.release("killed", type(err).__name__)
            raise
        else:
            self.release("succeeded")
