"""One worker's onnxruntime session with 1 intra-op thread against 2, in-process, side by side.

Run: .venv/bin/python bench/embed_threads.py [--passes 3]
  - one query at a time (300 SciFact claims): p50 / p90 ms
  - the same queries while the session embeds SciFact chunks in bulk in another thread (a
    first build going on beside an agent's searches): query p50 / p90 ms
  - bulk alone (150 SciFact chunks): chunks/s
  - the largest difference between the two sessions' vectors
Needs ../shared. Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np
from _common import emit
from embed_batching import texts_of

from k0maru_embedder._model import OnnxEmbedder
from k0maru_embedder._presets import DEFAULT_PRESET, resolve_preset


def query_ms(embedder: OnnxEmbedder, queries: list[str]) -> tuple[float, float]:
    lat = []
    for q in queries:
        t0 = time.perf_counter()
        embedder.embed([q], is_query=True)
        lat.append((time.perf_counter() - t0) * 1000)
    lat.sort()
    return round(statistics.median(lat), 2), round(lat[int(0.9 * len(lat))], 2)


def queries_during_bulk(embedder: OnnxEmbedder, queries: list[str], chunks: list[str]) -> tuple[float, float]:
    """Query latency while another thread embeds `chunks` again and again on the same session."""
    stop = threading.Event()

    def bulk() -> None:
        while not stop.is_set():
            for start in range(0, len(chunks), 8):
                if stop.is_set():
                    return
                embedder.embed(chunks[start : start + 8])

    worker = threading.Thread(target=bulk)
    worker.start()
    time.sleep(0.5)
    try:
        return query_ms(embedder, queries)
    finally:
        stop.set()
        worker.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--model", default=DEFAULT_PRESET)
    args = parser.parse_args()
    queries = texts_of("scifact/queries.jsonl", 300)
    chunks = texts_of("scifact/corpus.jsonl", 150)
    sessions = {n: OnnxEmbedder(resolve_preset(args.model), threads=n) for n in (1, 2)}
    diff = float(np.abs(sessions[1].embed(chunks[:64]) - sessions[2].embed(chunks[:64])).max())
    emit("embed_threads_vectors", model=args.model, max_abs_diff=diff)
    for run in range(args.passes):
        for threads, embedder in sessions.items():
            t0 = time.perf_counter()
            embedder.embed(chunks)
            bulk_s = time.perf_counter() - t0
            p50, p90 = query_ms(embedder, queries)
            b50, b90 = queries_during_bulk(embedder, queries[:100], chunks)
            emit(
                "embed_threads",
                model=args.model,
                run=run,
                threads=threads,
                query_p50_ms=p50,
                query_p90_ms=p90,
                query_during_bulk_p50_ms=b50,
                query_during_bulk_p90_ms=b90,
                bulk_chunks_per_s=round(len(chunks) / bulk_s, 1),
            )


if __name__ == "__main__":
    main()
