"""Gateway service: the HTTP console on uvicorn, plus a gRPC health endpoint for orchestration.

The MCP face of the gateway is `_mcp.build_mcp` / `serve_mcp_stdio`, run by `k0maru mcp`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
import time
from dataclasses import dataclass
from types import FrameType

import uvicorn

from k0maru_common import HEALTH_NAMES, GrpcService, StackClient, stop_signals

from ._console import Prices, allowed_hosts, build_console
from .config import GatewaySettings

log = logging.getLogger(__name__)


def stack_client(settings: GatewaySettings) -> StackClient:
    addresses = {
        "scanner": settings.scanner_addr,
        "retriever": settings.retriever_addr,
        "offload": settings.offload_addr,
    }
    if settings.embedder_target:
        addresses["embedder"] = settings.embedder_target
    return StackClient(str(settings.vault), addresses, settings.grpc_token)


class ConsoleServer(uvicorn.Server):
    """uvicorn's server, stopping as soon as it is asked. uvicorn's main loop looks at
    `should_exit` every 0.1 s, and its shutdown waits 0.1 s for open connections to take their
    close even when there are none: 0.15 s of every stop of the stack on average, when the
    scanner and Valkey wait for the gateway to be gone (`Launcher.stop`)."""

    _loop: asyncio.AbstractEventLoop | None = None
    _tick: asyncio.Future[None] | None = None  # the main loop's wait for its next tick

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self.wake()

    def exit_soon(self) -> None:
        self.should_exit = True
        self.wake()

    def wake(self) -> None:
        """End the main loop's wait now (safe in a signal handler: the loop's own self-pipe)."""
        if self._loop is not None and self._tick is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(_settle, self._tick)

    async def main_loop(self) -> None:
        """uvicorn's loop of ticks (the Date header each second, `should_exit`), each wait as
        cheap as its `asyncio.sleep(0.1)` but ended by `wake`."""
        self._loop = loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            self._tick = tick = loop.create_future()
            timer = loop.call_later(0.1, _settle, tick)
            await tick
            timer.cancel()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.server_state.connections or self.server_state.tasks:
            await super().shutdown(sockets)  # open connections: uvicorn's graceful close
            return
        for server in self.servers:  # nothing open: uvicorn's steps, less its wait for connections
            server.close()
        for sock in sockets or []:
            sock.close()
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@dataclass
class GatewayApp:
    """The console's HTTP server, the health endpoint, and the gRPC channels they use."""

    settings: GatewaySettings
    service: GrpcService
    client: StackClient
    http: ConsoleServer

    def mark_serving_when_listening(self) -> None:
        while not self.http.started and not self.http.should_exit:
            time.sleep(0.02)
        if self.http.started:
            self.service.set_serving(True)
            log.info("console on http://%s:%d/", self.settings.http_host, self.settings.http_port)

    def close(self) -> None:
        self.client.close()


def build_server(settings: GatewaySettings) -> GatewayApp:
    """Bind the health endpoint (NOT_SERVING) and build the console; nothing listens on HTTP yet."""
    client = stack_client(settings)
    service = GrpcService(HEALTH_NAMES["gateway"], settings.grpc_addr, token=settings.grpc_token)
    hosts = allowed_hosts(settings.http_host, settings.http_allowed_hosts)
    prices = Prices(settings.price_per_mtok, settings.price_currency)
    console = build_console(client, settings.console_token, settings.events_addr, hosts, prices)
    http = ConsoleServer(
        uvicorn.Config(
            console,
            host=settings.http_host,
            port=settings.http_port,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,  # open event streams must not hold a stop
        )
    )
    return GatewayApp(settings, service, client, http)


def run(settings: GatewaySettings) -> None:
    app = build_server(settings)
    # uvicorn takes SIGTERM/SIGINT while it runs, then restores these handlers and raises the
    # signal again: with the default handler that killed the process before `finally` ran
    app.service.install_signal_handlers()
    if signal.SIGHUP in stop_signals():  # uvicorn takes SIGINT and SIGTERM only
        signal.signal(signal.SIGHUP, lambda _s, _f: app.http.exit_soon())
    app.service.start()
    threading.Thread(target=app.mark_serving_when_listening, daemon=True).start()
    try:
        app.http.run()  # handles SIGTERM/SIGINT itself, then raises it again (see above)
    finally:
        app.service.request_stop()
        app.service.wait_for_termination()
        app.close()
