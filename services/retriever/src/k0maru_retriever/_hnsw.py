"""HnswBuilder: the Qdrant Edge shard's HNSW index, built in a child process, swapped in live.

Edge builds HNSW only in `optimize()`, which holds Python's GIL for its whole run (35 s for 30k
points on this machine, no query answered meanwhile), and Edge opens a shard directory in one
process only. So the build runs on a copy:

1. snapshot: under the store's lock, flush the live shard and copy its directory to
   `<live>.hnsw-build`; from then on every point id upserted or deleted is journaled;
2. build: a child process (`python -m k0maru_retriever._hnsw DIR DIM`, niced, on half the cores,
   killed with its parent: `orphan_guard`) opens the copy, runs `optimize()` and exits; the live shard keeps answering,
   brute force;
3. swap (here, the one owner of it), under the store's lock: the journaled points are read
   back from the live shard (present: their vector and payload; absent: deleted), a mark file
   is put in the copy, the live shard is closed, `<live>` renamed to `<live>.hnsw-old` and the
   copy to `<live>`, which is opened (the only time the new shard is loaded in this process);
   the journaled points are replayed into it and flushed, and the mark removed; then, outside
   the lock, `<live>.hnsw-old` is deleted.

Crash safety (`recover()`, run before every open): `<live>.hnsw-old` present with `<live>`
missing or still marked means a swap was cut short: the old shard (every write it
acknowledged) goes back to `<live>`. Any `<live>.hnsw-build` or `<live>.hnsw-old` left over
otherwise is removed: an unfinished build is simply lost (queries stay brute force until the
next one); a swapped-in shard loses its mark only once the writes made during the build are
flushed into it, so no acknowledged write is lost. Tested by killing a writing process at
different moments of builds and swaps (tests/integration/test_hnsw_build.py).

A build starts when at least `min_points` points were written since the last build (at open:
the shard's points not yet in an HNSW segment), and at least as many as the index already holds
up to `REBUILD_AFTER_MAX`, one at a time; a failed build is retried only after `RETRY_AFTER_S`.
`min_points == 0` turns background builds off. So a vault's first embedding builds at about 5k,
10k and 20k points, then every 20k (not every `min_points`: each build copies the whole shard),
and no more than 20k points are ever searched brute force beside the index (≈ 3.7 ms).

Room: a build starts only with room for the copy and the new index on the disk (`build_room`),
and the swap only with room for its replay; otherwise it is put off like a failed build. The
copy keeps the files' holes (`copy_tree_sparse`): Edge preallocates its memory-mapped files, and
a plain copy wrote them out in full (159 MB for a store of 300 points that takes 11 MB).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from k0maru_common import CannotWrite, orphan_guard

from ._disk import BYTES_PER_POINT, check_room, copy_tree_sparse, size_of

log = logging.getLogger(__name__)

BUILD_SUFFIX = ".hnsw-build"
OLD_SUFFIX = ".hnsw-old"
PENDING_MARK = "k0-hnsw-swap-pending"  # in a swapped-in shard until the writes made meanwhile are in it
RETRY_AFTER_S = 600.0
REBUILD_AFTER_MAX = 20_000  # points written without an index that always start a build (the doubling's cap)
CHILD_NICE = 10
REPLAY_PAGE = 512
# Disk a build takes beyond the live shard: its copy (the shard's size) and what the child's
# optimize() writes (a new segment, preallocated). Measured on a tmpfs, peak above the live
# shard: 300 points (11 MB) +78 MB, 2,000 (16 MB) +65 MB, 20,000 (82 MB) +102 MB; so twice the
# shard plus 96 MB, which covers each with room to spare.
BUILD_FIXED_BYTES = 96 << 20


def build_room(live: Path) -> int:
    return 2 * size_of(live) + BUILD_FIXED_BYTES


def build_dir(live: Path) -> Path:
    return live.with_name(live.name + BUILD_SUFFIX)


def old_dir(live: Path) -> Path:
    return live.with_name(live.name + OLD_SUFFIX)


def recover(live: Path) -> None:
    """Leave `live` a usable shard after a build or swap cut short (see the module docstring)."""
    old, build = old_dir(live), build_dir(live)
    if old.exists() and (not live.exists() or (live / PENDING_MARK).exists()):
        log.warning("vector shard %s: a swap was cut short, going back to the shard before it", live)
        shutil.rmtree(live, ignore_errors=True)
        old.rename(live)
    for leftover in (build, old):
        if leftover.exists():
            shutil.rmtree(leftover, ignore_errors=True)


class HnswBuilder:
    """Background HNSW builds for one Edge shard directory (owned by EdgeVectorStore).

    `lock` is the store's lock; `shard()` / `reopen()` read and replace the store's live shard
    (called with the lock held); `load(path)` opens a shard directory.
    """

    def __init__(
        self,
        live: Path,
        dimension: int,
        min_points: int,
        lock: threading.Lock,
        shard: Callable[[], Any],
        reopen: Callable[[], Any],
        load: Callable[[Path], Any],
    ) -> None:
        import qdrant_edge as qe

        self._qe = qe
        self._live = live
        self._dim = dimension
        self._min = min_points
        self._lock = lock
        self._shard = shard
        self._reopen = reopen
        self._load = load
        self._journal: set[int] | None = None  # point ids written since the snapshot (a build is on)
        self._written = 0  # points written since the last build started
        self._indexed = 0  # points in HNSW segments (at open and after each swap)
        self._retry_at = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self.builds = 0  # swaps done (for status and tests)

    @property
    def building(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def opened(self, shard: Any) -> None:
        """A shard was opened: what is not indexed yet counts as written (lock held)."""
        info = shard.info()
        self._indexed = int(info.indexed_vectors_count)
        self._written = max(0, int(info.points_count) - self._indexed)

    def written(self, ids: list[int], upserted: bool) -> None:
        """Points were upserted or deleted in the live shard (lock held); maybe start a build."""
        if self._journal is not None:
            self._journal.update(ids)
        if upserted:
            self._written += len(ids)
        self.maybe_start()

    def maybe_start(self) -> None:
        if (
            self._min <= 0
            or self._closing
            or self._written < max(self._min, min(self._indexed, REBUILD_AFTER_MAX))
            or self.building
            or time.monotonic() < self._retry_at
        ):
            return
        self._thread = threading.Thread(target=self._run, name="hnsw-build", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        build = build_dir(self._live)
        before = 0
        try:
            with self._lock:
                if self._closing:
                    return
                shutil.rmtree(build, ignore_errors=True)
                self._shard().flush()
                check_room(
                    self._live.parent,
                    "an HNSW build (a copy of the vector store and its new index)",
                    build_room(self._live),
                )
                copy_tree_sparse(self._live, build)
                self._journal = set()
                before, self._written = self._written, 0
                points = int(self._shard().count(self._qe.CountRequest()))
            log.info("HNSW build started in the background (%d points)", points)
            started = time.monotonic()
            self._proc = subprocess.Popen(
                orphan_guard(
                    [sys.executable, "-m", "k0maru_retriever._hnsw", str(build), str(self._dim)],
                    nice=CHILD_NICE,
                    sig=signal.SIGKILL,  # killed with the retriever instead of building on, orphaned
                ),
                stdin=subprocess.DEVNULL,
            )
            if self._closing:  # close() came while the copy was made
                self._proc.kill()
            code = self._proc.wait()
            if self._closing:
                return
            if code != 0:
                raise RuntimeError(f"the build process exited with {code}")
            replayed = self._swap(build)
            if self._closing:
                return
            shutil.rmtree(old_dir(self._live), ignore_errors=True)  # outside the lock
            self.builds += 1
            log.info(
                "HNSW index swapped in after %.1f s (%d points written meanwhile replayed)",
                time.monotonic() - started,
                replayed,
            )
        except CannotWrite as exc:  # the disk has no room for it: not a failure of the build
            log.warning("HNSW build put off: %s; queries stay brute force, next try in %.0f s", exc, RETRY_AFTER_S)
            self._retry_at = time.monotonic() + RETRY_AFTER_S
        except Exception:
            log.exception("HNSW build failed; queries stay brute force, next try in %.0f s", RETRY_AFTER_S)
            self._retry_at = time.monotonic() + RETRY_AFTER_S
        finally:
            with self._lock:
                if self._journal is not None:  # not swapped: what the copy held is still not indexed
                    self._written += before
                self._journal = None
                self._proc = None
            shutil.rmtree(build, ignore_errors=True)
            shutil.rmtree(old_dir(self._live), ignore_errors=True)

    def _swap(self, build: Path) -> int:
        qe = self._qe
        with self._lock:
            locked = time.monotonic()
            if self._closing or self._journal is None:
                return 0
            ids = sorted(self._journal)
            check_room(self._live.parent, "the points written during the HNSW build", len(ids) * BYTES_PER_POINT)
            live = self._shard()
            records = [
                r for i in range(0, len(ids), REPLAY_PAGE) for r in live.retrieve(ids[i : i + REPLAY_PAGE], True, True)
            ]
            gone = sorted(set(ids) - {int(r.id) for r in records})
            (build / PENDING_MARK).touch()  # until the replay is flushed, the old shard is the one to keep
            live.close()
            old = old_dir(self._live)
            try:
                self._live.rename(old)
                build.rename(self._live)  # a crash from here until the mark is gone: recover() goes back
                shard = self._reopen()
                for i in range(0, len(records), REPLAY_PAGE):
                    shard.update(
                        qe.UpdateOperation.upsert_points(
                            [
                                qe.Point(id=r.id, vector=r.vector, payload=r.payload)
                                for r in records[i : i + REPLAY_PAGE]
                            ]
                        )
                    )
                if gone:
                    shard.update(qe.UpdateOperation.delete_points(gone))
                shard.flush()
                (self._live / PENDING_MARK).unlink()
            except Exception:
                if old.exists():  # back to the shard before the swap
                    with contextlib.suppress(Exception):
                        self._shard().close()
                    shutil.rmtree(self._live, ignore_errors=True)
                    old.rename(self._live)
                self._reopen()
                raise
            self._journal = None
            self.opened(shard)
            self._written = min(self._written, len(ids))
            log.info("HNSW swap held the vector store for %.2f s", time.monotonic() - locked)
            return len(ids)

    def close(self) -> None:
        """Stop a build under way (the store is closing or being cleared); call without the lock."""
        self._closing = True
        proc, thread = self._proc, self._thread
        if proc is not None and proc.poll() is None:
            proc.kill()
        if thread is not None:
            thread.join(timeout=60)
        shutil.rmtree(build_dir(self._live), ignore_errors=True)

    def reset(self) -> None:
        """After close(): ready for builds again (the store was cleared and reopened)."""
        self._closing = False
        self._journal = None
        self._written = 0
        self._indexed = 0
        self._retry_at = 0.0


def main(argv: list[str]) -> int:
    """The child: open the copy, build its HNSW index, flush, exit 0."""
    import qdrant_edge as qe

    logging.basicConfig(level=logging.INFO, format="%(asctime)s hnsw-build %(levelname)s %(message)s")
    path, dimension = argv
    # Qdrant's defaults, on half the cores: the other half keeps answering queries
    hnsw = qe.HnswIndexConfig(
        m=16, ef_construct=100, full_scan_threshold=10_000, max_indexing_threads=max(1, (os.cpu_count() or 2) // 2)
    )
    vectors = qe.EdgeVectorParams(size=int(dimension), distance=qe.Distance.Cosine)
    shard = qe.EdgeShard.load(path, qe.EdgeConfig(vectors=vectors, hnsw_config=hnsw))
    try:
        shard.optimize()
        shard.flush()
        info = shard.info()
        log.info("%s: %d of %d points indexed", path, info.indexed_vectors_count, info.points_count)
    finally:
        shard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
