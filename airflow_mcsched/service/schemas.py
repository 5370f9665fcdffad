"""Pydantic bodies of the placement service's HTTP API (the edge; domain objects stay inside)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from airflow_mcsched.access.profiles import ClusterProfile


class ClusterStatusOut(BaseModel):
    healthy: bool
    error: str | None
    observed_at: datetime | None
    last_success_at: datetime | None
    consecutive_failures: int
    sync_seconds: float | None
    nodes: int | None
    nodes_not_ready: int | None
    free_gpus: int | None
    pods_running: int | None
    pods_pending: int | None


class ClusterOut(BaseModel):
    profile: ClusterProfile
    status: ClusterStatusOut | None


class ClusterList(BaseModel):
    clusters: list[ClusterOut]
