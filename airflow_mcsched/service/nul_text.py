"""Refuse text with NUL characters (U+0000) in a request's path, query or JSON body with a 422.

PostgreSQL cannot store or even compare a NUL in text (psycopg2 raises before the statement is
sent), so a NUL that reached a lookup or an insert was a 500 there while SQLite took it. No honest
name, id or message holds one; refusing it at the edge gives the same answer on every database,
in FastAPI's validation shape with the field in `loc`.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

NUL = "\x00"
_MESSAGE = "text must not contain NUL characters (\\u0000)"
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")  # an escaped NUL, not an escaped backslash before 'u0000'


class RefuseNulText:
    """ASGI middleware: 422 naming where a NUL is; everything else passes through unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loc = _nul_in_path_or_query(scope)
        if loc is not None:
            await _refuse(send, loc)
            return
        body = await _read_body(receive)
        loc = _nul_in_body(body)
        if loc is not None:
            await _refuse(send, loc)
            return
        replayed = False

        async def replay() -> Message:
            """The body read here, then whatever the server says next (a disconnect)."""
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _read_body(receive: Receive) -> bytes:
    """The whole body (its size is capped by `BodySizeLimit`, outside this middleware)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _nul_in_path_or_query(scope: Scope) -> list[Any] | None:
    if NUL in scope.get("path", ""):
        return ["path"]
    for name, value in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
        if NUL in name or NUL in value:
            return ["query", name]
    return None


def _nul_in_body(body: bytes) -> list[Any] | None:
    if b"\x00" in body:
        return ["body"]
    if not _JSON_NUL.search(body):
        return None
    try:
        doc = json.loads(body)
    except ValueError:
        return None  # not JSON: the route's own validation answers
    found = _nul_in(doc)
    return None if found is None else ["body", *found]


def _nul_in(value: Any) -> list[Any] | None:
    """Where in a parsed JSON document a string holds a NUL (the key itself for a bad key)."""
    if isinstance(value, str):
        return [] if NUL in value else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and NUL in key:
            return [key]
        inner = _nul_in(item)
        if inner is not None:
            return [key, *inner]
    return None


async def _refuse(send: Send, loc: list[Any]) -> None:
    detail = [{"loc": loc, "msg": _MESSAGE, "type": "value_error"}]
    payload = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 422,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})
