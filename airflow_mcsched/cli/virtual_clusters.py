"""`mcsched virtual-clusters ...` (placeholder until the virtual clusters land)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("virtual-clusters", help="start local virtual Kubernetes clusters")
    p.set_defaults(func=lambda args: print("not implemented yet") or 1)
