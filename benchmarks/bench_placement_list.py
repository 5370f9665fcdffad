"""Reading a page of placement history as the API and the UI's run-history page do.

    .venv/bin/python benchmarks/bench_placement_list.py [--queue steps|random] [--limit 1000] [--reads 5]
    .venv/bin/python benchmarks/bench_placement_list.py --url postgresql+psycopg2:///bench_cycle
    (cd /tmp && PYTHONPATH=<older tree> <venv>/bin/python <this tree>/benchmarks/bench_placement_list.py --one-by-one)

The database of `bench_service_cycle.py` (100 clusters, 1,000 pending placements), one admission
cycle committed, then `PlacementStore.list(limit)` and `outs` (each placement with its reservation,
cluster connection and explanation, rejections included) timed `--reads` times, each in a new
session: wall ms of the query and of making the API's placements. `--one-by-one` makes each with
`PlacementStore.out`, as the API and the UI did before `outs` (and as older code can be timed).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_engine import NOW
from bench_service_cycle import load
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from airflow_mcsched.decision import Policy
from airflow_mcsched.service.placement_store import PlacementStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", choices=["steps", "random"], default="steps")
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--reads", type=int, default=5)
    parser.add_argument("--url", help="a database to fill (its project tables are dropped first)")
    parser.add_argument("--one-by-one", action="store_true", help="PlacementStore.out per placement")
    args = parser.parse_args()
    url = args.url or f"sqlite:///{Path(tempfile.mkdtemp(prefix='mcsched-list-')) / 'list.db'}"
    load(url, 100, args.queue)
    engine = create_engine(url)
    policy = Policy()
    with Session(engine) as session:
        PlacementStore(session, policy).run_cycle(NOW)
        session.commit()
    print(f"100 clusters, 1,000 placements ({args.queue}, one cycle decided), {url.split(':')[0]}; wall ms")
    print(f"{'read':>4} {'rows':>6} {'query':>7} {'outs':>7}")
    for i in range(1, args.reads + 1):
        with Session(engine) as session:
            store = PlacementStore(session, policy)
            start = time.perf_counter()
            rows = store.list(limit=args.limit)
            listed = time.perf_counter()
            if args.one_by_one:
                [store.out(r) for r in rows]
            else:
                store.outs(rows)
            done = time.perf_counter()
        print(f"{i:>4} {len(rows):>6} {(listed - start) * 1e3:>7.0f} {(done - listed) * 1e3:>7.0f}")
    engine.dispose()


if __name__ == "__main__":
    main()
