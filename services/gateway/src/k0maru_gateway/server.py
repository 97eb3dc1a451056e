"""Gateway service: the HTTP console on uvicorn, plus a gRPC health endpoint for orchestration.

The MCP face of the gateway is `_mcp.build_mcp` / `serve_mcp_stdio`, run by `k0maru mcp`.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass

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


@dataclass
class GatewayApp:
    """The console's HTTP server, the health endpoint, and the gRPC channels they use."""

    settings: GatewaySettings
    service: GrpcService
    client: StackClient
    http: uvicorn.Server

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
    http = uvicorn.Server(
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
        signal.signal(signal.SIGHUP, lambda _s, _f: setattr(app.http, "should_exit", True))
    app.service.start()
    threading.Thread(target=app.mark_serving_when_listening, daemon=True).start()
    try:
        app.http.run()  # handles SIGTERM/SIGINT itself, then raises it again (see above)
    finally:
        app.service.request_stop()
        app.service.wait_for_termination()
        app.close()
