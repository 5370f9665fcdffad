"""Pod lifecycle throughput of the virtual clusters, measured through the real `kubernetes` client.

Creates N pods (timed runtime, short durations) spread round-robin over the clusters of a fleet
file, some asking for a GPU, and watches them to Succeeded. Prints pods/s created (client-side
create calls) and pods/s completed (first create to the last Succeeded seen by the watches).

    .venv/bin/python benchmarks/bench_virtual_clusters.py --pods 1000
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kubernetes import watch

from airflow_mcsched.virtual.fleet import VirtualFleet
from airflow_mcsched.virtual.options import VirtualClusterOptions

REPO = Path(__file__).resolve().parents[1]


def pod_body(name: str, run_id: str, gpu: bool, duration: float) -> dict:
    limits = {"cpu": "100m", "memory": "64Mi"}
    if gpu:
        limits["nvidia.com/gpu"] = "1"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"bench": run_id},
            "annotations": {"mcsched.io/runtime": "timed", "mcsched.io/duration-seconds": str(duration)},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "base", "image": "busybox", "resources": {"limits": limits}}],
        },
    }


def watch_until_done(api, run_id: str, expected: int, done: dict[str, float], ready: threading.Event) -> None:
    """Record when each pod of this run is first seen Succeeded (or Failed)."""
    w = watch.Watch()
    seen_terminal = 0
    ready.set()
    for event in w.stream(api.list_namespaced_pod, "default", label_selector=f"bench={run_id}", timeout_seconds=600):
        obj = event["object"]
        if obj.status.phase in ("Succeeded", "Failed") and obj.metadata.name not in done:
            done[obj.metadata.name] = time.monotonic()
            seen_terminal += 1
            if seen_terminal >= expected:
                w.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet", default=str(REPO / "examples" / "fleet.yaml"))
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=0.1, help="seconds each timed container runs")
    parser.add_argument("--gpu-every", type=int, default=2, help="every Nth pod asks for one GPU (0: none)")
    parser.add_argument("--client-threads", type=int, default=8)
    parser.add_argument("--mode", choices=["process", "thread"], default="process")
    args = parser.parse_args()

    options = VirtualClusterOptions(default_runtime="timed", container_start_seconds=0.02)
    start = time.monotonic()
    with VirtualFleet.start(args.fleet, mode=args.mode, options=options) as fleet:
        print(f"fleet of {len(fleet.handles)} clusters up in {time.monotonic() - start:.2f}s ({args.mode} mode)")
        handles = list(fleet)
        run_id = uuid.uuid4().hex[:8]
        local = threading.local()

        def api_for(index: int):
            # one client per (thread, cluster): urllib3 pools are per ApiClient
            apis = getattr(local, "apis", None)
            if apis is None:
                apis = local.apis = {}
            handle = handles[index % len(handles)]
            if handle.name not in apis:
                apis[handle.name] = handle.core_v1()
            return apis[handle.name]

        names = [f"bench-{run_id}-{i:05d}" for i in range(args.pods)]
        per_cluster = {h.name: sum(1 for i in range(args.pods) if i % len(handles) == k) for k, h in enumerate(handles)}
        done: dict[str, float] = {}
        watchers = []
        for h in handles:
            ready = threading.Event()
            t = threading.Thread(
                target=watch_until_done, args=(h.core_v1(), run_id, per_cluster[h.name], done, ready), daemon=True
            )
            t.start()
            ready.wait()
            watchers.append(t)
        time.sleep(0.2)  # let the watches connect

        created_at: dict[str, float] = {}

        def create(i: int) -> None:
            gpu = bool(args.gpu_every) and i % args.gpu_every == 0
            api_for(i).create_namespaced_pod("default", pod_body(names[i], run_id, gpu, args.duration))
            created_at[names[i]] = time.monotonic()

        t0 = time.monotonic()
        with ThreadPoolExecutor(args.client_threads) as pool:
            list(pool.map(create, range(args.pods)))
        t_created = time.monotonic()
        for t in watchers:
            t.join(timeout=600)
        t_done = max(done.values())

        phases = {}
        for h in handles:
            for p in h.core_v1().list_namespaced_pod("default", label_selector=f"bench={run_id}").items:
                phases[p.status.phase] = phases.get(p.status.phase, 0) + 1
        latencies = sorted(done[n] - created_at[n] for n in names if n in done)
        create_rate = args.pods / (t_created - t0)
        complete_rate = len(done) / (t_done - t0)
        print(f"pods: {args.pods} ({args.pods // args.gpu_every if args.gpu_every else 0} with a GPU), "
              f"duration {args.duration}s each, {args.client_threads} client threads")  # fmt: skip
        print(f"created:   {args.pods} in {t_created - t0:.2f}s  = {create_rate:.0f} pods/s")
        span = t_done - t0
        print(f"completed: {len(done)} in {span:.2f}s  = {complete_rate:.0f} pods/s (first create to last Succeeded)")
        print(f"create->Succeeded seen: p50 {statistics.median(latencies):.2f}s  "
              f"p95 {latencies[int(0.95 * (len(latencies) - 1))]:.2f}s  max {latencies[-1]:.2f}s")  # fmt: skip
        print(f"final phases: {phases}")
        print(
            "free GPUs after: "
            + ", ".join(f"{h.name} {h.summary()['gpus_free']}/{h.summary()['gpus']}" for h in handles)
        )


if __name__ == "__main__":
    main()
