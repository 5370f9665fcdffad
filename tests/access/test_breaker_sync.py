"""A flapping virtual cluster through the real capacity sync: its breaker opens, the sync stops
reading it, the engine refuses it as ClusterUnhealthy saying the breaker is open, and it comes back
only after a run of good probes (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from airflow_mcsched.access.breaker import BreakerSettings
from airflow_mcsched.access.connections import ConnectionClients
from airflow_mcsched.access.sync import CapacitySync
from airflow_mcsched.decision import Policy, Reason, decide, parse_request
from airflow_mcsched.service.cluster_store import ClusterStore
from airflow_mcsched.service.settings import ServiceSettings
from airflow_mcsched.service.sync_ledger import DbSyncLedger
from airflow_mcsched.service.tables import AuditRow, ClusterStatusRow
from airflow_mcsched.service.view_loader import load_view
from airflow_mcsched.virtual.fleet import VirtualFleet
from tests.access.test_capacity_sync import fleet, status  # noqa: F401

FLAPPY = "cloud-h100"
COOL_DOWN = 0.3
SETTINGS = BreakerSettings(failures_to_open=3, cool_down=timedelta(seconds=COOL_DOWN), successes_to_close=3)


@pytest.fixture
def sync(fleet: VirtualFleet, metadata_session_factory) -> CapacitySync:  # noqa: F811
    with metadata_session_factory() as s:
        ClusterStore(s).apply(fleet.spec, "test")
    ledger = DbSyncLedger(metadata_session_factory, SETTINGS)
    return CapacitySync(ledger, ConnectionClients(), owner="test", timeout=2.0)


def read(sync: CapacitySync, fleet: VirtualFleet, ok: bool):  # noqa: F811
    """One sync round of the flapping cluster, its API up (`ok`) or answering 503."""
    if ok:
        fleet.cluster(FLAPPY).clear_faults()
    else:
        fleet.cluster(FLAPPY).set_fault(unavailable=True)
    [outcome] = sync.sync_once([FLAPPY])
    return outcome


def why_not_flappy(sync: CapacitySync) -> str | None:
    """The engine's message for refusing the flapping cluster as ClusterUnhealthy (None: not refused so)."""
    now = datetime.now(UTC)
    with sync.ledger.session_factory() as s:
        view = load_view(s, now)
    request = parse_request(
        {"id": "r", "arrival": now, "team": "ml", "gpus": 1, "gpu_types": ["NVIDIA-H100-80GB-HBM3"]}
    )
    [decision] = decide(view, [request], [], Policy(), now).decisions
    unhealthy = [r.message for r in decision.rejections if r.cluster == FLAPPY and r.reason == Reason.CLUSTER_UNHEALTHY]
    return unhealthy[0] if unhealthy else None


def test_a_failing_cluster_opens_its_breaker_and_gets_neither_reads_nor_work(sync, fleet):  # noqa: F811
    assert read(sync, fleet, ok=True).healthy
    outcomes = [read(sync, fleet, ok=False) for _ in range(3)]
    assert all(o.synced and not o.healthy for o in outcomes)
    st = status(sync, FLAPPY)
    assert not st.healthy and "circuit breaker open" in st.error and "503" in st.error
    assert "circuit breaker open" in why_not_flappy(sync)
    skipped = read(sync, fleet, ok=True)  # its API is back, but the breaker is still cooling down
    assert not skipped.synced and "circuit breaker" in skipped.error
    with sync.ledger.session_factory() as s:
        actions = [a.action for a in s.query(AuditRow).filter(AuditRow.subject == FLAPPY).order_by(AuditRow.id)]
    assert "cluster.breaker" in actions


def test_a_flapping_cluster_stays_open_until_a_run_of_good_probes(sync, fleet):  # noqa: F811
    for _ in range(3):
        read(sync, fleet, ok=False)
    for ok in (True, False, True, False):  # flapping: every bad probe re-opens it for another cool-down
        time.sleep(COOL_DOWN)
        outcome = read(sync, fleet, ok=ok)
        assert outcome.synced and not status(sync, FLAPPY).healthy
    time.sleep(COOL_DOWN)
    for _ in range(2):
        assert read(sync, fleet, ok=True).synced
        assert not status(sync, FLAPPY).healthy  # half-open: probing, still no work
        assert "half-open" in why_not_flappy(sync)
    read(sync, fleet, ok=True)
    back = status(sync, FLAPPY)
    assert back.healthy and back.error is None and back.free_gpus
    assert why_not_flappy(sync) is None  # closed: the engine places there again


CONFIGURED = [  # [mcsched] breaker_failures_to_open, breaker_cool_down_seconds, breaker_successes_to_close
    pytest.param(1, 5, 1, id="opens-at-the-first-failure-5s"),
    pytest.param(2, 1.5, 2, id="opens-at-the-second-failure-1.5s"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("failures_to_open", "cool_down", "successes_to_close"), CONFIGURED)
def test_the_configured_breaker_opens_probes_and_closes_as_set(
    fleet,  # noqa: F811
    metadata_session_factory,
    monkeypatch,
    failures_to_open,
    cool_down,
    successes_to_close,
):
    monkeypatch.setenv("AIRFLOW__MCSCHED__BREAKER_FAILURES_TO_OPEN", str(failures_to_open))
    monkeypatch.setenv("AIRFLOW__MCSCHED__BREAKER_COOL_DOWN_SECONDS", str(cool_down))
    monkeypatch.setenv("AIRFLOW__MCSCHED__BREAKER_SUCCESSES_TO_CLOSE", str(successes_to_close))
    with metadata_session_factory() as s:
        ClusterStore(s).apply(fleet.spec, "test")
    breaker = ServiceSettings.from_airflow_conf().breaker
    sync = CapacitySync(DbSyncLedger(metadata_session_factory, breaker), ConnectionClients(), owner="test", timeout=2.0)

    for _ in range(failures_to_open - 1):  # not yet: the cluster is unhealthy but still read every round
        assert read(sync, fleet, ok=False).synced
        assert "circuit breaker" not in status(sync, FLAPPY).error
    read(sync, fleet, ok=False)
    opened_at = opened_since(sync)
    retry = opened_at + timedelta(seconds=cool_down)
    assert f"no reads until {retry:%H:%M:%S}" in why_not_flappy(sync)  # the decision says the same cool-down
    assert not read(sync, fleet, ok=True).synced
    time.sleep(max(0.0, (opened_at + timedelta(seconds=cool_down / 2) - datetime.now(UTC)).total_seconds()))
    assert not read(sync, fleet, ok=True).synced  # half the cool-down: still no read
    time.sleep(max(0.0, (retry - datetime.now(UTC)).total_seconds()) + 0.05)
    for _ in range(successes_to_close - 1):
        assert read(sync, fleet, ok=True).synced  # a probe
        assert "half-open" in why_not_flappy(sync)
    assert read(sync, fleet, ok=True).synced
    assert status(sync, FLAPPY).healthy and why_not_flappy(sync) is None


def opened_since(sync: CapacitySync) -> datetime:
    with sync.ledger.session_factory() as s:
        opened_at = s.get(ClusterStatusRow, FLAPPY).breaker_opened_at
    assert opened_at is not None, "the breaker did not open"
    return opened_at


def test_the_capacity_sync_is_built_with_the_configured_breaker():
    from airflow_mcsched.cli.sync import build_sync

    breaker = BreakerSettings(failures_to_open=1, cool_down=timedelta(seconds=5), successes_to_close=2)
    assert build_sync(2.0, breaker).ledger.breaker == breaker
