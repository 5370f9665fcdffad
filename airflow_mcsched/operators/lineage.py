"""The placement's lineage in words, for the task log: where the step went, why, and what it cost."""

from __future__ import annotations

from airflow_mcsched.service.schemas import CandidateOut, PlacementOut


def _score_parts(candidate: CandidateOut) -> str:
    return ", ".join(f"{p.name} {p.value:.2f}x{p.weight:g}" for p in candidate.parts)


def admission_lines(placement: PlacementOut) -> list[str]:
    """Chosen cluster, pool, nodes, GPU and price, the score's parts, the runners-up and every rejection."""
    p = placement
    lines = [
        f"Placement {p.id} (attempt {p.attempt}, team {p.team}, project {p.project or '-'}) admitted to "
        f"{p.cluster}/{p.pool} on {', '.join(p.nodes) or '-'}: {p.gpu_type or 'no GPU'} at "
        f"{(p.price_per_gpu_hour or 0.0):.2f}/GPU-hour, score {(p.score or 0.0):.3f}; "
        f"connection {p.connection_id}, namespace {p.namespace}, reservation {p.reservation_id}"
    ]
    explanation = p.explanation
    if explanation is None:
        return lines
    if explanation.chosen is not None:
        lines.append(f"  score parts: {_score_parts(explanation.chosen)}")
    for c in explanation.runners_up:
        lines.append(f"  runner-up {c.cluster}/{c.pool}: score {c.score:.3f} at {c.price_per_gpu_hour:.2f}/GPU-hour")
    for r in explanation.rejections:
        where = r.cluster if r.pool is None else f"{r.cluster}/{r.pool}"
        lines.append(f"  rejected {where}: {r.reason}: {r.message}")
    return lines


def ending_line(placement: PlacementOut) -> str:
    p = placement
    return (
        f"Placement {p.id} on {p.cluster}/{p.pool} is {p.state.value} ({p.end_reason or '-'}): "
        f"{(p.gpu_hours or 0.0):.4f} GPU-hours, cost {(p.cost or 0.0):.4f}"
    )
