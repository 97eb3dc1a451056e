"""The embedding queue on a real Valkey: no chunk is queued twice, across restarts and while results wait."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import redis

from k0maru_common import JOBS_STREAM, RESULTS_STREAM, vector_to_bytes
from k0maru_retriever._pipeline import EmbeddingPipeline
from tests.unit.test_index_consistency import DIM, doc, open_index

pytestmark = pytest.mark.integration


def test_no_chunk_is_queued_twice(valkey_url: str, tmp_path: Path):
    client = redis.Redis.from_url(valkey_url)
    index = open_index(tmp_path)
    for d in (doc("a.md", "one", "two"), doc("b.md", "three")):
        index.apply(d)
    index.commit(1)
    first = EmbeddingPipeline(index, valkey_url)
    first.enqueue(index.missing_vectors())
    first.enqueue(index.missing_vectors())  # reconcile, then a sweep, in one process
    assert client.xlen(JOBS_STREAM) == 3
    first.stop()

    restarted = EmbeddingPipeline(index, valkey_url)  # the retriever restarts; Valkey kept the queue
    restarted.enqueue(index.missing_vectors())
    assert client.xlen(JOBS_STREAM) == 3

    for msg_id, fields in client.xrange(JOBS_STREAM):  # embedders answer; results wait to be stored
        client.xadd(RESULTS_STREAM, {**fields, b"vector": vector_to_bytes(np.ones(DIM, dtype=np.float32))})
        client.xdel(JOBS_STREAM, msg_id)
    restarted._sweep()
    assert client.xlen(JOBS_STREAM) == 0  # results not stored yet are not missing vectors

    edited = doc("a.md", "one, edited", "two")
    edited.chunks[0].hash = "edited"
    index.apply(edited)  # a new key for a.md#0 is a new job
    restarted.enqueue(index.missing_vectors())
    assert [f[b"id"] for _id, f in client.xrange(JOBS_STREAM)] == [b"a.md#0"]
    restarted.stop()
    index.close()
