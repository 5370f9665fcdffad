"""Security of the placement service: no route without a login, task tokens scoped to their own
task instance and short-lived, and no secret (cluster tokens, kubeconfigs, JWTs) in logs, lineage,
API answers or UI pages."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import jwt
import pytest
from fastapi.routing import APIRoute
from sqlalchemy import select

from airflow_mcsched.service.task_tokens import (
    AUDIENCE,
    DEFAULT_TTL_SECONDS,
    TaskIdentity,
    airflow_jwt_secret,
    sign_task_token,
)
from tests.operators.placement_fleet import PlacementFleet, placement_fleet, run_dag, sync_capacity  # noqa: F401
from tests.reliability.api_state import API, bearer, row_counts, seed_fleet_and_placement, valid_submit
from tests.service.conftest import wipe_our_tables

PROBE_DAG = Path(__file__).parent / "dags" / "mcsched_security_probe.py"
PUBLIC = {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}  # the schema and its viewers: no data
GHOST = TaskIdentity(ti_id="0190f0f0-0000-7000-8000-000000000000", dag_id="d", run_id="r", task_id="t")


def _our_app(api_client):
    """The placement service as mounted in Airflow's API server (what `airflow api-server` serves)."""
    return next(r for r in api_client.app.routes if getattr(r, "path", None) == "/mcsched").app


def _routes(api_client) -> list[tuple[str, str]]:
    """(method, path) of every route of our app, path parameters filled in."""
    found = []
    for route in _our_app(api_client).routes:
        if isinstance(route, APIRoute) and route.path not in PUBLIC:
            path = route.path
            for name in route.param_convertors:
                path = path.replace("{" + name + "}", "x")
            found.extend((method, path) for method in sorted(route.methods))
    return found


def _expired_user_token(valid: str) -> str:
    """A real Airflow login token re-signed with the real secret, but expired an hour ago."""
    header = jwt.get_unverified_header(valid)
    claims = jwt.decode(valid, options={"verify_signature": False})
    now = int(time.time())
    claims.update(iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    return jwt.encode(claims, airflow_jwt_secret(), algorithm=header["alg"], headers={"kid": header.get("kid")})


def _credentials(user_tokens) -> dict[str, dict[str, str]]:
    forged_secret = "not-the-airflow-secret-" + "z" * 64
    admin = jwt.decode(user_tokens["admin"], options={"verify_signature": False})
    return {
        "none": {},
        "garbage": bearer("not-a-token"),
        "forged user token": bearer(jwt.encode(admin, forged_secret, algorithm="HS512")),
        "expired user token": bearer(_expired_user_token(user_tokens["admin"])),
        "forged task token": bearer(sign_task_token(GHOST, forged_secret)),
        "expired task token": bearer(sign_task_token(GHOST, airflow_jwt_secret(), ttl_seconds=-120)),
    }


def test_the_route_list_covers_the_api_and_the_ui_pages(api_client):
    paths = {path for _, path in _routes(api_client)}
    assert {f"/api/v1/placements/x/{a}" for a in ("renew", "start", "release", "fault", "handover")} <= paths
    assert {"/ui/fleet", "/ui/cost", "/ui/placements", "/ui/placements/x"} <= paths
    assert len(paths) >= 23


@pytest.mark.parametrize("kind", ["none", "garbage", "forged user token", "expired user token",
                                  "forged task token", "expired task token"])  # fmt: skip
def test_every_route_refuses_a_caller_without_a_valid_login(api_client, user_tokens, kind):
    headers = _credentials(user_tokens)[kind]
    before = row_counts()
    wrong = []
    for method, path in _routes(api_client):
        r = api_client.request(method, f"/mcsched{path}", headers=headers, json={}, follow_redirects=False)
        if path.startswith("/ui/"):
            ok = r.status_code == 303 and "/login" in r.headers.get("location", "")
        else:
            ok = r.status_code == 401
        if not ok:
            wrong.append(f"{method} {path}: {r.status_code} {r.text[:120]}")
    assert not wrong, "\n".join(wrong)
    assert row_counts() == before


def test_task_tokens_are_short_lived_and_under_our_audience_only(api_client):
    token = sign_task_token(GHOST, airflow_jwt_secret())
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["aud"] == AUDIENCE
    assert claims["exp"] - claims["iat"] == DEFAULT_TTL_SECONDS <= 120
    # worthless against Airflow's own API, whose audience is different
    assert api_client.get("/api/v2/dags", headers=bearer(token)).status_code in (401, 403)


# -- a task may act on its own placements only ------------------------------------------------


@pytest.fixture(scope="module")
def probe_tasks(airflow_home) -> dict[str, TaskIdentity]:
    """Real task-instance rows (a DAG run by dag.test), so their tokens pass the service's TI check."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    run = run_dag(PROBE_DAG, PROBE_DAG.stem, airflow_home / "dags")
    assert run.state == "success"
    with create_session() as session:
        tis = session.scalars(select(TaskInstance).where(TaskInstance.run_id == run.run_id)).all()
        return {
            ti.task_id: TaskIdentity(
                ti_id=str(ti.id), dag_id=ti.dag_id, run_id=ti.run_id, task_id=ti.task_id, try_number=ti.try_number
            )
            for ti in tis
        }


def _submit_for(identity: TaskIdentity) -> dict:
    body = valid_submit(identity.task_id)
    body["task"] = {"dag_id": identity.dag_id, "run_id": identity.run_id, "task_id": identity.task_id,
                    "map_index": identity.map_index, "try_number": identity.try_number}  # fmt: skip
    return body


@pytest.fixture
def owners_placement(api_client, user_tokens, probe_tasks) -> str:
    wipe_our_tables()
    seed_fleet_and_placement(api_client, user_tokens["admin"])
    owner = probe_tasks["owner"]
    r = api_client.post(f"{API}/placements", json=_submit_for(owner), headers=bearer(task_token(owner)))
    assert r.status_code == 201, r.text
    yield r.json()["id"]
    wipe_our_tables()


def task_token(identity: TaskIdentity) -> str:
    return sign_task_token(identity, airflow_jwt_secret())


@pytest.mark.parametrize(
    ("action", "body"),
    [
        ("renew", None),
        ("start", {"pod_name": "stolen"}),
        ("release", {"outcome": "killed"}),
        ("fault", {"reason": "ClusterApiUnavailable"}),
        ("handover", {"task_id": "neighbour"}),
    ],
)
def test_a_task_token_cannot_act_on_another_tasks_placement(api_client, probe_tasks, owners_placement, action, body):
    neighbour = bearer(task_token(probe_tasks["neighbour"]))
    before = row_counts()
    r = api_client.post(f"{API}/placements/{owners_placement}/{action}", json=body, headers=neighbour)
    assert r.status_code == 403, r.text
    assert row_counts() == before
    mine = api_client.post(
        f"{API}/placements/{owners_placement}/{action}", json=body, headers=bearer(task_token(probe_tasks["owner"]))
    )
    assert mine.status_code == 200, mine.text


def test_a_task_token_cannot_queue_work_in_another_tasks_name(api_client, probe_tasks, owners_placement):
    before = row_counts()
    body = _submit_for(probe_tasks["owner"]) | {"attempt": 2}
    r = api_client.post(f"{API}/placements", json=body, headers=bearer(task_token(probe_tasks["neighbour"])))
    assert r.status_code == 403, r.text
    assert row_counts() == before


def test_a_token_for_a_real_task_but_a_forged_identity_is_refused(api_client, probe_tasks, owners_placement):
    """The signature is right but the claims do not match the task-instance row."""
    owner = probe_tasks["owner"]
    forged = owner.model_copy(update={"task_id": "neighbour"})
    r = api_client.post(f"{API}/placements/{owners_placement}/renew", headers=bearer(task_token(forged)))
    assert r.status_code == 403, r.text


def test_a_task_reads_and_acts_on_its_own_placement_of_a_private_team(
    api_client, user_tokens, probe_tasks, owners_placement, tmp_path, monkeypatch
):
    """Privacy hides a team from other people, not a task from its own placement (nor its DAG run's)."""
    policy = tmp_path / "policy.yaml"
    policy.write_text("teams: {ml: {private: true}}\n")  # nobody is a member: only admins and the task see it
    monkeypatch.setenv("AIRFLOW__MCSCHED__POLICY_FILE", str(policy))
    path = f"{API}/placements/{owners_placement}"
    for token in (task_token(probe_tasks["owner"]), task_token(probe_tasks["neighbour"]), user_tokens["admin"]):
        assert api_client.get(path, headers=bearer(token)).status_code == 200
    listed = api_client.get(f"{API}/placements", headers=bearer(task_token(probe_tasks["owner"]))).json()
    assert [p["id"] for p in listed["placements"]] == [owners_placement]  # not the seeded one of another run
    assert api_client.get(path, headers=bearer(user_tokens["viewer"])).status_code == 404
    renewed = api_client.post(f"{path}/renew", headers=bearer(task_token(probe_tasks["owner"])))
    assert renewed.status_code == 200, renewed.text


# -- secrets never leave where they are kept ---------------------------------------------------


def _all_rows_as_text() -> str:
    from airflow.utils.session import create_session

    from airflow_mcsched.service.tables import metadata

    with create_session() as session:
        return "\n".join(str(tuple(row)) for table in metadata.sorted_tables for row in session.execute(table.select()))


def _secrets(fleet: PlacementFleet, user_tokens: dict[str, str]) -> dict[str, str]:
    """Every credential of the run: cluster tokens, their connections (kubeconfig-like JSON), JWTs."""
    found = {f"token of {h.name}": h.token for h in fleet.fleet.handles.values()}
    found |= {f"connection {name}": value for name, value in fleet.fleet.connection_env().items()}
    found |= {f"login token of {user}": token for user, token in user_tokens.items()}
    found["jwt secret"] = airflow_jwt_secret()
    found["task token"] = task_token(GHOST)
    return found


def test_no_secret_in_logs_lineage_api_answers_or_ui_pages(placement_fleet, api_client, user_tokens, caplog):  # noqa: F811
    caplog.set_level(logging.DEBUG)
    admin = bearer(user_tokens["admin"])
    answers: list[str] = []

    def call(method: str, path: str, **kw) -> None:
        r = api_client.request(method, f"/mcsched{path}", headers=admin, **kw)
        assert r.status_code < 400, (path, r.text)
        answers.append(r.text)

    flaky = next(iter(placement_fleet.fleet.handles.values()))
    flaky.set_fault(unavailable=True)  # an unhealthy read: its error message is stored and logged
    sync_capacity()
    flaky.clear_faults()
    sync_capacity()
    call("POST", "/api/v1/placements", json=valid_submit("secret-probe"))
    placement = json.loads(answers[-1])["id"]
    api_client.post(f"{API}/placements", json=valid_submit("ghost"), headers=bearer(task_token(GHOST)))
    for action, body in (("start", {"pod_name": "p"}), ("release", {"outcome": "succeeded"})):
        call("POST", f"/api/v1/placements/{placement}/{action}", json=body)
    for path in ("/api/v1/clusters", f"/api/v1/placements/{placement}", "/api/v1/placements", "/api/v1/audit",
                 "/api/v1/reports/cost", "/api/v1/reports/capacity", "/api/v1/reclaim", "/api/v1/retention",
                 "/ui/fleet", "/ui/cost", "/ui/placements", f"/ui/placements/{placement}"):  # fmt: skip
        call("GET", path)
    for name in placement_fleet.fleet.handles:
        call("GET", f"/api/v1/clusters/{name}")

    places = {"logs": caplog.text, "tables": _all_rows_as_text(), "answers": "\n".join(answers)}
    assert f"cluster {flaky.name} unhealthy" in places["logs"]  # the failed read was logged and stored
    assert "cluster.health" in places["tables"]
    leaks = [f"{secret} in {where}" for secret, value in _secrets(placement_fleet, user_tokens).items()
             for where, text in places.items() if value in text]  # fmt: skip
    assert not leaks, leaks
