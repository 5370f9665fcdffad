"""Stable reason codes: the words a user reads when asking why a step is pending, admitted or preempted.

Values never change once released (dashboards and stored decisions depend on them); add new ones.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    # a cluster cannot take the work
    CLUSTER_CORDONED = "ClusterCordoned"
    CLUSTER_UNHEALTHY = "ClusterUnhealthy"
    CLUSTER_STALE = "ClusterStale"
    FAILURE_DOMAIN_EXCLUDED = "FailureDomainExcluded"
    NOT_SUITED_FOR_WORK = "NotSuitedForWork"
    DATA_FAR_AWAY = "DataFarAway"
    # a node pool cannot take the work
    NO_MATCHING_GPU_TYPE = "NoMatchingGpuType"
    INSUFFICIENT_GPU_MEMORY = "InsufficientGpuMemory"
    NO_GPU_SHARING = "NoGpuSharing"
    NO_RDMA = "NoRdma"
    SLOW_STORAGE = "SlowStorage"
    COST_CEILING = "CostCeiling"
    RESERVED_FOR_PRIORITY = "ReservedForPriority"
    QUOTA_EXCEEDED = "QuotaExceeded"
    INSUFFICIENT_FREE_GPUS = "InsufficientFreeGpus"
    DOES_NOT_FIT_ON_ONE_NODE = "DoesNotFitOnOneNode"
    GANG_DOES_NOT_FIT = "GangDoesNotFit"
    INSUFFICIENT_CPU = "InsufficientCpu"
    INSUFFICIENT_MEMORY = "InsufficientMemory"
    WAITING_BEHIND_HEAD = "WaitingBehindHead"
    # the request as a whole
    ADMITTED = "Admitted"
    PREEMPTING = "Preempting"
    WAITING_FOR_CAPACITY = "WaitingForCapacity"
    WAITING_FOR_QUOTA = "WaitingForQuota"
    NO_FEASIBLE_CLUSTER = "NoFeasibleCluster"
    UNKNOWN_PRIORITY_CLASS = "UnknownPriorityClass"
    # what happens to running work
    PREEMPTED_BY_PRIORITY = "PreemptedByPriority"
    RECLAIMED_BY_LENDER = "ReclaimedByLender"
    LEASE_EXPIRED = "LeaseExpired"
    IDLE_RESERVATION = "IdleReservation"


CAPACITY_REASONS = frozenset(
    {
        Reason.INSUFFICIENT_FREE_GPUS,
        Reason.DOES_NOT_FIT_ON_ONE_NODE,
        Reason.GANG_DOES_NOT_FIT,
        Reason.INSUFFICIENT_CPU,
        Reason.INSUFFICIENT_MEMORY,
    }
)
"""Rejections that go away when running work ends: the request may wait, backfill or preempt for them."""
