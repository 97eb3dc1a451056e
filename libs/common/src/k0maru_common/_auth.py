"""The shared gRPC token: servers require it, clients attach it, both from `K0_GRPC_TOKEN`.

Every call carries the metadata `authorization: Bearer <token>`. `TokenAuthInterceptor`
(installed by GrpcService whenever a token is configured) refuses any other call with
UNAUTHENTICATED; the stock health service stays open, so that probes (Docker, the launcher)
need no secret and learn nothing but SERVING / NOT_SERVING. A service whose gRPC address is
not loopback refuses to start without a token (K0Settings). `open_channel` is how every
k0maru client connects: it attaches the token when there is one.

The token is a bearer secret: over plaintext HTTP/2 it keeps other local users and other
containers out, not someone who can read the network. Across machines, turn on TLS:
`K0_GRPC_TLS_CERT` + `K0_GRPC_TLS_KEY` (PEM files: the server's certificate chain and private
key) make every GrpcService listen with TLS only; `K0_GRPC_TLS_CA` (a PEM bundle of the CAs
that signed the servers' certificates) makes every client channel (`open_channel`, health
checks included) use TLS and verify the server against it. The certificate must name the
address clients dial (a DNS or IP subject alternative name: `scanner`, `127.0.0.1`, …). Unset,
everything is plain, as before; a file that cannot be read stops the process with its name.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc

from ._limits import MAX_LOG_BYTES

HEADER = "authorization"
OPEN_PREFIXES = ("/grpc.health.v1.Health/",)
MAX_MESSAGE_BYTES = MAX_LOG_BYTES + 1024 * 1024  # the largest log fits in one message, with room
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # a service restarted by the supervisor is back within seconds: every client reconnects within
    # ~1 s of it instead of gRPC's default backoff (1 s growing to 120 s), during which calls fail at once
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


def env_token(variable: str) -> str:
    """A token from the environment, without the whitespace around it: a secret file's value ends
    in a newline (`echo … > file`, a k8s secret from a file), which gRPC metadata cannot carry;
    the service started, then every call failed with "Illegal header value"."""
    return os.environ.get(variable, "").strip()


def is_loopback_address(address: str) -> bool:
    """True for `127.0.0.1:0`, `localhost:50051`, `[::1]:7000`; False for `0.0.0.0:…`, `[::]:…`, names."""
    return is_loopback_host(address.rsplit(":", 1)[0] if ":" in address else address)


def is_loopback_host(host: str) -> bool:
    """True for a host alone that is loopback: `127.0.0.1`, `localhost`, `::1`, `[::1]`; False for
    `0.0.0.0`, `::` and other names (the console's bind address, the CLI's `--host`)."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _authorized(metadata: Any, expected: bytes) -> bool:
    for key, value in metadata or ():
        if key == HEADER:
            given = value.encode() if isinstance(value, str) else bytes(value)
            return hmac.compare_digest(given, expected)
    return False


class TokenAuthInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Refuses calls without `authorization: Bearer <token>` (UNAUTHENTICATED); health stays open."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(self, continuation: Callable[..., Any], details: Any) -> Any:
        if details.method.startswith(OPEN_PREFIXES) or _authorized(details.invocation_metadata, self._expected):
            return continuation(details)
        handler = continuation(details)
        if handler is None:
            return None

        def deny(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token (K0_GRPC_TOKEN)")

        def deny_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token (K0_GRPC_TOKEN)")
            yield from ()

        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(deny, handler.request_deserializer, handler.response_serializer)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                deny_stream, handler.request_deserializer, handler.response_serializer
            )
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(deny, handler.request_deserializer, handler.response_serializer)
        return grpc.stream_stream_rpc_method_handler(
            deny_stream, handler.request_deserializer, handler.response_serializer
        )


class _ClientCallDetails(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(self, base: Any, metadata: list[tuple[str, str]]) -> None:
        self.method = base.method
        self.timeout = base.timeout
        self.metadata = metadata
        self.credentials = base.credentials
        self.wait_for_ready = base.wait_for_ready
        self.compression = base.compression


class _TokenClientInterceptor(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
    grpc.StreamUnaryClientInterceptor,  # type: ignore[misc]
    grpc.StreamStreamClientInterceptor,  # type: ignore[misc]
):
    def __init__(self, token: str) -> None:
        self._pair = (HEADER, f"Bearer {token}")

    def _details(self, details: Any) -> _ClientCallDetails:
        return _ClientCallDetails(details, [*(details.metadata or ()), self._pair])

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Callable[..., Any], details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Callable[..., Any], details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


TLS_CERT_ENV = "K0_GRPC_TLS_CERT"
TLS_KEY_ENV = "K0_GRPC_TLS_KEY"
TLS_CA_ENV = "K0_GRPC_TLS_CA"


def _pem(variable: str) -> bytes:
    path = os.environ[variable]
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SystemExit(f"{variable}={path}: cannot read it ({exc.strerror or exc})") from None
    if b"-----BEGIN " not in data:
        raise SystemExit(f"{variable}={path}: not a PEM file")
    return data


def server_credentials() -> grpc.ServerCredentials | None:
    """TLS for a server when K0_GRPC_TLS_CERT and K0_GRPC_TLS_KEY are set (both or neither); else None."""
    cert, key = os.environ.get(TLS_CERT_ENV, ""), os.environ.get(TLS_KEY_ENV, "")
    if not cert and not key:
        return None
    if not (cert and key):
        missing = TLS_KEY_ENV if cert else TLS_CERT_ENV
        raise SystemExit(f"gRPC TLS needs both {TLS_CERT_ENV} and {TLS_KEY_ENV}: {missing} is not set")
    return grpc.ssl_server_credentials([(_pem(TLS_KEY_ENV), _pem(TLS_CERT_ENV))])


def channel_credentials() -> grpc.ChannelCredentials | None:
    """TLS for a client when K0_GRPC_TLS_CA is set (servers verified against that bundle); else None."""
    if not os.environ.get(TLS_CA_ENV, ""):
        return None
    return grpc.ssl_channel_credentials(root_certificates=_pem(TLS_CA_ENV))


def open_channel(target: str, token: str = "", options: list[tuple[str, Any]] | None = None) -> grpc.Channel:
    """A channel to a k0maru service (message limits set), carrying the shared token when there
    is one; TLS when K0_GRPC_TLS_CA is set."""
    all_options = [*CHANNEL_OPTIONS, *(options or [])]
    credentials = channel_credentials()
    channel = (
        grpc.secure_channel(target, credentials, options=all_options)
        if credentials is not None
        else grpc.insecure_channel(target, options=all_options)
    )
    return grpc.intercept_channel(channel, _TokenClientInterceptor(token)) if token else channel
