"""Reading openb traces and fleets."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_mcsched.replay.fleet import fleet_from_split, fleet_from_yaml, load_fleet, pooled
from airflow_mcsched.replay.openb import compress_arrivals, read_jobs, team_of
from tests.replay.conftest import write_pods

REPO = Path(__file__).resolve().parents[2]
TRACES = Path("/work/shared/traces")


def test_jobs_arrive_at_creation_and_run_until_deletion(tmp_path):
    pods = write_pods(
        tmp_path / "pods.csv",
        [
            ("p1", 4000, 1024, 1, 460, "LS", 10, 100, 20),
            ("p0", 1000, 512, 0, 0, "BE", 5, 50, 5),
            ("never", 1000, 512, 1, 1000, "LS", 7, 9, ""),
        ],
    )
    jobs, skipped = read_jobs(pods)
    assert skipped == 1
    assert [(j.name, j.arrival, j.duration) for j in jobs] == [("p0", 5, 45), ("p1", 10, 80)]
    p0, p1 = jobs
    assert p0.interruptible and not p1.interruptible
    assert p1.gpu_equivalent == 0.46 and p0.gpu_equivalent == 0
    assert p1.team == team_of("p1")


def test_load_divides_inter_arrival_times_and_keeps_durations(tmp_path):
    pods = write_pods(
        tmp_path / "p.csv", [("a", 1, 1, 0, 0, "LS", 100, 200, 100), ("b", 1, 1, 0, 0, "LS", 300, 400, 300)]
    )
    jobs = compress_arrivals(read_jobs(pods)[0], 4)
    assert [(j.arrival, j.duration) for j in jobs] == [(100, 100), (150, 100)]
    with pytest.raises(ValueError, match="--load"):
        compress_arrivals(jobs, 0)


def test_split_fleet_groups_nodes_into_priced_pools(trace_dir):
    fleet = fleet_from_split(trace_dir / "split.csv", trace_dir / "nodes.csv")
    assert [c.name for c in fleet.profiles] == ["cloud-c", "onprem-a"]
    onprem = fleet.profiles[1]
    assert {(p.gpu_type, p.nodes, p.price_per_gpu_hour, p.gpu_sharing) for p in onprem.node_pools} == {
        ("G2", 1, 0.5, True),
        ("T4", 1, 0.2, True),
    }
    assert fleet.total_gpus == 18


def test_scale_keeps_the_marked_subset(trace_dir):
    fleet = fleet_from_split(trace_dir / "split.csv", trace_dir / "nodes.csv", scale=0.1)
    assert fleet.total_gpus == 10


def test_pooled_fleet_is_one_cluster_with_every_pool(trace_dir):
    one = pooled(fleet_from_split(trace_dir / "split.csv", trace_dir / "nodes.csv"))
    assert [c.name for c in one.profiles] == ["pooled"]
    assert one.total_gpus == 18 and len(one.profiles[0].node_pools) == 3


def test_fleet_file_gives_each_pool_its_declared_nodes():
    fleet = fleet_from_yaml(REPO / "examples" / "fleet.yaml")
    assert fleet.total_gpus == sum(c.total_gpus for c in fleet.profiles)


def test_split_csv_needs_the_node_list(trace_dir):
    with pytest.raises(ValueError, match="--nodes"):
        load_fleet(trace_dir / "split.csv", None, None)


@pytest.mark.skipif(not TRACES.exists(), reason="reference traces not present")
def test_reference_fleet_at_scale_0_1_has_130_nodes_and_656_gpus():
    fleet = fleet_from_split(TRACES / "openb_fleet_split.csv", TRACES / "openb_node_list_gpu_node.csv", 0.1)
    assert sum(len(n) for n in fleet.nodes.values()) == 130
    assert fleet.total_gpus == 656
    assert fleet.home_of(0) == "onprem-a" and fleet.home_of(4) == "cloud-c"
