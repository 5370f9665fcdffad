"""Serve one virtual cluster over HTTP on 127.0.0.1, from a thread of the calling process.

The listening socket is bound before the server thread starts, so the URL is known at once and
early connections just wait in the backlog. The `refuse` fault closes that socket (clients get
"connection refused") and binds the same port again later.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
import threading
import time

import uvicorn

from airflow_mcsched.virtual.api import build_app
from airflow_mcsched.virtual.cluster import VirtualCluster

HOST = "127.0.0.1"
log = logging.getLogger(__name__)


def bind_socket(port: int = 0) -> socket.socket:
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only when the
    # protocol says TCP, and without it every answer waits ~40 ms for a delayed ACK (Nagle)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((HOST, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


class ClusterServer:
    """A `VirtualCluster` plus its uvicorn server; `start()` returns once it answers requests."""

    def __init__(self, cluster: VirtualCluster, port: int = 0) -> None:
        self.cluster = cluster
        self._sock = bind_socket(port)
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(
            build_app(cluster),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            timeout_keep_alive=30,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name=f"virtual-cluster-{cluster.name}", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reopen_timer: asyncio.TimerHandle | None = None
        self._reopening: asyncio.Future[None] | None = None
        cluster.faults.refuse_handler = self._refuse_threadsafe

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def _serve(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            await self._server.serve(sockets=[self._sock])

        asyncio.run(main())

    def start(self, timeout: float = 10.0) -> ClusterServer:
        self.cluster.start()
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"virtual cluster {self.cluster.name!r} did not start")
            time.sleep(0.002)
        return self

    def request_stop(self) -> None:
        """Begin shutting down; `join()` waits for it (stopping several servers at once is faster)."""
        self.cluster.stop()  # ends watches and log streams, so shutdown need not wait for them
        self._server.should_exit = True

    def join(self) -> None:
        self._thread.join(timeout=10)
        with contextlib.suppress(OSError):
            self._sock.close()

    def stop(self) -> None:
        self.request_stop()
        self.join()

    # --- the `refuse` fault ------------------------------------------------------------------------

    def _refuse_threadsafe(self, seconds: float | None) -> None:
        loop = self._loop
        if loop is None:
            raise RuntimeError("server not running")
        if threading.current_thread() is self._thread:
            self._refuse(seconds)
        else:
            asyncio.run_coroutine_threadsafe(self._refuse_async(seconds), loop).result(timeout=5)

    async def _refuse_async(self, seconds: float | None) -> None:
        self._refuse(seconds)

    def _refuse(self, seconds: float | None) -> None:
        if self._reopen_timer:
            self._reopen_timer.cancel()
            self._reopen_timer = None
        if seconds == 0:
            if self.cluster.faults.refusing:
                self._reopening = asyncio.ensure_future(self._reopen())
            return
        if not self.cluster.faults.refusing:
            self.cluster.faults.refusing = True
            for server in self._server.servers:
                server.close()
            self._server.servers = []
            for connection in list(self._server.server_state.connections):
                transport = getattr(connection, "transport", None)
                if transport is not None:
                    transport.abort()
            with contextlib.suppress(OSError):
                self._sock.close()
        if seconds is not None:
            loop = asyncio.get_running_loop()
            self._reopen_timer = loop.call_later(seconds, self._refuse, 0)

    async def _reopen(self) -> None:
        """Listen again on the same port, with uvicorn's own protocol for new connections."""
        if not self.cluster.faults.refusing:
            return
        self._sock = bind_socket(self.port)
        config = self._server.config
        factory = functools.partial(
            config.http_protocol_class,
            config=config,
            server_state=self._server.server_state,
            app_state=self._server.lifespan.state if hasattr(self._server, "lifespan") else {},
        )
        server = await asyncio.get_running_loop().create_server(factory, sock=self._sock, backlog=config.backlog)
        self._server.servers = [server]
        self.cluster.faults.refusing = False
