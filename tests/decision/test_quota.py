"""Team quotas per GPU type, borrowing idle quota in a cohort, and the lender taking it back."""

from __future__ import annotations

from airflow_mcsched.decision import Outcome, Policy, Reason, decide
from airflow_mcsched.decision.quota import QuotaLedger
from tests.decision.fleet_factory import NOW, cluster, decide_one, observe, pool, request, reservation, view_of

FLEET = cluster("a", pool("gpu", nodes=2), pool("t4", gpu_type="T4", gpus_per_node=4, nodes=1))


def policy(**quotas) -> Policy:
    return Policy.from_dict({"quotas": [{"team": t, **q} for t, q in quotas.items()]})


COHORT = policy(
    ml={"nominal": {"A100": 8}, "cohort": "research"},
    cv={"nominal": {"A100": 8}, "cohort": "research"},
)


def test_within_nominal_quota_is_admitted():
    assert (
        decide_one(view_of(FLEET), request(gpus=8), policy=policy(ml={"nominal": {"A100": 8}})).outcome
        is Outcome.ADMITTED
    )


def test_beyond_nominal_without_a_cohort_waits_for_quota():
    d = decide_one(view_of(FLEET), request(gpus=8, gpu_types=("A100",)), policy=policy(ml={"nominal": {"A100": 4}}))
    assert (d.outcome, d.reason) == (Outcome.WAITING, Reason.WAITING_FOR_QUOTA)
    assert "uses 0 of its 4 nominal A100 GPUs" in d.rejection("a", "gpu").message


def test_quota_of_one_type_does_not_limit_another():
    d = decide_one(view_of(FLEET), request(gpus=4), policy=policy(ml={"nominal": {"A100": 0, "T4": 4}}))
    assert d.pool == "t4"


def test_any_type_quota_counts_every_gpu():
    running = [reservation("t", "a", "t4", "a-t4-0", gpus=4, gpu_type="T4")]
    d = decide_one(view_of(FLEET), request(gpus=1), running, policy=policy(ml={"nominal": {"*": 4}}))
    assert d.reason is Reason.WAITING_FOR_QUOTA


def test_idle_quota_of_the_cohort_is_borrowed():
    d = decide_one(view_of(FLEET), request(gpus=8, pods=2, gpu_types=("A100",)), policy=COHORT)
    assert d.outcome is Outcome.ADMITTED


def test_borrowing_stops_at_the_borrowing_limit():
    limited = policy(
        ml={"nominal": {"A100": 8}, "cohort": "research", "borrowing_limit": 4},
        cv={"nominal": {"A100": 8}, "cohort": "research"},
    )
    d = decide_one(view_of(FLEET), request(gpus=8, pods=2, gpu_types=("A100",)), policy=limited)
    assert d.reason is Reason.WAITING_FOR_QUOTA
    assert "borrowing limit is 4" in d.rejection("a", "gpu").message


def test_borrowing_stops_when_the_cohort_has_nothing_idle():
    running = [reservation("cv1", "a", "gpu", "a-gpu-0", gpus=8, team="cv")]
    d = decide_one(view_of(FLEET), request(gpus=8, pods=2, gpu_types=("A100",)), running, policy=COHORT)
    assert d.reason is Reason.WAITING_FOR_QUOTA
    assert "cohort research has 8 idle in all; 16 asked" in d.rejection("a", "gpu").message


def test_grants_of_the_same_cycle_count_against_quota():
    queue = [request("r1", gpus=4), request("r2", gpus=4, gpu_types=("A100",))]
    result = decide(view_of(FLEET), queue, [], policy(ml={"nominal": {"A100": 6}}), NOW)
    assert [d.outcome for d in result.decisions] == [Outcome.ADMITTED, Outcome.WAITING]


def borrowed_fleet(interruptible: bool):
    """cv (nominal 0) borrows all 8 of ml's idle A100; one more A100 node is free."""
    view = view_of((FLEET, observe(FLEET, free={"gpu": [0, 8]}, seen=["rsv-cv1"])))
    running = [reservation("cv1", "a", "gpu", "a-gpu-0", gpus=8, team="cv", interruptible=interruptible)]
    lender = policy(
        ml={"nominal": {"A100": 8}, "cohort": "research"},
        cv={"nominal": {"A100": 0}, "cohort": "research"},
    )
    return view, running, lender


def test_lender_takes_back_borrowed_quota_by_preempting_interruptible_borrowers():
    view, running, lender = borrowed_fleet(interruptible=True)
    result = decide(view, [request("mine", gpus=8, gpu_types=("A100",))], running, lender, NOW)
    d = result.decision("mine")
    assert d.outcome is Outcome.PREEMPTING
    (victim,) = d.victims
    assert (victim.reservation_id, victim.team, victim.reason) == ("rsv-cv1", "cv", Reason.RECLAIMED_BY_LENDER)
    assert result.preemptions == d.victims


def test_borrowers_that_must_not_stop_are_not_reclaimed():
    view, running, lender = borrowed_fleet(interruptible=False)
    d = decide_one(view, request("mine", gpus=8, gpu_types=("A100",)), running, lender)
    assert d.reason is Reason.WAITING_FOR_QUOTA
    assert "lent them to other teams" in d.rejection("a", "gpu").message


def test_no_reclaim_beyond_the_lenders_own_nominal():
    view, running, lender = borrowed_fleet(interruptible=True)
    d = decide_one(view, request("mine", gpus=8, pods=2, gpu_types=("A100",)), running, lender)
    assert d.outcome is Outcome.WAITING


def test_lenders_requests_of_one_cycle_take_back_each_borrower_once():
    """Two requests of the lender reclaim in one cycle: the second one's search stops the borrower the
    first left running, not the one already stopped (a team's victims, kept for the cycle's
    searches of pools of one GPU type, follow the cycle's evictions)."""
    fleet = cluster("a", pool("gpu", nodes=2))
    view = view_of((fleet, observe(fleet, free={"gpu": [0, 0]}, seen=["rsv-cv1", "rsv-cv2"])))
    running = [
        reservation(f"cv{i}", "a", "gpu", f"a-gpu-{i - 1}", gpus=8, team="cv", interruptible=True) for i in (1, 2)
    ]
    lender = policy(
        ml={"nominal": {"A100": 16}, "cohort": "research"},
        cv={"nominal": {"A100": 0}, "cohort": "research"},
    )
    queue = [request(f"mine{i}", gpus=8, gpu_types=("A100",)) for i in (1, 2)]
    result = decide(view, queue, running, lender, NOW)
    assert [d.outcome for d in result.decisions] == [Outcome.PREEMPTING, Outcome.PREEMPTING]
    victims = [(v.reservation_id, v.reason) for d in result.decisions for v in d.victims]
    assert sorted(victims) == [("rsv-cv1", Reason.RECLAIMED_BY_LENDER), ("rsv-cv2", Reason.RECLAIMED_BY_LENDER)]


def test_ledger_reports_borrowed_share():
    ledger = QuotaLedger(COHORT.quotas)
    ledger.add("ml", "A100", 12)
    assert ledger.borrowed("ml", "A100") == 4
    assert ledger.within_nominal("cv", "A100", 4)
    ledger.remove("ml", "A100", 12)
    assert ledger.borrowed("ml", "A100") == 0


def test_a_kept_verdict_holds_only_until_use_changes():
    """`check`'s verdicts are kept (a scan asks for every pool) and forgotten at every change of use:
    asked again after a grant or a stop, the ledger answers for the use then."""
    ledger = QuotaLedger(policy(ml={"nominal": {"A100": 8}}).quotas)
    first = ledger.check("ml", "A100", 4)
    assert first.ok and ledger.check("ml", "A100", 4) is first
    ledger.add("ml", "A100", 6)
    refused = ledger.check("ml", "A100", 4)
    assert not refused.ok and "uses 6 of its 8" in refused.message
    assert ledger.check("ml", "A100", 2).ok
    ledger.remove("ml", "A100", 6)
    assert ledger.check("ml", "A100", 4).ok
    ledger.add("cv", "T4", 1)  # another team's use, of another type: still a change of use
    assert ledger.check("ml", "A100", 8).ok and not ledger.check("ml", "A100", 9).ok
