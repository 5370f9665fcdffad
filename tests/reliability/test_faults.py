"""Faults around a placement, on real metadata DBs (SQLite and PostgreSQL) and a real HTTP server.

- a worker killed mid-step: while its pod runs the cluster's reads keep the reservation; once the
  pod is gone, nobody renews it and the capacity comes back within one lease;
- the API server restarted mid-run: a client retrying through the restart gets the placement it
  had, never a second one, and the reservation survives (all state is in the metadata DB);
- clock skew between worker and server: task tokens are accepted within the leeway, refused beyond
  it with an error saying why.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from sqlalchemy import select

from airflow_mcsched.service.placement_store import PlacementStore
from airflow_mcsched.service.schemas import PlacementState
from airflow_mcsched.service.status_store import StatusStore
from airflow_mcsched.service.tables import ReservationRow
from airflow_mcsched.service.task_tokens import (
    ALGORITHM,
    AUDIENCE,
    DEFAULT_LEEWAY_SECONDS,
    TaskIdentity,
    TaskTokenError,
    verify_task_token,
)
from tests.decision.fleet_factory import observe
from tests.service.test_placement_store import FLEET, POLICY, db, submit  # noqa: F401  (db is a fixture)

H100 = ["NVIDIA-H100-80GB-HBM3"]
H100_CLUSTER = FLEET.cluster("cloud-h100")


def cycle(db, when: datetime, seen: list[str] = (), full: bool = False) -> None:  # noqa: F811
    """A capacity read of cloud-h100 at `when` (its one node full or free), then an admission cycle."""
    with db() as s:
        free = {"h100-spot": [0]} if full else None
        StatusStore(s).record(observe(H100_CLUSTER, free=free, at=when, seen=list(seen)))
        PlacementStore(s, POLICY).run_cycle(when)


def state_of(db, placement_id: str) -> str:  # noqa: F811
    with db() as s:
        return PlacementStore(s, POLICY).get(placement_id).state


def test_a_killed_worker_gives_its_gpus_back_within_one_lease(db):  # noqa: F811
    t0 = datetime.now(UTC).replace(microsecond=0)
    with db() as s:
        store = PlacementStore(s, POLICY)
        a = store.submit(submit("train", gpus=8, gpu_types=H100), "worker-1", t0)
        store.run_cycle(t0)
        a_id = a.id
        rsv = store.out(store.get(a_id)).reservation_id
        store.start(a_id, "pod-a", t0)
        b_id = store.submit(submit("eval", gpus=8, gpu_types=H100), "worker-2", t0).id
    # the worker dies at t0 + 1 min; its pod runs on for 20 minutes, seen by every capacity read
    pod_gone = t0 + timedelta(minutes=21)
    t = t0
    while t + timedelta(minutes=5) < pod_gone:
        t += timedelta(minutes=5)
        cycle(db, t, seen=[rsv], full=True)
        assert state_of(db, a_id) == "running" and state_of(db, b_id) == "pending"
    last_seen = t  # the last read that vouched for A's pod
    # the pod is gone (node free, nothing seen); nobody renews: the lease runs out, then B gets the node
    lease = POLICY.lease
    admitted_at = None
    t = pod_gone
    while admitted_at is None and t < pod_gone + 2 * lease:
        t += timedelta(minutes=1)
        cycle(db, t)
        if state_of(db, b_id) == PlacementState.ADMITTED.value:
            admitted_at = t
        else:
            assert state_of(db, a_id) == "running", "A's reservation holds until its lease ends"
    assert admitted_at is not None and admitted_at - last_seen <= lease + timedelta(minutes=1)
    with db() as s:
        active = s.scalars(select(ReservationRow).where(ReservationRow.active.is_(True))).all()
    assert [r.placement_id for r in active] == [b_id]  # A reclaimed, B holds: never both


@pytest.fixture
def restartable_server(airflow_db):
    """Airflow's API server app (our plugin inside) in uvicorn, stopped and started on one port."""
    import uvicorn
    from airflow.api_fastapi.app import create_app

    from tests.conftest import free_port

    port = free_port()
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start() -> None:
        server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the API server did not start"
            time.sleep(0.05)
        servers.append((server, thread))

    def stop() -> None:
        server, thread = servers.pop()
        server.should_exit = True
        thread.join(timeout=15)

    start()
    yield f"http://127.0.0.1:{port}", start, stop
    while servers:
        stop()


@pytest.fixture
def fleet_in_airflow_db(airflow_db):
    """The example fleet, freshly read, in the API server's own metadata DB; our tables emptied after."""
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    from airflow_mcsched.service.cluster_store import ClusterStore
    from airflow_mcsched.service.tables import metadata

    def wipe() -> None:
        with create_session() as s:
            for table in reversed(metadata.sorted_tables):
                s.execute(delete(table))

    wipe()
    with create_session() as s:
        ClusterStore(s).apply(FLEET, "test")
        for profile in FLEET.clusters:
            StatusStore(s).record(observe(profile, at=datetime.now(UTC)))
    yield
    wipe()


def test_a_restarted_api_server_loses_and_doubles_nothing(restartable_server, user_tokens, fleet_in_airflow_db):
    import httpx

    url, start, stop = restartable_server
    api = f"{url}/mcsched/api/v1/placements"
    headers = {"Authorization": f"Bearer {user_tokens['admin']}"}
    body = submit("restart-me", gpus=1, gpu_types=["NVIDIA-L4"]).model_dump(mode="json")
    first = httpx.post(api, json=body, headers=headers, timeout=30)
    assert first.status_code == 201, first.text
    placed = first.json()
    assert placed["state"] == "admitted" and placed["reservation_id"]
    stop()
    with pytest.raises(httpx.ConnectError):  # the worker's call during the restart fails; its hook retries
        httpx.post(api, json=body, headers=headers, timeout=5)
    start()
    again = httpx.post(api, json=body, headers=headers, timeout=30)
    assert again.status_code in (200, 201) and again.json()["id"] == placed["id"]
    assert again.json()["reservation_id"] == placed["reservation_id"] and again.json()["state"] == "admitted"
    listed = httpx.get(api, params={"run_id": body["task"]["run_id"]}, headers=headers, timeout=30).json()
    assert [p["id"] for p in listed["placements"]] == [placed["id"]]


def _token(secret: str, issued_at: int, ttl: int = 300) -> str:
    identity = TaskIdentity(ti_id="0199", dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    claims = {"sub": identity.ti_id, "aud": AUDIENCE, "iat": issued_at, "nbf": issued_at, "exp": issued_at + ttl}
    claims |= identity.model_dump(exclude={"ti_id"})
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


@pytest.mark.parametrize("skew", [-DEFAULT_LEEWAY_SECONDS + 5, 0, DEFAULT_LEEWAY_SECONDS - 5])
def test_worker_clock_skew_within_the_leeway_is_accepted(skew):
    secret = "s" * 64
    assert verify_task_token(_token(secret, int(time.time()) + skew), secret).task_id == "t"


def test_worker_clock_far_ahead_or_behind_is_refused_with_the_reason():
    secret = "s" * 64
    ahead = _token(secret, int(time.time()) + DEFAULT_LEEWAY_SECONDS + 120)
    with pytest.raises(TaskTokenError, match="invalid task token"):
        verify_task_token(ahead, secret)
    behind = _token(secret, int(time.time()) - 300 - DEFAULT_LEEWAY_SECONDS - 120)
    with pytest.raises(TaskTokenError, match="expired"):
        verify_task_token(behind, secret)
