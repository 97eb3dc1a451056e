"""BackgroundWorker: a failing loop restarts with backoff, and one that keeps failing gives up loudly."""

from __future__ import annotations

import threading

from k0maru_common import BackgroundWorker
from tests.conftest import wait_for


def test_failing_loop_restarts_and_reports_why():
    runs: list[int] = []
    done = threading.Event()

    def body(stop: threading.Event) -> None:
        runs.append(1)
        if len(runs) < 3:
            raise RuntimeError(f"boom {len(runs)}")
        done.set()
        stop.wait()

    worker = BackgroundWorker("loop", body, first_backoff_s=0.01)
    worker.start()
    try:
        assert done.wait(30)
        health = worker.health()
        assert (health.state, health.restarts, health.last_error) == ("running", 2, "RuntimeError: boom 2")
        assert worker.alive
    finally:
        worker.stop()
    assert worker.health().state == "stopped" and not worker.alive


def test_loop_that_keeps_failing_gives_up_with_the_reason():
    reasons: list[str] = []

    def body(stop: threading.Event) -> None:
        raise OSError("disk on fire")

    worker = BackgroundWorker("loop", body, reasons.append, max_failures=3, first_backoff_s=0.01)
    worker.start()
    wait_for(lambda: bool(reasons))
    assert reasons == ["loop failed 3 times in a row; last: OSError: disk on fire"]
    assert worker.health().state == "failed" and not worker.alive


def test_loop_that_returns_unasked_counts_as_a_failure():
    reasons: list[str] = []
    worker = BackgroundWorker("loop", lambda stop: None, reasons.append, max_failures=2, first_backoff_s=0.01)
    worker.start()
    wait_for(lambda: bool(reasons))
    assert "ended without being asked to stop" in reasons[0]
