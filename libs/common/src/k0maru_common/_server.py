"""gRPC server helper: stock health service, one error mapping, graceful SIGTERM shutdown.

Lifecycle: `GrpcService(...)` binds the port with health NOT_SERVING; the service registers
its servicers, opens its resources and calls `set_serving(True)` only when it can do its job;
`wait_for_termination()` blocks until SIGTERM/SIGINT, then health goes NOT_SERVING, the
server stops with a grace period, and the caller closes its resources.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from ._auth import (
    CHANNEL_OPTIONS,
    TokenAuthInterceptor,
    env_token,
    is_loopback_address,
    open_channel,
    server_credentials,
)
from ._errors import K0Error
from ._process import stop_signals
from ._validation import check_request

# How soon a wait notices a stop at the latest. A stop wakes waits at once through a pipe: the
# signal's own C-level handler writes to it (`signal.set_wakeup_fd`), whichever thread the kernel
# handed the signal to; `request_stop` and `fail` write to it too. This bound is for a process
# whose wakeup fd another library holds, and for a second thread waiting at the same time.
STOP_POLL_S = 0.2

KEEPALIVE_SERVER_OPTIONS = [
    # clients that fail over between workers ping every second or two (KEEPALIVE_CLIENT_OPTIONS);
    # gRPC's default would answer such pings with GOAWAY "too many pings"
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 1000),
    ("grpc.keepalive_permit_without_calls", 1),
    # a starved client (2 cores, embedders busy) fires late timers back to back; without this a
    # few early pings still earned GOAWAY "too_many_pings" and the client throttled its keepalive
    # to 16–32 s, which is exactly the failover it exists for
    ("grpc.http2.max_ping_strikes", 0),
]
KEEPALIVE_CLIENT_OPTIONS = [
    # a worker whose host vanished (cable cut, no RST) is noticed within ~3 s, so round robin
    # stops sending it calls that could only time out
    ("grpc.keepalive_time_ms", 2000),
    ("grpc.keepalive_timeout_ms", 1000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
ROUND_ROBIN_CONFIG = '{"loadBalancingConfig":[{"round_robin":{}}]}'
"""gRPC service config that spreads calls over every address of a target (embedder workers)."""

HEALTH_NAMES = {
    "scanner": "k0maru.v1.Scanner",
    "embedder": "k0maru.v1.Embedder",
    "retriever": "k0maru.v1.Retriever",
    "offload": "k0maru.v1.Offload",
    "gateway": "k0maru.v1.Gateway",
}
"""The name each service registers with the stock gRPC health service."""


def health_name(process: str) -> str:
    """Health service name of a launcher process name ("embedder-2" → k0maru.v1.Embedder)."""
    return HEALTH_NAMES["embedder" if process.startswith("embedder") else process]


def balanced_target(address: str) -> str:
    """A gRPC target for one address or several: "10.0.0.5:50053,10.0.0.6:50053" → ipv4:…
    (use it with ROUND_ROBIN_CONFIG); a name (`dns:///retriever:50053`) or one address as it is."""
    if "," in address and not address.startswith(("ipv4:", "ipv6:", "dns:")):
        return "ipv4:" + ",".join(a.strip() for a in address.split(","))
    return address


def embedder_target(addresses: list[str]) -> str:
    """A gRPC target naming every embedder worker (use it with ROUND_ROBIN_CONFIG)."""
    return balanced_target(",".join(addresses))


log = logging.getLogger(__name__)


MAX_DETAILS_CHARS = 2000  # a status travels in trailers: an echoed 1 MB input would break the stream


class ErrorMappingInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Validates every request (`check_request`), then maps K0Error to its status code, with
    the message cut to a size trailers can carry; anything else becomes INTERNAL with a
    logged traceback."""

    def __init__(self, service: str) -> None:
        self._service = service

    def _abort(self, exc: Exception, context: grpc.ServicerContext, method: str) -> None:
        if isinstance(exc, K0Error):
            details = str(exc)
            if len(details) > MAX_DETAILS_CHARS:
                details = details[:MAX_DETAILS_CHARS] + f"… ({len(details)} characters)"
            context.abort(grpc.StatusCode[exc.code], details)
        log.exception("%s %s failed", self._service, method)
        context.abort(grpc.StatusCode.INTERNAL, f"internal error in {self._service} {method}")

    def intercept_service(self, continuation: Callable[..., Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        method = details.method
        if handler.unary_unary:
            inner_uu = handler.unary_unary

            def unary_unary(request: Any, context: grpc.ServicerContext) -> Any:
                try:
                    check_request(request)
                    return inner_uu(request, context)
                except Exception as exc:  # mapped once, here
                    self._abort(exc, context, method)

            return grpc.unary_unary_rpc_method_handler(
                unary_unary, handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream:
            inner_us = handler.unary_stream

            def unary_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                try:
                    check_request(request)
                    yield from inner_us(request, context)
                except Exception as exc:
                    self._abort(exc, context, method)

            return grpc.unary_stream_rpc_method_handler(
                unary_stream, handler.request_deserializer, handler.response_serializer
            )
        return handler


class GrpcService:
    """One service's gRPC server with the stock health service under its own name."""

    def __init__(self, name: str, address: str, max_workers: int = 16, token: str | None = None) -> None:
        """`token`: when set, every call but health checks must carry it (TokenAuthInterceptor);
        an address beyond loopback is refused without one. None reads `K0_GRPC_TOKEN`, so that no
        service can forget it; services pass `settings.grpc_token`."""
        self.name = name
        if token is None:
            token = env_token("K0_GRPC_TOKEN")
        if not token and not is_loopback_address(address):
            raise SystemExit(f"{name}: gRPC address {address} is not loopback: set K0_GRPC_TOKEN")
        interceptors: list[grpc.ServerInterceptor] = [TokenAuthInterceptor(token)] if token else []
        self.server = grpc.server(
            ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name),
            interceptors=[*interceptors, ErrorMappingInterceptor(name)],
            # a port in use is an error: with gRPC's default SO_REUSEPORT a second service bound it
            # too and the kernel split connections between them (a stray scanner of another folder
            # on a retriever's scanner port emptied the team's index at its next reconcile)
            options=[*CHANNEL_OPTIONS, *KEEPALIVE_SERVER_OPTIONS, ("grpc.so_reuseport", 0)],
        )
        self._health = health.HealthServicer(experimental_non_blocking=True)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self.server)
        self.set_serving(False)
        credentials = server_credentials()  # TLS only, when K0_GRPC_TLS_CERT/KEY are set
        try:
            self.port = (
                self.server.add_secure_port(address, credentials)
                if credentials is not None
                else self.server.add_insecure_port(address)
            )
        except RuntimeError:  # grpcio raises where it used to return 0
            self.port = 0
        if self.port == 0:
            raise OSError(f"{name}: cannot bind gRPC address {address} (in use by another process, or not this host's)")
        host = address.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"
        self._stop = threading.Event()
        self._signalled = False  # set by the signal handler; `_stop` follows at the next wake
        self._wake_r, self._wake_w = os.pipe()  # readable once a stop is asked (see STOP_POLL_S)
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.failure = ""  # why the service gave up, when it did

    def fail(self, reason: str) -> None:
        """A part the service cannot work without died for good: NOT_SERVING now, then stop,
        so that the process exits non-zero and its supervisor starts a fresh one."""
        log.error("%s gives up: %s", self.name, reason)
        self.failure = reason
        self.set_serving(False)
        self.request_stop()

    def exit_if_failed(self) -> None:
        """After the server stopped: exit with status 1 and the reason when `fail` was called."""
        if self.failure:
            raise SystemExit(f"{self.name}: {self.failure}")

    def set_serving(self, serving: bool) -> None:
        if serving and self.failure:
            return  # a service that gave up never claims to serve again
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for service in ("", self.name):
            self._health.set(service, status)

    def start(self) -> None:
        self.server.start()
        log.info("%s listening on %s", self.name, self.address)

    def __enter__(self) -> GrpcService:
        self.install_signal_handlers()
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Whatever ends the service (a stop request, a failed start), the server stops too:
        its non-daemon threads would otherwise keep the process alive."""
        self.request_stop()
        self.set_serving(False)
        self.server.stop(0).wait()
        with contextlib.suppress(ValueError):  # not the main thread: it never took the wakeup fd
            if (held := signal.set_wakeup_fd(-1)) not in (-1, self._wake_w):
                signal.set_wakeup_fd(held)  # not ours: given back

    def install_signal_handlers(self) -> None:
        """SIGTERM, SIGINT and SIGHUP (the terminal running `k0maru up` closed; not when started
        with it ignored, as `nohup` does) request a stop. The handler only sets a flag: it runs in
        the main thread between two bytecodes, possibly while that thread holds `_stop`'s own lock
        (inside `Event.wait`), so `_stop.set()` there could deadlock. Waits poll the flag."""

        def on_signal(_signum: int, _frame: object) -> None:
            self._signalled = True

        for sig in stop_signals():
            signal.signal(sig, on_signal)
        with contextlib.suppress(ValueError):  # not the main thread: waits poll
            if (held := signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)) != -1:
                signal.set_wakeup_fd(held)  # another library's (an event loop's): waits poll

    def request_stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(BlockingIOError):  # full: a byte is there already
            os.write(self._wake_w, b"s")

    @property
    def stopping(self) -> bool:
        return self._signalled or self._stop.is_set()

    def sleep(self, seconds: float | None) -> bool:
        """Wait up to `seconds` (None: until a stop); True as soon as a stop was requested.

        Waits on the wake pipe, in slices of STOP_POLL_S. A signal is not guaranteed to interrupt
        the main thread's wait: the kernel may hand it to any thread (it did, every time, to an
        embedder that had been stopped with SIGSTOP and continued), and Python then runs the
        handler only when the main thread next runs Python code. A wait with no end ignored
        SIGTERM for good; a wait in slices alone noticed it 0.1 s late on average, in each of the
        stack's services one after the other."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            if self._signalled:
                self._stop.set()
            if self._stop.is_set():
                return True  # the pipe stays readable: every other wait wakes too
            left = STOP_POLL_S if deadline is None else min(STOP_POLL_S, deadline - time.monotonic())
            if select.select([self._wake_r], [], [], max(left, 0.0))[0] and not (
                self._signalled or self._stop.is_set()
            ):
                with contextlib.suppress(BlockingIOError):  # another signal's byte: not a stop
                    os.read(self._wake_r, 512)
            if deadline is not None and time.monotonic() >= deadline:
                return self._signalled or self._stop.is_set()

    def wait_for_termination(self, grace_s: float = 3.0) -> None:
        """Block until a stop is requested, then go NOT_SERVING and stop gracefully."""
        self.sleep(None)
        self.set_serving(False)
        self.server.stop(grace_s).wait()
        log.info("%s stopped", self.name)


def wait_until_serving(address: str, service: str, timeout_s: float) -> bool:
    """Poll a server's health endpoint until it reports SERVING (True) or time runs out."""
    import time

    deadline = time.monotonic() + timeout_s
    with open_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=1.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return True
            except grpc.RpcError:
                pass
            time.sleep(0.05)
    return False


# How long a probe (a container's health check, `k0maru status`) gives a service to answer: a busy but
# healthy service missed a 1 s answer at load ≈ 18
PROBE_TIMEOUT_S = 3.0


def health_state(address: str, service: str, timeout_s: float = 1.0) -> str:
    """SERVING, NOT_SERVING, UNKNOWN, or UNREACHABLE (of the first that answers, for a comma list)."""
    with open_channel(balanced_target(address)) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout_s
            )
        except grpc.RpcError:
            return "UNREACHABLE"
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
