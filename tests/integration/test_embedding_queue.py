"""The embedding queue on a real Valkey: no chunk is queued twice, across restarts and while results wait."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import redis

from k0maru_common import JOBS_STREAM, RESULTS_STREAM, vector_to_bytes
from k0maru_retriever._index import EmbedJob
from k0maru_retriever._pipeline import ENQUEUE_PAGE, EmbeddingPipeline
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


def test_jobs_go_out_in_pages_and_a_stop_ends_the_queueing(valkey_url: str, tmp_path: Path):
    """A first build's jobs are written a page at a time (`ENQUEUE_PAGE`), in their order; once a
    stop was asked, what is not written yet is left for the next start's missing vectors."""
    client = redis.Redis.from_url(valkey_url)
    index = open_index(tmp_path)
    pipeline = EmbeddingPipeline(index, valkey_url)
    jobs = [EmbedJob(f"n{i}.md#0", f"k{i}", f"text {i}") for i in range(2 * ENQUEUE_PAGE + 7)]
    pipeline.enqueue(jobs)
    assert [f[b"id"].decode() for _id, f in client.xrange(JOBS_STREAM)] == [j.chunk_id for j in jobs]
    pipeline.request_stop()
    pipeline.enqueue([EmbedJob("late.md#0", "k", "late")])
    assert client.xlen(JOBS_STREAM) == len(jobs)
    pipeline.stop()
    restarted = EmbeddingPipeline(index, valkey_url)  # the next start queues it
    restarted.enqueue([EmbedJob("late.md#0", "k", "late"), *jobs])
    assert client.xlen(JOBS_STREAM) == len(jobs) + 1
    restarted.stop()
    index.close()
    client.close()
