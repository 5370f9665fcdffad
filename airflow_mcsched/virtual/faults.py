"""Faults a test can switch on in a virtual cluster's API: down, slow, flaky.

`unavailable` answers 503 like an apiserver behind a load balancer with no healthy backend;
`refuse` closes the listening socket for a while (clients get "connection refused");
`latency_seconds` delays every API answer; `error_rate` answers that fraction of requests with
500 InternalError, drawn from a seeded generator so a test run is repeatable. Admin endpoints
(`/_virtual/...`) and health checks are never faulted, so a test can always switch faults off.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True)
class ApiFaults:
    unavailable: bool = False
    latency_seconds: float = 0.0
    error_rate: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """What to do with one API request."""

    delay: float = 0.0
    fail_with: int | None = None  # 503 or 500


class FaultInjector:
    def __init__(self, seed: int = 0) -> None:
        self._faults = ApiFaults()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.refuse_handler: Callable[[float | None], None] | None = None  # set by the server
        self.refusing = False

    @property
    def faults(self) -> ApiFaults:
        return self._faults

    def update(self, **changes: Any) -> ApiFaults:
        """Change some faults, keep the others; unknown names or bad values raise ValueError."""
        unknown = set(changes) - set(ApiFaults.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown fault(s) {sorted(unknown)}; known: {sorted(ApiFaults.__dataclass_fields__)}")
        new = replace(self._faults, **changes)
        if not 0.0 <= float(new.error_rate) <= 1.0:
            raise ValueError("error_rate must be between 0 and 1")
        if float(new.latency_seconds) < 0:
            raise ValueError("latency_seconds must be >= 0")
        new = ApiFaults(bool(new.unavailable), float(new.latency_seconds), float(new.error_rate))
        with self._lock:
            self._faults = new
        return new

    def clear(self) -> ApiFaults:
        with self._lock:
            self._faults = ApiFaults()
        if self.refusing and self.refuse_handler:
            self.refuse_handler(0)
        return self._faults

    def refuse(self, seconds: float | None) -> None:
        """Stop accepting connections for `seconds` (None: until `clear()`; 0: accept again now)."""
        if self.refuse_handler is None:
            raise RuntimeError("this cluster has no server to close")
        self.refuse_handler(seconds)

    def verdict(self) -> Verdict:
        faults = self._faults
        if faults.unavailable:
            return Verdict(faults.latency_seconds, 503)
        if faults.error_rate:
            with self._lock:
                failing = self._rng.random() < faults.error_rate
            if failing:
                return Verdict(faults.latency_seconds, 500)
        return Verdict(faults.latency_seconds)
