"""The Placements pages: the lineage of every placement attempt per DAG run and task, and one
placement with the engine's explanation (chosen pool and score parts, runners-up, each rejected
cluster with its reason code).

They read the same rows and the same `PlacementOut` the JSON API answers with, newest first, and
hide what the API hides from the reader (another team's private placements).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import groupby
from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from airflow_mcsched.service.placement_store import PlacementNotFound, PlacementStore
from airflow_mcsched.service.retention_store import configured_status
from airflow_mcsched.service.schemas import PlacementOut, PlacementState
from airflow_mcsched.service.tables import PlacementRow
from airflow_mcsched.service.visibility import EVERYTHING, Visibility
from airflow_mcsched.ui.access import PageCaller, PageVisibility
from airflow_mcsched.ui.nav import UI_PREFIX
from airflow_mcsched.ui.templating import render

router = APIRouter(prefix="/ui/placements", include_in_schema=False)


def newest_first(
    session: Session, filters: dict[str, str], limit: int, seen: Visibility = EVERYTHING
) -> Sequence[PlacementRow]:
    """Placements matching every given filter (exact match) that the reader may see, newest first,
    so a long history shows its latest runs."""
    wanted = [getattr(PlacementRow, name) == value for name, value in filters.items() if value]
    q = select(PlacementRow).where(*wanted).order_by(PlacementRow.queued_at.desc(), PlacementRow.id).limit(limit)
    return session.scalars(seen.placements(q)).all()


def _store(session: Session) -> PlacementStore:
    from airflow_mcsched.service.policy_source import current_policy

    return PlacementStore(session, current_policy())


def airflow_task_path(p: PlacementOut) -> str:
    """The task instance's page in the Airflow UI."""
    t = p.task
    path = f"/dags/{quote(t.dag_id, safe='')}/runs/{quote(t.run_id, safe='')}/tasks/{quote(t.task_id, safe='')}"
    return path if t.map_index < 0 else f"{path}/mapped/{t.map_index}"


@router.get("", response_class=HTMLResponse)
def placements_page(
    request: Request,
    caller: PageCaller,
    seen: PageVisibility,
    dag_id: str = "",
    run_id: str = "",
    task_id: str = "",
    team: str = "",
    state: str = "",
    limit: Annotated[int, Query(ge=1, le=5000)] = 200,
) -> HTMLResponse:
    from airflow.utils.session import create_session

    filters = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "team": team, "state": state}
    with create_session() as session:
        store = _store(session)
        placements = store.outs(newest_first(session, filters, limit, seen))
        retention = configured_status(session, datetime.now(UTC), seen)  # what the list no longer holds
    runs = [(key, list(group)) for key, group in groupby(placements, key=lambda p: (p.task.dag_id, p.task.run_id))]
    return render(
        request,
        "placements.html",
        runs=runs,
        count=len(placements),
        limit=limit,
        filters=filters,
        states=[s.value for s in PlacementState],
        retention=retention,
        caller=caller,
        page="placements",
    )


@router.get("/of-task", response_class=HTMLResponse)
def task_placement(
    request: Request, seen: PageVisibility, dag_id: str, run_id: str, task_id: str, map_index: int = -1
) -> Response:
    """Where the task's extra link lands: its latest attempt's page, or its (empty) list while it has none."""
    from airflow.utils.session import create_session

    with create_session() as session:
        latest = session.scalars(
            seen.placements(select(PlacementRow.id))
            .where(
                PlacementRow.dag_id == dag_id,
                PlacementRow.run_id == run_id,
                PlacementRow.task_id == task_id,
                PlacementRow.map_index == map_index,
            )
            .order_by(PlacementRow.try_number.desc(), PlacementRow.attempt.desc(), PlacementRow.queued_at.desc())
            .limit(1)
        ).first()
    if latest is None:
        query = urlencode({"dag_id": dag_id, "run_id": run_id, "task_id": task_id})
        return RedirectResponse(f"{UI_PREFIX}/placements?{query}", status_code=303)
    return RedirectResponse(f"{UI_PREFIX}/placements/{latest}", status_code=303)


@router.get("/{placement_id}", response_class=HTMLResponse)
def placement_page(request: Request, caller: PageCaller, seen: PageVisibility, placement_id: str) -> HTMLResponse:
    from airflow.utils.session import create_session

    with create_session() as session:
        store = _store(session)
        try:
            placement = store.out(store.get(placement_id, seen))
        except PlacementNotFound:
            return render(request, "not_found.html", what=f"placement {placement_id}", caller=caller, status_code=404)
        t = placement.task
        same_task = {"dag_id": t.dag_id, "run_id": t.run_id, "task_id": t.task_id}
        attempts = store.outs([r for r in newest_first(session, same_task, 100, seen) if r.map_index == t.map_index])
    return render(
        request,
        "placement.html",
        p=placement,
        attempts=attempts,
        airflow_task_path=airflow_task_path(placement),
        caller=caller,
        page="placements",
    )
