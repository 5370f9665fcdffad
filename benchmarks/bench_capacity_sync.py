"""Benchmark: one full capacity sync of a large fleet, read over HTTP from virtual clusters.

Default: 50 clusters x 200 nodes (8 GPUs each) x 2,000 running pods per cluster, each cluster a
virtual Kubernetes API server in its own process. Prints seconds per full sync (median of
rounds), with and without recording into a SQLite metadata DB, and the syncing process's memory.

    .venv/bin/python benchmarks/bench_capacity_sync.py [--clusters 50 --nodes 200 --pods 2000 --rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx

from airflow_mcsched.access.profiles import ClusterProfile, FleetSpec


def fleet_spec(clusters: int, nodes: int) -> FleetSpec:
    return FleetSpec(
        clusters=[
            ClusterProfile(
                name=f"bench-{i:03d}",
                region=f"region-{i % 5}",
                zone=f"zone-{i}",
                node_pools=[
                    {"name": "gpu", "gpu_type": "A100", "gpus_per_node": 8, "nodes": nodes, "cpu_per_node": 96,
                     "memory_gib_per_node": 1024, "price_per_gpu_hour": 1.0 + i / 100},
                ],
            )
            for i in range(clusters)
        ]
    )  # fmt: skip


def pod_body(name: str, gpus: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app": "bench", "mcsched.io/reservation": f"rsv-{name}"},
            "annotations": {"mcsched.io/duration-seconds": "86400", "mcsched.io/runtime": "timed"},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "base", "image": "bench", "resources": {
                    "limits": {"cpu": "500m", "memory": "1Gi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}}}
            ],
        },
    }  # fmt: skip


def preload(handle, pods: int) -> None:
    """Create `pods` running pods (a mix of CPU-only and 1-2 GPU pods) on one cluster over HTTP."""
    headers = {"Authorization": f"Bearer {handle.token}", "Content-Type": "application/json"}
    with httpx.Client(base_url=handle.url, headers=headers, timeout=60) as client:
        for i in range(pods):
            body = pod_body(f"p{i:05d}", gpus=(0, 1, 2)[i % 3])
            r = client.post(f"/api/v1/namespaces/{handle.profile.namespace}/pods", content=json.dumps(body))
            r.raise_for_status()


class MemoryLedger:
    """Ledger without a DB: isolates reading and folding from recording."""

    def __init__(self, profiles: list[ClusterProfile]) -> None:
        self._profiles = profiles
        self.observations: dict = {}

    def profiles(self) -> list[ClusterProfile]:
        return self._profiles

    def acquire(self, cluster: str, owner: str, seconds: float) -> bool:
        return True

    def record(self, observation, seconds: float) -> None:
        self.observations[observation.cluster] = observation


@contextmanager
def sqlite_ledger(spec: FleetSpec):
    from contextlib import contextmanager as cm

    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    from airflow_mcsched.service.cluster_store import ClusterStore
    from airflow_mcsched.service.sync_ledger import DbSyncLedger
    from airflow_mcsched.service.tables import metadata

    with tempfile.TemporaryDirectory() as tmp:
        engine = create_engine(f"sqlite:///{tmp}/bench.db")
        metadata.create_all(engine)
        maker = sessionmaker(bind=engine, expire_on_commit=False)

        @cm
        def session():
            s = maker()
            try:
                yield s
                s.commit()
            finally:
                s.close()

        with session() as s:
            ClusterStore(s).apply(spec, "bench")
        yield DbSyncLedger(session)
        engine.dispose()


def timed_rounds(sync, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        outcomes = sync.sync_once()
        times.append(time.perf_counter() - t0)
        bad = [o for o in outcomes if not o.healthy]
        if bad:
            raise RuntimeError(f"sync failed: {bad[:3]}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=8, help="clusters read in parallel")
    args = parser.parse_args(argv)

    from airflow_mcsched.access.sync import CapacitySync
    from airflow_mcsched.virtual.fleet import VirtualFleet

    spec = fleet_spec(args.clusters, args.nodes)
    t0 = time.perf_counter()
    with VirtualFleet.start(spec, mode="process", start_timeout=120) as fleet:
        print(f"started {args.clusters} virtual clusters in {time.perf_counter() - t0:.1f}s", flush=True)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda h: preload(h, args.pods), fleet))
        total_pods = args.clusters * args.pods
        print(f"created {total_pods} pods in {time.perf_counter() - t0:.1f}s", flush=True)

        from kubernetes import client as k8s_client
        from kubernetes import config as k8s_config

        def client_for(profile: ClusterProfile):
            configuration = k8s_client.Configuration()
            k8s_config.load_kube_config_from_dict(
                fleet.cluster(profile.name).kubeconfig_dict(), client_configuration=configuration
            )
            return k8s_client.ApiClient(configuration)

        memory = MemoryLedger(spec.clusters)
        sync = CapacitySync(memory, client_for, owner="bench", timeout=60, workers=args.workers)
        timed_rounds(sync, 1)  # warm connections
        read_times = timed_rounds(sync, args.rounds)
        tracemalloc.start()  # a separate round: tracing slows Python down several times
        timed_rounds(sync, 1)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        seen_pods = sum(o.pods_running + o.pods_pending for o in memory.observations.values())
        seen_nodes = sum(len(o.nodes) for o in memory.observations.values())

        with sqlite_ledger(spec) as ledger:
            db_sync = CapacitySync(ledger, client_for, owner="bench", timeout=60, workers=args.workers)
            db_times = timed_rounds(db_sync, args.rounds)

    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"fleet: {args.clusters} clusters, {seen_nodes} nodes, {seen_pods} live pods seen per sync")
    print(f"full sync, read + fold (median of {args.rounds}): {statistics.median(read_times):.2f}s "
          f"(min {min(read_times):.2f}s, max {max(read_times):.2f}s)")  # fmt: skip
    print(f"full sync, read + fold + record in SQLite (median of {args.rounds}): {statistics.median(db_times):.2f}s "
          f"(min {min(db_times):.2f}s, max {max(db_times):.2f}s)")  # fmt: skip
    print(f"python heap peak during a sync (tracemalloc): {peak / 2**20:.0f} MiB; process max RSS: {rss_mib:.0f} MiB")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    sys.exit(main())
