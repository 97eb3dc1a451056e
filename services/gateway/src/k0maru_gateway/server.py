"""Gateway service: the HTTP console on uvicorn, plus a gRPC health endpoint for orchestration."""

from __future__ import annotations

import logging
import threading
import time

import uvicorn

from k0maru_common import GrpcService

from ._clients import StackClient
from ._console import Prices, build_console
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
    return StackClient(str(settings.vault), addresses)


def run(settings: GatewaySettings) -> None:
    client = stack_client(settings)
    service = GrpcService("k0maru.v1.Gateway", settings.grpc_addr)
    service.start()
    prices = Prices(settings.price_per_mtok, settings.price_currency)
    app = build_console(client, settings.console_token, settings.events_addr, prices)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=settings.http_host,
            port=settings.http_port,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )  # open event streams must not hold a stop
    )

    def mark_serving() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.02)
        if server.started:
            service.set_serving(True)
            log.info("console on http://%s:%d/", settings.http_host, settings.http_port)

    threading.Thread(target=mark_serving, daemon=True).start()
    try:
        server.run()  # handles SIGTERM/SIGINT itself
    finally:
        service.request_stop()
        service.wait_for_termination()
        client.close()
