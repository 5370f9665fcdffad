"""PlacementTrigger: waits in the triggerer until a placement is admitted, so no worker slot idles.

The triggerer has no ORM and no task token, so the trigger carries the task's identity in its
kwargs and signs a fresh token for every poll (through the one placement hook).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_mcsched.hooks.placement import PlacementHook, PlacementServiceError, PlacementServiceUnavailable
from airflow_mcsched.service.task_tokens import TaskIdentity
from airflow_mcsched.triggers.admission import Admission, event_for, judge, why_waiting

MAX_POLL_SECONDS = 60.0
BACKOFF = 1.5


def next_poll_delay(delay: float, ceiling: float = MAX_POLL_SECONDS) -> float:
    """Polls start at the configured interval and slow down while nothing changes."""
    return min(delay * BACKOFF, max(ceiling, delay))


class PlacementTrigger(BaseTrigger):
    """Fires once: `admitted`, `unplaceable`, `ended`, `timeout` or `error` (see `admission.event_for`).

    :param placement_id: the placement to wait for.
    :param identity: the task instance it belongs to (`TaskIdentity` fields), to sign tokens.
    :param poll_interval: seconds between the first polls; later polls back off up to a minute.
    :param timeout_at: Unix time after which a `timeout` event fires; None waits forever.
    :param base_url: the placement service; None reads `[mcsched] service_url` in the triggerer.
    """

    def __init__(
        self,
        placement_id: str,
        identity: dict[str, Any],
        poll_interval: float = 5.0,
        timeout_at: float | None = None,
        base_url: str | None = None,
    ) -> None:
        super().__init__()
        self.placement_id = placement_id
        self.identity = dict(identity)
        self.poll_interval = float(poll_interval)
        self.timeout_at = timeout_at
        self.base_url = base_url

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "placement_id": self.placement_id,
                "identity": self.identity,
                "poll_interval": self.poll_interval,
                "timeout_at": self.timeout_at,
                "base_url": self.base_url,
            },
        )

    def _hook(self) -> PlacementHook:
        return PlacementHook(TaskIdentity(**self.identity), base_url=self.base_url)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hook = self._hook()
        delay, last_reason = self.poll_interval, "not read yet"
        while True:
            try:
                placement = await hook.aget(self.placement_id)
            except PlacementServiceError as err:
                yield TriggerEvent({"status": "error", "placement_id": self.placement_id, "message": str(err)})
                return
            except PlacementServiceUnavailable as err:
                self.log.warning("placement service unreachable, still waiting: %s", err)
                placement = None
            if placement is not None:
                verdict = judge(placement)
                if verdict is not Admission.WAITING:
                    yield TriggerEvent(event_for(placement, verdict))
                    return
                last_reason = self._log_if_new(why_waiting(placement), last_reason)
            if self.timeout_at is not None and time.time() >= self.timeout_at:
                yield TriggerEvent(
                    {"status": "timeout", "placement_id": self.placement_id, "message": f"last word: {last_reason}"}
                )
                return
            await asyncio.sleep(delay)
            delay = next_poll_delay(delay)

    def _log_if_new(self, reason: str, last_reason: str) -> str:
        if reason != last_reason:
            self.log.info("placement %s still waits: %s", self.placement_id, reason)
        return reason

    async def on_kill(self) -> None:
        """The user stopped the waiting task: withdraw the request so it never takes capacity."""
        await asyncio.to_thread(self._hook().release, self.placement_id, "killed", "the waiting task was stopped")
