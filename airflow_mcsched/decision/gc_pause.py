"""Hold Python's cyclic garbage collector off while an admission cycle runs.

A cycle builds tens of thousands of small objects (verdicts, scored candidates, decisions) that all
live until its result is returned. Every 700 of them the collector runs; the survivors age into the
oldest generation, and each time enough have piled up there it walks the whole heap of the process
(the engine's kept plans, the view, and in the API server all of Airflow). Measured on the engine
micro-benchmark (benchmarks/bench_engine.py) that was a fifth to a third of a 1,000-request cycle,
spent walking objects that were all still in use. Paused, the collector catches up once after the
cycle, on what the cycle left, so the work is not moved elsewhere but mostly not done at all.

The pause is counted, so cycles running at once in several threads keep it until the last one
ends, and a collector that someone else disabled stays disabled.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
