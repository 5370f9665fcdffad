"""Charts as inline SVG made here, so the pages need no JavaScript library and fetch nothing at runtime."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
USED, RESERVED, FREE = "#7f8c8d", "#f0ad4e", "#5cb85c"


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" fill="{fill}">'
        f"<title>{escape(title)}</title></rect>"
    )


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 11) -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">{escape(text)}</text>'


def _svg(width: int, height: int, body: Sequence[str], label: str) -> Markup:
    return Markup(
        f'<svg class="chart" role="img" aria-label="{escape(label)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg>'
    )


def capacity_bar(used: float, reserved: float, free: float, width: int = 180) -> Markup:
    """One pool's GPUs as a bar: in use by others or running steps, held by reservations, free."""
    total = used + reserved + free
    if total <= 0:
        return _svg(width, 12, [_rect(0, 0, width, 12, "#eee", "no GPUs")], "no GPUs")
    x, body = 0.0, []
    for value, fill, what in ((used, USED, "in use"), (reserved, RESERVED, "reserved"), (free, FREE, "free")):
        w = width * value / total
        body.append(_rect(x, 0, w, 12, fill, f"{value:g} {what}"))
        x += w
    return _svg(width, 12, body, f"{used:g} in use, {reserved:g} reserved, {free:g} free")


def bar_chart(items: Sequence[tuple[str, float]], fmt: Callable[[float], str], label: str, width: int = 520) -> Markup:
    """Horizontal bars, one per item, longest first as given; the value printed at the bar's end."""
    if not items:
        return Markup("")
    top = max(v for _, v in items) or 1.0
    label_w, row_h, value_w = 150, 22, 80
    bar_w = width - label_w - value_w
    body = []
    for i, (name, value) in enumerate(items):
        y = i * row_h
        body.append(_text(label_w - 6, y + 15, name, "end"))
        body.append(_rect(label_w, y + 4, bar_w * value / top, row_h - 8, colour(i), f"{name}: {fmt(value)}"))
        body.append(_text(label_w + bar_w * value / top + 4, y + 15, fmt(value)))
    return _svg(width, row_h * len(items), body, label)


def stacked_columns(
    buckets: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    fmt: Callable[[float], str],
    label: str,
    width: int = 720,
    height: int = 220,
) -> Markup:
    """One column per time bucket, stacked by series (team, project...), with a legend below."""
    if not buckets:
        return Markup("")
    totals = [sum(vals[i] for _, vals in series) for i in range(len(buckets))]
    top = max(totals) or 1.0
    left, margin_top, bottom, legend_h = 60, 8, 24, 18 * ((len(series) + 3) // 4)
    base = height - bottom  # the x axis
    plot_h = base - margin_top
    step = (width - left) / len(buckets)
    col_w = max(step * 0.7, 2)
    body = [
        f'<line x1="{left}" y1="{base}" x2="{width}" y2="{base}" stroke="#999"/>',
        _text(left - 6, margin_top + 4, fmt(top), "end"),
        _text(left - 6, base, "0", "end"),
    ]
    label_every = max(1, len(buckets) // 8)
    for i, bucket in enumerate(buckets):
        x, y = left + i * step + (step - col_w) / 2, float(base)
        for j, (key, vals) in enumerate(series):
            h = plot_h * vals[i] / top
            y -= h
            if h > 0:
                body.append(_rect(x, y, col_w, h, colour(j), f"{bucket} {key}: {fmt(vals[i])}"))
        if i % label_every == 0:
            body.append(_text(x + col_w / 2, base + 14, bucket[5:10] if len(bucket) >= 10 else bucket, "middle", 10))
    for j, (key, _) in enumerate(series):
        lx, ly = left + (j % 4) * 160, height + 4 + 18 * (j // 4)
        body.append(_rect(lx, ly, 10, 10, colour(j), key))
        body.append(_text(lx + 14, ly + 9, key))
    return _svg(width, height + legend_h, body, label)


def share_bar(fraction: float, width: int = 100) -> Markup:
    """A score part's weighted share of the total score."""
    fraction = min(max(fraction, 0.0), 1.0)
    return _svg(width, 10, [_rect(0, 0, width, 10, "#eee", ""), _rect(0, 0, width * fraction, 10, PALETTE[0], "")], "")
