"""BackgroundWorker: a service's background loop that restarts itself, and says how it is doing.

A worker runs `body(stop)` in a daemon thread until `stop` is set. When the body raises (or
returns while nobody asked it to stop) the worker logs why, waits (0.5 s, doubling up to
30 s) and runs it again. After `max_failures` failures in a row (a run that lasted
`healthy_after_s` starts the count afresh) it gives up and calls `on_give_up(reason)`: the
service turns NOT_SERVING and exits, so that its supervisor (the launcher, Docker's restart
policy) starts a fresh process. A health check therefore never says SERVING over a dead loop.
`health()` is what status RPCs report (`k0maru.v1.WorkerHealth`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from k0maru.v1 import common_pb2

log = logging.getLogger(__name__)

STARTING, RUNNING, RESTARTING, FAILED, STOPPED = "starting", "running", "restarting", "failed", "stopped"


@dataclass(frozen=True)
class WorkerHealth:
    name: str
    state: str  # starting, running, restarting, failed, stopped
    restarts: int
    last_error: str  # "" while nothing went wrong

    def to_proto(self) -> common_pb2.WorkerHealth:
        return common_pb2.WorkerHealth(
            name=self.name, state=self.state, restarts=self.restarts, last_error=self.last_error
        )


class BackgroundWorker:
    def __init__(
        self,
        name: str,
        body: Callable[[threading.Event], None],
        on_give_up: Callable[[str], None] | None = None,
        *,
        max_failures: int = 5,
        first_backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        healthy_after_s: float = 60.0,
        wake: Callable[[], None] | None = None,
    ) -> None:
        """`wake`: ends a wait of the body's that `stop_event` alone does not (a blocking read on
        a socket), so that a stop does not wait it out; called from the stopping thread."""
        self.name = name
        self._body = body
        self._wake = wake
        self._on_give_up = on_give_up
        self._max_failures = max_failures
        self._first_backoff = first_backoff_s
        self._max_backoff = max_backoff_s
        self._healthy_after = healthy_after_s
        self.stop_event = threading.Event()
        self._state = STARTING
        self._restarts = 0
        self._last_error = ""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        """Ask the loop to stop (its waits end now), without waiting for it."""
        self.stop_event.set()
        if self._wake is not None:
            self._wake()

    def stop(self, timeout_s: float = 5.0) -> None:
        self.request_stop()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout_s)

    @property
    def alive(self) -> bool:
        """True while the loop runs or is about to run again; False once it stopped or gave up."""
        return self._thread.is_alive() and self._state in (STARTING, RUNNING, RESTARTING)

    def health(self) -> WorkerHealth:
        return WorkerHealth(self.name, self._state, self._restarts, self._last_error)

    def _run(self) -> None:
        failures = 0
        backoff = self._first_backoff
        while not self.stop_event.is_set():
            self._state = RUNNING
            started = time.monotonic()
            try:
                self._body(self.stop_event)
            except Exception as exc:  # any failure: logged, counted, retried (or given up below)
                log.exception("%s failed", self.name)
                reason = f"{type(exc).__name__}: {exc}"
            else:
                if self.stop_event.is_set():
                    break
                reason = "ended without being asked to stop"
                log.error("%s %s", self.name, reason)
            self._last_error = reason[:500]
            if time.monotonic() - started >= self._healthy_after:
                failures, backoff = 0, self._first_backoff
            failures += 1
            if failures >= self._max_failures:
                self._state = FAILED
                message = f"{self.name} failed {failures} times in a row; last: {self._last_error}"
                log.error("%s; giving up", message)
                if self._on_give_up is not None:
                    self._on_give_up(message)
                return
            self._state = RESTARTING
            self._restarts += 1
            log.warning("%s restarts in %.1f s (failure %d of %d)", self.name, backoff, failures, self._max_failures)
            if self.stop_event.wait(backoff):
                break
            backoff = min(backoff * 2, self._max_backoff)
        self._state = STOPPED
