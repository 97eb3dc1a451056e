"""ChangeWatcher: file events → incremental scans, in fixed collection windows.

The first event of a window arms a deadline `window_s` ahead; later events join the window
without moving it (VCP's snapshot used a sliding debounce that a steady stream postpones
forever). The window flushes early once it holds `max_files` paths. A scan is a stat-only
walk, so flushing a window rescans everything cheaply and catches renames and deletes.
A periodic safety rescan covers events the OS dropped.

The loop runs in a BackgroundWorker: when the OS watcher fails (watchfiles raises on a file
name that is not valid UTF-8, on a folder it cannot read, ...) the events of that moment are
lost, so the loop scans and starts watching again, with backoff; only a loop that keeps
failing makes the scanner give up (NOT_SERVING, exit, restarted by its supervisor).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import watchfiles

from k0maru_common import BackgroundWorker, WorkerHealth

from ._scanner import IncrementalScanner

log = logging.getLogger(__name__)


class ChangeWatcher:
    def __init__(
        self,
        scanner: IncrementalScanner,
        window_s: float,
        max_files: int,
        rescan_interval_s: float,
        on_give_up: Callable[[str], None] | None = None,
    ) -> None:
        self._scanner = scanner
        self._window_s = window_s
        self._max_files = max_files
        self._rescan_s = rescan_interval_s
        self._worker = BackgroundWorker("watcher", self._watch, on_give_up)

    def start(self) -> None:
        self._worker.start()

    def stop(self) -> None:
        self._worker.stop()

    @property
    def running(self) -> bool:
        return self._worker.alive

    def health(self) -> WorkerHealth:
        return self._worker.health()

    def _wanted(self, path: str) -> bool:
        try:
            rel = Path(path).relative_to(self._scanner.vault)
        except ValueError:
            return False
        return not any(self._scanner.rules.skip_dir(part) for part in rel.parts[:-1])

    def _watch(self, stop: threading.Event) -> None:
        pending: set[str] = set()
        deadline: float | None = None
        last_scan = time.monotonic()
        watching = False
        for changes in watchfiles.watch(
            self._scanner.vault,
            stop_event=stop,
            step=20,
            debounce=int(self._window_s * 1000),
            yield_on_timeout=True,
            rust_timeout=100,
            recursive=True,
            ignore_permission_denied=True,
        ):
            if not watching:  # the OS watch is in place (its first answer, at the latest after
                # rust_timeout): now scan whatever happened while nobody watched (before this
                # loop started, or restarted). Scanning before the watch existed missed the
                # changes in between until the periodic rescan.
                watching = True
                self._scan()
                pending.clear()
                deadline, last_scan = None, time.monotonic()
                continue
            now = time.monotonic()
            fresh = {path for _change, path in changes if self._wanted(path)}
            if fresh:
                pending |= fresh
                if deadline is None:
                    deadline = now + self._window_s
            due = deadline is not None and (now >= deadline or len(pending) >= self._max_files)
            if due or now - last_scan >= self._rescan_s:
                self._scan()
                pending.clear()
                deadline, last_scan = None, time.monotonic()

    def _scan(self) -> None:
        """A failing scan ends this run of the loop: the worker records why and retries with backoff."""
        result = self._scanner.scan()
        changed = result.added + result.modified + result.deleted + result.renamed
        if changed:
            log.info(
                "scan: +%d ~%d -%d >%d in %.1f ms",
                result.added,
                result.modified,
                result.deleted,
                result.renamed,
                result.ms,
            )
