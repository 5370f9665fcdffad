"""Summary sentences: the one line a user reads first, built from the decision's parts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial

from airflow_mcsched.decision.demand import Demand
from airflow_mcsched.decision.outcome import Rejection, ScoredCandidate, ScorePart
from airflow_mcsched.decision.preemption import PreemptionPlan
from airflow_mcsched.decision.reason_tally import count_reasons, tally
from airflow_mcsched.decision.reasons import Reason
from airflow_mcsched.view.bounded_table import get_or_make

MAX_SENTENCES = 4096
"""Waiting sentences kept (`waiting`), before they are all forgotten."""
_NOWHERE: dict[tuple[str, Demand, Reason], str] = {}


def score_parts(parts: Sequence[ScorePart]) -> str:
    """'price 0.75x2, data_locality 1.00x1': each part's value and weight."""
    return ", ".join(f"{p.name} {p.value:.2f}x{p.weight:g}" for p in parts)


def admitted(best: ScoredCandidate, runners_up: Sequence[ScoredCandidate], parts: str | None = None) -> str:
    """`parts`: `score_parts(best.parts)` when the caller has it (admission keeps the static ones')."""
    if parts is None:
        parts = score_parts(best.parts)
    text = (
        f"Admitted to {best.cluster}/{best.pool} on {', '.join(best.nodes)} at "
        f"{best.price_per_gpu_hour:.2f}/GPU-hour; score {best.score:.3f} ({parts})"
    )
    if runners_up:
        text += "; runners-up: " + ", ".join(f"{c.cluster}/{c.pool} {c.score:.3f}" for c in runners_up)
    return text


def waiting(
    reason: Reason,
    demand: Demand,
    rejections: Sequence[Rejection],
    expected_start: datetime | None = None,
    deadline: datetime | None = None,
    expected_end: datetime | None = None,
    *,
    tally: str | None = None,
) -> str:
    """`tally`: `rejection_tally(rejections)` when the caller already has it (many requests share one).
    The first sentence reads the reason, the demand and the tally alone: kept by those (`_NOWHERE`),
    as a long queue's waiting requests say the same few sentences every cycle."""
    if not rejections:
        return f"Waiting ({reason}): the fleet has no cluster to consider."
    ranked = rejection_tally(rejections) if tally is None else tally
    key = (ranked, demand, reason)
    text = _NOWHERE.get(key)  # read first: a `make` for `get_or_make` would be made on every call
    if text is None:
        text = get_or_make(_NOWHERE, key, MAX_SENTENCES, partial(_nowhere, reason, demand, ranked))
    if expected_start is not None:
        text += f" Expected to start by {expected_start.isoformat()}; capacity is held for it."
    if deadline is not None and expected_end is not None and expected_end > deadline:
        text += f" At this rate it will miss its deadline {deadline.isoformat()}."
    return text


def _nowhere(reason: Reason, demand: Demand, ranked: str) -> str:
    return f"Waiting ({reason}): nowhere to place {demand.describe()} now; rejected {ranked}."


def rejection_tally(rejections: Sequence[Rejection]) -> str:
    """'3 x InsufficientFreeGpus, 1 x DataFarAway': how many pools or clusters each reason ruled out
    (reason_tally.py), the rejections in fleet order."""
    return tally(count_reasons(enumerate(rejections)))


def preempting(plan: PreemptionPlan) -> str:
    where = f"{plan.pool.cluster}/{plan.pool.name}"
    if not plan.victims:
        return f"Preempting: waiting on {where} for {len(plan.stopping)} preempted reservation(s) to stop."
    names = ", ".join(f"{v.reservation.request_id} ({v.reason})" for v in plan.victims)
    return f"Preempting {len(plan.victims)} on {where} to make room: {names}; capacity is held meanwhile."
