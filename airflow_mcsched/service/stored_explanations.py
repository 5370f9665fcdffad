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

The pieces outlive the cycle (`ExplanationPieces`, one per process): the engine keeps its plans,
their lists of rejections and its scored candidates from one cycle to the next while the fleet and
the queue's shapes are the same, and a request still waiting is decided again every cycle. Made
per cycle, the same 34,000 rejections and 3,500 candidates were encoded again every cycle at 100
clusters, about two thirds of writing one (benchmarks/bench_service_cycle.py). A list's text (some
17 MB a cycle there) is not kept, only its digest: the text is joined again from the kept pieces
when the database lacks the list (cycle_writes.py).
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime
from typing import Any, NamedTuple

from pydantic import TypeAdapter

from airflow_mcsched.decision import PlacementDecision, Rejection, ScoredCandidate, Victim
from airflow_mcsched.view.bounded_table import get_or_make, held

_dumps = json.dumps  # SQLAlchemy's JSON type encodes with it too: the same text either way
_KEYS = ("outcome", "reason", "summary", "decided_at", "chosen", "runners_up", "victims", "expected_start")
_PREFIXES = tuple(f"{_dumps(k)}: " for k in _KEYS)
_datetime_json = TypeAdapter(datetime | None)  # the model's own rules for its two datetimes


class RejectionList:
    """A list of rejections as stored: its digest, worked out once, and its JSON text, joined again
    from the rejections' kept texts whenever asked (the database asks only for a list it lacks)."""

    __slots__ = ("_pieces", "digest", "rejections")

    def __init__(self, rejections: tuple[Rejection, ...], pieces: ExplanationPieces) -> None:
        self.rejections = rejections
        self._pieces = pieces
        self.digest = hashlib.sha256(self.text.encode()).hexdigest()
        """sha256 of `text`: the list's key in `mcsched_rejection_list`."""

    @property
    def text(self) -> str:
        """`json.dumps(value)`."""
        return f"[{', '.join(map(self._pieces.rejection_text, self.rejections))}]"

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


class ExplanationPieces:
    """The JSON of each rejection and candidate, and the digest of each list of rejections, met in
    any cycle, by the identity of the engine's objects (immutable, so their JSON never changes);
    bounded, so memory stays bounded whatever the queue."""

    MAX_REJECTIONS = 131_072
    MAX_LISTS = 16_384
    MAX_CANDIDATES = 65_536

    def __init__(self) -> None:
        self._rejection_texts: dict[int, tuple[Rejection, str]] = {}
        self._lists: dict[tuple[int, ...], tuple[tuple[Rejection, ...], RejectionList]] = {}
        self._candidates: dict[int, tuple[ScoredCandidate, tuple[dict[str, Any], str]]] = {}

    def rejection_text(self, rejection: Rejection) -> str:
        """A rejection's JSON: the lists of requests alike in part share their rejections (those of
        the pools their plans rule out for good)."""
        return held(self._rejection_texts, rejection, self.MAX_REJECTIONS, _rejection_text)

    def rejection_list(self, rejections: tuple[Rejection, ...]) -> RejectionList:
        """The list of these rejections, found by the rejections' identities: a request that waits
        again gets a new tuple of them each cycle, mostly of the same objects (the plan's lasting
        rejections, and the verdicts the engine kept for pools whose capacity is unchanged)."""
        # the entry holds the rejections: the ids in its key are still theirs
        entry = get_or_make(
            self._lists,
            tuple(map(id, rejections)),
            self.MAX_LISTS,
            lambda: (rejections, RejectionList(rejections, self)),
        )
        return entry[1]

    def candidate(self, candidate: ScoredCandidate) -> tuple[dict[str, Any], str]:
        """A candidate's JSON, as a value and as text."""
        return held(self._candidates, candidate, self.MAX_CANDIDATES, _candidate_texts)


def _rejection_text(rejection: Rejection) -> str:
    return _dumps(_rejection_json(rejection))


def _candidate_texts(candidate: ScoredCandidate) -> tuple[dict[str, Any], str]:
    value = _candidate_json(candidate)
    return value, _dumps(value)


PIECES = ExplanationPieces()
"""The process's pieces: every cycle's `StoredExplanations` shares them."""


class StoredExplanations:
    """The stored explanations of one cycle's decisions, each recurring piece made once (`pieces`)."""

    def __init__(self, pieces: ExplanationPieces = PIECES) -> None:
        self._pieces = pieces
        self._decided_at: tuple[datetime, str] | None = None
        self._short: dict[str | None, str] = {}

    def __call__(self, decision: PlacementDecision, decided_at: datetime) -> StoredExplanation:
        pieces = self._pieces
        chosen = None if decision.placement is None else pieces.candidate(decision.placement)
        runners_up = [pieces.candidate(c) for c in decision.runners_up]
        rejections = pieces.rejection_list(decision.rejections)
        victims = [victim_json(v) for v in decision.victims]
        value = dict(
            zip(
                _KEYS,
                (
                    decision.outcome.value,
                    str(decision.reason),
                    decision.summary,
                    self._time_json(decided_at),
                    None if chosen is None else chosen[0],
                    [c[0] for c in runners_up],
                    victims,
                    _datetime_json.dump_python(decision.expected_start, mode="json"),
                ),
                strict=True,
            )
        )
        short = self._short_text
        texts = (
            short(value["outcome"]),
            short(value["reason"]),
            _dumps(value["summary"]),
            short(value["decided_at"]),
            "null" if chosen is None else chosen[1],
            f"[{', '.join(c[1] for c in runners_up)}]",
            _dumps(victims) if victims else "[]",
            short(value["expected_start"]),
        )
        return StoredExplanation(value, "{" + ", ".join(map(str.__add__, _PREFIXES, texts)) + "}", rejections)

    def _short_text(self, value: str | None) -> str:
        """The JSON of a value most decisions of a cycle share (outcome, reason, times), made once."""
        text = self._short.get(value)
        if text is None:
            text = self._short[value] = _dumps(value)
        return text

    def _time_json(self, decided_at: datetime) -> Any:
        """The cycle's clock as the model gives it: every decision of a cycle has the same."""
        if self._decided_at is None or self._decided_at[0] != decided_at:
            self._decided_at = (decided_at, _datetime_json.dump_python(decided_at, mode="json"))
        return self._decided_at[1]


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
