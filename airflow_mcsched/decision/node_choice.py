"""Which node(s) inside a pool: best fit, deterministic, and the same for every policy that reuses it.

Best fit keeps whole nodes free for big gangs: a pod goes where it leaves the fewest whole GPUs
free, a share goes to the fullest GPU it fits on, and CPU-only pods go where GPUs are already
taken (so they do not strand GPUs). Ties go to less CPU left over, then to node order.
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.decision.reasons import Reason
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.node_capacity import NodeCapacity
from airflow_mcsched.view.pool_capacity import PoolCapacity


def _best_node(nodes: Sequence[NodeCapacity], demand: Demand) -> int | None:
    g, share, cpu, mem = demand.gpus, demand.gpu_milli, demand.cpu_milli, demand.memory_mib
    best = None
    best_key: tuple[int, int] | None = None
    for i, n in enumerate(nodes):
        if n.whole_gpus_free < g or n.cpu_milli_free < cpu or n.memory_mib_free < mem:
            continue
        if share:
            if n.largest_share_free < share:
                continue
            j = n.best_share_gpu(share)
            left = n.gpu_milli_free[j] - share  # type: ignore[index]
        else:
            left = n.whole_gpus_free - g  # for CPU-only pods: prefer nodes whose GPUs are taken
        key = (left, n.cpu_milli_free - cpu)
        if best_key is None or key < best_key:
            best, best_key = i, key
    return best


def choose_nodes(capacity: PoolCapacity, demand: Demand) -> tuple[NodeAllocation, ...] | None:
    """One allocation per pod of the gang (with the GPUs it holds), all placed at once, or None."""
    nodes: Sequence[NodeCapacity] = capacity.nodes
    if demand.pods == 1:
        i = _best_node(nodes, demand)
        return None if i is None else (nodes[i].assign(demand.on(nodes[i].name)),)
    working = list(nodes)
    placed = []
    for _ in range(demand.pods):
        i = _best_node(working, demand)
        if i is None:
            return None
        allocation = working[i].assign(demand.on(working[i].name))
        working[i] = working[i].take(allocation)
        placed.append(allocation)
    return tuple(placed)


def pods_that_fit(capacity: PoolCapacity, demand: Demand) -> int:
    """How many pods of this shape the pool holds at once (each node counted on its own)."""
    total = 0
    for n in capacity.nodes:
        by_cpu = n.cpu_milli_free // demand.cpu_milli if demand.cpu_milli else demand.pods
        by_mem = n.memory_mib_free // demand.memory_mib if demand.memory_mib else demand.pods
        if demand.gpus:
            by_gpu = n.whole_gpus_free // demand.gpus
        elif demand.gpu_milli:
            by_gpu = sum(m // demand.gpu_milli for m in n.gpu_milli_free)
        else:
            by_gpu = demand.pods
        total += min(by_gpu, by_cpu, by_mem)
        if total >= demand.pods:
            break
    return total


def why_no_node(capacity: PoolCapacity, demand: Demand) -> tuple[Reason, str]:
    """The resource that no single node has enough of, once the GPUs are there (for the explanation)."""
    if demand.pods > 1:
        fit = pods_that_fit(capacity, demand)
        return Reason.GANG_DOES_NOT_FIT, f"only {fit} of {demand.pods} pods ({demand.describe()}) fit at once"
    with_gpus = [
        n for n in capacity.nodes if n.whole_gpus_free >= demand.gpus and n.largest_share_free >= demand.gpu_milli
    ]
    if not with_gpus:
        return Reason.DOES_NOT_FIT_ON_ONE_NODE, f"no node has room for {demand.describe()}"
    if all(n.cpu_milli_free < demand.cpu_milli for n in with_gpus):
        top = max(n.cpu_milli_free for n in with_gpus)
        return Reason.INSUFFICIENT_CPU, (
            f"nodes with the GPUs free have at most {top / 1000:g} CPU free, {demand.cpu_milli / 1000:g} asked"
        )
    top = max(n.memory_mib_free for n in with_gpus if n.cpu_milli_free >= demand.cpu_milli)
    return Reason.INSUFFICIENT_MEMORY, (
        f"nodes with the GPUs and CPU free have at most {top / 1024:g} GiB free, {demand.memory_mib / 1024:g} GiB asked"
    )
