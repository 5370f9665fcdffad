"""Readers for traces in the openb format (Alibaba cluster-trace-gpu-v2023) and the jobs they describe.

Pods: name, cpu_milli, memory_mib, num_gpu, gpu_milli (share of one GPU, 1000 = whole), gpu_spec
('|'-separated GPU types, empty = any), qos, pod_phase, creation_time, deletion_time,
scheduled_time (seconds); gpu_spec, qos and pod_phase may be missing (then: any type, LS). A job
arrives at creation_time and runs deletion_time - scheduled_time.
Pods never scheduled in the trace (no scheduled_time) have no known run time and are left out.
"""

from __future__ import annotations

import csv
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.replay.datasets import TEAMS, dataset_gib, dataset_of

INTERRUPTIBLE_QOS = frozenset({"BE"})
"""Best-effort pods may be stopped; everything else (LS, Burstable, Guaranteed) must not be."""


@dataclass(frozen=True, slots=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One pod of the trace as a job to replay: when it arrives, how long it runs, what it asks."""

    name: str
    arrival: float
    duration: float
    cpu_milli: int
    memory_mib: int
    gpus: int
    gpu_milli: int
    gpu_types: tuple[str, ...]
    qos: str
    team: int
    dataset: str = ""
    data_gib: float = 0.0
    """GiB of `dataset` the job reads first (seeded: replay/datasets.py)."""
    demand: Demand = field(init=False, repr=False, compare=False)
    """The pod's shape in capacity units, computed once: a replay asks for it millions of times."""

    def __post_init__(self) -> None:
        share = 0 < self.gpu_milli < 1000 and self.gpus <= 1
        demand = Demand(
            pods=1,
            gpus=0 if share else self.gpus,
            gpu_milli=self.gpu_milli if share else 0,
            cpu_milli=self.cpu_milli,
            memory_mib=self.memory_mib,
        )
        object.__setattr__(self, "demand", demand)

    @property
    def interruptible(self) -> bool:
        return self.qos in INTERRUPTIBLE_QOS

    @property
    def gpu_equivalent(self) -> float:
        """GPUs held: whole GPUs, or one GPU's share (`gpus=1, gpu_milli=460` is 0.46 of one GPU)."""
        if self.gpus <= 1 and 0 < self.gpu_milli < 1000:
            return self.gpu_milli / 1000
        return float(self.gpus)


def team_of(name: str, teams: int = TEAMS) -> int:
    return zlib.crc32(name.encode()) % teams


def _rows(path: str | Path) -> Iterable[dict[str, str]]:
    with open(path, newline="") as f:
        yield from csv.DictReader(f)


def read_nodes(path: str | Path) -> list[TraceNode]:
    try:
        return [
            TraceNode(r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"]), r["model"])
            for r in _rows(path)
        ]
    except (KeyError, ValueError) as err:
        raise ValueError(f"{path}: not an openb node list (sn,cpu_milli,memory_mib,gpu,model): {err}") from None


def read_jobs(path: str | Path) -> tuple[list[TraceJob], int]:
    """Jobs in arrival order, and how many pods were left out because they never ran in the trace."""
    jobs, skipped = [], 0
    try:
        for r in _rows(path):
            if not r["scheduled_time"]:
                skipped += 1
                continue
            jobs.append(
                TraceJob(
                    name=r["name"],
                    arrival=float(r["creation_time"]),
                    duration=max(1.0, float(r["deletion_time"]) - float(r["scheduled_time"])),
                    cpu_milli=int(r["cpu_milli"]),
                    memory_mib=int(r["memory_mib"]),
                    gpus=int(r["num_gpu"]),
                    gpu_milli=int(r["gpu_milli"]) if int(r["num_gpu"]) else 0,
                    gpu_types=tuple(t for t in (r.get("gpu_spec") or "").split("|") if t),
                    qos=r.get("qos") or "LS",
                    team=(team := team_of(r["name"])),
                    dataset=dataset_of(team),
                    data_gib=dataset_gib(r["name"], needs_gpu=int(r["num_gpu"]) > 0),
                )
            )
    except (KeyError, ValueError) as err:
        raise ValueError(f"{path}: not an openb pod list: {err}") from None
    jobs.sort(key=lambda j: (j.arrival, j.name))
    return jobs, skipped


def compress_arrivals(jobs: list[TraceJob], load: float) -> list[TraceJob]:
    """Divide inter-arrival times by `load` (durations stay), so the fleet comes under pressure."""
    if load <= 0:
        raise ValueError(f"--load must be > 0, got {load}")
    if not jobs or load == 1:
        return jobs
    first = jobs[0].arrival
    return [replace(j, arrival=first + (j.arrival - first) / load) for j in jobs]
