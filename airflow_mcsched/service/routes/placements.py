"""Placements: submit, read (with the explanation), renew, start, release, report a cluster fault.

Tasks act on their own placements only (their token names the task instance); people read what
the policy lets them see (a private team's placements only its members and admins,
`service/visibility.py`) and act where Airflow lets them edit the DAG. A write commits on its own rows first; a write
that changes what the queue waits on (submit, release, fault) then waits for an admission cycle
begun after its commit (`admission_runner`), so its effect on the queue is decided before the
answer goes back, and concurrent writers share that cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated

from airflow.utils.session import create_session
from fastapi import APIRouter, HTTPException, Query, status

from airflow_mcsched.decision import RequestError
from airflow_mcsched.service.admission_runner import admission_runner
from airflow_mcsched.service.auth import Caller, CallerDep, VisibilityDep, require_dag_edit
from airflow_mcsched.service.errors import body_problems
from airflow_mcsched.service.placement_store import (
    MissingTeam,
    PlacementConflict,
    PlacementNotFound,
    PlacementStore,
)
from airflow_mcsched.service.policy_source import current_policy
from airflow_mcsched.service.schemas import (
    EndReport,
    FaultReport,
    Handover,
    PlacementList,
    PlacementOut,
    PlacementState,
    PlacementSubmit,
    StartReport,
    TaskRef,
)
from airflow_mcsched.service.tables import PlacementRow

router = APIRouter(prefix="/api/v1/placements", tags=["placements"])


def _check_owner(caller: Caller, task: TaskRef, holder_task_id: str | None = None) -> None:
    """A task may act only for itself (or as the holder a placement was handed to, in the same DAG
    run); a person needs edit rights on the DAG."""
    if caller.task is None:
        require_dag_edit(caller, task.dag_id)
        return
    mine = caller.task
    same_try = (mine.task_id, mine.map_index, mine.try_number) == (task.task_id, task.map_index, task.try_number)
    holder = holder_task_id is not None and mine.task_id == holder_task_id
    if (mine.dag_id, mine.run_id) != (task.dag_id, task.run_id) or not (same_try or holder):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "a task may only act on its own placements")


def _task_of(row: PlacementRow) -> TaskRef:
    return TaskRef(
        dag_id=row.dag_id, run_id=row.run_id, task_id=row.task_id, map_index=row.map_index, try_number=row.try_number
    )


def _act(
    placement_id: str,
    caller: Caller,
    action: Callable[[PlacementStore, datetime], PlacementRow],
    frees_capacity: bool = False,
) -> PlacementOut:
    """Apply one change with the placement's row locked; when it freed capacity (release, fault),
    wait for a cycle to decide the queue again: a start, a renewal or a handover changes nothing the
    queue waits on."""
    try:
        with create_session() as session:
            store = PlacementStore(session, current_policy())
            now = store.lock(placement_id)
            row = store.get(placement_id)
            _check_owner(caller, _task_of(row), row.holder_task_id)
            out = store.out(action(store, now))
        if frees_capacity:  # the placement's own answer is final; the wait is for the queue it freed
            admission_runner().decide_after_change()
        return out
    except PlacementNotFound as err:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(err)) from None
    except PlacementConflict as err:
        raise HTTPException(status.HTTP_409_CONFLICT, str(err)) from None


def _read(placement_id: str) -> PlacementOut:
    with create_session() as session:
        store = PlacementStore(session, current_policy())
        return store.out(store.get(placement_id))


@router.post("", response_model=PlacementOut, status_code=status.HTTP_201_CREATED, summary="Queue a placement")
def submit_placement(body: PlacementSubmit, caller: CallerDep) -> PlacementOut:
    """Queue the request (one short transaction, an insert), then wait for a cycle begun after it:
    under load one cycle decides every request queued meanwhile. A request still undecided when
    the wait ends is answered as pending; the caller polls it, as for any waiting placement."""
    _check_owner(caller, body.task)
    with create_session() as session:
        store = PlacementStore(session, current_policy())
        try:
            row = store.submit(body, caller.name, datetime.now(UTC), ti_id=caller.task.ti_id if caller.task else None)
        except RequestError as err:
            raise body_problems(err.problems, ["body", "ask"]) from None
        except MissingTeam as err:
            raise body_problems([str(err)], ["body"]) from None
        placement_id, decided = row.id, row.decided_at is not None
    if not decided:
        admission_runner().decide_after_change()
    return _read(placement_id)


@router.get("", response_model=PlacementList, summary="Placements (lineage) by DAG, run, task, team or state")
def list_placements(
    seen: VisibilityDep,
    dag_id: str | None = None,
    run_id: str | None = None,
    task_id: str | None = None,
    team: str | None = None,
    state: PlacementState | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> PlacementList:
    with create_session() as session:
        store = PlacementStore(session, current_policy())
        rows = store.list(dag_id, run_id, task_id, team, state, limit, seen=seen)
        return PlacementList(placements=store.outs(rows))


@router.get("/{placement_id}", response_model=PlacementOut, summary="One placement with its explanation")
def get_placement(placement_id: str, seen: VisibilityDep) -> PlacementOut:
    with create_session() as session:
        store = PlacementStore(session, current_policy())
        try:
            return store.out(store.get(placement_id, seen=seen))
        except PlacementNotFound as err:
            raise HTTPException(status.HTTP_404_NOT_FOUND, str(err)) from None


@router.post("/{placement_id}/renew", response_model=PlacementOut, summary="Extend the lease")
def renew_placement(placement_id: str, caller: CallerDep) -> PlacementOut:
    return _act(placement_id, caller, lambda store, now: store.renew(placement_id, now))


@router.post("/{placement_id}/start", response_model=PlacementOut, summary="The step's pod started")
def start_placement(placement_id: str, body: StartReport, caller: CallerDep) -> PlacementOut:
    return _act(placement_id, caller, lambda store, now: store.start(placement_id, body.pod_name, now))


@router.post("/{placement_id}/release", response_model=PlacementOut, summary="The step ended: free and cost it")
def release_placement(placement_id: str, body: EndReport, caller: CallerDep) -> PlacementOut:
    return _act(
        placement_id,
        caller,
        lambda store, now: store.release(placement_id, body.outcome, body.message, now, caller.name),
        frees_capacity=True,
    )


@router.post("/{placement_id}/fault", response_model=PlacementOut, summary="The chosen cluster could not run it")
def report_fault(placement_id: str, body: FaultReport, caller: CallerDep) -> PlacementOut:
    return _act(
        placement_id,
        caller,
        lambda store, now: store.fail(placement_id, body.reason, body.message, now, caller.name),
        frees_capacity=True,
    )


@router.post("/{placement_id}/handover", response_model=PlacementOut, summary="Hand the reservation to a task")
def handover_placement(placement_id: str, body: Handover, caller: CallerDep) -> PlacementOut:
    return _act(placement_id, caller, lambda store, now: store.handover(placement_id, body.task_id, now, caller.name))
