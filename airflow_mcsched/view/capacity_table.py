"""One capacity object per pool and content, whoever makes it: a capacity read, or a cycle's grants.

The engine remembers what it works out per capacity object and finds it again by identity
(decision/plan_cache.py): node choices, scores, where its rankings of pools stand. Two objects of
equal content would cost that work twice. A read keeps the object of the pool's last read when the
pool is unchanged (builder.py), and a cycle that places what an earlier one placed reaches the
objects that one reached; but other paths lead to equal content too: grants made in another order,
other grants that leave a pool as an earlier cycle left it, a pool read back as it was two reads
ago. (A read that shows the pods a cycle granted is mostly not one of them: the reader lists a
node's GPUs free first, `access/kube_reader.py`, where a grant takes the GPUs its node choice
named.) Measured on the engine benchmark's cycles after reads where a tenth of the pools
changed, about a third of the pools a ranking had to judge again were equal to what it had judged.
"""

from __future__ import annotations

from collections.abc import Callable

from airflow_mcsched.view.bounded_table import get_or_make
from airflow_mcsched.view.node_capacity import NodeCapacity
from airflow_mcsched.view.pool_capacity import PoolCapacity

MAX_CAPACITIES = 65536
"""Contents kept; the table starts afresh when full (what it held is only judged again)."""

_by_content: dict[tuple, PoolCapacity] = {}


def capacity_of(
    pool: tuple[str, str],
    nodes: tuple[NodeCapacity, ...],
    gpus_per_node: int,
    nodes_excluded: int,
    pods_pending: int,
    make: Callable[[], PoolCapacity],
) -> PoolCapacity:
    """The kept object of this pool (cluster, pool name) and content, else `make()`, kept from now on.

    The nodes (names, free GPUs, CPU and memory) and the three counts are everything a capacity's
    other fields are made from, so a read looks its content up before making the object.
    """
    key = (pool, nodes, gpus_per_node, nodes_excluded, pods_pending)
    return get_or_make(_by_content, key, MAX_CAPACITIES, make)


def canonical(pool: tuple[str, str], capacity: PoolCapacity) -> PoolCapacity:
    """The kept object of this pool with `capacity`'s content, else `capacity` itself, kept from now on."""
    return capacity_of(
        pool, capacity.nodes, capacity.gpus_per_node, capacity.nodes_excluded, capacity.pods_pending, lambda: capacity
    )
