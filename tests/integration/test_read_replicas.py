"""Several retrievers on one embedding queue, and the embedder workers as status lists them.

Real Valkey, real embedder processes (the ONNX model), real retriever pipelines and indexes.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import grpc
import pytest
import redis

from k0maru.v1 import embedder_pb2, embedder_pb2_grpc
from k0maru_common import (
    EMBED_GROUP,
    JOBS_STREAM,
    RESULTS_IDLE_TTL_S,
    RESULTS_STREAM,
    ensure_group,
    results_stream,
    wait_until_serving,
)
from k0maru_embedder._presets import minilm_l6_int8
from k0maru_retriever._index import NoteIndex
from k0maru_retriever._pipeline import EmbeddingPipeline
from tests.conftest import wait_for
from tests.integration.test_embedder import Worker
from tests.unit.test_index_consistency import doc
from tests.unit.test_index_consistency import open_index as consistency_index

pytestmark = pytest.mark.integration
DIM = 384


def open_index(root: Path) -> NoteIndex:
    return consistency_index(root, DIM, minilm_l6_int8().model_id)  # what the workers report, as in a retriever


def ready(worker: Worker) -> None:
    """The model loads in a few seconds alone; the shared machine may take much longer."""
    assert wait_until_serving(worker.address, "k0maru.v1.Embedder", 240), worker.log.read_text()


def stop(worker: Worker) -> None:
    if worker.proc.poll() is None:
        os.kill(worker.proc.pid, signal.SIGCONT)
        worker.proc.terminate()
        worker.proc.wait(timeout=120)


def fill(index: NoteIndex) -> None:
    for i in range(12):
        index.apply(doc(f"n{i}.md", f"note {i} on lighthouse rotation {i % 5}", f"second part {i} about quokkas"))
    index.commit(1)


def test_second_retriever_gets_its_own_results_from_the_cache(valkey_url: str, tmp_path: Path):
    client = redis.Redis.from_url(valkey_url)
    first_index, second_index = open_index(tmp_path / "first"), open_index(tmp_path / "second")
    fill(first_index)
    fill(second_index)
    first = EmbeddingPipeline(first_index, valkey_url)  # the only (or first) retriever: k0:embed:results
    second = EmbeddingPipeline(second_index, valkey_url, instance="reader-2")
    worker = Worker(valkey_url, tmp_path / "w.log")
    try:
        ready(worker)
        first.start()
        second.start()
        first.enqueue(first_index.missing_vectors())
        wait_for(lambda: not first_index.missing_vectors(), 60, "the first retriever's vectors")
        assert client.xlen(results_stream("reader-2")) == 0  # nothing of the first's reached the second
        cached = sorted(client.scan_iter("k0:emb:*"))
        assert len(cached) == 24
        ttls = [client.ttl(k) for k in cached]  # cached vectors expire (K0_CACHE_TTL_S, 30 days)
        assert all(29 * 86_400 < t <= 30 * 86_400 for t in ttls), ttls
        client.expire(cached[0], 100)
        second.enqueue(second_index.missing_vectors())
        wait_for(lambda: not second_index.missing_vectors(), 60, "the second retriever's vectors")
        with grpc.insecure_channel(worker.address) as channel:
            info = embedder_pb2_grpc.EmbedderStub(channel).Info(embedder_pb2.EmbedderInfoRequest(), timeout=5)
        assert info.processed == 24  # 24 chunks, each embedded once: the second got cached vectors
        assert client.ttl(cached[0]) > 29 * 86_400  # a vector in use stays another 30 days
        assert client.xlen(RESULTS_STREAM) == 0 and client.xlen(results_stream("reader-2")) == 0
        # each results stream expires a week after its last read or write: one whose retriever is
        # gone for good does not stay in Valkey; the live ones are kept fresh by their readers
        for stream in (RESULTS_STREAM, results_stream("reader-2")):
            assert RESULTS_IDLE_TTL_S - 120 < client.ttl(stream) <= RESULTS_IDLE_TTL_S, stream
        ids = ["n0.md#0", "n7.md#1"]
        a, b = first_index.vectors.vectors_of(ids), second_index.vectors.vectors_of(ids)
        assert all((a[cid] == b[cid]).all() for cid in ids)  # the very same vectors
    finally:
        stop(worker)
        first.stop()
        second.stop()
        first_index.close()
        second_index.close()


def test_a_job_reply_cannot_name_another_key(valkey_url: str, tmp_path: Path):
    client = redis.Redis.from_url(valkey_url)
    client.xadd(JOBS_STREAM, {"id": "x.md#0", "hash": "h", "text": "some text", "reply": "k0:tokens"})
    worker = Worker(valkey_url, tmp_path / "w.log")
    try:
        ready(worker)
        wait_for(lambda: client.xlen(RESULTS_STREAM) == 1, 60, "the result in the default stream")
        assert not client.exists("k0:tokens")
        assert 0 < client.ttl(RESULTS_STREAM) <= RESULTS_IDLE_TTL_S  # nobody reads it: it goes away in time
    finally:
        stop(worker)


def test_status_lists_embedders_as_they_come_and_go(valkey_url: str, tmp_path: Path):
    client = redis.Redis.from_url(valkey_url)
    pipeline = EmbeddingPipeline(open_index(tmp_path / "index"), valkey_url, gone_after_s=2.0)
    names = lambda: {e.name: e for e in pipeline.embedders()}  # noqa: E731
    a = Worker(valkey_url, tmp_path / "a.log")
    ready(a)
    b = Worker(valkey_url, tmp_path / "b.log")
    try:
        ready(b)
        wait_for(lambda: len(names()) == 2, 30, "both workers on the job stream")
        listed = names()
        name_of_a = next(n for n in listed if n.endswith(f"-{a.proc.pid}"))
        assert not any(e.gone for e in listed.values())

        stop(a)  # SIGTERM: the worker leaves the group itself
        wait_for(lambda: name_of_a not in names(), 30, "the stopped worker to leave the listing")

        os.kill(b.proc.pid, signal.SIGSTOP)  # a frozen host: silent, no jobs held → dropped after the bound
        wait_for(lambda: not names(), 30, "the silent worker to be dropped")
        os.kill(b.proc.pid, signal.SIGCONT)
        wait_for(lambda: len(names()) == 1, 30, "the worker back on its next read")

        # a worker that died holding a job: listed as gone until another reclaims the job
        ensure_group(client, JOBS_STREAM, EMBED_GROUP)
        os.kill(b.proc.pid, signal.SIGSTOP)
        wait_for(lambda: not names(), 30, "the frozen worker dropped (its last blocking read is over)")
        client.xadd(JOBS_STREAM, {"id": "held.md#0", "hash": "h", "text": "a held job"})
        client.xreadgroup(EMBED_GROUP, "embedder-ghost-1", {JOBS_STREAM: ">"}, count=1)
        wait_for(lambda: names().get("embedder-ghost-1", None) is not None and names()["embedder-ghost-1"].gone, 30)
        ghost = names()["embedder-ghost-1"]
        assert ghost.pending == 1 and ghost.idle_ms > 2000
        os.kill(b.proc.pid, signal.SIGCONT)  # the live worker reclaims it (claim idle 1.5 s) and answers
        wait_for(lambda: client.xlen(RESULTS_STREAM) == 1, 60, "the reclaimed job's result")
        wait_for(lambda: "embedder-ghost-1" not in names(), 30, "the ghost to be dropped")
    finally:
        for w in (a, b):
            stop(w)
        pipeline.stop()
