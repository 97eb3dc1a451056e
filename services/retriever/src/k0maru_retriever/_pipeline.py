"""EmbeddingPipeline: chunk jobs out to the embedders over Redis Streams, vectors back in.

Jobs are XADDed to k0:embed:jobs; results are read from k0:embed:results by the consumer
group "retriever", stored through NoteIndex (which drops stale ones), then acknowledged.
Without Redis or embedders the index still works, BM25-only, and says so in coverage.
A periodic sweep re-enqueues chunks still missing vectors once the queue has drained
(Valkey in the embedded default keeps nothing across restarts).

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

    def enqueue(self, jobs: list[EmbedJob]) -> None:
        if not jobs:
            return
        try:
            pipe = self._redis.pipeline(transaction=False)
            for job in jobs:
                pipe.xadd(JOBS_STREAM, {"id": job.chunk_id, "hash": job.key, "text": job.text})
            pipe.execute()
        except redis.RedisError as exc:  # the sweep re-enqueues once Redis is back
            log.warning("cannot enqueue %d embedding jobs: %s", len(jobs), exc)

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
        ids = [m for m, _ in messages]
        pipe = self._redis.pipeline(transaction=True)
        pipe.xack(RESULTS_STREAM, RESULTS_GROUP, *ids)
        pipe.xdel(RESULTS_STREAM, *ids)
        pipe.execute()
        log.debug("stored %d of %d vectors", stored, len(results))

    def _sweep(self) -> None:
        if self._redis.xlen(JOBS_STREAM) > 0:
            return
        missing = self._index.missing_vectors()
        if missing:
            log.info("re-enqueueing %d chunks still without vectors", len(missing))
            self.enqueue(missing)
