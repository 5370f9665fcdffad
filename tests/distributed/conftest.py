"""The Celery deployment, once per module (about 40 s to start; stopped when the module is done,
so its eleven processes do not idle under the rest of the suite), and a skip (not a failure) when
Redis or PostgreSQL is missing on a laptop; CI sets MCSCHED_REQUIRE_POSTGRES and
starts both (.ci/ensure-postgres, .ci/ensure-redis), so there a missing server fails loudly."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.distributed.celery_scenario import celery_deployment, postgres_available, redis_available, redis_url
from tests.e2e.conftest import Deployment


@pytest.fixture(scope="module")
def celery_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    missing = [
        name
        for name, up in (("Redis at " + redis_url(), redis_available(redis_url())),
                         ("PostgreSQL on 127.0.0.1:5432", postgres_available()))
        if not up
    ]  # fmt: skip
    if missing:
        if os.environ.get("MCSCHED_REQUIRE_POSTGRES"):
            pytest.fail(f"the Celery test needs {' and '.join(missing)} (MCSCHED_REQUIRE_POSTGRES is set)")
        pytest.skip(f"the Celery test needs {' and '.join(missing)}, not reachable")
    with celery_deployment(tmp_path_factory.mktemp("celery-airflow")) as deployment:
        yield deployment
