"""`mcsched report ...` and `mcsched reclaim`, run in process against Airflow's test metadata DB."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from airflow_mcsched.cli.main import main
from airflow_mcsched.governance.report_format import parse_cost_csv
from tests.governance.lineage_cases import DAY, NOW

WINDOW = ["--since", DAY.isoformat(), "--until", NOW.isoformat()]


@pytest.fixture
def mcsched(capsys):
    def run(*args: str, code: int = 0) -> str:
        assert main(list(args)) == code
        out, err = capsys.readouterr()
        return out if code == 0 else err

    return run


def test_cost_as_table_csv_and_json_agree(airflow_lineage, mcsched):
    table = mcsched("report", "cost", "--group-by", "team,project", *WINDOW)
    assert table.splitlines()[0].split() == ["TEAM", "PROJECT", "GPU_HOURS", "COST", "PLACEMENTS"]
    assert "team-a  proj-y   2.00       8.00  1" in table and "10.00 GPU-hours, cost 23.00" in table
    as_json = json.loads(mcsched("report", "cost", "--group-by", "team,project", *WINDOW, "--format", "json"))
    as_csv = mcsched("report", "cost", "--group-by", "team,project", *WINDOW, "--format", "csv")
    assert parse_cost_csv(as_csv) == as_json["rows"] and as_json["total"]["cost"] == 23.0


def test_cost_of_one_team(airflow_lineage, mcsched):
    doc = json.loads(
        mcsched("report", "cost", "--team", "team-b", "--group-by", "gpu_type", *WINDOW, "--format", "json")
    )
    assert doc["rows"] == [{"gpu_type": "NVIDIA-A100-SXM4-80GB", "gpu_hours": 4.0, "cost": 8.0, "placements": 1}]


def test_bad_input_names_the_field_and_exits_2(airflow_lineage, mcsched):
    err = mcsched("report", "cost", "--group-by", "owner", code=2)
    assert err.startswith("mcsched: group_by: unknown key(s) ['owner']")
    assert "since: 'last tuesday' is not a time" in mcsched("report", "cost", "--since", "last tuesday", code=2)


def test_utilisation_waiting_top_quota_and_capacity_print(airflow_lineage, mcsched):
    assert "c1" in mcsched("report", "utilisation", *WINDOW)
    waiting = json.loads(mcsched("report", "waiting", *WINDOW, "--format", "json"))
    assert {t["team"] for t in waiting["teams"]} == {"team-a", "team-b", "team-c"}
    assert mcsched("report", "top", "--by", "project", "-n", "1", *WINDOW).splitlines()[2].startswith("proj-x")
    assert json.loads(mcsched("report", "quota", "--format", "json")) == {"quotas": []}
    assert "CLUSTER" in mcsched("report", "capacity")


def test_audit_pages_newest_first(airflow_lineage, mcsched):
    from airflow.utils.session import create_session

    from airflow_mcsched.service.cluster_store import audit

    with create_session() as session:
        for i in range(3):
            audit(session, "cli:tester", "cluster.cordon", "cluster", f"c{i}", reason=f"r{i}")
    first = json.loads(mcsched("report", "audit", "--limit", "2", "--format", "json"))
    assert [e["subject"] for e in first["entries"]] == ["c2", "c1"] and first["next_cursor"]
    rest = json.loads(mcsched("report", "audit", "--cursor", first["next_cursor"], "--format", "json"))
    assert [e["subject"] for e in rest["entries"]] == ["c0"]
    assert "more: --cursor" in mcsched("report", "audit", "--limit", "1", "--actor", "cli:tester")


def test_reclaim_dry_run_lists_and_reclaim_frees(empty_airflow_tables, mcsched):
    from airflow.utils.session import create_session

    from airflow_mcsched.service.cluster_store import ClusterStore
    from airflow_mcsched.service.placement_store import PlacementStore
    from airflow_mcsched.service.policy_source import current_policy
    from airflow_mcsched.service.status_store import StatusStore
    from tests.decision.fleet_factory import observe
    from tests.service.test_placement_store import FLEET, submit

    now = datetime.now(UTC)
    long_ago = now - timedelta(hours=1)
    with create_session() as session:
        ClusterStore(session).apply(FLEET, "test")
        StatusStore(session).record(observe(FLEET.cluster("cloud-h100"), at=long_ago))
        store = PlacementStore(session, current_policy())
        row = store.submit(submit("idle", gpus=8, gpu_types=["NVIDIA-H100-80GB-HBM3"]), "test", long_ago)
        store.run_cycle(long_ago)
        assert row.state == "admitted"
        placement_id = row.id
    listed = mcsched("reclaim", "--dry-run")
    assert placement_id in listed and "LeaseExpired" in listed and "dry run, nothing changed" in listed
    assert "reclaimed 1" in mcsched("reclaim")
    assert "0 to reclaim" in mcsched("reclaim", "--dry-run")
    with create_session() as session:
        assert PlacementStore(session, current_policy()).get(placement_id).state == "expired"
