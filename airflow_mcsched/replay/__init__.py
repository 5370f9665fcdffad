"""Trace replay: openb-format traces through the engine or a baseline policy, in simulated time.

`mcsched replay` (cli/replay.py) is the face; `compare` runs policies over one trace and fleet.
"""

from airflow_mcsched.replay.compare import compare, policy_names
from airflow_mcsched.replay.fleet import ReplayFleet, fleet_from_split, fleet_from_yaml, load_fleet, pooled
from airflow_mcsched.replay.metrics import ReplaySummary, summarise
from airflow_mcsched.replay.openb import TraceJob, compress_arrivals, read_jobs, read_nodes
from airflow_mcsched.replay.placer import Placer
from airflow_mcsched.replay.policies import PLACERS
from airflow_mcsched.replay.simulator import ReplayRun, replay

__all__ = [
    "PLACERS",
    "Placer",
    "ReplayFleet",
    "ReplayRun",
    "ReplaySummary",
    "TraceJob",
    "compare",
    "compress_arrivals",
    "fleet_from_split",
    "fleet_from_yaml",
    "load_fleet",
    "policy_names",
    "pooled",
    "read_jobs",
    "read_nodes",
    "replay",
    "summarise",
]
