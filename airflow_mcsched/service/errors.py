"""422 answers in the one shape FastAPI's own validation uses (and the OpenAPI schema documents),
so a client reads every refusal the same way: a list of {loc, msg, type}, the field in `loc`."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import HTTPException, status


def field_problem(loc: Sequence[str | int], message: str) -> dict[str, object]:
    return {"loc": list(loc), "msg": message, "type": "value_error"}


def unprocessable(problems: Sequence[dict[str, object]]) -> HTTPException:
    return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=list(problems))


def body_problems(lines: Sequence[str], prefix: Sequence[str]) -> HTTPException:
    """Problems written as 'field.path: message' (the engine's and the store's way) under a body location."""
    problems = []
    for line in lines:
        field, _, message = line.partition(": ")
        problems.append(field_problem([*prefix, *field.split(".")], message or line))
    return unprocessable(problems)
