"""Ask the service's own reports API from a page, in process, with the caller's credentials.

The Cost page shows exactly what `GET /mcsched/api/v1/reports/...` answers (same figures, same
access rules) without a network hop: the request goes straight into this app through httpx's ASGI
transport, carrying the page request's cookie and bearer header.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import Request

FORWARDED_HEADERS = ("authorization", "cookie")


@dataclass(frozen=True)
class ReportAnswer:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return self.status == 200

    @property
    def problem(self) -> str:
        """What to tell the reader when there is no report: the API's own words where it gave some."""
        if self.status == 404:
            return "The reports API is not available on this server."
        detail = self.body.get("detail") if isinstance(self.body, dict) else None
        return f"The reports API answered {self.status}: {detail or self.body}"


async def get_report(request: Request, path: str, params: dict[str, str]) -> ReportAnswer:
    """GET `path` (below the service's prefix, e.g. /api/v1/reports/cost) on the app serving `request`."""
    headers = {k: v for k, v in request.headers.items() if k in FORWARDED_HEADERS}
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://mcsched.internal") as client:
        r = await client.get(path, params=params, headers=headers)
    try:
        body = r.json()
    except ValueError:
        body = r.text
    return ReportAnswer(r.status_code, body)
