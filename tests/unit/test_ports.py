"""Ports the launcher hands its services: free, distinct, and out of outgoing connections' way."""

from __future__ import annotations

import socket

import pytest

from k0maru_cli import _stack
from k0maru_cli._stack import free_port


def test_ports_are_distinct_and_outside_the_ephemeral_range():
    """A port-0 pick lies in the range the kernel also gives outgoing connections: one of them
    took an offload service's port between the pick and its bind, and `up` failed."""
    low, high = _stack._ephemeral_range()
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert all(not low <= p <= high for p in ports)
    for port in ports[:20]:  # each can be bound now
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_not_handed_out(monkeypatch):
    """With only that port left to pick from, the port a listener holds is refused each time
    and the kernel picks one."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        monkeypatch.setattr(_stack, "_ephemeral_range", lambda: (taken + 1, 65_535))
        monkeypatch.setattr(_stack, "LOWEST_PORT", taken)
        monkeypatch.setattr(_stack, "MIN_RANGE", 0)
        assert free_port() != taken


def test_a_stopped_consoles_lingering_connections_do_not_hold_its_port():
    """The console closed its browser connections first at the stop: they stay in TIME_WAIT on
    its port for a minute. `k0maru up --port P` right after failed with "in use" (and without
    --port the console moved to 7879), though uvicorn binds with SO_REUSEADDR and would have
    bound it. A listener still holds it."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()  # the server side closes first: its end lingers in TIME_WAIT
        client.recv(1)
        client.close()
    assert not _stack._bindable("127.0.0.1", port)  # a plain bind is refused while it lingers
    assert _stack.console_port("127.0.0.1", port) == port
    with socket.socket() as listener:  # another stack's console, as uvicorn binds it
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
        with pytest.raises(_stack.StartupError, match="is in use"):
            _stack.console_port("127.0.0.1", port)


def test_a_second_service_on_a_port_in_use_is_refused():
    """gRPC's servers set SO_REUSEPORT: a second scanner (another folder's, a unit file copied)
    bound a port a scanner held, the kernel split connections between them, and a retriever that
    reached the wrong one emptied the team's index. Now the second bind fails, naming the address."""
    from k0maru_common._server import GrpcService

    first = GrpcService("k0maru.v1.Scanner", "127.0.0.1:0", token="t")
    first.server.start()
    try:
        with pytest.raises(OSError, match=f"cannot bind gRPC address {first.address} \\(in use"):
            GrpcService("k0maru.v1.Scanner", first.address, token="t")
    finally:
        first.server.stop(None)
