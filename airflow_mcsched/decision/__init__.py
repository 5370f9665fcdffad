"""Placement engine (layer 3), pure Python: filters, scores, quotas, preemption and queue admission.

Imports nothing from Airflow, FastAPI, SQLAlchemy or kubernetes.
"""

from airflow_mcsched.decision.admission import DEFAULT_PLUGINS, AdmissionCycle, Plugins, decide
from airflow_mcsched.decision.node_choice import choose_nodes
from airflow_mcsched.decision.outcome import (
    AdmissionResult,
    Outcome,
    PlacementDecision,
    ReclaimedLease,
    Rejection,
    ScoredCandidate,
    ScorePart,
    Victim,
)
from airflow_mcsched.decision.policy import Policy, PolicyError, ScoreWeights, TeamQuota, WeightOverride
from airflow_mcsched.decision.reasons import Reason
from airflow_mcsched.decision.request import DataLocation, PlacementRequest, RequestError, parse_request
from airflow_mcsched.decision.reservation import Reservation

__all__ = [
    "DEFAULT_PLUGINS",
    "AdmissionCycle",
    "AdmissionResult",
    "DataLocation",
    "Outcome",
    "PlacementDecision",
    "PlacementRequest",
    "Plugins",
    "Policy",
    "PolicyError",
    "Reason",
    "ReclaimedLease",
    "Rejection",
    "RequestError",
    "Reservation",
    "ScorePart",
    "ScoreWeights",
    "ScoredCandidate",
    "TeamQuota",
    "Victim",
    "WeightOverride",
    "choose_nodes",
    "decide",
    "parse_request",
]
