"""Known limitation, kept as strict expected failures until it is mended: a victim that is held
elsewhere in its pool ("spilled") is searched and stopped as if it were on its own node.

A reservation whose pod no read shows yet is held on its own node, and what that node has no room
for is held on the pool's other nodes (`PoolCapacity.take(..., anywhere=True)`). The preemption
search and the eviction give back the reservation's own pods (`Reservation.pods`), on its own node.
So after a spilled victim is stopped, the engine's per-node view differs from what stopping it
frees: one preemption stops work for a gang that still cannot start, and another is not made
where it would free a whole node. The fix needs the cycle's running work to carry, for such a
reservation, the pods as they are held (the preemption search, backfill's ends and the eviction
all read `Reservation.pods`).
"""

from __future__ import annotations

import pytest

from airflow_mcsched.decision.outcome import Outcome
from airflow_mcsched.decision.policy import DEFAULT_PRIORITY_CLASSES
from tests.decision.fleet_factory import cluster, decide_one, observe, pool, request, reservation, view_of

pytestmark = pytest.mark.usefixtures("fresh_memory")

C = cluster("c", pool("gpu", gpus_per_node=8, nodes=2))
# node 0 has 4 GPUs in use by work the read shows, node 1 is empty; X (6 GPUs, granted on node 0)
# has no pod in the read yet: 4 of its GPUs are held on node 0 and 2 spill to node 1. Stopping X
# leaves node 0 with 4 free GPUs and node 1 with 8.
VIEW = view_of((C, observe(C, free={"gpu": [4, 8]})))
X = reservation("x", "c", "gpu", "c-gpu-0", gpus=6, interruptible=True, priority=DEFAULT_PRIORITY_CLASSES["low"])


@pytest.mark.xfail(strict=True, reason="a spilled victim is given back on its own node (known limitation)")
def test_a_gang_that_stopping_a_spilled_victim_cannot_seat_does_not_stop_it():
    gang = request("gang", gpus=6, pods=2, gpu_types=["A100"], priority_class="critical")  # needs two nodes with 6
    assert decide_one(VIEW, gang, [X]).outcome is Outcome.WAITING


@pytest.mark.xfail(strict=True, reason="a spilled victim is given back on its own node (known limitation)")
def test_a_whole_node_that_stopping_a_spilled_victim_frees_is_found():
    whole = request("whole", gpus=8, gpu_types=["A100"], priority_class="critical")  # node 1 is whole once X stops
    decision = decide_one(VIEW, whole, [X])
    assert decision.outcome is Outcome.PREEMPTING and [v.reservation_id for v in decision.victims] == ["rsv-x"]
