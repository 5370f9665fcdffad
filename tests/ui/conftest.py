"""Data for the page tests without a browser: the in-process API server app on the session's SQLite DB."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from airflow_mcsched.service.status_store import StatusStore
from tests.decision.fleet_factory import observe
from tests.ui.fleet_data import FLEET, apply_fleet, record_history, submit_today


@pytest.fixture
def pages_data(metadata_session_factory, api_client, user_tokens) -> dict:
    """The example fleet, read with all capacity free, four days of history and today's steps."""
    now = datetime.now(UTC)
    with metadata_session_factory() as session:
        apply_fleet(session)
        for profile in FLEET.clusters:
            StatusStore(session).record(observe(profile, at=now))
    record_history(metadata_session_factory, now)
    admin = {"Authorization": f"Bearer {user_tokens['admin']}"}

    def post(path: str, body: dict) -> dict:
        r = api_client.post(path, json=body, headers=admin)
        assert r.status_code == 201, r.text
        return r.json()

    return submit_today(post)
