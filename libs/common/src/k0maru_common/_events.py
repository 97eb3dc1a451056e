"""The change-event envelope on ZeroMQ: multipart [topic, ChangeEvent bytes].

PUB/SUB drops messages (slow joiner, high-water mark), so every event carries `seq` and a
subscriber that sees a gap catches up through Scanner.Changes.
"""

from __future__ import annotations

import contextlib
import os

import zmq

from k0maru.v1 import common_pb2

TOPIC = b"k0.change"


class ChangePublisher:
    """Binds a PUB socket and publishes ChangeEvents."""

    def __init__(self, context: zmq.Context[zmq.Socket[bytes]], address: str) -> None:
        self._socket = context.socket(zmq.PUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.SNDHWM, 100_000)
        self._socket.bind(address)

    def publish(self, event: common_pb2.ChangeEvent) -> None:
        self._socket.send_multipart([TOPIC, event.SerializeToString()])

    def close(self) -> None:
        self._socket.close()


class ChangeSubscriber:
    """Connects a SUB socket to the scanner's publisher. `interrupt()` (from another thread)
    ends a `receive` waiting now and every later one at once: a stopping retriever's follower
    then stops without first waiting out its poll (0.1 s of every stop on average)."""

    def __init__(self, context: zmq.Context[zmq.Socket[bytes]], address: str) -> None:
        self._socket = context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.RCVHWM, 100_000)
        self._socket.setsockopt(zmq.SUBSCRIBE, TOPIC)
        self._socket.connect(address)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._poller = zmq.Poller()
        self._poller.register(self._socket, zmq.POLLIN)
        self._poller.register(self._wake_r, zmq.POLLIN)

    def receive(self, timeout_ms: int) -> common_pb2.ChangeEvent | None:
        """The next event, or None when nothing arrived within the timeout or after `interrupt()`."""
        ready = dict(self._poller.poll(timeout_ms))
        if self._wake_r in ready or self._socket not in ready:
            return None
        _topic, payload = self._socket.recv_multipart()
        event = common_pb2.ChangeEvent()
        event.ParseFromString(payload)
        return event

    def interrupt(self) -> None:
        with contextlib.suppress(BlockingIOError):  # full: it is readable anyway
            os.write(self._wake_w, b"x")

    def close(self) -> None:
        self._socket.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
