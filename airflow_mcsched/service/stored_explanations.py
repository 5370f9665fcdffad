"""A cycle's explanations as the placement tables store them: the API's JSON, made in pieces.

What is stored is the `Explanation` model's JSON of a decision (schemas.py), in two parts: the
row's `explanation` holds all of it but the rejections, and the list of rejections is kept once,
under its digest, in `mcsched_rejection_list` (tables.py), which the row names. A 1,000-request
cycle at 100 clusters made some 185,000 models for it and encoded each row's JSON whole, though
most of it recurs from row to row: requests alike share their list of rejections (every pool their
plan rules out, up to the whole fleet: some 22 KB of a row's 25 KB), and the engine hands requests
alike the same scored candidate objects while a pool's capacity is unchanged. So each list of
rejections and each candidate is made, as a value and as JSON text, once per cycle, and a row's
text is its own few fields around those pieces. The text is exactly `json.dumps` of the value
(tests/service/test_stored_explanations.py), written as is (service/cycle_writes.py); nothing
changes a stored explanation in place, so rows may share the pieces of their values.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime
from typing import Any, NamedTuple

from pydantic import TypeAdapter

from airflow_mcsched.decision import PlacementDecision, Rejection, ScoredCandidate, Victim

_dumps = json.dumps  # SQLAlchemy's JSON type encodes with it too: the same text either way
_KEYS = ("outcome", "reason", "summary", "decided_at", "chosen", "runners_up", "victims", "expected_start")
_PREFIXES = tuple(f"{_dumps(k)}: " for k in _KEYS)
_datetime_json = TypeAdapter(datetime | None)  # the model's own rules for its two datetimes


class RejectionList(NamedTuple):
    digest: str
    """sha256 of `text`: the list's key in `mcsched_rejection_list`."""
    text: str
    """`json.dumps(value)`."""
    rejections: tuple[Rejection, ...]

    @property
    def value(self) -> list[dict[str, Any]]:
        """The `Explanation` model's JSON of the rejections (the cycle writes only the text)."""
        return list(map(_rejection_json, self.rejections))


class StoredExplanation(NamedTuple):
    value: dict[str, Any]
    """The `Explanation` model's JSON but for its rejections, key for key and in the same order."""
    text: str
    """`json.dumps(value)`."""
    rejections: RejectionList

    def whole(self) -> dict[str, Any]:
        """The model's JSON, rejections in their place among the keys (what the API reads back)."""
        return with_rejections(self.value, self.rejections.value)


def with_rejections(stored: dict[str, Any], rejections: list[Any]) -> dict[str, Any]:
    """A stored explanation with its list of rejections back in its place (after `runners_up`)."""
    out: dict[str, Any] = {}
    for key, value in stored.items():
        if key == "victims":
            out["rejections"] = rejections
        out[key] = value
    return out


class StoredExplanations:
    """The stored explanations of one cycle's decisions, each recurring piece made once."""

    def __init__(self) -> None:
        # keyed by the engine object's id; each entry holds the object, so the id stays its own
        self._rejections: dict[int, tuple[tuple[Rejection, ...], RejectionList]] = {}
        self._rejection_texts: dict[int, tuple[Rejection, str]] = {}
        self._candidates: dict[int, tuple[ScoredCandidate, dict[str, Any], str]] = {}

    def __call__(self, decision: PlacementDecision, decided_at: datetime) -> StoredExplanation:
        chosen = None if decision.placement is None else self._candidate(decision.placement)
        runners_up = [self._candidate(c) for c in decision.runners_up]
        rejections = self._rejection_list(decision.rejections)
        victims = [victim_json(v) for v in decision.victims]
        value = dict(
            zip(
                _KEYS,
                (
                    decision.outcome.value,
                    str(decision.reason),
                    decision.summary,
                    _datetime_json.dump_python(decided_at, mode="json"),
                    None if chosen is None else chosen[1],
                    [c[1] for c in runners_up],
                    victims,
                    _datetime_json.dump_python(decision.expected_start, mode="json"),
                ),
                strict=True,
            )
        )
        texts = (
            _dumps(value["outcome"]),
            _dumps(value["reason"]),
            _dumps(value["summary"]),
            _dumps(value["decided_at"]),
            "null" if chosen is None else chosen[2],
            f"[{', '.join(c[2] for c in runners_up)}]",
            _dumps(victims),
            _dumps(value["expected_start"]),
        )
        return StoredExplanation(value, "{" + ", ".join(map(str.__add__, _PREFIXES, texts)) + "}", rejections)

    def _rejection_list(self, rejections: tuple[Rejection, ...]) -> RejectionList:
        known = self._rejections.get(id(rejections))
        if known is None or known[0] is not rejections:
            text = f"[{', '.join(map(self._rejection_text, rejections))}]"
            listed = RejectionList(hashlib.sha256(text.encode()).hexdigest(), text, rejections)
            known = self._rejections[id(rejections)] = (rejections, listed)
        return known[1]

    def _rejection_text(self, rejection: Rejection) -> str:
        """A rejection's JSON, made once per cycle: the lists of requests alike in part share their
        rejections (those of the pools their plans rule out for good)."""
        known = self._rejection_texts.get(id(rejection))
        if known is None or known[0] is not rejection:
            known = self._rejection_texts[id(rejection)] = (rejection, _dumps(_rejection_json(rejection)))
        return known[1]

    def _candidate(self, candidate: ScoredCandidate) -> tuple[Any, dict[str, Any], str]:
        known = self._candidates.get(id(candidate))
        if known is None or known[0] is not candidate:
            value = _candidate_json(candidate)
            known = self._candidates[id(candidate)] = (candidate, value, _dumps(value))
        return known


def victim_json(v: Victim) -> dict[str, Any]:
    """A victim as the `Explanation` model gives it (a plain dict there too)."""
    return {
        "reservation_id": v.reservation_id,
        "placement_id": v.request_id,
        "team": v.team,
        "cluster": v.cluster,
        "pool": v.pool,
        "reason": str(v.reason),
        "message": v.message,
    }


def _rejection_json(r: Rejection) -> dict[str, Any]:
    """A rejection as the `RejectionOut` model's JSON gives it."""
    return {"cluster": r.cluster, "pool": r.pool, "reason": str(r.reason), "message": r.message, "lasting": r.lasting}


def _candidate_json(c: ScoredCandidate) -> dict[str, Any]:
    """A candidate as the `CandidateOut` model's JSON gives it, score and values rounded to 6 places:
    its float fields as floats, and a figure that is a float but not a finite number as null
    (pydantic's JSON mode turns inf and nan into None where the type is `Any`, and keeps them in a
    `float` field)."""
    return {
        "cluster": c.cluster,
        "pool": c.pool,
        "score": float(round(c.score, 6)),
        "price_per_gpu_hour": float(c.price_per_gpu_hour),
        "nodes": list(c.nodes),
        "parts": [
            {
                "name": p.name,
                "value": float(round(p.value, 6)),
                "weight": float(p.weight),
                "detail": {k: _figure(v) for k, v in p.detail},
            }
            for p in c.parts
        ],
    }


def _figure(v: Any) -> Any:
    return v if type(v) is not float or math.isfinite(v) else None
