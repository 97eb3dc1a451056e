"""The retriever's bookkeeping is checked against the stores themselves, and repaired from them."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from k0maru.v1 import common_pb2
from k0maru_retriever import _bm25
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, Scope
from k0maru_retriever._index import NoteIndex
from k0maru_retriever._state import IndexState
from k0maru_retriever._vectors import EdgeVectorStore

DIM = 8


def open_index(root: Path, dim: int = DIM, model_id: str = "m") -> NoteIndex:
    return NoteIndex(
        Bm25Index(root / "bm25", BM25Analyzer()),
        EdgeVectorStore(root / "vectors", dim),
        IndexState(root / "state.sqlite"),
        dim,
        model_id,
    )


def doc(path: str, *texts: str) -> common_pb2.Document:
    return common_pb2.Document(
        path=path,
        title=path,
        diary="Root",
        hash=path,
        chunks=[common_pb2.Chunk(index=i, text=t, hash=f"{path}{i}") for i, t in enumerate(texts)],
    )


def build(root: Path) -> NoteIndex:
    index = open_index(root)
    jobs = []
    for d in (doc("a.md", "lighthouse keepers", "second chunk"), doc("b.md", "harbour pilots")):
        jobs += index.apply(d)
    index.commit(7)
    index.apply_vectors([(j.chunk_id, j.key, np.ones(DIM, dtype=np.float32)) for j in jobs])
    return index


def test_fresh_index_is_consistent(tmp_path: Path):
    index = build(tmp_path)
    check = index.check()
    assert (check.bm25_documents, check.chunks, check.vector_points, check.vectors) == (3, 3, 3, 3)
    assert check.problems == [] and check.generation
    index.close()


def test_bm25_schema_change_rebuilds_from_the_stored_documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    build(tmp_path).close()
    monkeypatch.setattr(_bm25, "SCHEMA_VERSION", "a later schema")  # the directory is wiped at open
    index = open_index(tmp_path)
    assert [cid for cid, _ in index.bm25.search("lighthouse", 10, Scope())] == ["a.md#0"]
    assert index.check().problems == []
    index.close()


def test_bm25_of_another_generation_is_rebuilt(tmp_path: Path):
    build(tmp_path).close()
    shutil.rmtree(tmp_path / "bm25")  # lost, or replaced by a copy from elsewhere
    index = open_index(tmp_path)
    assert index.check().bm25_documents == 3
    assert [cid for cid, _ in index.bm25.search("harbour", 10, Scope())] == ["b.md#0"]
    index.close()


def test_vector_store_lost_behind_our_back_is_detected_and_re_embedded(tmp_path: Path):
    build(tmp_path).close()
    shutil.rmtree(tmp_path / "vectors")
    index = open_index(tmp_path)
    found = index.repair()
    assert found.problems == ["the vector store holds 0 points for 3 stored vectors"]
    assert sorted(j.chunk_id for j in index.missing_vectors()) == ["a.md#0", "a.md#1", "b.md#0"]
    assert index.check().problems == []
    index.close()


def test_the_newest_notes_are_embedded_first(tmp_path: Path):
    """A first build queues every chunk at once and the embedders take them in that order: the notes
    written lately first (their own date, else their last commit's day, else their file's), not in
    path order."""
    day_ns = 86_400 * 1_000_000_000
    today = 20_791 * day_ns  # 2026-12-04
    notes = [
        common_pb2.Document(path="a-cloned.md", committed="2024-02-01", mtime_ns=today),  # a clone stamps it today
        common_pb2.Document(path="b-dated.md", date="2026-11-30", mtime_ns=today),
        common_pb2.Document(path="c-old.md", date="2019-05-01"),
        common_pb2.Document(path="d-edited.md", mtime_ns=today),
        common_pb2.Document(path="e-undated.md"),
    ]
    index = open_index(tmp_path)
    for i, note in enumerate(notes):
        note.title, note.diary, note.hash = note.path, "Root", str(i)
        note.chunks.extend(common_pb2.Chunk(index=c, text=f"{note.path} part {c}", hash=f"{i}{c}") for c in range(2))
        index.apply(note)
    index.commit(1)
    order = [j.chunk_id.split("#")[0] for j in index.missing_vectors()][::2]
    assert order == ["d-edited.md", "b-dated.md", "a-cloned.md", "c-old.md", "e-undated.md"]
    assert [j.chunk_id for j in index.missing_vectors()][:2] == ["d-edited.md#0", "d-edited.md#1"]
    index.close()


def test_recovered_index_ranks_like_a_fresh_build(tmp_path: Path):
    notes = [doc(f"n{i}.md", f"lighthouse keeper {i}", "harbour " * (i % 3 + 1)) for i in range(12)]
    recovered = open_index(tmp_path / "recovered")
    for d in notes:
        recovered.apply(d)
    recovered.commit(1)
    for d in notes[:6]:  # applied again (a crash made the follower redo them) and some deleted
        recovered.apply(d)
    recovered.commit(2)
    extra = doc("gone.md", "lighthouse lighthouse harbour")
    recovered.apply(extra)
    recovered.commit(3)
    recovered.remove("gone.md")
    recovered.commit(4)
    assert recovered.bm25.replaced() > 0
    assert recovered.repair().problems == []  # deleted documents are no disagreement: a compaction drops them
    assert recovered.compact_bm25(threading.Event())
    assert recovered.bm25.replaced() == 0

    fresh = open_index(tmp_path / "fresh")
    for d in sorted(notes, key=lambda d: d.path):  # a fresh build fetches in the manifest's (path) order
        fresh.apply(d)
    fresh.commit(1)
    for query in ("lighthouse", "harbour keeper", "keeper 7"):
        assert recovered.bm25.search(query, 20, Scope()) == fresh.bm25.search(query, 20, Scope()), query
    recovered.close()
    fresh.close()


def test_a_compaction_keeps_the_edits_made_while_it_ran_and_survives_a_restart(tmp_path: Path):
    """Notes applied or removed between the compaction's snapshot and its swap are in the
    swapped-in index; its generation is the bookkeeping's, so a restart does not rebuild it."""
    index = open_index(tmp_path)
    for i in range(6):
        index.apply(doc(f"n{i}.md", f"lighthouse keeper {i}"))
    index.commit(1)
    index.apply(doc("n0.md", "lighthouse keeper zero edited"))  # an edit: the old chunk stays as a deleted document
    index.commit(2)
    assert index.bm25.replaced() == 1
    live = index.bm25
    empty_beside = live.empty_beside

    def edits_during_the_build() -> Bm25Index:
        built = empty_beside()
        commit = built.commit

        def commit_after_edits() -> None:  # the build is done, the swap not yet: edits come in
            index.apply(doc("n1.md", "lighthouse keeper one rewritten meanwhile"))
            index.apply(doc("new.md", "a note written meanwhile"))
            index.remove("n2.md")
            commit()

        built.commit = commit_after_edits  # type: ignore[method-assign]
        return built

    live.empty_beside = edits_during_the_build  # type: ignore[method-assign]
    assert index.compact_bm25(threading.Event())
    assert index.bm25 is not live
    assert index.bm25.replaced() == 2  # the edits made meanwhile leave theirs, for the next compaction
    assert index.check().problems == []
    hits = dict(index.bm25.search("rewritten meanwhile zero edited", 10, Scope()))
    assert set(hits) == {"n0.md#0", "n1.md#0", "new.md#0"}
    assert index.bm25.search("lighthouse", 10, Scope())[-1][0] != "n2.md#0"
    assert "n2.md#0" not in dict(index.bm25.search("keeper 2", 10, Scope()))
    generation = index.bm25.generation
    index.close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("bm25")) == ["bm25"]

    reopened = open_index(tmp_path)
    assert reopened.bm25.generation == generation  # not rebuilt
    assert reopened.check().problems == []
    assert set(dict(reopened.bm25.search("rewritten meanwhile zero edited", 10, Scope()))) == set(hits)
    reopened.close()


def test_a_compaction_gives_up_when_stopped_or_when_bm25_was_rebuilt_meanwhile(tmp_path: Path):
    index = open_index(tmp_path)
    for i in range(3):
        index.apply(doc(f"n{i}.md", f"lighthouse keeper {i}"))
    index.commit(1)
    index.apply(doc("n0.md", "edited"))
    index.commit(9)
    stopped = threading.Event()
    stopped.set()
    live = index.bm25
    assert not index.compact_bm25(stopped)
    assert index.bm25 is live and live.replaced() == 1
    assert not (tmp_path / "bm25.next").exists()  # the half-built index is gone

    empty_beside = live.empty_beside

    def rebuilt_during_the_build() -> Bm25Index:
        built = empty_beside()
        index.rebuild_bm25()  # a Reindex, say: another generation
        return built

    live.empty_beside = rebuilt_during_the_build  # type: ignore[method-assign]
    assert not index.compact_bm25(threading.Event())
    assert index.bm25 is live and index.check().problems == []
    assert not (tmp_path / "bm25.next").exists()
    index.close()


def test_leftovers_of_a_compaction_cut_short_are_removed_at_open(tmp_path: Path):
    (tmp_path / "bm25.next").mkdir()
    (tmp_path / "bm25.next" / "meta.json").write_text("{}")
    (tmp_path / "bm25.old").mkdir()
    index = open_index(tmp_path)
    assert not (tmp_path / "bm25.next").exists() and not (tmp_path / "bm25.old").exists()
    index.close()


def test_equal_scores_rank_in_path_order_whatever_the_indexing_order(tmp_path: Path):
    notes = [doc(f"n{i:02d}.md", "identical lighthouse text") for i in range(8)]
    forwards, backwards = open_index(tmp_path / "f"), open_index(tmp_path / "b")
    for d in notes:
        forwards.apply(d)
    for d in reversed(notes):
        backwards.apply(d)
    forwards.commit(1)
    backwards.commit(1)
    expected = [f"n{i:02d}.md#0" for i in range(8)]
    assert [c for c, _ in forwards.bm25.search("lighthouse", 10, Scope())] == expected
    assert [c for c, _ in backwards.bm25.search("lighthouse", 10, Scope())] == expected
    forwards.close()
    backwards.close()


def test_links_applied_later_reach_the_graph_at_the_commit(tmp_path: Path):
    def linking(path: str, *targets: str) -> common_pb2.Document:
        d = doc(path, f"text of {path}")
        d.links.extend(common_pb2.Link(target=t) for t in targets)
        return d

    index = open_index(tmp_path)
    index.apply(linking("a.md", "b", "c"), link_later=True)
    index.apply(linking("b.md", "a"), link_later=True)
    index.apply(linking("c.md", "a"), link_later=True)
    index.remove("c.md")  # removed before its links were filed: it never enters the graph
    assert index.graph.outgoing("a.md") == set()
    index.commit(1)
    assert index.graph.outgoing("a.md") == {"b.md"}
    assert index.graph.backlinks("a.md") == {"b.md"}
    index.apply(linking("c.md"), link_later=True)
    index.apply(linking("c.md", "b"))  # applied at once: replaces the pending version
    index.commit(2)
    assert index.graph.outgoing("c.md") == {"b.md"}
    assert index.graph.outgoing("a.md") == {"b.md", "c.md"}
    index.close()
    reopened = open_index(tmp_path)  # the graph is rebuilt from the stored documents
    assert reopened.graph.outgoing("a.md") == {"b.md", "c.md"}
    assert reopened.graph.backlinks("b.md") == {"a.md", "c.md"}
    reopened.close()


def test_staged_bookkeeping_is_durable_only_once_committed(tmp_path: Path):
    state = IndexState(tmp_path / "state.sqlite")
    state.put_doc(doc("a.md", "one"))
    state.put_vector("a.md#0", "h0")
    state.stage()  # written into the open transaction: another connection does not see it
    assert IndexState(tmp_path / "state.sqlite").docs == {}
    state.rollback()  # dropped from the database, pending again
    state.put_doc(doc("b.md", "two"))
    state.stage()
    state.commit(7)
    reopened = IndexState(tmp_path / "state.sqlite")
    assert sorted(reopened.docs) == ["a.md", "b.md"]
    assert reopened.vectors == {"a.md#0": "h0"}
    assert reopened.last_applied_seq == 7
    state.drop_doc("a.md")
    state.stage()
    state.close()  # closed with a staged change: rolled back, nothing half-written
    assert sorted(IndexState(tmp_path / "state.sqlite").docs) == ["a.md", "b.md"]


class _CountingLock:
    """The index's lock, counting its holds; `on_hold(n)` runs as the n-th hold begins."""

    def __init__(self, on_hold=lambda n: None) -> None:
        self._lock = threading.RLock()
        self.holds = 0
        self._on_hold = on_hold

    def __enter__(self) -> None:
        self._lock.acquire()
        self.holds += 1
        self._on_hold(self.holds)

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_missing_vectors_lets_go_of_the_lock_between_slices_and_skips_a_note_removed_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Searches take the index's lock too: on a 46,000-chunk vault one hold of 0.3 s made the
    first search after the build, and any search during the 15 s sweep, wait for all of it."""
    from k0maru_retriever import _index

    monkeypatch.setattr(_index, "MISSING_SLICE", 2)
    index = open_index(tmp_path)
    for i in range(7):
        index.apply(doc(f"n{i}.md", f"note {i}"))
    index.commit(1)
    index.lock = _CountingLock()
    assert len(index.missing_vectors()) == 7
    assert index.lock.holds >= 1 + 4  # the list of notes, then 4 slices of at most 2 notes

    def remove_a_later_note(n: int) -> None:
        if n == 3:  # as the second slice begins: a note of the third is removed
            index.state.drop_doc("n4.md")

    index.lock = _CountingLock(remove_a_later_note)
    jobs = index.missing_vectors()
    assert sorted(j.chunk_id for j in jobs) == sorted(f"n{i}.md#0" for i in range(7) if i != 4)
    index.close()


def test_a_notes_vector_keys_made_at_once_are_each_chunks_own():
    """`missing_vectors` makes a note's keys together; a stored vector is kept only while its key
    matches, so they must be exactly what `vector_key` gives each chunk."""
    from k0maru_retriever._index import vector_key, vector_keys

    described = doc("d.md", "first chunk", "second chunk")
    described.description = "what the note is about"
    described.tags.extend(["ops", "db"])
    for d in (doc("a.md", "one", "two", "three"), described, doc("empty.md")):
        assert vector_keys(d, "m") == [vector_key(d, c, "m") for c in d.chunks]
    assert vector_keys(described, "m")[0] != vector_keys(doc("d.md", "first chunk", "second chunk"), "m")[0]
    # and as they were before: vectors stored by an earlier version are kept
    import xxhash

    assert vector_keys(doc("a.md", "one"), "m") == [xxhash.xxh3_64_hexdigest(b"m|a.md0|a.md|a.md|")]
