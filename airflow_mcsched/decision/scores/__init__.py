"""Score plugins and the default set; each is weighted by the policy's `ScoreWeights` of the same name."""

from airflow_mcsched.decision.scores.base import Score
from airflow_mcsched.decision.scores.cost import DataLocalityScore, PriceScore
from airflow_mcsched.decision.scores.fitness import SpotDiscountScore, SuitabilityScore
from airflow_mcsched.decision.scores.packing import FragmentationScore, LoadScore, WholeNodeScore
from airflow_mcsched.decision.scores.scarcity import ScarcityScore

DEFAULT_SCORES: tuple[Score, ...] = (
    PriceScore(),
    DataLocalityScore(),
    FragmentationScore(),
    LoadScore(),
    SuitabilityScore(),
    SpotDiscountScore(),
    ScarcityScore(),
    WholeNodeScore(),
)

__all__ = [
    "DEFAULT_SCORES",
    "DataLocalityScore",
    "FragmentationScore",
    "LoadScore",
    "PriceScore",
    "ScarcityScore",
    "Score",
    "SpotDiscountScore",
    "SuitabilityScore",
    "WholeNodeScore",
]
