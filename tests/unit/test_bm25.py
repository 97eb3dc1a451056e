"""Real tantivy BM25: identifiers, Chinese, scope, and queries that never raise."""

from __future__ import annotations

from pathlib import Path

import pytest

from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, ChunkRow, Scope

ROWS = [
    ChunkRow(
        "db.md#0",
        "db.md",
        "Root",
        ["sqlite"],
        "SQLite busy\nSQLITE_BUSY means the database is locked by another writer.",
    ),
    ChunkRow(
        "rust/e.md#0",
        "rust/e.md",
        "rust",
        ["rust"],
        "Borrow errors\nerror[E0502]: cannot borrow as mutable; Option<&mut T> helps",
    ),
    ChunkRow("zh/n.md#0", "zh/n.md", "zh", ["中文"], "借用检查器报错的处理方法"),
    ChunkRow("misc.md#0", "misc.md", "Root", [], "The sqlite documentation is busy with many pages about locks."),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Bm25Index:
    idx = Bm25Index(tmp_path_factory.mktemp("bm25"), BM25Analyzer())
    for row in ROWS:
        idx.add(row)
    idx.commit()
    return idx


def paths(hits: list[tuple[str, float]]) -> list[str]:
    return [cid.split("#")[0] for cid, _ in hits]


def test_exact_identifiers_rank_first(index: Bm25Index):
    assert paths(index.search("SQLITE_BUSY", 5, Scope()))[0] == "db.md"
    assert paths(index.search("E0502", 5, Scope())) == ["rust/e.md"]
    assert paths(index.search("Option<&mut T>", 5, Scope()))[0] == "rust/e.md"


def test_chinese_word_inside_longer_run(index: Bm25Index):
    assert paths(index.search("检查器", 5, Scope())) == ["zh/n.md"]


@pytest.mark.parametrize("query", ['title:"x', "a AND OR NOT (", "*?~^:[]{}\\", "", "   ", "x" * 10_000, "词" * 5000])
def test_bad_queries_never_raise(index: Bm25Index, query: str):
    assert isinstance(index.search(query, 10, Scope()), list)


def test_scope_by_diary_prefix_and_tag(index: Bm25Index):
    assert paths(index.search("sqlite borrow 借用", 10, Scope(diaries=("rust",)))) == ["rust/e.md"]
    assert paths(index.search("sqlite borrow 借用", 10, Scope(path_prefixes=("zh/",)))) == ["zh/n.md"]
    assert paths(index.search("sqlite", 10, Scope(tags=("sqlite",)))) == ["db.md"]
    assert set(paths(index.search("sqlite", 10, Scope(path_prefixes=("d",))))) == {"db.md"}


def test_delete_leaves_nothing(tmp_path: Path):
    idx = Bm25Index(tmp_path / "i", BM25Analyzer())
    idx.add(ROWS[0])
    idx.commit()
    idx.delete_path("db.md")
    idx.commit()
    assert idx.search("sqlite", 10, Scope()) == [] and idx.count() == 0
