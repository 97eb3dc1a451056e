"""EmbeddingPipeline: chunk jobs out to the embedders over Redis Streams, vectors back in.

Jobs are XADDed to k0:embed:jobs; results are read from k0:embed:results by the consumer
group "retriever", stored through NoteIndex (which drops stale ones), then acknowledged.
Without Redis or embedders the index still works, BM25-only, and says so in coverage.
A periodic sweep re-enqueues chunks still missing vectors once the queue has drained
(Valkey in the embedded default keeps nothing across restarts).

No chunk is queued twice for the same key: the pipeline knows what is in flight (jobs in
k0:embed:jobs, results in k0:embed:results not stored yet), read back from both streams
before the first enqueue after a start, so a restart does not re-queue what is still queued.
The sweep runs only once both streams are empty (results not yet stored are in flight too).

The loop runs in a BackgroundWorker: Redis being away is waited for; any other failure
restarts the loop with backoff, and a loop that keeps failing makes the retriever
NOT_SERVING and exit (`on_give_up`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from k0maru_common import (
    DEAD_STREAM,
    JOBS_STREAM,
    RESULTS_GROUP,
    RESULTS_STREAM,
    BackgroundWorker,
    WorkerHealth,
    ensure_group,
    vector_from_bytes,
)

from ._index import EmbedJob, NoteIndex

log = logging.getLogger(__name__)
CONSUMER = "retriever"
PAGE = 1000


class EmbeddingPipeline:
    def __init__(
        self,
        index: NoteIndex,
        redis_url: str,
        sweep_interval_s: float = 15.0,
        on_give_up: Callable[[str], None] | None = None,
    ) -> None:
        self._index = index
        self._redis: Any = redis.Redis.from_url(redis_url)  # bytes replies; redis-py's unions do not narrow
        self._sweep_s = sweep_interval_s
        self._worker = BackgroundWorker("vectors", self._run, on_give_up)
        self._in_flight: dict[str, str] = {}  # chunk id → key of its job or result still in a stream
        self._in_flight_loaded = False
        self._in_flight_lock = threading.Lock()

    def _load_in_flight(self) -> None:
        """What the streams still hold from before this process started (Valkey outlives us)."""
        for stream in (JOBS_STREAM, RESULTS_STREAM):
            start = "-"
            while True:
                page = self._redis.xrange(stream, min=start, max="+", count=PAGE)
                for _msg_id, fields in page:
                    if b"id" in fields and b"hash" in fields:
                        self._in_flight[fields[b"id"].decode()] = fields[b"hash"].decode()
                if len(page) < PAGE:
                    break
                start = "(" + page[-1][0].decode()
        self._in_flight_loaded = True
        if self._in_flight:
            log.info("%d embedding jobs or results are still in flight from before", len(self._in_flight))

    def enqueue(self, jobs: list[EmbedJob]) -> None:
        """Queue the jobs whose chunk is not already in flight with the same key."""
        if not jobs:
            return
        with self._in_flight_lock:
            try:
                if not self._in_flight_loaded:
                    self._load_in_flight()
                fresh: dict[str, EmbedJob] = {}
                for job in jobs:
                    if self._in_flight.get(job.chunk_id) != job.key:
                        fresh[job.chunk_id] = job
                if not fresh:
                    return
                pipe = self._redis.pipeline(transaction=False)
                for job in fresh.values():
                    pipe.xadd(JOBS_STREAM, {"id": job.chunk_id, "hash": job.key, "text": job.text})
                pipe.execute()
                self._in_flight.update((cid, job.key) for cid, job in fresh.items())
            except redis.RedisError as exc:  # the sweep re-enqueues once Redis is back
                log.warning("cannot enqueue %d embedding jobs: %s", len(jobs), exc)

    def queue_depth(self) -> tuple[int, int]:
        """(jobs waiting in the embedding stream, jobs in the dead letter); (-1, -1) if Redis is down."""
        try:
            return int(self._redis.xlen(JOBS_STREAM)), int(self._redis.xlen(DEAD_STREAM))
        except redis.RedisError:
            return -1, -1

    def start(self) -> None:
        self._worker.start()

    def health(self) -> WorkerHealth:
        return self._worker.health()

    def stop(self) -> None:
        self._worker.stop()
        self._redis.close()

    def _run(self, stop: threading.Event) -> None:
        last_sweep = time.monotonic()
        start_id = "0"  # first our own pending results (from before a restart), then new ones
        while not stop.is_set():
            try:
                ensure_group(self._redis, RESULTS_STREAM, RESULTS_GROUP)
                reply = self._redis.xreadgroup(
                    RESULTS_GROUP, CONSUMER, {RESULTS_STREAM: start_id}, count=256, block=300
                )
                messages = reply[0][1] if reply else []
                if start_id == "0" and not messages:
                    start_id = ">"
                if messages:
                    self._store(messages)
                if time.monotonic() - last_sweep > self._sweep_s:
                    last_sweep = time.monotonic()
                    self._sweep()
            except redis.RedisError as exc:
                log.warning("Redis unavailable (%s); retrying", exc)
                stop.wait(1.0)

    def _store(self, messages: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        results = []
        for _msg_id, fields in messages:
            if b"vector" in fields:
                results.append((fields[b"id"].decode(), fields[b"hash"].decode(), vector_from_bytes(fields[b"vector"])))
        stored = self._index.apply_vectors(results)
        with self._in_flight_lock:
            for cid, key, _vector in results:
                if self._in_flight.get(cid) == key:
                    del self._in_flight[cid]
        ids = [m for m, _ in messages]
        pipe = self._redis.pipeline(transaction=True)
        pipe.xack(RESULTS_STREAM, RESULTS_GROUP, *ids)
        pipe.xdel(RESULTS_STREAM, *ids)
        pipe.execute()
        log.debug("stored %d of %d vectors", stored, len(results))

    def _sweep(self) -> None:
        if self._redis.xlen(JOBS_STREAM) > 0 or self._redis.xlen(RESULTS_STREAM) > 0:
            return  # still in flight: results not stored yet are not missing
        with self._in_flight_lock:
            self._in_flight.clear()  # both streams are empty: nothing is (dead-lettered jobs are lost)
        missing = self._index.missing_vectors()
        if missing:
            log.info("re-enqueueing %d chunks still without vectors", len(missing))
            self.enqueue(missing)
