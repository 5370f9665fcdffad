"""The placement calls one task try makes: submit (with the DAG's team/project defaults), wait, cancel.

Shared by the operator and the sensor so that both ask, wait and give up in the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_mcsched.hooks.placement import (
    PlacementHook,
    PlacementServiceError,
    PlacementServiceUnavailable,
    task_identity,
)
from airflow_mcsched.service.schemas import PlacementOut, PlacementSubmit, ResourceAsk, TaskRef
from airflow_mcsched.service.task_tokens import TaskIdentity
from airflow_mcsched.triggers.admission import Admission, judge, refusal, why_waiting
from airflow_mcsched.triggers.placement import PlacementTrigger, next_poll_delay

# DAG params that give a step its team and project when the task does not (the service reads these).
OWNER_PARAMS = ("team", "project")


def dag_defaults(context: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The DAG's tags and its team/project params: the service's fallbacks for the step's owner."""
    dag = context.get("dag")
    tags = sorted(str(t) for t in (getattr(dag, "tags", None) or ()))
    params = context.get("params") or {}
    return tags, {k: params[k] for k in OWNER_PARAMS if k in params and params[k] not in (None, "")}


@dataclass
class TaskPlacements:
    """Placement calls made as one task instance (its own signed token on every call)."""

    hook: PlacementHook
    identity: TaskIdentity
    dag_tags: list[str] = field(default_factory=list)
    dag_params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, context: Mapping[str, Any]) -> TaskPlacements:
        identity = task_identity(context)
        tags, params = dag_defaults(context)
        return cls(PlacementHook(identity), identity, tags, params)

    @property
    def task(self) -> TaskRef:
        i = self.identity
        return TaskRef(
            dag_id=i.dag_id, run_id=i.run_id, task_id=i.task_id, map_index=i.map_index, try_number=i.try_number
        )

    def submit(self, ask: ResourceAsk, attempt: int = 1) -> PlacementOut:
        """Queue the ask; the same try and attempt always get the same placement back."""
        body = PlacementSubmit(
            task=self.task, ask=ask, attempt=attempt, dag_tags=self.dag_tags, dag_params=self.dag_params
        )
        return self.hook.submit(body)

    def get(self, placement_id: str) -> PlacementOut:
        return self.hook.get(placement_id)

    def wait_until_admitted(
        self, placement: PlacementOut, *, timeout_seconds: float, poll_seconds: float, log: logging.Logger
    ) -> PlacementOut:
        """Poll with backoff, logging each new reason for waiting; raise when it cannot be granted."""
        deadline = time.monotonic() + timeout_seconds
        delay, last_reason = poll_seconds, None
        while True:
            verdict = judge(placement)
            if verdict is Admission.ADMITTED:
                return placement
            if verdict is not Admission.WAITING:
                raise refusal(placement, verdict)
            reason = why_waiting(placement)
            if reason != last_reason:
                log.info("Placement %s waits: %s", placement.id, reason)
                last_reason = reason
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise refusal(placement, "timeout")
            time.sleep(min(delay, remaining))
            delay = next_poll_delay(delay)
            placement = self.hook.get(placement.id)

    def trigger_for(self, placement: PlacementOut, *, timeout_seconds: float, poll_seconds: float) -> PlacementTrigger:
        """The trigger that waits for this placement in the triggerer, as this task instance."""
        return PlacementTrigger(
            placement_id=placement.id,
            identity=self.identity.model_dump(),
            poll_interval=poll_seconds,
            timeout_at=time.time() + timeout_seconds,
        )

    def cancel_quietly(self, placement_id: str, outcome: str, message: str, log: logging.Logger) -> None:
        """End a placement the step will not use (withdraw it if pending); never hides the real error."""
        try:
            self.hook.release(placement_id, outcome, message)
        except (PlacementServiceError, PlacementServiceUnavailable) as err:
            log.warning("Could not end placement %s: %s", placement_id, err)
