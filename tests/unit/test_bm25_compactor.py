"""The background worker around `NoteIndex.compact_bm25`: when it compacts, and what a failure does."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from k0maru_retriever._bm25 import Scope
from k0maru_retriever._compaction import Bm25Compactor
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
    assert index.bm25.deleted() == 1
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
        assert edited.bm25.deleted() == 0 and edited.check().problems == []
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
        assert compactor.health().last_error == "" and edited.bm25.deleted() == 0
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
