"""The OpenAI-compatible backend against a local HTTP server speaking that protocol.

The server answers with shuffled `data` (matched by index), a 429 and a 503 before
succeeding, and a 400 for any batch holding an input over 50 characters.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np
import pytest

from k0maru_common import DependencyFailed, InvalidInput
from k0maru_embedder._http import HttpEmbedder, HttpSettings

pytestmark = pytest.mark.integration
DIM = 8


def vector_for(text: str) -> list[float]:
    rng = np.random.default_rng(abs(hash(text)) % 2**32)
    return rng.standard_normal(DIM).tolist()


class Handler(BaseHTTPRequestHandler):
    script: ClassVar[list[int]] = []  # status codes to answer before succeeding
    calls: ClassVar[list[list[str]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Handler.calls.append(body["input"])
        if Handler.script:
            self._send(Handler.script.pop(0), {"error": "try later"})
            return
        if any(len(t) > 50 for t in body["input"]):
            self._send(400, {"error": {"message": "input too long"}})
            return
        data = [{"index": i, "embedding": vector_for(t), "object": "embedding"} for i, t in enumerate(body["input"])]
        random.shuffle(data)
        self._send(200, {"data": data, "model": body["model"]})

    def _send(self, status: int, payload: object) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Handler.script, Handler.calls = [], []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def make(url: str, **kw: object) -> HttpEmbedder:
    return HttpEmbedder(HttpSettings(url, "text-embedding-test", "k", DIM, batch_size=4, max_retries=3, **kw))  # type: ignore[arg-type]


def expected(text: str) -> np.ndarray:
    v = np.asarray(vector_for(text), dtype=np.float32)
    return v / np.linalg.norm(v)


def test_vectors_follow_their_index_across_batches(endpoint: str):
    texts = [f"text number {i}" for i in range(10)]
    out = make(endpoint).embed(texts)
    for text, row in zip(texts, out, strict=True):
        assert np.allclose(row, expected(text), atol=1e-5)
    assert [len(c) for c in Handler.calls] == [4, 4, 2]


def test_429_and_503_are_retried(endpoint: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("k0maru_embedder._http.time.sleep", lambda s: None)
    Handler.script = [429, 503]
    out = make(endpoint).embed(["a", "b"])
    assert np.allclose(out[1], expected("b"), atol=1e-5) and len(Handler.calls) == 3


def test_endpoint_down_is_a_dependency_failure(endpoint: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("k0maru_embedder._http.time.sleep", lambda s: None)
    Handler.script = [503] * 10
    with pytest.raises(DependencyFailed):
        make(endpoint).embed(["a"])


def test_oversized_item_fails_alone(endpoint: str):
    embedder = make(endpoint)
    texts = ["short one", "x" * 80, "short two"]
    with pytest.raises(InvalidInput, match="item 1"):
        embedder.embed(texts)
    results = embedder.embed_each(texts)
    assert isinstance(results[1], InvalidInput)
    assert np.allclose(results[0], expected("short one"), atol=1e-5)  # type: ignore[arg-type]
    assert np.allclose(results[2], expected("short two"), atol=1e-5)  # type: ignore[arg-type]


def test_embedder_over_a_down_endpoint_is_not_serving_and_says_why(valkey_url: str, tmp_path):
    """The http backend is probed through its endpoint: while it answers 503, health is
    NOT_SERVING and Info gives the reason; once it answers, the worker serves."""
    import grpc

    from k0maru.v1 import embedder_pb2, embedder_pb2_grpc
    from k0maru_common import health_state
    from tests.integration.test_embedder import Worker

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Handler.script, Handler.calls = [503] * 9, []  # the first probe and its retries fail
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    worker = Worker(
        valkey_url, tmp_path / "e.log", K0_MODEL="http", K0_HTTP_BASE_URL=url, K0_HTTP_MODEL="m", K0_DIMENSION=str(DIM)
    )
    try:
        states: list[tuple[str, str]] = []
        with grpc.insecure_channel(worker.address) as channel:
            stub = embedder_pb2_grpc.EmbedderStub(channel)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and (not states or states[-1][1] != "SERVING"):
                try:
                    info = stub.Info(embedder_pb2.EmbedderInfoRequest(), timeout=2).state
                except grpc.RpcError:
                    info = "no answer"
                states.append((health_state(worker.address, "k0maru.v1.Embedder"), info))
                time.sleep(0.2)
        assert (
            "NOT_SERVING",
            "NOT_SERVING: model probe failed: embedding endpoint kept failing after 5 retries",
        ) in states
        assert states[-1] == ("SERVING", "SERVING"), states[-5:]
    finally:
        worker.stop()
        server.shutdown()
        server.server_close()
