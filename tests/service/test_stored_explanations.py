"""What a cycle stores as a placement's explanation is what the API's model of it says, key for key
and in the same order, however many decisions share a list of rejections."""

from __future__ import annotations

from datetime import timedelta

from airflow_mcsched.decision import Outcome, decide
from airflow_mcsched.service.placement_mapping import StoredExplanations, explanation_of, json_of
from tests.decision.fleet_factory import DEFAULT_POLICY, NOW, cluster, observe, pool, request, reservation, view_of


def _cycle():
    """Admitted, waiting (one with a start held) and preempting decisions, over pools ruled out for
    lasting reasons (GPU type) and live ones (capacity)."""
    small = cluster("small", pool("a100", nodes=1), pool("t4", "T4", gpus_per_node=4, nodes=1))
    busy = cluster("busy", pool("h100", "H100", nodes=1))
    running = [reservation("spot", "busy", "h100", "busy-h100-0", gpus=8, priority=0, interruptible=True,
                           gpu_type="H100")]  # fmt: skip
    view = view_of(small, (busy, observe(busy, free={"h100": [0]}, seen=["rsv-spot"])))
    queue = [
        *(request(f"a100-{i}", gpus=2, gpu_types=["A100"], arrival=NOW - timedelta(minutes=9 - i)) for i in range(5)),
        request("too-big", gpus=8, gpu_types=["A100"], arrival=NOW - timedelta(minutes=3)),
        request("urgent", gpus=8, gpu_types=["H100"], priority_class="high"),
        request("t4", gpus=1, gpu_types=["T4"]),
    ]
    return decide(view, queue, running, DEFAULT_POLICY, NOW).decisions


def test_each_stored_explanation_is_the_models_json_in_the_same_key_order():
    decisions = _cycle()
    assert {d.outcome for d in decisions} == {Outcome.ADMITTED, Outcome.WAITING, Outcome.PREEMPTING}
    assert any(d.expected_start is not None for d in decisions)
    assert any(r.lasting for d in decisions for r in d.rejections)
    assert any(not r.lasting for d in decisions for r in d.rejections)
    stored = StoredExplanations()
    for d in decisions:
        expected = json_of(explanation_of(d, NOW))
        got = stored(d, NOW)
        assert got == expected
        assert list(got) == list(expected)


def test_decisions_with_the_same_rejections_share_one_written_list():
    decisions = [d for d in _cycle() if d.request_id.startswith("a100-") and d.outcome is Outcome.ADMITTED]
    assert len(decisions) == 4  # the fifth finds the node full
    assert len({id(d.rejections) for d in decisions}) == 1  # requests alike: the plan's rejections
    stored = StoredExplanations()
    lists = [stored(d, NOW)["rejections"] for d in decisions]
    assert lists[0] and all(written is lists[0] for written in lists)
