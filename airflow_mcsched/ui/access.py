"""Who may see a page: anyone logged in to Airflow, checked exactly as the service's JSON API checks
it; what a page shows of a private team is what the API would answer that caller (`page_visibility`).

The Airflow UI keeps its login in the `_token` cookie (the login page sets it on the UI's base path,
JWTRefreshMiddleware renews it), and it shows our pages in a same-origin iframe, so the browser sends
that cookie with every page request. `service.auth.get_caller` validates it through Airflow's auth
manager (a bearer header works too). Without a valid login a page never renders: the browser is sent
to Airflow's login page, which brings it back afterwards.
"""

from __future__ import annotations

from typing import Annotated

from airflow.api_fastapi.core_api.security import bearer_scheme
from fastapi import Depends, HTTPException, Request
from fastapi.responses import RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials

from airflow_mcsched.service.auth import Caller, get_caller
from airflow_mcsched.service.visibility import Visibility, visibility_for


class LoginRequired(Exception):
    """Raised by `page_caller`; the app answers it with a redirect to Airflow's login page."""

    def __init__(self, back_to: str) -> None:
        super().__init__(back_to)
        self.back_to = back_to


async def page_caller(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> Caller:
    try:
        return await get_caller(request, bearer)
    except HTTPException as err:
        if err.status_code in (401, 403):
            raise LoginRequired(str(request.url)) from None
        raise


def login_url(back_to: str) -> str:
    """Airflow's own login page (whatever the auth manager is), returning to `back_to` afterwards."""
    from airflow.api_fastapi.app import get_auth_manager

    return get_auth_manager().get_url_login(next_url=back_to)


async def redirect_to_login(request: Request, exc: Exception) -> RedirectResponse:
    assert isinstance(exc, LoginRequired)
    return RedirectResponse(login_url(exc.back_to), status_code=303)


PageCaller = Annotated[Caller, Depends(page_caller)]


def page_visibility(caller: PageCaller) -> Visibility:
    """Which placements the page's reader may see, by the same rule as the API."""
    from airflow_mcsched.service.policy_source import current_policy

    return visibility_for(caller, current_policy())


PageVisibility = Annotated[Visibility, Depends(page_visibility)]
