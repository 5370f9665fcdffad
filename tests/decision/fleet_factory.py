"""Small builders for engine tests: profiles, observations, views, requests and reservations in one line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from airflow_mcsched.access.capacity import ClusterObservation, NodeObservation
from airflow_mcsched.access.profiles import ClusterProfile, NodePool
from airflow_mcsched.decision.policy import Policy
from airflow_mcsched.decision.request import PlacementRequest
from airflow_mcsched.decision.reservation import Reservation
from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.builder import build_view
from airflow_mcsched.view.snapshot import GlobalView

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def pool(name: str = "gpu", gpu_type: str | None = "A100", gpus_per_node: int = 8, nodes: int = 2, **kw) -> NodePool:
    if gpu_type is None:
        gpus_per_node = 0
    kw.setdefault("price_per_gpu_hour", 2.0)
    kw.setdefault("gpu_memory_gib", 80 if gpu_type else 0)
    return NodePool(name=name, gpu_type=gpu_type, gpus_per_node=gpus_per_node, nodes=nodes, **kw)


def cluster(name: str, *pools: NodePool, **kw) -> ClusterProfile:
    return ClusterProfile(name=name, node_pools=list(pools) or [pool()], **kw)


def observe(
    profile: ClusterProfile,
    free: Mapping[str, Sequence[int]] | None = None,
    shares: Mapping[str, Sequence[Sequence[int]]] | None = None,
    cpu_free: Mapping[str, Sequence[float]] | None = None,
    at: datetime = NOW,
    error: str | None = None,
    seen: Sequence[str] = (),
    waiting: Sequence[str] = (),
    not_ready: Mapping[str, int] | None = None,
    pods_pending: int = 0,
    pods_running: int = 0,
) -> ClusterObservation:
    """Nodes named <cluster>-<pool>-<i>. `free[pool]` = whole free GPUs per node (default all);
    `shares[pool]` = free milli per GPU per node; `cpu_free[pool]` = free cores per node."""
    nodes = []
    for p in profile.node_pools:
        for i in range(p.nodes):
            if shares and p.name in shares:
                milli = tuple(shares[p.name][i])
            else:
                whole = free[p.name][i] if free and p.name in free else p.gpus_per_node
                milli = tuple([1000] * whole + [0] * (p.gpus_per_node - whole))
            cpu_alloc = int(p.cpu_per_node * 1000)
            cpu_used = cpu_alloc - int(cpu_free[p.name][i] * 1000) if cpu_free and p.name in cpu_free else 0
            nodes.append(
                NodeObservation(
                    name=f"{profile.name}-{p.name}-{i}",
                    pool=p.name,
                    gpu_type=p.gpu_type,
                    cpu_milli_allocatable=cpu_alloc,
                    memory_mib_allocatable=int(p.memory_gib_per_node * 1024),
                    cpu_milli_requested=cpu_used,
                    memory_mib_requested=0,
                    gpu_milli_free=milli,
                    ready=i >= (not_ready or {}).get(p.name, 0),
                )
            )
    if error:
        return ClusterObservation(profile.name, at, error=error)
    return ClusterObservation(
        profile.name,
        at,
        tuple(nodes),
        pods_running=pods_running,
        pods_pending=pods_pending,
        reservation_ids_seen=frozenset(seen),
        reservation_ids_waiting=frozenset(waiting),
    )


def view_of(*entries: ClusterProfile | tuple[ClusterProfile, ClusterObservation], at: datetime = NOW) -> GlobalView:
    """A view of these clusters; a bare profile is observed with everything free."""
    profiles, observations = [], []
    for e in entries:
        profile, obs = (e, observe(e, at=at)) if isinstance(e, ClusterProfile) else e
        profiles.append(profile)
        observations.append(obs)
    return build_view(profiles, observations, at)


def request(rid: str = "r1", **kw) -> PlacementRequest:
    kw.setdefault("arrival", NOW - timedelta(minutes=1))
    kw.setdefault("team", "ml")
    return PlacementRequest(id=rid, **kw)


def reservation(
    rid: str,
    cluster_name: str,
    pool_name: str,
    node: str,
    gpus: int = 1,
    *,
    gpu_milli: int = 0,
    team: str = "ml",
    priority: int = 100,
    interruptible: bool = False,
    price: float = 2.0,
    gpu_type: str | None = "A100",
    ends_in: timedelta = timedelta(hours=1),
    expires_in: timedelta = timedelta(minutes=10),
    pods: int = 1,
    **kw,
) -> Reservation:
    return Reservation(
        id=f"rsv-{rid}",
        request_id=rid,
        cluster=cluster_name,
        pool=pool_name,
        pods=tuple(NodeAllocation(node, gpus, gpu_milli, 1000, 4096) for _ in range(pods)),
        team=team,
        priority=priority,
        interruptible=interruptible,
        price_per_gpu_hour=price,
        granted_at=NOW - timedelta(minutes=5),
        expires_at=NOW + expires_in,
        expected_end=NOW + ends_in,
        gpu_type=gpu_type,
        **kw,
    )


DEFAULT_POLICY = Policy()


def decide_one(view, req, reservations=(), policy: Policy = DEFAULT_POLICY, now: datetime = NOW):
    """The engine's decision for one request asked alone (a queue of one)."""
    from airflow_mcsched.decision import decide

    return decide(view, [req], list(reservations), policy, now).decisions[0]
