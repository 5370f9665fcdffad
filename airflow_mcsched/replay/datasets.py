"""Where each replayed job's data lives, and what running away from it costs.

The openb trace says nothing about data, so the replay gives every job a dataset, seeded by its name
(documented in docs/benchmarks.md, identical for every policy):

- the dataset belongs to the job's team (`team-<t>-data`) and lives on the team's home cluster
  (the reference fleet's homes: onprem-a, onprem-b, cloud-c, cloud-d, cloud-c for teams 0 to 4);
- its size is drawn from crc32(name + "/data"): 40 % of jobs read nothing, 30 % read 20 GiB, 20 %
  read 100 GiB, 10 % read 500 GiB; CPU-only jobs read nothing.

A job placed away from its home pulls its dataset before it starts computing: the GPUs are held for
the staging time (size / the cluster's ingress bandwidth, the engine's own formula) and the home
site bills egress per GiB. Clusters declare their link in the replay fleet (on-prem: 10 Gbit/s in,
$0.02 per GiB out; cloud: 25 Gbit/s in, $0.09 per GiB out, a public cloud's internet egress price).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

from airflow_mcsched.access.profiles import ClusterKind, ClusterProfile, DataLocality
from airflow_mcsched.decision.staging import GBIT_PER_GIB

TEAMS = 5
"""Teams, as the reference fleet's README says: crc32(pod name) mod 5."""

SIZE_BUCKETS_GIB = ((40, 0.0), (30, 20.0), (20, 100.0), (10, 500.0))
"""(percent of jobs, GiB read): the seeded size distribution."""

LINKS = {
    ClusterKind.ON_PREM: DataLocality(ingress_gbps=10.0, egress_price_per_gib=0.02),
    ClusterKind.CLOUD: DataLocality(ingress_gbps=25.0, egress_price_per_gib=0.09),
}


def dataset_of(team: int) -> str:
    return f"team-{team}-data"


def dataset_gib(name: str, needs_gpu: bool) -> float:
    """The seeded size of a job's dataset (0 = reads nothing)."""
    if not needs_gpu:
        return 0.0
    draw = zlib.crc32(f"{name}/data".encode()) % 100
    for percent, gib in SIZE_BUCKETS_GIB:
        if draw < percent:
            return gib
        draw -= percent
    raise AssertionError("buckets sum to 100")


def with_data_homes(profiles: tuple[ClusterProfile, ...], home_of: Callable[[int], str]) -> tuple[ClusterProfile, ...]:
    """Profiles whose `data` holds the datasets of the teams homed there, with their kind's link."""
    out = []
    for profile in profiles:
        homed = [dataset_of(t) for t in range(TEAMS) if home_of(t) == profile.name]
        link = LINKS.get(profile.kind, LINKS[ClusterKind.CLOUD])
        data = profile.data.model_copy(
            update={
                "datasets": sorted({*profile.data.datasets, *homed}),
                "ingress_gbps": link.ingress_gbps,
                "egress_price_per_gib": link.egress_price_per_gib,
            }
        )
        out.append(profile.model_copy(update={"data": data}))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Staging:
    """What one start away from the data costs: GiB pulled, seconds the GPUs wait, egress dollars."""

    gib: float = 0.0
    seconds: float = 0.0
    egress_dollars: float = 0.0


NO_STAGING = Staging()


def staging_for(profiles: dict[str, ClusterProfile], dataset: str, gib: float, cluster: str) -> Staging:
    """Pulling `gib` of `dataset` to `cluster` from the cheapest site holding it (nothing if local)."""
    target = profiles[cluster]
    if not gib or target.data.holds(dataset):
        return NO_STAGING
    holders = [p for p in profiles.values() if p.data.holds(dataset)]
    egress = min((p.data.egress_price_per_gib for p in holders), default=0.0)
    return Staging(gib, gib * GBIT_PER_GIB / target.data.ingress_gbps, gib * egress)
