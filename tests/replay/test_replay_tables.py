"""The target checks behind the replay tables of docs/benchmarks.md (`benchmarks/replay_tables.py`)."""

from __future__ import annotations

from benchmarks.replay_tables import summary, targets


def result(mean: float, cost: float, multi: float) -> dict:
    return {"mean_wait": mean, "total_cost": cost, "max_wait_multi_gpu": multi}


def test_targets_hold_the_engine_against_the_baselines_but_not_the_pooled_reference():
    results = {
        "mcsched": result(104, 90, 500),
        "cheapest": result(100, 95, 600),
        "best-fit": result(120, 200, 501),
        "pooled": result(10, 10, 10),  # a reference: never the bar
    }
    assert [met for _, met, _ in targets(results)] == [True, True, True]
    assert "cheapest 100 s" in targets(results)[0][2]


def test_each_target_can_be_missed_on_its_own():
    base = {"cheapest": result(100, 95, 600), "best-fit": result(120, 200, 501)}
    slow = targets({**base, "mcsched": result(105.1, 90, 500)})
    dear = targets({**base, "mcsched": result(90, 95.01, 500)})
    starved = targets({**base, "mcsched": result(90, 90, 501)})
    assert [m for _, m, _ in slow] == [False, True, True]
    assert [m for _, m, _ in dear] == [True, False, True]
    assert [m for _, m, _ in starved] == [True, True, False]


def test_the_summary_has_a_row_per_setting_with_each_verdict():
    met = {"mcsched": result(90, 90, 500), "cheapest": result(100, 95, 600)}
    missed = {"mcsched": result(200, 90, 700), "cheapest": result(100, 95, 600)}
    rows = summary([("shipped, load x100", met), ("shipped, load x200", missed)]).splitlines()
    assert len(rows) == 4
    assert rows[2].startswith("| shipped, load x100 | met (")
    assert rows[3].count("**not met**") == 2
