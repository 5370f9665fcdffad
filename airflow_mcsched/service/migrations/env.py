"""Alembic environment for the mcsched tables in the Airflow metadata DB.

The version table is our own (never core's `alembic_version`), and SQLite gets batch mode so
that later migrations can alter columns there too.
"""

from __future__ import annotations

from alembic import context

from airflow_mcsched.service.tables import VERSION_TABLE, include_only_ours, metadata


def _configure(**kwargs: object) -> None:
    context.configure(
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        compare_type=True,
        include_name=include_only_ours,
        **kwargs,
    )


def run_migrations_offline() -> None:
    _configure(url=context.config.get_main_option("sqlalchemy.url"), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        from airflow import settings

        with settings.engine.connect() as conn:
            _run(conn)
    else:
        _run(connection)


def _run(connection) -> None:
    _configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
