"""The placement API fuzzed from its own OpenAPI schema: no 5xx, answers that match the schema, and
nothing written by a request the service refused, on SQLite and on PostgreSQL.

Schemathesis generates valid and invalid inputs for every operation under /mcsched/api/v1; each
goes through Airflow's real API server app in process (the `api_client`), as the admin user, so
the requests reach the handlers behind authentication. A seeded placement id is substituted into
half of the path parameters so that renew/start/release/fault/handover get past the lookup.
(Schemathesis' own pytest plugin does not run on pytest 9, so each operation gets a plain
Hypothesis `@given` over the operation's strategy, and every failing operation is reported.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.conftest import airflow_sessions_on
from tests.reliability.api_state import bearer, row_counts, seed_fleet_and_placement
from tests.service.conftest import wipe_our_tables

EXAMPLES_PER_OPERATION = {"sqlite": 15, "postgres": 10}  # x 19 operations x 2 modes: about a minute each


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def metadata_db(request: pytest.FixtureRequest, api_client) -> Iterator[str]:
    """The metadata DB the API server in process works on: the test session's SQLite, or PostgreSQL."""
    if request.param == "sqlite":
        yield request.param
        return
    with airflow_sessions_on(request.getfixturevalue("postgres_airflow_url")):
        yield request.param


@pytest.fixture(scope="module")
def seeded_placement(api_client, user_tokens, metadata_db) -> str:
    wipe_our_tables()
    yield seed_fleet_and_placement(api_client, user_tokens["admin"])
    wipe_our_tables()


@pytest.fixture(scope="module")
def api_operations(api_client, seeded_placement) -> list[APIOperation]:
    """Our app's schema as served, narrowed to the versioned API (the UI pages are not in it)."""
    raw = api_client.get("/mcsched/openapi.json").json()
    schema = schemathesis.openapi.from_dict(raw)
    schema.config.generation.update(with_security_parameters=False)  # our bearer token, not generated ones
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 19
    return [op for op in operations if op.path.startswith("/api/v1/")]


def _httpx_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Schemathesis speaks `requests`; the test client is httpx: same keys, but a raw body is `content`."""
    out = {k: v for k, v in kwargs.items() if k not in ("data", "verify", "allow_redirects", "timeout")}
    if kwargs.get("data") is not None:
        out["content"] = kwargs["data"]
    return out


def _exercise(api_client, token: str, placement_id: str) -> Callable[[Case], None]:
    def check(case: Case) -> None:
        if "placement_id" in (case.path_parameters or {}) and hash(str(case.path_parameters)) % 2 == 0:
            case.path_parameters["placement_id"] = placement_id
        before = row_counts()
        kwargs = case.as_transport_kwargs(base_url="http://127.0.0.1/mcsched", headers=bearer(token))
        response = api_client.request(**_httpx_kwargs(kwargs))
        case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])
        if 400 <= response.status_code < 500:
            assert row_counts() == before, f"{case.method} {case.formatted_path}: {response.status_code} wrote rows"

    return check


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
def test_every_operation_survives_generated_input(
    api_client, user_tokens, metadata_db, seeded_placement, api_operations, mode
):
    check = _exercise(api_client, user_tokens["admin"], seeded_placement)
    failures: dict[str, str] = {}
    for operation in api_operations:
        run = settings(
            max_examples=EXAMPLES_PER_OPERATION[metadata_db],
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )(given(case=operation.as_strategy(generation_mode=mode))(check))
        try:
            run()
        except Unsatisfiable:  # nothing to make invalid: an operation without parameters or body
            assert mode is GenerationMode.NEGATIVE, operation.label
        except (Exception, BaseExceptionGroup) as err:  # collect every operation's failure, then report them together
            failures[operation.label] = f"{type(err).__name__}: {err}"[:1500]
    assert not failures, "\n\n".join(f"{label}\n{text}" for label, text in failures.items())
