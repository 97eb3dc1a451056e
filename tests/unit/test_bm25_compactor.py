"""The background worker around `NoteIndex.compact_bm25`: when it compacts, and what a failure does."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from k0maru.v1 import common_pb2
from k0maru_retriever._bm25 import Scope
from k0maru_retriever._compaction import Bm25Compactor
from k0maru_retriever._index import NoteIndex
from tests.unit.test_index_consistency import doc, open_index


def _until(condition: Callable[[], object], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.fixture
def edited(tmp_path: Path):  # type: ignore[no-untyped-def]
    """An index whose BM25 holds one deleted document (an edited note)."""
    index = open_index(tmp_path)
    for i in range(5):
        index.apply(doc(f"n{i}.md", f"lighthouse keeper {i}"))
    index.commit(1)
    index.apply(doc("n0.md", "lighthouse keeper edited"))
    index.commit(2)
    assert index.bm25.replaced() == 1
    yield index
    index.close()


def test_it_waits_for_the_vault_to_be_indexed_and_for_edits_to_pause(edited):  # type: ignore[no-untyped-def]
    ready = threading.Event()
    compactor = Bm25Compactor(edited, ready, quiet_s=0.3, min_gap_s=0.01)
    compactor.start()
    try:
        time.sleep(0.5)
        assert compactor.compactions == 0  # the follower is not ready: a build or re-sync runs
        ready.set()
        edited.apply(doc("n1.md", "lighthouse keeper edited too"))  # an edit restarts the quiet period
        edited.commit(3)
        changed = time.monotonic()
        _until(lambda: compactor.compactions == 1)
        assert time.monotonic() - changed >= 0.3
        assert edited.bm25.replaced() == 0 and edited.check().problems == []
        assert compactor.health().state == "running" and compactor.health().last_error == ""
    finally:
        compactor.stop()


def test_a_failed_compaction_leaves_the_live_index_and_is_tried_again(edited):  # type: ignore[no-untyped-def]
    live = edited.bm25
    empty_beside = live.empty_beside

    def disk_full() -> object:
        raise OSError(28, "No space left on device")

    live.empty_beside = disk_full
    ready = threading.Event()
    ready.set()
    compactor = Bm25Compactor(edited, ready, quiet_s=0.01, min_gap_s=0.05)
    compactor.start()
    try:
        _until(lambda: "No space left" in compactor.health().last_error)
        assert compactor.health().state == "running"  # not dead, not restarting: waiting to try again
        assert edited.bm25 is live and [c for c, _ in live.search("edited", 5, Scope())] == ["n0.md#0"]
        live.empty_beside = empty_beside  # room again
        _until(lambda: compactor.compactions == 1)
        assert compactor.health().last_error == "" and edited.bm25.replaced() == 0
    finally:
        compactor.stop()


def test_a_compaction_that_fails_during_its_swap_makes_the_retriever_give_up(edited):  # type: ignore[no-untyped-def]
    def broken_swap(built: object) -> object:
        raise OSError(5, "Input/output error")

    edited.bm25.replace_with = broken_swap
    told: list[str] = []
    ready = threading.Event()
    ready.set()
    compactor = Bm25Compactor(edited, ready, quiet_s=0.01, min_gap_s=0.01, on_give_up=told.append)
    compactor.start()
    try:
        _until(lambda: told)
        assert "could not be swapped in" in told[0] and "Input/output error" in told[0]
    finally:
        compactor.stop()


def _note(i: int, version: int = 0) -> common_pb2.Document:
    filler = " ".join(f"filler{j}" for j in range((i * 7) % 90 + 5))  # lengths past the field norms' exact range
    return doc(f"n{i:03d}.md", f"note {i} version {version} about topic{i % 5} {filler}")


def test_an_index_whose_deleted_documents_tantivy_merged_away_is_still_compacted(tmp_path: Path):
    """tantivy's merges drop deleted documents, but the merged segment's total length is then
    estimated from 1-byte field norms: no deleted document is left, yet BM25 ranks a little off
    a fresh build (the stack test's rare failure: scores 0.2–0.5 % low). It still needs a
    compaction, and gets one."""
    index = open_index(tmp_path / "edited")
    for segment in range(24):  # small segments of like size, which tantivy's merge policy merges
        for i in range(segment * 20, segment * 20 + 20):
            index.apply(_note(i))
        if segment == 8:  # edits in every segment so far: deleted documents in each
            for i in range(0, 160, 3):
                index.apply(_note(i, 1))
        index.commit(segment + 1)
    index.bm25._writer.wait_merging_threads()  # the merges done, as a retriever that ran on finds them
    index.state.close()
    index.vectors.close()
    index = open_index(tmp_path / "edited")  # the restarted retriever
    fresh = open_index(tmp_path / "fresh")
    for i in range(480):
        fresh.apply(_note(i, 1 if i < 160 and i % 3 == 0 else 0))
    fresh.commit(1)
    try:
        held = int(index.bm25._searcher.doc_freq("live", "1")) - index.bm25.count()
        assert held == 0 and index.bm25.replaced() == 54  # none held, 54 replaced since the build

        def scores(of: NoteIndex) -> list[tuple[str, float]]:
            return [(c, round(s, 5)) for c, s in of.bm25.search("topic3 note", 5, Scope())]

        assert scores(index) != scores(fresh)  # the estimated length
        ready = threading.Event()
        ready.set()
        compactor = Bm25Compactor(index, ready, quiet_s=0.01, min_gap_s=0.01)
        compactor.start()
        try:
            _until(lambda: compactor.compactions == 1)
        finally:
            compactor.stop()
        assert index.bm25.replaced() == 0 and scores(index) == scores(fresh)
    finally:
        index.close()
        fresh.close()


def test_replaced_counts_what_the_searcher_shows(tmp_path: Path):
    """Documents added and not committed yet are neither alive nor replaced to the searcher: they
    must not read as replaced (the console's "stale", a compaction due) between an add and its commit."""
    index = open_index(tmp_path)
    try:
        index.apply(doc("a.md", "lighthouse"))
        assert index.bm25.replaced() == 0
        index.commit(1)
        index.apply(doc("a.md", "lighthouse keeper"))
        assert index.bm25.replaced() == 0
        index.commit(2)
        assert index.bm25.replaced() == 1
    finally:
        index.close()
    reopened = open_index(tmp_path)  # the count survives a restart
    try:
        assert reopened.bm25.replaced() == 1
    finally:
        reopened.close()
