"""The operator's policy: weights, priority classes, quotas and limits, changed in YAML without code."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from airflow_mcsched.access.fleet_file import describe_validation_error
from airflow_mcsched.access.profiles import WorkKind

ANY_GPU_TYPE = "*"

MAX_STAKE_LEVEL = 7
"""The highest `Policy.stake_level`: from 2**6 times the threshold on (6,400 GPU-hours at the default
100), a job's dollar scores count 8 times and no more."""

DEFAULT_PRIORITY_CLASSES = {"low": 0, "normal": 100, "high": 1000, "critical": 10000}

DEFAULT_DURATION_HOURS = {
    WorkKind.TRAINING: 8.0,
    WorkKind.FINE_TUNE: 4.0,
    WorkKind.EVAL: 1.0,
    WorkKind.BATCH: 2.0,
    WorkKind.INFERENCE: 24.0,
    WorkKind.EXPERIMENT: 1.0,
}


class PolicyError(ValueError):
    """A policy that cannot be used; one line per problem, each naming the field and the fix."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid policy\n" + "\n".join(f"  - {p}" for p in problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScoreWeights(_Strict):
    """How much each score counts; 0 turns a score off. Names match the score plugins."""

    price: float = Field(default=1.0, ge=0)
    data: float = Field(default=1.0, ge=0)
    fragmentation: float = Field(default=1.0, ge=0)
    load: float = Field(default=0.1, ge=0)
    suitability: float = Field(default=0.3, ge=0)
    spot: float = Field(default=0.2, ge=0)
    scarcity: float = Field(default=2.0, ge=0)
    whole_nodes: float = Field(default=1.0, ge=0)

    def staked(self, level: int, dollar_scores: Iterable[str]) -> ScoreWeights:
        """These weights with the dollar scores (`Score.in_dollars`, named by the engine, which knows its
        plugins) counting 1 + `level` times (`Policy.stake_level`); a name without a weight here is
        left out, as its score counts 1 whatever the stakes."""
        if not level:
            return self
        fields = type(self).model_fields
        return self.model_copy(update={n: getattr(self, n) * (1 + level) for n in dollar_scores if n in fields})


class WeightOverride(_Strict):
    """Weights for one team, one kind of work, or both; the more specific override wins."""

    team: str | None = None
    kind: WorkKind | None = None
    weights: dict[str, float]

    @model_validator(mode="after")
    def _valid(self) -> WeightOverride:
        if self.team is None and self.kind is None:
            raise ValueError("an override needs a team, a kind, or both")
        unknown = sorted(set(self.weights) - set(ScoreWeights.model_fields))
        if unknown:
            raise ValueError(f"unknown score weights {unknown}; use {sorted(ScoreWeights.model_fields)}")
        if any(w < 0 for w in self.weights.values()):
            raise ValueError("weights must be >= 0")
        return self

    @property
    def specificity(self) -> int:
        return (self.kind is not None) + 2 * (self.team is not None)


class TeamQuota(_Strict):
    """A team's nominal GPUs per GPU type (or '*' for any), and the cohort it borrows idle quota from."""

    team: str = Field(min_length=1)
    nominal: dict[str, float] = Field(description="GPU type (or '*') -> GPUs")
    cohort: str | None = None
    borrowing_limit: float | None = Field(default=None, ge=0, description="None = up to the cohort's idle")

    @field_validator("nominal")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        bad = sorted(k for k, v in value.items() if v < 0)
        if bad:
            raise ValueError(f"nominal GPUs must be >= 0 (check {bad})")
        return value


UserName = Annotated[str, Field(min_length=1)]


def _user_list(value: Any) -> Any:
    """A YAML author's likeliest slip (`members: alice`) gets an error that shows the fix."""
    if isinstance(value, str) or value is None:
        raise ValueError(f"give a list of Airflow user names, e.g. [{value or 'alice'}, bob]")
    return value


class TeamAccess(_Strict):
    """Who belongs to a team (Airflow user names), and whether outsiders may read its placements,
    costs and audit entries. A user may be in several teams."""

    members: tuple[UserName, ...] = ()
    private: bool = False

    _members_list = field_validator("members", mode="before")(_user_list)


class Policy(_Strict):
    """Everything about placement an operator may change at run time.

    Durations of work (for backfill and lease ends) are the request's `expected_duration`, else
    `default_duration_hours` of its kind of work.
    """

    priority_classes: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_PRIORITY_CLASSES))
    default_priority_class: str = "normal"
    weights: ScoreWeights = Field(default_factory=ScoreWeights)
    overrides: tuple[WeightOverride, ...] = ()
    dollars_at_stake_gpu_hours: float | None = Field(
        default=100,
        gt=0,
        description="work expected to use at least this many GPU-hours weighs its dollar scores (price, "
        "data) more: 2 times from here, 3 times from twice this, and so on, one more per doubling up to "
        f"{MAX_STAKE_LEVEL + 1} times; a month-long job's price is worth more than a minute's wait, a "
        "five-minute job's is not (None = the same weight for all work)",
    )
    quotas: tuple[TeamQuota, ...] = ()
    team_shares: dict[str, float] = Field(
        default_factory=dict, description="fair-share weight of a team without quota; default 1"
    )
    default_duration_hours: dict[WorkKind, float] = Field(default_factory=lambda: dict(DEFAULT_DURATION_HOURS))
    lease_seconds: float = Field(default=900, gt=0, description="how long a grant holds before its pod shows")
    idle_reservation_seconds: float | None = Field(
        default=1800, gt=0, description="a grant whose pod never started is reclaimed after this long; None = never"
    )
    max_observation_age_seconds: float = Field(default=300, gt=0, description="older capacity reads are stale")
    fast_storage_gbps: float = Field(default=10.0, gt=0, description="'needs_fast_storage' means at least this")
    max_staging_seconds: float | None = Field(default=None, gt=0, description="bound on data staging; None = any")
    work_kind_is_hard: bool = Field(default=False, description="refuse clusters not suited for the kind of work")
    backfill: bool = True
    backfill_heads: int = Field(
        default=4, ge=1, description="how many blocked requests (in admission order) get capacity held for them"
    )
    backfill_large_heads: int = Field(
        default=12,
        ge=0,
        description="further blocked requests asking 2 GPUs or more that get capacity held for them beyond "
        "`backfill_heads`, once they have waited `backfill_large_after_seconds`: without them each GPU "
        "that frees goes to a small job and a large one can wait for days (docs/benchmarks.md)",
    )
    backfill_large_after_seconds: float | None = Field(
        default=3600,
        ge=0,
        description="how long a blocked large request waits before it may take one of the "
        "`backfill_large_heads` holds (None = at once): the few that would starve get room, while "
        "the many that a freed GPU soon lets in do not make small jobs wait behind holds",
    )
    aging_seconds: float | None = Field(
        default=None, ge=0, description="a request waiting longer goes ahead of its priority class; None = never"
    )
    preemption: bool = True
    reclaim_borrowed_quota: bool = True
    runners_up: int = Field(default=3, ge=0)
    teams: dict[Annotated[str, Field(min_length=1)], TeamAccess] = Field(
        default_factory=dict, description="team -> members and privacy; a team not listed is public"
    )
    admins: tuple[UserName, ...] = Field(default=(), description="Airflow users who see every team, private or not")

    _admins_list = field_validator("admins", mode="before")(_user_list)

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        if self.default_priority_class not in self.priority_classes:
            raise ValueError(
                f"default_priority_class {self.default_priority_class!r} is not among priority_classes "
                f"{sorted(self.priority_classes)}; add it or pick one of them"
            )
        teams = [q.team for q in self.quotas]
        dupes = sorted({t for t in teams if teams.count(t) > 1})
        if dupes:
            raise ValueError(f"quotas: one entry per team; merge the entries of {dupes}")
        return self

    # -- reading the policy ------------------------------------------------------------------
    def priority_of(self, priority_class: str | None) -> int | None:
        """Numeric priority of a class name (None = default class); None when the class is unknown."""
        return self.priority_classes.get(priority_class or self.default_priority_class)

    def weights_for(self, team: str, kind: WorkKind) -> ScoreWeights:
        """The weights for a team and kind of work (overrides applied, the most specific last); the
        engine stakes them (`ScoreWeights.staked`) by the request's `stake_level`."""
        matching = [
            o for o in self.overrides if (o.team is None or o.team == team) and (o.kind is None or o.kind == kind)
        ]
        if not matching:
            return self.weights
        merged = self.weights.model_dump()
        for o in sorted(matching, key=lambda o: o.specificity):
            merged.update(o.weights)
        return ScoreWeights(**merged)

    def stake_level(self, gpu_hours: float) -> int:
        """0 below `dollars_at_stake_gpu_hours` (or when it is None), then one more per doubling of the
        expected GPU-hours, at most `MAX_STAKE_LEVEL`."""
        at = self.dollars_at_stake_gpu_hours
        if at is None or gpu_hours < at:
            return 0
        return min(MAX_STAKE_LEVEL, 1 + int(math.log2(gpu_hours / at)))

    def expected_duration(self, kind: WorkKind, requested: timedelta | None) -> timedelta:
        if requested is not None:
            return requested
        return timedelta(hours=self.default_duration_hours.get(kind, 1.0))

    def waited_for_large_hold(self, arrival: datetime, now: datetime) -> bool:
        """Has a large request that arrived then waited long enough for a `backfill_large_heads` hold?"""
        after = self.backfill_large_after_seconds
        return after is None or (now - arrival).total_seconds() >= after

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.lease_seconds)

    @property
    def idle_reservation(self) -> timedelta | None:
        return None if self.idle_reservation_seconds is None else timedelta(seconds=self.idle_reservation_seconds)

    @property
    def max_observation_age(self) -> timedelta:
        return timedelta(seconds=self.max_observation_age_seconds)

    # -- loading -----------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> Policy:
        """Validate a mapping (e.g. parsed YAML) or raise `PolicyError` naming each field and its fix."""
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise PolicyError(["a policy is a mapping of settings (weights, priority_classes, quotas, ...)"])
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise PolicyError(describe_validation_error(err, data)) from None

    @classmethod
    def from_yaml(cls, text: str) -> Policy:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise PolicyError([f"not valid YAML ({err})"]) from None
        return cls.from_dict(data)
