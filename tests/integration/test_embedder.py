"""Embedder workers on a real Valkey: crashes lose nothing, poison jobs go to dead letter, bad input is refused."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
import redis

from k0maru.v1 import embedder_pb2, embedder_pb2_grpc
from k0maru_cli import free_port
from k0maru_common import (
    DEAD_STREAM,
    EMBED_GROUP,
    JOBS_STREAM,
    RESULTS_STREAM,
    orphan_guard,
    vector_from_bytes,
    wait_until_serving,
)
from k0maru_retriever._search import QueryEmbedder
from tests.conftest import wait_for

pytestmark = pytest.mark.integration


class Worker:
    def __init__(self, redis_url: str, log: Path, claim_idle_ms: int = 1500, **env: str) -> None:
        self.address = f"127.0.0.1:{free_port()}"
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                orphan_guard([sys.executable, "-m", "k0maru_embedder"]),
                stdout=out,
                stderr=subprocess.STDOUT,
                env={
                    **os.environ,
                    "K0_GRPC_ADDR": self.address,
                    "K0_REDIS_URL": redis_url,
                    "K0_CLAIM_IDLE_MS": str(claim_idle_ms),
                    "K0_BATCH_SIZE": "8",
                    **env,
                },
            )

    def wait_ready(self) -> None:
        assert wait_until_serving(self.address, "k0maru.v1.Embedder", 60), self.log.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)


@pytest.fixture
def workers(valkey_url: str, tmp_path: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        w.stop()


def results(client: redis.Redis) -> list[tuple[str, str, bytes]]:
    return [(f[b"id"].decode(), f[b"hash"].decode(), f[b"vector"]) for _id, f in client.xrange(RESULTS_STREAM)]


def test_kill_9_mid_batch_loses_nothing(valkey_url: str, workers: list[Worker], tmp_path: Path):
    client = redis.Redis.from_url(valkey_url)
    victim = Worker(valkey_url, tmp_path / "victim.log")
    workers.append(victim)
    victim.wait_ready()
    n = 240
    for i in range(n):
        client.xadd(
            JOBS_STREAM, {"id": f"note.md#{i}", "hash": f"h{i}", "text": f"chunk number {i} about topic {i % 13}"}
        )
    wait_for(lambda: client.xlen(RESULTS_STREAM) >= 16, 60, "the first results")
    os.kill(victim.proc.pid, signal.SIGKILL)
    victim.proc.wait()
    done_before = client.xlen(RESULTS_STREAM)
    assert done_before < n, "the victim finished everything before it was killed"
    survivor = Worker(valkey_url, tmp_path / "survivor.log")
    workers.append(survivor)
    survivor.wait_ready()
    wait_for(lambda: {r[0] for r in results(client)} == {f"note.md#{i}" for i in range(n)}, 120, "every job's result")
    wait_for(lambda: client.xlen(JOBS_STREAM) == 0, 30, "the job stream to drain")
    applied: dict[str, str] = {}
    for job_id, job_hash, vector in results(client):  # what the retriever applies, idempotently
        assert vector_from_bytes(vector).shape == (384,)
        assert applied.setdefault(job_id, job_hash) == job_hash
    assert len(applied) == n and client.xlen(DEAD_STREAM) == 0


def thread_nice(pid: int) -> dict[int, int]:
    """Niceness of every thread of a process (Linux: /proc/<pid>/task/<tid>/stat, field 19)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = int((task / "stat").read_text().rsplit(")", 1)[1].split()[16])
        except (OSError, ValueError):  # a thread that ended meanwhile
            continue
    return out


def test_only_the_background_threads_are_niced(valkey_url: str, workers: list[Worker], tmp_path: Path):
    """K0_WORKER_NICE lowers the stream worker's thread and the query session's, not the process:
    its start-up and gRPC handlers keep their priority; and a second query session (asked for by
    K0_QUERY_THREADS) arrives after SERVING."""
    base = os.getpriority(os.PRIO_PROCESS, 0)  # what the worker inherits from this test
    if base >= 10:
        pytest.skip("this test runs at nice >= 10 already")
    w = Worker(valkey_url, tmp_path / "w.log", K0_WORKER_NICE="10", K0_QUERY_THREADS="2")
    workers.append(w)
    w.wait_ready()
    niced = wait_for(lambda: [t for t, n in thread_nice(w.proc.pid).items() if n == 10], 30, "a niced thread")
    assert w.proc.pid not in niced and thread_nice(w.proc.pid)[w.proc.pid] == base
    wait_for(lambda: w.log.read_text().count("loaded minilm-l6-int8") == 2, 60, "the query session")
    with grpc.insecure_channel(w.address) as channel:
        reply = embedder_pb2_grpc.EmbedderStub(channel).Embed(
            embedder_pb2.EmbedRequest(texts=["a query"], is_query=True), timeout=30
        )
    assert reply.dimension == 384 and len(reply.vectors[0].values) == 384


def test_a_two_thread_session_has_its_pool_niced_and_no_second_session(
    valkey_url: str, workers: list[Worker], tmp_path: Path
):
    """K0_THREADS=2 (what the launcher gives a lone embedder on two cores): onnxruntime's pool
    thread is niced with the stream worker, the process's own thread is not, and queries are
    answered by the same session (K0_QUERY_THREADS 0 follows K0_THREADS: no second load)."""
    base = os.getpriority(os.PRIO_PROCESS, 0)
    if base >= 10:
        pytest.skip("this test runs at nice >= 10 already")
    w = Worker(valkey_url, tmp_path / "w.log", K0_WORKER_NICE="10", K0_THREADS="2")
    workers.append(w)
    w.wait_ready()
    niced = wait_for(lambda: [t for t, n in thread_nice(w.proc.pid).items() if n == 10][1:], 30, "two niced threads")
    assert w.proc.pid not in niced and thread_nice(w.proc.pid)[w.proc.pid] == base
    with grpc.insecure_channel(w.address) as channel:
        reply = embedder_pb2_grpc.EmbedderStub(channel).Embed(
            embedder_pb2.EmbedRequest(texts=["a query"], is_query=True), timeout=30
        )
    assert len(reply.vectors[0].values) == 384
    wait_for(lambda: "queries share the stream's session (2 threads)" in w.log.read_text(), 30, "the decision")
    assert w.log.read_text().count("loaded minilm-l6-int8") == 1


def test_poison_job_goes_to_dead_letter_and_others_go_on(valkey_url: str, workers: list[Worker], tmp_path: Path):
    client = redis.Redis.from_url(valkey_url)
    w = Worker(valkey_url, tmp_path / "w.log")
    workers.append(w)
    w.wait_ready()
    client.xadd(JOBS_STREAM, {"id": "a#0", "hash": "h", "text": "a fine chunk"})
    client.xadd(JOBS_STREAM, {"id": "poison#0", "hash": "h", "text": "   \n  "})
    client.xadd(
        JOBS_STREAM, {"id": "b#0", "hash": "h", "text": b"invalid utf-8 \xff\xfe survives".decode("utf-8", "replace")}
    )
    client.xadd(JOBS_STREAM, {"id": "c#0", "hash": "h", "text": "word " * 20_000})
    wait_for(lambda: client.xlen(RESULTS_STREAM) == 3 and client.xlen(DEAD_STREAM) == 1, 60, "results and dead letter")
    dead = client.xrange(DEAD_STREAM)[0][1]
    assert dead[b"id"] == b"poison#0" and b"empty" in dead[b"reason"]
    assert {r[0] for r in results(client)} == {"a#0", "b#0", "c#0"}
    assert w.proc.poll() is None


def test_a_backlog_is_read_in_windows_and_answered_once(valkey_url: str, workers: list[Worker], tmp_path: Path):
    """160 jobs queued before two workers start (batches of 8: windows of 32 once 128 wait): every
    job answered exactly once, with the vector the Embed RPC gives for the same text."""
    client = redis.Redis.from_url(valkey_url)
    texts = {f"n{i}.md#0": " ".join(f"word{j} topic{i % 7}" for j in range(1 + (i * 37) % 90)) for i in range(160)}
    for cid, text in texts.items():
        client.xadd(JOBS_STREAM, {"id": cid, "hash": "h", "text": text})
    pair = [Worker(valkey_url, tmp_path / f"w{k}.log", claim_idle_ms=30_000) for k in range(2)]
    workers.extend(pair)
    for w in pair:
        w.wait_ready()
    wait_for(lambda: client.xlen(RESULTS_STREAM) >= len(texts), 120, "every result")
    got = results(client)
    assert sorted(cid for cid, _h, _v in got) == sorted(texts)  # each once: no job done twice
    assert client.xlen(DEAD_STREAM) == 0 and client.xlen(JOBS_STREAM) == 0
    sample = [got[0], got[len(got) // 2], got[-1]]
    with grpc.insecure_channel(pair[0].address) as channel:
        reply = embedder_pb2_grpc.EmbedderStub(channel).Embed(
            embedder_pb2.EmbedRequest(texts=[texts[cid] for cid, _h, _v in sample]), timeout=60
        )
    for (_cid, _h, vector), expected in zip(sample, reply.vectors, strict=True):
        assert np.allclose(vector_from_bytes(vector), np.array(expected.values, dtype=np.float32), atol=1e-5)


def test_identical_text_is_embedded_once(valkey_url: str, workers: list[Worker], tmp_path: Path):
    client = redis.Redis.from_url(valkey_url)
    for i in range(10):  # queued before the worker starts: copies share a batch (8) and then the cache
        client.xadd(
            JOBS_STREAM,
            {
                "id": f"copy{i}.md#0",
                "hash": "h",
                "text": "the very  same paragraph\n" if i % 2 else "the very same paragraph",
            },
        )
    w = Worker(valkey_url, tmp_path / "w.log")
    workers.append(w)
    w.wait_ready()
    wait_for(lambda: client.xlen(RESULTS_STREAM) == 10, 60, "results")
    with grpc.insecure_channel(w.address) as channel:
        info = embedder_pb2_grpc.EmbedderStub(channel).Info(embedder_pb2.EmbedderInfoRequest(), timeout=5)
    assert info.processed == 1  # whitespace differences normalise away; one ONNX computation in all
    assert len({r[2] for r in results(client)}) == 1


def test_a_worker_that_cannot_reach_redis_says_so(workers: list[Worker], tmp_path: Path):
    """A scaled worker given a mistyped Redis host answered SERVING everywhere, its worker
    "running" with no error, and did nothing. Its Info now says DEGRADED and why; queries still
    answer (they need no Redis)."""
    w = Worker(f"redis://127.0.0.1:{free_port()}/0", tmp_path / "w.log")
    workers.append(w)
    w.wait_ready()

    def state() -> str:
        with grpc.insecure_channel(w.address) as channel:
            info = embedder_pb2_grpc.EmbedderStub(channel).Info(embedder_pb2.EmbedderInfoRequest(), timeout=5)
        return str(info.state)

    wait_for(lambda: state().startswith("DEGRADED: stream worker takes no jobs: Redis unavailable"), 60, "DEGRADED")
    with grpc.insecure_channel(w.address) as channel:
        reply = embedder_pb2_grpc.EmbedderStub(channel).Embed(
            embedder_pb2.EmbedRequest(texts=["a query"], is_query=True), timeout=30
        )
    assert len(reply.vectors) == 1


def test_embed_rpc_refuses_bad_input(valkey_url: str, workers: list[Worker], tmp_path: Path):
    w = Worker(valkey_url, tmp_path / "w.log")
    workers.append(w)
    w.wait_ready()
    with grpc.insecure_channel(w.address) as channel:
        stub = embedder_pb2_grpc.EmbedderStub(channel)
        ok = stub.Embed(embedder_pb2.EmbedRequest(texts=["borrow checker", "x " * 30_000], is_query=True), timeout=30)
        assert len(ok.vectors) == 2 and len(ok.vectors[0].values) == 384 and ok.model.startswith("minilm")
        for texts, code in (
            (["  "], grpc.StatusCode.INVALID_ARGUMENT),
            ([], grpc.StatusCode.INVALID_ARGUMENT),
            (["x" * 200_000], grpc.StatusCode.RESOURCE_EXHAUSTED),
            (["t"] * 300, grpc.StatusCode.RESOURCE_EXHAUSTED),
        ):
            with pytest.raises(grpc.RpcError) as err:
                stub.Embed(embedder_pb2.EmbedRequest(texts=texts), timeout=10)
            assert err.value.code() == code


def test_query_vectors_keep_coming_while_one_worker_hangs(valkey_url: str, workers: list[Worker], tmp_path: Path):
    """The retriever's QueryEmbedder over two real workers, one stopped (SIGSTOP: its port still
    accepts connections): every query still gets its vector, the hung worker's attempts time out
    and are tried on the other, and afterwards queries go to both at once (the hedge)."""
    pair = [Worker(valkey_url, tmp_path / f"w{i}.log") for i in range(2)]
    workers.extend(pair)
    for w in pair:
        w.wait_ready()
    embedder = QueryEmbedder("ipv4:" + ",".join(w.address for w in pair), timeout_s=1.0)
    try:
        alone = embedder.embed("borrow checker error")
        assert alone is not None and alone.shape == (384,)
        os.kill(pair[0].proc.pid, signal.SIGSTOP)
        try:
            for i in range(6):  # round robin hands the hung worker every other attempt
                vector = embedder.embed(f"borrow checker error {i}")
                assert vector is not None and vector.shape == (384,), f"query {i} got no vector"
            assert embedder.hedging()
            again = embedder.embed("borrow checker error")
            assert again is not None and float(np.dot(again, alone)) > 0.9999
        finally:
            os.kill(pair[0].proc.pid, signal.SIGCONT)
    finally:
        embedder.close()
    # continued, the hung worker answers the calls queued meanwhile and must still stop on SIGTERM
    # at once: the kernel handed that signal to one of its busy threads, not the main one, and a
    # main thread that waited with no timeout never ran the handler (it ignored SIGTERM for good)
    pair[0].proc.terminate()
    try:
        code: int | str = pair[0].proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        code = "ignored SIGTERM"
        pair[0].proc.kill()
    assert code == 0, pair[0].log.read_text()[-2000:]


@pytest.mark.parametrize("content", [None, b"this is not an onnx model"])
def test_missing_or_corrupt_model_fails_fast_and_clearly(valkey_url: str, tmp_path: Path, content: bytes | None):
    model = tmp_path / "model.onnx"
    if content is not None:
        model.write_bytes(content)
    tokenizer = tmp_path / "tokenizer.json"
    from k0maru_embedder._presets import minilm_l6_int8

    tokenizer.write_bytes(minilm_l6_int8().tokenizer_path.read_bytes())
    w = Worker(
        valkey_url,
        tmp_path / "bad.log",
        K0_MODEL="custom",
        K0_MODEL_PATH=str(model),
        K0_TOKENIZER_PATH=str(tokenizer),
        K0_DIMENSION="384",
    )
    assert w.proc.wait(timeout=60) != 0
    log = w.log.read_text()
    assert ("model file missing" if content is None else "cannot be loaded") in log


class BlackHoleProxy:
    """A TCP proxy in front of Valkey. `black_hole()` turns the connections open at that moment
    into what a partitioned host leaves behind: nothing forwarded, nothing answered, and no FIN
    or RST; connections made afterwards are forwarded again (the network came back)."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._generation = 0
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def black_hole(self) -> None:
        self._generation += 1

    def close(self) -> None:
        for s in self._sockets:
            s.close()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # closed
            while True:
                self._forward(self._listener.accept()[0])

    def _forward(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self._upstream))
        self._sockets += [client, upstream]
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(a, b, self._generation), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, generation: int) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                if generation != self._generation:
                    return  # swallowed: the other side waits for an answer that never comes
                dst.sendall(data)


def test_a_redis_connection_that_goes_silent_is_not_a_worker_failure(
    valkey_url: str, workers: list[Worker], tmp_path: Path
):
    """A partition leaves the worker's Redis connection open and silent, with no RST. The read
    times out (redis-py's default socket timeout, 5 s), and the worker treats that like a Redis
    that refuses connections: it reconnects and goes on, jobs flow again. It used to count it as
    a failure of its loop: a restart each time, and after 5 in a row the embedder gave up and
    exited, queries included, because Redis did not answer for half a minute."""
    client = redis.Redis.from_url(valkey_url)
    proxy = BlackHoleProxy(int(valkey_url.rsplit(":", 1)[1].split("/")[0]))
    try:
        worker = Worker(f"redis://127.0.0.1:{proxy.port}/0", tmp_path / "w.log")
        workers.append(worker)
        worker.wait_ready()
        client.xadd(JOBS_STREAM, {"id": "before#0", "hash": "h", "text": "a chunk before the partition"})
        wait_for(lambda: "before#0" in {r[0] for r in results(client)}, 60, "the first result")
        proxy.black_hole()
        client.xadd(JOBS_STREAM, {"id": "after#0", "hash": "h", "text": "a chunk after the partition"})
        wait_for(lambda: "after#0" in {r[0] for r in results(client)}, 60, "a result after the partition")
        log = worker.log.read_text()
        assert "Redis unavailable (Timeout" in log and "stream worker restarts" not in log, log[-3000:]
        worker.stop()
    finally:
        proxy.close()
        client.close()


def test_a_stop_ends_the_wait_for_jobs_at_once(
    valkey_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    """An idle worker waits for jobs in a blocking read; its stop ends that read (CLIENT UNBLOCK on
    the reader's own connection) instead of waiting it out. With a read of 10 minutes, the worker's
    thread is gone when `stop` returns, it left the consumer group, and the read ended as a read
    with nothing to read: not by its connection being closed under it (which `stop` does last,
    after joining the thread for 5 s at most), which the worker would log as Redis unavailable."""
    from k0maru_embedder import _worker
    from k0maru_embedder._model import OnnxEmbedder
    from k0maru_embedder._presets import resolve_preset

    monkeypatch.setattr(_worker, "READ_BLOCK_MS", 600_000)
    client = redis.Redis.from_url(valkey_url)
    worker = _worker.StreamWorker(
        client, OnnxEmbedder(resolve_preset("minilm-l6-int8")), _worker.ThroughputMeter(), 8, 1500, 3
    )
    worker.start()
    try:

        def blocked_reads() -> int:
            return sum(1 for c in client.client_list() if c["cmd"] == "xreadgroup" and "b" in c["flags"])

        wait_for(lambda: blocked_reads() == 1, 60, "the worker's blocking read")
        worker.stop()
        assert not worker.alive and blocked_reads() == 0
        assert "Redis unavailable" not in caplog.text
        assert worker.consumer not in {c["name"].decode() for c in client.xinfo_consumers(JOBS_STREAM, EMBED_GROUP)}
    finally:
        worker.stop()
        client.close()


def test_a_stop_ends_a_window_after_its_batch_and_leaves_the_rest_pending(valkey_url: str):
    """A stop during a backlog waited for the whole window (4 batches: seconds of long chunks).
    Now the window ends after the batch under way, and the stop interrupts that batch's embedding
    (`OnnxEmbedder.interrupt`); the jobs not answered stay pending, never dead-lettered, to be
    reclaimed (XAUTOCLAIM) by another worker or the next start: none is lost or answered twice."""
    from k0maru_embedder import _worker
    from k0maru_embedder._model import OnnxEmbedder
    from k0maru_embedder._presets import resolve_preset

    client = redis.Redis.from_url(valkey_url)
    worker = _worker.StreamWorker(
        client, OnnxEmbedder(resolve_preset("minilm-l6-int8")), _worker.ThroughputMeter(), 8, 1500, 3
    )
    try:
        worker.ensure_group()
        for i in range(32):
            client.xadd(JOBS_STREAM, {"id": f"n{i}.md#0", "hash": "h", "text": f"note {i} about topic {i % 5}"})
        [(_stream, messages)] = client.xreadgroup(EMBED_GROUP, worker.consumer, {JOBS_STREAM: ">"}, 32)
        stop = threading.Event()
        stop.set()  # as if asked during the first batch
        worker.process_window(messages, stop)
        assert len(results(client)) == 8
        assert client.xpending(JOBS_STREAM, EMBED_GROUP)["pending"] == 24
        worker.stop()  # its embedding is interrupted from now on: a batch is left pending, not failed
        worker.process_window(messages[8:])
        assert len(results(client)) == 8 and client.xlen(DEAD_STREAM) == 0
        assert client.xpending(JOBS_STREAM, EMBED_GROUP)["pending"] == 24
        other = _worker.StreamWorker(
            client, OnnxEmbedder(resolve_preset("minilm-l6-int8")), _worker.ThroughputMeter(), 8, 1500, 3
        )
        other.process_window(messages[8:])  # a worker taking them over answers the rest, once
        assert len(results(client)) == 32 == len({cid for cid, _h, _v in results(client)})
    finally:
        client.close()
