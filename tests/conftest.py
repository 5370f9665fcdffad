"""Test-wide set-up: a private AIRFLOW_HOME with SQLite, made before anything imports Airflow.

Airflow reads its configuration at import time, so the environment is set at the top of this
module, which pytest imports first. `airflow_db` migrates the metadata DB once per session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_HOME = Path(os.environ.get("MCSCHED_TEST_AIRFLOW_HOME") or tempfile.mkdtemp(prefix="mcsched-airflow-"))
(_HOME / "dags").mkdir(parents=True, exist_ok=True)

os.environ.update(
    {
        "AIRFLOW_HOME": str(_HOME),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": os.environ.get(
            "MCSCHED_TEST_SQL_ALCHEMY_CONN", f"sqlite:///{_HOME / 'airflow.db'}"
        ),
        "AIRFLOW__CORE__DAGS_FOLDER": str(_HOME / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__API_AUTH__JWT_SECRET": "mcsched-tests-" + "x" * 64,
        "AIRFLOW__CORE__FERNET_KEY": "",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,viewer:viewer",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(_HOME / "passwords.json"),
        # the plugin builds its app only where it is served; in-process API tests serve it, and
        # whichever test first imports the plugin fixes its app list for the session
        "MCSCHED_SERVE_APP": "1",
        "AIRFLOW__MCSCHED__SYNC_ENABLED": "False",
        "AIRFLOW__MCSCHED__ADMISSION_INTERVAL_SECONDS": "0",
    }
)
PASSWORDS = {"admin": "admin-pass", "viewer": "viewer-pass"}
(_HOME / "passwords.json").write_text(json.dumps(PASSWORDS))


@pytest.fixture(scope="session")
def airflow_home() -> Path:
    return _HOME


@pytest.fixture(scope="session")
def airflow_db(airflow_home: Path) -> Path:
    """A migrated Airflow metadata DB (core tables plus ours), once per test session."""
    airflow = Path(sys.executable).with_name("airflow")
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True, env=os.environ.copy())
    return airflow_home


def postgres_url(dbname: str) -> str:
    """The test PostgreSQL server's URL for one database (also used by tests/distributed)."""
    host = os.environ.get("MCSCHED_TEST_PG_HOST", "127.0.0.1")
    user = os.environ.get("MCSCHED_TEST_PG_USER", "postgres")
    return f"postgresql+psycopg2://{user}@{host}:5432/{dbname}"


def postgres_available() -> bool:
    try:
        import psycopg2

        psycopg2.connect(
            postgres_url("postgres").replace("postgresql+psycopg2", "postgresql"), connect_timeout=3
        ).close()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def postgres_airflow_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh PostgreSQL database migrated by `airflow db migrate`; CI requires it, a laptop may skip."""
    if not postgres_available():
        if os.environ.get("MCSCHED_REQUIRE_POSTGRES"):
            pytest.fail("PostgreSQL is required (MCSCHED_REQUIRE_POSTGRES is set) but not reachable on 127.0.0.1:5432")
        pytest.skip("PostgreSQL not reachable on 127.0.0.1:5432")
    import psycopg2

    dbname = f"mcsched_test_{os.getpid()}"
    admin = psycopg2.connect(postgres_url("postgres").replace("postgresql+psycopg2", "postgresql"))
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {dbname}")
        cur.execute(f"CREATE DATABASE {dbname}")
    url = postgres_url(dbname)
    home = tmp_path_factory.mktemp("airflow-pg-home")
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": url}
    airflow = Path(sys.executable).with_name("airflow")
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True, env=env)
    yield url
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
    admin.close()


@contextmanager
def airflow_sessions_on(url: str) -> Iterator[None]:
    """Airflow's own sessions (`create_session`, hence the in-process API server's) on another
    metadata DB for a while, then back on the test session's DB."""
    from airflow import settings

    with pytest.MonkeyPatch.context() as env:
        env.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", url)
        settings.configure_vars()
        settings.reconfigure_orm()
        try:
            yield
        finally:
            settings.dispose_orm()
    settings.configure_vars()
    settings.configure_orm()


@pytest.fixture(params=["sqlite", "postgres"])
def metadata_session_factory(request: pytest.FixtureRequest, airflow_db: Path):
    """A session factory on a real, migrated Airflow metadata DB: SQLite and PostgreSQL.

    Each test starts and ends with our tables empty (core tables untouched)."""
    from contextlib import contextmanager

    from sqlalchemy import create_engine, delete
    from sqlalchemy.orm import sessionmaker

    from airflow_mcsched.service.tables import metadata

    if request.param == "sqlite":
        url = os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    else:
        url = request.getfixturevalue("postgres_airflow_url")
    engine = create_engine(url)

    def wipe() -> None:
        with engine.begin() as conn:
            for table in reversed(metadata.sorted_tables):
                conn.execute(delete(table))

    wipe()
    maker = sessionmaker(bind=engine, expire_on_commit=False)

    @contextmanager
    def factory():
        session = maker()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    factory.engine = engine  # type: ignore[attr-defined]
    factory.dialect = request.param  # type: ignore[attr-defined]
    yield factory
    wipe()  # leave no leases or rows behind for tests that share the session's DB
    engine.dispose()


@pytest.fixture(scope="session")
def api_client(airflow_db: Path):
    """Airflow's real API server app, in process, with our plugin app mounted (sync off)."""
    from airflow.api_fastapi.app import create_app
    from fastapi.testclient import TestClient

    with TestClient(create_app(), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture(scope="session")
def user_tokens(api_client) -> dict[str, str]:
    """Bearer tokens for each test user, from Airflow's own login endpoint."""
    tokens = {}
    for user, password in PASSWORDS.items():
        r = api_client.post("/auth/token", json={"username": user, "password": password})
        assert r.status_code == 201, r.text
        tokens[user] = r.json()["access_token"]
    return tokens


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def live_api_url(airflow_db: Path):
    """Airflow's API server app (with our plugin) served over real HTTP by uvicorn in a thread.

    Workers' hooks reach it through `[mcsched] service_url`, as they would reach `airflow api-server`.
    """
    import threading
    import time

    import uvicorn
    from airflow.api_fastapi.app import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="live-api-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the in-process API server did not start")
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    os.environ["AIRFLOW__MCSCHED__SERVICE_URL"] = url + "/mcsched"
    yield url
    server.should_exit = True
    thread.join(timeout=10)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A test of a deployment whose calls are watched (tests/stack_watch.py) reports the stacks its
    components wrote while a call hung, when it fails."""
    from tests.stack_watch import StackWatch

    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        for value in getattr(item, "funcargs", {}).values():
            watch = getattr(value, "watch", None)
            if isinstance(watch, StackWatch):
                watch.report(report)
