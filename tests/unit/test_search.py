"""HybridSearcher on real tantivy and Qdrant Edge: pools of distinct notes, channels that say why."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from k0maru.v1 import common_pb2, retriever_pb2
from k0maru_common import InvalidInput
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index
from k0maru_retriever._index import NoteIndex, split_chunk_id, vector_key
from k0maru_retriever._search import FusionParams, HybridSearcher, QueryEmbedder, _day, mark_same_passages
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


def embed_first_chunks(index: NoteIndex, vector_of: Callable[[str], list[float] | None]) -> int:
    """Store a vector for each note's first chunk, `vector_of(path)` normalised (None: no vector yet)."""
    results = []
    for path, doc in index.state.docs.items():
        if (vec := vector_of(path)) is not None:
            v = np.array(vec, dtype=np.float32)
            results.append((f"{path}#0", vector_key(doc, doc.chunks[0], index.model_id), v / np.linalg.norm(v)))
    return index.apply_vectors(results)


def open_index(folder: Path) -> NoteIndex:
    return NoteIndex(
        Bm25Index(folder / "bm25", BM25Analyzer()),
        EdgeVectorStore(folder / "vectors", 4),
        IndexState(folder / "state.sqlite"),
        4,
    )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[NoteIndex]:
    idx = open_index(tmp_path)
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


def test_a_note_is_found_by_its_description_and_only_its_first_chunk_is_embedded_with_it(index: NoteIndex):
    """Dendron's notes often say what they are about only in their frontmatter's `desc` (the body:
    `{{fm.desc}}`): BM25 searches it with the first chunk, and the model reads it before that chunk."""
    publish = note("publish.md", "{{fm.desc}}.", "## Child pages\nConcepts, configuration, sidebar")
    publish.description = "Export any subset of your notes as static HTML via a nextjs template"
    jobs = index.apply(publish)
    index.apply(note("other.md", "static typing in python"))
    index.commit()
    searcher = HybridSearcher(index, None, FusionParams(), "v")
    reply = searcher.search(
        retriever_pb2.SearchRequest(query="export notes as html", mode=retriever_pb2.SEARCH_MODE_BM25)
    )
    assert [(h.path, h.chunk_index) for h in reply.hits] == [("publish.md", 0)]
    assert [j.text for j in jobs] == [
        "publish\nExport any subset of your notes as static HTML via a nextjs template\n{{fm.desc}}.",
        "publish\n## Child pages\nConcepts, configuration, sidebar",
    ]
    edited = common_pb2.Document()
    edited.CopyFrom(publish)
    edited.description = "Something else"
    first, second = publish.chunks
    assert vector_key(edited, first, "m") != vector_key(publish, first, "m")  # re-embedded
    assert vector_key(edited, second, "m") == vector_key(publish, second, "m")  # kept
    edited.description = ""
    plain = note("publish.md", "{{fm.desc}}.", "## Child pages\nConcepts, configuration, sidebar")
    assert vector_key(edited, first, "m") == vector_key(plain, first, "m")  # as before descriptions counted


def test_where_bm25_ranks_alone_a_short_title_in_the_query_does_not_outrank_the_note_it_asks_for(index: NoteIndex):
    """No vector channel (BM25 mode, or no embedder): the decision an agent saved comes before the
    notes titled "Export" for "why serialise exports flock" (`Bm25Index.search`, `ranks_alone`)."""
    for i in range(3):
        index.apply(note(f"pod{i}/Export.md", f"Export notes of pod {i}; an export writes files."))
    index.apply(note("Export lock decision.md", "Serialise exports with an flock; the second waits."))
    for i in range(15):
        index.apply(note(f"n{i}.md", f"About export {i} and writing files"))
    index.commit()
    searcher = HybridSearcher(index, None, FusionParams(), "v")
    for mode in (retriever_pb2.SEARCH_MODE_BM25, retriever_pb2.SEARCH_MODE_HYBRID):
        reply = searcher.search(retriever_pb2.SearchRequest(query="why serialise exports flock", mode=mode))
        assert reply.hits[0].path == "Export lock decision.md", mode


def test_a_passage_two_notes_share_word_for_word_is_said_once():
    hits = [
        retriever_pb2.SearchHit(path="tutorial/main.md", snippet="Taking notes in plain text files lasts for decades."),
        retriever_pb2.SearchHit(path="other.md", snippet="Something else entirely, long enough to count here."),
        retriever_pb2.SearchHit(path="tutorial/copy.md", snippet="Taking notes in plain text files lasts for decades."),
        retriever_pb2.SearchHit(path="a.md", snippet="## Summary"),
        retriever_pb2.SearchHit(path="b.md", snippet="## Summary"),  # too short to call the same passage
    ]
    mark_same_passages(hits)
    assert [h.same_passage_as for h in hits] == ["", "", "tutorial/main.md", "", ""]


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
        tagmemo = retriever_pb2.TagMemoOptions(enabled=True)
        explained = searcher.search(retriever_pb2.SearchRequest(query="alpha", tagmemo=tagmemo, explain=True))
        assert not explained.tagmemo.applied  # TagMemo reshapes a query vector, and there is none
        assert explained.tagmemo.reason == "no vectors yet: 0 of 1 chunks embedded"
        bm25_only = retriever_pb2.SearchRequest(
            query="alpha", tagmemo=tagmemo, explain=True, mode=retriever_pb2.SEARCH_MODE_BM25
        )
        assert searcher.search(bm25_only).tagmemo.reason == "this mode has no vector channel"
        assert hybrid.mode_used == retriever_pb2.SEARCH_MODE_BM25
        assert [(c.channel, c.ran) for c in hybrid.channels] == [("bm25", True), ("vector", False)]
    finally:
        embedder.close()


def test_hybrid_reports_each_channels_weight_and_confidence(index: NoteIndex):
    # BM25: one note says "alpha" three times, twelve say it once; vector: "v00" is nearest the query.
    index.apply(note("strong.md", "alpha alpha alpha"))
    for n in range(12):
        index.apply(note(f"v{n:02}.md", f"alpha filler words {n}"))
    index.commit()
    results = []
    for path, doc in index.state.docs.items():
        for chunk in doc.chunks:
            cid = f"{path}#{chunk.index}"
            assert split_chunk_id(cid) == (path, chunk.index)
            i = int(path[1:3]) if path.startswith("v") else 20
            vec = np.array([1.0, 0.05 * i, 0.0, 0.0], dtype=np.float32)
            results.append((cid, vector_key(doc, chunk, index.model_id), vec / np.linalg.norm(vec)))
    assert index.apply_vectors(results) == 13
    embedder = QueryEmbedder("127.0.0.1:9")  # never called: the query's vector is already known
    try:
        embedder.remember("alpha", np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32))
        searcher = HybridSearcher(index, embedder, FusionParams(), "v")
        reply = searcher.search(retriever_pb2.SearchRequest(query="alpha", limit=5))
        bm25, vector = reply.channels
        assert (bm25.channel, vector.channel) == ("bm25", "vector") and bm25.ran and vector.ran
        assert bm25.weight + vector.weight == pytest.approx(1.0) and 0 < bm25.weight < 1
        assert 0 < bm25.confidence <= 1 and vector.confidence > 0
        only_bm25 = searcher.search(retriever_pb2.SearchRequest(query="alpha", mode=retriever_pb2.SEARCH_MODE_BM25))
        assert [(c.channel, c.weight) for c in only_bm25.channels] == [("bm25", 0.0)]  # weights are hybrid's
    finally:
        embedder.close()


def test_a_scope_day_is_a_day_or_one_counted_back_from_today():
    today = date(2026, 12, 4)
    assert _day("2026-11-30", "since", today) == "2026-11-30"
    assert _day(" 20261130 ", "since", today) == "2026-11-30"  # ISO's basic form
    assert [_day(x, "since", today) for x in ("today", "Yesterday", "7d", "2w", "0d")] == [
        "2026-12-04",
        "2026-12-03",
        "2026-11-27",
        "2026-11-20",
        "2026-12-04",
    ]
    assert _day("", "since", today) == ""
    for bad in ("last week", "2026-02-30", "999999d", "-3d", "3 days"):
        with pytest.raises(InvalidInput, match="since must be a day, YYYY-MM-DD, or one counted back"):
            _day(bad, "since", today)


def test_a_date_range_finds_its_notes_however_many_others_match_better(index: NoteIndex):
    # 700 older notes say "alpha" three times in each of 3 chunks: 2,100 chunks outrank the two
    # recent notes that say it once, deeper than the 64 chunks per pooled note a filter applied
    # to the rankings would reach (pool 30 → 1,920). The range is pushed into both stores.
    for n in range(700):
        doc = note(f"old/{n:03}.md", *["alpha alpha alpha and more"] * 3)
        doc.date = "2025-01-15"
        index.apply(doc)
    for path, day in (("new/a.md", "2026-11-30"), ("new/b.md", "2026-12-02")):
        doc = note(path, "alpha once, among a good many other words here")
        doc.date = day
        index.apply(doc)
    index.commit()
    results = []
    for path, doc in index.state.docs.items():
        for chunk in doc.chunks:
            vec = np.array([1.0, 0.1 if path.startswith("old") else 0.9, 0.0, 0.0], dtype=np.float32)
            results.append((f"{path}#{chunk.index}", vector_key(doc, chunk, index.model_id), vec / np.linalg.norm(vec)))
    index.apply_vectors(results)
    embedder = QueryEmbedder("127.0.0.1:9")  # never called: the query's vector is already known
    try:
        embedder.remember("alpha", np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32))
        searcher = HybridSearcher(index, embedder, FusionParams(), "v")

        def found(mode: int, since: str = "", until: str = "") -> list[str]:
            scope = retriever_pb2.Scope(since=since, until=until)
            request = retriever_pb2.SearchRequest(query="alpha", limit=10, mode=mode, scope=scope)
            return sorted(h.path for h in searcher.search(request).hits)

        for mode in (
            retriever_pb2.SEARCH_MODE_BM25,
            retriever_pb2.SEARCH_MODE_VECTOR,
            retriever_pb2.SEARCH_MODE_HYBRID,
        ):
            assert found(mode, since="2026-11-01") == ["new/a.md", "new/b.md"], mode  # the 2 notes it keeps
            assert found(mode, since="2026-12-01") == ["new/b.md"], mode
            assert found(mode, until="2026-12-01", since="2025-06-01") == ["new/a.md"], mode
            assert found(mode, since="2026-12-03") == [], mode  # no note dated then
            older = found(mode, until="2026-01-01")  # 700 notes in range
            assert len(older) == 10 and all(p.startswith("old/") for p in older), mode
        # a note redated moves with its date
        doc = common_pb2.Document()
        doc.CopyFrom(index.state.docs["new/a.md"])
        doc.date = "2024-05-05"
        index.apply(doc)
        index.commit()
        assert found(retriever_pb2.SEARCH_MODE_BM25, since="2026-11-01") == ["new/b.md"]
        assert found(retriever_pb2.SEARCH_MODE_HYBRID, until="2024-12-31") == ["new/a.md"]
    finally:
        embedder.close()


def test_a_wide_date_range_the_rankings_miss_is_pushed_whatever_its_size(
    index: NoteIndex, monkeypatch: pytest.MonkeyPatch
):
    """A range that keeps more notes than are pushed at first (PUSH_MAX, made 5 here) is checked on
    each channel's ranking; when even the deepest ranking holds too few of its notes, the range is
    pushed however many notes it keeps."""
    from k0maru_retriever import _days

    monkeypatch.setattr(_days, "PUSH_MAX", 5)
    for n in range(700):
        doc = note(f"old/{n:03}.md", *["alpha alpha alpha and more"] * 3)
        doc.date = "2025-01-15"
        index.apply(doc)
    for n in range(8):
        doc = note(f"new/{n}.md", f"alpha once, among a good many other words, number {n}")
        doc.date = "2026-11-30"
        index.apply(doc)
    index.commit()
    searcher = HybridSearcher(index, None, FusionParams(), "v")
    scope = retriever_pb2.Scope(since="2026-11-01")
    request = retriever_pb2.SearchRequest(query="alpha", limit=10, mode=retriever_pb2.SEARCH_MODE_BM25, scope=scope)
    assert sorted(h.path for h in searcher.search(request).hits) == [f"new/{n}.md" for n in range(8)]


def test_notes_not_embedded_yet_are_not_buried_by_the_few_that_are(index: NoteIndex):
    """While a vault is being embedded the vector channel sees only the notes embedded so far (in
    path order: a folder of changelogs first). The note BM25 ranks first, not embedded yet, stays
    first; fused as though the channel were whole, the embedded notes took the top."""
    index.apply(note("guide.md", "rename a note and update its links"))  # the answer: no vector yet
    for n in range(10):
        index.apply(note(f"changelog{n}.md", f"release {n}: rename shipped"))
    index.commit()
    embedded_first = {f"changelog{n}.md": [1.0, 0.1 * n, 0.0, 0.0] for n in range(10)}
    assert embed_first_chunks(index, embedded_first.get) == 10
    embedder = QueryEmbedder("127.0.0.1:9")  # never called: the query's vector is already known
    try:
        query = "rename a note and update links"
        embedder.remember(query, np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32))
        searcher = HybridSearcher(index, embedder, FusionParams(), "v")
        bm25 = searcher.search(retriever_pb2.SearchRequest(query=query, mode=retriever_pb2.SEARCH_MODE_BM25))
        assert bm25.hits[0].path == "guide.md"
        for method in ("convex", "rrf"):
            searcher = HybridSearcher(index, embedder, FusionParams(method=method), "v")
            reply = searcher.search(retriever_pb2.SearchRequest(query=query, limit=5, explain=True))
            assert (
                reply.vector_coverage == pytest.approx(10 / 11) and reply.mode_used == retriever_pb2.SEARCH_MODE_HYBRID
            )
            assert reply.hits[0].path == "guide.md", (method, [h.path for h in reply.hits])
            assert [h.explain.not_embedded for h in reply.hits] == [True] + [False] * 4  # the debugger says so
            assert reply.channels[1].ran and any(h.explain.vector.rank for h in reply.hits)  # the channel counts
        index.apply_vectors(  # the vault embedded: the vector channel counts in full again
            [
                (
                    "guide.md#0",
                    vector_key(index.state.docs["guide.md"], index.state.docs["guide.md"].chunks[0], index.model_id),
                    np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32),
                )
            ]
        )
        whole = HybridSearcher(index, embedder, FusionParams(), "v").search(
            retriever_pb2.SearchRequest(query=query, explain=True)
        )
        assert whole.vector_coverage == 1.0 and whole.hits[0].explain.vector.rank > 0
    finally:
        embedder.close()


def embed_around_the_query(index: NoteIndex, near: str) -> int:
    """Vectors for every note's first chunk: the ten `{near}N.md` fanning out from the queries'
    direction [1, 0, 0, 0] (the vector channel's nearest), every other note far from it."""
    spread = {f"{near}{n}.md": [1.0, 0.3 * n, 0.0, 0.0] for n in range(10)}
    return embed_first_chunks(index, lambda path: spread.get(path, [0.0, 1.0, 0.0, 0.0]))


def test_the_best_hits_do_not_hang_on_the_limit(index: NoteIndex):
    """Each channel's scores are scaled within its pool: pooled by the limit (20 notes at MCP's 5,
    30 at 10), `-XX:MaxRAMPercentage=75` put another note first at limit 5 than at 10. The first
    five hits are the same at limits 1, 5 and 10."""
    rng = np.random.default_rng(7)
    words = ["cache", "queue", "timeout", "retry", "lock", "index", "shard", "replica", "deploy", "token"]
    for n in range(60):
        text = " ".join(rng.choice(words, size=12)) + f" note{n}"
        index.apply(note(f"n{n:02d}.md", text))
    index.commit()
    directions = {f"n{n:02d}.md": rng.normal(size=4).tolist() for n in range(60)}
    assert embed_first_chunks(index, lambda path: directions[path]) == 60
    embedder = QueryEmbedder("127.0.0.1:9")  # never called: the queries' vectors are already known
    try:
        searcher = HybridSearcher(index, embedder, FusionParams(), "v")
        queries = [" ".join(rng.choice(words, size=3)) for _ in range(20)]
        for query in queries:
            embedder.remember(query, rng.normal(size=4).astype(np.float32))
        for query in queries:
            ranked = {
                limit: [h.path for h in searcher.search(retriever_pb2.SearchRequest(query=query, limit=limit)).hits]
                for limit in (1, 5, 10)
            }
            assert ranked[1] == ranked[5][:1] == ranked[10][:1] and ranked[5] == ranked[10][:5], query
    finally:
        embedder.close()


@contextlib.contextmanager
def searching(index: NoteIndex, queries: tuple[str, ...]) -> Iterator[HybridSearcher]:
    """A hybrid searcher whose embedder knows each query's vector: [1, 0, 0, 0], the direction the
    `embed_around_the_query` notes fan out from (the embedder itself is never called)."""
    embedder = QueryEmbedder("127.0.0.1:9")
    try:
        for query in queries:
            embedder.remember(query, np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32))
        yield HybridSearcher(index, embedder, FusionParams(), "v")
    finally:
        embedder.close()


def test_a_query_that_is_a_notes_name_finds_that_note_first(index: NoteIndex):
    """Typed as a quick switcher is: "rename note" (or "how do I rename a note") is the note named
    Rename Note, however many changelogs say those words more often and sit nearer the query's
    vector. With a word more the query is no name, and fusion decides as before."""
    index.apply(note("Rename Note.md", "The command changes a note's name and every link to it."))
    for n in range(10):
        index.apply(note(f"changelog{n}.md", f"release {n}: rename note rename note fixes, rename note faster"))
    index.commit()
    assert embed_around_the_query(index, "changelog") == 11
    with searching(index, ("rename note", "Rename Note", "how do I rename a note", "rename fixes faster")) as searcher:
        for mode in (retriever_pb2.SEARCH_MODE_HYBRID, retriever_pb2.SEARCH_MODE_BM25):
            for query in ("rename note", "Rename Note", "how do I rename a note"):
                reply = searcher.search(retriever_pb2.SearchRequest(query=query, limit=5, mode=mode, explain=True))
                assert reply.hits[0].path == "Rename Note.md", (mode, query, [h.path for h in reply.hits])
                assert [h.explain.exact for h in reply.hits[:2]] == ["name", ""]  # the debugger says why
        more = searcher.search(retriever_pb2.SearchRequest(query="rename fixes faster", limit=5))
        assert more.hits[0].path.startswith("changelog")
        vector = searcher.search(
            retriever_pb2.SearchRequest(query="rename note", mode=retriever_pb2.SEARCH_MODE_VECTOR)
        )
        assert vector.hits[0].path.startswith("changelog")  # the vector channel alone stays itself


def test_a_note_named_only_by_its_file_is_found_by_that_name(index: NoteIndex):
    """`reading/ddia.md` is titled "Designing Data-Intensive Applications" and never says "ddia";
    an empty note Obsidian made for a link has no text at all: neither was ever a candidate, and
    "ddia" or the empty note's name found nothing. A query that names a note as a [[link]] would
    finds it first, in its scope only."""
    doc = note("reading/ddia.md", "Designing Data-Intensive Applications\n\nreplication and partitioning")
    doc.title = "Designing Data-Intensive Applications"
    index.apply(doc)
    index.apply(note("inbox/Terraform state locking.md"))  # no chunk: an empty note
    index.apply(note("other.md", "state machines and locking in general"))
    index.commit()
    searcher = HybridSearcher(index, None, FusionParams(), "v")
    bm25 = retriever_pb2.SEARCH_MODE_BM25
    for query, path in (("ddia", "reading/ddia.md"), ("terraform state locking", "inbox/Terraform state locking.md")):
        reply = searcher.search(retriever_pb2.SearchRequest(query=query, mode=bm25, explain=True))
        assert [(h.path, h.explain.exact) for h in reply.hits[:1]] == [(path, "name")], query
    scoped = searcher.search(
        retriever_pb2.SearchRequest(query="ddia", mode=bm25, scope=retriever_pb2.Scope(path_prefixes=["inbox/"]))
    )
    assert not scoped.hits  # out of the scope asked for: not brought in
    longer = searcher.search(retriever_pb2.SearchRequest(query="ddia replication notes", mode=bm25))
    assert [h.path for h in longer.hits][:1] == ["reading/ddia.md"]  # by its words, as before


def test_a_line_pasted_from_a_note_finds_that_note_first(index: NoteIndex):
    """An agent pastes a line the vault holds: the note it is in comes first, though notes about
    the same things sit nearer the query's vector and say its words more often. Held word for
    word by two notes, the line decides nothing."""
    index.apply(
        note("runbook.md", "## Deploys\nRestart the worker after the **migration** finishes, then check the queue.")
    )
    for n in range(10):
        index.apply(note(f"worker{n}.md", f"worker restart, worker migration {n}: the worker finishes the migration"))
    index.commit()
    assert embed_around_the_query(index, "worker") == 11
    line = "restart the worker after the migration finishes"
    with searching(index, (line,)) as searcher:
        first = searcher.search(retriever_pb2.SearchRequest(query=line, limit=5, explain=True)).hits[0]
        assert (first.path, first.explain.exact) == ("runbook.md", "line")
        copy = note("copy.md", "## Deploys\nRestart the worker after the migration finishes, then check the queue.")
        index.apply(copy)
        index.commit()
        far = np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32)
        assert index.apply_vectors([("copy.md#0", vector_key(copy, copy.chunks[0], index.model_id), far)]) == 1
        hits = searcher.search(retriever_pb2.SearchRequest(query=line, limit=5, explain=True)).hits
        assert [h.explain.exact for h in hits] == [""] * 5, [h.path for h in hits]  # fusion's order alone


def test_the_one_note_holding_a_symbol_of_the_query_comes_first(index: NoteIndex):
    """ "how do I fix error E0502": the one note recording that code comes first, though notes about
    errors in general sit nearer the query's vector and say "error" and "fix" more. A code two
    notes hold decides nothing, nor does a word joined by a hyphen."""
    index.apply(note("rust-borrow.md", "error[E0502]: cannot borrow `v` as mutable. Clone the value."))
    index.apply(note("oom.md", "Pods restarted with OOMKilled, exit code 137. Raise the memory limit."))
    for n in range(10):
        index.apply(note(f"errors{n}.md", f"how to fix an error: read the error, fix the error {n}, exit code docs"))
    index.commit()
    assert embed_around_the_query(index, "errors") == 12
    asked = {"how do I fix error E0502": "rust-borrow.md", "exit code 137": "oom.md", "read the error": ""}
    with searching(index, tuple(asked)) as searcher:
        for query, wanted in asked.items():
            reply = searcher.search(retriever_pb2.SearchRequest(query=query, limit=5, explain=True))
            paths = [h.path for h in reply.hits]
            if wanted:
                assert (paths[0], reply.hits[0].explain.exact) == (wanted, "symbol"), (query, paths)
            else:
                assert paths[0] == "errors0.md" and not reply.hits[0].explain.exact
        index.apply(note("copy.md", "We saw E0502 once more."))  # two notes hold it: fusion's order
        index.commit()
        far = np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32)
        copy = index.state.docs["copy.md"]
        assert index.apply_vectors([("copy.md#0", vector_key(copy, copy.chunks[0], index.model_id), far)]) == 1
        reply = searcher.search(retriever_pb2.SearchRequest(query="how do I fix error E0502", explain=True))
        assert not any(h.explain.exact for h in reply.hits), [h.path for h in reply.hits]


def test_a_scope_no_note_is_in_is_said_when_nothing_is_found(index: NoteIndex):
    """An agent that scopes a recall to `decision/` where the vault writes `Decisions/`, or to a tag
    no note carries, found nothing and could not tell why; now the answer names the part of the
    scope that no note is in (each spelling of it checked), and only when nothing is found."""
    doc = note("Decisions/use wal.md", "We use WAL for the export database.")
    doc.tags.append("db")
    index.apply(doc)
    index.commit()
    searcher = HybridSearcher(index, None, FusionParams(), "v")
    bm25 = retriever_pb2.SEARCH_MODE_BM25

    def ask(query: str, **scope: list[str]) -> retriever_pb2.SearchResponse:
        return searcher.search(retriever_pb2.SearchRequest(query=query, mode=bm25, scope=retriever_pb2.Scope(**scope)))

    reply = ask("wal", path_prefixes=["decision/"], tags=["ops"])
    assert not reply.hits
    assert list(reply.empty_scope) == ["no note is in the folder decision/", "no note carries the tag #ops"]
    assert [h.path for h in ask("wal", path_prefixes=["decisions/"], tags=["#DB"]).hits] == ["Decisions/use wal.md"]
    nothing = ask("redis", path_prefixes=["decisions/"])  # the folder holds notes; the query matched none
    assert not nothing.hits and not nothing.empty_scope
    listing = ask("", diaries=["Logs"])  # a scope alone lists its notes: none here, and it says why
    assert not listing.hits and list(listing.empty_scope) == ["no note is in the diary Logs"]
    top = [h.path for h in ask("", diaries=["Root"]).hits]  # the top level's diary (this helper's notes)
    assert top and all(top == [h.path for h in ask("", diaries=[r]).hits] for r in ("root", "ROOT"))  # any case
    # a day range no note is dated in (it said only "no notes match")
    doc = note("Decisions/dated.md", "We date this one.")
    doc.date = "2026-03-01"
    index.apply(doc)
    index.commit()
    later = ask("wal", since="2099-01-01")
    assert list(later.empty_scope) == ["no note is dated from 2099-01-01 on"]
    assert [(c.channel, c.ran, c.reason) for c in later.channels] == [("bm25", False, "no note is dated in the scope")]
    assert list(ask("", since="2020-01-01", until="2020-12-31").empty_scope) == [
        "no note is dated from 2020-01-01 to 2020-12-31"
    ]
    assert not ask("redis", until="2026-12-31").empty_scope  # dated notes there; the query matched none


def test_a_note_a_later_one_replaces_says_so_and_comes_right_after_it(tmp_path: Path):
    """An agent recalled the first auth design, which BM25 ranks above its revision (it says
    "auth design tokens" more often), and acted on a decision that no longer held. A note that
    replaces another says so with a `supersedes` link (frontmatter, `key::` line or an ADR's
    status line), or the old one says `superseded_by`: the old hit then names its successor and
    comes right after it, brought into the answer if the search did not find it and it is in the
    scope searched (the current decision first); a plain link changes nothing, and a deleted
    successor nothing either."""

    def linked(doc: common_pb2.Document, target: str, prop: str) -> common_pb2.Document:
        doc.links.append(common_pb2.Link(target=target, line=1, property=prop))
        return doc

    index = open_index(tmp_path)
    index.apply(note("decisions/auth design.md", "Auth design: session tokens. Auth design tokens rotate daily."))
    index.apply(linked(note("decisions/auth v2.md", "Auth design revised: OIDC tokens."), "auth design", "supersedes"))
    index.apply(linked(note("notes/reading.md", "Reading about auth design tokens."), "auth design", "related"))
    index.apply(linked(note("decisions/cache.md", "Cache design: redis cache."), "cache v2", "Superseded-By"))
    index.apply(note("decisions/cache v2.md", "Cache: none, the database is fast enough."))
    index.commit()
    searcher = HybridSearcher(index, None, FusionParams(), "v")
    assert index.replaced() == {  # the whole vault's, for the loadout (the `Superseded` RPC)
        "decisions/auth design.md": ["decisions/auth v2.md"],
        "decisions/cache.md": ["decisions/cache v2.md"],
    }

    def ask(query: str, limit: int = 10, **scope: list[str]) -> list[tuple[str, list[str]]]:
        reply = searcher.search(
            retriever_pb2.SearchRequest(
                query=query, limit=limit, mode=retriever_pb2.SEARCH_MODE_BM25, scope=retriever_pb2.Scope(**scope)
            )
        )
        return [(h.path, list(h.superseded_by)) for h in reply.hits]

    answer = ask("auth design tokens")
    assert answer[:2] == [("decisions/auth v2.md", []), ("decisions/auth design.md", ["decisions/auth v2.md"])]
    assert ("notes/reading.md", []) in answer  # linked to it, replacing nothing
    cache = [("decisions/cache v2.md", []), ("decisions/cache.md", ["decisions/cache v2.md"])]
    assert ask("redis") == cache  # the successor, which the query does not match, brought in before it
    assert ask("redis", limit=1) == cache[:1]
    index.apply(linked(note("archive/cache v3.md", "Cache: a CDN after all."), "cache v2", "supersedes"))
    index.commit()  # a successor outside the folder searched is named, not brought in
    assert ask("redis", path_prefixes=["decisions/"]) == [
        ("decisions/cache v2.md", ["archive/cache v3.md"]),
        ("decisions/cache.md", ["decisions/cache v2.md"]),
    ]
    assert [p for p, _ in ask("redis")] == ["archive/cache v3.md", "decisions/cache v2.md", "decisions/cache.md"]
    assert index.replaced()["decisions/cache v2.md"] == ["archive/cache v3.md"]
    index.remove("archive/cache v3.md")
    listed = dict(ask("", path_prefixes=["decisions/"]))  # a listing marks them too
    assert listed["decisions/cache.md"] == ["decisions/cache v2.md"] and listed["decisions/auth v2.md"] == []
    index.remove("decisions/auth v2.md")
    index.commit()
    assert ("decisions/auth design.md", []) in ask("auth design tokens")
    index.close()
    reopened = open_index(tmp_path)  # read back from the stored documents at a restart
    try:
        searcher = HybridSearcher(reopened, None, FusionParams(), "v")
        assert ask("redis") == cache
        assert reopened.replaced() == {"decisions/cache.md": ["decisions/cache v2.md"]}
    finally:
        reopened.close()


def test_a_hybrid_answer_says_when_no_note_holds_the_query_s_words(index: NoteIndex):
    """`kiwi` on a vault that never says it: hybrid answered the nearest notes by meaning, the
    first at score 1.0, and an agent asking "have we seen this error?" read it as yes. The answer
    now says no note holds the query's words; a query BM25 matches says nothing of the kind."""
    index.apply(note("fast edit.md", "edit notes quickly with the keyboard"))
    index.apply(note("sqlite.md", "SQLITE_BUSY: the database is locked"))
    index.commit()
    assert embed_first_chunks(index, {"fast edit.md": [1.0, 0.2, 0.0, 0.0], "sqlite.md": [0.0, 1.0, 0.0, 0.0]}.get) == 2
    embedder = QueryEmbedder("127.0.0.1:9")  # never called: the queries' vectors are already known
    try:
        for query in ("kiwi", "database locked"):
            embedder.remember(query, np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32))
        searcher = HybridSearcher(index, embedder, FusionParams(), "v")
        nothing = searcher.search(retriever_pb2.SearchRequest(query="kiwi"))
        assert nothing.hits[0].path == "fast edit.md" and nothing.hits[0].score == pytest.approx(1.0)
        assert nothing.by_meaning_only
        assert not searcher.search(retriever_pb2.SearchRequest(query="database locked")).by_meaning_only
        assert not searcher.search(
            retriever_pb2.SearchRequest(query="kiwi", mode=retriever_pb2.SEARCH_MODE_VECTOR)
        ).by_meaning_only
    finally:
        embedder.close()
