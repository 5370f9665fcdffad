"""Tiny openb-format traces and fleets written to a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
)


def write_pods(path: Path, rows: list[tuple]) -> Path:
    """rows: (name, cpu_milli, memory_mib, num_gpu, gpu_milli, qos, creation, deletion, scheduled)."""
    lines = [POD_HEADER]
    for name, cpu, mem, gpus, milli, qos, created, deleted, scheduled in rows:
        lines.append(f"{name},{cpu},{mem},{gpus},{milli},,{qos},Running,{created},{deleted},{scheduled}\n")
    path.write_text("".join(lines))
    return path


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    (tmp_path / "nodes.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,G2\nn1,64000,262144,8,G2\nn2,32000,131072,2,T4\n"
    )
    (tmp_path / "split.csv").write_text(
        "sn,cluster,model,price_per_gpu_hour,in_scale_0_1\n"
        "n0,cloud-c,G2,0.9,1\n"
        "n1,onprem-a,G2,0.5,0\n"
        "n2,onprem-a,T4,0.2,1\n"
    )
    return tmp_path
