"""Search benchmarks.

Run: .venv/bin/python bench/search_bench.py [--scifact-workdir DIR]
  - search latency through gRPC on SciFact (5,183 notes, ~12.5k chunks, the eval index built by
    `k0maru eval beir`), per mode, p50/p99 over the 300 test queries (target at 10k chunks:
    p50 ≤ 10 ms, p99 ≤ 30 ms), hybrid again with cached query vectors, and the Embed RPC alone
  - in-process components at 100k chunks (no gRPC): tantivy BM25 top-pool, Qdrant Edge
    brute-force top-pool on random unit vectors, and RRF fusion
  - save → found: a note written into a running stack's vault, polled through Search until
    BM25 finds it and until the vector channel finds it (targets 1.5 s and 3 s)
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import SHARED, emit, summary, synthetic_vault

from k0maru.v1 import embedder_pb2, retriever_pb2
from k0maru_cli import Launcher
from k0maru_cli._eval import stack_for, wait_indexed
from k0maru_common import SEARCH_MODES, default_data_root
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, ChunkRow, Scope
from k0maru_retriever._fusion import rrf_fuse
from k0maru_retriever._vectors import EdgeVectorStore, VectorPoint


def scifact_latency(workdir: Path) -> None:
    """Each mode over the same 300 queries (hybrid first: its query vectors are fresh, the other
    modes' are the retriever's cached ones), then hybrid again with cached vectors, and the
    embedder's Embed RPC alone on 300 other queries: the part of a fresh search that is the model."""
    texts = [json.loads(r)["text"] for r in (SHARED / "data/beir/scifact/queries.jsonl").open()]
    queries, others = texts[:300], texts[300:600]
    with stack_for(workdir / "vault", workdir / "data", embedders=1) as client:
        wait_indexed(client, need_vectors=True)
        status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        runs = [*SEARCH_MODES.items(), ("hybrid, cached query vectors", SEARCH_MODES["hybrid"])]
        for mode, value in runs:
            lat = []
            for q in queries:
                t0 = time.perf_counter()
                client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10, mode=value))
                lat.append((time.perf_counter() - t0) * 1000)
            emit("search_latency_grpc", chunks=status.chunks, mode=mode, detail=summary(lat))
        assert client.embedder is not None
        lat = []
        for q in others:
            t0 = time.perf_counter()
            client.call(client.embedder.Embed, embedder_pb2.EmbedRequest(texts=[q], is_query=True))
            lat.append((time.perf_counter() - t0) * 1000)
        emit("embed_rpc_latency", model=status.embedding_model, detail=summary(lat))


def components_100k(tmp: Path) -> None:
    n = 100_000
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(5000)]
    index = Bm25Index(tmp / "bm25", BM25Analyzer())
    for i in range(n):
        text = " ".join(rng.choice(words, 40))
        index.add(ChunkRow(f"n{i // 4}.md#{i % 4}", f"n{i // 4}.md", "Root", [], text))
    index.commit()
    store = EdgeVectorStore(tmp / "edge", 384)
    for s in range(0, n, 5000):
        vecs = rng.standard_normal((5000, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.upsert(
            [
                VectorPoint(f"n{(s + j) // 4}.md#{(s + j) % 4}", "h", f"n{(s + j) // 4}.md", "Root", [], vecs[j])
                for j in range(5000)
            ]
        )
    bm, vs, fu = [], [], []
    for _ in range(100):
        q = " ".join(rng.choice(words, 5))
        qv = rng.standard_normal(384).astype(np.float32)
        qv /= np.linalg.norm(qv)
        t0 = time.perf_counter()
        b = index.search(q, 120, Scope())
        t1 = time.perf_counter()
        v = store.search(qv, 120, Scope())
        t2 = time.perf_counter()
        rrf_fuse([(c, s) for c, s in b[:30]], [(c, s) for c, s in v[:30]])
        t3 = time.perf_counter()
        bm.append((t1 - t0) * 1000)
        vs.append((t2 - t1) * 1000)
        fu.append((t3 - t2) * 1000)
    emit("components_100k_chunks", bm25=summary(bm), vector_brute_force=summary(vs), fusion=summary(fu))
    store.close()


def save_to_found(tmp: Path, trials: int = 8) -> None:
    vault = synthetic_vault(tmp / "live", 200)
    launcher = Launcher(vault, tmp / "live-data", embedders=1, http_port=0)
    state = launcher.start()
    client = state.client()
    try:
        wait_indexed(client, need_vectors=True)
        bm25_s, vec_s = [], []
        for t in range(trials):
            word = f"zebracrossing{t}"
            t0 = time.perf_counter()
            (vault / f"fresh-{t}.md").write_text(
                f"# Fresh {t}\n\nA note about {word} and pedestrian safety at night.\n"
            )
            found_bm25 = found_vec = None
            while found_bm25 is None or found_vec is None:
                if found_bm25 is None:
                    r = client.call(
                        client.retriever.Search,
                        retriever_pb2.SearchRequest(query=word, mode=SEARCH_MODES["bm25"], limit=3),
                    )
                    if r.hits and r.hits[0].path == f"fresh-{t}.md":
                        found_bm25 = time.perf_counter() - t0
                if found_vec is None:
                    r = client.call(
                        client.retriever.Search,
                        retriever_pb2.SearchRequest(
                            query=f"{word} pedestrian safety at night", mode=SEARCH_MODES["vector"], limit=3
                        ),
                    )
                    if any(h.path == f"fresh-{t}.md" for h in r.hits):
                        found_vec = time.perf_counter() - t0
                time.sleep(0.02)
            bm25_s.append(found_bm25 * 1000)
            vec_s.append(found_vec * 1000)
            time.sleep(1.5)
        emit("save_to_found", bm25=summary(bm25_s), vector=summary(vec_s))
    finally:
        client.close()
        launcher.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact-workdir", type=Path, default=default_data_root() / "eval" / "scifact")
    parser.add_argument("--skip", nargs="*", default=[])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "scifact" not in args.skip and (args.scifact_workdir / "vault").exists():
            scifact_latency(args.scifact_workdir)
        if "components" not in args.skip:
            components_100k(tmp)
        if "save" not in args.skip:
            save_to_found(tmp)


if __name__ == "__main__":
    main()
