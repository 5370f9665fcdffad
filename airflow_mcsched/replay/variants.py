"""Seeded variants of a trace: arrival jitter for repeated runs, GPU-type constraints, multi-GPU pods.

The shipped openb trace has no GPU-type constraints and only 75 multi-GPU pods, yet those are the
jobs where the choice of cluster matters most. The variants below are derived from it, seeded, and
documented in docs/benchmarks.md so that anyone can rebuild them:

- `constrained`: 30 % of the GPU pods (drawn with the seed) accept only one GPU model, drawn with
  probability proportional to that model's GPUs in the fleet (so no constraint is hopeless), and
  half of those accept a second model drawn the same way;
- `multi-gpu`: 10 % of the whole-one-GPU pods become 2-, 4- or 8-GPU pods (weights 5:3:2), with
  CPU and memory scaled by the same factor up to half of the largest node that has that many GPUs;
  duration and arrival are kept;
- `constrained+multi-gpu`: both, in that order.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from airflow_mcsched.replay.fleet import ReplayFleet
from airflow_mcsched.replay.openb import TraceJob

VARIANTS = ("shipped", "constrained", "multi-gpu", "constrained+multi-gpu")
CONSTRAINED_SHARE = 0.30
MULTI_GPU_SHARE = 0.10
MULTI_GPU_SIZES = ((2, 5), (4, 3), (8, 2))
"""(GPUs, weight) for pods made multi-GPU."""


def jittered(jobs: Sequence[TraceJob], seed: int, fraction: float = 0.5) -> list[TraceJob]:
    """Each arrival moved by up to `fraction` of the mean gap between arrivals, either way (seed 0: as is).

    Repeating a replay over seeds shows how much its figures owe to one exact arrival order.
    """
    if seed == 0 or len(jobs) < 2:
        return list(jobs)
    rng = random.Random(seed)
    gap = (jobs[-1].arrival - jobs[0].arrival) / (len(jobs) - 1)
    first = jobs[0].arrival
    moved = [replace(j, arrival=max(first, j.arrival + rng.uniform(-fraction, fraction) * gap)) for j in jobs]
    moved.sort(key=lambda j: (j.arrival, j.name))
    return moved


def _gpu_models(fleet: ReplayFleet) -> Counter[str]:
    gpus: Counter[str] = Counter()
    for profile in fleet.profiles:
        for pool in profile.node_pools:
            if pool.gpu_type:
                gpus[pool.gpu_type] += pool.gpus_per_node * pool.nodes
    return gpus


def constrained(jobs: Sequence[TraceJob], fleet: ReplayFleet, seed: int = 7) -> list[TraceJob]:
    """A seeded share of GPU pods accept only one or two GPU models (see the module docstring)."""
    rng = random.Random(seed)
    models = _gpu_models(fleet)
    names, weights = list(models), list(models.values())
    out = []
    for job in jobs:
        if job.demand.needs_gpu and not job.gpu_types and rng.random() < CONSTRAINED_SHARE:
            chosen = {rng.choices(names, weights)[0]}
            if rng.random() < 0.5:
                chosen.add(rng.choices(names, weights)[0])
            job = replace(job, gpu_types=tuple(sorted(chosen)))
        out.append(job)
    return out


def _largest_node(fleet: ReplayFleet, gpus: int) -> tuple[int, int]:
    """(milli-CPU, MiB) of the largest node with at least `gpus` GPUs."""
    nodes = [n for shapes in fleet.nodes.values() for n in shapes if n.gpus >= gpus]
    return max((n.cpu_milli_allocatable for n in nodes), default=0), max(
        (n.memory_mib_allocatable for n in nodes), default=0
    )


def multi_gpu(jobs: Sequence[TraceJob], fleet: ReplayFleet, seed: int = 11) -> list[TraceJob]:
    """A seeded share of one-whole-GPU pods ask for 2, 4 or 8 GPUs (see the module docstring)."""
    rng = random.Random(seed)
    sizes, weights = [s for s, _ in MULTI_GPU_SIZES], [w for _, w in MULTI_GPU_SIZES]
    limits = {s: _largest_node(fleet, s) for s in sizes}
    out = []
    for job in jobs:
        if job.gpus == 1 and job.demand.gpus == 1 and rng.random() < MULTI_GPU_SHARE:
            gpus = rng.choices(sizes, weights)[0]
            cpu, memory = limits[gpus]
            if cpu:
                job = replace(
                    job,
                    gpus=gpus,
                    gpu_milli=1000,
                    cpu_milli=min(job.cpu_milli * gpus, cpu // 2),
                    memory_mib=min(job.memory_mib * gpus, memory // 2),
                )
        out.append(job)
    return out


def variant(name: str, jobs: Sequence[TraceJob], fleet: ReplayFleet) -> list[TraceJob]:
    """The named variant of the trace; an unknown name is an error listing the choices."""
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")
    out = list(jobs)
    if "constrained" in name:
        out = constrained(out, fleet)
    if "multi-gpu" in name:
        out = multi_gpu(out, fleet)
    return out
