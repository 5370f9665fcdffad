"""Seeded datasets with homes (staging time and egress away from them) and the seeded trace variants."""

from __future__ import annotations

import statistics
from collections import Counter

import pytest

from airflow_mcsched.replay.datasets import dataset_gib, dataset_of
from airflow_mcsched.replay.fleet import fleet_from_split, pooled
from airflow_mcsched.replay.metrics import summarise
from airflow_mcsched.replay.openb import TraceJob, read_jobs
from airflow_mcsched.replay.policies import PLACERS
from airflow_mcsched.replay.simulator import replay
from airflow_mcsched.replay.variants import constrained, jittered, multi_gpu, variant
from tests.replay.conftest import write_pods


@pytest.fixture
def fleet(trace_dir):
    """cloud-c: one 8-GPU G2 node at 0.9; onprem-a: one G2 node at 0.5 and a 2-GPU T4 node at 0.2."""
    return fleet_from_split(trace_dir / "split.csv", trace_dir / "nodes.csv")


def data_job(name: str, team: int, gib: float, arrival: float = 0, duration: float = 3600) -> TraceJob:
    return TraceJob(name, arrival, duration, 4000, 4096, 8, 1000, (), "LS", team, dataset_of(team), gib)


def test_dataset_sizes_follow_the_documented_buckets():
    sizes = Counter(dataset_gib(f"pod-{i}", needs_gpu=True) for i in range(20_000))
    assert set(sizes) == {0.0, 20.0, 100.0, 500.0}
    shares = {gib: n / 20_000 for gib, n in sizes.items()}
    assert shares[0.0] == pytest.approx(0.40, abs=0.02) and shares[500.0] == pytest.approx(0.10, abs=0.02)
    assert dataset_gib("pod-1", needs_gpu=False) == 0.0


def test_each_team_dataset_lives_on_its_home_cluster(fleet):
    by_name = {p.name: p for p in fleet.profiles}
    for team in range(5):
        assert by_name[fleet.home_of(team)].data.holds(dataset_of(team))
    assert by_name["onprem-a"].data.ingress_gbps == 10 and by_name["cloud-c"].data.egress_price_per_gib == 0.09


def test_running_away_from_the_data_holds_the_gpus_while_it_stages_and_pays_egress(fleet):
    away_team = next(t for t in range(5) if fleet.home_of(t) != "cloud-c")
    home = fleet.home_of(away_team)
    staging = fleet.staging(data_job("x", away_team, 100), "cloud-c")
    # 100 GiB at cloud-c's 25 Gbit/s: 100 * 8 * 1.073741824 / 25 seconds; egress at the home's price
    assert staging.seconds == pytest.approx(100 * 8 * 1.073741824 / 25)
    egress = {p.name: p.data.egress_price_per_gib for p in fleet.profiles}[home]
    assert staging.egress_dollars == pytest.approx(100 * egress)
    assert fleet.staging(data_job("x", away_team, 100), home).gib == 0

    # first-fit takes cloud-c (fleet order) for a job whose data is on onprem-a: it pays, runs longer
    onprem_team = next(t for t in range(5) if fleet.home_of(t) == "onprem-a")
    result = replay(fleet, [data_job("far", onprem_team, 500)], PLACERS["first-fit"]())
    (run,) = result.runs
    pulled = fleet.staging(run.job, "cloud-c")
    assert run.cluster == "cloud-c" and run.end - run.start == pytest.approx(3600 + pulled.seconds)
    assert run.cost == pytest.approx(8 * (3600 + pulled.seconds) / 3600 * 0.9 + 500 * 0.02)
    summary = summarise(result)
    assert summary.data_moved_gib == 500 and summary.egress_cost == pytest.approx(10.0)


def test_the_engine_keeps_a_job_next_to_its_large_dataset(fleet):
    cloud_team = next(t for t in range(5) if fleet.home_of(t) == "cloud-c")
    # onprem-a's G2 is cheaper, but pulling 500 GiB there costs $45 of egress and 7 minutes of 8 GPUs
    result = replay(fleet, [data_job("near", cloud_team, 500)], PLACERS["mcsched"]())
    assert result.runs[0].cluster == "cloud-c" and summarise(result).data_moved_gib == 0


def test_pooled_holds_all_data(fleet):
    one = pooled(fleet)
    assert all(one.staging(data_job("x", t, 500), "pooled").gib == 0 for t in range(5))


def test_read_jobs_gives_each_gpu_job_its_team_dataset(trace_dir):
    pods = write_pods(trace_dir / "p.csv", [(f"p{i}", 1000, 512, 1, 1000, "LS", i, i + 10, i) for i in range(50)])
    jobs, _ = read_jobs(pods)
    assert all(j.dataset == dataset_of(j.team) and j.data_gib == dataset_gib(j.name, True) for j in jobs)


def test_optional_columns_may_be_missing(tmp_path):
    (tmp_path / "p.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
        "a,1000,512,1,500,0,100,0\n"
    )
    (job,) = read_jobs(tmp_path / "p.csv")[0]
    assert job.gpu_types == () and job.qos == "LS" and not job.interruptible


def jobs_of(n: int) -> list[TraceJob]:
    return [TraceJob(f"j{i}", float(i * 10), 60, 1000, 1024, 1, 1000, (), "LS", i % 5) for i in range(n)]


def test_jitter_keeps_seed_zero_and_moves_others_by_less_than_the_mean_gap():
    jobs = jobs_of(200)
    assert jittered(jobs, 0) == jobs
    moved = jittered(jobs, 3)
    assert moved == jittered(jobs, 3) and moved != jobs
    shift = {j.name: j.arrival for j in jobs}
    assert max(abs(j.arrival - shift[j.name]) for j in moved) <= 5.0
    assert [j.arrival for j in moved] == sorted(j.arrival for j in moved)


def test_constrained_variant_pins_a_share_of_gpu_pods_to_models_the_fleet_has(fleet):
    out = constrained(jobs_of(2000), fleet)
    pinned = [j for j in out if j.gpu_types]
    assert 0.25 < len(pinned) / 2000 < 0.35
    assert {t for j in pinned for t in j.gpu_types} <= {"G2", "T4"}
    # drawn by GPUs: G2 has 16 GPUs and T4 2, so G2 is asked for far more often
    assert sum("G2" in j.gpu_types for j in pinned) > 4 * sum(j.gpu_types == ("T4",) for j in pinned)
    assert constrained(jobs_of(2000), fleet) == out


def test_multi_gpu_variant_grows_a_share_of_one_gpu_pods_and_keeps_them_placeable(fleet):
    out = multi_gpu(jobs_of(3000), fleet)
    grown = [j for j in out if j.gpus > 1]
    assert 0.08 < len(grown) / 3000 < 0.12
    assert {j.gpus for j in grown} == {2, 4, 8}
    assert statistics.mean(j.gpus for j in grown) == pytest.approx(0.5 * 2 + 0.3 * 4 + 0.2 * 8, abs=0.4)
    assert all(j.demand.gpus == j.gpus and j.cpu_milli <= 32000 for j in grown)
    result = replay(fleet, grown[:20], PLACERS["first-fit"]())
    assert not result.unplaceable


def test_unknown_variant_names_the_choices():
    with pytest.raises(ValueError, match="choose from shipped"):
        variant("harder", [], None)
