"""A filter is a hard yes/no about one cluster or node pool, with a stable reason code and a message.

New policy = a new filter class in the pipeline, not a new `if` in the engine. A filter declares
what its verdict depends on, so the engine can judge each thing once:

- `scope`: what it looks at: the cluster, a pool's declared traits, or a pool's live capacity.
- `lasting`: the verdict depends only on what the cluster or pool *is*, the policy and the part of
  the request its `signature` returns, not on free capacity, the cycle's grants or the clock.
  Requests alike in every lasting filter's signature share one judgement for as long as the view
  lives (across cycles, see plan_cache.py); lasting filters run first.
- `request_independent`: the same verdict for every request in a cycle (cluster state and health);
  these may read the clock (`ctx.cycle.now`: staleness) and are judged once per view and `now`.
- `fit`: a pure function of the demand and the pool's capacity; remembered per capacity object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import IntEnum
from typing import ClassVar

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.decision.reasons import Reason
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import ClusterView, PoolView


class Scope(IntEnum):
    CLUSTER = 0
    POOL = 1
    CAPACITY = 2


class Filter(ABC):
    """Return None to let the candidate pass, or a human message saying why it cannot take the request.

    For `Scope.CLUSTER` filters `pool` and `capacity` are None; for `Scope.POOL`, `capacity` is None.
    """

    reason: ClassVar[Reason]
    scope: ClassVar[Scope]
    lasting: ClassVar[bool] = False
    request_independent: ClassVar[bool] = False
    fit: ClassVar[bool] = False

    def applies(self, ctx: RequestContext) -> bool:
        """False when the filter has nothing to say about this request (no RDMA asked, no ceiling...)."""
        return True

    def signature(self, ctx: RequestContext) -> tuple:
        """Everything of the request a lasting verdict (and its message) depends on; the safe default
        is the whole request signature."""
        return ctx.signature

    @abstractmethod
    def check(
        self,
        ctx: RequestContext,
        cluster: ClusterView,
        pool: PoolView | None,
        capacity: PoolCapacity | None,
    ) -> str | None: ...
