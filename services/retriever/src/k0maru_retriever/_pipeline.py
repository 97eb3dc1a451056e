"""EmbeddingPipeline: chunk jobs out to the embedders over Redis Streams, vectors back in.

Jobs are XADDed to k0:embed:jobs with `reply` naming this retriever's results stream
(k0:embed:results, or k0:embed:results:<K0_RETRIEVER_ID> when several retrievers follow the
same scanner); results are read from it by the consumer group "retriever", stored through
NoteIndex (which drops stale ones), then acknowledged. A second retriever queues the same
chunks as the first: the embedders answer those from the vector cache (model + text hash)
without running the model again.
Without Redis or embedders the index still works, BM25-only, and says so in coverage.
A periodic sweep re-enqueues chunks still missing vectors once the queue has drained
(Valkey in the embedded default keeps nothing across restarts).

No chunk is queued twice for the same key: the pipeline knows what is in flight (jobs in
k0:embed:jobs, results in k0:embed:results not stored yet), read back from both streams
before the first enqueue after a start, so a restart does not re-queue what is still queued.
The sweep runs only once both streams are empty (results not yet stored are in flight too).

Vectors that cannot be stored because the disk is full stay unacknowledged in the results
stream, and are read again every ROOM_RETRY_S until they can; `problem` says so meanwhile
(searches go on, BM25 for the notes still without vectors).

The loop runs in a BackgroundWorker: Redis being away is waited for; any other failure
restarts the loop with backoff, and a loop that keeps failing makes the retriever
NOT_SERVING and exit (`on_give_up`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from k0maru_common import (
    DEAD_STREAM,
    EMBED_GROUP,
    JOBS_STREAM,
    RESULTS_GROUP,
    RESULTS_IDLE_TTL_S,
    BackgroundWorker,
    CannotWrite,
    StreamReader,
    WorkerHealth,
    ensure_group,
    results_stream,
    vector_from_bytes,
)

from ._index import EmbedJob, NoteIndex

log = logging.getLogger(__name__)
CONSUMER = "retriever"
PAGE = 1000
# jobs written to Valkey at a time: the embedders start on the first page while the rest are
# written (a first build's 46k jobs took the retriever about a second to send in one), and a
# stop waits for one page at most
ENQUEUE_PAGE = 2000
ROOM_RETRY_S = 5.0  # vectors that found no room on the disk are tried again this often


@dataclass(frozen=True)
class EmbedderSeen:
    """One consumer of the job stream's group: an embedder worker as Valkey last saw it."""

    name: str
    pending: int
    idle_ms: int
    gone: bool


class EmbeddingPipeline:
    def __init__(
        self,
        index: NoteIndex,
        redis_url: str,
        sweep_interval_s: float = 15.0,
        on_give_up: Callable[[str], None] | None = None,
        instance: str = "",
        gone_after_s: float = 30.0,
    ) -> None:
        self._index = index
        self._on_give_up = on_give_up
        self._redis: Any = redis.Redis.from_url(redis_url)  # bytes replies; redis-py's unions do not narrow
        self._results = results_stream(instance)
        self._results_reader = StreamReader(self._redis)
        self._gone_ms = int(gone_after_s * 1000)
        self._sweep_s = sweep_interval_s
        # a stop ends the loop's wait for results at once
        self._worker = BackgroundWorker("vectors", self._run, on_give_up, wake=self._results_reader.interrupt)
        self._in_flight: dict[str, str] = {}  # chunk id → key of its job or result still in a stream
        self._in_flight_loaded = False
        self._in_flight_lock = threading.Lock()
        self.problem = ""  # why vectors wait unstored (a full disk); "" while they are stored

    def _load_in_flight(self) -> None:
        """What the streams still hold from before this process started (Valkey outlives us)."""
        mine = self._results.encode()
        for stream in (JOBS_STREAM, self._results):
            start = "-"
            while True:
                page = self._redis.xrange(stream, min=start, max="+", count=PAGE)
                for _msg_id, fields in page:
                    if stream == JOBS_STREAM and fields.get(b"reply", mine) != mine:
                        continue  # another retriever's job
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
                waiting = list(fresh.values())
                for start in range(0, len(waiting), ENQUEUE_PAGE):
                    if self._worker.stop_event.is_set():  # the rest are found missing at the next start
                        return
                    page = waiting[start : start + ENQUEUE_PAGE]
                    pipe = self._redis.pipeline(transaction=False)
                    for job in page:
                        pipe.xadd(
                            JOBS_STREAM, {"id": job.chunk_id, "hash": job.key, "text": job.text, "reply": self._results}
                        )
                    pipe.execute()
                    self._in_flight.update((job.chunk_id, job.key) for job in page)
            except redis.RedisError as exc:  # the sweep re-enqueues once Redis is back
                log.warning("cannot enqueue %d embedding jobs: %s", len(jobs), exc)

    def queue_depth(self) -> tuple[int, int]:
        """(jobs waiting in the embedding stream, jobs in the dead letter); (-1, -1) if Redis is down."""
        try:
            return int(self._redis.xlen(JOBS_STREAM)), int(self._redis.xlen(DEAD_STREAM))
        except redis.RedisError:
            return -1, -1

    def embedders(self) -> list[EmbedderSeen]:
        """The embedder workers: consumers of the job stream's group (XINFO CONSUMERS).

        A worker silent for longer than the bound is `gone` (a live one reads every 0.5 s); a gone
        one holding no jobs is removed from the group (XGROUP DELCONSUMER) and left out, so the
        listing follows workers as they come and go. One holding jobs stays listed until the
        others reclaimed them. [] when Redis or the group is not there.
        """
        try:
            consumers = self._redis.xinfo_consumers(JOBS_STREAM, EMBED_GROUP)
        except redis.RedisError:
            return []
        seen: list[EmbedderSeen] = []
        for c in consumers:
            name = c["name"].decode() if isinstance(c["name"], bytes) else str(c["name"])
            pending, idle = int(c.get("pending", 0)), int(c.get("idle", 0))
            gone = idle > self._gone_ms
            if gone and pending == 0:
                try:
                    self._redis.xgroup_delconsumer(JOBS_STREAM, EMBED_GROUP, name)
                    log.info("embedder %s silent for %d s: removed from the group", name, idle // 1000)
                    continue
                except redis.RedisError:
                    pass
            seen.append(EmbedderSeen(name, pending, idle, gone))
        return sorted(seen, key=lambda e: e.name)

    def start(self) -> None:
        self._worker.start()

    def health(self) -> WorkerHealth:
        return self._worker.health()

    def request_stop(self) -> None:
        """Stop soon: the results loop's wait ends, and an enqueue under way stops after its page."""
        self._worker.request_stop()

    def stop(self) -> None:
        self._worker.stop()
        self._results_reader.close()
        self._redis.close()

    def _run(self, stop: threading.Event) -> None:
        last_sweep = time.monotonic()
        start_id = "0"  # first our own pending results (from before a restart), then new ones
        kept_until = 0.0
        while not stop.is_set():
            try:
                ensure_group(self._redis, self._results, RESULTS_GROUP)
                if time.monotonic() > kept_until:  # ours is read: it must not expire (RESULTS_IDLE_TTL_S)
                    self._redis.expire(self._results, RESULTS_IDLE_TTL_S)
                    kept_until = time.monotonic() + 60
                reply = self._results_reader.xreadgroup(RESULTS_GROUP, CONSUMER, {self._results: start_id}, 256, 300)
                messages = reply[0][1] if reply else []
                if start_id == "0" and not messages:
                    start_id = ">"
                if messages:
                    try:
                        self._store(messages)
                    except CannotWrite as exc:
                        if not self.problem:
                            log.error("%s; the vectors wait in the queue until there is room", exc)
                        self.problem = f"{exc}; {len(messages)}+ vectors wait in the queue until there is room"
                        start_id = "0"  # read the unacknowledged results again
                        stop.wait(ROOM_RETRY_S)
                        continue
                    if self.problem:
                        log.info("vectors are stored again")
                        self.problem = ""
                if time.monotonic() - last_sweep > self._sweep_s:
                    last_sweep = time.monotonic()
                    self._sweep()
            except redis.RedisError as exc:
                log.warning("Redis unavailable (%s); retrying", exc)
                stop.wait(1.0)

    def _store(self, messages: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        results = []
        for _msg_id, fields in messages:
            model = fields.get(b"model", b"").decode()
            if b"vector" in fields and model and self._index.model_id and model != self._index.model_id:
                # the embedders were switched to another model: its vectors must not join this
                # model's store (same dimension or not); a restarted retriever asks them which
                reason = f"the embedders now answer with {model}, not {self._index.model_id}"
                log.error("%s: their vectors are not stored", reason)
                if self._on_give_up is not None:
                    self._on_give_up(reason)
                return
            if b"vector" in fields:
                results.append((fields[b"id"].decode(), fields[b"hash"].decode(), vector_from_bytes(fields[b"vector"])))
        stored = self._index.apply_vectors(results)
        with self._in_flight_lock:
            for cid, key, _vector in results:
                if self._in_flight.get(cid) == key:
                    del self._in_flight[cid]
        ids = [m for m, _ in messages]
        pipe = self._redis.pipeline(transaction=True)
        pipe.xack(self._results, RESULTS_GROUP, *ids)
        pipe.xdel(self._results, *ids)
        pipe.execute()
        log.debug("stored %d of %d vectors", stored, len(results))

    def _sweep(self) -> None:
        if self._redis.xlen(JOBS_STREAM) > 0 or self._redis.xlen(self._results) > 0:
            return  # still in flight: results not stored yet are not missing
        with self._in_flight_lock:
            self._in_flight.clear()  # both streams are empty: nothing is (dead-lettered jobs are lost)
        missing = self._index.missing_vectors()
        if missing:
            log.info("re-enqueueing %d chunks still without vectors", len(missing))
            self.enqueue(missing)
