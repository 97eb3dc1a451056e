"""Redis names and encodings shared by the embedder (producer of vectors) and the retriever.

Jobs:    XADD k0:embed:jobs    {id, hash, model, text}      read by group "embedders"
Results: XADD k0:embed:results {id, hash, model, vector}    read by group "retriever"
Dead:    XADD k0:embed:dead    {id, hash, model, reason}    jobs that kept failing
Cache:   k0:emb:<model_id>:<xxh3 of the normalised text> → vector bytes
"""

from __future__ import annotations

from typing import Any

import numpy as np
import redis

JOBS_STREAM = "k0:embed:jobs"
RESULTS_STREAM = "k0:embed:results"
DEAD_STREAM = "k0:embed:dead"
EMBED_GROUP = "embedders"
RESULTS_GROUP = "retriever"
TOKEN_LEDGER = "k0:tokens"


def ensure_group(client: Any, stream: str, group: str) -> None:
    """Create a consumer group (and its stream) unless it exists."""
    try:
        client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def cache_key(model_id: str, text_hash: str) -> str:
    return f"k0:emb:{model_id}:{text_hash}"


def vector_to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def vector_from_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<f4")
