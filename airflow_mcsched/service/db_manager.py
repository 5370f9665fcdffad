"""Registers our tables with `airflow db migrate` as Airflow providers do (edge3, fab).

Declared in provider info under `db-managers`: a fresh metadata DB gets `create_all` + stamp,
an existing one gets our Alembic migrations (own version table, never core's).
"""

from __future__ import annotations

from pathlib import Path

from airflow.utils.db_manager import BaseDBManager

from airflow_mcsched.service.tables import VERSION_TABLE, metadata

_MIGRATIONS = Path(__file__).with_name("migrations")


class McschedDBManager(BaseDBManager):
    metadata = metadata
    migration_dir = str(_MIGRATIONS)
    alembic_file = str(_MIGRATIONS / "alembic.ini")
    version_table_name = VERSION_TABLE
    supports_table_dropping = True
    revision_heads_map = {"0.1.0": "0005_rejection_lists"}  # the head each release ships (for downgrades)
