"""TagMemo benchmarks.

Run: .venv/bin/python bench/tagmemo_bench.py [--workdir DIR --queries QUERIES.jsonl] [--tags N]
  - in-process at N tags (wall time, and this thread's CPU time: the machine is shared) (default 1,000, 384-d): EPA build, the whole V3.7 reshaping of one
    query (EPA projection, pyramid, both passes, fused vector), SVD dedup of 30 candidates;
    the tag vectors are real-looking: 40 topics, each tag a topic centre plus noise
  - through gRPC on an eval index built by `k0maru eval beir` (--workdir, optional): hybrid
    search p50/p99 with TagMemo off, on, and on + dedup, interleaved query by query so the
    shared machine's load hits all three alike
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _common import emit, summary

from k0maru.v1 import retriever_pb2
from k0maru_cli._eval import load_jsonl, stack_for, wait_indexed
from k0maru_retriever._dedup import deduplicate
from k0maru_retriever._epa import EpaBasis
from k0maru_retriever._params import RagParams
from k0maru_retriever._tagmemo import TagSpace, reshape_query
from k0maru_retriever._tags import CoOccurrence


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


def through_grpc(workdir: Path, queries_path: Path, limit: int = 300) -> None:
    vault = workdir / "vault"
    queries = [q["text"] for q in load_jsonl(queries_path)][:limit]
    configs = {
        "off": {},
        "tagmemo": {"tagmemo": retriever_pb2.TagMemoOptions(enabled=True)},
        "tagmemo+dedup": {"tagmemo": retriever_pb2.TagMemoOptions(enabled=True), "dedup": True},
    }
    with stack_for(vault, workdir / "data", embedders=1) as client:
        wait_indexed(client, need_vectors=True)
        status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        lat: dict[str, list[float]] = {name: [] for name in configs}
        for q in queries:  # the query vector is cached after the first config: all three pay the same
            client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10))
            for name, extra in configs.items():
                t0 = time.perf_counter()
                client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10, **extra))  # type: ignore[arg-type]
                lat[name].append((time.perf_counter() - t0) * 1000)
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
    if args.workdir and args.queries:
        through_grpc(args.workdir, args.queries)
    print(json.dumps({"done": True}))


if __name__ == "__main__":
    main()
