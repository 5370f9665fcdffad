"""Container logs: timestamped lines per container, readable whole or followed as they are written.

Lines are kept with the wall-clock time they were written so `sinceSeconds` and `timestamps=true`
behave as with kubelet (RFC 3339 with nanoseconds). Followers register a wake-up callable, which
a server calls back into its event loop; the writer never blocks on a slow reader.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime


def rfc3339_nano(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


class ContainerLog:
    def __init__(self, max_lines: int = 10_000) -> None:
        self._lines: deque[tuple[float, bytes]] = deque(maxlen=max_lines)
        self._written = 0  # lines ever written; positions of followers count from here
        self._closed = False
        self._lock = threading.Lock()
        self._waiters: set[Callable[[], None]] = set()

    @property
    def closed(self) -> bool:
        return self._closed

    def write(self, line: bytes, ts: float | None = None) -> None:
        if not line.endswith(b"\n"):
            line += b"\n"
        with self._lock:
            self._lines.append((ts if ts is not None else time.time(), line))
            self._written += 1
            waiters = list(self._waiters)
        for wake in waiters:
            wake()

    def close(self) -> None:
        """The container ended: followers get the rest and then the end of the stream."""
        with self._lock:
            self._closed = True
            waiters = list(self._waiters)
        for wake in waiters:
            wake()

    def reopen(self) -> None:
        with self._lock:
            self._closed = False

    def subscribe(self, wake: Callable[[], None]) -> None:
        with self._lock:
            self._waiters.add(wake)

    def unsubscribe(self, wake: Callable[[], None]) -> None:
        with self._lock:
            self._waiters.discard(wake)

    def read(
        self,
        position: int | None = None,
        since: float | None = None,
        tail: int | None = None,
        timestamps: bool = False,
    ) -> tuple[bytes, int, bool]:
        """Lines after `position` (None = the selection by since/tail), the next position, closed?"""
        with self._lock:
            first = self._written - len(self._lines)
            lines = list(self._lines)
            if position is None:
                if since is not None:
                    lines = [x for x in lines if x[0] >= since]
                if tail is not None:
                    lines = lines[-tail:] if tail > 0 else []
            else:
                lines = lines[max(position - first, 0) :]
            next_position, closed = self._written, self._closed
        if timestamps:
            body = b"".join(rfc3339_nano(ts).encode() + b" " + line for ts, line in lines)
        else:
            body = b"".join(line for _, line in lines)
        return body, next_position, closed
