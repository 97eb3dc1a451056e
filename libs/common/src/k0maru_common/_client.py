"""StackClient: gRPC stubs for one running stack (used by the gateway and the CLI).

Search modes are named here once ("hybrid", "bm25", "vector" ↔ the proto enum); failures come
back as K0Error with the server's message.
"""

from __future__ import annotations

import json
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

from ._auth import env_token, open_channel
from ._errors import DependencyFailed, error_from_rpc
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


# how gRPC's own UNAVAILABLE begins when no server answered (a service's own UNAVAILABLE, "still
# building its index", says more and is passed on as it is)
_TRANSPORT_FAILURES = (
    "connections to all backends failing",
    "failed to connect",
    "Socket closed",
    "Connection refused",
)


@dataclass
class StackClient:
    """Stubs for one stack: `addresses` maps scanner, retriever, offload, embedder-N to host:port;
    `token` is the stack's shared gRPC token (K0_GRPC_TOKEN when not given)."""

    vault: str
    addresses: dict[str, str]
    token: str = field(default_factory=lambda: env_token("K0_GRPC_TOKEN"))

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
        """Call a unary RPC; failures come back as K0Error with the server's message, and a call
        that got no answer in time names the service and its call (it said only "Deadline
        Exceeded" of a hung retriever)."""
        try:
            return method(request, timeout=timeout)
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            details = (exc.details() or "") if isinstance(exc, grpc.Call) else ""
            unreached = code == grpc.StatusCode.UNAVAILABLE and details.startswith(_TRANSPORT_FAILURES)
            if code == grpc.StatusCode.DEADLINE_EXCEEDED or unreached:
                path = getattr(method, "_method", b"")  # bytes, or str behind an interceptor
                service, _, rpc = (path.decode(errors="replace") if isinstance(path, bytes) else str(path)).rpartition(
                    "/"
                )
                name = service.rsplit(".", 1)[-1].lower() or "service"
                said = (
                    f"cannot be reached ({details})"
                    if unreached
                    else f"did not answer {rpc or 'the call'} in {timeout:g} s"
                )
                raise DependencyFailed(
                    f"the {name} {said}: busy, hung or stopped "
                    f"(`k0maru status` says which; its log is in the data dir's logs/)"
                ) from exc
            raise error_from_rpc(exc) from exc

    def close(self) -> None:
        for channel in self._channels:
            channel.close()

    def __enter__(self) -> StackClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
