"""StreamWorker: embedding jobs from a Redis consumer group, with a shared cache.

At-least-once: a result is written to the results stream in the same MULTI/EXEC as the
job's XACK, so a worker killed at any point either delivered a result or leaves the job
pending, to be reclaimed by another worker (XAUTOCLAIM) after `claim_idle_ms`. A job
delivered `max_attempts` times, or one that fails alone, goes to the dead-letter stream
with its reason; the worker carries on.

With a backlog, jobs are read a window of several batches at a time and embedded shortest
first, a batch at a time: batches of similar lengths pad less (SciFact's chunks: 13 % more
tokens than one sort of everything when each batch of 32 is sorted alone, 5 % for a window of
128). Jobs still waiting in the window have their idle time reset before each batch (XCLAIM
JUSTID), so other workers do not reclaim work this one is about to do; a worker that stops
stops resetting it.

The loop runs in a BackgroundWorker: Redis being away is waited for; any other failure
restarts the loop with backoff, and a loop that keeps failing makes the embedder NOT_SERVING
and exit (`on_give_up`).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import redis
import xxhash

from k0maru_common import (
    DEAD_STREAM,
    EMBED_GROUP,
    JOBS_STREAM,
    RESULTS_IDLE_TTL_S,
    BackgroundWorker,
    DependencyFailed,
    K0Error,
    StreamReader,
    WorkerHealth,
    cache_key,
    ensure_group,
    release_free_heap,
    reply_stream,
    vector_to_bytes,
)

from ._model import TextEmbedder, normalise_text

log = logging.getLogger(__name__)
READ_WINDOW = 4  # batches read together when the backlog holds at least 4 windows
READ_BLOCK_MS = 500  # how long a read waits for jobs; a stop ends the wait at once (CLIENT UNBLOCK)
Message = tuple[bytes, dict[bytes, bytes]]


class ThroughputMeter:
    """Texts embedded in total and per second over the last minute."""

    def __init__(self) -> None:
        self.processed = 0
        self._recent: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        now = time.monotonic()
        with self._lock:
            self.processed += n
            self._recent.append((now, n))
            while self._recent and now - self._recent[0][0] > 60:
                self._recent.popleft()

    def per_second(self) -> float:
        now = time.monotonic()
        with self._lock:
            recent = [(t, n) for t, n in self._recent if now - t <= 60]
        if not recent:
            return 0.0
        span = max(now - recent[0][0], 1.0)
        return sum(n for _, n in recent) / span


def lower_this_thread(nice: int) -> None:
    """Raise the calling thread's niceness to at least `nice`. Linux schedules threads, so bulk
    embedding yields to the rest of the machine while the process's start-up and its gRPC
    handlers keep their priority; threads this one starts (an onnxruntime pool) inherit it."""
    if nice <= 0:
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), nice))
    except OSError as exc:
        log.info("could not lower the priority of %s: %s", threading.current_thread().name, exc)


class StreamWorker:
    def __init__(
        self,
        client: redis.Redis,
        embedder: TextEmbedder,
        meter: ThroughputMeter,
        batch_size: int,
        claim_idle_ms: int,
        max_attempts: int,
        on_give_up: Callable[[str], None] | None = None,
        nice: int = 0,
        cache_ttl_s: int = 0,
    ) -> None:
        self._redis: Any = client  # bytes replies; redis-py's unions do not narrow
        self._cache_ttl_s = cache_ttl_s or None  # None: no expiry
        self._embedder = embedder
        self._meter = meter
        self._batch = batch_size
        self._claim_idle_ms = claim_idle_ms
        self._max_attempts = max_attempts
        self._nice = nice
        self.consumer = f"embedder-{socket.gethostname()}-{os.getpid()}"
        # why the worker takes no jobs now, though it runs ("" when it does): Redis unreachable
        # (a scaled worker with a mistyped host looked healthy everywhere and did nothing)
        self.waiting = ""
        self._jobs = StreamReader(client)
        # a stop ends the loop's wait for jobs, or the batch it is embedding, at once
        self._worker = BackgroundWorker("stream worker", self._run, on_give_up, wake=self._wake)

    def _wake(self) -> None:
        """End what the loop waits on: its read of jobs, or the embedding of a batch (whose jobs
        stay pending, to be reclaimed: Valkey stops beside the embedders, and the results of a
        batch finished after it could not be written anyway)."""
        self._jobs.interrupt()
        self._embedder.interrupt()

    def ensure_group(self) -> None:
        ensure_group(self._redis, JOBS_STREAM, EMBED_GROUP)

    def start(self) -> None:
        self._worker.start()

    def stop(self) -> None:
        self._worker.stop()
        self.leave()
        self._jobs.close()

    def leave(self) -> None:
        """Leave the consumer group when holding no jobs, so `status` stops listing this worker.
        With jobs still pending (the loop did not finish its batch) the entry stays: the jobs
        are reclaimed by the others, and the retriever drops the entry once it holds none."""
        try:
            mine = self._redis.xpending_range(
                JOBS_STREAM, EMBED_GROUP, min="-", max="+", count=1, consumername=self.consumer
            )
            if not mine:
                self._redis.xgroup_delconsumer(JOBS_STREAM, EMBED_GROUP, self.consumer)
        except redis.RedisError as exc:
            log.info("could not leave the consumer group: %s", exc)

    @property
    def alive(self) -> bool:
        return self._worker.alive

    def health(self) -> WorkerHealth:
        return self._worker.health()

    def _run(self, stop: threading.Event) -> None:
        lower_this_thread(self._nice)
        last_claim = 0.0
        grouped = False
        busy = False  # batches run since the queue was last empty
        while not stop.is_set():
            try:
                if not grouped:
                    self.ensure_group()
                    grouped = True
                if time.monotonic() - last_claim > self._claim_idle_ms / 2000:
                    last_claim = time.monotonic()
                    self._reclaim()
                window = self._batch * READ_WINDOW
                count = window if self._redis.xlen(JOBS_STREAM) >= window * 4 else self._batch
                reply = self._jobs.xreadgroup(EMBED_GROUP, self.consumer, {JOBS_STREAM: ">"}, count, READ_BLOCK_MS)
                self.waiting = ""
                for _stream, messages in reply or []:
                    self.process_window(messages, stop)
                    busy = True
                if not reply and busy:
                    # the queue ran dry: a long batch's activations (hundreds of MB of attention at
                    # 256 tokens) stay mapped by the C heap unless handed back
                    release_free_heap()
                    busy = False
            except (redis.ConnectionError, redis.TimeoutError) as exc:  # down, or not answering
                log.warning("Redis unavailable (%s); retrying", exc)
                self.waiting = f"Redis unavailable ({exc}); retrying"
                stop.wait(1.0)
            except redis.ResponseError as exc:
                if "NOGROUP" in str(exc):
                    self.ensure_group()
                elif str(exc).startswith("MISCONF"):  # Valkey cannot persist (its disk is full): it
                    # refuses writes, XREADGROUP too, until it can; jobs taken and not answered are
                    # reclaimed then. Giving up here ended the embedder, query vectors with it.
                    log.warning("Valkey refuses writes (%s); retrying", exc)
                    self.waiting = f"Valkey refuses writes ({exc}); retrying"
                    stop.wait(1.0)
                else:
                    raise

    def _reclaim(self) -> None:
        _next, messages, _deleted = self._redis.xautoclaim(
            JOBS_STREAM, EMBED_GROUP, self.consumer, min_idle_time=self._claim_idle_ms, count=self._batch
        )
        if not messages:
            return
        live: list[Message] = []
        for msg_id, fields in messages:
            pending = self._redis.xpending_range(JOBS_STREAM, EMBED_GROUP, min=msg_id, max=msg_id, count=1)
            if pending and pending[0]["times_delivered"] > self._max_attempts:
                self._dead_letter(msg_id, fields, f"delivered {pending[0]['times_delivered']} times without a result")
            else:
                live.append((msg_id, fields))
        if live:
            log.info("reclaimed %d jobs from dead or stuck workers", len(live))
            self.process(live)

    def process_window(self, messages: list[Message], stop: threading.Event | None = None) -> None:
        """Answer jobs read together: shortest first, `batch_size` at a time. A `stop` ends it
        before the next batch: the window's other jobs stay pending, for another worker (or the
        next start) to reclaim, where a stop waited for the whole window (a second and more of
        long chunks)."""
        ordered = sorted(messages, key=lambda m: len(m[1].get(b"text", b"")))
        for start in range(0, len(ordered), self._batch):
            if start and stop is not None and stop.is_set():
                return
            if start:  # still ours: not idle, so not for XAUTOCLAIM
                self._redis.xclaim(
                    JOBS_STREAM, EMBED_GROUP, self.consumer, 0, [m for m, _f in ordered[start:]], justid=True
                )
            if not self.process(ordered[start : start + self._batch]):
                return  # the backend is down: the rest stay pending too

    def process(self, messages: list[Message]) -> bool:
        """Answer a batch of jobs: cached vectors first, then one ONNX run for the rest. False when
        the backend failed and the jobs were left pending."""
        model_id = self._embedder.preset.model_id
        jobs = [(msg_id, fields) for msg_id, fields in messages if fields]
        texts = [normalise_text(fields.get(b"text", b"").decode("utf-8", "replace")) for _, fields in jobs]
        keys = [cache_key(model_id, xxhash.xxh3_64_hexdigest(t.encode())) for t in texts]
        cached = self._redis.mget(keys) if keys else []
        vectors: dict[int, bytes] = {i: v for i, v in enumerate(cached) if v}
        firsts: dict[str, int] = {}  # identical texts in one batch are embedded once
        for i in range(len(jobs)):
            if i not in vectors:
                firsts.setdefault(keys[i], i)
        todo = list(firsts.values())
        failures: dict[int, str] = {}
        if todo:
            try:
                computed = self._embedder.embed([texts[i] for i in todo])
                for i, row in zip(todo, computed, strict=True):
                    vectors[i] = vector_to_bytes(row)
            except DependencyFailed as exc:  # the backend is down: leave the jobs pending for a retry
                log.warning("embedding backend failed (%s); %d jobs stay pending", exc, len(jobs))
                return False
            except K0Error:
                for i in todo:  # one bad text must not fail its neighbours
                    try:
                        vectors[i] = vector_to_bytes(self._embedder.embed([texts[i]])[0])
                    except K0Error as exc:
                        failures[i] = str(exc)
            self._meter.add(len(todo) - len(failures))
            for i in range(len(jobs)):  # copies share their first's vector or failure
                first = firsts.get(keys[i], i)
                if first != i:
                    if first in failures:
                        failures[i] = failures[first]
                    elif first in vectors:
                        vectors[i] = vectors[first]
        computed_here = set(todo)
        pipe = self._redis.pipeline(transaction=True)
        replies: set[str] = set()
        for i, (msg_id, fields) in enumerate(jobs):
            if i in failures:
                pipe.xadd(DEAD_STREAM, {**_meta(fields), b"reason": failures[i].encode()})
            else:
                reply = reply_stream(fields.get(b"reply", b""))
                replies.add(reply)
                pipe.xadd(reply, {**_meta(fields), b"model": model_id.encode(), b"vector": vectors[i]})
                if i in computed_here:
                    pipe.set(keys[i], vectors[i], ex=self._cache_ttl_s)
                elif self._cache_ttl_s:  # a hit (or a copy of one) is in use: it stays another TTL
                    pipe.expire(keys[i], self._cache_ttl_s)
            pipe.xack(JOBS_STREAM, EMBED_GROUP, msg_id)
            pipe.xdel(JOBS_STREAM, msg_id)
        for reply in replies:  # a stream no retriever reads any more goes away in time
            pipe.expire(reply, RESULTS_IDLE_TTL_S)
        for msg_id, fields in messages:
            if not fields:  # deleted while pending
                pipe.xack(JOBS_STREAM, EMBED_GROUP, msg_id)
        pipe.execute()
        return True

    def _dead_letter(self, msg_id: bytes, fields: dict[bytes, bytes], reason: str) -> None:
        log.warning("job %s to dead letter: %s", fields.get(b"id", b"?").decode(errors="replace"), reason)
        pipe = self._redis.pipeline(transaction=True)
        pipe.xadd(DEAD_STREAM, {**_meta(fields), b"reason": reason.encode()})
        pipe.xack(JOBS_STREAM, EMBED_GROUP, msg_id)
        pipe.xdel(JOBS_STREAM, msg_id)
        pipe.execute()


def _meta(fields: dict[bytes, bytes]) -> dict[Any, Any]:
    return {b"id": fields.get(b"id", b""), b"hash": fields.get(b"hash", b"")}
