"""Bm25Compactor: the background worker that keeps BM25 equal to a fresh build.

An edit replaces a note's chunks; tantivy keeps the old ones as deleted documents, and they
count in BM25's statistics until a merge drops them (rarely, for a vault's first big segment),
and a merge that drops them leaves an average length estimated from field norms
(`Bm25Index.replaced`). The edited note's own words then look twice as common, so the note an
agent just wrote ranks lower than it should. Once the vault is indexed, BM25 has replaced
documents since it was built and no note has
changed for `quiet_s`, the compactor rebuilds BM25 beside the live index and swaps it in
(`NoteIndex.compact_bm25`); searches and edits go on meanwhile. Compactions are at least
`GAP_FACTOR` times their own duration apart (and `MIN_GAP_S`), so an agent that keeps editing
spends at most a tenth of a core on them. A compaction that fails (a full disk) leaves the live
index as it was and is tried again later; one that fails during its swap makes the retriever
exit (`on_give_up`), and the next start rebuilds BM25.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable

from k0maru_common import BackgroundWorker, WorkerHealth

from ._index import Bm25SwapFailed, NoteIndex

log = logging.getLogger(__name__)

GAP_FACTOR = 10.0
MIN_GAP_S = 60.0
FAILED_WAIT_MAX_S = 3600.0  # after failures the next try waits min_gap × 2^failures, at most this
NICE = 10  # the compaction thread's niceness (Linux: per thread)


class Bm25Compactor:
    def __init__(
        self,
        index: NoteIndex,
        ready: threading.Event,
        quiet_s: float,
        on_give_up: Callable[[str], None] | None = None,
        min_gap_s: float = MIN_GAP_S,
    ) -> None:
        self._index = index
        self._ready = ready  # the follower's: the first build and the start-up's re-sync are done
        self._quiet_s = quiet_s
        self._min_gap_s = min_gap_s
        self._not_before = 0.0
        self.compactions = 0
        self._on_give_up = on_give_up
        self._last_error = ""
        self._worker = BackgroundWorker("bm25-compactor", self._run, on_give_up)

    @property
    def enabled(self) -> bool:
        return self._quiet_s > 0

    def start(self) -> None:
        if self.enabled:
            self._worker.start()

    def stop(self) -> None:
        self._worker.stop(timeout_s=30)

    def due(self) -> bool:
        now = time.monotonic()
        return (
            self._ready.is_set()
            and now >= self._not_before
            and now - self._index.last_change >= self._quiet_s
            and self._index.bm25.replaced() > 0
        )

    def health(self) -> WorkerHealth:
        """The worker's; `last_error` says why the last compaction failed (the live index is then
        untouched, and the next try waits longer)."""
        health = self._worker.health()
        return WorkerHealth(health.name, health.state, health.restarts, self._last_error or health.last_error)

    def _run(self, stop: threading.Event) -> None:
        with contextlib.suppress(OSError):  # background work: searches, the scanner and the gateway go first
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        failures = 0
        while not stop.wait(min(self._quiet_s, 2.0)):
            if not self.due():
                continue
            deleted, started = self._index.bm25.replaced(), time.monotonic()
            try:
                done = self._index.compact_bm25(stop)
            except Bm25SwapFailed as exc:  # the retriever cannot go on with this index: a restart rebuilds it
                log.exception("BM25 compaction failed during its swap")
                if self._on_give_up is None:
                    raise
                self._on_give_up(str(exc))
                stop.wait()
                return
            except Exception as exc:  # a full disk, say: searches go on from the live index, untouched
                failures += 1
                wait_s = min(FAILED_WAIT_MAX_S, self._min_gap_s * 2**failures)
                self._last_error = f"{type(exc).__name__}: {exc}"[:500]
                log.exception("BM25 compaction failed (%d in a row); next try in %.0f s", failures, wait_s)
                self._not_before = time.monotonic() + wait_s
                continue
            took = time.monotonic() - started
            self._not_before = time.monotonic() + max(self._min_gap_s, GAP_FACTOR * took)
            if done:
                failures, self._last_error = 0, ""
                self.compactions += 1
                log.info("BM25 compacted in %.1f s: %d replaced documents dropped from its statistics", took, deleted)
            else:
                log.info("BM25 compaction given up after %.1f s (stopping, or BM25 rebuilt meanwhile)", took)
