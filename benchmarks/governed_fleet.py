"""What `memory_soak.py --governed` adds to the live fleet: the governance a real fleet runs under.

The plain soak runs the default policy on a fleet where every cluster is healthy and active, and
its requests ask for shape, GPU types, data, priority and duration only. So the engine's memory was
never checked where its answers read the team, the cycle's grants or the clock beyond that: quotas
and the quota taken back, GPUs kept for some, spread groups, failure domains, cost ceilings, weight
overrides, aging, and clusters that go stale, fail a read or are cordoned. This adds them, drawn
from a generator of their own (the seed's, offset), so the plain soak's fleet and figures do not
move:

- **policy** (`governed_policy`): quotas for six of the ten teams, sized to the fleet (a share of
  its GPUs each), in two cohorts that lend idle quota, one with a borrowing limit and one that may
  not borrow, one team alone; a quota per GPU type next to one for any type; fair-share weights for
  two other teams; weight overrides for a team, a kind of work, and both; aging after 30 minutes;
- **fleet** (`with_kept_gpus`): every fourth cluster keeps 16 GPUs of its large type for the `high`
  and `critical` classes, every sixth all GPUs of its small type for `team-7`;
- **reads** (`with_pod_counts`, `unsettled`): each read counts our pods as a Kubernetes read does
  (those a node shows as running, the others as pending), so the counts move from read to read as
  a live cluster's do; each cycle, each cluster's read fails (1 %: no capacity, an error) or is
  old (2 %: `OLD_READ`, older than the policy's limit);
- **operators** (`cordoned_now`): one cluster cordoned at a time, another every 25 cycles (a new
  layout each time, and the one before again after that);
- **requests** (`governed_request`): spread groups of a few members, failure domains to use or to
  avoid, clusters to avoid, cost ceilings per hour, a minimum GPU memory instead of GPU types, and
  deadlines (which only change the wording).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable
from datetime import datetime, timedelta

from airflow_mcsched.access.capacity import ClusterObservation
from airflow_mcsched.access.profiles import ClusterProfile, ClusterState, GpuReservation
from airflow_mcsched.decision import PlacementRequest, Policy, Reservation

SEED_OFFSET = 7919
"""The governed draws' generator is seeded with the soak's seed plus this: its own sequence."""
FAILED, OLD = 0.01, 0.02
"""Chances, per cluster and cycle, that its read failed or is older than the policy allows."""
OLD_READ = timedelta(minutes=6)
"""The age of an old read: older than the policy allows (`max_observation_age_seconds`, 5 minutes)."""
CORDON_EVERY = 25
"""Cycles between two cordons (one cluster at a time)."""
QUOTA_SHARE = 0.06
"""Each team's nominal quota, as a share of the fleet's GPUs (10 teams: 6 with quota use 36 % of it)."""


def governed_policy(profiles: list[ClusterProfile]) -> Policy:
    """The governed soak's policy, its quotas sized to the fleet (`QUOTA_SHARE` of its GPUs a team)."""
    gpus = sum(p.gpus_per_node * p.nodes for c in profiles for p in c.node_pools)
    share = round(gpus * QUOTA_SHARE)
    half = round(share / 2)
    return Policy.from_dict(
        {
            "quotas": [
                {"team": "team-0", "nominal": {"*": share}, "cohort": "research"},
                {
                    "team": "team-1",
                    "nominal": {"A100": half, "H100": half},
                    "cohort": "research",
                    "borrowing_limit": half,
                },
                {"team": "team-2", "nominal": {"*": share}, "cohort": "research"},
                {"team": "team-3", "nominal": {"*": share}, "cohort": "product", "borrowing_limit": 0},
                {"team": "team-4", "nominal": {"L4": half, "T4": half, "*": half}, "cohort": "product"},
                {"team": "team-5", "nominal": {"*": share}},
            ],
            "team_shares": {"team-6": 2, "team-7": 0.5},
            "overrides": [
                {"team": "team-1", "weights": {"price": 3}},
                {"kind": "inference", "weights": {"load": 0.5, "whole_nodes": 0}},
                {"team": "team-2", "kind": "training", "weights": {"data": 3, "fragmentation": 2}},
            ],
            "aging_seconds": 1800,
            "max_observation_age_seconds": OLD_READ.total_seconds() - 60,
        }
    )


def with_kept_gpus(profiles: list[ClusterProfile]) -> list[ClusterProfile]:
    """Every fourth cluster keeps 16 GPUs of its large pool's type for `high` and `critical` work,
    every sixth every GPU of its small pool's type for `team-7`."""
    out = []
    for i, profile in enumerate(profiles):
        kept = []
        big, small = profile.node_pools[0].gpu_type, profile.node_pools[1].gpu_type
        if i % 4 == 0 and big:
            kept.append(GpuReservation(gpu_type=big, gpus=16, priority_classes=["high", "critical"]))
        if i % 6 == 0 and small and small != big:
            kept.append(GpuReservation(gpu_type=small, teams=["team-7"]))
        out.append(profile.model_copy(update={"reserved": kept}) if kept else profile)
    return out


def cordoned_now(profiles: list[ClusterProfile], cycle: int) -> list[ClusterProfile]:
    """The fleet with one cluster cordoned, a different one every `CORDON_EVERY` cycles (none in
    the first period): each change is a new layout, and two periods later the one before is met again."""
    period = cycle // CORDON_EVERY
    if period == 0:
        return profiles
    at = (period * 7) % len(profiles)
    return [p.model_copy(update={"state": ClusterState.CORDONED}) if i == at else p for i, p in enumerate(profiles)]


def unsettled(
    reads: list[ClusterObservation], rng: random.Random, now: datetime, failed: float = FAILED, old: float = OLD
) -> list[ClusterObservation]:
    """The reads with some failed (an error, no capacity: each with the chance `failed`) and some
    `OLD_READ` old (each with the chance `old`), drawn afresh each cycle."""
    out = []
    for o in reads:
        draw = rng.random()
        if draw < failed:
            o = ClusterObservation(o.cluster, now, error="read failed: the API server timed out")
        elif draw < failed + old:
            o = dataclasses.replace(o, observed_at=now - OLD_READ)
        out.append(o)
    return out


def with_pod_counts(
    reads: list[ClusterObservation], running: Iterable[Reservation], shown: set[str]
) -> list[ClusterObservation]:
    """The reads with the pod counts a Kubernetes read gives (`access/kube_reader.py`): our pods a
    node shows as running, the others as pending, on top of other tenants' (the reads' own)."""
    counts: dict[str, list[int]] = {}
    for r in running:
        count = counts.setdefault(r.cluster, [0, 0])
        count[r.id not in shown] += len(r.pods)
    out = []
    for o in reads:
        ours = counts.get(o.cluster)
        if ours is not None:
            o = dataclasses.replace(o, pods_running=o.pods_running + ours[0], pods_pending=o.pods_pending + ours[1])
        out.append(o)
    return out


def governed_request(r: PlacementRequest, rng: random.Random, cycle: int, domains: list[str]) -> PlacementRequest:
    """`r` with what a governed request may add, drawn: a spread group (one of two per ten cycles:
    a group's members outnumber a small fleet's failure domains), failure domains to use or avoid,
    a cluster to avoid, a cost ceiling, a minimum GPU memory where it named no GPU type, a deadline."""
    update: dict = {}
    if rng.random() < 0.15:
        update["spread_group"] = f"spread-{cycle // 10}-{rng.randrange(2)}"
    draw = rng.random()
    if draw < 0.05:
        update["avoid_failure_domains"] = (rng.choice(domains),)
    elif draw < 0.1:
        update["failure_domains"] = tuple(rng.sample(domains, 2))
    if rng.random() < 0.03:
        update["avoid_clusters"] = (f"c{rng.randrange(4):04d}",)
    if rng.random() < 0.1:
        update["max_cost_per_hour"] = rng.choice([2.0, 8.0, 30.0])
    if r.gpus and not r.gpu_types and rng.random() < 0.1:
        update["min_gpu_memory_gib"] = 40.0
    if rng.random() < 0.05:
        update["deadline"] = r.arrival + timedelta(minutes=rng.choice([15, 120]))
    return PlacementRequest.model_validate({**r.model_dump(), **update}) if update else r


def domains_of(profiles: list[ClusterProfile]) -> list[str]:
    return sorted({p.domain for p in profiles})
