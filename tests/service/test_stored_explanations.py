"""What a cycle stores as a placement's explanation (the row's part and its list of rejections) is
what the API's model of it says, key for key and in the same order, and each text is its value's
JSON, however many decisions share a list of rejections or a candidate."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import timedelta

from airflow_mcsched.decision import Outcome, PlacementDecision, Reason, ScoredCandidate, ScorePart, decide
from airflow_mcsched.service.placement_mapping import json_of
from airflow_mcsched.service.schemas import CandidateOut, Explanation, RejectionOut, ScorePartOut
from airflow_mcsched.service.stored_explanations import ExplanationPieces, StoredExplanations, victim_json
from airflow_mcsched.view import NodeAllocation
from tests.decision.fleet_factory import DEFAULT_POLICY, NOW, cluster, observe, pool, request, reservation, view_of


def _candidate(c: ScoredCandidate) -> CandidateOut:
    return CandidateOut(
        cluster=c.cluster,
        pool=c.pool,
        score=round(c.score, 6),
        price_per_gpu_hour=c.price_per_gpu_hour,
        nodes=list(c.nodes),
        parts=[
            ScorePartOut(name=p.name, value=round(p.value, 6), weight=p.weight, detail=dict(p.detail)) for p in c.parts
        ],
    )


def explanation_of(decision: PlacementDecision, decided_at) -> Explanation:
    """The decision as the API's models say it, field by field: what the stored pieces must equal."""
    return Explanation(
        outcome=decision.outcome.value,
        reason=str(decision.reason),
        summary=decision.summary,
        decided_at=decided_at,
        chosen=None if decision.placement is None else _candidate(decision.placement),
        runners_up=[_candidate(c) for c in decision.runners_up],
        rejections=[
            RejectionOut(cluster=r.cluster, pool=r.pool, reason=str(r.reason), message=r.message, lasting=r.lasting)
            for r in decision.rejections
        ],
        victims=[victim_json(v) for v in decision.victims],
        expected_start=decision.expected_start,
    )


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
        assert got.whole() == expected
        assert list(got.whole()) == list(expected)
        assert "rejections" not in got.value
        assert got.text == json.dumps(got.value)
        assert got.rejections.text == json.dumps(got.rejections.value)
        assert got.rejections.digest == hashlib.sha256(got.rejections.text.encode()).hexdigest()


def test_decisions_with_the_same_rejections_share_one_written_list():
    decisions = [d for d in _cycle() if d.request_id.startswith("a100-") and d.outcome is Outcome.ADMITTED]
    assert len(decisions) == 4  # the fifth finds the node full
    assert len({id(d.rejections) for d in decisions}) == 1  # requests alike: the plan's rejections
    stored = StoredExplanations()
    lists = [stored(d, NOW).rejections for d in decisions]
    assert lists[0].value and all(written is lists[0] for written in lists)


def test_a_candidate_met_again_is_stored_from_the_same_piece():
    """The engine hands requests alike the same candidate object while its pool is untouched: the
    second request's runner-up is the first one's, and is made into JSON once."""
    fleet = cluster("fleet", pool("a100", nodes=2), pool("h100", "H100", nodes=2), pool("l4", "L4", nodes=2))
    queue = [request(f"any-{i}", gpus=1, arrival=NOW - timedelta(minutes=5 - i)) for i in range(2)]
    first, second = decide(view_of(fleet), queue, [], DEFAULT_POLICY, NOW).decisions
    shared = {id(c) for c in first.runners_up} & {id(c) for c in second.runners_up}
    assert shared, "requests alike meet the same candidates in untouched pools"
    stored = StoredExplanations()
    one, two = stored(first, NOW).value, stored(second, NOW).value
    pieces = {id(c) for c in one["runners_up"]} & {id(c) for c in two["runners_up"]}
    assert len(pieces) == len(shared)
    for d in (first, second):
        assert stored(d, NOW).whole() == json_of(explanation_of(d, NOW))


def test_figures_that_are_not_finite_numbers_are_stored_as_the_model_stores_them():
    """pydantic's JSON mode makes inf and nan null in a figure (typed `Any`) and keeps them in a
    float field; stored text may then hold what the model's JSON holds, no more."""
    figures = (("staging_seconds", float("inf")), ("gib", float("nan")), ("home", "ds-1"))
    part = ScorePart("data_locality", 1, 2, figures)
    candidate = ScoredCandidate("c", "p", 0.5, (part,), 2, (NodeAllocation("n0", 1, 0, 1000, 1024),))
    decision = PlacementDecision("r", Outcome.ADMITTED, Reason.ADMITTED, "ok", placement=candidate)
    got = StoredExplanations()(decision, NOW)
    expected = json_of(explanation_of(decision, NOW))
    assert got.whole() == expected
    assert got.value["chosen"]["parts"][0]["detail"] == {"staging_seconds": None, "gib": None, "home": "ds-1"}
    assert got.value["chosen"]["parts"][0]["weight"] == 2.0 and type(got.value["chosen"]["parts"][0]["weight"]) is float
    assert got.text == json.dumps(got.value)


def test_a_later_cycle_stores_from_the_pieces_of_an_earlier_one():
    """The pieces outlive a cycle: the engine hands the next cycle on a fleet read again the same
    candidates and plans' lists, and a request that waits again the same rejections: the tuple kept
    with its walk, or a new tuple of them (a walk made again, on other capacity objects alike in
    what they hold). Each is found, not made again, and what is stored is still the model's JSON."""
    pieces = ExplanationPieces()
    first, second = _cycle(), _cycle()
    waiting = [d.request_id for d in second if d.outcome is Outcome.WAITING]
    assert waiting
    # a new tuple of the same rejections for each waiting request: what the service finds by value
    second = [replace(d, rejections=tuple(list(d.rejections))) if d.request_id in waiting else d for d in second]
    stored = [StoredExplanations(pieces), StoredExplanations(pieces)]
    made = [{d.request_id: stored[i](d, NOW) for d in decisions} for i, decisions in enumerate((first, second))]
    assert all(
        next(d for d in first if d.request_id == r).rejections
        is not next(d for d in second if d.request_id == r).rejections
        for r in waiting
    )
    for d in second:
        before, now = made[0][d.request_id], made[1][d.request_id]
        assert now.rejections is before.rejections
        if d.placement is not None:
            assert now.value["chosen"] is before.value["chosen"]
        assert now.whole() == json_of(explanation_of(d, NOW))
        assert now.text == json.dumps(now.value)


def test_pieces_stay_bounded_and_a_list_is_joined_again_from_whatever_they_keep():
    pieces = ExplanationPieces()
    pieces.MAX_REJECTIONS = pieces.MAX_LISTS = pieces.MAX_CANDIDATES = 2
    decisions = _cycle()
    assert max(len(d.rejections) for d in decisions) > 2
    stored = StoredExplanations(pieces)
    for d in decisions:
        got = stored(d, NOW)
        assert got.whole() == json_of(explanation_of(d, NOW))
        assert got.rejections.text == json.dumps(got.rejections.value)
        assert got.rejections.digest == hashlib.sha256(got.rejections.text.encode()).hexdigest()
        assert len(pieces._rejection_texts) <= 2 and len(pieces._lists) <= 2 and len(pieces._candidates) <= 2
