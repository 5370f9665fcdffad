"""The one client of the placement service, for operators, sensors and triggers (as providers have hooks).

Tasks run under the Task SDK with no ORM, so they reach the service over HTTP. Every call signs a
fresh short-lived token for the calling task instance. Transient failures (connection refused,
timeouts, 502/503/504, 500) are retried with exponential backoff; when the service stays
unreachable the error says where it looked and how to point it elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from airflow_mcsched.service.schemas import (
    EndReport,
    FaultReport,
    Handover,
    PlacementList,
    PlacementOut,
    PlacementSubmit,
    StartReport,
)
from airflow_mcsched.service.task_tokens import TaskIdentity, airflow_jwt_secret, sign_task_token

log = logging.getLogger(__name__)
RETRY_STATUS = frozenset({500, 502, 503, 504})


class PlacementServiceError(RuntimeError):
    """The service answered and refused (4xx): the message is its explanation."""

    def __init__(self, status_code: int, detail: Any, url: str) -> None:
        self.status_code = status_code
        self.detail = detail
        super().__init__(f"placement service refused {url} ({status_code}): {_readable(detail)}")


def _readable(detail: Any) -> str:
    """A 422's list of {loc, msg} as 'ask.gpus: msg; ...' (the field first), anything else as it came."""
    if isinstance(detail, list) and all(isinstance(d, dict) and "msg" in d for d in detail):
        return "; ".join(".".join(str(p) for p in d.get("loc", []) if p != "body") + f": {d['msg']}" for d in detail)
    return str(detail)


class PlacementServiceUnavailable(RuntimeError):
    """The service could not be reached (or kept failing) after every retry."""


def service_url() -> str:
    """`[mcsched] service_url`, else `[api] base_url` + /mcsched, else the API server's default address."""
    from airflow.configuration import conf

    url = conf.get("mcsched", "service_url", fallback="")
    if url:
        return url.rstrip("/")
    base = conf.get("api", "base_url", fallback="") or "http://localhost:8080"
    return base.rstrip("/") + "/mcsched"


def task_identity(context: Any) -> TaskIdentity:
    """Who the calling task instance is, from an Airflow task context."""
    ti = context["ti"]
    return TaskIdentity(
        ti_id=str(ti.id),
        dag_id=ti.dag_id,
        run_id=ti.run_id,
        task_id=ti.task_id,
        map_index=-1 if ti.map_index is None else ti.map_index,
        try_number=ti.try_number,
    )


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    text: bool = False  # the answer is text (a CSV export), not JSON


class PlacementHook:
    """Talks to the placement service as one task instance (`identity`) or with a person's `bearer_token`."""

    def __init__(
        self,
        identity: TaskIdentity | None = None,
        *,
        base_url: str | None = None,
        bearer_token: str | None = None,
        retries: int = 5,
        backoff_seconds: float = 0.5,
        timeout_seconds: float = 15.0,
        secret_provider: Callable[[], str] = airflow_jwt_secret,
    ) -> None:
        if identity is None and bearer_token is None:
            raise ValueError("PlacementHook needs a task identity or a bearer token")
        self.identity = identity
        self.base_url = (base_url or service_url()).rstrip("/")
        self.bearer_token = bearer_token
        self.retries = retries
        self.backoff_seconds = backoff_seconds
        self.timeout_seconds = timeout_seconds
        self._secret_provider = secret_provider

    # -- the calls ---------------------------------------------------------------------------------
    def submit(self, body: PlacementSubmit) -> PlacementOut:
        return PlacementOut.model_validate(self._run(_Call("POST", "/api/v1/placements", body.model_dump(mode="json"))))

    def get(self, placement_id: str) -> PlacementOut:
        return PlacementOut.model_validate(self._run(_Call("GET", f"/api/v1/placements/{placement_id}")))

    def renew(self, placement_id: str) -> PlacementOut:
        return PlacementOut.model_validate(self._run(_Call("POST", f"/api/v1/placements/{placement_id}/renew")))

    def start(self, placement_id: str, pod_name: str) -> PlacementOut:
        body = StartReport(pod_name=pod_name).model_dump()
        return PlacementOut.model_validate(self._run(_Call("POST", f"/api/v1/placements/{placement_id}/start", body)))

    def release(self, placement_id: str, outcome: str, message: str = "") -> PlacementOut:
        body = EndReport(outcome=outcome, message=message[:2000]).model_dump()
        return PlacementOut.model_validate(self._run(_Call("POST", f"/api/v1/placements/{placement_id}/release", body)))

    def fault(self, placement_id: str, reason: str, message: str = "") -> PlacementOut:
        body = FaultReport(reason=reason, message=message[:2000]).model_dump()
        return PlacementOut.model_validate(self._run(_Call("POST", f"/api/v1/placements/{placement_id}/fault", body)))

    def handover(self, placement_id: str, task_id: str) -> PlacementOut:
        body = Handover(task_id=task_id).model_dump()
        return PlacementOut.model_validate(
            self._run(_Call("POST", f"/api/v1/placements/{placement_id}/handover", body))
        )

    def list(self, **filters: Any) -> PlacementList:
        params = {k: v for k, v in filters.items() if v is not None}
        return PlacementList.model_validate(self._run(_Call("GET", "/api/v1/placements", params=params)))

    def cost_csv(self, **params: Any) -> str:
        """The cost report as CSV (`GET /api/v1/reports/cost?format=csv`); params as the endpoint takes them."""
        query = {k: v for k, v in params.items() if v is not None} | {"format": "csv"}
        return self._run(_Call("GET", "/api/v1/reports/cost", params=query, text=True))

    async def aget(self, placement_id: str) -> PlacementOut:
        """`get` for triggers, without blocking the triggerer's event loop."""
        return PlacementOut.model_validate(await self._arun(_Call("GET", f"/api/v1/placements/{placement_id}")))

    # -- transport ---------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        if self.identity is not None:
            token = sign_task_token(self.identity, self._secret_provider())
        else:
            token = self.bearer_token or ""
        return {"Authorization": f"Bearer {token}", "Accept": "application/json"}

    def _request(self, call: _Call) -> httpx.Request:
        return httpx.Request(
            call.method, self.base_url + call.path, json=call.body, params=call.params, headers=self._headers()
        )

    def _outcome(self, call: _Call, response: httpx.Response | None, error: Exception | None, attempt: int):
        """(done, value): a JSON body when done; raises for a refusal; (False, why) to retry."""
        url = self.base_url + call.path
        if response is not None and response.status_code < 400:
            return True, response.text if call.text else response.json()
        if response is not None and response.status_code not in RETRY_STATUS:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise PlacementServiceError(response.status_code, detail, f"{call.method} {url}")
        why = f"HTTP {response.status_code}" if response is not None else f"{type(error).__name__}: {error}"
        if attempt >= self.retries:
            raise PlacementServiceUnavailable(
                f"cannot reach the placement service at {self.base_url} ({call.method} {call.path}) after "
                f"{attempt + 1} tries: {why}. Is the Airflow API server running with the mcsched plugin, and is "
                "[mcsched] service_url (or [api] base_url) right for this worker?"
            )
        log.warning("placement service %s %s failed (%s); retrying", call.method, call.path, why)
        return False, why

    def _delay(self, attempt: int) -> float:
        return min(self.backoff_seconds * (2**attempt), 10.0)

    def _run(self, call: _Call) -> Any:
        with httpx.Client(timeout=self.timeout_seconds) as client:
            for attempt in range(self.retries + 1):
                response = error = None
                try:
                    response = client.send(self._request(call))
                except httpx.TransportError as err:
                    error = err
                done, value = self._outcome(call, response, error, attempt)
                if done:
                    return value
                time.sleep(self._delay(attempt))
        raise AssertionError("unreachable")

    async def _arun(self, call: _Call) -> Any:
        async with httpx.AsyncClient(timeout=self.timeout_seconds) as client:
            for attempt in range(self.retries + 1):
                response = error = None
                try:
                    response = await client.send(self._request(call))
                except httpx.TransportError as err:
                    error = err
                done, value = self._outcome(call, response, error, attempt)
                if done:
                    return value
                await asyncio.sleep(self._delay(attempt))
        raise AssertionError("unreachable")
