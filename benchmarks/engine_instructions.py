"""Machine instructions one admission cycle takes, counted by valgrind: a figure that does not move.

    .venv/bin/python benchmarks/engine_instructions.py [--queue random|steps] [--later | --changed | --newqueue]
    .venv/bin/python benchmarks/engine_instructions.py --runners-up N
    .venv/bin/python benchmarks/engine_instructions.py --busy   # the full fleet: about ten minutes
    .venv/bin/python benchmarks/engine_instructions.py --busy --busy-file /tmp/full.pickle   # filled once
    .venv/bin/python benchmarks/engine_instructions.py --live   # the live fleet's cycles 30-49: about 10 minutes
    cd /tmp && PYTHONPATH=/tmp/base python /work/main/benchmarks/engine_instructions.py   # other code

CPU time on a shared machine moves by a fifth from one run to the next, more than most changes to
the engine are worth, so comparing two versions by time takes many alternating runs. Valgrind's
cachegrind counts the instructions a process runs, the same from run to run. This runs the
benchmark's fleet and queue (`bench_engine.py`, 100 clusters, seed 1: the cycle of
`engine_cycles.py`) under it twice, once with one measured cycle and once with three, after two
cycles that teach the engine the view; the difference, halved, is what one cycle on the same view
takes, the setup taken out. `--later`: each cycle 5 s after the one before (per-cycle values read
again). `--changed`: each cycle on a view where a tenth of the pools read differently
(`bench_engine.changed_reads`, three views made in both runs, so making them is taken out too).
`--newqueue`: each cycle on a new read with a queue of new requests (`engine_cycles.py --reads
newqueue`; the three queues made in both runs too). Such cycles alternate: every other one finds
the shared plans past their bound and starts them afresh (plan_cache.py), so the count is the mean
of one of each.
`--busy`: on the full fleet of `engine_cycles.py --busy`, its running work made first outside
valgrind (minutes) and read by both counted runs; `--busy-file PATH` keeps it there, as
`engine_cycles.py --busy-file` does (the same file serves both), so counting two versions of the
engine fills the fleet once.
`--live`: the live fleet of `memory_soak.py --queue 2000 --arrivals 100 --no-check` (about 800-1,050
pending requests in those cycles, most waiting), counted to cycle 30 and to cycle 50 (`--live-cycles`)
in two valgrind runs side by side; the difference over the cycles between is what one of its cycles
takes. Its cycles differ from one another, so only the same cycles of two versions compare.
Hash seeds are fixed (`PYTHONHASHSEED=0`), so dict and set orders do not move the count.
A count is not a time (a cache miss costs more than an instruction), but between versions of the
engine the two have moved together within a few per cent. Needs valgrind (Debian: `apt install
valgrind`); about a minute.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import timedelta

WARM_CYCLES = 2
LATER = timedelta(seconds=5)
LIVE_QUEUE, LIVE_ARRIVALS = 2000, 100
"""`--live`: the first cycle's queue and the new requests a cycle (`memory_soak.py --queue --arrivals`)."""


def _cycles(args: argparse.Namespace, measured: int) -> None:
    """The cycles valgrind counts: the fleet, the warm cycles and `measured` more (on the full fleet
    whose running work `args.running` holds, when given)."""
    import itertools
    import pickle

    from bench_engine import NOW, changed_reads, new_reads
    from engine_cycles import new_queues

    from airflow_mcsched.decision import Policy, decide

    rng, profiles, observations, running, view, queue = _fleet(args.queue)
    if args.running is not None:
        with open(args.running, "rb") as f:
            running = pickle.load(f)
    policy = Policy() if args.runners_up is None else Policy().model_copy(update={"runners_up": args.runners_up})
    if args.changed:
        measured_views = changed_reads(profiles, observations, 3, rng)[:measured]
    elif args.newqueue:  # three made in both runs, so making them is taken out
        measured_views = new_reads(profiles, observations, 3)[:measured]
    else:
        measured_views = [view] * measured
    queues = [queue] * WARM_CYCLES
    queues += (
        list(itertools.islice(new_queues(args.queue, queue, random.Random(2)), 3)) if args.newqueue else [queue] * 3
    )
    now = NOW
    for v, q in zip([view] * WARM_CYCLES + measured_views, queues, strict=False):
        decide(v, q, running, policy, now)
        if args.later:
            now += LATER


def _live(cycles: int) -> None:
    """The cycles valgrind counts with `--live`: the live fleet's first `cycles` cycles."""
    from airflow_mcsched.decision import Policy

    # imported after the engine: run as a script it puts its own tree first on the path, and the
    # engine counted must be the one PYTHONPATH names, as the outer run reports
    memory_soak = importlib.import_module("memory_soak")
    fleet = memory_soak.live_fleet(100, 1, LIVE_QUEUE, LIVE_ARRIVALS)
    for _ in memory_soak.soak(fleet, cycles, Policy(), timedelta(seconds=120), check=False):
        pass


def _command(args: argparse.Namespace, measured: int) -> list[str]:
    """The valgrind command that counts the run of `measured` cycles."""
    return [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--branch-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--queue",
        args.queue,
        "--inner",
        str(measured),
        *(["--later"] if args.later else []),
        *(["--changed"] if args.changed else []),
        *(["--newqueue"] if args.newqueue else []),
        *(["--runners-up", str(args.runners_up)] if args.runners_up is not None else []),
        *(["--running", args.running] if args.running is not None else []),
        *(["--live"] if args.live else []),
    ]


def _counted(args: argparse.Namespace, *measured: int) -> list[int]:
    """Instructions of each run, `measured` cycles each, the runs side by side (one per core)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    runs = [
        subprocess.Popen(_command(args, m), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for m in measured
    ]
    counts = []
    for run in runs:
        stdout, stderr = run.communicate()
        found = re.search(r"I\s+refs:\s+([\d,]+)", stderr)
        if run.returncode or found is None:
            raise SystemExit(f"the counted run failed (status {run.returncode}):\n{stderr[-2000:]}")
        if stdout.strip() != _engine():
            raise SystemExit(f"the counted run measured the engine in {stdout.strip()}, not {_engine()}")
        counts.append(int(found.group(1).replace(",", "")))
    return counts


def _cycle_span(text: str) -> tuple[int, int]:
    """`--live-cycles FIRST,LAST`: two whole numbers, the first smaller."""
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts) or int(parts[0]) >= int(parts[1]):
        raise argparse.ArgumentTypeError(f"{text!r}: give two whole numbers, the first smaller, as in 30,50")
    return int(parts[0]), int(parts[1])


def _engine() -> str:
    """Where the engine this process imports lives: the installed package, unless PYTHONPATH names
    another tree (running this from another tree's folder does not change it)."""
    import airflow_mcsched

    return os.path.dirname(airflow_mcsched.__file__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", choices=["steps", "random"], default="random")
    parser.add_argument("--later", action="store_true", help="each cycle 5 s after the one before")
    parser.add_argument("--changed", action="store_true", help="each cycle on a view with a tenth of the pools changed")
    parser.add_argument(
        "--newqueue", action="store_true", help="each cycle on a new read, with a queue of new requests"
    )
    parser.add_argument("--runners-up", type=int, default=None, help="runners-up explained (default: the policy's)")
    parser.add_argument("--busy", action="store_true", help="on the full fleet of `engine_cycles.py --busy`")
    parser.add_argument(
        "--busy-file", default=None, help="with --busy: the full fleet's work, pickled (as engine_cycles.py's)"
    )
    parser.add_argument("--live", action="store_true", help="the live fleet of memory_soak.py (see above)")
    parser.add_argument(
        "--live-cycles",
        type=_cycle_span,
        default=(30, 50),
        help="with --live: the cycles counted to, FIRST,LAST (default 30,50)",
    )
    parser.add_argument("--inner", type=int, default=None, help=argparse.SUPPRESS)  # the run valgrind counts
    parser.add_argument("--running", default=None, help=argparse.SUPPRESS)  # the full fleet's work, pickled
    args = parser.parse_args()
    if args.inner is not None:
        if args.live:
            _live(args.inner)
        else:
            _cycles(args, args.inner)
        print(_engine())  # the outer run checks it measured the engine it names
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt install valgrind)")
    with tempfile.TemporaryDirectory() as folder:
        if args.busy:  # made once, outside valgrind (minutes), and read by both counted runs
            args.running = args.busy_file or os.path.join(folder, "running.pickle")
            _fill(args.queue, args.running)
        if args.live:
            first, last = args.live_cycles
            low, high = _counted(args, first, last)
        else:
            one, three = _counted(args, 1, 3)
    if args.live:
        print(
            f"live fleet ({LIVE_QUEUE} requests first, {LIVE_ARRIVALS} new a cycle), "
            f"{f'cycle {first}' if last - first == 1 else f'cycles {first}-{last - 1}'}: "
            f"{(high - low) / (last - first) / 1e6:.1f} M instructions per cycle"
        )
    else:
        print(
            f"{args.queue} queue{', full fleet' if args.busy else ''}{', 5 s later each cycle' if args.later else ''}"
            f"{', a tenth of the pools changed each cycle' if args.changed else ''}"
            f"{', a new read and new requests each cycle' if args.newqueue else ''}: "
            f"{(three - one) / 2 / 1e6:.0f} M instructions per cycle"
        )
    print(f"engine measured: {_engine()}")


def _fleet(queue_kind: str) -> tuple:
    """The benchmark's fleet and the queue measured: (rng, profiles, reads, running, view, queue)."""
    from bench_engine import fleet_and_queues

    rng = random.Random(1)
    profiles, observations, running, view, templated, random_queue = fleet_and_queues(100, rng)
    return rng, profiles, observations, running, view, templated if queue_kind == "steps" else random_queue


def _fill(queue_kind: str, path: str) -> None:
    """The running work of the benchmark's full fleet (`bench_engine.filled_at`), pickled at `path`
    (left as it is when there already)."""
    from bench_engine import filled_at

    _, _, _, running, view, queue = _fleet(queue_kind)
    filled_at((100, queue_kind), view, queue, running, path)


if __name__ == "__main__":
    main()
