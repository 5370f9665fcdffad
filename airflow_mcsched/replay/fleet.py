"""The fleet a replay runs on: cluster profiles plus every node's shape, from a split CSV or a fleet file.

The reference split (`traces/openb_fleet_split.csv`: sn, cluster, model, price_per_gpu_hour,
in_scale_0_1) assigns each node of the openb node list to a cluster. Inside a cluster, nodes of one
GPU model and shape make one node pool, priced as the split says; every pool offers GPU sharing
(openb is a GPU-sharing trace).
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from airflow_mcsched.access.capacity import MILLI_PER_GPU
from airflow_mcsched.access.fleet_file import load_fleet_file
from airflow_mcsched.access.profiles import ClusterKind, ClusterProfile, NodePool
from airflow_mcsched.replay.datasets import Staging, staging_for, with_data_homes
from airflow_mcsched.replay.openb import TraceJob, TraceNode, read_nodes
from airflow_mcsched.view.node_capacity import NodeCapacity

# GPU memory per model; G2/G3 are undisclosed (priced as A10 / A100 class in the reference fleet).
GPU_MEMORY_GIB = {"P100": 16, "T4": 16, "V100M16": 16, "V100M32": 32, "A10": 24, "G1": 24, "G2": 24, "G3": 80}
STATIC_HOMES = ("onprem-a", "onprem-b", "cloud-c", "cloud-d", "cloud-c")
"""Home cluster of teams 0..4 on the reference fleet (the `static` baseline pins each team there)."""


@dataclass(frozen=True, slots=True)
class ReplayFleet:
    """Profiles (what each cluster declares) and, per (cluster, pool), its nodes empty of work."""

    profiles: tuple[ClusterProfile, ...]
    nodes: dict[tuple[str, str], tuple[NodeCapacity, ...]]

    def home_of(self, team: int) -> str:
        names = [p.name for p in self.profiles]
        if set(STATIC_HOMES) <= set(names):
            return STATIC_HOMES[team % len(STATIC_HOMES)]
        return names[team % len(names)]

    def with_data_homes(self) -> ReplayFleet:
        """The same fleet with each team's dataset on its home cluster (replay/datasets.py)."""
        return ReplayFleet(with_data_homes(self.profiles, self.home_of), self.nodes)

    def staging(self, job: TraceJob, cluster: str) -> Staging:
        """What starting `job` on `cluster` costs in data movement (nothing at its data's home)."""
        return staging_for({p.name: p for p in self.profiles}, job.dataset, job.data_gib, cluster)

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for nodes in self.nodes.values() for n in nodes)


def _empty_node(name: str, gpus: int, cpu_milli: int, memory_mib: int) -> NodeCapacity:
    return NodeCapacity.of(name, (MILLI_PER_GPU,) * gpus, cpu_milli, memory_mib)


def _pool_name(model: str, node: TraceNode) -> str:
    name = f"{model}-{node.gpus}g-{node.cpu_milli // 1000}c-{node.memory_mib // 1024}gi".lower()
    return re.sub(r"[^a-z0-9-]", "-", name)


def fleet_from_split(split_csv: str | Path, node_csv: str | Path, scale: float | None = None) -> ReplayFleet:
    """The reference fleet; `scale=0.1` keeps the nodes marked in_scale_0_1 (every type in every cluster)."""
    nodes = {n.name: n for n in read_nodes(node_csv)}
    groups: dict[str, dict[str, list[TraceNode]]] = defaultdict(lambda: defaultdict(list))
    prices: dict[tuple[str, str], float] = {}
    with open(split_csv, newline="") as f:
        for row in csv.DictReader(f):
            if scale is not None and scale < 1 and row.get("in_scale_0_1") != "1":
                continue
            node = nodes.get(row["sn"])
            if node is None:
                raise ValueError(f"{split_csv}: node {row['sn']!r} is not in {node_csv}")
            pool = _pool_name(row["model"], node)
            groups[row["cluster"]][pool].append(node)
            prices[(row["cluster"], pool)] = float(row["price_per_gpu_hour"])
    profiles, shapes = [], {}
    for cluster in sorted(groups):
        pools = []
        for pool, members in sorted(groups[cluster].items()):
            first = members[0]
            pools.append(
                NodePool(
                    name=pool,
                    gpu_type=first.model if first.gpus else None,
                    gpu_memory_gib=GPU_MEMORY_GIB.get(first.model, 16) if first.gpus else 0,
                    gpus_per_node=first.gpus,
                    nodes=len(members),
                    cpu_per_node=first.cpu_milli / 1000,
                    memory_gib_per_node=first.memory_mib / 1024,
                    price_per_gpu_hour=prices[(cluster, pool)],
                    gpu_sharing=True,
                )
            )
            shapes[(cluster, pool)] = tuple(_empty_node(n.name, n.gpus, n.cpu_milli, n.memory_mib) for n in members)
        kind = ClusterKind.ON_PREM if cluster.startswith("onprem") else ClusterKind.CLOUD
        profiles.append(ClusterProfile(name=cluster, kind=kind, node_pools=pools))
    if not profiles:
        raise ValueError(f"{split_csv}: no nodes selected")
    return ReplayFleet(tuple(profiles), shapes).with_data_homes()


def fleet_from_yaml(path: str | Path) -> ReplayFleet:
    """A fleet file: each pool's declared nodes, empty, named <cluster>-<pool>-<i>."""
    spec = load_fleet_file(path)
    shapes = {
        (c.name, p.name): tuple(
            _empty_node(
                f"{c.name}-{p.name}-{i}", p.gpus_per_node, int(p.cpu_per_node * 1000), int(p.memory_gib_per_node * 1024)
            )
            for i in range(p.nodes)
        )
        for c in spec.clusters
        for p in c.node_pools
    }
    return ReplayFleet(tuple(spec.clusters), shapes).with_data_homes()


def load_fleet(path: str | Path, node_csv: str | Path | None, scale: float | None) -> ReplayFleet:
    if str(path).endswith((".yaml", ".yml")):
        return fleet_from_yaml(path)
    if node_csv is None:
        raise ValueError("a split CSV fleet needs --nodes NODE_CSV (the openb node list)")
    return fleet_from_split(path, node_csv, scale)


def pooled(fleet: ReplayFleet) -> ReplayFleet:
    """The `pooled` reference: one cluster holding every node pool (names prefixed by cluster) and all data."""
    pools, shapes = [], {}
    for c in fleet.profiles:
        for p in c.node_pools:
            name = f"{c.name}-{p.name}"[:63].rstrip("-")
            pools.append(p.model_copy(update={"name": name}))
            shapes[("pooled", name)] = fleet.nodes[(c.name, p.name)]
    return ReplayFleet((ClusterProfile(name="pooled", node_pools=pools),), shapes).with_data_homes()
