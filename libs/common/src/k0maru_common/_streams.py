"""Redis names and encodings shared by the embedder (producer of vectors) and the retriever.

Jobs:    XADD k0:embed:jobs    {id, hash, text, reply}      read by group "embedders"
Results: XADD <reply>          {id, hash, model, vector}    read by group "retriever"
         reply = k0:embed:results (the only retriever) or k0:embed:results:<K0_RETRIEVER_ID>:
         each retriever reads its own results; a second one gets the first one's vectors
         from the cache, not from a second model run; a results stream expires
         RESULTS_IDLE_TTL_S after its last read or write
Dead:    XADD k0:embed:dead    {id, hash, model, reason}    jobs that kept failing
Cache:   k0:emb:<model_id>:<xxh3 of the normalised text> → vector bytes (expiring: K0_CACHE_TTL_S)
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import redis

if TYPE_CHECKING:
    import numpy as np

JOBS_STREAM = "k0:embed:jobs"
RESULTS_STREAM = "k0:embed:results"
DEAD_STREAM = "k0:embed:dead"
EMBED_GROUP = "embedders"
RESULTS_GROUP = "retriever"
TOKEN_LEDGER = "k0:tokens"
# A results stream expires this long after a retriever last read it or an embedder last wrote
# to it: a retriever removed for good (scaled down, renamed) leaves no stream of results that
# nobody reads. One back after longer finds its vectors in the cache (K0_CACHE_TTL_S, 30 days).
RESULTS_IDLE_TTL_S = 7 * 86_400


def ensure_group(client: Any, stream: str, group: str) -> None:
    """Create a consumer group (and its stream) unless it exists."""
    try:
        client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


class StreamReader:
    """XREADGROUP that waits for entries on a connection of its own, so that another thread can
    end a wait under way at once: `interrupt` sends CLIENT UNBLOCK with that connection's id, and
    the read answers as if its time ran out. A stopping worker then does not wait out its read
    (an idle embedder's stop waited 0.25 s on average, the retriever's results loop 0.15 s)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._reader: Any = None
        self._reader_id: int | None = None
        self._interrupted = False

    def xreadgroup(self, group: str, consumer: str, streams: dict[str, str], count: int, block_ms: int) -> Any:
        """redis-py's XREADGROUP; None at once after `interrupt`."""
        if self._interrupted:
            return None
        try:
            if self._reader is None:
                self._reader = redis.Redis(connection_pool=self._client.connection_pool, single_connection_client=True)
            if self._reader_id is None:  # a new connection (a reconnect gets a new id)
                self._reader_id = self._reader.client_id()
            return self._reader.xreadgroup(group, consumer, streams, count=count, block=block_ms)
        except (redis.ConnectionError, redis.TimeoutError):
            self._reader_id = None  # it connects again, with a new id
            raise

    def interrupt(self) -> None:
        """End a read waiting now, and every later one (from any thread)."""
        self._interrupted = True
        if (reader_id := self._reader_id) is not None:
            with contextlib.suppress(redis.RedisError):
                self._client.client_unblock(reader_id)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()


def results_stream(instance: str) -> str:
    """The results stream of the retriever named `instance` ("" = the only one)."""
    return f"{RESULTS_STREAM}:{instance}" if instance else RESULTS_STREAM


def reply_stream(reply: bytes) -> str:
    """Where a job's result goes: its `reply` field when that names a results stream, else the
    default one (jobs from before the field existed; nothing else can be written to)."""
    name = reply.decode("utf-8", "replace")
    return name if name.startswith(RESULTS_STREAM + ":") else RESULTS_STREAM


def cache_key(model_id: str, text_hash: str) -> str:
    return f"k0:emb:{model_id}:{text_hash}"


def vector_to_bytes(vector: np.ndarray) -> bytes:
    import numpy as np  # here: the offload service reads the token ledger's name and needs no numpy

    return np.asarray(vector, dtype="<f4").tobytes()


def vector_from_bytes(data: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(data, dtype="<f4")
