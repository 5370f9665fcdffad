"""The `mcsched` command: one entry point, one module per sub-command group."""

from __future__ import annotations

import argparse
import importlib
import sys

# Each module has `register(subparsers)`; it adds its parser with `func=` set.
COMMAND_MODULES = [
    "airflow_mcsched.cli.virtual_clusters",
    "airflow_mcsched.cli.clusters",
    "airflow_mcsched.cli.sync",
    "airflow_mcsched.cli.report",
    "airflow_mcsched.cli.reclaim",
    "airflow_mcsched.cli.purge",
    "airflow_mcsched.cli.demo",
    "airflow_mcsched.cli.replay",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcsched", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValueError, LookupError) as err:  # bad input: say what and how to fix, no traceback
        print(f"mcsched: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
