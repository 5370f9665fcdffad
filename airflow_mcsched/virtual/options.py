"""Behaviour knobs of a virtual cluster that a fleet file does not describe (it describes hardware)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

RuntimeChoice = Literal["auto", "timed", "process"]


@dataclass(frozen=True)
class VirtualClusterOptions:
    """How pods behave on a virtual cluster.

    `default_runtime="auto"` runs a container as a local process when it has a `command`, and as
    a timed container (sleeps `default_duration_seconds`) otherwise; the pod annotation
    `mcsched.io/runtime` overrides it per pod.
    """

    default_runtime: RuntimeChoice = "auto"
    default_duration_seconds: float = 1.0
    # From binding to the container running: stands for image pull and container creation.
    container_start_seconds: float = 0.05
    max_pods_per_node: int = 110
    # Kept per container; older lines are dropped like a rotated container log.
    max_log_lines: int = 10_000
    # Graceful termination bound for process-runtime containers on delete (after SIGTERM).
    default_grace_seconds: int = 30

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VirtualClusterOptions:
        return cls(**data)
