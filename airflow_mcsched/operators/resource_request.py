"""What a step asks for, from the DAG author's words: `resource_ask=` and/or keyword fields (`gpus=8`).

Operators and sensors take the same fields as the service's `ResourceAsk` (plus `expected_duration`
as a timedelta), either bundled in `resource_ask` or directly as keyword arguments, which win. They
are kept as one plain mapping so Airflow can template and serialize them, and checked when the
DAG is parsed so a typo fails the import, not the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pydantic import ValidationError

from airflow_mcsched.service.schemas import ResourceAsk

DURATION_ALIAS = "expected_duration"
RESOURCE_FIELDS = frozenset(ResourceAsk.model_fields) | {DURATION_ALIAS}


def pop_resource_fields(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Take the resource fields out of an operator's keyword arguments; the rest are Airflow's."""
    return {name: kwargs.pop(name) for name in list(kwargs) if name in RESOURCE_FIELDS}


def merge_resource_fields(bundled: ResourceAsk | Mapping[str, Any] | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """One mapping of the ask: the bundled ask first, keyword fields over it, durations in seconds."""
    base = bundled.model_dump(exclude_unset=True) if isinstance(bundled, ResourceAsk) else dict(bundled or {})
    merged = {**base, **fields}
    if DURATION_ALIAS in merged:
        duration = merged.pop(DURATION_ALIAS)
        merged["expected_duration_seconds"] = duration.total_seconds() if isinstance(duration, timedelta) else duration
    return merged


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(_has_template(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_template(v) for v in value)
    return False


def validated_ask(fields: Mapping[str, Any], *, single_pod: bool = True) -> ResourceAsk:
    """The validated ask; a ValueError names each wrong field."""
    try:
        ask = ResourceAsk.model_validate(dict(fields))
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'resource_ask'}: {e['msg']}" for e in err.errors())
        raise ValueError(f"invalid resource request: {problems}") from None
    if single_pod and ask.pods != 1:
        raise ValueError(
            f"pods={ask.pods}: a KubernetesPodOperator step runs one pod; ask for more GPUs per pod instead"
        )
    return ask


def check_at_parse_time(fields: Mapping[str, Any], *, single_pod: bool = True) -> None:
    """Validate now unless a field is still a Jinja template (then at run time)."""
    if not _has_template(fields):
        validated_ask(fields, single_pod=single_pod)
