"""Refuse request bodies above a size limit before they are read, parsed or stored.

The placement API's largest honest body (a submit with every list at its bound) is a few tens of
KiB; a body of megabytes is a mistake or an attack, and JSON parsing it would cost the API server
memory and time that other callers wait for. A declared Content-Length over the limit is refused
at once; a streamed (chunked) body is counted as it arrives and refused when it passes the limit
(the app's own answer to the broken read is replaced by the 413).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 256 * 1024


class BodyTooLarge(Exception):
    pass


class BodySizeLimit:
    """ASGI middleware: 413 with a JSON `detail` (FastAPI's shape) for bodies over `max_bytes`."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        received = 0
        too_large = refused = False

        async def counting_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    too_large = True
                    raise BodyTooLarge
            return message

        async def replacing_send(message: Message) -> None:
            """FastAPI turns a failed body read into its own 400; the answer here is our 413."""
            nonlocal refused
            if not too_large:
                await send(message)
            elif message["type"] == "http.response.start" and not refused:
                refused = True
                await self._refuse(send)

        try:
            await self.app(scope, counting_receive, replacing_send)
        except BodyTooLarge:
            if not refused:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body: dict[str, Any] = {
            "detail": f"request body larger than {self.max_bytes} bytes; the placement API takes small JSON bodies"
        }
        payload = json.dumps(body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})
