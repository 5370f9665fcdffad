"""Who is calling the placement service: a person (Airflow login) or a task (its own signed token).

People come through Airflow's auth manager exactly as on Airflow's own API (bearer token or the
UI's `_token` cookie). Tasks and their triggers present a token under our audience; it is checked
against the task-instance row, so a stolen or forged identity for a task that does not exist fails.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from airflow.api_fastapi.core_api.security import bearer_scheme, get_user
from fastapi import Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials

from airflow_mcsched.service.task_tokens import (
    TaskIdentity,
    TaskTokenError,
    airflow_jwt_secret,
    is_task_token,
    verify_task_token,
)
from airflow_mcsched.service.visibility import Visibility, visibility_for


@dataclass(frozen=True)
class Caller:
    """A person (`task` None) or a task instance (`task` set); `name` goes into the audit trail."""

    name: str
    task: TaskIdentity | None = None
    user: Any = None  # the auth manager's user, for people

    @property
    def is_task(self) -> bool:
        return self.task is not None


_SEEN_TTL_SECONDS = 60.0
_SEEN_MAX = 4096
_seen_instances: dict[tuple[str, str, str, str, int], float] = {}  # identity -> when it was checked


def _task_instance_matches(identity: TaskIdentity) -> bool:
    """The token's task instance exists with the ids it claims. A match is remembered for a minute
    (a task calls every few seconds while it holds a placement, and a task instance never changes
    its ids); a miss is never remembered, so a task instance made a moment later is found."""
    key = (identity.ti_id, identity.dag_id, identity.run_id, identity.task_id, identity.map_index)
    now = time.monotonic()
    checked = _seen_instances.get(key)
    if checked is not None and now - checked < _SEEN_TTL_SECONDS:
        return True
    if not _task_instance_in_db(identity):
        return False
    if len(_seen_instances) >= _SEEN_MAX:
        _seen_instances.clear()
    _seen_instances[key] = now
    return True


def _task_instance_in_db(identity: TaskIdentity) -> bool:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    try:
        ti_uuid = uuid.UUID(identity.ti_id)
    except ValueError:
        return False
    with create_session() as session:
        row = session.execute(
            select(TaskInstance.dag_id, TaskInstance.run_id, TaskInstance.task_id, TaskInstance.map_index).where(
                TaskInstance.id == ti_uuid
            )
        ).one_or_none()
    return row is not None and tuple(row) == (identity.dag_id, identity.run_id, identity.task_id, identity.map_index)


async def get_caller(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> Caller:
    token = bearer.credentials if bearer and bearer.scheme.lower() == "bearer" else None
    if token and is_task_token(token):
        try:
            identity = verify_task_token(token, airflow_jwt_secret())
        except TaskTokenError as err:
            raise HTTPException(status_code=401, detail=str(err)) from None
        if not await run_in_threadpool(_task_instance_matches, identity):
            raise HTTPException(status_code=403, detail="the token names no such task instance")
        return Caller(name=f"task:{identity.key}", task=identity)
    try:
        user = await get_user(request, None, bearer)
    except HTTPException as err:
        # Airflow says 403 for a token it cannot verify; to us that is no credential at all (401),
        # and 403 stays the answer for a known caller who may not do what they ask
        if err.status_code == 403:
            raise HTTPException(401, detail=err.detail, headers={"WWW-Authenticate": "Bearer"}) from None
        raise
    return Caller(name=f"user:{user.get_name()}", user=user)


def require_dag_edit(caller: Caller, dag_id: str) -> None:
    """People act on placements only where Airflow's auth manager lets them edit the DAG."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagDetails

    if caller.user is None or not get_auth_manager().is_authorized_dag(
        method="PUT", details=DagDetails(id=dag_id), user=caller.user
    ):
        raise HTTPException(status_code=403, detail=f"{caller.name} may not act on placements of DAG {dag_id!r}")


CallerDep = Annotated[Caller, Depends(get_caller)]


def caller_visibility(caller: CallerDep) -> Visibility:
    """Which placements the caller may read (sync: a database-backed auth manager may be asked)."""
    from airflow_mcsched.service.policy_source import current_policy

    return visibility_for(caller, current_policy())


VisibilityDep = Annotated[Visibility, Depends(caller_visibility)]
