"""HybridSearcher on real tantivy and Qdrant Edge: pools of distinct notes, channels that say why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from k0maru.v1 import common_pb2, retriever_pb2
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index
from k0maru_retriever._index import NoteIndex
from k0maru_retriever._search import FusionParams, HybridSearcher, QueryEmbedder
from k0maru_retriever._state import IndexState
from k0maru_retriever._vectors import EdgeVectorStore


def note(path: str, *chunks: str) -> common_pb2.Document:
    return common_pb2.Document(
        path=path,
        title=path.removesuffix(".md"),
        diary="Root",
        hash=path,
        chunks=[common_pb2.Chunk(index=i, text=t, hash=f"{path}{i}") for i, t in enumerate(chunks)],
    )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[NoteIndex]:
    idx = NoteIndex(
        Bm25Index(tmp_path / "bm25", BM25Analyzer()),
        EdgeVectorStore(tmp_path / "vectors", 4),
        IndexState(tmp_path / "state.sqlite"),
        4,
    )
    yield idx
    idx.close()


def test_bm25_pool_holds_distinct_notes_when_long_notes_match_in_every_chunk(index: NoteIndex):
    # Three long notes whose 40 chunks all say "alpha" three times outrank, chunk by chunk, the
    # 30 short notes that say it once: the first pool*4 = 120 chunks hold only the three long notes.
    for n in range(3):
        index.apply(note(f"long{n}.md", *[f"alpha alpha alpha part {i}" for i in range(40)]))
    for n in range(30):
        index.apply(note(f"short{n:02}.md", f"alpha and some other words number {n}"))
    index.commit()
    searcher = HybridSearcher(index, None, FusionParams(), "v")
    for mode in (retriever_pb2.SEARCH_MODE_BM25, retriever_pb2.SEARCH_MODE_HYBRID):
        reply = searcher.search(retriever_pb2.SearchRequest(query="alpha", limit=10, mode=mode))
        paths = [h.path for h in reply.hits]
        assert len(paths) == 10 == len(set(paths)), mode
        assert {"long0.md", "long1.md", "long2.md"} <= set(paths)


def test_vector_channel_says_why_it_did_not_run(index: NoteIndex):
    index.apply(note("a.md", "alpha"))
    index.commit()
    vector = retriever_pb2.SEARCH_MODE_VECTOR
    without = HybridSearcher(index, None, FusionParams(), "v").search(
        retriever_pb2.SearchRequest(query="alpha", mode=vector)
    )
    assert not without.hits
    assert [(c.channel, c.ran) for c in without.channels] == [("vector", False)]
    assert "no embedder" in without.channels[0].reason
    embedder = QueryEmbedder("127.0.0.1:9")  # never called: there is nothing to search yet
    try:
        searcher = HybridSearcher(index, embedder, FusionParams(), "v")
        reply = searcher.search(retriever_pb2.SearchRequest(query="alpha", mode=vector))
        assert not reply.hits and not reply.channels[0].ran
        assert reply.channels[0].reason == "no vectors yet: 0 of 1 chunks embedded"
        hybrid = searcher.search(retriever_pb2.SearchRequest(query="alpha"))
        assert [h.path for h in hybrid.hits] == ["a.md"]
        assert hybrid.mode_used == retriever_pb2.SEARCH_MODE_BM25
        assert [(c.channel, c.ran) for c in hybrid.channels] == [("bm25", True), ("vector", False)]
    finally:
        embedder.close()
