"""Read the fleet: cluster profiles with their last capacity read and health."""

from __future__ import annotations

from airflow.utils.session import create_session
from fastapi import APIRouter, HTTPException

from airflow_mcsched.service.auth import CallerDep
from airflow_mcsched.service.cluster_store import ClusterNotFound, ClusterStore
from airflow_mcsched.service.schemas import ClusterList, ClusterOut, ClusterStatusOut
from airflow_mcsched.service.status_store import StatusStore

router = APIRouter(prefix="/api/v1/clusters", tags=["clusters"])


@router.get("", response_model=ClusterList, summary="All clusters with their live status")
def list_clusters(caller: CallerDep) -> ClusterList:
    with create_session() as session:
        profiles = ClusterStore(session).list()
        statuses = StatusStore(session).all()
    return ClusterList(
        clusters=[
            ClusterOut(
                profile=p,
                status=ClusterStatusOut(**statuses[p.name].summary()) if p.name in statuses else None,
            )
            for p in profiles
        ]
    )


@router.get("/{name}", response_model=ClusterOut, summary="One cluster with its live status")
def get_cluster(name: str, caller: CallerDep) -> ClusterOut:
    with create_session() as session:
        try:
            profile = ClusterStore(session).get(name)
        except ClusterNotFound as err:
            raise HTTPException(status_code=404, detail=str(err)) from None
        status = StatusStore(session).all().get(name)
    return ClusterOut(profile=profile, status=ClusterStatusOut(**status.summary()) if status else None)
