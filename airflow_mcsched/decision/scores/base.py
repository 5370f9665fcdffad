"""A score is a soft preference: a number for one node pool that can take the request, with its figures.

- Scores in [0, 1] (higher is better) are used as they are.
- Scores `in_dollars` are costs, all in dollars per GPU-hour of the run (a one-off bill such as
  egress is spread over the run's GPU-hours). They are turned into [0, 1] together: each
  relative to its cheapest eligible pool, all divided by the largest summed extra cost, so a price
  gap and a data-transfer bill weigh in one currency (the cheapest pool scores 1).
- `dynamic` scores depend on live capacity or the chosen nodes (and get them); the others depend
  only on the request's signature and what the cluster and pool are, so they are computed once per
  signature for as long as views of the same layout are decided (with `capacity=None, pods=()`).
  Dollar scores must not be dynamic. No score reads the clock or the cycle's grants: values are
  remembered per capacity object across cycles (see plan_cache.py). The exception says so: a
  `per_cycle` score may read the clock and the latest expected end of our work on each node of
  the pool (`RunningWork.latest_ends`), and nothing else of its cycle. Its values are remembered
  with a stamp of what it read (pool_stamps.py) and measured again where that differs, while node
  choice and the other scores' values are kept. Its `upper_bound` must not read the cycle (the
  default, 1, does not). Where its value and figures for some nodes read neither the clock nor
  the ends after all, `cycle_free` says so, and they then hold at any clock reading.

`signature` says which part of the request a score depends on (values are shared between
requests alike in it); `upper_bound` lets the engine skip pools that cannot win without choosing
their nodes (the default bound, 1, is always safe).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from airflow_mcsched.decision.context import RequestContext
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import ClusterView, PoolView

Detail = tuple[tuple[str, float | str | bool], ...]


class Score(ABC):
    name: ClassVar[str]
    in_dollars: ClassVar[bool] = False
    dynamic: ClassVar[bool] = False
    per_cycle: ClassVar[bool] = False

    def applies(self, ctx: RequestContext) -> bool:
        return True

    def signature(self, ctx: RequestContext) -> tuple:
        """Everything of the request the value depends on; the safe default is the whole signature."""
        return ctx.signature

    def upper_bound(self, ctx: RequestContext, cluster: ClusterView, pool: PoolView, capacity: PoolCapacity) -> float:
        """For dynamic scores: the most `measure` can return on this pool, before nodes are chosen."""
        return 1.0

    def cycle_free(
        self,
        ctx: RequestContext,
        cluster: ClusterView,
        pool: PoolView,
        capacity: PoolCapacity,
        pods: tuple[NodeAllocation, ...],
    ) -> bool:
        """True when the value and figures on these nodes read nothing that one cycle has and another
        may not (the clock, the running work): they are then the same in every cycle where this
        holds, for the same signature, pool, capacity and nodes. Always, for scores that are not
        `per_cycle`."""
        return not self.per_cycle

    @abstractmethod
    def measure(
        self,
        ctx: RequestContext,
        cluster: ClusterView,
        pool: PoolView,
        capacity: PoolCapacity | None,
        pods: tuple[NodeAllocation, ...],
    ) -> float:
        """The raw value: dollars, or [0, 1]."""

    def static_column(self, ctx: RequestContext, pools: Sequence[tuple[ClusterView, PoolView]]) -> list[float]:
        """A static score's values over many pools (in fleet order), as `measure` gives each: what a
        new plan asks (candidate_plan.py). A score whose value per pool is a formula over what the
        request fixes may override it with one pass that works the request's part out once: a queue
        of new requests makes hundreds of plans a cycle, each over every pool of the fleet."""
        return [self.measure(ctx, c, p, None, ()) for c, p in pools]

    def explain(
        self,
        ctx: RequestContext,
        cluster: ClusterView,
        pool: PoolView,
        capacity: PoolCapacity | None,
        pods: tuple[NodeAllocation, ...],
    ) -> Detail:
        """The figures behind the value, for the decision's explanation (only asked of the ranked few).

        Like the value, they may depend only on the request's `signature`, the pool and its capacity:
        they are remembered per capacity object for all requests alike."""
        return ()
