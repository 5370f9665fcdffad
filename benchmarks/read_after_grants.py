"""How many pools a capacity read that shows a cycle's grants leaves equal to what the grants left.

    .venv/bin/python benchmarks/read_after_grants.py [--clusters 100]

The engine keeps what it works out per capacity object, and a read equal in content to what a
cycle's grants left reaches the grant's object (`view/capacity_table.py`). The reader lists a
node's GPUs free first (`access/kube_reader.py`), while a grant holds the GPUs its node choice
named; so a read after a sync may differ from the grant's capacity in GPU order alone, and the
pool is judged again. This decides the benchmark's queues (`bench_engine.py`, seed 1) on its view,
makes the reads a sync would make next (each granted pod's GPUs, CPU and memory taken on its node,
whole GPUs first and shares best-fit as a sharing plugin would, the GPUs listed free first; the
grants seen), and counts the granted pools whose read is equal to what the grants left, and the
nodes that differ, by what differs.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
from collections import Counter, defaultdict

from bench_engine import NOW, fleet_and_queues

from airflow_mcsched.access.capacity import MILLI_PER_GPU, ClusterObservation, NodeObservation
from airflow_mcsched.decision import Policy, Reservation, decide
from airflow_mcsched.view import NodeAllocation, build_view


def _read_with(node: NodeObservation, pods: list[NodeAllocation]) -> NodeObservation:
    """The node as the reader shows it once `pods` run there."""
    free = list(node.gpu_milli_free)
    cpu, mem = node.cpu_milli_requested, node.memory_mib_requested
    for a in pods:
        need = a.gpus
        for i, m in enumerate(free):
            if need and m >= MILLI_PER_GPU:
                free[i], need = 0, need - 1
        if a.gpu_milli:
            best = min((i for i, m in enumerate(free) if m >= a.gpu_milli), key=free.__getitem__)
            free[best] -= a.gpu_milli
        cpu, mem = cpu + a.cpu_milli, mem + a.memory_mib
    return dataclasses.replace(
        node, gpu_milli_free=tuple(sorted(free, reverse=True)), cpu_milli_requested=cpu, memory_mib_requested=mem
    )


def reads_after(observations: list[ClusterObservation], grants: tuple[Reservation, ...]) -> list[ClusterObservation]:
    on_node: dict[str, list[NodeAllocation]] = defaultdict(list)
    seen: dict[str, set[str]] = defaultdict(set)
    for r in grants:
        seen[r.cluster].add(r.id)
        for a in r.pods:
            on_node[a.node].append(a)
    return [
        dataclasses.replace(
            obs,
            nodes=tuple(_read_with(n, on_node[n.name]) if n.name in on_node else n for n in obs.nodes),
            reservation_ids_seen=obs.reservation_ids_seen | seen[obs.cluster],
        )
        for obs in observations
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    args = parser.parse_args()
    profiles, observations, running, view, templated, random_queue = fleet_and_queues(args.clusters, random.Random(1))
    for name, queue in (("all-different", random_queue), ("templated steps", templated)):
        grants = decide(view, queue, running, Policy(), NOW).reservations
        after = build_view(profiles, reads_after(observations, grants), NOW)
        by_pool: dict[tuple[str, str], list[NodeAllocation]] = defaultdict(list)
        for r in grants:
            by_pool[r.key].extend(r.pods)
        equal, differ = 0, Counter()
        for key, pods in by_pool.items():
            left = view.pool(*key).capacity.take(pods)
            read = after.pool(*key).capacity
            equal += left == read
            for mine, theirs in zip(left.nodes, read.nodes, strict=True):
                if mine != theirs:
                    gpus_alike = sorted(mine.gpu_milli_free) == sorted(theirs.gpu_milli_free)
                    differ["GPU order alone" if gpus_alike else "GPUs"] += 1
                    differ["with a share"] += any(0 < m < MILLI_PER_GPU for m in mine.gpu_milli_free)
        print(
            f"{name}: {len(grants)} grants in {len(by_pool)} pools; the read equal to what they left in "
            f"{equal}; nodes that differ: {dict(differ)}"
        )


if __name__ == "__main__":
    main()
