"""Fixtures for tests that go through Airflow's own session (API routes in process, the CLI in process)."""

from __future__ import annotations

import pytest


def wipe_our_tables() -> None:
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    from airflow_mcsched.service.tables import metadata

    with create_session() as session:
        for table in reversed(metadata.sorted_tables):
            session.execute(delete(table))


@pytest.fixture
def empty_airflow_tables(airflow_db):
    """Our tables in Airflow's test metadata DB, empty before and after the test."""
    wipe_our_tables()
    yield
    wipe_our_tables()


@pytest.fixture
def airflow_lineage(airflow_db):
    """The hand-computed lineage (`tests.governance.lineage_cases`) in Airflow's test metadata DB."""
    from airflow.utils.session import create_session

    from tests.governance.lineage_cases import placement_rows

    wipe_our_tables()
    with create_session() as session:
        session.add_all(placement_rows())
    yield
    wipe_our_tables()
