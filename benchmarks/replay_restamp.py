"""Check that this code remakes kept replay runs exactly; then, on request, stamp the kept runs as its own.

    .venv/bin/python benchmarks/replay_restamp.py FRESH KEPT [--stamp]

The run store (`airflow_mcsched/replay/run_store.py`) refuses a kept run made by other code. A
change that cannot move a figure (a faster cache, a refactor) would otherwise throw away hours of
runs. So: make some runs again with this code (`mcsched replay ... --runs-dir FRESH/<setting>`,
the same settings as under KEPT), then run this. It compares every run file under FRESH
(`<setting>/<policy>-seed<s>.json`) with the file of the same setting and name under KEPT:
setting (less the code fingerprint) and summary must be equal, figure for figure. It prints what
it compared and every difference. With `--stamp`, and only if nothing differs, every run file
under KEPT gets the fingerprint that this code gave the fresh runs of its kind (the engine's, or
the baselines'); the figures are not touched. Runs of a kind that FRESH does not hold are left as
they are.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from airflow_mcsched.replay.run_store import code_kind, policy_of_run_file


def _kind(path: Path) -> str:
    return code_kind(policy_of_run_file(path.name))


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def compare(fresh: Path, kept: Path) -> tuple[int, list[str], dict[str, str]]:
    """(runs compared, differences, the fresh runs' fingerprint by kind)."""
    compared, differences, codes = 0, [], {}
    for path in sorted(fresh.glob("*/*-seed*.json")):
        relative = path.relative_to(fresh)
        made = _load(path)
        kind = _kind(path)
        code = made["setting"]["code"]
        if codes.setdefault(kind, code) != code:
            differences.append(f"{relative}: made by other code than the other fresh {kind} runs")
        other = kept / relative
        if not other.exists():
            differences.append(f"{relative}: no kept run of that name")
            continue
        old = _load(other)
        compared += 1
        setting = {k: v for k, v in made["setting"].items() if k != "code"}
        if setting != {k: v for k, v in old["setting"].items() if k != "code"}:
            differences.append(f"{relative}: another setting")
        before, after = old["summary"], made["summary"]
        changed = [
            f"{k} {before.get(k)} -> {after.get(k)}" for k in sorted({*before, *after}) if before.get(k) != after.get(k)
        ]
        if changed:
            differences.append(f"{relative}: {', '.join(changed)}")
    return compared, differences, codes


def stamp(kept: Path, codes: dict[str, str]) -> int:
    """Give every kept run of a kind in `codes` that kind's fingerprint; returns how many changed."""
    changed = 0
    for path in sorted(kept.glob("*/*-seed*.json")):
        code = codes.get(_kind(path))
        data = _load(path)
        if code is None or data["setting"].get("code") == code:
            continue
        data["setting"]["code"] = code
        path.write_text(json.dumps(data, indent=2))
        changed += 1
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fresh", type=Path, help="runs made by this code (one folder per setting)")
    parser.add_argument("kept", type=Path, help="the kept runs, folders named as under FRESH")
    parser.add_argument("--stamp", action="store_true", help="if nothing differs, stamp every kept run")
    args = parser.parse_args()
    compared, differences, codes = compare(args.fresh, args.kept)
    made_by = ", ".join(f"{kind} {code}" for kind, code in sorted(codes.items()))
    print(f"{compared} runs compared (made by {made_by}); {len(differences)} differ")
    for line in differences:
        print(f"  {line}")
    if differences or not compared:
        return 1
    if args.stamp:
        print(f"{stamp(args.kept, codes)} kept runs stamped with this code's fingerprint")
    return 0


if __name__ == "__main__":
    sys.exit(main())
