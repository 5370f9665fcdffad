"""Labels and annotations the virtual clusters write on nodes and read on pods.

Label names the resource-access layer also reads come from `access.capacity`; the rest are
specific to virtual clusters (runtime control annotations) or informational node labels.
"""

from __future__ import annotations

from airflow_mcsched.access.capacity import (
    ANNOTATION_GPU_MILLI,
    LABEL_FAILURE_DOMAIN,
    LABEL_GPU_PRODUCT,
    LABEL_NODE_POOL,
    LABEL_REGION,
    LABEL_ZONE,
    MILLI_PER_GPU,
    RESOURCE_GPU,
)

__all__ = [
    "ANNOTATION_DURATION",
    "ANNOTATION_EXIT_CODE",
    "ANNOTATION_GPU_MILLI",
    "ANNOTATION_RUNTIME",
    "LABEL_CLUSTER",
    "LABEL_FAILURE_DOMAIN",
    "LABEL_GPU_COUNT",
    "LABEL_GPU_MEMORY",
    "LABEL_GPU_PRODUCT",
    "LABEL_GPU_SHARING",
    "LABEL_INTERCONNECT_PREFIX",
    "LABEL_NODE_POOL",
    "LABEL_RDMA",
    "LABEL_REGION",
    "LABEL_ZONE",
    "MILLI_PER_GPU",
    "RESOURCE_GPU",
    "RUNTIMES",
]

# Pod annotations read by the virtual kubelet.
ANNOTATION_RUNTIME = "mcsched.io/runtime"  # "timed" or "process"
ANNOTATION_DURATION = "mcsched.io/duration-seconds"  # timed runtime: how long the container runs
ANNOTATION_EXIT_CODE = "mcsched.io/exit-code"  # timed runtime: the container's exit code
RUNTIMES = ("timed", "process")

# Node labels and annotations written from the fleet file.
LABEL_CLUSTER = "mcsched.io/cluster"
LABEL_GPU_COUNT = "nvidia.com/gpu.count"  # as NVIDIA GPU feature discovery sets them
LABEL_GPU_MEMORY = "nvidia.com/gpu.memory"  # MiB
LABEL_GPU_SHARING = "nvidia.com/gpu.sharing-strategy"  # "time-slicing" on pools with gpu_sharing
LABEL_INTERCONNECT_PREFIX = "mcsched.io/interconnect."  # + nvlink/infiniband/roce/ethernet = "true"
LABEL_RDMA = "feature.node.kubernetes.io/rdma.available"  # as node feature discovery sets it
ANNOTATION_PRICE = "mcsched.io/price-per-gpu-hour"
ANNOTATION_SPOT_PRICE = "mcsched.io/spot-price-per-gpu-hour"
