"""ChangeWatcher: file events → incremental scans, in fixed collection windows.

The first event of a window arms a deadline `window_s` ahead; later events join the window
without moving it (VCP's snapshot used a sliding debounce that a steady stream postpones
forever). The window flushes early once it holds `max_files` paths. A scan is a stat-only
walk, so flushing a window rescans everything cheaply and catches renames and deletes.
A periodic safety rescan covers events the OS dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import watchfiles

from ._scanner import IncrementalScanner

log = logging.getLogger(__name__)


class ChangeWatcher:
    def __init__(self, scanner: IncrementalScanner, window_s: float, max_files: int, rescan_interval_s: float) -> None:
        self._scanner = scanner
        self._window_s = window_s
        self._max_files = max_files
        self._rescan_s = rescan_interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _wanted(self, path: str) -> bool:
        try:
            rel = Path(path).relative_to(self._scanner.vault)
        except ValueError:
            return False
        return not any(self._scanner.rules.skip_dir(part) for part in rel.parts[:-1])

    def _run(self) -> None:
        pending: set[str] = set()
        deadline: float | None = None
        last_scan = time.monotonic()
        for changes in watchfiles.watch(
            self._scanner.vault,
            stop_event=self._stop,
            step=20,
            debounce=int(self._window_s * 1000),
            yield_on_timeout=True,
            rust_timeout=100,
            recursive=True,
            ignore_permission_denied=True,
        ):
            now = time.monotonic()
            fresh = {path for _change, path in changes if self._wanted(path)}
            if fresh:
                pending |= fresh
                if deadline is None:
                    deadline = now + self._window_s
            due = deadline is not None and (now >= deadline or len(pending) >= self._max_files)
            if due or now - last_scan >= self._rescan_s:
                self._scan_safely()
                pending.clear()
                deadline, last_scan = None, time.monotonic()

    def _scan_safely(self) -> None:
        try:
            result = self._scanner.scan()
        except Exception:  # a failed scan must not end watching; the next window retries
            log.exception("scan after file events failed")
            return
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
