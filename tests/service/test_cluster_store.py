"""Cluster profiles through a real, migrated Airflow metadata DB (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from airflow_mcsched.access.fleet_file import load_fleet_file, parse_fleet
from airflow_mcsched.access.profiles import ClusterState
from airflow_mcsched.service.cluster_store import ChangeKind, ClusterNotFound, ClusterStore
from airflow_mcsched.service.tables import AuditRow, NodePoolRow

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "examples" / "fleet.yaml"


def kinds(plan) -> dict[str, ChangeKind]:
    return {c.cluster: c.kind for c in plan.changes}


def test_apply_creates_then_is_idempotent(metadata_session_factory):
    fleet = load_fleet_file(FLEET)
    with metadata_session_factory() as s:
        first = ClusterStore(s).apply(fleet, "test")
    with metadata_session_factory() as s:
        second = ClusterStore(s).apply(fleet, "test")
        stored = ClusterStore(s).list()
        pools = s.scalars(select(NodePoolRow)).all()
    assert set(kinds(first).values()) == {ChangeKind.CREATE}
    assert set(kinds(second).values()) == {ChangeKind.UNCHANGED}
    assert sorted(stored, key=lambda c: c.name) == sorted(fleet.clusters, key=lambda c: c.name)
    assert len(pools) == sum(len(c.node_pools) for c in fleet.clusters)


def test_update_names_changed_fields_and_bumps_generation(metadata_session_factory):
    fleet = load_fleet_file(FLEET)
    with metadata_session_factory() as s:
        ClusterStore(s).apply(fleet, "test")
    doc = fleet.model_dump(mode="json")
    doc["clusters"][0]["node_pools"][0]["price_per_gpu_hour"] = 9.99
    with metadata_session_factory() as s:
        plan = ClusterStore(s).apply(parse_fleet(doc), "alice")
    with metadata_session_factory() as s:
        store = ClusterStore(s)
        name = fleet.clusters[0].name
        assert store.get(name).node_pools[0].price_per_gpu_hour == 9.99
        assert store.generation(name) == 2
        audit = s.scalars(select(AuditRow).where(AuditRow.action == "cluster.update")).one()
    change = next(c for c in plan.changes if c.kind is ChangeKind.UPDATE)
    path = f"node_pools[{fleet.clusters[0].node_pools[0].name}].price_per_gpu_hour"
    assert change.fields == {path: (1.2, 9.99)}
    assert audit.actor == "alice" and path in audit.details["changes"]


def test_dry_run_shows_the_diff_and_writes_nothing(metadata_session_factory):
    fleet = load_fleet_file(FLEET)
    with metadata_session_factory() as s:
        plan = ClusterStore(s).apply(fleet, "test", dry_run=True)
    with metadata_session_factory() as s:
        assert ClusterStore(s).list() == []
        assert s.scalars(select(AuditRow)).all() == []
    assert "dry run" in plan.describe() and all(k is ChangeKind.CREATE for k in kinds(plan).values())


def test_prune_deletes_clusters_the_file_no_longer_declares(metadata_session_factory):
    fleet = load_fleet_file(FLEET)
    with metadata_session_factory() as s:
        ClusterStore(s).apply(fleet, "test")
    smaller = fleet.model_copy(update={"clusters": fleet.clusters[:1]})
    with metadata_session_factory() as s:
        plan = ClusterStore(s).apply(smaller, "test", prune=True)
    with metadata_session_factory() as s:
        assert [c.name for c in ClusterStore(s).list()] == [fleet.clusters[0].name]
    assert sum(k is ChangeKind.DELETE for k in kinds(plan).values()) == len(fleet.clusters) - 1


def test_cordon_uncordon_and_delete_are_audited(metadata_session_factory):
    fleet = load_fleet_file(FLEET)
    name = fleet.clusters[1].name
    with metadata_session_factory() as s:
        ClusterStore(s).apply(fleet, "test")
    with metadata_session_factory() as s:
        ClusterStore(s).set_state(name, ClusterState.CORDONED, "ops", reason="disk firmware")
    with metadata_session_factory() as s:
        assert ClusterStore(s).get(name).state is ClusterState.CORDONED
        ClusterStore(s).set_state(name, ClusterState.ACTIVE, "ops")
        ClusterStore(s).delete(name, "ops")
    with metadata_session_factory() as s:
        with pytest.raises(ClusterNotFound, match="mcsched clusters list"):
            ClusterStore(s).get(name)
        actions = [a.action for a in s.scalars(select(AuditRow).where(AuditRow.subject == name).order_by(AuditRow.id))]
    assert actions == ["cluster.create", "cluster.cordoned", "cluster.active", "cluster.delete"]
