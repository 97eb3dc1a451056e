"""NoteIndex: the one owner of the BM25 index, the vector store, the link graph and IndexState.

Every mutation goes through here under one lock, so the indexes never disagree with each
other. A chunk's vector is stored only when the key it was computed for (chunk text hash,
path and tags) is still the chunk's current key: results for older versions are dropped.

The bookkeeping (IndexState) is checked against the stores themselves: at open, a BM25 index
of another generation (wiped for a schema change, replaced, cleared) is rebuilt from the
stored documents; `check()` compares tantivy's document count and the vector store's point
count with what the bookkeeping says, and `repair()` fixes a difference (BM25 rebuilt locally;
vectors dropped and re-enqueued, the embedding cache makes that cheap).
"""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
import xxhash

from k0maru.v1 import common_pb2
from k0maru_common import name_key, page_name

from ._bm25 import Bm25Index
from ._days import note_day
from ._graph import LinkGraph, link_target
from ._state import IndexState
from ._succession import Succession
from ._tags import TAG_PREFIX, TagIndex, tag_key
from ._vectors import VectorPoint, VectorStore

log = logging.getLogger(__name__)


EMBEDDED_DESCRIPTION = 300  # characters of a note's description the model reads before its first chunk
MISSING_SLICE = 200  # notes `missing_vectors` reads in one hold of the index's lock (about 10 ms)


def chunk_id(path: str, index: int) -> str:
    return f"{path}#{index}"


def split_chunk_id(cid: str) -> tuple[str, int]:
    path, _, index = cid.rpartition("#")
    return path, int(index)


def added_description(doc: common_pb2.Document, chunk: common_pb2.Chunk) -> str:
    """The note's description as searched with this chunk: with its first one, unless that chunk's
    text holds it (a Dendron body's `{{fm.desc}}`, written out by the scanner); "" otherwise."""
    return doc.description if chunk.index == 0 and doc.description not in chunk.text else ""


def vector_key(doc: common_pb2.Document, chunk: common_pb2.Chunk, model_id: str) -> str:
    """What a stored vector must match: the model, the text embedded and the payload it was filed with
    (the note's description only where it is embedded: the keys of every other chunk, and of every
    note without one, are as before descriptions were searched)."""
    return _chunk_key(doc, chunk, model_id, _note_key(doc))


def vector_keys(doc: common_pb2.Document, model_id: str) -> list[str]:
    """`vector_key` of each of the note's chunks, in order; the note's part of them made once (a
    vault's jobs, `missing_vectors`, spent a quarter of their time joining each chunk's tags)."""
    note = _note_key(doc)
    return [_chunk_key(doc, chunk, model_id, note) for chunk in doc.chunks]


def _note_key(doc: common_pb2.Document) -> str:
    return f"{doc.title}|{doc.path}|{','.join(doc.tags)}"


def _chunk_key(doc: common_pb2.Document, chunk: common_pb2.Chunk, model_id: str, note: str) -> str:
    key = f"{model_id}|{chunk.hash}|{note}"
    if described := added_description(doc, chunk):
        key += f"|{described[:EMBEDDED_DESCRIPTION]}"
    return xxhash.xxh3_64_hexdigest(key.encode())


def note_names(doc: common_pb2.Document) -> str:
    """A note's names for BM25's name match, one per line: its title, its aliases, and its file
    name when that says something else in words (Obsidian and Foam link by file name, so people
    know a note by it: `2026-11-30 standup` titled "Standup with the infra team")."""
    names = [doc.title, *doc.aliases]
    stem = unicodedata.normalize("NFC", page_name(PurePosixPath(doc.path).stem))
    if any(c.isalpha() for c in stem) and name_key(stem) not in {name_key(n) for n in names}:
        names.append(stem)
    return "\n".join(filter(None, names))


def graph_names(doc: common_pb2.Document) -> list[str]:
    """What links may name a note by besides its file: its title, its aliases, and `((id))` for
    each block of it other notes reference (Logseq). A sync tool's conflicting copy is named by
    its file alone: it repeats its original's title and aliases, and so made every link by them
    name two notes, which resolves to none (`[[Kestrel]]` lost its note while the copy existed)."""
    blocks = [f"(({b}))" for b in doc.block_ids]
    return blocks if doc.conflict_of else [doc.title, *doc.aliases, *blocks]


def embed_text(doc: common_pb2.Document, chunk: common_pb2.Chunk) -> str:
    """The chunk as the model reads it: the note's title first unless the chunk starts with it, and
    before the first chunk the note's description (its start: the model reads a few hundred tokens)."""
    head = [doc.title] if doc.title and doc.title not in chunk.text[:200] else []
    if described := added_description(doc, chunk):
        head.append(described[:EMBEDDED_DESCRIPTION])
    return "\n".join([*head, chunk.text])


def bm25_text(doc: common_pb2.Document, chunk: common_pb2.Chunk, prefix: str) -> str:
    """The chunk as BM25 indexes it: the note's title, tags and aliases (`prefix`), the description
    it carries (`added_description`: Dendron's notes often say what they are about only there), its
    headings, its text."""
    described = added_description(doc, chunk)
    head = f"{prefix}\n{described}" if described else prefix
    return f"{head}\n{' '.join(chunk.heading_path)}\n{chunk.text}"


class Bm25SwapFailed(RuntimeError):
    """A compaction failed halfway through its swap: BM25 is unusable until the next start rebuilds it."""


@dataclass(frozen=True)
class IndexCheck:
    """The stores' own counts next to what the bookkeeping expects."""

    bm25_documents: int
    chunks: int
    vector_points: int
    vectors: int
    generation: str

    @property
    def problems(self) -> list[str]:
        out = []
        if self.bm25_documents != self.chunks:
            out.append(f"BM25 holds {self.bm25_documents} documents for {self.chunks} chunks")
        if self.vector_points != self.vectors:
            out.append(f"the vector store holds {self.vector_points} points for {self.vectors} stored vectors")
        return out


@dataclass(frozen=True)
class EmbedJob:
    chunk_id: str
    key: str
    text: str


class NoteIndex:
    def __init__(
        self,
        bm25: Bm25Index,
        vectors: VectorStore,
        state: IndexState,
        dimension: int,
        model_id: str = "",
        tags: TagIndex | None = None,
    ) -> None:
        self.model_id = model_id
        self.tags = tags if tags is not None else TagIndex(None, model_id, dimension)
        self.bm25 = bm25
        self.vectors = vectors
        self.state = state
        self.graph = LinkGraph()
        self.succession = Succession(state.docs.values())  # which notes replace which (`_succession`)
        self.dimension = dimension
        self.lock = threading.RLock()
        self._counted: tuple[tuple[int, int], int] = ((-1, -1), 0)
        # path → (link targets, names) applied with `link_later`: filed into the graph at the next
        # commit, all at once (when BM25 shows the notes too)
        self._links_pending: dict[str, tuple[list[str], list[str]]] = {}
        self._changed_since: set[str] | None = None  # notes applied or removed during a compaction
        self.last_change = time.monotonic()  # of a note applied or removed
        self.graph.load(
            {doc.path: [link_target(lk) for lk in doc.links if lk.target] for doc in state.docs.values()},
            {doc.path: graph_names(doc) for doc in state.docs.values()},
        )
        for doc in state.docs.values():
            self.tags.set_note(doc.path, doc.tags)
        if state.generation != bm25.generation:
            if state.docs:
                log.info(
                    "BM25 index generation %s is not the one the bookkeeping describes (%s): rebuilding it",
                    bm25.generation,
                    state.generation or "none",
                )
                self.rebuild_bm25()
            self.state.generation = self.bm25.generation
            self.state.commit()

    def _tag_jobs(self, names: list[str]) -> list[EmbedJob]:
        return [EmbedJob(TAG_PREFIX + n, tag_key(n, self.model_id), n) for n in names]

    def retag(self) -> list[EmbedJob]:
        """Re-read every note's tags (after the tag blacklist changed); return the tag jobs needed."""
        with self.lock:
            self.tags.clear_notes()
            for doc in self.state.docs.values():
                self.tags.set_note(doc.path, doc.tags)
            self.tags.prune()
            return self._tag_jobs(self.tags.missing())

    def _add_bm25(self, doc: common_pb2.Document, bm25: Bm25Index | None = None) -> None:
        prefix = "\n".join(filter(None, [doc.title, " ".join(doc.tags), " ".join(doc.aliases)]))
        path = doc.path
        (bm25 or self.bm25).add_note(
            path,
            doc.diary,
            list(doc.tags),
            [(chunk_id(path, chunk.index), bm25_text(doc, chunk, prefix)) for chunk in doc.chunks],
            note_names(doc),
        )

    def rebuild_bm25(self) -> None:
        """Rebuild BM25 from the stored documents (no scanner needed), in path order like a fresh build."""
        with self.lock:
            self.bm25.clear()
            for path in sorted(self.state.docs):
                self._add_bm25(self.state.docs[path])
            self.bm25.commit()
            self.state.generation = self.bm25.generation
            self.state.commit()
            log.info("rebuilt BM25 from %d documents", len(self.state.docs))

    def compact_bm25(self, stop: threading.Event) -> bool:
        """Rebuild BM25 beside the live index from the stored documents and swap it in: the
        deleted documents that edits leave in BM25's statistics (an edited note's own words
        counted twice, so it ranks lower) are gone, as after a fresh build. Searches and edits go
        on meanwhile: the lock is held only to take the documents and, at the end, to re-apply
        the notes changed since and swap. False when given up: `stop` set, or BM25 rebuilt or
        cleared meanwhile."""
        with self.lock:
            live, generation = self.bm25, self.bm25.generation
            docs = dict(self.state.docs)
            self._changed_since = set()
        built = live.empty_beside()
        handed_over = False  # once the swap has begun, a failure leaves `built` to the next start
        try:
            for n, path in enumerate(sorted(docs)):
                if n % 256 == 0 and stop.is_set():
                    return False
                self._add_bm25(docs[path], built)
            built.commit()  # the big segment is written outside the lock
            with self.lock:
                if self.bm25 is not live or live.generation != generation or stop.is_set():
                    return False
                for path in sorted(self._changed_since or ()):  # their old chunks stay deleted documents
                    current = self.state.docs.get(path)  # in `built`, for the next compaction
                    if current is docs.get(path):
                        continue  # added and removed again meanwhile
                    if path in docs:
                        built.delete_path(path)
                    if current is not None:
                        self._add_bm25(current, built)
                handed_over = True
                try:
                    self.bm25 = live.replace_with(built)
                except Exception as exc:  # the live index is closed or moved: only a restart mends it
                    raise Bm25SwapFailed(f"the compacted BM25 index could not be swapped in: {exc}") from exc
                self.state.generation = self.bm25.generation
                self.state.commit()  # documents applied but not committed yet are in BM25 now, so in the bookkeeping too
                return True
        finally:
            with self.lock:
                self._changed_since = None
            if not handed_over:
                built.discard()

    def check(self, commit: bool = True) -> IndexCheck:
        """Count what the stores hold (after committing pending BM25 writes, unless not `commit`)
        against the bookkeeping."""
        with self.lock:
            if commit:
                self.bm25.commit()
            _docs, chunks, vectors = self.counts()
            return IndexCheck(self.bm25.count(), chunks, self.vectors.count(), vectors, self.bm25.generation)

    def repair(self, on_rebuild: Callable[[], None] | None = None) -> IndexCheck:
        """Make the stores agree with the bookkeeping; return the check made before any repair.
        `on_rebuild` is told before BM25 is rebuilt (which holds the index's lock until it is
        done). Deleted documents left in BM25's statistics are not a disagreement: a
        compaction (`compact_bm25`) removes them in the background."""
        with self.lock:
            found = self.check()
            if found.bm25_documents != found.chunks:
                log.warning("%s: rebuilding BM25", found.problems[0])
                if on_rebuild is not None:
                    on_rebuild()
                self.rebuild_bm25()
            if found.vector_points != found.vectors:
                log.warning(
                    "the vector store holds %d points for %d stored vectors: re-embedding",
                    found.vector_points,
                    found.vectors,
                )
                self.vectors.clear()
                self.state.clear_vectors()
                self.state.commit()
            return found

    def apply(self, doc: common_pb2.Document, want_jobs: bool = True, link_later: bool = False) -> list[EmbedJob]:
        """Index a document (replacing any older version); return the embedding jobs it needs
        (none when not `want_jobs`: a reconcile asks `missing_vectors()` once at the end).
        `link_later`: its links go into the graph at the next `commit`, with every other note
        applied so, each link resolved once (a cold start's links mostly name notes not indexed
        yet, each re-resolved when its note came: twice the graph's work)."""
        with self.lock:
            self._changed(doc.path)
            old = self.state.docs.get(doc.path)
            self.bm25.delete_path(doc.path)
            self._add_bm25(doc)
            links = ([link_target(lk) for lk in doc.links if lk.target], graph_names(doc))
            if link_later:
                self._links_pending[doc.path] = links
            else:
                self._links_pending.pop(doc.path, None)
                self.graph.set_note(doc.path, *links)
            self.succession.set_note(doc)
            chunks = {chunk_id(doc.path, c.index): c for c in doc.chunks}
            if old is not None:
                self._drop_vectors(
                    [chunk_id(old.path, c.index) for c in old.chunks if chunk_id(old.path, c.index) not in chunks]
                )
            vectors = self.state.vectors
            present = [cid for cid in chunks if cid in vectors]
            keys = {cid: vector_key(doc, chunks[cid], self.model_id) for cid in (chunks if want_jobs else present)}
            self._drop_vectors([cid for cid in present if vectors[cid] != keys[cid]])
            self.state.put_doc(doc)
            tag_jobs = self._tag_jobs(self.tags.set_note(doc.path, doc.tags))
            if not want_jobs:
                return []
            return [
                EmbedJob(cid, key, embed_text(doc, chunks[cid])) for cid, key in keys.items() if vectors.get(cid) != key
            ] + tag_jobs

    def remove(self, path: str) -> None:
        with self.lock:
            self._changed(path)
            old = self.state.docs.get(path)
            self.bm25.delete_path(path)
            self._links_pending.pop(path, None)
            self.graph.remove_note(path)
            self.succession.remove_note(path)
            self.tags.drop_note(path)
            if old is not None:
                self._drop_vectors([chunk_id(path, c.index) for c in old.chunks])
                self.state.drop_doc(path)

    def _changed(self, path: str) -> None:
        self.last_change = time.monotonic()
        if self._changed_since is not None:
            self._changed_since.add(path)

    def _drop_vectors(self, cids: list[str]) -> None:
        present = [c for c in cids if c in self.state.vectors]
        if present:
            self.vectors.delete(present)
            for cid in present:
                self.state.drop_vector(cid)

    def apply_vectors(self, results: list[tuple[str, str, np.ndarray]]) -> int:
        """Store (chunk id, key, vector) results that still match; return how many were stored."""
        tag_results = [(c[len(TAG_PREFIX) :], k, v) for c, k, v in results if c.startswith(TAG_PREFIX)]
        stored = self.tags.apply_vectors(tag_results) if tag_results else 0
        with self.lock:
            points = []
            for cid, key, vector in results:
                if cid.startswith(TAG_PREFIX):
                    continue
                path, index = split_chunk_id(cid)
                doc = self.state.docs.get(path)
                if doc is None or index >= len(doc.chunks) or vector.shape != (self.dimension,):
                    continue
                chunk = doc.chunks[index]
                if vector_key(doc, chunk, self.model_id) != key:
                    continue  # computed for an older version of the chunk
                points.append(VectorPoint(cid, key, path, doc.diary, list(doc.tags), vector))
            self.vectors.upsert(points)
            for p in points:
                self.state.put_vector(p.chunk_id, p.hash)
            self.state.commit()
            return len(points) + stored

    def missing_vectors(self) -> list[EmbedJob]:
        """The chunks with no vector from this model, to embed: the newest notes first (their day,
        `note_day`, then their file's mtime), each note's chunks in order, then the tags. A first
        build embeds a big vault for minutes to half an hour; what an agent asks about most is what
        was written lately, and that gets its vectors first (path order put a Dendron vault's old
        changelogs first).

        The notes are read MISSING_SLICE at a time under the index's lock, which searches take
        too: 46,000 chunks took 0.3 s in one hold (every chunk's key worked out), the first search
        after a big first build waited for it, and so did any search during the sweep that asks
        again every 15 s. A note changed or removed between two slices is skipped: the change
        brought its own jobs."""
        with self.lock:
            docs = list(self.state.docs.values())
        missing: list[tuple[common_pb2.Document, list[EmbedJob]]] = []
        for start in range(0, len(docs), MISSING_SLICE):
            with self.lock:
                current, vectors = self.state.docs, self.state.vectors
                for doc in docs[start : start + MISSING_SLICE]:
                    if current.get(doc.path) is not doc:
                        continue
                    jobs = []
                    for c, key in zip(doc.chunks, vector_keys(doc, self.model_id), strict=True):
                        cid = chunk_id(doc.path, c.index)
                        if vectors.get(cid) != key:
                            jobs.append(EmbedJob(cid, key, embed_text(doc, c)))
                    if jobs:
                        missing.append((doc, jobs))
            time.sleep(0)  # a search woken by the release takes the lock now, not after the next slice
        missing.sort(key=lambda m: (note_day(m[0]), m[0].mtime_ns), reverse=True)
        with self.lock:
            tag_jobs = self._tag_jobs(self.tags.missing())
        return [job for _doc, jobs in missing for job in jobs] + tag_jobs

    def link_pending(self) -> None:
        """File the links of the notes applied with `link_later` into the graph."""
        with self.lock:
            if self._links_pending:
                pending, self._links_pending = self._links_pending, {}
                self.graph.set_notes((path, targets, names) for path, (targets, names) in pending.items())

    def commit(self, last_applied_seq: int | None = None, journal_id: str | None = None) -> None:
        """BM25 first, then the bookkeeping that says what it holds (a crash between the two
        leaves BM25 ahead, which the follower's replay fixes). tantivy commits without the GIL,
        so the links and the bookkeeping's rows are written meanwhile: the rows go into an open
        transaction that is committed only once BM25's commit has succeeded."""
        with self.lock:
            if not self.bm25.dirty:
                self.link_pending()
                self.state.commit(last_applied_seq, journal_id)
                return
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bm25-commit") as pool:
                bm25 = pool.submit(self.bm25.commit)
                try:
                    self.link_pending()
                    self.state.stage()
                finally:
                    failed = bm25.exception()
                if failed is not None:
                    self.state.rollback()
                    raise failed
            self.state.commit(last_applied_seq, journal_id)

    def clear(self) -> None:
        with self.lock:
            self.bm25.clear()
            self.bm25.commit()
            self.vectors.clear()
            self.state.clear()
            self.tags.clear()
            self.state.generation = self.bm25.generation
            self.graph = LinkGraph()
            self.succession = Succession()
            self._links_pending.clear()

    def close(self) -> None:
        with self.lock:
            self.bm25.close()
            self.state.commit()
            self.vectors.close()
            self.state.close()
            self.tags.close()

    def successors(self, paths: Iterable[str]) -> dict[str, list[str]]:
        """For each of `paths` that another note says it replaces: those notes (`_succession`)."""
        with self.lock:
            return self.succession.successors(paths, self.state.docs, self.graph)

    def replaced(self) -> dict[str, list[str]]:
        """Every note another says it replaces, with those notes (`_succession`)."""
        with self.lock:
            return self.succession.replaced(self.state.docs, self.graph)

    def counts(self) -> tuple[int, int, int]:
        """(documents, chunks, chunks with vectors), recounted only after a change."""
        with self.lock:
            marker = (len(self.state.docs), self.state.version)
            if self._counted[0] != marker:
                self._counted = (marker, sum(len(d.chunks) for d in self.state.docs.values()))
            return len(self.state.docs), self._counted[1], len(self.state.vectors)
