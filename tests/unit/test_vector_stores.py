"""One suite, two backends: Qdrant Edge in-process and qdrant-client (':memory:' stands in for a server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from k0maru_retriever._bm25 import Scope
from k0maru_retriever._vectors import EdgeVectorStore, QdrantServerStore, VectorPoint, VectorStore


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


POINTS = [
    VectorPoint("a.md#0", "h1", "a.md", "Root", ["x"], unit(1, 0, 0, 0)),
    VectorPoint("work/b.md#0", "h2", "work/b.md", "work", ["x", "y"], unit(0.9, 0.1, 0, 0)),
    VectorPoint("work/deep/c.md#0", "h3", "work/deep/c.md", "work", ["z"], unit(0, 1, 0, 0)),
]


@pytest.fixture(params=["edge", "qdrant-client"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    s: VectorStore = (
        EdgeVectorStore(tmp_path / "edge", 4) if request.param == "edge" else QdrantServerStore(":memory:", "t", 4)
    )
    s.upsert(POINTS)
    yield s
    s.close()


def test_nearest_first(store: VectorStore):
    hits = store.search(unit(1, 0, 0, 0), 3, Scope())
    assert [c for c, _ in hits] == ["a.md#0", "work/b.md#0", "work/deep/c.md#0"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)


def test_vectors_of_returns_stored_vectors_for_dedup(store: VectorStore):
    got = store.vectors_of(["work/b.md#0", "missing.md#0", "a.md#0"])
    assert set(got) == {"work/b.md#0", "a.md#0"}
    np.testing.assert_allclose(got["work/b.md#0"], POINTS[1].vector, atol=1e-6)


def test_filters(store: VectorStore):
    assert [c for c, _ in store.search(unit(1, 0, 0, 0), 3, Scope(diaries=("work",)))] == [
        "work/b.md#0",
        "work/deep/c.md#0",
    ]
    assert [c for c, _ in store.search(unit(1, 0, 0, 0), 3, Scope(tags=("x", "y")))] == ["work/b.md#0"]
    assert [c for c, _ in store.search(unit(1, 0, 0, 0), 3, Scope(path_prefixes=("work/deep/",)))] == [
        "work/deep/c.md#0"
    ]
    # a date range, as the notes it keeps (`NoteDays.scope`)
    kept = Scope(since="2026-01-01", keep_paths=frozenset({"a.md", "work/deep/c.md"}))
    assert [c for c, _ in store.search(unit(1, 0, 0, 0), 3, kept)] == ["a.md#0", "work/deep/c.md#0"]


def test_upsert_is_idempotent_and_delete_removes(store: VectorStore):
    store.upsert(POINTS[:1])
    assert store.count() == 3
    store.delete(["a.md#0"])
    assert store.count() == 2
    assert "a.md#0" not in [c for c, _ in store.search(unit(1, 0, 0, 0), 3, Scope())]


def test_clear(store: VectorStore):
    store.clear()
    assert store.count() == 0


def test_edge_store_survives_reopen(tmp_path: Path):
    s = EdgeVectorStore(tmp_path / "edge", 4)
    s.upsert(POINTS)
    s.close()
    again = EdgeVectorStore(tmp_path / "edge", 4)
    assert again.count() == 3
    again.close()
