"""Our Alembic migrations: they build the same schema as the ORM, and `airflow db migrate`
upgrades an existing DB in place, keeping its rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from airflow_mcsched.service.db_manager import McschedDBManager
from airflow_mcsched.service.tables import VERSION_TABLE, include_only_ours, metadata


def alembic_config(connection) -> Config:
    cfg = Config(McschedDBManager.alembic_file)
    cfg.set_main_option("script_location", McschedDBManager.migration_dir)
    cfg.attributes["connection"] = connection
    return cfg


def test_migrations_build_exactly_the_orm_schema(tmp_path: Path):
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "heads")
    with engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn,
            opts={"version_table": VERSION_TABLE, "compare_type": True, "include_name": include_only_ours},
        )
        assert compare_metadata(ctx, metadata) == []


def test_migrations_build_exactly_the_orm_schema_on_postgres(postgres_airflow_url: str):
    # the fixture's DB was made fresh by `airflow db migrate` (create_all); rebuild ours by migrations
    engine = create_engine(postgres_airflow_url)
    with engine.begin() as conn:
        metadata.drop_all(conn)
        conn.execute(text(f"DROP TABLE IF EXISTS {VERSION_TABLE}"))
        command.upgrade(alembic_config(conn), "heads")
    with engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn,
            opts={"version_table": VERSION_TABLE, "compare_type": True, "include_name": include_only_ours},
        )
        assert compare_metadata(ctx, metadata) == []
    engine.dispose()


def test_airflow_db_migrate_upgrades_an_older_mcsched_schema_in_place(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    db = home / "airflow.db"
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{db}",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
    }
    airflow = str(Path(sys.executable).with_name("airflow"))
    subprocess.run([airflow, "db", "migrate"], check=True, capture_output=True, env=env)

    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:  # go back to the first release's schema and put a row in it
        command.downgrade(alembic_config(conn), "0001_cluster_profiles")
        conn.execute(
            text(
                "INSERT INTO mcsched_cluster (name, kind, region, zone, failure_domain, connection_id, namespace,"
                " state, spec, generation, created_at, updated_at) VALUES ('old', 'on-prem', 'r', 'z', 'r/z',"
                " 'mcsched_old', 'default', 'active', '{}', 1, '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
            )
        )
    assert "mcsched_cluster_status" not in inspect(engine).get_table_names()

    out = subprocess.run([airflow, "db", "migrate"], check=True, capture_output=True, text=True, env=env)
    assert "Running upgrade 0001_cluster_profiles -> 0002_status_audit" in out.stdout + out.stderr
    with engine.connect() as conn:
        assert conn.execute(text("SELECT name FROM mcsched_cluster")).scalars().all() == ["old"]
        head = ScriptDirectory.from_config(alembic_config(conn)).get_current_head()
        assert conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar() == head
    assert {"mcsched_cluster_status", "mcsched_audit"} <= set(inspect(engine).get_table_names())


def test_going_back_before_kept_rejection_lists_puts_each_list_inline_again(tmp_path: Path):
    """Revision 0005 keeps rejections apart; downgrading loses none of them: each placement's list
    goes back into its explanation, where revision 0004 reads it."""
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    rejections = [{"cluster": "c", "pool": "p", "reason": "NoMatchingGpuType", "message": "m", "lasting": True}]
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "heads")
        conn.execute(
            text("INSERT INTO mcsched_rejection_list (digest, rejections, created_at) VALUES ('d1', :r, '2026-01-01')"),
            {"r": json.dumps(rejections)},
        )
        for pid, digest in (("kept-apart", "d1"), ("inline", None)):
            explanation = {"outcome": "waiting", "reason": "WaitingForCapacity", "summary": "s"}
            if digest is None:
                explanation["rejections"] = [{**rejections[0], "cluster": "other"}]
            conn.execute(
                text(
                    "INSERT INTO mcsched_placement (id, dag_id, run_id, task_id, map_index, try_number, attempt,"
                    " team, kind, interruptible, state, ask, request, submitted_by, queued_at, gpus, explanation,"
                    " rejections_digest) VALUES (:id, 'd', 'r', :id, -1, 1, 1, 't', 'training', 0, 'pending', '{}',"
                    " '{}', 'test', '2026-01-01', 1, :e, :digest)"
                ),
                {"id": pid, "e": json.dumps(explanation), "digest": digest},
            )
        command.downgrade(alembic_config(conn), "0004_cluster_breaker")
    with engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT id, explanation FROM mcsched_placement")).tuples().all())
    assert json.loads(stored["kept-apart"])["rejections"] == rejections
    assert json.loads(stored["inline"])["rejections"][0]["cluster"] == "other"
    assert "mcsched_rejection_list" not in inspect(engine).get_table_names()
    assert "rejections_digest" not in {c["name"] for c in inspect(engine).get_columns("mcsched_placement")}


def test_the_db_manager_names_the_migrations_head_for_this_release():
    """`airflow db downgrade --to-version` finds our revision through this map: it must name the
    head the installed release ships, not one a later migration left behind."""
    head = ScriptDirectory.from_config(alembic_config(None)).get_current_head()
    assert McschedDBManager.revision_heads_map[version("airflow-mcsched")] == head
