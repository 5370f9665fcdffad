"""A pod's allocation keeps its hash (it is hashed every cycle in the keys of the capacity it changes)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

from airflow_mcsched.view.allocation import NodeAllocation


def test_equal_allocations_hash_alike_whether_or_not_their_hash_was_kept():
    a = NodeAllocation("n1", gpus=2, cpu_milli=1000, memory_mib=4096, gpu_indices=(0, 1))
    first = hash(a)
    b = NodeAllocation("n1", gpus=2, cpu_milli=1000, memory_mib=4096, gpu_indices=(0, 1))
    assert hash(a) == first == hash(b) and a == b
    assert {a: "held"}[b] == "held"
    assert NodeAllocation("n1", gpus=1) != a and {a: 1}.get(NodeAllocation("n1", gpus=1)) is None


def test_an_allocation_pickled_after_its_hash_was_kept_hashes_anew_in_another_process():
    """Strings hash differently in each process (hash randomisation): an allocation unpickled there
    (the replay's worker processes, a benchmark's pickled fleet) must not bring its old hash along."""
    a = NodeAllocation("node-7", gpus=1, gpu_indices=(3,))
    hash(a)
    script = (
        "import pickle, sys\n"
        "from airflow_mcsched.view.allocation import NodeAllocation\n"
        "a = pickle.loads(sys.stdin.buffer.read())\n"
        "kept = a._hash\n"
        "print({NodeAllocation('node-7', gpus=1, gpu_indices=(3,)): 'found'}.get(a), kept)\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", script], input=pickle.dumps(a), capture_output=True, env=env, check=True
    ).stdout.decode()
    assert out.split() == ["found", "0"]
