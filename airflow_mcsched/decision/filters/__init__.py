"""Filter plugins and the default pipeline, in the order they run (cheap and cluster-wide first)."""

from airflow_mcsched.decision.filters.base import Filter, Scope
from airflow_mcsched.decision.filters.capacity_fit import (
    DoesNotFitOnOneNode,
    GangDoesNotFit,
    InsufficientCpu,
    InsufficientFreeGpus,
    InsufficientMemory,
    NodesTooSmall,
)
from airflow_mcsched.decision.filters.cluster_health import ClusterCordoned, ClusterStale, ClusterUnhealthy
from airflow_mcsched.decision.filters.entitlement import QuotaExceeded, ReservedForPriority
from airflow_mcsched.decision.filters.placement_rules import (
    DataFarAway,
    FailureDomainExcluded,
    NotSuitedForWork,
    SpreadGroupConflict,
)
from airflow_mcsched.decision.filters.pool_traits import (
    CostCeiling,
    InsufficientGpuMemory,
    NoGpuSharing,
    NoMatchingGpuType,
    NoRdma,
    SlowStorage,
)

DEFAULT_FILTERS: tuple[Filter, ...] = (
    ClusterCordoned(),
    ClusterUnhealthy(),
    ClusterStale(),
    FailureDomainExcluded(),
    SpreadGroupConflict(),
    NotSuitedForWork(),
    DataFarAway(),
    NoMatchingGpuType(),
    InsufficientGpuMemory(),
    NoGpuSharing(),
    NoRdma(),
    SlowStorage(),
    CostCeiling(),
    NodesTooSmall(),
    ReservedForPriority(),
    QuotaExceeded(),
    InsufficientFreeGpus(),
    DoesNotFitOnOneNode(),
    GangDoesNotFit(),
    InsufficientCpu(),
    InsufficientMemory(),
)

__all__ = [
    "DEFAULT_FILTERS",
    "ClusterCordoned",
    "ClusterStale",
    "ClusterUnhealthy",
    "CostCeiling",
    "DataFarAway",
    "DoesNotFitOnOneNode",
    "FailureDomainExcluded",
    "Filter",
    "GangDoesNotFit",
    "InsufficientCpu",
    "InsufficientFreeGpus",
    "InsufficientGpuMemory",
    "InsufficientMemory",
    "NoGpuSharing",
    "NoMatchingGpuType",
    "NoRdma",
    "NodesTooSmall",
    "NotSuitedForWork",
    "QuotaExceeded",
    "ReservedForPriority",
    "Scope",
    "SlowStorage",
    "SpreadGroupConflict",
]
