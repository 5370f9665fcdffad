"""Finished runs of a replay kept on disk, one file per policy and seed, so a long comparison resumes.

One engine seed of the reference trace at a high load takes many minutes; a comparison of nine
policies over five seeds can outlast a session or a CI job. With a store, each run is written as
soon as it ends, and a later call with the same setting reads it instead of running it again.
A store holds one setting only (trace, fleet, variant, load, jobs), and each run records the code
that made it (a fingerprint of the source its policy runs): a run of another setting, or one made
by other code, is refused, by name, rather than mixed into the medians.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

import airflow_mcsched
from airflow_mcsched.replay.metrics import ReplaySummary

ENGINE = "mcsched"

_FIGURES_FROM = ("access", "view", "decision", "replay")
"""The packages whose source decides a replay's figures (the engine, the view it reads, the simulator)."""

_ENGINE_IGNORES = ("replay/baselines.py",)
"""Source the engine's runs never execute: a change to a baseline leaves the engine's kept runs valid."""


def code_kind(policy: str) -> str:
    """Which fingerprint a policy's runs carry: the engine's own, or the one every baseline shares."""
    return "engine" if policy == ENGINE else "baselines"


def run_file_name(policy: str, seed: int, baseline_backfill: bool = False) -> str:
    """`<policy>-seed<s>.json`, `<policy>-easy-seed<s>.json` for a baseline with plain backfill (the
    engine's backfill is its policy's, so its runs are the same in both comparisons)."""
    tag = "-easy" if baseline_backfill and code_kind(policy) == "baselines" else ""
    return f"{policy}{tag}-seed{seed}.json"


def policy_of_run_file(name: str) -> str:
    """The policy whose run a file named by `run_file_name` holds."""
    return name.rpartition("-seed")[0].removesuffix("-easy")


def code_fingerprint(policy: str, root: Path | None = None) -> str:
    """sha256 of the source that decides the figures of `policy`'s runs: a run kept by other code is
    not reused. This module is left out (keeping runs does not change them), and so are the baselines
    for the engine's runs (they never run them; every other module is shared). `root`: the package's
    folder (default: the one imported).
    """
    root = root or Path(airflow_mcsched.__file__).parent
    ignored = {root / "replay" / "run_store.py"}
    if policy == ENGINE:
        ignored.update(root / name for name in _ENGINE_IGNORES)
    digest = hashlib.sha256()
    for package in _FIGURES_FROM:
        for path in sorted((root / package).rglob("*.py")):
            if path in ignored:
                continue
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class RunStore:
    """`<dir>/<policy>-seed<s>.json`: {"setting": ... with "code", "summary": ReplaySummary as a dict}."""

    def __init__(self, directory: str | Path, setting: Mapping[str, object], baseline_backfill: bool = False) -> None:
        self.directory = Path(directory)
        self.setting = dict(setting)
        # baselines with plain backfill are other runs than without (`<policy>-easy-seed<s>.json`), the
        # engine's the same: one directory holds both comparisons and the engine's runs once
        self.baseline_backfill = baseline_backfill
        self.directory.mkdir(parents=True, exist_ok=True)
        # read now: source edited while a long comparison runs must not be stamped on its runs
        self._codes = {"engine": code_fingerprint(ENGINE), "baselines": code_fingerprint("baselines")}

    def setting_of(self, policy: str) -> dict[str, object]:
        """The store's setting plus the fingerprint of the code `policy` runs (and, for a baseline
        with plain backfill, that it had it)."""
        kind = code_kind(policy)
        if kind == "engine":
            return {**self.setting, "code": self._codes[kind]}
        easy = {"baseline_backfill": True} if self.baseline_backfill else {}
        return {**self.setting, **easy, "code": self._codes[kind]}

    def _path(self, policy: str, seed: int) -> Path:
        return self.directory / run_file_name(policy, seed, self.baseline_backfill)

    def get(self, policy: str, seed: int) -> ReplaySummary | None:
        path = self._path(policy, seed)
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            kept, summary = data["setting"], ReplaySummary(**data["summary"])
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a replay run this version can read ({err}); delete the file") from err
        setting = self.setting_of(policy)
        if kept != setting:
            changed = sorted(k for k in {*kept, *setting} if kept.get(k) != setting.get(k))
            raise ValueError(
                f"{path} holds a run of another setting (differs in {', '.join(changed)}); "
                "give this setting its own --runs-dir (or, after changing the code, delete the old runs)"
            )
        return summary

    def put(self, summary: ReplaySummary, seed: int) -> None:
        """Written whole or not at all (a run killed mid-write leaves no half file to trip on)."""
        path = self._path(summary.policy, seed)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"setting": self.setting_of(summary.policy), "summary": summary.as_dict()}, indent=2))
        os.replace(tmp, path)
