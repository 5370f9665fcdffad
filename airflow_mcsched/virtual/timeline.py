"""One thread that runs a cluster's timed work in order: container starts and exits, scheduling passes.

Running every state transition on one thread keeps a pod's history strictly ordered without a
thread per pod, which is what lets one virtual cluster run a thousand timed pods at once.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class TimerHandle:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timeline:
    def __init__(self, name: str) -> None:
        self._heap: list[tuple[float, int, TimerHandle, Callable[..., Any], tuple[Any, ...]]] = []
        self._counter = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=f"timeline-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> TimerHandle:
        handle = TimerHandle()
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + max(delay, 0.0), next(self._counter), handle, fn, args))
            self._cond.notify()
        return handle

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> TimerHandle:
        return self.call_later(0.0, fn, *args)

    def on_own_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread.is_alive() and not self.on_own_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    timeout = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(timeout)
                if self._stopped:
                    return
                _, _, handle, fn, args = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            try:
                fn(*args)
            except Exception:
                log.exception("virtual cluster: timed step %s failed", getattr(fn, "__qualname__", fn))
