"""Where the placement policy comes from: a YAML file named by `[mcsched] policy_file`, re-read
when it changes (operators change weights, quotas and priority classes without code or restart);
the engine's defaults when none is set."""

from __future__ import annotations

import threading
from functools import cache
from pathlib import Path

from airflow_mcsched.decision import Policy

_lock = threading.Lock()
_cache: dict[str, tuple[float, Policy]] = {}


def load_policy_file(path: str | Path) -> Policy:
    p = Path(path)
    mtime = p.stat().st_mtime
    with _lock:
        cached = _cache.get(str(p))
        if cached and cached[0] == mtime:
            return cached[1]
    policy = Policy.from_yaml(p.read_text())
    with _lock:
        _cache[str(p)] = (mtime, policy)
    return policy


@cache
def _default_policy() -> Policy:
    """The engine's defaults, one object for the life of the process. The engine finds what it
    learnt of a fleet by the policy's value (decision/plan_cache.py), which it works out once per
    policy object."""
    return Policy()


def current_policy() -> Policy:
    from airflow.configuration import conf

    path = conf.get("mcsched", "policy_file", fallback="")
    return load_policy_file(path) if path else _default_policy()
