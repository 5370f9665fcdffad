"""Plain-text tables for the CLI: aligned columns, no dependencies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def render_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
