"""Hold Python's cyclic garbage collector off while an admission cycle runs.

A cycle builds tens of thousands of small objects (verdicts, scored candidates, decisions) that all
live until its result is returned. Every 700 of them the collector runs; the survivors age into the
oldest generation, and each time enough have piled up there it walks the whole heap of the process
(the engine's kept plans, the view, and in the API server all of Airflow). Measured on the engine
micro-benchmark (benchmarks/bench_engine.py) that was a fifth to a third of a 1,000-request cycle,
spent walking objects that were all still in use.

Nor does the collector catch up after the cycle. Once re-enabled, its first collection would walk
everything the cycle left (its result, what the engine learnt), 5-10 % of a cycle's time, and
later the middle generation would walk it again. A cycle leaves no garbage with reference
cycles (`tests/decision/test_engine_speedups.py` checks: its objects are freed by their reference
counts alone), so those walks find nothing to free. So what the pause left young is moved to the
oldest generation as it is (`gc.freeze()` then `gc.unfreeze()`: two list splices, no walk), where
the next full collection, which Python starts by its own measure, examines it as it examines
everything else. When someone keeps objects frozen (a server that freezes its heap before forking
workers), nothing is moved: unfreezing would hand their objects back to the collector.

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
                if gc.get_freeze_count() == 0:
                    gc.freeze()  # everything tracked into the permanent generation, young counts reset,
                    gc.unfreeze()  # and back into the oldest: nothing is walked
                gc.enable()
