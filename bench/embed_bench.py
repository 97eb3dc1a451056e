"""Embedder benchmarks, side by side in one run.

Run: .venv/bin/python bench/embed_bench.py [--chunks 400]
  - bare onnxruntime (same model file, tokenizer, 1 intra-op thread, length-sorted batches as the
    embedder makes them; the default preset's model)
    against the service path (Redis stream jobs → worker process → results), same chunks;
    target: service overhead ≤ 10 %
  - one worker against two on this machine
  - Embed (gRPC) latency for a short query, p50/p99
  - re-index after editing one paragraph of a 20-chunk note: chunks embedded (target 1)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import redis
from _common import SHARED, emit, summary
from tokenizers import Tokenizer

from k0maru.v1 import embedder_pb2, embedder_pb2_grpc, retriever_pb2
from k0maru_cli import Launcher, free_port, valkey_argv, wait_for_redis
from k0maru_common import JOBS_STREAM, RESULTS_STREAM, open_channel, orphan_guard, wait_until_serving
from k0maru_embedder._model import length_batches
from k0maru_embedder._presets import DEFAULT_PRESET, resolve_preset
from k0maru_embedder._slim import slim_model


def scifact_chunks(n: int) -> list[str]:
    texts = []
    with (SHARED / "data" / "beir" / "scifact" / "corpus.jsonl").open() as rows:
        for row in rows:
            doc = json.loads(row)
            words = doc["text"].split()
            if len(words) >= 90:
                texts.append(" ".join(words[:90]))  # about 128 model tokens
            if len(texts) == n:
                break
    return texts


def bare_onnxruntime(texts: list[str], model: str = DEFAULT_PRESET) -> float:
    """Seconds for one onnxruntime session of one intra-op thread to embed `texts`, batched as the
    embedder batches them (`length_batches`: at most 32 texts for a float-MatMul preset, one per
    run for an int8-MatMul preset, whose graph is rewritten by `_slim.py` as the embedder does)."""
    preset = resolve_preset(model)
    tok = Tokenizer.from_file(str(preset.tokenizer_path))
    tok.no_padding()
    tok.enable_truncation(256)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    graph = slim_model(preset.model_path, int8_matmul=True) if preset.int8_matmul else str(preset.model_path)
    session = ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])
    t0 = time.perf_counter()
    enc = tok.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(enc[i].ids))
    for idx in length_batches(order, [len(e.ids) for e in enc], 1 if preset.int8_matmul else 32):
        width = max(len(enc[i].ids) for i in idx)
        ids = np.zeros((len(idx), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for r, i in enumerate(idx):
            ids[r, : len(enc[i].ids)] = enc[i].ids
            mask[r, : len(enc[i].ids)] = 1
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        _ = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return time.perf_counter() - t0


def valkey(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(orphan_guard(valkey_argv(port, tmp)), stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    wait_for_redis(url, 10.0)
    return proc, url


def workers(n: int, url: str) -> list[tuple[subprocess.Popen[bytes], str]]:
    out = []
    for _ in range(n):
        addr = f"127.0.0.1:{free_port()}"
        proc = subprocess.Popen(
            orphan_guard([sys.executable, "-m", "k0maru_embedder"]),
            env={**os.environ, "K0_GRPC_ADDR": addr, "K0_REDIS_URL": url, "K0_LOG_LEVEL": "WARNING"},
        )
        out.append((proc, addr))
    for _proc, addr in out:
        assert wait_until_serving(addr, "k0maru.v1.Embedder", 60)
    return out


def service_throughput(texts: list[str], url: str, prefix: str) -> float:
    client = redis.Redis.from_url(url)
    client.delete(RESULTS_STREAM)
    client.flushdb()  # no cache hits: every text is computed
    t0 = time.perf_counter()
    pipe = client.pipeline()
    for i, t in enumerate(texts):
        pipe.xadd(JOBS_STREAM, {"id": f"{prefix}{i}", "hash": "h", "text": t})
    pipe.execute()
    while client.xlen(RESULTS_STREAM) < len(texts):
        time.sleep(0.01)
    return time.perf_counter() - t0


def reindex_one_paragraph(tmp: Path) -> None:
    vault = tmp / "vault"
    vault.mkdir()
    sections = [f"## Part {i}\n\nParagraph {i} explains step {i} of the migration in detail." for i in range(20)]
    (vault / "long.md").write_text("# Long note\n\n" + "\n\n".join(sections) + "\n")
    launcher = Launcher(vault, tmp / "data", embedders=1, http_port=0)
    state = launcher.start()
    client = state.client()

    def status() -> retriever_pb2.IndexStatusResponse:
        return client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())

    def processed() -> int:
        with open_channel(state.addresses["embedder-1"], os.environ.get("K0_GRPC_TOKEN", "")) as ch:
            return int(embedder_pb2_grpc.EmbedderStub(ch).Info(embedder_pb2.EmbedderInfoRequest(), timeout=5).processed)

    try:
        while not (status().chunks and status().chunks == status().chunks_with_vectors):
            time.sleep(0.2)
        before, chunks = processed(), status().chunks
        text = (
            (vault / "long.md")
            .read_text()
            .replace("step 7 of the migration", "step 7 (now with a rollback) of the migration")
        )
        seq = status().last_applied_seq
        (vault / "long.md").write_text(text)
        while status().last_applied_seq == seq or status().chunks != status().chunks_with_vectors:
            time.sleep(0.2)
        time.sleep(1.0)
        emit("reindex_after_one_paragraph_edit", chunks_in_note=chunks, chunks_embedded=processed() - before)
    finally:
        client.close()
        launcher.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=400)
    args = parser.parse_args()
    texts = scifact_chunks(args.chunks)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        proc, url = valkey(tmp)
        bare = bare_onnxruntime(texts)
        one = workers(1, url)
        t1 = service_throughput(texts, url, "a")
        bare_again = bare_onnxruntime(texts)  # bracket the service run against drift
        two = one + workers(1, url)
        t2 = service_throughput(texts, url, "b")
        emit(
            "embed_throughput",
            chunks=len(texts),
            bare_chunks_per_s=round(len(texts) / ((bare + bare_again) / 2), 1),
            service_1_worker_chunks_per_s=round(len(texts) / t1, 1),
            service_2_workers_chunks_per_s=round(len(texts) / t2, 1),
            overhead_pct=round(100 * (t1 / ((bare + bare_again) / 2) - 1), 1),
        )
        with open_channel(one[0][1], os.environ.get("K0_GRPC_TOKEN", "")) as ch:
            stub = embedder_pb2_grpc.EmbedderStub(ch)
            lat = []
            for i in range(200):
                q = f"how do I fix error number {i} in the borrow checker"
                t0 = time.perf_counter()
                stub.Embed(embedder_pb2.EmbedRequest(texts=[q], is_query=True), timeout=10)
                lat.append((time.perf_counter() - t0) * 1000)
        emit("embed_rpc_latency", detail=summary(lat))
        for p, _a in two:
            p.terminate()
        proc.terminate()
        reindex_one_paragraph(tmp)


if __name__ == "__main__":
    main()
