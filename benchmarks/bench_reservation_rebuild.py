"""CPU the service spends making the engine's reservations from their ORM rows (the reclaim report).

    .venv/bin/python benchmarks/bench_reservation_rebuild.py --busy-file /tmp/full.pickle

Until session 29 the service's cycle (`PlacementStore._cycle`) made every active reservation anew
from its ORM row (`placement_mapping.reservation_of`) before it called the engine; it now reads
plain rows and keeps their reservations across cycles (`service/held_reservations.py`, measured by
`bench_service_cycle.py --busy-file`), and the reclaim report (`ReportStore.held_reservations`) is
what still makes every one from its ORM row. This times that step alone, for
the running work of the engine benchmark's full fleet (`engine_cycles.py --busy`: 100 clusters,
about 27,000 reservations, made once and pickled at `--busy-file`, minutes the first time), from
rows already in memory: the query that loads them is not counted. Medians of `--runs` passes,
each with the cyclic garbage collector paused as the service's cycle pauses it (`gc_pause.py`),
and with it running (`--collector`), as session 27 measured.
(A row keeps its pods with the GPUs the node chooser gave them, since session 28: what comes
back equals the reservation written.)
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from contextlib import nullcontext

from bench_engine import filled_at, fleet_and_queues

from airflow_mcsched.decision.gc_pause import collector_paused
from airflow_mcsched.service.placement_mapping import reservation_of, reservation_row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy-file", default=None, help="the full fleet's work, pickled (as engine_cycles.py's)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--collector", action="store_true", help="leave the garbage collector running")
    args = parser.parse_args()
    _, _, running, view, _, queue = fleet_and_queues(100, random.Random(1))
    work = filled_at((100, "random"), view, queue, running, args.busy_file)
    rows = [reservation_row(r) for r in work]
    times = []
    for _ in range(args.runs):
        with nullcontext() if args.collector else collector_paused():
            start = time.process_time()
            made = [reservation_of(row) for row in rows]
            times.append((time.process_time() - start) * 1e3)
    how = " (collector running)" if args.collector else ""
    assert made == work  # each reservation as written, its pods' GPUs included
    print(
        f"{len(rows):,} reservations made from their rows{how}: median {statistics.median(times):.0f} ms CPU "
        f"({min(times):.0f}-{max(times):.0f}) over {args.runs} passes"
    )


if __name__ == "__main__":
    main()
