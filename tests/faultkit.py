"""Fault injection on a real stack, shared by tests/integration/test_faults.py (which asserts) and
bench/fault_bench.py (which prints the numbers): one place for the vault, the kills, the edits
made while the scanner is down, and the comparison with a fresh build.

`run_fault_matrix` starts a stack (`Launcher`, the one `k0maru up` uses) over a generated vault,
and while it is still indexing SIGKILLs each service and Valkey in turn, letting the launcher's
supervisor restart it; while the scanner is down it edits, adds, deletes and renames notes. Once
the stack has settled (every chunk has its vector, the queue is empty), the index is read back
and compared with a fresh build: a second stack over the same vault with a fresh data dir, whose
Valkey starts from a copy of the first one's files, so that it embeds from the shared cache
instead of running the model again (a cached vector is keyed by the text it was computed from,
so a stale vector in the faulted index still shows as a difference).
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import redis

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher
from k0maru_common import JOBS_STREAM, K0Error, StackClient

SERVICES = ["embedder-1", "retriever", "valkey", "scanner", "offload", "gateway"]
QUERIES = ["topic 3", "tag2", "note 42", "link topic 17", "lighthouse keeper", "bench t5 topic"]
MODES = {"bm25": retriever_pb2.SEARCH_MODE_BM25, "hybrid": retriever_pb2.SEARCH_MODE_HYBRID}


def synthetic_vault(root: Path, n: int, sections: int = 2) -> Path:
    """`n` small linked, tagged notes in ten folders; `sections` 1 gives one chunk per note."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        folder = root / f"area{i % 10}"
        folder.mkdir(exist_ok=True)
        head = f"---\ntags: [t{i % 17}, bench]\n---\n# Note {i}\n\nSome text about topic {i % 31} with a link to [[note-{(i + 1) % n}]]"
        if sections > 1:  # the benches' vault since the first scan bench: keep it byte for byte
            text = f"{head}.\n\n## Details\n\nMore words, #tag{i % 5}, and a second paragraph for the chunker.\n"
        else:
            text = f"{head}, #tag{i % 5}.\n"
        (folder / f"note-{i}.md").write_text(text)
    return root


def edit_while_scanner_down(vault: Path) -> dict[str, list[str]]:
    """Edit, add, delete and rename notes (the scanner must find them all on its start-up scan)."""
    edited = ["area0/note-0.md", "area3/note-3.md"]
    for rel in edited:
        (vault / rel).write_text(f"# Edited {rel}\n\nthe lighthouse keeper rewrote this note about topic 3\n")
    added = [f"added/new-{i}.md" for i in range(10)]
    (vault / "added").mkdir(exist_ok=True)
    for i, rel in enumerate(added):
        (vault / rel).write_text(f"# New {i}\n\na new note about the lighthouse keeper and topic {i}\n")
    deleted = ["area1/note-1.md", "area1/note-11.md", "area2/note-42.md"]
    for rel in deleted:
        (vault / rel).unlink()
    renamed = {"area4/note-4.md": "moved/note-4-moved.md", "area5/note-5.md": "area6/note-5.md"}
    (vault / "moved").mkdir(exist_ok=True)
    for old, new in renamed.items():
        os.rename(vault / old, vault / new)
    return {
        "present": [*edited, *added, *renamed.values()],
        "absent": [*deleted, *renamed],
    }


@dataclass
class Fault:
    service: str
    recover_s: float  # kill -9 until the supervisor had it SERVING again (Valkey: answering PING)
    vectors_at_kill: int  # chunks with a vector when it was killed (-1: the retriever was down)


@dataclass
class IndexDump:
    """What one index holds, read from its stores after the stack stopped."""

    documents: dict[str, str]  # path → content hash
    chunks: dict[str, str]  # chunk id → text hash
    vectors: dict[str, np.ndarray]  # chunk id → stored vector
    vector_points: int  # the vector store's own count (orphans would make it exceed `vectors`)
    bm25_documents: int  # tantivy's own count (one per chunk; orphans would exceed `chunks`)
    top10: dict[tuple[str, str], list[tuple[str, float]]]  # (mode, query) → (path, score)


@dataclass
class FaultReport:
    faults: list[Fault]
    edits: dict[str, list[str]]
    settle_s: float  # after the last fault, until every chunk had its vector and the queue was empty
    jobs_dead: int  # jobs in the dead letter (lost)
    jobs_enqueued: int  # embedding jobs the faulted stack enqueued in all
    fresh_jobs_enqueued: int  # ... and a fresh build of the final vault
    faulted: IndexDump
    fresh: IndexDump
    problems: list[str] = field(default_factory=list)  # IndexStatus.problem of either stack

    def differences(self) -> dict[str, Any]:
        """Everything in which the faulted index differs from the fresh build (empty: identical)."""
        a, b = self.faulted, self.fresh
        out: dict[str, Any] = {}
        if a.documents != b.documents:
            out["documents"] = sorted(set(a.documents.items()) ^ set(b.documents.items()))[:20]
        if a.chunks != b.chunks:
            out["chunks"] = sorted(set(a.chunks.items()) ^ set(b.chunks.items()))[:20]
        if a.vectors.keys() != b.vectors.keys():
            out["vector_ids"] = sorted(a.vectors.keys() ^ b.vectors.keys())[:20]
        differing = [c for c in a.vectors.keys() & b.vectors.keys() if not np.allclose(a.vectors[c], b.vectors[c])]
        if differing:
            out["vector_values"] = sorted(differing)[:20]
        for name, dump in (("faulted", a), ("fresh", b)):
            if dump.vector_points != len(dump.vectors) or dump.bm25_documents != len(dump.chunks):
                out[f"{name}_orphans"] = {
                    "vector_points": dump.vector_points,
                    "vectors_of_chunks": len(dump.vectors),
                    "bm25_documents": dump.bm25_documents,
                    "chunks": len(dump.chunks),
                }
            if set(dump.chunks) != set(dump.vectors):
                out[f"{name}_chunks_without_vectors"] = sorted(set(dump.chunks) - set(dump.vectors))[:20]
        ranked = [k for k in a.top10 if not same_ranking(a.top10[k], b.top10.get(k, []))]
        if ranked:
            out["top10"] = {f"{m}:{q}": (a.top10[(m, q)], b.top10.get((m, q))) for m, q in ranked}
        if self.jobs_dead:
            out["jobs_dead"] = self.jobs_dead
        if self.problems:
            out["problems"] = self.problems
        return out

    def top10_identical(self, mode: str) -> tuple[int, int]:
        keys = [k for k in self.faulted.top10 if k[0] == mode]
        return sum(same_ranking(self.faulted.top10[k], self.fresh.top10.get(k, [])) for k in keys), len(keys)

    def max_score_delta(self) -> float:
        """The largest difference of one hit's score between the two indexes (same rankings)."""
        deltas = [
            abs(x[1] - y[1])
            for k, hits in self.faulted.top10.items()
            for x, y in zip(hits, self.fresh.top10.get(k, []), strict=False)
        ]
        return round(max(deltas, default=0.0), 6)


SCORE_TOLERANCE = 0.002  # `settled` waits for the BM25 compaction after the edits, so BM25's
# statistics are a fresh build's; fused scores are still compared within the fourth decimal


def same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """Same notes in the same order, scores equal within SCORE_TOLERANCE."""
    return [p for p, _ in a] == [p for p, _ in b] and all(
        abs(x - y) <= SCORE_TOLERANCE for (_, x), (_, y) in zip(a, b, strict=True)
    )


def index_status(client: StackClient) -> retriever_pb2.IndexStatusResponse:
    reply: retriever_pb2.IndexStatusResponse = client.call(
        client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 5.0
    )
    return reply


def supervise_until(launcher: Launcher, predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Keep the launcher's supervisor running (as `k0maru up` does) until `predicate` is truthy."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        launcher.supervise()
        try:
            value = predicate()
        except (K0Error, redis.RedisError):  # a service or Valkey is down: keep supervising
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def settled(client: StackClient, documents: int) -> bool:
    """Every note indexed, every chunk with its vector, the stores agree, nothing queued."""
    s = index_status(client)
    return (
        s.documents == documents
        and s.chunks_with_vectors == s.chunks
        and s.embed_queue_pending == 0
        and s.consistent
        and s.bm25_deleted == 0  # the edits' replaced chunks compacted away: BM25 as a fresh build
        and all(w.state == "running" for w in s.workers)
    )


def search_top10(client: StackClient) -> dict[tuple[str, str], list[tuple[str, float]]]:
    out = {}
    for mode, value in MODES.items():
        for q in QUERIES:
            request = retriever_pb2.SearchRequest(query=q, limit=10, mode=value)
            hits = client.call(client.retriever.Search, request, 30.0).hits
            out[(mode, q)] = [(h.path, round(h.score, 4)) for h in hits]
    return out


def jobs_added(redis_url: str) -> int:
    """Embedding jobs ever added to the stream (XINFO STREAM entries-added)."""
    r = redis.Redis.from_url(redis_url)
    try:
        return int(r.xinfo_stream(JOBS_STREAM)["entries-added"]) if r.exists(JOBS_STREAM) else 0
    finally:
        r.close()


def dump_index(data_dir: Path, top10: dict[tuple[str, str], list[tuple[str, float]]]) -> IndexDump:
    """Read a stopped stack's retriever stores back (bookkeeping, tantivy, Qdrant Edge)."""
    from k0maru_retriever._analysis import BM25Analyzer
    from k0maru_retriever._bm25 import Bm25Index
    from k0maru_retriever._index import chunk_id
    from k0maru_retriever._state import IndexState
    from k0maru_retriever._vectors import EdgeVectorStore

    root = data_dir / "retriever"
    state = IndexState(root / "state.sqlite")
    bm25 = Bm25Index(root / "bm25", BM25Analyzer())
    (vector_dir,) = [p for p in root.glob("vectors-*") if p.is_dir()]
    store = EdgeVectorStore(vector_dir, 384)
    try:
        documents = {d.path: d.hash for d in state.docs.values()}
        chunks = {chunk_id(d.path, c.index): c.hash for d in state.docs.values() for c in d.chunks}
        return IndexDump(documents, chunks, store.vectors_of(list(chunks)), store.count(), bm25.count(), top10)
    finally:
        store.close()
        bm25.close()
        state.close()


def _run_stack(
    vault: Path, data_dir: Path, body: Callable[[Launcher, StackClient], None], settled_at: list[float]
) -> tuple[dict[tuple[str, str], list[tuple[str, float]]], int, int, list[str]]:
    """Start a stack, run `body`, wait until it settled; return its top-10 lists, dead jobs,
    jobs enqueued, and any IndexStatus problem; stop it."""
    launcher = Launcher(
        vault,
        data_dir,
        embedders=1,
        http_port=0,
        extra_env={"K0_WATCH": "true", "K0_BM25_COMPACT_QUIET_S": "1"},
        startup_timeout_s=300,
    )
    state = launcher.start()
    client = state.client()
    try:
        body(launcher, client)
        documents = sum(1 for _ in vault.rglob("*.md"))
        supervise_until(launcher, lambda: settled(client, documents), 600, "the index to settle")
        settled_at[0] = time.monotonic()
        status = index_status(client)
        assert launcher.state is not None
        return (
            search_top10(client),
            int(status.embed_dead_letter),
            jobs_added(launcher.state.addresses["redis"]),
            [status.problem] if status.problem else [],
        )
    finally:
        client.close()
        launcher.stop()


def run_fault_matrix(root: Path, notes: int = 1000, sections: int = 2) -> FaultReport:
    vault = synthetic_vault(root / "vault", notes, sections)
    faults: list[Fault] = []
    edits: dict[str, list[str]] = {}
    settle_started = [0.0]

    def inject(launcher: Launcher, client: StackClient) -> None:
        for name in SERVICES:
            assert launcher.state is not None
            try:
                vectors_at_kill = int(index_status(client).chunks_with_vectors)
            except K0Error:
                vectors_at_kill = -1
            killed_at = time.monotonic()
            old_pid = launcher.state.pids[name]
            os.kill(old_pid, signal.SIGKILL)
            if name == "scanner":
                edits.update(edit_while_scanner_down(vault))
            # the supervisor's restart() records the new pid once the service is SERVING again
            supervise_until(
                launcher,
                lambda name=name, old_pid=old_pid: launcher.state is not None and launcher.state.pids[name] != old_pid,
                120,
                f"{name} to be restarted",
            )
            faults.append(Fault(name, round(time.monotonic() - killed_at, 2), vectors_at_kill))
        settle_started[0] = time.monotonic()

    settled_at = [0.0]
    top10, dead, enqueued, problems = _run_stack(vault, root / "data", inject, settled_at)
    settle_s = round(settled_at[0] - settle_started[0], 2)
    faulted = dump_index(root / "data", top10)

    # the fresh build: new data dir, Valkey starting from a copy of the first one's files (the cache)
    fresh_dir = root / "fresh"
    shutil.copytree(root / "data" / "valkey", fresh_dir / "valkey")
    fresh_top10, fresh_dead, fresh_enqueued, fresh_problems = _run_stack(vault, fresh_dir, lambda _l, _c: None, [0.0])
    fresh = dump_index(fresh_dir, fresh_top10)
    return FaultReport(
        faults,
        edits,
        settle_s,
        dead + fresh_dead,
        enqueued,
        fresh_enqueued - enqueued,
        faulted,
        fresh,
        problems + fresh_problems,
    )
