"""How many calls per second the Airflow API server answers at all, before any placement work.

    .venv/bin/python benchmarks/bench_api_floor.py --db postgres --clients 32 --seconds 15

Starts the same server as `bench_placement_load.py` (a real `airflow api-server` with the plugin
inside, a fresh metadata DB, the example fleet as virtual clusters) and has N clients (asyncio +
httpx, one process, as the load test's) call one endpoint as fast as they are answered:

- `health`: Airflow's own `GET /api/v2/monitor/health` (no authentication);
- `version`: Airflow's `GET /api/v2/version` (authenticated by Airflow, no table read);
- `placement-404`: our `GET /mcsched/api/v1/placements/<unknown id>` (Airflow's authentication,
  one indexed read of our table, a 404).

The load test needs about five such calls per placement (submit, polls, start, renew, release), so
the calls per second an endpoint like these reaches bounds the placements per second any code
behind it can reach on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.placement_load import LoadSettings, placement_server

ENDPOINTS = {
    "health": ("/api/v2/monitor/health", False),
    "version": ("/api/v2/version", True),
    "placement-404": ("/mcsched/api/v1/placements/no-such-placement", True),
}


async def hammer(url: str, token: str, path: str, auth: bool, clients: int, seconds: float) -> list[float]:
    headers = {"Authorization": f"Bearer {token}"} if auth else {}
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30) as http:

        async def loop() -> None:
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                response = await http.get(path)
                if response.status_code >= 500:
                    raise RuntimeError(f"{path}: {response.status_code} {response.text[:200]}")
                latencies.append(time.perf_counter() - t0)

        await asyncio.gather(*(loop() for _ in range(clients)))
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="postgres")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--api-workers", type=int, default=LoadSettings.api_workers)
    parser.add_argument("--endpoint", action="append", choices=sorted(ENDPOINTS), help="default: all")
    args = parser.parse_args()
    settings = LoadSettings(api_workers=args.api_workers)
    with placement_server(args.db, settings) as target:
        print(f"{args.db}, {args.clients} clients, {args.seconds:g} s each, {args.api_workers} API worker(s)")
        print("| endpoint | calls/s | p50 ms | p99 ms |")
        print("| --- | ---: | ---: | ---: |")
        for name in args.endpoint or sorted(ENDPOINTS):
            path, auth = ENDPOINTS[name]
            latencies = asyncio.run(hammer(target.url, target.token, path, auth, args.clients, args.seconds))
            latencies.sort()
            p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
            print(
                f"| {name} | {len(latencies) / args.seconds:.0f} | {statistics.median(latencies) * 1e3:.0f} "
                f"| {p99 * 1e3:.0f} |"
            )


if __name__ == "__main__":
    main()
