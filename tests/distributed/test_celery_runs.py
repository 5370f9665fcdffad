"""The distributed path: CeleryExecutor with two workers on one PostgreSQL metadata DB. Four
concurrent runs of a DAG with two 4-GPU steps each ask for more than one cluster holds; both
workers place steps at the same time, and our tables show no pool ever over-committed and every
reservation released."""

from __future__ import annotations

import json

import pytest

from tests.distributed.celery_scenario import WORKERS, run_concurrently, summary, violations

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_concurrent_runs_on_two_celery_workers_place_without_over_commit(celery_stack):
    outcome = run_concurrently(celery_stack)
    print(json.dumps(summary(outcome), indent=2))  # shown with -s and kept in the captured output
    assert outcome.workers == set(WORKERS)
    assert violations(outcome, celery_stack.fleet.spec) == []
    assert len({(p.cluster, p.pool) for p in outcome.placements}) >= 2  # the demand was spread
