"""Global resource view (layer 2): immutable snapshots of every cluster and node pool, cheap to query."""

from airflow_mcsched.view.allocation import NodeAllocation
from airflow_mcsched.view.builder import build_view
from airflow_mcsched.view.histogram import FreeGpuHistogram
from airflow_mcsched.view.node_capacity import NodeCapacity
from airflow_mcsched.view.overlay import CapacityOverlay
from airflow_mcsched.view.pool_capacity import PoolCapacity
from airflow_mcsched.view.snapshot import ClusterView, GlobalView, PoolKey, PoolView

__all__ = [
    "CapacityOverlay",
    "ClusterView",
    "FreeGpuHistogram",
    "GlobalView",
    "NodeAllocation",
    "NodeCapacity",
    "PoolCapacity",
    "PoolKey",
    "PoolView",
    "build_view",
]
