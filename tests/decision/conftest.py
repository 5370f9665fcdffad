"""Fixtures shared by the engine's tests."""

from __future__ import annotations

import pytest

from airflow_mcsched.decision import plan_cache


@pytest.fixture
def fresh_memory():
    """The engine's memory (plans, verdicts, ranking starts) dropped before and after the test, for
    tests that compare what it remembers with what it works out anew."""
    plan_cache.forget_all()
    yield
    plan_cache.forget_all()
