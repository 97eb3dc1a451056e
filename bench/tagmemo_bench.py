"""TagMemo benchmarks.

Run: .venv/bin/python bench/tagmemo_bench.py [--workdir DIR --queries QUERIES.jsonl] [--tags N]
  - in-process at N tags (wall time, and this thread's CPU time: the machine is shared) (default 1,000, 384-d): EPA build, the whole V3.7 reshaping of one
    query (EPA projection, pyramid, both passes, fused vector), SVD dedup of 30 candidates;
    the tag vectors are real-looking: 40 topics, each tag a topic centre plus noise
  - the hybrid search path in-process (HybridSearcher, no gRPC) over 10k chunks with vectors
    and 1k embedded tags, query vectors from its cache: TagMemo off / on / on + dedup, interleaved
  - through gRPC on an eval index built by `k0maru eval beir` (--workdir, optional): hybrid
    search p50/p99 with TagMemo off, on (raw+fused, fused) and on + dedup, in blocks
    alternated over 3 rounds so the shared machine's load drift hits all alike
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the retriever runs (its __main__)

import numpy as np
from _common import emit, summary

from k0maru.v1 import common_pb2, retriever_pb2
from k0maru_cli._eval import load_jsonl, stack_for, wait_indexed
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index
from k0maru_retriever._dedup import deduplicate
from k0maru_retriever._epa import EpaBasis
from k0maru_retriever._index import NoteIndex, chunk_id, vector_key
from k0maru_retriever._params import ParamsFile, RagParams
from k0maru_retriever._search import FusionParams, HybridSearcher, QueryEmbedder
from k0maru_retriever._shaping import QueryShaper
from k0maru_retriever._state import IndexState
from k0maru_retriever._tagmemo import TagSpace, reshape_query
from k0maru_retriever._tags import CoOccurrence, TagIndex, tag_key
from k0maru_retriever._vectors import EdgeVectorStore


def clustered(n: int, d: int, rng: np.random.Generator, topics: int = 40) -> np.ndarray:
    centres = rng.standard_normal((topics, d))
    v = centres[rng.integers(0, topics, n)] + 0.6 * rng.standard_normal((n, d))
    out: np.ndarray = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return out


def in_process(n_tags: int, d: int = 384) -> None:
    rng = np.random.default_rng(3)
    vectors = clustered(n_tags, d, rng)
    names = [f"tag{i}" for i in range(n_tags)]
    t0 = time.perf_counter()
    epa = EpaBasis.build(names, vectors)
    build_ms = (time.perf_counter() - t0) * 1000
    cooc = CoOccurrence()
    for _ in range(3 * n_tags):  # notes with 2–4 tags
        cooc.add(rng.choice(names, rng.integers(2, 5), replace=False).tolist())
    space = TagSpace(names, vectors, epa, cooc.neighbours)
    params = RagParams()
    queries = clustered(300, d, rng)
    lat, cpu = [], []
    for q in queries:
        t1, c1 = time.perf_counter(), time.thread_time()
        reshape_query(q, space, params, None, [])
        lat.append((time.perf_counter() - t1) * 1000)
        cpu.append((time.thread_time() - c1) * 1000)
    dd = []
    for _ in range(200):
        cands = clustered(30, d, rng)
        c1 = time.thread_time()
        deduplicate(cands, np.linspace(1, 0.3, 30), queries[0], 10)
        dd.append((time.thread_time() - c1) * 1000)
    emit(
        "tagmemo_in_process",
        tags=n_tags,
        epa_build_ms=round(build_ms, 1),
        epa_axes=epa.dimension if epa else 0,
        reshape_wall=summary(lat[20:]),
        reshape_cpu=summary(cpu[20:]),
        dedup_30_cpu=summary(dd[20:]),
    )


def searcher_10k(tmp: Path, n_chunks: int = 10_000, n_tags: int = 1000, d: int = 384) -> None:
    """HybridSearcher in-process (no gRPC) over 10k chunks with vectors and 1k embedded tags:
    the search path with TagMemo off / on, query vectors from the searcher's cache (no embedder)."""
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(3000)]
    tag_names = [f"topic-{i}" for i in range(n_tags)]
    tag_vectors = clustered(n_tags, d, rng)
    index = NoteIndex(
        Bm25Index(tmp / "bm25", BM25Analyzer()),
        EdgeVectorStore(tmp / "vectors", d),
        IndexState(tmp / "state.sqlite"),
        d,
        "bench",
        TagIndex(tmp / "tags.sqlite", "bench", d),
    )
    results = []
    for n in range(n_chunks // 4):
        tags = [tag_names[int(i)] for i in rng.choice(n_tags, 3, replace=False)]
        doc = common_pb2.Document(path=f"n{n}.md", title=f"Note {n}", diary="Root", tags=tags)
        centre = tag_vectors[[tag_names.index(t) for t in tags]].mean(axis=0)
        for c in range(4):
            doc.chunks.append(common_pb2.Chunk(index=c, text=" ".join(rng.choice(words, 40)), hash=f"{n}-{c}"))
        index.apply(doc)
        for chunk in doc.chunks:
            v = centre + 0.5 * rng.standard_normal(d) / np.sqrt(d)
            results.append(
                (
                    chunk_id(doc.path, chunk.index),
                    vector_key(doc, chunk, "bench"),
                    (v / np.linalg.norm(v)).astype(np.float32),
                )
            )
    index.commit()
    index.apply_vectors(results)
    index.tags.apply_vectors([(t, tag_key(t, "bench"), tag_vectors[i]) for i, t in enumerate(tag_names)])
    index.tags.rebuild_epa()
    embedder = QueryEmbedder("127.0.0.1:9")  # never called: every query vector is cached
    searcher = HybridSearcher(
        index, embedder, FusionParams(), "bench", QueryShaper(index, ParamsFile(tmp / "rag.json"))
    )
    queries = []
    for _ in range(200):
        text = " ".join(rng.choice(words, 4))
        embedder.remember(text, results[int(rng.integers(len(results)))][2])
        queries.append(text)
    on = retriever_pb2.TagMemoOptions(enabled=True)
    settings: list[tuple[str, dict[str, object]]] = [
        ("off", {}),
        ("tagmemo", {"tagmemo": on}),
        ("tagmemo+dedup", {"tagmemo": on, "dedup": True}),
    ]
    lat: dict[str, list[float]] = {name: [] for name, _ in settings}
    cpu: dict[str, list[float]] = {name: [] for name, _ in settings}
    for _round in range(3):
        for q in queries:
            for name, extra in settings:
                t0, c0 = time.perf_counter(), time.process_time()
                searcher.search(retriever_pb2.SearchRequest(query=q, limit=10, **extra))  # type: ignore[arg-type]
                lat[name].append((time.perf_counter() - t0) * 1000)
                cpu[name].append((time.process_time() - c0) * 1000)
    emit(
        "tagmemo_hybrid_in_process",
        chunks=n_chunks,
        tags=n_tags,
        wall={k: summary(v[len(queries) :]) for k, v in lat.items()},
        cpu={k: summary(v[len(queries) :]) for k, v in cpu.items()},
    )
    embedder.close()
    index.close()


def through_grpc(workdir: Path, queries_path: Path, limit: int = 300, rounds: int = 3) -> None:
    """Blocks of every query per setting, the settings alternated over rounds (load drifts)."""
    vault = workdir / "vault"
    params_path = workdir / "data" / "rag_params.json"
    queries = [q["text"] for q in load_jsonl(queries_path)][:limit]
    on = {"tagmemo": retriever_pb2.TagMemoOptions(enabled=True)}
    configs: dict[str, tuple[str, dict[str, object]]] = {
        "off": ("raw+fused", {}),
        "tagmemo_raw+fused": ("raw+fused", on),
        "tagmemo_fused": ("fused", on),
        "tagmemo_raw+fused+dedup": ("raw+fused", {**on, "dedup": True}),
    }
    with stack_for(vault, workdir / "data", embedders=1) as client:
        wait_indexed(client, need_vectors=True)
        status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        for q in queries:  # warm the query-vector cache: every setting then pays the same
            client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10))
        lat: dict[str, list[float]] = {name: [] for name in configs}
        for _round in range(rounds):
            for name, (vector_query, extra) in configs.items():
                params_path.write_text(json.dumps({"Retriever": {"vectorQuery": vector_query}}))
                for q in queries:
                    t0 = time.perf_counter()
                    client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10, **extra))  # type: ignore[arg-type]
                    lat[name].append((time.perf_counter() - t0) * 1000)
        params_path.unlink(missing_ok=True)
        emit(
            "tagmemo_hybrid_grpc",
            chunks=status.chunks,
            tags=status.tags_with_vectors,
            epa_axes=status.epa_axes,
            **{name: summary(v) for name, v in lat.items()},
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, help="an eval workdir (vault/ and data/) to measure through gRPC")
    parser.add_argument("--queries", type=Path, help="the dataset's queries.jsonl (with --workdir)")
    parser.add_argument("--tags", type=int, default=1000)
    args = parser.parse_args()
    in_process(args.tags)
    with tempfile.TemporaryDirectory() as d:
        searcher_10k(Path(d))
    if args.workdir and args.queries:
        through_grpc(args.workdir, args.queries)
    print(json.dumps({"done": True}))


if __name__ == "__main__":
    main()
