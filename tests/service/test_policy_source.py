"""The policy in force is one object while it is unchanged, so admission cycles keep what the engine
learnt of the fleet (decision/plan_cache.py keeps it per policy object)."""

from __future__ import annotations

import os

from airflow_mcsched.decision import plan_cache
from airflow_mcsched.decision.admission import DEFAULT_PLUGINS
from airflow_mcsched.service.policy_source import current_policy
from tests.decision.fleet_factory import cluster, view_of


def test_without_a_policy_file_every_cycle_gets_the_same_default_policy_and_engine_memory(monkeypatch):
    monkeypatch.delenv("AIRFLOW__MCSCHED__POLICY_FILE", raising=False)
    assert not os.environ.get("AIRFLOW__MCSCHED__POLICY_FILE")
    first, second = current_policy(), current_policy()
    assert first is second
    view = view_of(cluster("a"))
    assert plan_cache.plan_memory(view, first, DEFAULT_PLUGINS) is plan_cache.plan_memory(view, second, DEFAULT_PLUGINS)


def test_a_policy_file_is_one_object_until_it_changes(tmp_path, monkeypatch):
    path = tmp_path / "policy.yaml"
    path.write_text("runners_up: 2\n")
    monkeypatch.setenv("AIRFLOW__MCSCHED__POLICY_FILE", str(path))
    first = current_policy()
    assert first.runners_up == 2 and current_policy() is first
    path.write_text("runners_up: 1\n")
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 5))
    changed = current_policy()
    assert changed.runners_up == 1 and changed is not first
