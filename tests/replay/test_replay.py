"""Replaying jobs in simulated time through the engine and the baselines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import airflow_mcsched
from airflow_mcsched.cli.main import build_parser
from airflow_mcsched.replay.compare import compare, policy_names
from airflow_mcsched.replay.fleet import fleet_from_split, pooled
from airflow_mcsched.replay.fleet_state import FleetState, at
from airflow_mcsched.replay.metrics import summarise
from airflow_mcsched.replay.openb import TraceJob
from airflow_mcsched.replay.policies import PLACERS
from airflow_mcsched.replay.run_store import RunStore, code_fingerprint, policy_of_run_file, run_file_name
from airflow_mcsched.replay.simulator import replay
from benchmarks.replay_restamp import compare as remade
from benchmarks.replay_restamp import stamp
from tests.replay.conftest import write_pods


def job(name: str, arrival: float, duration: float, gpus: int = 8, milli: int = 1000, team: int = 0, qos: str = "LS"):
    return TraceJob(name, arrival, duration, 4000, 4096, gpus, milli if gpus else 0, (), qos, team)


@pytest.fixture
def fleet(trace_dir):
    """cloud-c: one G2 node at 0.9; onprem-a: one G2 node at 0.5 and one 2-GPU T4 node at 0.2."""
    return fleet_from_split(trace_dir / "split.csv", trace_dir / "nodes.csv")


def run_of(fleet, jobs, policy):
    result = replay(fleet, jobs, PLACERS[policy]())
    return result, {r.job.name: r for r in result.runs}


def test_a_job_waits_until_a_node_frees_up(fleet):
    jobs = [job("a", 0, 100), job("b", 0, 100), job("c", 10, 50)]
    result, runs = run_of(fleet, jobs, "first-fit")
    assert runs["a"].start == 0 and runs["b"].start == 0
    assert runs["c"].start == 100 and runs["c"].wait == 90
    assert summarise(result).max_wait == 90


def test_jobs_that_fit_no_node_are_unplaceable(fleet):
    result, _ = run_of(fleet, [job("huge", 0, 10, gpus=16)], "mcsched")
    assert [j.name for j in result.unplaceable] == ["huge"]
    assert summarise(result).unplaceable == 1


def test_cost_is_gpu_hours_times_the_pool_price(fleet):
    result, runs = run_of(fleet, [job("a", 0, 3600)], "cheapest")
    assert (runs["a"].cluster, runs["a"].price_per_gpu_hour) == ("onprem-a", 0.5)
    assert summarise(result).total_cost == pytest.approx(8 * 0.5)


def test_first_fit_takes_fleet_order_and_the_engine_the_cheaper_pool(fleet):
    _, first = run_of(fleet, [job("a", 0, 3600)], "first-fit")
    _, engine = run_of(fleet, [job("a", 0, 3600)], "mcsched")
    assert first["a"].cluster == "cloud-c"
    assert engine["a"].cluster == "onprem-a"


def test_static_pins_a_team_to_its_home_cluster(fleet):
    home = fleet.home_of(1)
    _, runs = run_of(fleet, [job("a", 0, 100, team=1), job("b", 0, 100, team=1)], "static")
    assert all(r.cluster == home for r in runs.values())
    assert runs["b"].start == 100


def test_shares_pack_onto_one_gpu(fleet):
    jobs = [job(f"s{i}", 0, 100, gpus=1, milli=250) for i in range(4)]
    _, runs = run_of(fleet, jobs, "best-fit")
    assert len({(r.cluster, r.pool) for r in runs.values()}) == 1
    assert all(r.start == 0 for r in runs.values())


@pytest.mark.parametrize("backfill", [False, True])
@pytest.mark.parametrize("policy", list(PLACERS))
def test_every_policy_runs_every_placeable_job(fleet, policy, backfill):
    if backfill and not PLACERS[policy].takes_plain_backfill:
        pytest.skip("the engine's backfill is its policy's, not a baseline option")
    jobs = [job(f"j{i}", i * 5, 60, gpus=(i % 3) * 2 + 1, team=i % 5) for i in range(12)]
    jobs.append(job("cpu", 3, 30, gpus=0))
    on = pooled(fleet) if policy == "pooled" else fleet
    result = replay(on, jobs, PLACERS[policy](backfill=True) if backfill else PLACERS[policy]())
    assert len(result.runs) + len(result.unplaceable) == len(jobs)
    assert policy == "static" or not result.unplaceable


def test_compare_gives_medians_and_spread_over_jittered_seeds(fleet):
    jobs = [job(f"j{i}", i * 10, 30, gpus=8) for i in range(6)]
    summaries = compare(fleet, jobs, ["random", "first-fit"], seeds=3)
    assert [s.median.policy for s in summaries] == ["random", "first-fit"]
    assert all(s.median.jobs == 6 and s.seeds == 3 for s in summaries)
    for s in summaries:
        low, high = s.spread["mean_wait"]
        assert low <= s.median.mean_wait <= high
    with pytest.raises(ValueError, match="--seeds"):
        compare(fleet, jobs, ["first-fit"], seeds=0)


def test_runs_spread_over_processes_give_the_same_figures(fleet):
    jobs = [job(f"j{i}", i * 10, 100 + 7 * i, gpus=1 + i % 8) for i in range(8)]
    alone = compare(fleet, jobs, ["mcsched", "random"], seeds=2)
    spread = compare(fleet, jobs, ["mcsched", "random"], seeds=2, workers=2)
    assert [s.as_dict() for s in spread] == [s.as_dict() for s in alone]
    with pytest.raises(ValueError, match="--jobs"):
        compare(fleet, jobs, ["random"], workers=0)


def test_a_comparison_with_a_run_store_resumes_where_it_stopped(fleet, tmp_path):
    """Each finished run is kept; a later call reads it instead of running it (a kept figure altered
    on disk shows through), runs only what is missing, and refuses a store of another setting."""
    jobs = [job(f"j{i}", i * 10, 100 + 7 * i, gpus=1 + i % 8) for i in range(8)]
    setting = {"variant": "test", "load": 1.0}
    tmp_path = tmp_path / "runs"
    first = compare(fleet, jobs, ["mcsched"], seeds=2, store=RunStore(tmp_path, setting))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcsched-seed0.json", "mcsched-seed1.json"]
    kept = json.loads((tmp_path / "mcsched-seed1.json").read_text())
    kept["summary"]["total_cost"] = 1e9
    (tmp_path / "mcsched-seed1.json").write_text(json.dumps(kept))
    again = compare(fleet, jobs, ["mcsched", "random"], seeds=2, workers=2, store=RunStore(tmp_path, setting))
    assert again[0].spread["total_cost"][1] == 1e9  # read, not run again
    assert again[0].median.mean_wait == first[0].median.mean_wait
    assert (tmp_path / "random-seed1.json").exists()
    with pytest.raises(ValueError, match=r"mcsched-seed0.json holds a run of another setting \(differs in load\)"):
        compare(fleet, jobs, ["mcsched"], seeds=1, store=RunStore(tmp_path, {**setting, "load": 2.0}))


def test_unknown_policy_names_the_choices():
    with pytest.raises(ValueError, match="choose from mcsched"):
        policy_names("fastest")


def test_cli_prints_one_json_object(trace_dir, capsys):
    pods = write_pods(
        trace_dir / "pods.csv",
        [("a", 4000, 4096, 8, 1000, "LS", 0, 3600, 0), ("b", 4000, 4096, 1, 500, "BE", 10, 100, 10)],
    )
    args = build_parser().parse_args(
        [
            "replay",
            "--pods",
            str(pods),
            "--nodes",
            str(trace_dir / "nodes.csv"),
            "--fleet",
            str(trace_dir / "split.csv"),
            "--load",
            "2",
            "--policy",
            "mcsched",
            "--format",
            "json",
        ]
    )
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"mean_wait", "p50_wait", "p95_wait", "max_wait", "gpu_allocation", "total_cost", "unplaceable"} <= set(out)
    assert out["jobs"] == 2 and out["seeds"] == 1
    assert {"max_wait_multi_gpu", "egress_cost", "data_moved_gib", "spread"} <= set(out)


def test_cli_table_shows_every_policy_with_the_spread_of_seeds(trace_dir, capsys):
    pods = write_pods(
        trace_dir / "pods.csv",
        [(f"p{i}", 4000, 4096, 8, 1000, "LS", i * 20, i * 20 + 3600, i * 20) for i in range(4)],
    )
    argv = ["replay", "--pods", str(pods), "--nodes", str(trace_dir / "nodes.csv"), "--fleet"]
    argv += [str(trace_dir / "split.csv"), "--policy", "mcsched,first-fit", "--seeds", "2", "--variant", "multi-gpu"]
    args = build_parser().parse_args(argv)
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "variant multi-gpu" in out and "median of 2 seed(s)" in out
    assert "mean wait min-max" in out
    assert [line.split()[0] for line in out.splitlines()[3:]] == ["mcsched", "first-fit"]


def test_cli_runs_dir_keeps_runs_with_the_code_that_made_them(trace_dir, capsys, tmp_path):
    """The CLI's store records the setting and the source fingerprint; a kept run made by other code
    is refused by name instead of being mixed into the figures."""
    pods = write_pods(trace_dir / "pods.csv", [("a", 4000, 4096, 8, 1000, "LS", 0, 3600, 0)])
    runs = tmp_path / "runs"
    argv = ["replay", "--pods", str(pods), "--nodes", str(trace_dir / "nodes.csv"), "--fleet"]
    argv += [str(trace_dir / "split.csv"), "--load", "2", "--format", "json", "--runs-dir", str(runs)]
    args = build_parser().parse_args(argv)
    assert args.func(args) == 0
    kept = json.loads((runs / "mcsched-seed0.json").read_text())
    assert kept["setting"]["code"] == code_fingerprint("mcsched") and kept["setting"]["load"] == 2.0
    assert json.loads(capsys.readouterr().out)["mean_wait"] == kept["summary"]["mean_wait"]
    kept["setting"]["code"] = "older"
    (runs / "mcsched-seed0.json").write_text(json.dumps(kept))
    with pytest.raises(ValueError, match=r"another setting \(differs in code\).*delete the old runs"):
        args.func(args)


def test_normal_jobs_go_before_best_effort_ones_and_each_class_has_its_mean_wait(fleet):
    """One G2 node comes free at 100 s: the engine and the baselines alike (a Kubernetes scheduler
    sorts its queue by priority, then arrival) give it to the normal job that arrived later, not to
    the best-effort (BE, priority class `low`) job that arrived first."""
    jobs = [
        job("a", 0, 100),
        job("b", 0, 1000),
        job("lo", 10, 50, qos="BE"),
        job("hi", 20, 50),
    ]
    for policy in ("mcsched", "first-fit", "cheapest"):
        result, runs = run_of(fleet, jobs, policy)
        assert (runs["hi"].start, runs["lo"].start) == (100, 150), policy
    summary = summarise(result)
    assert summary.mean_wait_low == 140
    assert summary.mean_wait_normal == pytest.approx(80 / 3)


def test_a_baseline_change_leaves_the_engines_fingerprint_alone(tmp_path):
    """The engine's kept runs survive a change to a baseline (it never runs one); the baselines' do
    not, nor does anyone's survive a change to the simulator or the engine."""
    root = tmp_path / "airflow_mcsched"
    shutil.copytree(Path(airflow_mcsched.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p: code_fingerprint(p, root) for p in ("mcsched", "cheapest")}
    assert before == {p: code_fingerprint(p) for p in before}
    assert before["mcsched"] != before["cheapest"]
    with (root / "replay" / "baselines.py").open("a") as f:
        f.write("# a baseline changed\n")
    assert code_fingerprint("mcsched", root) == before["mcsched"]
    assert code_fingerprint("cheapest", root) != before["cheapest"]
    with (root / "replay" / "simulator.py").open("a") as f:
        f.write("# the simulator changed\n")
    simulator_changed = code_fingerprint("mcsched", root)
    assert simulator_changed != before["mcsched"]
    with (root / "replay" / "run_store.py").open("a") as f:
        f.write("# keeping runs changed\n")
    assert code_fingerprint("mcsched", root) == simulator_changed


def test_baselines_with_plain_backfill_hold_the_first_blocked_job_its_start(fleet):
    """cloud-c's G2 node frees 4 GPUs at 50 s and the rest at 100 s; `big` (8 GPUs) is blocked
    first. Without backfill a long 4-GPU job takes the half freed at 50 s and `big` waits until it
    ends (550 s). With plain EASY backfill `big` holds cloud-c from 100 s: the long job is held back,
    a short one that ends by then runs at 50 s, and `big` starts at 100 s."""
    jobs = [
        job("a1", 0, 50, gpus=4),
        job("a2", 0, 100, gpus=4),
        job("b", 0, 1000),
        job("t", 0, 1000, gpus=2),
        job("big", 10, 50),
        job("long", 20, 500, gpus=4),
        job("short", 30, 40, gpus=4),
    ]
    plain = {r.job.name: r.start for r in replay(fleet, jobs, PLACERS["first-fit"]()).runs}
    easy = {r.job.name: r.start for r in replay(fleet, jobs, PLACERS["first-fit"](backfill=True)).runs}
    assert (plain["big"], plain["long"], plain["short"]) == (550, 50, 100)
    assert (easy["big"], easy["long"], easy["short"]) == (100, 150, 50)


def test_a_run_store_keeps_baselines_with_backfill_apart_and_shares_the_engines_runs(fleet, tmp_path):
    jobs = [job(f"j{i}", i * 10, 100 + 7 * i, gpus=1 + i % 8) for i in range(8)]
    tmp_path = tmp_path / "runs"
    plain = compare(fleet, jobs, ["mcsched", "first-fit"], store=RunStore(tmp_path, {"trace": "t"}))
    store = RunStore(tmp_path, {"trace": "t"}, baseline_backfill=True)
    easy = compare(fleet, jobs, ["mcsched", "first-fit"], store=store, baseline_backfill=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "first-fit-easy-seed0.json",
        "first-fit-seed0.json",
        "mcsched-seed0.json",
    ]
    assert easy[0].median == plain[0].median  # the engine's run, read back
    assert json.loads((tmp_path / "first-fit-easy-seed0.json").read_text())["setting"]["baseline_backfill"] is True


def test_kept_runs_are_restamped_only_when_this_code_remakes_them_exactly(fleet, tmp_path):
    """`benchmarks/replay_restamp.py`: runs made again equal to the kept ones let every kept run take
    this code's fingerprint (figures untouched); one differing figure, and nothing is stamped."""
    jobs = [job(f"j{i}", i * 10, 100 + 7 * i, gpus=1 + i % 8) for i in range(8)]
    kept, fresh = tmp_path / "kept", tmp_path / "fresh"
    compare(fleet, jobs, ["mcsched", "first-fit"], seeds=2, store=RunStore(kept / "s", {"trace": "t"}))
    for path in (kept / "s").iterdir():  # as if made by older code
        data = json.loads(path.read_text())
        data["setting"]["code"] = "old"
        path.write_text(json.dumps(data))
    compare(fleet, jobs, ["mcsched", "first-fit"], seeds=1, store=RunStore(fresh / "s", {"trace": "t"}))
    compared, differences, codes = remade(fresh, kept)
    assert (compared, differences) == (2, [])
    assert codes == {"engine": code_fingerprint("mcsched"), "baselines": code_fingerprint("first-fit")}
    before = {p.name: json.loads(p.read_text())["summary"] for p in (kept / "s").iterdir()}
    assert stamp(kept, codes) == 4
    assert RunStore(kept / "s", {"trace": "t"}).get("first-fit", 1) is not None  # no longer refused
    assert {p.name: json.loads(p.read_text())["summary"] for p in (kept / "s").iterdir()} == before

    moved = json.loads((fresh / "s" / "mcsched-seed0.json").read_text())
    moved["summary"]["total_cost"] += 1
    (fresh / "s" / "mcsched-seed0.json").write_text(json.dumps(moved))
    _, differences, _ = remade(fresh, kept)
    assert len(differences) == 1 and "total_cost" in differences[0]


def test_fleet_views_keep_the_declared_layout_as_capacity_changes(fleet):
    """Each simulated instant has a new view; what the profiles declare is worked out once."""
    state = FleetState(fleet)
    before = state.view(at(0))
    assert before.clusters[0].declared is not None  # worked out on this view
    started, _ = PLACERS["first-fit"]().place(state, [job("a", 0, 10)], 0.0)
    after = state.view(at(60))
    assert started == ["a"] and after.pools != before.pools  # the job took a node
    assert all(a.declared is b.declared for a, b in zip(after.clusters, before.clusters, strict=True))


@pytest.mark.parametrize("policy", ["mcsched", "first-fit", "round-robin", "most-free"])
@pytest.mark.parametrize("baseline_backfill", [False, True])
def test_a_run_file_name_gives_back_its_policy(policy, baseline_backfill):
    name = run_file_name(policy, 3, baseline_backfill)
    assert name.endswith("-seed3.json") and ("-easy-" in name) is (baseline_backfill and policy != "mcsched")
    assert policy_of_run_file(name) == policy
