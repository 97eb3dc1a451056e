"""StackClient: gRPC stubs for one running stack (used by the gateway and the CLI).

Search modes are named here once ("hybrid", "bm25", "vector" ↔ the proto enum); failures come
back as K0Error with the server's message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

from k0maru.v1 import (
    embedder_pb2_grpc,
    offload_pb2_grpc,
    retriever_pb2,
    retriever_pb2_grpc,
    scanner_pb2_grpc,
)

from ._auth import open_channel
from ._errors import error_from_rpc
from ._limits import SEARCH_MODE_NAMES
from ._server import HEALTH_NAMES, KEEPALIVE_CLIENT_OPTIONS, ROUND_ROBIN_CONFIG, balanced_target, embedder_target

T = TypeVar("T")
SEARCH_MODES: dict[str, retriever_pb2.SearchMode] = {
    name: getattr(retriever_pb2, f"SEARCH_MODE_{name.upper()}") for name in SEARCH_MODE_NAMES
}


RETRIEVER_CONFIG = json.dumps(
    {
        **json.loads(ROUND_ROBIN_CONFIG),
        "methodConfig": [
            {
                "name": [{"service": HEALTH_NAMES["retriever"]}],
                "retryPolicy": {  # a call that met a retriever going away is tried on another one
                    "maxAttempts": 3,
                    "initialBackoff": "0.1s",
                    "maxBackoff": "1s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ],
    }
)
"""Reads spread over every retriever of a target (`dns:///retriever:50053` resolving to several
hosts, or a comma list of IP:port); all of them follow the same scanner and answer alike."""


def mode_name(mode: int) -> str:
    """SEARCH_MODE_HYBRID → "hybrid"."""
    return str(retriever_pb2.SearchMode.Name(mode)).removeprefix("SEARCH_MODE_").lower()


@dataclass
class StackClient:
    """Stubs for one stack: `addresses` maps scanner, retriever, offload, embedder-N to host:port;
    `token` is the stack's shared gRPC token (K0_GRPC_TOKEN when not given)."""

    vault: str
    addresses: dict[str, str]
    token: str = field(default_factory=lambda: os.environ.get("K0_GRPC_TOKEN", ""))

    def __post_init__(self) -> None:
        self._channels: list[grpc.Channel] = []
        self.scanner = scanner_pb2_grpc.ScannerStub(self._channel(self.addresses["scanner"]))
        self.retriever = retriever_pb2_grpc.RetrieverStub(
            self._channel(balanced_target(self.addresses["retriever"]), RETRIEVER_CONFIG, KEEPALIVE_CLIENT_OPTIONS)
        )
        self.offload = offload_pb2_grpc.OffloadStub(self._channel(self.addresses["offload"]))
        embedders = [a for n, a in sorted(self.addresses.items()) if n.startswith("embedder")]
        self.embedder = (
            embedder_pb2_grpc.EmbedderStub(self._channel(embedder_target(embedders), ROUND_ROBIN_CONFIG))
            if embedders
            else None
        )

    def _channel(
        self, target: str, service_config: str | None = None, extra: list[tuple[str, Any]] | None = None
    ) -> grpc.Channel:
        options: list[tuple[str, Any]] = [("grpc.service_config", service_config)] if service_config else []
        options += extra or []
        channel = open_channel(target, self.token, options)
        self._channels.append(channel)
        return channel

    def call(self, method: Callable[..., T], request: Any, timeout: float = 30.0) -> T:
        """Call a unary RPC; failures come back as K0Error with the server's message."""
        try:
            return method(request, timeout=timeout)
        except grpc.RpcError as exc:
            raise error_from_rpc(exc) from exc

    def close(self) -> None:
        for channel in self._channels:
            channel.close()

    def __enter__(self) -> StackClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
