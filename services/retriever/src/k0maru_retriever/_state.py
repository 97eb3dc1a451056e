"""IndexState: what the retriever has applied, persisted in its own SQLite.

docs: path → the Document it indexed (hash included); vectors: chunk id → hash of the text
its stored vector was computed from; meta: last_applied_seq, parser_version and the
generation of the BM25 index this bookkeeping describes. Kept in memory, written
through in one transaction per batch. `stage` writes a batch's rows into that transaction
ahead of `commit` (the retriever does it while tantivy commits: SQLite works without the GIL);
nothing staged is visible to another connection, or durable, before `commit`.
"""

from __future__ import annotations

import threading
from pathlib import Path

from k0maru.v1 import common_pb2
from k0maru_common import open_sqlite

from ._days import NoteDays
from ._listing import ScopeCandidates
from ._names import VaultNames

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (path TEXT PRIMARY KEY, hash TEXT NOT NULL, document BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (chunk_id TEXT PRIMARY KEY, hash TEXT NOT NULL);
"""


class IndexState:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.folder = path.parent  # the retriever's data folder: its disk's room is checked before writes
        self._db = open_sqlite(path)  # Unreadable when damaged
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()
        self.docs: dict[str, common_pb2.Document] = {}
        for _path, blob in self._db.execute("SELECT path, document FROM docs"):
            doc = common_pb2.Document()
            doc.ParseFromString(blob)
            self.docs[doc.path] = doc
        self.names = VaultNames(self.docs)  # the docs' paths and folders by what a person types
        self.days = NoteDays(self.docs.values())  # the docs by their days, for date scopes
        self._scope_candidates: ScopeCandidates | None = None  # built by the first listing that asks
        self.vectors: dict[str, str] = dict(self._db.execute("SELECT chunk_id, hash FROM vectors"))
        meta = dict(self._db.execute("SELECT key, value FROM meta"))
        self.last_applied_seq = int(meta.get("last_applied_seq", 0))
        self.journal_id = meta.get("journal_id", "")  # the scanner's journal that seq counts in
        self.parser_version = meta.get("parser_version", "")
        self.generation = meta.get("generation", "")
        self._pending_docs: dict[str, common_pb2.Document | None] = {}
        self.version = 0  # bumped on every document change (cheap cache invalidation)
        self._pending_vectors: dict[str, str | None] = {}
        # written into the open transaction by `stage`, not committed yet (None: no transaction)
        self._staged: tuple[dict[str, common_pb2.Document | None], dict[str, str | None]] | None = None

    @property
    def scope_candidates(self) -> ScopeCandidates:
        """The docs by their tags and paths, for listings: built at the first listing (0.2 s at
        100,000 notes, a fifth of opening the state), then kept with the docs."""
        if self._scope_candidates is None:
            self._scope_candidates = ScopeCandidates(self.docs.values())
        return self._scope_candidates

    def put_doc(self, doc: common_pb2.Document) -> None:
        self.version += 1
        old = self.docs.get(doc.path)
        if old is None:
            self.names.add(doc.path)
        if (old.tags if old is not None else []) != doc.tags:
            self.names.retag(old.tags if old is not None else (), doc.tags)
        self.docs[doc.path] = doc
        self.days.put(doc)
        if self._scope_candidates is not None:
            self._scope_candidates.put(doc)
        self._pending_docs[doc.path] = doc

    def drop_doc(self, path: str) -> None:
        self.version += 1
        if (old := self.docs.pop(path, None)) is not None:
            self.names.remove(path)
            if old.tags:
                self.names.retag(old.tags, ())
            self.days.remove(path)
            if self._scope_candidates is not None:
                self._scope_candidates.remove(path)
        self._pending_docs[path] = None

    def put_vector(self, chunk_id: str, hash_: str) -> None:
        self.vectors[chunk_id] = hash_
        self._pending_vectors[chunk_id] = hash_

    def drop_vector(self, chunk_id: str) -> None:
        self.vectors.pop(chunk_id, None)
        self._pending_vectors[chunk_id] = None

    def stage(self) -> None:
        """Write the pending changes into the open transaction (opened here if none is)."""
        with self._lock:
            self._stage()

    def _stage(self) -> None:
        docs, self._pending_docs = self._pending_docs, {}
        vectors, self._pending_vectors = self._pending_vectors, {}
        if self._staged is None:
            self._db.execute("BEGIN")
            self._staged = ({}, {})
        self._staged[0].update(docs)
        self._staged[1].update(vectors)
        try:
            self._db.executemany(
                "INSERT OR REPLACE INTO docs VALUES (?, ?, ?)",
                [(p, d.hash, d.SerializeToString()) for p, d in docs.items() if d is not None],
            )
            self._db.executemany("DELETE FROM docs WHERE path = ?", [(p,) for p, d in docs.items() if d is None])
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)", [(c, h) for c, h in vectors.items() if h is not None]
            )
            self._db.executemany(
                "DELETE FROM vectors WHERE chunk_id = ?", [(c,) for c, h in vectors.items() if h is None]
            )
        except BaseException:
            self._rollback()
            raise

    def rollback(self) -> None:
        """Drop what `stage` wrote: it is pending again (written by the next commit)."""
        with self._lock:
            self._rollback()

    def _rollback(self) -> None:
        if self._staged is not None:
            if self._db.in_transaction:  # SQLite rolls back by itself on some errors (disk full)
                self._db.execute("ROLLBACK")
            docs, vectors = self._staged
            self._staged = None
            self._pending_docs = {**docs, **self._pending_docs}
            self._pending_vectors = {**vectors, **self._pending_vectors}

    def commit(self, last_applied_seq: int | None = None, journal_id: str | None = None) -> None:
        """`journal_id`: the journal `last_applied_seq` counts in, when it is not the one before."""
        with self._lock:
            self._stage()
            try:
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('parser_version', ?)", (self.parser_version,))
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (self.generation,))
                if last_applied_seq is not None:
                    self._db.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('last_applied_seq', ?)", (str(last_applied_seq),)
                    )
                if journal_id is not None:
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('journal_id', ?)", (journal_id,))
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
            self._staged = None
            if last_applied_seq is not None:
                self.last_applied_seq = last_applied_seq
            if journal_id is not None:
                self.journal_id = journal_id

    def clear(self) -> None:
        with self._lock:
            self._rollback()
            self._pending_docs.clear()
            self._pending_vectors.clear()
            self._db.executescript("DELETE FROM docs; DELETE FROM vectors; DELETE FROM meta;")
        self.docs.clear()
        self.names = VaultNames(self.docs)
        self.days = NoteDays()
        self._scope_candidates = None
        self.vectors.clear()
        self.version += 1
        self.last_applied_seq = 0
        self.journal_id = ""
        self.parser_version = ""
        self.generation = ""

    def clear_vectors(self) -> None:
        """Forget every stored vector (the vector store lost or gained points behind our back)."""
        with self._lock:
            self._rollback()
            self._pending_vectors.clear()
            self._db.execute("DELETE FROM vectors")
        self.vectors.clear()
        self._pending_vectors.clear()

    def close(self) -> None:
        with self._lock:
            self._rollback()
        self._db.close()
