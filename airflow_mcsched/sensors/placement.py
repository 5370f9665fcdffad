"""PlacementSensor: queue a resource request and wait until the fleet grants it.

With `hold_for_task_id`, the granted reservation is handed to that downstream task, which runs
on it (`MultiClusterPodOperator(placement_id="{{ ti.xcom_pull('<sensor>') }}")`), so capacity is
secured before, say, an expensive data export starts. Without it the sensor is a gate: it
returns the reservation at once, having shown that the capacity was there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.configuration import conf
from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowRescheduleException, AirflowSensorTimeout

from airflow_mcsched.operators.lineage import admission_lines
from airflow_mcsched.operators.links import PlacementLink
from airflow_mcsched.operators.resource_request import (
    check_at_parse_time,
    merge_resource_fields,
    pop_resource_fields,
    validated_ask,
)
from airflow_mcsched.operators.task_placements import TaskPlacements
from airflow_mcsched.service.schemas import PlacementOut, ResourceAsk
from airflow_mcsched.triggers.admission import (
    Admission,
    PlacementNotGranted,
    granted_placement_id,
    judge,
    refusal,
    why_waiting,
)

if TYPE_CHECKING:
    from airflow.sdk import Context


class PlacementSensor(BaseSensorOperator):
    """Wait until a resource request is admitted; return (XCom) the placement id.

    Takes the same resource fields as ``MultiClusterPodOperator`` (keyword arguments or
    ``resource_ask``), plus the usual sensor arguments (``poke_interval``, ``timeout``, ``mode``).

    :param hold_for_task_id: the downstream task of this DAG run that will use the reservation;
        None returns the reservation as soon as it is granted.
    :param deferrable: wait in the triggerer (PlacementTrigger) instead of a worker slot.
    """

    template_fields: Sequence[str] = ("resource_ask", "hold_for_task_id")
    operator_extra_links = (PlacementLink(),)

    def __init__(
        self,
        *,
        resource_ask: ResourceAsk | Mapping[str, Any] | None = None,
        hold_for_task_id: str | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        fields = pop_resource_fields(kwargs)
        super().__init__(**kwargs)
        self.resource_ask = merge_resource_fields(resource_ask, fields)
        check_at_parse_time(self.resource_ask)
        self.hold_for_task_id = hold_for_task_id
        self.deferrable = deferrable
        self._placements: TaskPlacements | None = None
        self._open_id: str | None = None  # submitted and neither handed over nor given back yet

    def execute(self, context: Context) -> Any:
        self._placements = TaskPlacements.of(context)
        if not self.deferrable:
            return self._withdrawn_on_failure(super().execute, context)
        placement = self._queued()
        if judge(placement) is not Admission.WAITING:
            return self._outcome(placement)
        self.log.info("Placement %s waits: %s; deferring", placement.id, why_waiting(placement))
        trigger = self._placements.trigger_for(
            placement, timeout_seconds=self._timeout_seconds(), poll_seconds=self.poke_interval
        )
        self.defer(
            trigger=trigger, method_name="execute_complete", timeout=timedelta(seconds=self._timeout_seconds() + 120)
        )

    def poke(self, context: Context) -> PokeReturnValue | bool:
        placement = self._queued()
        if judge(placement) is Admission.WAITING:
            self.log.info("Placement %s waits: %s", placement.id, why_waiting(placement))
            return False
        return PokeReturnValue(is_done=True, xcom_value=self._outcome(placement))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> str:
        """Deferrable mode: the PlacementTrigger saw the placement admitted (or gave up)."""
        self._placements = TaskPlacements.of(context)
        self._open_id = event.get("placement_id")
        try:
            placement = self._placements.get(granted_placement_id(event))
        except PlacementNotGranted as err:
            self._withdraw(str(err))
            if event.get("status") == "timeout":
                raise AirflowSensorTimeout(str(err)) from err
            raise
        return self._outcome(placement)

    def on_kill(self) -> None:
        self._withdraw("the sensor was stopped")

    # -- helpers ------------------------------------------------------------------------------------
    def _timeout_seconds(self) -> float:
        return float(self.timeout) if self.timeout is not None else timedelta(days=7).total_seconds()

    def _queued(self) -> PlacementOut:
        """Submit once per try; submitting again returns the same placement, so reschedules are safe."""
        assert self._placements is not None
        if self._open_id is None:
            placement = self._placements.submit(validated_ask(self.resource_ask))
            self._open_id = placement.id
            return placement
        return self._placements.get(self._open_id)

    def _outcome(self, placement: PlacementOut) -> str:
        """Admitted: hand the reservation over (or give it back); anything else fails the sensor."""
        assert self._placements is not None
        verdict = judge(placement)
        if verdict is not Admission.ADMITTED:
            self._withdraw(f"not admitted: {verdict}")
            raise refusal(placement, verdict)
        for line in admission_lines(placement):
            self.log.info(line)
        if self.hold_for_task_id:
            self._placements.hook.handover(placement.id, self.hold_for_task_id)
            self.log.info("Placement %s is held for task %s", placement.id, self.hold_for_task_id)
        else:
            self._placements.hook.release(placement.id, "succeeded", "the sensor only checked for capacity")
            self.log.info("Placement %s given back: the capacity was there", placement.id)
        self._open_id = None
        return placement.id

    def _withdraw(self, why: str) -> None:
        if self._placements is not None and self._open_id is not None:
            self._placements.cancel_quietly(self._open_id, "killed", why, self.log)
            self._open_id = None

    def _withdrawn_on_failure(self, wait: Callable[[Context], Any], context: Context) -> Any:
        try:
            return wait(context)
        except AirflowRescheduleException:
            raise  # reschedule mode: the next poke submits again and gets the same placement
        except BaseException:
            self._withdraw("the sensor gave up")
            raise
