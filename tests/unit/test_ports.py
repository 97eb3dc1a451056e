"""Ports the launcher hands its services: free, distinct, and out of outgoing connections' way."""

from __future__ import annotations

import socket

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
