"""Vector search at 100k chunks through gRPC, before, during and after the background HNSW build.

Run: nice -n 10 .venv/bin/python bench/vector_scale.py --scifact-workdir W/scifact --workdir W/vscale
  (W/scifact: an eval index of SciFact with vectors, as `k0maru eval beir` leaves it: vault/ + data/)

1. fill: the SciFact vault is copied with `--copies` more copies of every note under
   `scale<k>/` (8 copies: 9 x 11,839 = 106,551 chunks); the data dir's retriever and scanner
   state is copied, so the original chunks keep their real MiniLM vectors. A stack runs with
   `K0_HNSW_MIN_POINTS=0` (no build) and one embedder; this script joins the embedders'
   consumer group and answers the copies' embedding jobs itself with synthetic vectors: the
   original chunk's vector plus Gaussian noise (sigma 0.02 per dimension, renormalised; cosine
   to the original about 0.93), so the 100k points have the clusters real notes have. The real
   embedder answers the few jobs it takes first, with real vectors.
2. before: the stack at 100k, brute force: vector and hybrid searches through gRPC.
3. during: the stack restarted with the default threshold: the retriever finds 100k points
   without an index and starts a build at open; queries run until it is swapped in.
4. after: the same queries on the HNSW index; top-10 overlap with the brute-force answers.

Hybrid is measured twice per query: first with the query embedded by the embedder (fresh),
then again (the retriever keeps the last 512 query vectors: search + fusion only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import threading
import time
from pathlib import Path

import grpc
import numpy as np
import redis
from _common import SHARED, emit, summary

from k0maru.v1 import retriever_pb2
from k0maru_cli._eval import stack_for, wait_indexed
from k0maru_cli._state import StackState
from k0maru_common import EMBED_GROUP, JOBS_STREAM, SEARCH_MODES, ensure_group, reply_stream, vector_to_bytes

SIGMA = 0.02
HYBRID, VECTOR = SEARCH_MODES["hybrid"], SEARCH_MODES["vector"]


def copy_inputs(src: Path, dst: Path, copies: int) -> tuple[Path, Path]:
    vault, data = dst / "vault", dst / "data"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src / "vault", vault)
    notes = [p for p in vault.rglob("*.md")]
    for k in range(1, copies + 1):
        for p in notes:
            target = vault / f"scale{k}" / p.relative_to(vault)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
    data.mkdir(parents=True)
    for name in ("retriever", "scanner", "embedding-model.json"):
        if (src / "data" / name).is_dir():
            shutil.copytree(src / "data" / name, data / name)
        elif (src / "data" / name).exists():
            shutil.copyfile(src / "data" / name, data / name)
    return vault, data


def shard_of(data: Path) -> Path:
    (shard,) = [p for p in (data / "retriever").glob("vectors-*") if ".hnsw" not in p.name and p.name != "vectors-none"]
    return shard


def original_vectors(data: Path) -> dict[str, np.ndarray]:
    """chunk id -> vector of the SciFact index (read before any stack opens the shard)."""
    import qdrant_edge as qe

    shard = qe.EdgeShard.load(str(shard_of(data)))
    try:
        out: dict[str, np.ndarray] = {}
        offset = None
        while True:
            records, offset = shard.scroll(
                qe.ScrollRequest(limit=2000, offset=offset, with_payload=True, with_vector=True)
            )
            for r in records:
                out[r.payload["chunk_id"]] = np.asarray(r.vector, dtype=np.float32)
            if offset is None:
                return out
    finally:
        shard.close()


class SyntheticEmbedder:
    """Answers embedding jobs for `scale<k>/` copies: the original's vector plus noise."""

    def __init__(self, url: str, originals: dict[str, np.ndarray]) -> None:
        self._r = redis.Redis.from_url(url)
        self._orig = originals
        self._rng = np.random.default_rng(11)
        self._stop = threading.Event()
        self.answered = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def vector(self, chunk_id: str) -> np.ndarray:
        base = chunk_id.split("/", 1)[1] if chunk_id.startswith("scale") else chunk_id
        v = self._orig.get(base)
        if v is None:  # a chunk the original index had no vector for
            v = self._rng.standard_normal(384).astype(np.float32)
        v = v + self._rng.normal(0.0, SIGMA, 384).astype(np.float32)
        return v / np.linalg.norm(v)

    def _run(self) -> None:
        ensure_group(self._r, JOBS_STREAM, EMBED_GROUP)
        while not self._stop.is_set():
            got = self._r.xreadgroup(EMBED_GROUP, "bench-synthetic", {JOBS_STREAM: ">"}, count=500, block=500)
            for _stream, messages in got or []:
                pipe = self._r.pipeline(transaction=True)
                for msg_id, f in messages:
                    if f:
                        cid = f[b"id"].decode()
                        pipe.xadd(
                            reply_stream(f.get(b"reply", b"")),
                            {b"id": f[b"id"], b"hash": f[b"hash"], b"vector": vector_to_bytes(self.vector(cid))},
                        )
                        self.answered += 1
                    pipe.xack(JOBS_STREAM, EMBED_GROUP, msg_id)
                    pipe.xdel(JOBS_STREAM, msg_id)
                pipe.execute()

    def __enter__(self) -> SyntheticEmbedder:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._r.close()


def search(client, query: str, mode: int) -> tuple[float, list[str]]:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    reply = client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=query, limit=10, mode=mode))
    return (time.perf_counter() - t0) * 1000, [h.path for h in reply.hits]


def phase(client, queries: list[str], until=None) -> dict:  # type: ignore[no-untyped-def]
    """Per query: hybrid (fresh embedding), vector and hybrid again (cached query vector).
    With `until`, cycle through the queries while it returns False."""
    lat: dict[str, list[float]] = {"hybrid_fresh": [], "vector": [], "hybrid_cached": []}
    tops: dict[str, list[str]] = {}
    errors = 0
    i = 0
    while (until is None and i < len(queries)) or (until is not None and not until()):
        q = queries[i % len(queries)] + ("" if i < len(queries) else f" {i // len(queries)}")
        try:
            ms, _ = search(client, q, HYBRID)
            lat["hybrid_fresh"].append(ms)
            ms, top = search(client, q, VECTOR)
            lat["vector"].append(ms)
            tops[q] = top
            ms, _ = search(client, q, HYBRID)
            lat["hybrid_cached"].append(ms)
        except grpc.RpcError as exc:  # counted: the point is whether it keeps answering
            errors += 1
            print(f"query failed: {exc}", flush=True)
        i += 1
    return {
        "latency": {k: summary(v) for k, v in lat.items() if v},
        "max_ms": round(max(max(v) for v in lat.values() if v), 1),
        "queries": i,
        "errors": errors,
        "load_average_1m_at_end": round(os.getloadavg()[0], 1),
        "tops": tops,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scifact-workdir", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    queries = [json.loads(r)["text"] for r in (SHARED / "data/beir/scifact/queries.jsonl").open()][: args.queries]

    t0 = time.monotonic()
    vault, data = copy_inputs(args.scifact_workdir, args.workdir, args.copies)
    originals = original_vectors(data)
    emit("fill_inputs", notes=sum(1 for _ in vault.rglob("*.md")), original_vectors=len(originals))

    os.environ["K0_HNSW_MIN_POINTS"] = "0"
    with stack_for(vault, data, embedders=1) as client:
        state = StackState.load(data)
        assert state is not None
        with SyntheticEmbedder(state.addresses["redis"], originals) as fake:
            wait_indexed(client, need_vectors=True)
            status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
            emit(
                "fill",
                chunks=status.chunks,
                vectors=status.chunks_with_vectors,
                synthetic=fake.answered,
                seconds=round(time.monotonic() - t0, 1),
            )
        before = phase(client, queries)
        emit("before_brute_force", chunks=status.chunks, **{k: v for k, v in before.items() if k != "tops"})

    del os.environ["K0_HNSW_MIN_POINTS"]  # the default threshold: a build starts at open
    shard = shard_of(data)
    building = shard.with_name(shard.name + ".hnsw-build")
    t1 = time.monotonic()
    with stack_for(vault, data, embedders=1) as client:
        healthy = time.monotonic() - t1
        was_building = building.exists()
        during = phase(client, queries, until=lambda: not building.exists())
        emit(
            "during_build",
            build_seen_at_healthy=was_building,
            healthy_after_s=round(healthy, 1),
            build_s=round(time.monotonic() - t1, 1),
            **{k: v for k, v in during.items() if k != "tops"},
        )
        after = phase(client, queries)
        overlap = [
            len(set(after["tops"][q]) & set(before["tops"][q])) / max(1, len(before["tops"][q]))
            for q in queries
            if q in after["tops"] and q in before["tops"]
        ]
        emit(
            "after_hnsw",
            overlap_at_10_with_brute_force=round(float(np.mean(overlap)), 4),
            **{k: v for k, v in after.items() if k != "tops"},
        )
    log = data / "logs" / "retriever.log"
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            if "HNSW" in line:
                print(line)


if __name__ == "__main__":
    main()
