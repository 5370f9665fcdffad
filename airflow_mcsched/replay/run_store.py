"""Finished runs of a replay kept on disk, one file per policy and seed, so a long comparison resumes.

One engine seed of the reference trace at a high load takes many minutes; a comparison of nine
policies over five seeds can outlast a session or a CI job. With a store, each run is written as
soon as it ends, and a later call with the same setting reads it instead of running it again.
A store holds one setting only (trace, fleet, variant, load, jobs): a run of another setting is
refused, by name, rather than mixed into the medians.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from airflow_mcsched.replay.metrics import ReplaySummary


class RunStore:
    """`<dir>/<policy>-seed<s>.json`: {"setting": ..., "summary": ReplaySummary as a dict}."""

    def __init__(self, directory: str | Path, setting: Mapping[str, object]) -> None:
        self.directory = Path(directory)
        self.setting = dict(setting)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, policy: str, seed: int) -> Path:
        return self.directory / f"{policy}-seed{seed}.json"

    def get(self, policy: str, seed: int) -> ReplaySummary | None:
        path = self._path(policy, seed)
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            setting, summary = data["setting"], ReplaySummary(**data["summary"])
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a replay run this version can read ({err}); delete the file") from err
        if setting != self.setting:
            changed = sorted(k for k in {*setting, *self.setting} if setting.get(k) != self.setting.get(k))
            raise ValueError(
                f"{path} holds a run of another setting (differs in {', '.join(changed)}); "
                "give this setting its own --runs-dir"
            )
        return summary

    def put(self, summary: ReplaySummary, seed: int) -> None:
        """Written whole or not at all (a run killed mid-write leaves no half file to trip on)."""
        path = self._path(summary.policy, seed)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"setting": self.setting, "summary": summary.as_dict()}, indent=2))
        os.replace(tmp, path)
